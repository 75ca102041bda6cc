//! The 0.2 API: every option of a send crosses the `Transport` trait, an
//! answer carries what a caller asks of it and what a fake can build, the
//! report names the engine and the key, and a vendor's own variables name
//! the chains. The blocking transport is tested in `tests/features/main.rs`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use meterwire::{
    Answer, Bytes, Cause, Env, HttpTransport, Naming, NamingError, Refusal, Report, Request,
    RetryPolicy, Transport,
};
use wiremock::ResponseTemplate;
use wiremock::matchers::{body_string, header};

use crate::support::engines::{engine, engine_expecting, engine_with, posts};
use crate::support::{SCOPE, TOKEN, assert_refusal_shape, builder_for, transport_for};

/// A fake that answers every request and keeps what it was given.
#[derive(Default)]
struct Fake {
    given: Mutex<Vec<Request>>,
}

impl Transport for Fake {
    fn send(
        &self,
        body: Bytes,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
        self.execute(Request::new(body))
    }

    fn execute(
        &self,
        request: Request,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
        self.given.lock().expect("not poisoned").push(request);
        Box::pin(async { Ok(Answer::new(200, "{}").with_attempts(2)) })
    }
}

/// A fake of the 0.1 API: it writes `send` alone.
struct Echo;

impl Transport for Echo {
    fn send(
        &self,
        body: Bytes,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
        Box::pin(async move {
            Ok(Answer::new(
                200,
                String::from_utf8_lossy(&body).into_owned(),
            ))
        })
    }
}

#[tokio::test]
async fn a_fake_behind_arc_dyn_transport_receives_every_option() {
    let fake = Arc::new(Fake::default());
    let shared: Arc<dyn Transport> = fake.clone();
    let answer = shared
        .execute(
            Request::new("{}")
                .header("x-trace", "t-1")
                .deadline(Duration::from_millis(750))
                .idempotency_key("order-7"),
        )
        .await
        .expect("answered");
    assert_eq!(answer.attempts(), 2);
    let given = fake.given.lock().expect("not poisoned");
    assert_eq!(given.len(), 1);
    assert_eq!(given[0].get_idempotency_key(), Some("order-7"));
    assert_eq!(given[0].get_header("x-trace"), Some("t-1"));
    assert_eq!(given[0].get_deadline(), Some(Duration::from_millis(750)));
    assert!(shared.meter().is_none(), "a fake keeps no meter");
}

#[tokio::test]
async fn a_fake_that_writes_send_alone_still_works_through_execute() {
    let shared: Arc<dyn Transport> = Arc::new(Echo);
    let answer = shared
        .execute(Request::new("hello").idempotency_key("ignored"))
        .await
        .expect("answered");
    assert_eq!(answer.text(), "hello");
    // A body that cannot be serialized is refused, never sent as empty.
    let mut unkeyed = std::collections::HashMap::new();
    unkeyed.insert((1, 2), 3);
    let refusal = shared
        .execute(Request::json(&unkeyed))
        .await
        .expect_err("refused");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(refusal.reason().contains("could not be serialized"));
}

#[tokio::test]
async fn the_real_transport_sends_every_option_given_through_the_trait() {
    let server = engine_with([posts()
        .and(header("x-trace", "t-1"))
        .and(header("idempotency-key", "\"order-7\""))
        .and(body_string(r#"{"prompt":"the cat"}"#))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .expect(1)])
    .await;
    #[derive(serde::Serialize)]
    struct Question<'a> {
        prompt: &'a str,
    }
    let shared: Arc<dyn Transport> = Arc::new(transport_for(&server.uri(), SCOPE));
    let request = Request::json(&Question { prompt: "the cat" })
        .header("x-trace", "t-1")
        .idempotency_key("order-7");
    shared.execute(request).await.expect("answered");
    let meter = shared.meter().expect("the real transport keeps a meter");
    assert_eq!((meter.sends(), meter.attempts()), (1, 1));
}

#[tokio::test]
async fn a_deadline_given_through_the_trait_is_the_sends_deadline() {
    let server = engine_expecting(
        1,
        ResponseTemplate::new(200).set_delay(Duration::from_secs(3)),
    )
    .await;
    let shared: Arc<dyn Transport> = Arc::new(transport_for(&server.uri(), SCOPE));
    let refusal = shared
        .execute(Request::new("{}").deadline(Duration::from_millis(200)))
        .await
        .expect_err("past its deadline");
    assert!(
        refusal.reason().contains("no answer within 200 ms"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn call_json_replaces_the_body_and_keeps_the_options() {
    let server = engine_with([posts()
        .and(body_string(r#"{"prompt":"json"}"#))
        .and(header("idempotency-key", "\"k-1\""))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .expect(1)])
    .await;
    transport_for(&server.uri(), SCOPE)
        .call("replaced")
        .idempotency_key("k-1")
        .json(&serde_json::json!({"prompt": "json"}))
        .send()
        .await
        .expect("answered");
}

#[tokio::test]
async fn an_answer_carries_its_headers_concealed_and_no_credential() {
    let server = engine_expecting(
        1,
        ResponseTemplate::new(200)
            .set_body_string("{}")
            .insert_header("x-model", "small-2025")
            .insert_header("x-echo", format!("you sent {TOKEN}").as_str())
            .insert_header("set-cookie", "session=abc123; HttpOnly")
            .insert_header("x-auth-token", "issued-to-you"),
    )
    .await;
    let answer = transport_for(&server.uri(), SCOPE)
        .send("{}")
        .await
        .expect("answered");
    assert_eq!(answer.header("X-Model"), Some("small-2025"));
    assert_eq!(answer.header("x-echo"), Some("you sent [redacted]"));
    assert_eq!(answer.header("set-cookie"), None);
    assert_eq!(answer.header("x-auth-token"), None);
    assert!(!format!("{answer:?}").contains("abc123"));
}

#[test]
fn a_fake_builds_an_answer_with_every_part() {
    let answer = Answer::new(200, "{}")
        .with_request_id("req-9")
        .with_attempts(3)
        .with_header("X-Model", "small");
    assert_eq!(answer.request_id(), Some("req-9"));
    assert_eq!(answer.attempts(), 3);
    assert_eq!(answer.header("x-model"), Some("small"));
    assert_eq!(answer.header("x-other"), None);
}

#[test]
fn causes_are_ordered_and_hashable() {
    let set: BTreeSet<Cause> = Cause::ALL.into_iter().rev().collect();
    assert_eq!(set.into_iter().collect::<Vec<_>>(), Cause::ALL);
    let hashed: std::collections::HashSet<Cause> = Cause::ALL.into();
    assert_eq!(hashed.len(), 4);
}

#[tokio::test]
async fn the_report_names_the_engine_and_the_key_and_rounds_its_numbers() {
    let server = engine_expecting(
        1,
        ResponseTemplate::new(503).insert_header("retry-after-ms", "1234.5678"),
    )
    .await;
    let refusal = builder_for(&server.uri(), SCOPE)
        .retries(RetryPolicy::new().max_attempts(1))
        .build()
        .expect("builds")
        .call("{}")
        .idempotency_key("order-7")
        .send()
        .await
        .expect_err("503");
    let json: serde_json::Value = serde_json::from_str(&refusal.report().to_json()).expect("json");
    let host = server.uri().replace("http://", "");
    assert_eq!(json["refusal"]["engine"], host.as_str(), "{json}");
    assert_eq!(json["refusal"]["idempotencyKey"], "order-7", "{json}");
    assert_eq!(json["refusal"]["retryAfter"], 1.235, "{json}");
    assert_eq!(refusal.engine(), Some(host.as_str()));
    assert_eq!(refusal.idempotency_key(), Some("order-7"));
    let back: Report = serde_json::from_str(&refusal.report().to_json()).expect("parses");
    assert_eq!(back.refusal(), &refusal);
}

#[tokio::test]
async fn the_meter_carries_no_float_noise() {
    let server = engine(ResponseTemplate::new(200).set_body_string("{}")).await;
    let transport = transport_for(&server.uri(), SCOPE);
    for _ in 0..5 {
        transport.send("{}").await.expect("answered");
    }
    let json = serde_json::to_value(transport.meter()).expect("serializes");
    for quantile in ["p50", "p90", "p99", "max"] {
        let ms = json["latencyMs"][quantile].as_f64().expect("a number");
        // To the microsecond, exactly: a thousandth times a whole number.
        let micros = ms * 1000.0;
        assert!((micros - micros.round()).abs() < 1e-6, "{quantile}: {ms}");
        let shown = json["latencyMs"][quantile].to_string();
        let decimals = shown.split('.').nth(1).map_or(0, str::len);
        assert!(decimals <= 3, "{quantile}: {shown}");
    }
}

#[tokio::test]
async fn a_vendors_own_variables_name_the_chains() {
    let server = engine_with([posts()
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .expect(1)])
    .await;
    let naming = Naming::from_variables(["OPENAI_BASE_URL"], ["OPENAI_API_KEY"]).expect("a naming");
    let transport = HttpTransport::builder(SCOPE)
        .naming(naming.clone())
        .env(Env::from_pairs([
            (
                "OPENAI_BASE_URL",
                format!("{}/v1/chat/completions", server.uri()),
            ),
            ("OPENAI_API_KEY", TOKEN.to_owned()),
        ]))
        .build()
        .expect("builds");
    transport.send("{}").await.expect("answered");

    // No address: the remedy names the vendor's variable.
    let unset = HttpTransport::builder(SCOPE)
        .naming(naming)
        .env(Env::new())
        .build()
        .expect("builds");
    let refusal = unset.refusal().expect("nothing to send to").clone();
    assert_refusal_shape(&refusal);
    assert!(
        refusal.reason().contains("OPENAI_BASE_URL"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.remedy().starts_with("set OPENAI_BASE_URL to"),
        "{}",
        refusal.remedy()
    );
    assert!(
        !refusal.remedy().contains("for this scope alone"),
        "{}",
        refusal.remedy()
    );
}

#[test]
fn a_vendors_variables_are_checked_like_any_naming() {
    assert_eq!(
        Naming::from_variables(["OPENAI_BASE_URL"], ["OPENAI_BASE_URL", "OPENAI_API_KEY"]),
        Err(NamingError::SharedVariable {
            variable: "OPENAI_BASE_URL".to_owned()
        })
    );
    assert!(matches!(
        Naming::from_variables(Vec::<String>::new(), ["OPENAI_API_KEY"]),
        Err(NamingError::EmptyChain { chain: "address" })
    ));
    assert!(matches!(
        Naming::from_variables(["openai_base_url"], ["OPENAI_API_KEY"]),
        Err(NamingError::NotAName { .. })
    ));
    // A value read by mistake where a name belongs is never quoted back.
    let key = "sk-proj-Q7vX2kP9zR4tL8wN";
    let error = Naming::from_variables(["OPENAI_BASE_URL"], ["OPENAI_ORG", key])
        .expect_err("a key is no variable name");
    assert_eq!(
        error,
        NamingError::NotAName {
            part: "token chain's variable",
            value: "entry 2 of 2".to_owned(),
        }
    );
    assert!(!format!("{error} {error:?}").contains("Q7vX2k"), "{error}");
}

#[test]
fn the_streaming_example_stays_a_page() {
    let source = include_str!("../../examples/stream.rs");
    let lines = source.lines().count();
    assert!(lines < 80, "examples/stream.rs is {lines} lines");
    assert!(source.contains("127.0.0.1"));
    assert!(source.contains(".next_delta()"));
}

#[test]
fn the_predictor_example_stays_a_page() {
    let source = include_str!("../../examples/predict.rs");
    let lines = source.lines().count();
    assert!(lines < 80, "examples/predict.rs is {lines} lines");
    assert!(source.contains("Arc<dyn Transport>"));
    assert!(source.contains(".idempotency_key("));
}
