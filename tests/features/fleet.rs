//! One hold and one budget for a fleet, against a real `redis-server` on
//! loopback that each test starts, and an engine with an account of its own:
//! a quota per window, then `429` with the time left. Several transports in
//! tasks of their own send at a predictor's pace to an engine that says
//! nothing until its `429`, and the engine counts the `429`s of each window,
//! with and without the shared hold; six transports, and six probe
//! processes, send as fast as they can to an engine that says on every
//! answer what is left, in each of four dialects (`budget`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use meterwire::{BuildError, Cause, HttpTransport};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

use crate::support::engines::{any_request, engine_with};
use crate::support::forms::forms;
use crate::support::redis::{Redis, Silent, dead_port};
use crate::support::{SCOPE, TOKEN, assert_refusal_shape, builder_for};

/// The two fleet runs take turns: each counts a race that grows with the
/// machine's load, and the other is most of that load.
pub(crate) static ONE_FLEET_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The engine's window, and the requests the account may make in one.
const WINDOW: Duration = Duration::from_secs(1);
const QUOTA: u32 = 5;
/// How many windows a run spans, the first included.
const WINDOWS: u32 = 4;

/// An account with a quota per window: every request past it is answered
/// `429` with `retry-after-ms`, the time left in the window. It records the
/// window and status of every request.
#[derive(Clone)]
struct Account {
    started: Instant,
    log: Arc<Mutex<Vec<(u32, u16)>>>,
}

impl Account {
    fn new() -> Account {
        Account {
            started: Instant::now(),
            log: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// How many `429`s the engine sent in each window.
    fn rejected_per_window(&self) -> Vec<u32> {
        let log = self.log.lock().expect("not poisoned");
        let last = log.iter().map(|(window, _)| *window).max().unwrap_or(0);
        (0..=last)
            .map(|window| {
                let count = log
                    .iter()
                    .filter(|(w, status)| *w == window && *status == 429)
                    .count();
                u32::try_from(count).unwrap_or(u32::MAX)
            })
            .collect()
    }
}

impl Respond for Account {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let elapsed = self.started.elapsed();
        let window = u32::try_from(elapsed.as_millis() / WINDOW.as_millis()).unwrap_or(u32::MAX);
        let mut log = self.log.lock().expect("not poisoned");
        let used = log
            .iter()
            .filter(|(w, status)| *w == window && *status == 200)
            .count();
        if used < QUOTA as usize {
            log.push((window, 200));
            return ResponseTemplate::new(200).set_body_string("{}");
        }
        log.push((window, 429));
        let end = WINDOW * (window + 1);
        let left = end.saturating_sub(elapsed);
        // Rounded up: a hold never ends before the window does.
        let left_ms = left.as_millis() + 1;
        ResponseTemplate::new(429)
            .insert_header("retry-after-ms", left_ms.to_string().as_str())
            .set_body_string("quota spent for this window")
    }
}

async fn engine() -> (MockServer, Account) {
    let account = Account::new();
    let server = engine_with([any_request().respond_with(account.clone())]).await;
    (server, account)
}

/// `processes` transports built apart (as separate processes build them),
/// each sent through at a predictor's pace until `WINDOWS` windows have
/// passed; the `429`s the engine sent per window.
async fn fleet(processes: usize, shared: Option<&Redis>) -> Vec<u32> {
    let (server, account) = engine().await;
    let until = account.started + WINDOW * WINDOWS;
    let mut tasks = Vec::new();
    for process in 0..processes {
        let mut builder = builder_for(&server.uri(), SCOPE);
        if let Some(redis) = shared {
            builder = builder.shared_hold(redis.url());
        }
        let transport = builder.build().expect("builds");
        // Paced 80 to 98 ms apart, each process a little off the others.
        let pace = Duration::from_millis(80 + 6 * process as u64);
        tasks.push(tokio::spawn(async move {
            // Bounded: a few hundred sends at most.
            for _ in 0..1_000 {
                if Instant::now() >= until {
                    break;
                }
                let _ = transport.send("{}").await;
                tokio::time::sleep(pace).await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("a sender ends");
    }
    let mut per_window = account.rejected_per_window();
    per_window.truncate(WINDOWS as usize);
    per_window
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fleet_of_transports_sends_one_429_per_window_not_one_each() {
    let _turn = ONE_FLEET_AT_A_TIME.lock().await;
    let alone = fleet(4, None).await;
    let redis = Redis::start();
    let together = fleet(4, Some(&redis)).await;
    eprintln!("429s per {WINDOW:?} window, 4 transports: alone {alone:?}, shared {together:?}");
    assert_one_per_window_and_a_race(&alone, &together);
}

/// The `429`s per window of four senders alone and sharing a hold. Alone,
/// each learns the window from a `429` of its own: four a window at least.
/// Together, one `429` holds the fleet; a send already on its way when the
/// first `429` came back is the small race, and it grows with the machine's
/// load (a process must be scheduled to read the `429` and tell Redis; on a
/// quiet machine, a release build: one `429` a window). The first window is
/// the start, when each sender's first sends go before any `429` has come
/// back. Checked: windows after the start with at most three `429`s, three
/// quarters of alone's at most in all, and one at least with the one `429`
/// a shared hold allows.
fn assert_one_per_window_and_a_race(alone: &[u32], together: &[u32]) {
    assert!(alone.iter().all(|&n| n >= 4), "alone: {alone:?}");
    let (alone_after, after_start) = (&alone[1..], &together[1..]);
    assert!(after_start.iter().all(|&n| n <= 3), "shared: {together:?}");
    let (alone_sum, shared_sum): (u32, u32) = (alone_after.iter().sum(), after_start.iter().sum());
    assert!(
        shared_sum * 4 <= alone_sum * 3,
        "shared {together:?}, alone {alone:?}"
    );
    assert!(after_start.contains(&1), "shared: {together:?}");
}

/// An engine whose account is spent for 30 s, saying `body`, that expects
/// `requests` requests.
async fn spent(body: &str, requests: u64) -> MockServer {
    engine_with([any_request()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "30")
                .set_body_string(body.to_owned()),
        )
        .expect(requests)])
    .await
}

#[tokio::test]
async fn a_hold_another_process_set_holds_this_one_and_says_where_it_came_from() {
    let redis = Redis::start();
    let server = spent("slow down", 1).await;
    let build = || {
        builder_for(&server.uri(), SCOPE)
            .shared_hold(redis.url())
            .build()
            .expect("builds")
    };
    let (first, second) = (build(), build());
    let refused = first.send("{}").await.expect_err("over quota");
    assert_eq!(
        (refused.cause(), refused.attempts()),
        (Cause::EngineOverQuota, 1)
    );
    let held = second.send("{}").await.expect_err("held by the fleet");
    assert_eq!(held.cause(), Cause::EngineOverQuota);
    assert_eq!(held.attempts(), 0, "nothing sent");
    assert!(
        held.reason()
            .contains("another process that shares the account"),
        "{}",
        held.reason()
    );
    assert!(
        held.reason()
            .contains(&format!("shared hold on Redis 127.0.0.1:{}", redis.port())),
        "{}",
        held.reason()
    );
    assert!(
        held.retry_after()
            .is_some_and(|left| left > Duration::from_secs(28))
    );
    assert_refusal_shape(&held);
    assert_eq!(second.meter().held(), 1);
    // The key names the scope and the engine, and nothing of the token.
    let stored = redis.everything();
    let host = server.uri().trim_start_matches("http://").to_owned();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        String::from_utf8_lossy(&stored[0].0),
        format!("meterwire:hold:acme:{host}")
    );
}

#[tokio::test]
async fn a_hold_a_stranger_wrote_with_any_numbers_is_read_without_a_panic() {
    let redis = Redis::start();
    let server = spent("slow down", 0).await;
    let transport = builder_for(&server.uri(), SCOPE)
        .shared_hold(redis.url())
        .build()
        .expect("builds");
    let key = format!(
        "meterwire:hold:acme:{}",
        server.uri().trim_start_matches("http://")
    );
    // Asked at the last millisecond a u64 names, for as long: well formed,
    // and past any date a clock or an HTTP date can show.
    let value = format!("v1|{}|{}|HTTP 429", u64::MAX, u64::MAX);
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(&value)
        .arg("PX")
        .arg(60_000)
        .query(&mut redis.connection())
        .expect("SET");
    let held = transport.send("{}").await.expect_err("held by the fleet");
    assert_eq!((held.cause(), held.attempts()), (Cause::EngineOverQuota, 0));
    assert!(
        held.reason().contains("a time past the year 9999"),
        "{}",
        held.reason()
    );
    assert!(
        held.retry_after()
            .is_some_and(|left| left <= Duration::from_secs(60))
    );
    assert_refusal_shape(&held);
}

#[tokio::test]
async fn respect_limits_off_reads_no_shared_hold() {
    let redis = Redis::start();
    let (server, _account) = engine().await;
    let first = builder_for(&server.uri(), SCOPE)
        .shared_hold(redis.url())
        .build()
        .expect("builds");
    for _ in 0..=QUOTA {
        let _ = first.send("{}").await;
    }
    let careless = builder_for(&server.uri(), SCOPE)
        .shared_hold(redis.url())
        .respect_limits(false)
        .build()
        .expect("builds");
    let refusal = careless.send("{}").await.expect_err("the engine's 429");
    assert_eq!(refusal.attempts(), 1, "sent, not held");
}

#[tokio::test]
async fn the_keys_hold_nothing_of_the_token_in_any_form() {
    let redis = Redis::start();
    let server = spent(&format!("token {TOKEN} is over its quota"), 1).await;
    let transport = builder_for(&server.uri(), SCOPE)
        .shared_hold(redis.url())
        .build()
        .expect("builds");
    let _ = transport.send("{}").await;
    let stored = redis.everything();
    assert!(!stored.is_empty(), "the hold is in Redis");
    let forms = forms(TOKEN);
    for (key, value) in &stored {
        for text in [String::from_utf8_lossy(key), String::from_utf8_lossy(value)] {
            for (name, form) in &forms {
                assert!(!text.contains(form.as_str()), "{name} in {text:?}");
            }
            assert!(!text.contains("over its quota"), "no engine text: {text:?}");
        }
    }
}

/// Each send against an engine that answers at once, through a shared hold
/// in a Redis that is down or hangs: every send answered, none slower than
/// the wait and a margin, and the engine asked once per send.
async fn sends_beside(redis_url: &str) -> Vec<Duration> {
    let server = engine_with([any_request()
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .expect(20)])
    .await;
    let transport = builder_for(&server.uri(), SCOPE)
        .shared_hold(redis_url)
        .shared_hold_wait(Duration::from_millis(50))
        .build()
        .expect("builds");
    let mut took = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        transport
            .send("{}")
            .await
            .expect("answered, whatever Redis does");
        took.push(started.elapsed());
    }
    took
}

/// The wait, and what a busy two-core machine adds to it.
const BOUND: Duration = Duration::from_millis(50 + 200);

#[tokio::test]
async fn a_redis_that_is_down_slows_no_send_past_the_wait() {
    let took = sends_beside(&format!("redis://127.0.0.1:{}/", dead_port())).await;
    assert!(took.iter().all(|&t| t < BOUND), "{took:?}");
}

#[tokio::test]
async fn a_redis_that_never_answers_slows_no_send_past_the_wait() {
    let silent = Silent::start();
    let took = sends_beside(&silent.url()).await;
    assert!(took.iter().all(|&t| t < BOUND), "{took:?}");
    // Backed off after the first: the later sends do not wait at all.
    let later: Duration = took[1..].iter().sum();
    assert!(later < BOUND, "{took:?}");
}

#[tokio::test]
async fn a_shared_hold_that_cannot_be_used_fails_the_build_naming_what_to_fix() {
    for (url, says) in [
        ("http://127.0.0.1:6379/", "redis:// or rediss://"),
        ("not a url", "not a URL"),
        ("redis://user:hunter2-secret@/", "not a URL"),
        (
            "redis://user:hunter2-secret@127.0.0.1:6379/#insecure",
            "without checking",
        ),
    ] {
        let error = HttpTransport::builder(SCOPE)
            .shared_hold(url)
            .build()
            .expect_err(url);
        assert!(matches!(error, BuildError::SharedHold(_)), "{error:?}");
        let message = error.to_string();
        assert!(message.contains(says), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
    let builder = HttpTransport::builder(SCOPE).shared_hold("redis://:hunter2-secret@127.0.0.1:1/");
    assert!(!format!("{builder:?}").contains("hunter2"));
    let transport = builder.build().expect("builds without contacting Redis");
    assert!(!format!("{transport:?}").contains("hunter2"));
    let error = HttpTransport::builder(SCOPE)
        .shared_hold("redis://127.0.0.1:1/")
        .shared_hold_key("")
        .build()
        .expect_err("an empty key");
    assert!(error.to_string().contains("key"), "{error}");
}

#[tokio::test]
async fn an_engine_that_echoes_the_redis_password_has_it_concealed() {
    let password = "redis-pass-Zq81Lm0Xv4";
    let redis = Redis::with_password(password);
    let server = engine_with([any_request()
        .respond_with(ResponseTemplate::new(200).set_body_string(format!("saw {password}")))])
    .await;
    let transport = builder_for(&server.uri(), SCOPE)
        .shared_hold(redis.url())
        .build()
        .expect("builds");
    let answer = transport.send("{}").await.expect("answered");
    assert_eq!(answer.text(), "saw [redacted]");
}
