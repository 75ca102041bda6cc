//! What the transport reports about itself (CONTRACT §10): the
//! `meterwire.send` span and its events never show the token, the request
//! body or the answer, and the meter's counts are exact under concurrency.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use meterwire::{Cause, RetryPolicy};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::forms::{assert_no_form, forms};
use crate::support::{SCOPE, TOKEN, builder_for};

/// Every field of every span and event of the crate, one line each.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Line<'a>(&'a mut String);

impl Visit for Line<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        if attrs.metadata().target().starts_with("meterwire") {
            let mut line = format!("span {}:", attrs.metadata().name());
            attrs.record(&mut Line(&mut line));
            self.0.lock().expect("lock").push(line);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && span.metadata().target().starts_with("meterwire")
        {
            let mut line = format!("record {}:", span.metadata().name());
            values.record(&mut Line(&mut line));
            self.0.lock().expect("lock").push(line);
        }
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target().starts_with("meterwire") {
            let mut line = format!("event {}:", event.metadata().level());
            event.record(&mut Line(&mut line));
            self.0.lock().expect("lock").push(line);
        }
    }
}

impl Capture {
    fn lines(&self) -> Vec<String> {
        self.0.lock().expect("lock").clone()
    }
}

const QUESTION: &str = "QUESTION-MARKER-7741";
const ANSWER: &str = "ANSWER-MARKER-2203";

/// An engine that echoes the token, in every form an echo takes, into
/// every header the crate reads and into its body.
async fn echoing_engine(status: u16) -> MockServer {
    let server = MockServer::start().await;
    let mut response = ResponseTemplate::new(status).set_body_string(format!(
        "{ANSWER} {}",
        forms(TOKEN).into_iter().map(|(_, form)| form).collect::<Vec<_>>().join(" ")
    ));
    for (name, value) in [
        ("x-request-id", TOKEN.to_owned()),
        ("request-id", TOKEN.to_owned()),
        ("retry-after", TOKEN.to_owned()),
        ("www-authenticate", format!("Bearer error=\"invalid_token\", error_description=\"{TOKEN}\"")),
        ("location", format!("https://{TOKEN}.example/{TOKEN}")),
        ("ratelimit", format!("\"{TOKEN}\";r=0;t=0")),
    ] {
        response = response.insert_header(name, value.as_str());
    }
    Mock::given(method("POST"))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn no_span_or_event_shows_the_token_the_body_or_the_answer() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _guard = tracing::subscriber::set_default(subscriber);

    for status in [200, 302, 401, 402, 429, 500, 503] {
        let server = echoing_engine(status).await;
        let transport = builder_for(&server.uri(), SCOPE)
            .retries(RetryPolicy::new().max_attempts(2))
            .build()
            .expect("builds");
        let _ = transport.send(format!("{{\"q\": \"{QUESTION} {TOKEN}\"}}")).await;
        let _ = transport.send("{}").await;
    }
    let lines = capture.lines();
    assert!(lines.len() > 20, "{lines:#?}");
    for line in &lines {
        assert_no_form(TOKEN, "a trace line", line);
        assert!(!line.contains(QUESTION), "the request body in {line}");
        assert!(!line.contains(ANSWER), "the answer in {line}");
    }
    let redacted = lines.iter().filter(|line| line.contains(meterwire::REDACTED)).count();
    assert!(redacted > 0, "the echoes reached the trace as [redacted]: {lines:#?}");
}

#[tokio::test]
async fn a_send_is_a_span_with_its_fields_attempt_events_and_a_refusal_event() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_string_contains("ok"))
        .respond_with(ResponseTemplate::new(200).insert_header("x-request-id", "r-200"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_string_contains("later"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "30")
                .insert_header("x-request-id", "r-429"),
        )
        .mount(&server)
        .await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    transport.send("ok").await.expect("answered");
    transport.send("later").await.expect_err("429");
    transport.send("ok").await.expect_err("held");

    let lines = capture.lines();
    let spans = lines.iter().filter(|l| l.starts_with("span meterwire.send:")).count();
    assert_eq!(spans, 3, "{lines:#?}");
    let all = lines.join("\n");
    for expected in [
        "scope=acme",
        "engine=127.0.0.1:",
        "status=200",
        "request_id=r-200",
        "status=429",
        "cause=engine-over-quota",
        "retry_after_s=30",
        "request_id=r-429",
        "attempts=0",
        "elapsed_ms=",
    ] {
        assert!(all.contains(expected), "no {expected:?} in\n{all}");
    }
    let debug = lines.iter().filter(|l| l.starts_with("event DEBUG")).count();
    let info = lines.iter().filter(|l| l.starts_with("event INFO")).count();
    assert_eq!(debug, 2, "one event per attempt:\n{all}");
    assert_eq!(info, 2, "one event per refusal:\n{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_meter_counts_exactly_under_concurrency() {
    let server = MockServer::start().await;
    for (word, status) in [("ok", 200), ("quota", 429), ("credit", 402), ("down", 503)] {
        Mock::given(method("POST"))
            .and(body_string_contains(word))
            .respond_with(ResponseTemplate::new(status).set_body_string("{\"a\":1}"))
            .mount(&server)
            .await;
    }
    let transport = builder_for(&server.uri(), SCOPE)
        .retries(RetryPolicy::new().max_attempts(2))
        .build()
        .expect("builds");
    let words = ["ok", "quota", "credit", "down"];
    let sends: Vec<_> = (0..80)
        .map(|i| {
            let transport = transport.clone();
            let body = format!("{{\"w\":\"{}\"}}", words[i % 4]);
            tokio::spawn(async move { transport.send(body).await.map(|_| ()) })
        })
        .collect();
    for send in sends {
        let _ = send.await.expect("joined");
    }
    let meter = transport.meter();
    assert_eq!(meter.sends(), 80);
    assert_eq!(meter.answers(), 20);
    assert_eq!(meter.refusals(Cause::EngineOverQuota), 20);
    assert_eq!(meter.refusals(Cause::EngineOutOfCredit), 20);
    assert_eq!(meter.refusals(Cause::EngineUnreachable), 20);
    assert_eq!(meter.refusals(Cause::NoEngine), 0);
    let refusals: u64 = Cause::ALL.iter().map(|c| meter.refusals(*c)).sum();
    assert_eq!(meter.sends(), meter.answers() + refusals);
    // Each 503 is retried once with its key; nothing else is.
    assert_eq!(meter.attempts(), 100);
    let received = server.received_requests().await.expect("recording");
    assert_eq!(received.len(), 100);
    let sent: usize = received.iter().map(|r| r.body.len()).sum();
    assert_eq!(meter.bytes_sent(), sent as u64);
    assert_eq!(meter.bytes_received(), 7 * 100);
    assert_eq!(meter.held(), 0);
    assert!(meter.latency(0.5).is_some() && meter.latency(0.5) <= meter.latency(1.0));
    let json = serde_json::to_value(&meter).expect("serializes");
    assert_eq!(json["refusals"]["engine-unreachable"], 20);
    assert_eq!(json["bytesSent"], sent as u64);
    assert!(json["latencyMs"]["p99"].as_f64().is_some());
}

#[tokio::test]
async fn the_meter_is_shared_by_clones_and_counts_sends_refused_before_sending() {
    let transport = builder_for("http://127.0.0.1:9/", SCOPE).build().expect("builds");
    let clone = transport.clone();
    let _ = clone.call("{}").header("authorization", "x").send().await;
    let unsent = meterwire::HttpTransport::builder(SCOPE)
        .env(meterwire::Env::new())
        .build()
        .expect("builds");
    let _ = unsent.send("{}").await;
    assert_eq!(transport.meter().sends(), 1);
    assert_eq!(transport.meter().attempts(), 0);
    assert_eq!(transport.meter().refusals(Cause::EngineUnreachable), 1);
    assert_eq!(unsent.meter().refusals(Cause::NoEngine), 1);
    assert_eq!(unsent.meter().held(), 0);
    assert_eq!(unsent.meter().latency(0.5), None);
}
