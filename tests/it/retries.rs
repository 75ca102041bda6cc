//! The retry table, row by row, against loopback engines that count
//! what they receive: a retry is a second bill, so every rule here is a
//! number of requests. `RetryPolicy::new()` sends no idempotency key, so a
//! request that may have reached the engine is sent once; the tests of
//! what a key allows turn keys on by name.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use meterwire::{Cause, HttpTransport, RetryPolicy};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use wiremock::matchers::body_string;
use wiremock::{MockServer, Request, ResponseTemplate};

use crate::support::engines::{self, engine_with, first_then, posts};
use crate::support::raw_http::read_request;
use crate::support::{SCOPE, builder_for};

/// The policy for an engine that honours `Idempotency-Key`.
fn keyed() -> RetryPolicy {
    RetryPolicy::new().idempotency_keys(true)
}

fn with(address: &str, policy: RetryPolicy) -> HttpTransport {
    builder_for(address, SCOPE)
        .retries(policy)
        .build()
        .expect("builds")
}

/// An engine that answers `first` to the first `times` requests, then 200,
/// and expects exactly `expected` requests in all: the server checks the
/// count when it drops, so every test that builds one states how many bills
/// its story makes.
async fn engine(first: ResponseTemplate, times: u64, expected: u64) -> MockServer {
    let [first, then] = first_then(
        first,
        times,
        ResponseTemplate::new(200).set_body_string("{}"),
    );
    engine_with([
        first.expect(expected.min(times)),
        then.expect(expected.saturating_sub(times)),
    ])
    .await
}

async fn received(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.expect("recording")
}

fn keys(requests: &[Request]) -> Vec<String> {
    requests
        .iter()
        .map(|r| {
            r.headers
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test]
async fn without_a_policy_nothing_is_retried() {
    let server = engine(ResponseTemplate::new(503), 5, 1).await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    let refusal = transport.send("{}").await.expect_err("503");
    assert_eq!(refusal.attempts(), 1);
    assert_eq!(received(&server).await.len(), 1);
    assert_eq!(
        keys(&received(&server).await),
        [""],
        "no key without a policy"
    );
}

/// The default policy sends no key, so what may have reached the engine
/// goes once: a `408` and each `5xx` without a hint, and a reset after the
/// request was sent. (With a key, the same answers were three requests a
/// send until the default changed; `a_failure_after_sending_is_retried_only_with_a_key`
/// counts those.)
#[tokio::test]
async fn the_default_policy_sends_no_key_so_what_may_have_been_billed_goes_once() {
    for status in [408, 500, 502, 503, 504] {
        let server = engine(ResponseTemplate::new(status), 5, 1).await;
        let refusal = with(&server.uri(), RetryPolicy::new())
            .send("{}")
            .await
            .expect_err("not retried");
        assert_eq!(refusal.attempts(), 1, "{status}");
        let requests = received(&server).await;
        assert_eq!(requests.len(), 1, "{status} was sent again");
        assert_eq!(keys(&requests), [""], "{status}: no key by default");
        assert!(
            !refusal.reason().contains("idempotency key"),
            "{}",
            refusal.reason()
        );
    }
    let (address, count) = resetting_engine().await;
    let refusal = with(&address, RetryPolicy::new())
        .send("{}")
        .await
        .expect_err("reset");
    assert_eq!(refusal.attempts(), 1);
    assert_eq!(count.load(Ordering::SeqCst), 1, "a reset is sent once");
}

#[tokio::test]
async fn a_request_that_never_reached_the_engine_is_retried_without_a_key() {
    let address = format!("http://127.0.0.1:{}/v1", free_port());
    let transport = with(&address, RetryPolicy::new());
    let refusal = transport.send("{}").await.expect_err("nothing listens");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.attempts(), 3);
    assert!(
        refusal.reason().contains(
            "after 3 attempts (connection refused, connection refused, connection refused)"
        ),
        "{}",
        refusal.reason()
    );
    assert!(refusal.report().to_json().contains("\"attempts\":3"));
}

#[tokio::test]
async fn a_hinted_429_or_503_is_retried_after_exactly_the_hint_and_not_sooner() {
    for (status, header, value, at_least) in [
        (429, "retry-after", "1", Duration::from_secs(1)),
        (503, "retry-after-ms", "300", Duration::from_millis(300)),
    ] {
        let server = engine(
            ResponseTemplate::new(status).insert_header(header, value),
            1,
            2,
        )
        .await;
        let transport = with(&server.uri(), RetryPolicy::new());
        let started = Instant::now();
        let answer = transport
            .send("{}")
            .await
            .expect("the second attempt answers");
        assert!(
            started.elapsed() >= at_least,
            "{status}: {:?}",
            started.elapsed()
        );
        assert_eq!(answer.attempts(), 2, "{status}");
        assert_eq!(received(&server).await.len(), 2, "{status}");
    }
}

#[tokio::test]
async fn a_failure_after_sending_is_retried_only_with_a_key() {
    for status in [408, 500, 502, 503, 504] {
        let unkeyed = engine(ResponseTemplate::new(status), 2, 1).await;
        let transport = with(&unkeyed.uri(), RetryPolicy::new());
        let refusal = transport.send("{}").await.expect_err("not retried");
        assert_eq!(refusal.attempts(), 1, "{status}");
        assert_eq!(received(&unkeyed).await.len(), 1, "{status} without a key");

        let with_keys = engine(ResponseTemplate::new(status), 2, 3).await;
        let transport = with(&with_keys.uri(), keyed());
        let answer = transport
            .send(r#"{"q":1}"#)
            .await
            .expect("the third attempt answers");
        assert_eq!(answer.attempts(), 3, "{status}");
        let requests = received(&with_keys).await;
        assert_eq!(requests.len(), 3, "{status} with a key");
        let keys = keys(&requests);
        assert!(
            keys[0].starts_with('"') && keys[0].ends_with('"') && keys[0].len() == 38,
            "{keys:?}"
        );
        assert!(
            keys.iter().all(|key| *key == keys[0]),
            "one key for every attempt: {keys:?}"
        );
        assert!(
            requests.iter().all(|r| r.body == br#"{"q":1}"#),
            "the same bytes"
        );
    }
}

#[tokio::test]
async fn a_key_given_to_the_call_makes_the_retry_safe_and_is_the_one_sent() {
    let server = engine(ResponseTemplate::new(502), 1, 2).await;
    let transport = with(&server.uri(), RetryPolicy::new());
    let answer = transport
        .call("{}")
        .idempotency_key("order-7")
        .send()
        .await
        .expect("retried with the caller's key");
    assert_eq!(answer.attempts(), 2);
    assert_eq!(
        keys(&received(&server).await),
        ["\"order-7\"", "\"order-7\""]
    );
}

/// An engine that reads each request and closes the connection without an
/// answer, counting the requests it read.
async fn resetting_engine() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        // Bounded: the tests make at most a few requests each.
        for _ in 0..16 {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            if read_request(&mut stream).await.is_some() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            let _ = stream.shutdown().await;
        }
    });
    (address, count)
}

#[tokio::test]
async fn a_reset_after_the_request_was_sent_is_retried_only_with_a_key() {
    let (address, count) = resetting_engine().await;
    let refusal = with(&address, RetryPolicy::new())
        .send("{}")
        .await
        .expect_err("reset");
    assert_eq!(refusal.attempts(), 1);
    assert_eq!(
        count.load(Ordering::SeqCst),
        1,
        "sent once, not retried without a key"
    );

    let (address, count) = resetting_engine().await;
    let refusal = with(&address, keyed()).send("{}").await.expect_err("reset");
    assert_eq!(refusal.attempts(), 3);
    assert_eq!(count.load(Ordering::SeqCst), 3);
    assert!(
        refusal.reason().contains("after 3 attempts"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains("with idempotency key \""),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_hint_longer_than_max_wait_is_a_refusal_at_once() {
    let server = engine(
        ResponseTemplate::new(429).insert_header("retry-after", "1"),
        5,
        1,
    )
    .await;
    let transport = with(
        &server.uri(),
        RetryPolicy::new().max_wait(Duration::from_millis(500)),
    );
    let started = Instant::now();
    let refusal = transport.send("{}").await.expect_err("not waited for");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(refusal.cause(), Cause::EngineOverQuota);
    assert_eq!(refusal.retry_after(), Some(Duration::from_secs(1)));
    assert_eq!(refusal.attempts(), 1);
    assert_eq!(received(&server).await.len(), 1);
}

#[tokio::test]
async fn no_wait_is_started_that_would_end_past_the_deadline() {
    let server = engine(
        ResponseTemplate::new(503).insert_header("retry-after", "1"),
        5,
        1,
    )
    .await;
    let transport = builder_for(&server.uri(), SCOPE)
        .retries(RetryPolicy::new())
        .deadline(Duration::from_millis(600))
        .build()
        .expect("builds");
    let started = Instant::now();
    let refusal = transport
        .send("{}")
        .await
        .expect_err("the hint is past the deadline");
    assert!(
        started.elapsed() < Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(refusal.retry_after(), Some(Duration::from_secs(1)));
    assert_eq!(received(&server).await.len(), 1);

    // Backoff too: many attempts allowed, one deadline for all of them (a
    // key, so that a 500 is tried again at all).
    let server = engine_with([posts()
        .respond_with(ResponseTemplate::new(500))
        .expect(2..50)])
    .await;
    let transport = builder_for(&server.uri(), SCOPE)
        .retries(keyed().max_attempts(50))
        .deadline(Duration::from_millis(700))
        .build()
        .expect("builds");
    let started = Instant::now();
    let refusal = transport
        .send("{}")
        .await
        .expect_err("500 until the deadline");
    let elapsed = started.elapsed();
    assert!(elapsed <= Duration::from_millis(750), "{elapsed:?}");
    let sent = received(&server).await.len();
    assert_eq!(refusal.attempts() as usize, sent);
    assert!(sent < 50, "{sent}");
}

#[tokio::test]
async fn what_a_retry_cannot_fix_is_never_retried_even_with_a_key() {
    for status in [301, 400, 401, 402, 403, 404, 405, 409, 410, 413, 415, 422] {
        let server = engine(
            ResponseTemplate::new(status).insert_header("retry-after-ms", "10"),
            5,
            1,
        )
        .await;
        let refusal = with(&server.uri(), keyed().max_attempts(5))
            .send("{}")
            .await
            .expect_err("refused");
        assert_eq!(refusal.attempts(), 1, "{status}");
        assert_eq!(received(&server).await.len(), 1, "{status} was retried");
    }
}

#[tokio::test]
async fn an_answer_over_the_cap_or_not_utf8_is_never_retried() {
    for response in [
        ResponseTemplate::new(200).set_body_bytes(vec![b'x'; 2048]),
        ResponseTemplate::new(200).set_body_bytes(vec![0xff, 0xfe, 0xfd]),
    ] {
        let server = engines::engine_expecting(1, response).await;
        let refusal = builder_for(&server.uri(), SCOPE)
            .retries(keyed())
            .max_answer_bytes(1024)
            .build()
            .expect("builds")
            .send("{}")
            .await
            .expect_err("refused");
        assert_eq!(refusal.attempts(), 1);
    }
}

#[tokio::test]
async fn two_sends_never_share_a_key_even_from_many_clones_at_once() {
    let server = engine_with([posts()
        .and(body_string("{}"))
        .respond_with(ResponseTemplate::new(500))
        .expect(60)])
    .await;
    let transport = with(&server.uri(), keyed());
    let sends: Vec<_> = (0..20)
        .map(|_| {
            let transport = transport.clone();
            tokio::spawn(async move { transport.send("{}").await })
        })
        .collect();
    for send in sends {
        let refusal = send.await.expect("joined").expect_err("500");
        assert_eq!(refusal.attempts(), 3);
    }
    let mut per_key: HashMap<String, usize> = HashMap::new();
    for key in keys(&received(&server).await) {
        *per_key.entry(key).or_default() += 1;
    }
    assert_eq!(per_key.len(), 20, "one key per send");
    assert!(per_key.values().all(|n| *n == 3), "{per_key:?}");
}
