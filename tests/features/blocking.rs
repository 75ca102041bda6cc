//! `meterwire::blocking` (cargo feature `blocking`): a program with no
//! async runtime sends and reads the meter, and one inside a runtime is
//! refused, never panics.

use meterwire::{Cause, Env, blocking};
use wiremock::matchers::{header, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{SCOPE, TOKEN, assert_refusal_shape};

fn engine() -> (tokio::runtime::Runtime, MockServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the engine");
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(header("x-trace", "t-1"))
            .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"ok":true}"#))
            .mount(&server)
            .await;
        server
    });
    (runtime, server)
}

#[test]
fn a_program_with_no_runtime_sends_and_reads_the_meter() {
    let (_runtime, server) = engine();
    let transport = blocking::HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
        ]))
        .header("x-trace", "t-1")
        .build()
        .expect("builds");
    let answer = transport.send("{}").expect("answered");
    assert_eq!(answer.text(), r#"{"ok":true}"#);
    let answer = transport
        .call("{}")
        .idempotency_key("order-7")
        .send()
        .expect("answered");
    assert_eq!(answer.status(), 200);
    transport
        .send_json(&serde_json::json!({"prompt": "hi"}))
        .expect("answered");
    // Clones share the meter, and from other threads too.
    let clone = transport.clone();
    std::thread::spawn(move || clone.send("{}").expect("answered"))
        .join()
        .expect("the thread ends");
    assert_eq!(transport.meter().sends(), 4);
}

#[tokio::test]
async fn inside_a_runtime_it_refuses_instead_of_panicking() {
    let transport = blocking::HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", "http://127.0.0.1:9/v1"),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ]))
        .build()
        .expect("builds, even here");
    let refusal = transport.send("{}").expect_err("refused");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.attempts(), 0);
    assert!(
        refusal.remedy().contains("meterwire::HttpTransport"),
        "{}",
        refusal.remedy()
    );
    assert_refusal_shape(&refusal);
    // Dropped here, inside the runtime, without a panic.
    drop(transport);
}
