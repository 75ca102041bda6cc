//! A fleet of three predictor processes sharing a hold on a real
//! `redis-server`, against an engine that answers `200` and says nothing is
//! left for ten minutes, in a Unix time where a duration was expected: one
//! request per scout interval reaches it, counted at the engine, and the
//! first answer that says there is room reopens every member.
//!
//! The members are this test binary run again, three times, with the test's
//! name and the fleet's addresses in the environment: each builds its own
//! transport and shares nothing with the others but Redis. The interval is
//! the crate's own setting, made short here.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use secrecy::SecretString;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::config::env::Env;
use crate::limits::redis::server::Redis;
use crate::transport::HttpTransport;

/// The scouts' interval in these tests, in place of a minute.
const INTERVAL: Duration = Duration::from_millis(800);

/// How long a member waits between its sends.
const PACE: Duration = Duration::from_millis(40);

/// What a busy two-core machine may add to an interval: a member's pace,
/// Redis's round trip, the engine's answer.
const SLACK: Duration = Duration::from_millis(400);

/// How many processes the fleet has.
const MEMBERS: usize = 3;

/// The variables a member process reads: its number, the engine's and
/// Redis's addresses, and when to stop (Unix milliseconds).
const MEMBER: &str = "MW_TEST_FLEET_MEMBER";
const ENGINE: &str = "MW_TEST_FLEET_ENGINE";
const REDIS: &str = "MW_TEST_FLEET_REDIS";
const UNTIL: &str = "MW_TEST_FLEET_UNTIL";

/// Milliseconds since the Unix epoch: the one clock three processes share.
fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

fn now_ms() -> u64 {
    unix_ms(SystemTime::now())
}

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// An engine whose answers say nothing is left of its requests window
/// until a Unix time ten minutes off, until told there is room; it keeps
/// when each request came and which member sent it (the body's `member`).
#[derive(Clone, Default)]
struct Engine {
    room: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<(u64, u64)>>>,
}

impl Engine {
    fn seen(&self) -> Vec<(u64, u64)> {
        self.seen
            .lock()
            .map(|seen| seen.clone())
            .unwrap_or_default()
    }
}

impl Respond for Engine {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let member = serde_json::from_slice::<serde_json::Value>(&request.body)
            .ok()
            .and_then(|body| body["member"].as_u64())
            .unwrap_or(u64::MAX);
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((now_ms(), member));
        }
        let in_ten_minutes = now_ms() / 1000 + 600;
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

/// A member of the fleet, built as each process builds its own.
fn member(engine: &str, redis: &str) -> HttpTransport {
    HttpTransport::builder("acme")
        .env(Env::new())
        .address(engine)
        .token(SecretString::from("mw-test-Q7vX2kP9zR4tL8wN"))
        .shared_hold(redis)
        .scout_every(INTERVAL)
        .build()
        .expect("a member builds")
}

/// What one member process did: when each of its sends was answered and
/// when each was held, in Unix milliseconds.
#[derive(Debug, Default)]
struct Outcomes {
    answered: Vec<u64>,
    held: Vec<u64>,
}

/// The member's side: sends `{"member":n}` every [`PACE`] until told to
/// stop, and prints each outcome on a line of its own for the fleet's
/// test to read. A held send is refused before any attempt.
async fn run_member(number: u64) {
    let variable = |name| std::env::var(name).expect("the fleet's test sets it");
    let transport = member(&variable(ENGINE), &variable(REDIS));
    let until: u64 = variable(UNTIL).parse().expect("a Unix time in ms");
    let body = format!(r#"{{"member":{number}}}"#);
    // Bounded: a few hundred sends at most.
    for _ in 0..2_000 {
        if now_ms() >= until {
            break;
        }
        match transport.send(body.clone()).await {
            Ok(_) => println!("fleet-member answered {}", now_ms()),
            Err(refusal) => {
                assert_eq!(refusal.attempts(), 0, "{refusal}");
                println!("fleet-member held {}", now_ms());
            }
        }
        tokio::time::sleep(PACE).await;
    }
}

/// Reads what a member printed.
fn outcomes(stdout: &str) -> Outcomes {
    let mut outcomes = Outcomes::default();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("fleet-member ") else {
            continue;
        };
        let (what, at) = rest.split_once(' ').expect("an outcome and a time");
        let at = at.trim().parse().expect("Unix milliseconds");
        match what {
            "answered" => outcomes.answered.push(at),
            "held" => outcomes.held.push(at),
            other => panic!("an outcome no member prints: {other}"),
        }
    }
    outcomes
}

/// Starts member `number` as a process of its own: this test, alone.
fn start_member(number: usize, engine: &str, redis: &str, until: u64) -> std::process::Child {
    let module = module_path!()
        .split_once("::")
        .map_or(module_path!(), |(_, rest)| rest);
    let test = format!(
        "{module}::a_fleet_of_processes_held_by_an_answers_fields_sends_one_scout_an_interval_and_reopens_on_room"
    );
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(MEMBER, number.to_string())
        .env(ENGINE, engine)
        .env(REDIS, redis)
        .env(UNTIL, until.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("a member process starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fleet_of_processes_held_by_an_answers_fields_sends_one_scout_an_interval_and_reopens_on_room()
 {
    if let Ok(number) = std::env::var(MEMBER) {
        run_member(number.parse().expect("a member's number")).await;
        return;
    }

    let redis = Redis::start();
    let engine = Engine::default();
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(engine.clone())
        .mount(&server)
        .await;

    // The first answer says nothing is left for ten minutes: the fleet is
    // held, and the held refusal quotes the field as sent.
    let first = member(&server.uri(), &redis.url());
    first
        .send(r#"{"member":0}"#)
        .await
        .expect("the first answer");
    let held = first.send("{}").await.expect_err("held by the fleet");
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

    // Three processes send for four intervals and a half while nothing is
    // left, then a while longer once there is room.
    let started = now_ms();
    let reopen_at = started + ms(INTERVAL * 9 / 2);
    let until = reopen_at + ms(INTERVAL + SLACK + INTERVAL / 2);
    let children: Vec<_> = (1..=MEMBERS)
        .map(|number| start_member(number, &server.uri(), &redis.url(), until))
        .collect();
    tokio::time::sleep(Duration::from_millis(reopen_at.saturating_sub(now_ms()))).await;
    engine.room.store(true, Ordering::SeqCst);
    let reopened = now_ms();
    let mut fleet = BTreeMap::new();
    for (number, child) in (1..=MEMBERS).zip(children) {
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("a member is waited for")
            .expect("a member's output");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "member {number}: {}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        fleet.insert(number as u64, outcomes(&stdout));
    }

    // While nothing is left: one scout an interval, whichever member, and
    // every member held again and again.
    let seen = engine.seen();
    let closed: Vec<u64> = seen
        .iter()
        .map(|(at, _)| *at)
        .take_while(|at| *at < reopened)
        .collect();
    let gaps: Vec<u64> = closed.windows(2).map(|w| w[1] - w[0]).collect();
    eprintln!(
        "{} requests, gaps {gaps:?} ms; members answered {:?}, held {:?}",
        seen.len(),
        fleet.values().map(|o| o.answered.len()).collect::<Vec<_>>(),
        fleet.values().map(|o| o.held.len()).collect::<Vec<_>>(),
    );
    assert_eq!(closed.len(), 1 + 4, "{seen:?}");
    for gap in &gaps {
        assert!(
            *gap >= ms(INTERVAL * 9 / 10),
            "two in one interval: {gaps:?}"
        );
        assert!(
            *gap <= ms(INTERVAL + SLACK),
            "an interval without one: {gaps:?}"
        );
    }
    let scouts_by: Vec<u64> = seen[1..closed.len()].iter().map(|(_, m)| *m).collect();
    assert!(
        scouts_by.iter().all(|m| (1..=MEMBERS as u64).contains(m)),
        "{scouts_by:?}"
    );
    for (number, outcomes) in &fleet {
        let held_closed = outcomes.held.iter().filter(|at| **at < reopened).count();
        assert!(held_closed > 10, "member {number}: {outcomes:?}");
    }

    // There is room: the next scout's answer reopens every member, and
    // nothing is held after it.
    let (scout, by) = seen[closed.len()];
    assert!(
        scout <= reopened + ms(INTERVAL + SLACK),
        "no scout after the room: {seen:?}"
    );
    for (number, outcomes) in &fleet {
        let after = seen
            .iter()
            .filter(|(at, m)| *at > scout && m == number)
            .count();
        assert!(after >= 5, "member {number} stayed held: {outcomes:?}");
        let late = outcomes
            .held
            .iter()
            .filter(|at| **at > scout + ms(SLACK) / 2)
            .count();
        assert_eq!(
            late, 0,
            "member {number} held after scout of {by}: {outcomes:?}"
        );
    }
}
