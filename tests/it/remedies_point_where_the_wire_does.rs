//! The remedy table: within `engine-unreachable` the remedy points
//! where the wire does (the request, the address's path, the engine's
//! health, the address), and a `429` whose error code names the account's
//! credit is out of credit, through `send` against a loopback engine.

use std::time::Duration;

use meterwire::{Cause, REDACTED};
use wiremock::ResponseTemplate;

use crate::support::engines::engine_expecting;
use crate::support::{ADDRESS_VAR, SCOPE, TOKEN, TOKEN_VAR, assert_refusal_shape, transport_for};

async fn refusal_for(response: ResponseTemplate) -> meterwire::Refusal {
    let engine = engine_expecting(1, response).await;
    let refusal = transport_for(&format!("{}/v1/predict", engine.uri()), SCOPE)
        .send("{}")
        .await
        .expect_err("refused");
    assert_refusal_shape(&refusal);
    refusal
}

#[tokio::test]
async fn a_refused_request_points_at_the_request_not_the_network() {
    for status in [400, 409, 413, 415, 422] {
        let refusal = refusal_for(ResponseTemplate::new(status).set_body_string("bad field")).await;
        assert_eq!(refusal.cause(), Cause::EngineUnreachable, "{status}");
        let remedy = refusal.remedy();
        assert!(
            remedy.contains("fix the request the predictor sends"),
            "{status}: {remedy}"
        );
        assert!(
            remedy.contains(&format!("HTTP {status}")),
            "{status}: {remedy}"
        );
        assert!(remedy.contains(ADDRESS_VAR), "{remedy}");
        assert!(!remedy.contains("up and reachable"), "{status}: {remedy}");
        assert!(refusal.reason().contains(&format!("HTTP {status}")));
    }
}

#[tokio::test]
async fn a_path_the_engine_does_not_serve_points_at_the_address_path() {
    for status in [404, 405, 410] {
        let refusal = refusal_for(ResponseTemplate::new(status)).await;
        assert_eq!(refusal.cause(), Cause::EngineUnreachable, "{status}");
        let remedy = refusal.remedy();
        assert!(
            remedy.starts_with(&format!("set {ADDRESS_VAR} to the address of an endpoint")),
            "{remedy}"
        );
        assert!(remedy.contains("for the path /v1/predict"), "{remedy}");
        assert!(!remedy.contains("up and reachable"), "{remedy}");
    }
}

#[tokio::test]
async fn a_failing_engine_points_at_its_health_with_the_hint() {
    for status in [408, 500, 502, 503, 504] {
        let refusal = refusal_for(ResponseTemplate::new(status)).await;
        assert_eq!(refusal.cause(), Cause::EngineUnreachable, "{status}");
        let remedy = refusal.remedy();
        assert!(
            remedy.starts_with("try again later: "),
            "{status}: {remedy}"
        );
        assert!(remedy.contains("health"), "{remedy}");
        assert!(remedy.contains(ADDRESS_VAR), "{remedy}");
    }
    let refusal = refusal_for(ResponseTemplate::new(503).insert_header("retry-after", "7")).await;
    assert!(
        refusal
            .remedy()
            .starts_with("try again later (the engine asks to wait 7 s)"),
        "{}",
        refusal.remedy()
    );
    assert_eq!(refusal.retry_after(), Some(Duration::from_secs(7)));
}

#[tokio::test]
async fn a_reset_and_the_deadline_point_at_the_engines_health() {
    let engine = engine_expecting(
        1,
        ResponseTemplate::new(200).set_delay(Duration::from_millis(500)),
    )
    .await;
    let transport = crate::support::builder_for(&engine.uri(), SCOPE)
        .deadline(Duration::from_millis(100))
        .build()
        .expect("builds");
    let refusal = transport.send("{}").await.expect_err("deadline");
    assert!(refusal.reason().contains("no answer within 100 ms"));
    assert!(
        refusal.remedy().starts_with("try again later"),
        "{}",
        refusal.remedy()
    );
}

#[tokio::test]
async fn a_refused_connection_points_at_the_address() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let refusal = transport_for(&format!("http://127.0.0.1:{port}/v1"), SCOPE)
        .send("{}")
        .await
        .expect_err("refused");
    assert!(refusal.reason().contains("connection refused"));
    assert!(
        refusal.remedy().contains("is up and reachable from here"),
        "{}",
        refusal.remedy()
    );
}

#[tokio::test]
async fn a_429_naming_the_accounts_credit_is_out_of_credit_not_over_quota() {
    let body = format!(
        r#"{{"error": {{"message": "You exceeded your current quota, account {TOKEN}", "type": "insufficient_quota", "code": "insufficient_quota"}}}}"#
    );
    let refusal = refusal_for(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "20")
            .set_body_raw(body, "application/json"),
    )
    .await;
    assert_eq!(refusal.cause(), Cause::EngineOutOfCredit);
    assert_eq!(refusal.status(), Some(429));
    assert_eq!(refusal.retry_after(), None, "waiting would not help");
    assert_eq!(refusal.variable(), Some(ADDRESS_VAR));
    let reason = refusal.reason();
    assert!(reason.contains("HTTP 429"), "{reason}");
    assert!(reason.contains("\"insufficient_quota\""), "{reason}");
    assert!(reason.contains("out of credit"), "{reason}");
    assert!(reason.contains(TOKEN_VAR), "{reason}");
    assert!(reason.contains(&format!("account {REDACTED}")), "{reason}");
    assert!(refusal.remedy().contains("fund"), "{}", refusal.remedy());
    assert!(!refusal.report().to_json().contains(TOKEN));

    for code in [
        "billing_hard_limit_reached",
        "insufficient_credit",
        "insufficient_funds",
        "out_of_credit",
        "credit_balance_too_low",
    ] {
        let body = format!(r#"{{"error": {{"code": "{code}", "message": "no"}}}}"#);
        let refusal =
            refusal_for(ResponseTemplate::new(429).set_body_raw(body, "application/json")).await;
        assert_eq!(refusal.cause(), Cause::EngineOutOfCredit, "{code}");
    }
}

#[tokio::test]
async fn a_429_naming_a_window_stays_over_quota() {
    let body = r#"{"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}"#;
    let refusal = refusal_for(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "20")
            .set_body_raw(body, "application/json"),
    )
    .await;
    assert_eq!(refusal.cause(), Cause::EngineOverQuota);
    assert_eq!(refusal.retry_after(), Some(Duration::from_secs(20)));
    assert!(!refusal.remedy().contains("fund"));
}

/// A timer that ran out after the engine began to answer: a slow engine is
/// not a dead one, so the remedy says how to raise that timer, by the
/// builder method (and the call's) that sets it.
#[tokio::test]
async fn a_timer_that_ran_out_after_the_engine_began_answering_says_how_to_raise_it() {
    use crate::streams::{Step, chunk, engine};
    let guard = crate::support::GUARD;

    // A whole answer whose body stops past the deadline.
    let slow_body = engine(
        "application/json",
        vec![chunk("{\"a\":"), Step::Pause(guard)],
    )
    .await;
    let refusal = crate::support::builder_for(&slow_body.address, SCOPE)
        .deadline(Duration::from_millis(300))
        .build()
        .expect("builds")
        .send("{}")
        .await
        .expect_err("the body stops");
    assert_refusal_shape(&refusal);
    let remedy = refusal.remedy();
    assert!(remedy.starts_with("try again later"), "{remedy}");
    assert!(
        remedy.contains(
            "raise the deadline (now 300 ms) with HttpTransportBuilder::deadline or Call::deadline"
        ),
        "{remedy}"
    );

    // A stream silent past its idle timer, and one past its deadline.
    let stalls = engine(
        "text/event-stream",
        vec![chunk("data: one\n\n"), Step::Pause(guard)],
    )
    .await;
    let mut alive = vec![chunk("data: one\n\n")];
    for _ in 0..40 {
        alive.push(Step::Pause(Duration::from_millis(50)));
        alive.push(chunk(": keep-alive\n"));
    }
    let alive = engine("text/event-stream", alive).await;
    for (engine, idle, whole, raise) in [
        (
            &stalls,
            300,
            600_000,
            "raise the idle timer (now 300 ms) with HttpTransportBuilder::idle_timeout or Call::idle_timeout",
        ),
        (
            &alive,
            300,
            700,
            "raise the stream deadline (now 700 ms) with HttpTransportBuilder::stream_deadline or Call::stream_deadline",
        ),
    ] {
        let transport = crate::support::builder_for(&engine.address, SCOPE)
            .idle_timeout(Duration::from_millis(idle))
            .stream_deadline(Duration::from_millis(whole))
            .build()
            .expect("builds");
        let mut stream = transport.stream("{}").await.expect("a 2xx head");
        let refusal = loop {
            match stream.next_event().await {
                Some(Ok(_)) => continue,
                Some(Err(refusal)) => break refusal,
                None => panic!("the stream ended without its timer"),
            }
        };
        assert_refusal_shape(&refusal);
        assert!(refusal.remedy().contains(raise), "{}", refusal.remedy());
        assert!(
            refusal.remedy().contains(ADDRESS_VAR),
            "{}",
            refusal.remedy()
        );
    }
}

/// An engine that never began to answer is not told to be waited for
/// longer: its remedy points at its health alone.
#[tokio::test]
async fn a_deadline_before_any_answer_does_not_say_to_raise_it() {
    let engine = engine_expecting(
        1,
        ResponseTemplate::new(200).set_delay(Duration::from_secs(3)),
    )
    .await;
    let refusal = crate::support::builder_for(&engine.uri(), SCOPE)
        .deadline(Duration::from_millis(200))
        .build()
        .expect("builds")
        .send("{}")
        .await
        .expect_err("no head within the deadline");
    assert_refusal_shape(&refusal);
    assert!(refusal.reason().contains("no answer within 200 ms"));
    assert!(
        refusal.remedy().starts_with("try again later"),
        "{}",
        refusal.remedy()
    );
    assert!(!refusal.remedy().contains("raise"), "{}", refusal.remedy());
}
