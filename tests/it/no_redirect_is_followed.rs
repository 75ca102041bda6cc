//! No redirect is followed (the README's security properties): a `3xx` is an `engine-unreachable`
//! refusal naming the status and the host it pointed at, the host it named
//! receives nothing (so the bearer header never reaches it), and the
//! refusal quotes neither the location's query nor the token.

use meterwire::{Cause, Env, HttpTransport, Refusal};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::engines::{any_request, engine_expecting, engine_with, posts};
use crate::support::{GUARD, TOKEN};

/// A second secret in the location, which the concealer does not know: only
/// reducing the location to its host keeps it out of the refusal.
const SIGNATURE: &str = "sig=c0ffee5ecret";

fn transport(engine: &MockServer) -> HttpTransport {
    HttpTransport::builder("acme")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", format!("{}/v1", engine.uri())),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
        ]))
        .build()
        .expect("the configuration is valid")
}

/// Engine A redirects with `status` to B, named as `localhost` so that B's
/// host is distinguishable from A's `127.0.0.1` in the reason. B expects no
/// request, which it checks when it drops; the wire table's row for `3xx`
/// tells this story too.
pub(crate) async fn redirected_by(status: u16) -> (Refusal, MockServer) {
    let elsewhere = engine_with([any_request()
        .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"from":"elsewhere"}"#))
        .expect(0)])
    .await;
    let location = format!(
        "http://localhost:{}/collect?t={TOKEN}&{SIGNATURE}",
        elsewhere.address().port()
    );
    let engine = engine_expecting(
        1,
        ResponseTemplate::new(status).insert_header("location", location.as_str()),
    )
    .await;

    let refusal = tokio::time::timeout(GUARD, transport(&engine).send("{}"))
        .await
        .expect("the send ends instead of hanging")
        .expect_err("a redirect is not an answer");
    (refusal, elsewhere)
}

async fn assert_not_followed(status: u16) {
    let (refusal, elsewhere) = redirected_by(status).await;

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains(&format!("HTTP {status}")),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains("localhost"),
        "the reason should name the host the redirect pointed at: {}",
        refusal.reason()
    );
    assert_eq!(refusal.variable(), Some("CHANT_BEHAVIOUR_ENGINE"));
    // The refusal quotes only the location's host, never its query where
    // the token and the signature sit, so no `[redacted]` stands in for
    // them: their absence is the whole check.
    for shown in [
        refusal.to_string(),
        format!("{refusal:?}"),
        refusal.report().to_json(),
    ] {
        assert!(!shown.contains(TOKEN), "the token leaked: {shown}");
        assert!(!shown.contains(SIGNATURE), "the query leaked: {shown}");
        assert!(!shown.contains("?t="), "the query leaked: {shown}");
    }
    let received = elsewhere.received_requests().await.unwrap_or_default();
    assert!(
        received.is_empty(),
        "the redirect target received {} request(s)",
        received.len()
    );
}

#[tokio::test]
async fn a_301_is_not_followed() {
    assert_not_followed(301).await;
}

#[tokio::test]
async fn a_302_is_not_followed() {
    assert_not_followed(302).await;
}

#[tokio::test]
async fn a_303_is_not_followed() {
    assert_not_followed(303).await;
}

#[tokio::test]
async fn a_307_is_not_followed() {
    assert_not_followed(307).await;
}

#[tokio::test]
async fn a_308_is_not_followed() {
    assert_not_followed(308).await;
}

#[tokio::test]
async fn a_redirect_to_a_path_on_the_same_engine_is_not_followed_either() {
    let engine = engine_with([
        posts()
            .and(path("/v1"))
            .respond_with(
                ResponseTemplate::new(307)
                    .insert_header("location", format!("/v2?t={TOKEN}").as_str()),
            )
            .expect(1),
        Mock::given(path("/v2"))
            .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"from":"v2"}"#))
            .expect(0),
    ])
    .await;

    let refusal = tokio::time::timeout(GUARD, transport(&engine).send("{}"))
        .await
        .expect("the send ends instead of hanging")
        .expect_err("a redirect is not an answer");

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains("HTTP 307"),
        "{}",
        refusal.reason()
    );
    // A relative location is shown as "a path on the same host", its query
    // not at all, so the token can only be absent, not concealed.
    assert!(!refusal.report().to_json().contains(TOKEN));
    let received = engine.received_requests().await.unwrap_or_default();
    assert_eq!(received.len(), 1, "only the first request was sent");
}
