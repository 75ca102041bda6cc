//! A fleet of three transports (built apart, as three processes build
//! them) sharing a hold on a real `redis-server`, against an engine that
//! answers `200` and says nothing is left for ten minutes, in a Unix time
//! where a duration was expected: one request per scout interval reaches
//! it, counted at the engine, and the first answer that says there is room
//! reopens every member. The interval is the crate's own setting, made
//! short here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as Clock, SystemTime, UNIX_EPOCH};

use secrecy::SecretString;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::config::env::Env;
use crate::limits::redis::server::Redis;
use crate::transport::HttpTransport;

/// The scouts' interval in these tests, in place of a minute.
const INTERVAL: Duration = Duration::from_millis(800);

/// How long a sender waits between its sends.
const PACE: Duration = Duration::from_millis(40);

/// What a busy two-core machine may add to an interval: a sender's pace,
/// Redis's round trip, the engine's answer.
const SLACK: Duration = Duration::from_millis(400);

/// An engine whose answers say nothing is left of its requests window
/// until a Unix time ten minutes off, until told there is room; it keeps
/// the instant of every request.
#[derive(Clone, Default)]
struct Engine {
    room: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Clock>>>,
}

impl Engine {
    fn seen(&self) -> Vec<Clock> {
        self.seen
            .lock()
            .map(|seen| seen.clone())
            .unwrap_or_default()
    }
}

impl Respond for Engine {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(Clock::now());
        }
        let in_ten_minutes = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |now| now.as_secs() + 600);
        let left = if self.room.load(Ordering::SeqCst) {
            "100"
        } else {
            "0"
        };
        ResponseTemplate::new(200)
            .set_body_string("{}")
            .insert_header("x-ratelimit-limit-requests", "100")
            .insert_header("x-ratelimit-remaining-requests", left)
            .insert_header(
                "x-ratelimit-reset-requests",
                in_ten_minutes.to_string().as_str(),
            )
    }
}

/// A member of the fleet.
fn member(engine: &MockServer, redis: &Redis) -> HttpTransport {
    HttpTransport::builder("acme")
        .env(Env::new())
        .address(engine.uri())
        .token(SecretString::from("mw-test-Q7vX2kP9zR4tL8wN"))
        .shared_hold(redis.url())
        .scout_every(INTERVAL)
        .build()
        .expect("a member builds")
}

/// Each member sends every [`PACE`] until `until`; what each got: the
/// instants of its answers, and how many of its sends were held.
async fn send_until(members: &[HttpTransport], until: Clock) -> Vec<(Vec<Clock>, usize)> {
    let tasks: Vec<_> = members
        .iter()
        .cloned()
        .map(|member| {
            tokio::spawn(async move {
                let (mut answers, mut held) = (Vec::new(), 0);
                // Bounded: a few hundred sends at most.
                for _ in 0..2_000 {
                    if Clock::now() >= until {
                        break;
                    }
                    match member.send("{}").await {
                        Ok(_) => answers.push(Clock::now()),
                        Err(refusal) => {
                            assert_eq!(refusal.attempts(), 0, "{refusal}");
                            held += 1;
                        }
                    }
                    tokio::time::sleep(PACE).await;
                }
                (answers, held)
            })
        })
        .collect();
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.expect("a member ends"));
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fleet_held_by_an_answers_fields_sends_one_scout_an_interval_and_reopens_on_room() {
    let redis = Redis::start();
    let engine = Engine::default();
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(engine.clone())
        .mount(&server)
        .await;
    let members = [
        member(&server, &redis),
        member(&server, &redis),
        member(&server, &redis),
    ];

    // The first answer says nothing is left for ten minutes: the fleet is
    // held, and the held refusal quotes the field as sent.
    members[0].send("{}").await.expect("the first answer");
    let held = members[1].send("{}").await.expect_err("held by the fleet");
    assert!(
        held.reason().contains("x-ratelimit-reset-requests: 1"),
        "{}",
        held.reason()
    );
    let left = held.retry_after().expect("the time left");
    assert!(
        left > Duration::from_secs(590) && left <= Duration::from_secs(600),
        "{left:?}"
    );

    // Four intervals and a half: one scout an interval, whichever member.
    let started = Clock::now();
    let closed = send_until(&members, started + INTERVAL * 9 / 2).await;
    let seen = engine.seen();
    let scouts = &seen[1..];
    let gaps: Vec<Duration> = seen.windows(2).map(|w| w[1] - w[0]).collect();
    eprintln!(
        "{} requests in {:?}, gaps {gaps:?}; members answered {:?}, held {:?}",
        seen.len(),
        started.elapsed(),
        closed.iter().map(|(a, _)| a.len()).collect::<Vec<_>>(),
        closed.iter().map(|(_, h)| *h).collect::<Vec<_>>(),
    );
    assert_eq!(scouts.len(), 4, "{gaps:?}");
    for gap in &gaps {
        assert!(*gap >= INTERVAL * 9 / 10, "two in one interval: {gaps:?}");
        assert!(
            *gap <= INTERVAL + SLACK,
            "an interval without one: {gaps:?}"
        );
    }
    assert!(closed.iter().all(|(_, held)| *held > 10), "{closed:?}");

    // The engine has room: the next scout's answer reopens every member.
    engine.room.store(true, Ordering::SeqCst);
    let reopened = Clock::now();
    let open = send_until(&members, reopened + INTERVAL + SLACK + INTERVAL / 2).await;
    let scout = engine.seen()[seen.len()];
    for (answers, _) in &open {
        let after = answers.iter().filter(|at| **at > scout).count();
        assert!(after >= 5, "a member stayed held: {open:?}");
        // Once open, nothing more is held: every answer after the first
        // comes a pace or so after the one before.
        let first = answers.iter().position(|at| *at > scout).unwrap_or(0);
        for pair in answers[first..].windows(2) {
            assert!(pair[1] - pair[0] < PACE + SLACK, "{open:?}");
        }
    }
}
