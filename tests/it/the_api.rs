//! The public API, each method against a loopback engine:
//! configuration from code, headers, calls, typed sends, what answers and
//! refusals carry, and the `Transport` trait's implementations.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use meterwire::{
    Answer, BuildError, Bytes, Call, Cause, Concealer, Env, HttpTransport, HttpTransportBuilder,
    Naming, NamingError, REDACTED, Refusal, Report, SecretString, Transport,
};
use wiremock::matchers::{body_json, body_string, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::engines::{engine_expecting, engine_with, posts};
use crate::support::{
    ADDRESS_VAR, SCOPE, TOKEN, TOKEN_VAR, assert_refusal_shape, env, transport_for,
};

/// A token the code gives, different from the chain's [`TOKEN`].
const CODE_TOKEN: &str = "mw-code-Z3kQ8vN1pX6wR2tY";

fn answering(status: u16) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(r#"{"ok": true}"#, "application/json")
}

#[test]
fn every_public_type_is_send_sync_unpin_and_debug() {
    fn public<T: Send + Sync + Unpin + std::fmt::Debug>() -> &'static str {
        std::any::type_name::<T>()
    }
    let names = [
        public::<HttpTransport>(),
        public::<HttpTransportBuilder>(),
        public::<Call>(),
        public::<Answer>(),
        public::<Refusal>(),
        public::<Cause>(),
        public::<Report>(),
        public::<Concealer>(),
        public::<Env>(),
        public::<Naming>(),
        public::<NamingError>(),
        public::<BuildError>(),
        public::<Bytes>(),
        public::<SecretString>(),
    ];
    assert!(names.iter().all(|name| name.contains("::")));
}

#[tokio::test]
async fn an_address_and_a_token_given_in_code_win_over_their_chains() {
    let chosen = MockServer::start().await;
    let chained = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header(
            "authorization",
            format!("Bearer {CODE_TOKEN}").as_str(),
        ))
        .respond_with(answering(200))
        .expect(1)
        .mount(&chosen)
        .await;
    Mock::given(method("POST"))
        .respond_with(answering(200))
        .expect(0)
        .mount(&chained)
        .await;
    let transport = HttpTransport::builder(SCOPE)
        .env(env(&[(ADDRESS_VAR, &chained.uri()), (TOKEN_VAR, TOKEN)]))
        .address(format!("{}/v1", chosen.uri()))
        .token(SecretString::from(CODE_TOKEN))
        .build()
        .expect("builds");
    let answer = transport.send("{}").await.expect("an answer");
    assert_eq!(answer.status(), 200);
    let shown = format!("{transport:?}");
    assert!(
        !shown.contains(CODE_TOKEN) && !shown.contains(TOKEN),
        "{shown}"
    );
}

#[tokio::test]
async fn a_token_given_in_code_is_checked_like_a_chains_value() {
    let engine = engine_expecting(0, answering(200)).await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::new())
        .address(engine.uri())
        .token(SecretString::from("mw-code\nX-Evil: 1"))
        .build()
        .expect("builds");
    let refusal = transport.send("{}").await.expect_err("refused");
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(
        refusal.variable(),
        None,
        "nothing in the environment to blame"
    );
    assert_eq!(refusal.attempts(), 0);
    assert!(
        refusal
            .reason()
            .contains("the token given in code holds a line break")
    );
    assert!(refusal.remedy().contains("HttpTransportBuilder::token"));
    assert!(refusal.remedy().contains(TOKEN_VAR), "{}", refusal.remedy());
    assert!(!refusal.to_string().contains("Evil"));
    assert_refusal_shape(&refusal);
}

#[tokio::test]
async fn a_rejected_token_given_in_code_names_the_method_and_the_variable() {
    let engine = engine_expecting(
        1,
        ResponseTemplate::new(401).set_body_string(format!("bad token {CODE_TOKEN}")),
    )
    .await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::new())
        .address(engine.uri())
        .token(SecretString::from(CODE_TOKEN))
        .build()
        .expect("builds");
    let refusal = transport.send("{}").await.expect_err("refused");
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(refusal.variable(), None);
    assert!(
        refusal.reason().contains("(given in code)"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal
            .reason()
            .contains("rejected the token given in code")
    );
    assert!(refusal.reason().contains(&format!("bad token {REDACTED}")));
    assert!(refusal.remedy().contains("HttpTransportBuilder::token"));
    assert!(refusal.remedy().contains(TOKEN_VAR));
    assert!(!refusal.report().to_json().contains(CODE_TOKEN));
    assert!(!refusal.report().to_json().contains("\"source\""));
    assert_refusal_shape(&refusal);
}

#[tokio::test]
async fn an_address_given_in_code_is_checked_like_a_chains_value() {
    let refused = |address: &str| {
        HttpTransport::builder(SCOPE)
            .env(env(&[(TOKEN_VAR, TOKEN)]))
            .address(address)
            .build()
            .expect("builds")
            .refusal()
            .cloned()
            .expect("refused before sending")
    };
    for address in [
        "http://engine.example/v1",
        "ftp://engine.example/",
        "   ",
        "https://u:pw@engine.example/",
    ] {
        let refusal = refused(address);
        assert_eq!(refusal.cause(), Cause::EngineUnreachable, "{address}");
        assert_eq!(refusal.variable(), None, "{address}");
        assert!(
            refusal.reason().contains("given in code"),
            "{}",
            refusal.reason()
        );
        assert!(
            refusal.remedy().contains("HttpTransportBuilder::address"),
            "{}",
            refusal.remedy()
        );
        assert!(
            refusal.remedy().contains("CHANT_BEHAVIOUR_ENGINE"),
            "{}",
            refusal.remedy()
        );
        assert!(!refusal.to_string().contains("pw@"));
        assert_refusal_shape(&refusal);
    }
}

#[tokio::test]
async fn the_remedy_for_an_address_with_userinfo_names_the_engines_host() {
    let transport = HttpTransport::builder(SCOPE)
        .env(env(&[
            (
                ADDRESS_VAR,
                "https://user:s3cr3t-pass@engine.example:8443/v1",
            ),
            (TOKEN_VAR, TOKEN),
        ]))
        .build()
        .expect("builds");
    let refusal = transport.send("{}").await.expect_err("refused");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.variable(), Some(ADDRESS_VAR));
    assert!(
        refusal.remedy().contains("engine.example:8443"),
        "{}",
        refusal.remedy()
    );
    assert!(refusal.remedy().contains(ADDRESS_VAR));
    assert!(!refusal.report().to_json().contains("s3cr3t"));
}

#[tokio::test]
async fn a_builders_header_goes_on_every_request() {
    let engine = engine_with([posts()
        .and(header("engine-version", "2025-01-01"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(answering(200))
        .expect(2)])
    .await;
    let transport = crate::support::builder_for(&engine.uri(), SCOPE)
        .header("Engine-Version", "2025-01-01")
        .build()
        .expect("builds");
    transport.send("{}").await.expect("first");
    transport
        .clone()
        .send("{}")
        .await
        .expect("second, from a clone");
}

#[test]
fn a_builder_refuses_headers_it_must_not_send_naming_them_but_never_the_value() {
    let build = |name: &str, value: &str| {
        crate::support::builder_for("http://127.0.0.1:9/", SCOPE)
            .header(name, value)
            .build()
            .expect_err("refused")
    };
    for name in [
        "authorization",
        "Proxy-Authorization",
        "cookie",
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "te",
        "upgrade",
        "idempotency-key",
    ] {
        let error = build(name, "harmless");
        assert!(matches!(error, BuildError::Header(_)), "{name}: {error:?}");
        assert!(
            error
                .to_string()
                .to_lowercase()
                .contains(&name.to_lowercase()),
            "{error}"
        );
    }
    for (name, value) in [
        ("x-debug", TOKEN),
        ("x-debug", &*format!("Bearer {TOKEN}")),
        ("x-split", "a\r\nx-evil: 1"),
        ("bad name", "v"),
    ] {
        let error = build(name, value);
        assert!(matches!(error, BuildError::Header(_)), "{name}: {error:?}");
        assert!(!error.to_string().contains(TOKEN), "{error}");
        assert!(!error.to_string().contains("evil"), "{error}");
    }
}

#[tokio::test]
async fn a_calls_header_and_idempotency_key_go_on_that_request_alone() {
    let engine = engine_with([posts()
        .and(header("x-trace", "t-1"))
        .and(header("idempotency-key", "\"order-7\""))
        .and(body_string("{\"q\":1}"))
        .respond_with(answering(200))
        .expect(1)])
    .await;
    let transport = transport_for(&engine.uri(), SCOPE);
    let call = transport
        .call("{\"q\":1}")
        .header("x-trace", "t-1")
        .idempotency_key("order-7");
    assert!(
        !format!("{call:?}").contains("t-1"),
        "a call's Debug shows header names only"
    );
    call.send().await.expect("an answer");
    let requests = engine.received_requests().await.expect("recorded");
    assert_eq!(requests.len(), 1);
}

#[tokio::test]
async fn a_call_with_a_header_it_must_not_send_is_refused_with_nothing_sent() {
    let engine = engine_expecting(0, answering(200)).await;
    let transport = transport_for(&engine.uri(), SCOPE);
    let calls = [
        transport.call("{}").header("authorization", "Bearer other"),
        transport.call("{}").header("x-leak", TOKEN),
        transport.call("{}").header("x-split", "a\nb"),
        transport.call("{}").idempotency_key(TOKEN),
        transport.call("{}").idempotency_key("has \"quotes\""),
        transport.call("{}").deadline(Duration::ZERO),
    ];
    for call in calls {
        let refusal = call.send().await.expect_err("refused");
        assert_eq!(refusal.cause(), Cause::EngineUnreachable);
        assert_eq!(refusal.attempts(), 0);
        assert!(
            refusal.reason().contains("nothing was sent"),
            "{}",
            refusal.reason()
        );
        assert!(!refusal.report().to_json().contains(TOKEN));
        assert!(
            !refusal.remedy().contains("reachable"),
            "{}",
            refusal.remedy()
        );
        assert_refusal_shape(&refusal);
    }
}

#[tokio::test]
async fn a_calls_deadline_replaces_the_transports() {
    let engine = engine_expecting(2, answering(200).set_delay(Duration::from_millis(400))).await;
    let patient = crate::support::builder_for(&engine.uri(), SCOPE)
        .deadline(Duration::from_secs(10))
        .build()
        .expect("builds");
    let refusal = patient
        .call("{}")
        .deadline(Duration::from_millis(100))
        .send()
        .await
        .expect_err("past the call's deadline");
    assert!(
        refusal.reason().contains("no answer within 100 ms"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.remedy().contains("try again later"),
        "{}",
        refusal.remedy()
    );

    let hasty = crate::support::builder_for(&engine.uri(), SCOPE)
        .deadline(Duration::from_millis(100))
        .build()
        .expect("builds");
    let answer = hasty
        .call("{}")
        .deadline(Duration::from_secs(10))
        .send()
        .await
        .expect("within the call's own deadline");
    assert!(
        answer.elapsed() >= Duration::from_millis(400),
        "{:?}",
        answer.elapsed()
    );
}

#[tokio::test]
async fn send_json_sends_the_serialized_value() {
    #[derive(serde::Serialize)]
    struct Question<'a> {
        prompt: &'a str,
        n: u8,
    }
    let engine = engine_with([posts()
        .and(body_json(serde_json::json!({"prompt": "the cat", "n": 2})))
        .and(header("content-type", "application/json"))
        .respond_with(answering(200))
        .expect(1)])
    .await;
    let transport = transport_for(&engine.uri(), SCOPE);
    let answer = transport
        .send_json(&Question {
            prompt: "the cat",
            n: 2,
        })
        .await
        .expect("an answer");
    let value: serde_json::Value = answer.json().expect("JSON");
    assert_eq!(value["ok"], true);
}

#[tokio::test]
async fn a_body_that_cannot_be_serialized_is_refused_with_nothing_sent() {
    let engine = engine_expecting(0, answering(200)).await;
    let transport = transport_for(&engine.uri(), SCOPE);
    let keys_are_not_strings: HashMap<(u8, u8), u8> = HashMap::from([((1, 2), 3)]);
    let refusal = transport
        .send_json(&keys_are_not_strings)
        .await
        .expect_err("refused");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.attempts(), 0);
    assert!(
        refusal.reason().contains("could not be serialized"),
        "{}",
        refusal.reason()
    );
    assert!(refusal.remedy().contains("request"), "{}", refusal.remedy());
    assert!(!refusal.remedy().contains("reachable"));
    assert_refusal_shape(&refusal);
}

#[tokio::test]
async fn an_answer_carries_its_request_id_attempts_and_elapsed_time() {
    let engine = engine_with([posts()
        .and(path("/v1"))
        .respond_with(
            answering(201).insert_header("x-request-id", format!("req-{TOKEN}-9").as_str()),
        )
        .expect(1)])
    .await;
    let transport = transport_for(&format!("{}/v1", engine.uri()), SCOPE);
    let answer = transport
        .send(Bytes::from_static(b"{}"))
        .await
        .expect("an answer");
    assert_eq!(answer.status(), 201);
    assert_eq!(answer.request_id(), Some(&*format!("req-{REDACTED}-9")));
    assert_eq!(answer.attempts(), 1);
    assert!(answer.elapsed() > Duration::ZERO && answer.elapsed() < transport.deadline());
    assert_eq!(answer.clone().into_text(), answer.text());
}

#[tokio::test]
async fn a_refusal_counts_its_attempts_in_the_report() {
    let engine = engine_expecting(1, ResponseTemplate::new(503)).await;
    let refusal = transport_for(&engine.uri(), SCOPE)
        .send("{}")
        .await
        .expect_err("503");
    assert_eq!(refusal.attempts(), 1);
    assert_eq!(refusal.status(), Some(503));
    assert!(refusal.report().to_json().contains("\"attempts\":1"));
    let back: Report = serde_json::from_str(&refusal.report().to_json()).expect("round trip");
    assert_eq!(back.refusal(), &refusal);

    let unsent = HttpTransport::builder(SCOPE)
        .env(Env::new())
        .build()
        .expect("builds");
    let refusal = unsent.send("{}").await.expect_err("no engine");
    assert_eq!(refusal.attempts(), 0);
    assert!(!refusal.report().to_json().contains("attempts"));
}

async fn through(transport: impl Transport) -> u16 {
    transport
        .send(Bytes::from_static(b"{}"))
        .await
        .expect("an answer")
        .status()
}

#[tokio::test]
async fn the_transport_trait_holds_for_references_arcs_and_boxes() {
    let engine = engine_expecting(5, answering(200)).await;
    let transport = transport_for(&engine.uri(), SCOPE);
    let shared: Arc<dyn Transport> = Arc::new(transport.clone());
    assert_eq!(through(&transport).await, 200);
    assert_eq!(through(Arc::new(transport.clone())).await, 200);
    assert_eq!(through(Box::new(transport.clone())).await, 200);
    assert_eq!(through(shared.clone()).await, 200);
    let boxed: Box<dyn Transport> = Box::new(transport);
    assert_eq!(through(&*boxed).await, 200);
}

#[test]
fn a_cause_reads_and_writes_its_kebab_case_name() {
    for cause in Cause::ALL {
        assert_eq!(cause.as_str().parse::<Cause>(), Ok(cause));
        assert_eq!(cause.to_string(), cause.as_str());
        let json = serde_json::to_string(&cause).expect("serializes");
        assert_eq!(json, format!("\"{}\"", cause.as_str()));
    }
    assert!("EngineOverQuota".parse::<Cause>().is_err());
    assert!("".parse::<Cause>().is_err());
}

/// `HttpTransport::send` takes anything that becomes `Bytes`; the trait takes
/// `Bytes`. Both put the same bytes on the wire.
#[tokio::test]
async fn the_inherent_and_trait_sends_put_the_same_bytes_on_the_wire() {
    let engine = engine_with([posts()
        .and(body_string(r#"{"a":1}"#))
        .respond_with(answering(200))
        .expect(2)])
    .await;
    let transport = transport_for(&engine.uri(), SCOPE);
    transport
        .send(String::from(r#"{"a":1}"#))
        .await
        .expect("answered");
    Transport::send(&transport, Bytes::from_static(br#"{"a":1}"#))
        .await
        .expect("answered");
}
