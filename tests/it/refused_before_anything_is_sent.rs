//! The refusals decided when a transport is built (the lower rows of the
//! README's wire table): no address, no token, a token that cannot be a header
//! value, plain http off loopback, an address that is not http(s) or carries
//! userinfo. Each is held by `refusal()` from the start, and a send returns
//! it while the wiremock engine the variables point at receives nothing.
//! Also the configurations that cannot build at all (`BuildError`).

use std::time::Duration;

use meterwire::{BuildError, Cause, Env, HttpTransport, Refusal};
use wiremock::{MockServer, ResponseTemplate};

use crate::support::engines::{any_request, engine_with};
use crate::support::{ADDRESS_VAR, SCOPE, TOKEN, TOKEN_VAR, assert_refusal_shape, env};

/// An engine that would answer anything, so a request that reached it would
/// be an answer rather than a refusal, and that expects none: every test
/// here is decided before anything is sent, checked when it drops.
async fn engine() -> MockServer {
    engine_with([any_request()
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .expect(0)])
    .await
}

fn port_of(server: &MockServer) -> u16 {
    server.address().port()
}

fn build(snapshot: Env) -> HttpTransport {
    HttpTransport::builder(SCOPE)
        .env(snapshot)
        .build()
        .expect("an environment that cannot send still builds")
}

/// The refusal a transport holds from the start, after checking that a send
/// returns exactly it and that `server` received nothing.
async fn refused_at_build(snapshot: Env, server: &MockServer) -> Refusal {
    let transport = build(snapshot);
    let held = transport
        .refusal()
        .cloned()
        .expect("the transport holds a refusal from the start");
    let sent = tokio::time::timeout(Duration::from_secs(10), transport.send("{}"))
        .await
        .expect("refused within 10 s rather than hanging")
        .expect_err("a send is refused");
    assert_eq!(sent, held, "a send returns the refusal held at build");
    let received = server
        .received_requests()
        .await
        .expect("wiremock records requests");
    assert!(received.is_empty(), "requests were sent: {received:?}");
    assert_refusal_shape(&held);
    held
}

/// Every string a refusal, or the transport holding it, can be printed as.
fn every_output(transport: &HttpTransport, refusal: &Refusal) -> Vec<(&'static str, String)> {
    vec![
        ("reason", refusal.reason().to_owned()),
        ("remedy", refusal.remedy().to_owned()),
        ("Display", refusal.to_string()),
        ("Debug", format!("{refusal:?}")),
        ("JSON", refusal.report().to_json()),
        ("transport Debug", format!("{transport:?}")),
    ]
}

#[track_caller]
fn assert_nowhere(transport: &HttpTransport, refusal: &Refusal, secrets: &[&str]) {
    for (what, text) in every_output(transport, refusal) {
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "the {what} shows {secret:?}: {text}"
            );
        }
    }
}

#[track_caller]
fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} is missing from {text:?}");
}

// ---------------------------------------------------------------------------
// No address, no token.

#[tokio::test]
async fn no_address_is_no_engine_naming_every_variable_of_the_address_chain() {
    let server = engine().await;
    let refusal = refused_at_build(env(&[(TOKEN_VAR, TOKEN)]), &server).await;
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(refusal.variable(), None);
    assert_eq!(refusal.status(), None);
    for variable in [
        "CHANT_BEHAVIOUR_ENGINE_ACME",
        "CHANT_BEHAVIOUR_ENGINE",
        "BEHAVIOUR_ENGINE",
    ] {
        assert_contains(refusal.reason(), variable);
    }
    assert_contains(refusal.remedy(), "CHANT_BEHAVIOUR_ENGINE");
}

#[tokio::test]
async fn an_address_without_a_token_is_no_engine_naming_the_token_chain_and_the_address() {
    let server = engine().await;
    let scoped = "CHANT_BEHAVIOUR_ENGINE_ACME";
    let address = format!("{}/v1", server.uri());
    let refusal = refused_at_build(env(&[(scoped, &address)]), &server).await;
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(refusal.variable(), None);
    for variable in [
        "CHANT_BEHAVIOUR_TOKEN_ACME",
        "CHANT_BEHAVIOUR_TOKEN",
        "BEHAVIOUR_TOKEN",
    ] {
        assert_contains(refusal.reason(), variable);
    }
    assert_contains(refusal.reason(), &format!("127.0.0.1:{}", port_of(&server)));
    assert_contains(refusal.reason(), scoped);
    assert_contains(refusal.remedy(), "CHANT_BEHAVIOUR_TOKEN");
}

// ---------------------------------------------------------------------------
// A token that cannot be a header value.

/// Two distinctive halves, so that finding either one printed is a leak of
/// part of the value even if the character between them was dropped.
const HALF_A: &str = "mwA7f3q9Lk";
const HALF_B: &str = "Zx81kPq2Vb";

async fn assert_unusable_token_refused(between: &str) {
    let server = engine().await;
    let value = format!("{HALF_A}{between}{HALF_B}");
    let address = format!("{}/v1", server.uri());
    let snapshot = env(&[(ADDRESS_VAR, &address), (TOKEN_VAR, &value)]);
    let refusal = refused_at_build(snapshot.clone(), &server).await;
    assert_eq!(refusal.cause(), Cause::NoEngine, "{between:?}");
    assert_eq!(refusal.variable(), Some(TOKEN_VAR), "{between:?}");
    assert_contains(refusal.reason(), TOKEN_VAR);
    assert_contains(refusal.remedy(), TOKEN_VAR);
    assert_contains(refusal.reason(), ADDRESS_VAR);
    assert_nowhere(&build(snapshot), &refusal, &[&value, HALF_A, HALF_B]);
}

#[tokio::test]
async fn a_token_with_a_line_break_is_refused_by_variable_never_by_value() {
    assert_unusable_token_refused("\n").await;
    assert_unusable_token_refused("\r\n").await;
}

#[tokio::test]
async fn a_token_with_a_tab_is_refused_by_variable_never_by_value() {
    assert_unusable_token_refused("\t").await;
}

#[tokio::test]
async fn a_token_with_a_space_is_refused_by_variable_never_by_value() {
    assert_unusable_token_refused(" ").await;
}

#[tokio::test]
async fn a_token_with_a_control_character_is_refused_by_variable_never_by_value() {
    assert_unusable_token_refused("\u{7}").await;
    assert_unusable_token_refused("\u{1b}").await;
    assert_unusable_token_refused("\u{0}").await;
    assert_unusable_token_refused("\u{7f}").await;
}

#[tokio::test]
async fn a_token_with_non_ascii_is_refused_by_variable_never_by_value() {
    assert_unusable_token_refused("é").await;
    assert_unusable_token_refused("\u{a0}").await;
}

// ---------------------------------------------------------------------------
// Blank variables.

#[tokio::test]
async fn a_blank_scoped_address_variable_falls_through_to_the_next() {
    let server = engine().await;
    let address = format!("{}/v1", server.uri());
    let snapshot = env(&[
        ("CHANT_BEHAVIOUR_ENGINE_ACME", "   "),
        ("CHANT_BEHAVIOUR_ENGINE", "\t \n"),
        ("BEHAVIOUR_ENGINE", &address),
    ]);
    // No token, so the refusal shows which address won without a send.
    let refusal = refused_at_build(snapshot, &server).await;
    assert_eq!(refusal.cause(), Cause::NoEngine);
    // Only BEHAVIOUR_ENGINE holds this port.
    assert_contains(refusal.reason(), &format!("127.0.0.1:{}", port_of(&server)));
    let others_removed = refusal.reason().replace("CHANT_BEHAVIOUR_ENGINE", "");
    assert_contains(&others_removed, "BEHAVIOUR_ENGINE");
}

#[tokio::test]
async fn an_address_chain_of_blank_variables_is_no_address() {
    let server = engine().await;
    let snapshot = env(&[
        ("CHANT_BEHAVIOUR_ENGINE_ACME", " "),
        ("CHANT_BEHAVIOUR_ENGINE", "\t"),
        ("BEHAVIOUR_ENGINE", "\n"),
        (TOKEN_VAR, TOKEN),
    ]);
    let refusal = refused_at_build(snapshot, &server).await;
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(refusal.variable(), None);
    assert_contains(refusal.reason(), "BEHAVIOUR_ENGINE");
    assert_contains(refusal.remedy(), "CHANT_BEHAVIOUR_ENGINE");
}

#[tokio::test]
async fn a_blank_scoped_token_variable_falls_through_to_the_next() {
    let server = engine().await;
    let address = format!("{}/v1", server.uri());
    // The next variable holds a value with a space, so which variable won is
    // visible in the refusal without a send.
    let snapshot = env(&[
        (ADDRESS_VAR, &address),
        ("CHANT_BEHAVIOUR_TOKEN_ACME", " \t "),
        (TOKEN_VAR, "mw-two words"),
    ]);
    let refusal = refused_at_build(snapshot, &server).await;
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(refusal.variable(), Some(TOKEN_VAR));
}

#[tokio::test]
async fn a_token_chain_of_blank_variables_is_no_token() {
    let server = engine().await;
    let address = format!("{}/v1", server.uri());
    let snapshot = env(&[
        (ADDRESS_VAR, &address),
        ("CHANT_BEHAVIOUR_TOKEN_ACME", " "),
        (TOKEN_VAR, "\t"),
        ("BEHAVIOUR_TOKEN", "\r\n"),
    ]);
    let refusal = refused_at_build(snapshot, &server).await;
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(refusal.variable(), None);
    assert_contains(refusal.reason(), "BEHAVIOUR_TOKEN");
    assert_contains(refusal.remedy(), TOKEN_VAR);
}

// ---------------------------------------------------------------------------
// Plain http.

#[tokio::test]
async fn plain_http_to_a_host_off_loopback_is_refused_with_a_remedy_saying_https() {
    let server = engine().await;
    let snapshot = env(&[
        (ADDRESS_VAR, "http://engine.invalid/v1"),
        (TOKEN_VAR, TOKEN),
    ]);
    let refusal = refused_at_build(snapshot, &server).await;
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.variable(), Some(ADDRESS_VAR));
    assert_contains(refusal.reason(), "http://engine.invalid/v1");
    assert_contains(refusal.reason(), ADDRESS_VAR);
    assert_contains(refusal.remedy(), "https");
    assert_contains(refusal.remedy(), ADDRESS_VAR);
}

#[test]
fn danger_allow_plaintext_http_lifts_the_plain_http_refusal() {
    let transport = HttpTransport::builder(SCOPE)
        .env(env(&[
            (ADDRESS_VAR, "http://engine.invalid/v1"),
            (TOKEN_VAR, TOKEN),
        ]))
        .danger_allow_plaintext_http(true)
        .build()
        .expect("builds");
    assert_eq!(transport.refusal(), None);
}

#[tokio::test]
async fn plain_http_to_loopback_is_allowed_without_the_opt_in() {
    let server = engine().await;
    let port = port_of(&server);
    for address in [
        format!("http://127.0.0.1:{port}/v1"),
        format!("http://127.0.0.2:{port}/v1"),
        format!("http://localhost:{port}/v1"),
        format!("http://LocalHost:{port}/v1"),
        format!("http://[::1]:{port}/v1"),
    ] {
        let transport = build(env(&[(ADDRESS_VAR, &address), (TOKEN_VAR, TOKEN)]));
        assert_eq!(transport.refusal(), None, "{address}");
    }
    // Deciding was enough; nothing was sent.
    assert!(
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------
// Addresses that are not an engine's.

#[tokio::test]
async fn an_address_with_userinfo_is_refused_without_printing_the_password() {
    let server = engine().await;
    let password = "s3cr3tpassw0rd";
    let address = format!(
        "http://operator:{password}@127.0.0.1:{}/v1",
        port_of(&server)
    );
    let snapshot = env(&[(ADDRESS_VAR, &address), (TOKEN_VAR, TOKEN)]);
    let refusal = refused_at_build(snapshot.clone(), &server).await;
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.variable(), Some(ADDRESS_VAR));
    assert_contains(refusal.reason(), ADDRESS_VAR);
    assert_contains(refusal.reason(), "127.0.0.1");
    assert_nowhere(&build(snapshot), &refusal, &[password]);
}

#[tokio::test]
async fn an_address_that_is_not_http_is_refused() {
    let server = engine().await;
    let address = format!("grpc://127.0.0.1:{}", port_of(&server));
    let refusal =
        refused_at_build(env(&[(ADDRESS_VAR, &address), (TOKEN_VAR, TOKEN)]), &server).await;
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.variable(), Some(ADDRESS_VAR));
    assert_contains(refusal.reason(), ADDRESS_VAR);
    assert_contains(refusal.reason(), "grpc");
    assert_contains(refusal.remedy(), ADDRESS_VAR);
}

#[tokio::test]
async fn an_address_that_is_not_a_url_is_refused_naming_its_variable() {
    let server = engine().await;
    let scoped = "CHANT_BEHAVIOUR_ENGINE_ACME";
    let refusal =
        refused_at_build(env(&[(scoped, "not a url"), (TOKEN_VAR, TOKEN)]), &server).await;
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.variable(), Some(scoped));
    assert_contains(refusal.reason(), scoped);
    assert_contains(refusal.remedy(), scoped);
}

#[tokio::test]
async fn the_query_of_an_address_is_redacted_in_a_refusal() {
    let server = engine().await;
    let secret = "s3cr3tvalue";
    // No token: a refusal that prints a loopback address.
    let address = format!("{}/v1?key={secret}", server.uri());
    let snapshot = env(&[(ADDRESS_VAR, &address)]);
    let refusal = refused_at_build(snapshot.clone(), &server).await;
    assert_contains(refusal.reason(), "/v1?[redacted]");
    assert_nowhere(&build(snapshot), &refusal, &[secret]);
}

#[tokio::test]
async fn the_query_of_a_plain_http_address_is_redacted_in_its_refusal() {
    let server = engine().await;
    let secret = "s3cr3tvalue";
    let snapshot = env(&[
        (
            ADDRESS_VAR,
            &format!("http://engine.invalid/v1?key={secret}"),
        ),
        (TOKEN_VAR, TOKEN),
    ]);
    let refusal = refused_at_build(snapshot.clone(), &server).await;
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_contains(refusal.reason(), "http://engine.invalid/v1?[redacted]");
    assert_nowhere(&build(snapshot), &refusal, &[secret]);
}

// ---------------------------------------------------------------------------
// Configurations that cannot build.

fn sendable() -> Env {
    env(&[(ADDRESS_VAR, "http://127.0.0.1:9/v1"), (TOKEN_VAR, TOKEN)])
}

#[test]
fn a_scope_with_no_letter_or_digit_does_not_build() {
    let error = HttpTransport::builder("--")
        .env(sendable())
        .build()
        .expect_err("an empty scope names no variable");
    assert!(matches!(error, BuildError::Scope(_)), "{error:?}");
    assert_contains(&error.to_string(), "--");
}

#[test]
fn a_zero_deadline_does_not_build() {
    let error = HttpTransport::builder(SCOPE)
        .env(sendable())
        .deadline(Duration::ZERO)
        .build()
        .expect_err("a zero deadline refuses every call");
    assert!(matches!(error, BuildError::ZeroDeadline), "{error:?}");
    assert!(!error.to_string().is_empty());
}

#[test]
fn a_zero_answer_cap_does_not_build() {
    let error = HttpTransport::builder(SCOPE)
        .env(sendable())
        .max_answer_bytes(0)
        .build()
        .expect_err("a zero cap refuses every answer");
    assert!(matches!(error, BuildError::ZeroCap), "{error:?}");
    assert!(!error.to_string().is_empty());
}

#[test]
fn a_ca_certificate_that_is_not_pem_does_not_build() {
    for pem in [
        "not a certificate".as_bytes(),
        b"-----BEGIN CERTIFICATE-----\n!!not base64!!\n-----END CERTIFICATE-----\n",
        b"",
    ] {
        let error = HttpTransport::builder(SCOPE)
            .env(sendable())
            .add_ca_certificate_pem(pem)
            .build()
            .expect_err("a CA that is not PEM");
        assert!(matches!(error, BuildError::CaCertificate(_)), "{error:?}");
        assert_contains(&error.to_string(), "PEM");
    }
}
