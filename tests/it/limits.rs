//! The engine's limits: a hinted 429 or 503, or an answer
//! whose rate-limit fields say nothing is left, holds every clone of the
//! transport; an opt-in latch repeats a 402, 401 or 403 without sending.
//! A held send never reaches the engine, counted.

use std::time::{Duration, Instant};

use meterwire::{Cause, RetryPolicy};
use wiremock::{MockServer, ResponseTemplate};

use crate::support::engines::{self, engine_with, first_then};
use crate::support::{ADDRESS_VAR, SCOPE, assert_refusal_shape, builder_for};

/// An engine that answers `first` to the first request and `then` to
/// every later one.
async fn engine(first: ResponseTemplate, then: ResponseTemplate) -> MockServer {
    engine_with(first_then(first, 1, then)).await
}

async fn count(server: &MockServer) -> usize {
    server.received_requests().await.expect("recording").len()
}

fn ok() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_string("{}")
}

#[tokio::test]
async fn a_hinted_429_holds_every_clone_and_a_held_send_is_not_sent() {
    let server = engine(
        ResponseTemplate::new(429).insert_header("retry-after-ms", "800"),
        ok(),
    )
    .await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    let first = transport.send("{}").await.expect_err("429");
    assert_eq!(first.cause(), Cause::EngineOverQuota);

    let clone = transport.clone();
    let held = clone.send("{}").await.expect_err("held");
    assert_eq!(count(&server).await, 1, "the held send reached the engine");
    assert_eq!(held.cause(), Cause::EngineOverQuota);
    assert_eq!(held.attempts(), 0);
    assert_eq!(held.variable(), Some(ADDRESS_VAR));
    let left = held.retry_after().expect("the time left");
    assert!(
        left <= Duration::from_millis(800) && left > Duration::ZERO,
        "{left:?}"
    );
    assert!(held.reason().contains("not sent"), "{}", held.reason());
    assert!(held.reason().contains("by HTTP 429"), "{}", held.reason());
    assert!(held.remedy().contains("wait"), "{}", held.remedy());
    assert_refusal_shape(&held);
    assert_eq!(transport.meter().held(), 1);

    tokio::time::sleep(Duration::from_millis(850)).await;
    transport.send("{}").await.expect("the window passed");
    assert_eq!(count(&server).await, 2);
}

#[tokio::test]
async fn a_ban_that_ends_holds_every_clone_like_a_hinted_429() {
    // A 403 with a retry hint: an address held back for a while, not a
    // rejected token. Sending into it again would only be refused again.
    let server = engine(
        ResponseTemplate::new(403)
            .insert_header("retry-after-ms", "700")
            .set_body_string(r#"{"error": "too many requests from this address"}"#),
        ok(),
    )
    .await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    let banned = transport.send("{}").await.expect_err("403");
    assert_eq!(banned.cause(), Cause::EngineOverQuota);

    let held = transport.clone().send("{}").await.expect_err("held");
    assert_eq!(count(&server).await, 1, "the held send reached the engine");
    assert_eq!(held.cause(), Cause::EngineOverQuota);
    assert_eq!(held.attempts(), 0);
    assert!(held.reason().contains("by HTTP 403"), "{}", held.reason());
    assert_refusal_shape(&held);

    tokio::time::sleep(Duration::from_millis(750)).await;
    transport.send("{}").await.expect("the ban ended");
    assert_eq!(count(&server).await, 2);
}

#[tokio::test]
async fn with_a_policy_that_covers_it_a_held_send_waits_then_sends() {
    let server = engine(
        ResponseTemplate::new(503).insert_header("retry-after-ms", "600"),
        ok(),
    )
    .await;
    let transport = builder_for(&server.uri(), SCOPE)
        .retries(RetryPolicy::new().max_attempts(1).idempotency_keys(false))
        .build()
        .expect("builds");
    transport.send("{}").await.expect_err("503");
    // One attempt is no policy: refused at once.
    let held = transport.clone().send("{}").await.expect_err("held");
    assert_eq!(held.attempts(), 0);
    assert_eq!(count(&server).await, 1);

    let server = engine(
        ResponseTemplate::new(503).insert_header("retry-after-ms", "600"),
        ok(),
    )
    .await;
    let transport = builder_for(&server.uri(), SCOPE)
        .retries(RetryPolicy::new().idempotency_keys(false).max_attempts(2))
        .build()
        .expect("builds");
    let started = Instant::now();
    // The first send retries after the hint; a second one, sent meanwhile,
    // waits out the same window instead of sending into it.
    let other = transport.clone();
    let (first, second) = tokio::join!(transport.send("{}"), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        other.send("{}").await
    });
    first.expect("answered after the hint");
    second.expect("answered after the window");
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert_eq!(
        count(&server).await,
        3,
        "the 503, then one request per send"
    );
}

#[tokio::test]
async fn an_answer_saying_nothing_is_left_holds_the_next_send() {
    let server = engine(
        ok().insert_header("x-ratelimit-remaining-requests", "0")
            .insert_header("x-ratelimit-reset-requests", "900ms"),
        ok(),
    )
    .await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    transport.send("{}").await.expect("an answer");
    let held = transport.send("{}").await.expect_err("held");
    assert_eq!(held.cause(), Cause::EngineOverQuota);
    assert!(
        held.reason().contains("rate-limit fields"),
        "{}",
        held.reason()
    );
    assert_eq!(count(&server).await, 1);
}

#[tokio::test]
async fn respect_limits_false_sends_through_a_window() {
    let server = engine(
        ResponseTemplate::new(429).insert_header("retry-after", "30"),
        ok(),
    )
    .await;
    let transport = builder_for(&server.uri(), SCOPE)
        .respect_limits(false)
        .build()
        .expect("builds");
    transport.send("{}").await.expect_err("429");
    transport.send("{}").await.expect("not held");
    assert_eq!(count(&server).await, 2);
}

#[tokio::test]
async fn a_hold_does_not_serialize_sends_that_are_not_held() {
    let server = engines::engine_expecting(16, ok().set_delay(Duration::from_millis(300))).await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    let started = Instant::now();
    let sends: Vec<_> = (0..16)
        .map(|_| {
            let transport = transport.clone();
            tokio::spawn(async move { transport.send("{}").await })
        })
        .collect();
    for send in sends {
        send.await.expect("joined").expect("an answer");
    }
    // Serialized, 16 sends would take 4.8 s.
    assert!(
        started.elapsed() < Duration::from_millis(2400),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_latch_repeats_a_402_or_401_without_sending() {
    for status in [402, 401, 403] {
        let server = engine(ResponseTemplate::new(status), ok()).await;
        let transport = builder_for(&server.uri(), SCOPE)
            .latch(Duration::from_secs(5))
            .build()
            .expect("builds");
        let first = transport.send("{}").await.expect_err("refused");
        let latched = transport.clone().send("{}").await.expect_err("latched");
        assert_eq!(
            count(&server).await,
            1,
            "{status}: the latched send reached the engine"
        );
        assert_eq!(latched.cause(), first.cause());
        assert_eq!(latched.attempts(), 0);
        assert!(
            latched.reason().contains("not sent"),
            "{}",
            latched.reason()
        );
        assert!(latched.reason().contains(&format!("HTTP {status}")));
        assert_refusal_shape(&latched);
    }
    // Off by default.
    let server = engine(ResponseTemplate::new(402), ok()).await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    transport.send("{}").await.expect_err("402");
    transport.send("{}").await.expect("sent again");
    assert_eq!(count(&server).await, 2);
}

/// An engine that answers every request `200`, saying `remaining` of its
/// requests window (its limit 10, or `remaining` when more) is left until
/// `reset`, in OpenAI's fields.
async fn telling(remaining: u64, reset: &str, requests: u64) -> MockServer {
    engines::engine_expecting(
        requests,
        ok().insert_header(
            "x-ratelimit-limit-requests",
            remaining.max(10).to_string().as_str(),
        )
        .insert_header(
            "x-ratelimit-remaining-requests",
            remaining.to_string().as_str(),
        )
        .insert_header("x-ratelimit-reset-requests", reset),
    )
    .await
}

#[tokio::test]
async fn a_send_starts_only_while_the_budget_an_answer_gave_has_something_left() {
    // The first answer says one is left for 20 s: the second send takes
    // it, the third is held, not sent, and says what the engine said.
    let server = telling(1, "20s", 2).await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    transport.send("{}").await.expect("answered");
    transport.clone().send("{}").await.expect("the one left");
    let held = transport.send("{}").await.expect_err("the window is spent");
    assert_eq!((held.cause(), held.attempts()), (Cause::EngineOverQuota, 0));
    let reason = held.reason();
    for said in [
        "held, not sent",
        "x-ratelimit-reset-requests",
        "said 1 requests were left (of a limit of 10)",
        "started 1 since",
    ] {
        assert!(reason.contains(said), "{said}: {reason}");
    }
    let left = held.retry_after().expect("the time left");
    assert!(left > Duration::from_secs(18) && left <= Duration::from_secs(20));
    assert_refusal_shape(&held);
    let meter = transport.meter();
    assert_eq!((meter.held(), meter.waited(), meter.attempts()), (1, 0, 2));
}

#[tokio::test]
async fn with_a_retry_policy_a_send_waits_for_the_reset_then_goes() {
    let server = telling(0, "300ms", 2).await;
    let transport = builder_for(&server.uri(), SCOPE)
        .retries(RetryPolicy::new())
        .build()
        .expect("builds");
    transport.send("{}").await.expect("answered");
    let started = Instant::now();
    transport
        .send("{}")
        .await
        .expect("answered after the reset");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(250), "{took:?}");
    let meter = transport.meter();
    assert_eq!((meter.waited(), meter.held(), meter.attempts()), (1, 0, 2));
}

#[tokio::test]
async fn a_budget_with_room_delays_nothing_and_no_fields_cost_nothing() {
    for server in [telling(10_000, "1m", 40).await, {
        engines::engine_expecting(40, ok()).await
    }] {
        let transport = builder_for(&server.uri(), SCOPE)
            .retries(RetryPolicy::new())
            .build()
            .expect("builds");
        for _ in 0..40 {
            transport.send("{}").await.expect("answered");
        }
        let meter = transport.meter();
        assert_eq!((meter.waited(), meter.held(), meter.answers()), (0, 0, 40));
    }
}

#[tokio::test]
async fn respect_limits_off_keeps_no_budget() {
    let server = telling(0, "20s", 3).await;
    let transport = builder_for(&server.uri(), SCOPE)
        .respect_limits(false)
        .build()
        .expect("builds");
    for _ in 0..3 {
        transport
            .send("{}")
            .await
            .expect("sent whatever the fields say");
    }
}

#[tokio::test]
async fn a_reset_written_as_a_unix_time_holds_until_then_and_the_refusal_quotes_it() {
    // As fakeai writes it: a Unix time where OpenAI writes a duration, in
    // seconds or in milliseconds.
    let in_ten_minutes = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        + Duration::from_secs(600);
    for reset in [
        in_ten_minutes.as_secs().to_string(),
        in_ten_minutes.as_millis().to_string(),
    ] {
        let server = engine(
            ok().insert_header("x-ratelimit-remaining-requests", "0")
                .insert_header("x-ratelimit-reset-requests", reset.as_str()),
            ok(),
        )
        .await;
        let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
        transport.send("{}").await.expect("an answer");
        let held = transport.send("{}").await.expect_err("held");
        assert_eq!((held.cause(), held.attempts()), (Cause::EngineOverQuota, 0));
        let left = held.retry_after().expect("the time left");
        assert!(
            left > Duration::from_secs(590) && left <= Duration::from_secs(600),
            "{reset}: held for {left:?}"
        );
        let quoted = format!("x-ratelimit-reset-requests: {reset}");
        assert!(held.reason().contains(&quoted), "{}", held.reason());
        assert_refusal_shape(&held);
        assert_eq!(count(&server).await, 1);
    }
}
