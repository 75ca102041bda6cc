//! What the transport says about itself in `tracing`: the
//! `meterwire.send` span with its fields, an event per attempt and per
//! refusal, and never the token (in any form), the request body or the
//! answer.
//!
//! A binary of its own: `tracing` caches, per call site and for the whole
//! process, whether anyone listens, so a subscriber set for one test thread
//! misses spans another thread's test registered first. Here one capturing
//! subscriber is the process's global default, and each test reads the
//! lines of its own scope.

#[path = "it/support/mod.rs"]
mod support;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use meterwire::{REDACTED, RetryPolicy};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

use support::engines::{engine, engine_with, posts};
use support::forms::{assert_no_form, forms};
use support::{TOKEN, builder_for};

/// Every field of every span and event of the crate, one line each, with
/// the scope of the send it belongs to.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<(String, String)>>>);

/// The scope a span was opened for, kept in its extensions.
struct Scope(String);

struct Line<'a> {
    text: &'a mut String,
    scope: Option<String>,
}

impl Visit for Line<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let value = format!("{value:?}");
        let _ = write!(self.text, " {}={}", field.name(), value);
        if field.name() == "scope" {
            self.scope = Some(value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.text, " {}={}", field.name(), value);
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !attrs.metadata().target().starts_with("meterwire") {
            return;
        }
        let mut text = format!("span {}:", attrs.metadata().name());
        let mut line = Line {
            text: &mut text,
            scope: None,
        };
        attrs.record(&mut line);
        let scope = line.scope.unwrap_or_default();
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Scope(scope.clone()));
        }
        self.0.lock().expect("lock").push((scope, text));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if !span.metadata().target().starts_with("meterwire") {
            return;
        }
        let scope = span
            .extensions()
            .get::<Scope>()
            .map(|s| s.0.clone())
            .unwrap_or_default();
        let mut text = format!("record {}:", span.metadata().name());
        values.record(&mut Line {
            text: &mut text,
            scope: None,
        });
        self.0.lock().expect("lock").push((scope, text));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if !event.metadata().target().starts_with("meterwire") {
            return;
        }
        let scope = ctx
            .event_span(event)
            .and_then(|span| span.extensions().get::<Scope>().map(|s| s.0.clone()))
            .unwrap_or_default();
        let mut text = format!("event {}:", event.metadata().level());
        event.record(&mut Line {
            text: &mut text,
            scope: None,
        });
        self.0.lock().expect("lock").push((scope, text));
    }
}

/// The lines of `scope`'s sends, capturing from the first call on.
fn lines(scope: &str) -> Vec<String> {
    capture()
        .0
        .lock()
        .expect("lock")
        .iter()
        .filter(|(of, _)| of == scope)
        .map(|(_, line)| line.clone())
        .collect()
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        let subscriber = tracing_subscriber::registry().with(capture.clone());
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        capture
    })
}

const QUESTION: &str = "QUESTION-MARKER-7741";
const ANSWER: &str = "ANSWER-MARKER-2203";

/// An engine that echoes the token, in every form an echo takes, into
/// every header the crate reads and into its body. Only a `2xx` body is an
/// answer; an error body's words are quoted, concealed, in the refusal.
async fn echoing_engine(status: u16) -> MockServer {
    let server = MockServer::start().await;
    let echoes: Vec<String> = forms(TOKEN).into_iter().map(|(_, form)| form).collect();
    let marker = if status == 200 {
        ANSWER
    } else {
        "the engine's words:"
    };
    let mut response =
        ResponseTemplate::new(status).set_body_string(format!("{marker} {}", echoes.join(" ")));
    for (name, value) in [
        ("x-request-id", TOKEN.to_owned()),
        ("request-id", TOKEN.to_owned()),
        ("retry-after", TOKEN.to_owned()),
        (
            "www-authenticate",
            format!("Bearer error=\"invalid_token\", error_description=\"{TOKEN}\""),
        ),
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
    capture();
    let scope = "trace-leaks";
    for status in [200, 302, 401, 402, 429, 500, 503] {
        let server = echoing_engine(status).await;
        let transport = builder_for(&server.uri(), scope)
            .retries(RetryPolicy::new().max_attempts(2))
            .build()
            .expect("builds");
        let _ = transport
            .send(format!("{{\"q\": \"{QUESTION} {TOKEN}\"}}"))
            .await;
        let _ = transport.send("{}").await;
    }
    let lines = lines(scope);
    assert!(lines.len() > 20, "{lines:#?}");
    for line in &lines {
        assert_no_form(TOKEN, "a trace line", line);
        assert_no_form(&TOKEN.to_lowercase(), "a trace line", line);
        assert!(!line.contains(QUESTION), "the request body in {line}");
        assert!(!line.contains(ANSWER), "the answer in {line}");
    }
    let redacted = lines.iter().filter(|line| line.contains(REDACTED)).count();
    assert!(
        redacted > 0,
        "the echoes reached the trace as [redacted]: {lines:#?}"
    );
}

#[tokio::test]
async fn a_send_is_a_span_with_its_fields_attempt_events_and_a_refusal_event() {
    capture();
    let scope = "trace-fields";
    let server = engine_with([
        posts()
            .and(body_string_contains("ok"))
            .respond_with(ResponseTemplate::new(200).insert_header("x-request-id", "r-200")),
        posts().and(body_string_contains("later")).respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "30")
                .insert_header("x-request-id", "r-429"),
        ),
    ])
    .await;
    let transport = builder_for(&server.uri(), scope).build().expect("builds");
    transport.send("ok").await.expect("answered");
    transport.send("later").await.expect_err("429");
    transport.send("ok").await.expect_err("held");

    let lines = lines(scope);
    let all = lines.join("\n");
    let spans = lines
        .iter()
        .filter(|l| l.starts_with("span meterwire.send:"))
        .count();
    assert_eq!(spans, 3, "{all}");
    for expected in [
        "scope=trace-fields",
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
    let debug = lines
        .iter()
        .filter(|l| l.starts_with("event DEBUG"))
        .count();
    let info = lines.iter().filter(|l| l.starts_with("event INFO")).count();
    assert_eq!(debug, 2, "one event per attempt:\n{all}");
    assert_eq!(info, 2, "one event per refusal:\n{all}");
}

#[tokio::test]
async fn a_stream_keeps_its_span_open_and_records_events_bytes_and_first_byte() {
    capture();
    let scope = "trace-stream";
    let server = engine(
        ResponseTemplate::new(200).set_body_raw("data: one\n\ndata: two\n\n", "text/event-stream"),
    )
    .await;
    let transport = builder_for(&server.uri(), scope).build().expect("builds");
    let mut stream = transport.stream("{}").await.expect("a stream");
    let before_the_end = lines(scope).join("\n");
    assert!(!before_the_end.contains("events="), "{before_the_end}");
    while let Some(event) = stream.next_event().await {
        event.expect("not refused");
    }
    let all = lines(scope).join("\n");
    for expected in [
        "status=200",
        "events=2",
        "bytes=22",
        "first_byte_ms=",
        "elapsed_ms=",
    ] {
        assert!(all.contains(expected), "no {expected:?} in\n{all}");
    }
    let meter = transport.meter();
    assert_eq!((meter.sends(), meter.answers()), (1, 1));
    let json = serde_json::to_value(&meter).expect("serializes");
    assert!(json["firstByteMs"]["p50"].is_number(), "{json}");
}

#[tokio::test]
async fn a_failed_token_file_read_is_a_warning_naming_the_path_never_the_content() {
    capture();
    let scope = "trace-token-file";
    let dir = std::env::temp_dir().join(format!("meterwire-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp directory");
    let file = dir.join("token");
    std::fs::write(&file, TOKEN).expect("write");
    let server = engine(ResponseTemplate::new(200).set_body_string("{}")).await;
    let transport = builder_for(&server.uri(), scope)
        .token_file(&file)
        .token_file_interval(std::time::Duration::ZERO)
        .build()
        .expect("builds");
    transport.send("{}").await.expect("the file's token");
    // Torn: half a token and a line break, as a writer that truncates and
    // rewrites in place leaves it for a moment.
    std::fs::write(&file, format!("{}\n{}", &TOKEN[..8], &TOKEN[8..])).expect("write");
    transport
        .send("{}")
        .await
        .expect("the last good token is kept");
    let _ = std::fs::remove_dir_all(&dir);
    let all = lines(scope).join("\n");
    let warnings: Vec<&str> = all
        .lines()
        .filter(|line| line.starts_with("event WARN"))
        .collect();
    assert_eq!(warnings.len(), 1, "{all}");
    assert!(warnings[0].contains(&file.display().to_string()), "{all}");
    assert!(warnings[0].contains("line break"), "{all}");
    assert!(warnings[0].contains("kept=true"), "{all}");
    assert_no_form(TOKEN, "a trace line", &all);
    assert!(!all.contains(&TOKEN[..8]), "{all}");
    assert!(!all.contains(&TOKEN[8..]), "{all}");
}

#[tokio::test]
async fn the_span_records_what_the_engine_billed_under_the_gen_ai_names() {
    capture();
    let scope = "trace-usage";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_string_contains("whole"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"choices":[],"usage":{"prompt_tokens":31,"completion_tokens":7}}"#,
            "application/json",
        ))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_string_contains("stream"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":43,\"output_tokens\":1}}}\n\n\
             event: message_delta\ndata: {\"usage\":{\"output_tokens\":19}}\n\n",
            "text/event-stream",
        ))
        .mount(&server)
        .await;
    let transport = builder_for(&server.uri(), scope).build().expect("builds");
    transport.send("whole").await.expect("an answer");
    let all = lines(scope).join("\n");
    for expected in [
        "gen_ai.usage.input_tokens=31",
        "gen_ai.usage.output_tokens=7",
    ] {
        assert!(all.contains(expected), "no {expected:?} in\n{all}");
    }
    let mut stream = transport.stream("stream").await.expect("a stream");
    while let Some(event) = stream.next_event().await {
        event.expect("not refused");
    }
    let all = lines(scope).join("\n");
    for expected in [
        "gen_ai.usage.input_tokens=43",
        "gen_ai.usage.output_tokens=19",
    ] {
        assert!(all.contains(expected), "no {expected:?} in\n{all}");
    }
    assert!(!all.contains("gen_ai.usage.output_tokens=1\n"), "{all}");
}
