//! The meter: exact counts under concurrency, shared by
//! clones, every call counted. The trace has a binary of its own,
//! `tests/trace.rs`, because it needs a process-wide subscriber.

use meterwire::{Cause, RetryPolicy};
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{SCOPE, builder_for};

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
    // Keys on, as for an engine that honours them, so that a 503 is tried
    // again and attempts outnumber sends.
    let transport = builder_for(&server.uri(), SCOPE)
        .retries(RetryPolicy::new().max_attempts(2).idempotency_keys(true))
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
    let transport = builder_for("http://127.0.0.1:9/", SCOPE)
        .build()
        .expect("builds");
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
