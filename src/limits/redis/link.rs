//! The shared hold's connection to Redis and what it knows of Redis's
//! health ([`Link`]): one connect at a time, made in the background and
//! bounded by its own timeout; a connection dropped when an exchange over
//! it fails (a hung one included); a back-off (1 s, doubling to 16 s) while
//! Redis fails, with one retry per pause; and each warning said once,
//! through the transport's concealer. The methods here are
//! [`SharedHold`]'s own; the tests, of Redis down, silent, refusing and
//! back again.

use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisError};
use tokio::sync::watch;
use tokio::time::{Instant, timeout};

use super::SharedHold;
use super::record::{Fault, error_code};
use crate::clock::{later, millis};
use crate::lock::Unpoisoned;

/// How long the background connect may take: past the send's wait, so a
/// Redis a few round trips away is reached for the next send.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The first pause after Redis failed, doubled after each failed retry up
/// to the last: a send during the pause skips the shared hold at once.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const LAST_BACKOFF: Duration = Duration::from_secs(16);

/// The connection, the connect under way, and Redis's health, behind one
/// `Mutex` held only to copy a few fields out.
#[derive(Default)]
pub(super) struct Link {
    /// The connection and its number, so a failure drops only the
    /// connection it failed on.
    conn: Option<(u64, MultiplexedConnection)>,
    /// How many connections were made: the last one's number.
    made: u64,
    /// A connect under way: `true` is sent when it ended.
    connecting: Option<watch::Receiver<bool>>,
    /// Why the last connect failed, for the check that waited on it.
    connect_failed: Option<String>,
    /// Redis failed and has not answered since.
    down: Option<Down>,
    /// Counts every change between up and down, so that the late outcome of
    /// an exchange begun before the change changes nothing.
    epoch: u64,
    /// A value this code did not write was warned about, and no good one
    /// has been read since.
    garbage_warned: bool,
}

#[derive(Clone, Copy)]
struct Down {
    /// No exchange before this.
    retry_at: Instant,
    /// The pause after the next failed retry's (doubled).
    backoff: Duration,
}

/// Leave to talk to Redis now: which epoch it was given in, and whether it
/// is the one retry of a back-off.
#[derive(Clone, Copy)]
pub(super) struct Permit {
    epoch: u64,
    retry: bool,
}

impl SharedHold {
    /// Whether Redis may be asked now: `None` within a back-off; the one
    /// retry when a back-off has passed (the next back-off is assumed, so
    /// that the sends beside it skip Redis rather than wait on it too).
    pub(super) fn permit(&self, now: Instant) -> Option<Permit> {
        let mut link = self.lock();
        let epoch = link.epoch;
        match &mut link.down {
            None => Some(Permit {
                epoch,
                retry: false,
            }),
            Some(down) if now < down.retry_at => None,
            Some(down) => {
                down.retry_at = later(now, down.backoff);
                Some(Permit { epoch, retry: true })
            }
        }
    }

    /// The connection, made now (one connect at a time, in the background)
    /// if there is none; the caller's timeout bounds the wait for it.
    pub(super) async fn connection(&self) -> Result<(u64, MultiplexedConnection), Fault> {
        let mut ended = {
            let mut link = self.lock();
            if let Some(conn) = &link.conn {
                return Ok(conn.clone());
            }
            match &link.connecting {
                // A closed channel with no result is a connect whose task
                // panicked: start another.
                Some(ended) if ended.has_changed().is_ok() => ended.clone(),
                _ => self.connect(&mut link),
            }
        };
        // An error is a connect whose task panicked: what the link holds
        // says so as well as a result would.
        let _ = ended.wait_for(|ended| *ended).await;
        let link = self.lock();
        match &link.conn {
            Some(conn) => Ok(conn.clone()),
            None => Err(Fault::Unreachable(
                link.connect_failed
                    .clone()
                    .unwrap_or_else(|| "the connect ended without a connection".to_owned()),
            )),
        }
    }

    /// Starts the one connect, bounded by [`CONNECT_TIMEOUT`]; it stores its
    /// outcome in the link and says it ended.
    fn connect(&self, link: &mut Link) -> watch::Receiver<bool> {
        let (done, ended) = watch::channel(false);
        link.connecting = Some(ended.clone());
        let client = self.client.clone();
        let weak = Arc::downgrade(&self.link);
        tokio::spawn(async move {
            // The background connect has a bound of its own; each request's
            // is the caller's wait.
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(CONNECT_TIMEOUT))
                .set_response_timeout(None);
            let made = timeout(
                CONNECT_TIMEOUT,
                client.get_multiplexed_async_connection_with_config(&config),
            )
            .await;
            if let Some(link) = weak.upgrade() {
                let mut link = link.lock_unpoisoned();
                link.connecting = None;
                match made {
                    Ok(Ok(conn)) => {
                        link.made = link.made.wrapping_add(1);
                        link.conn = Some((link.made, conn));
                        link.connect_failed = None;
                    }
                    Ok(Err(error)) => link.connect_failed = Some(describe(&error)),
                    Err(_) => {
                        link.connect_failed = Some(format!(
                            "no connection within {} ms",
                            millis(CONNECT_TIMEOUT)
                        ));
                    }
                }
            }
            let _ = done.send(true);
        });
        ended
    }

    /// Redis answered: it is up again if it was down (said at `INFO`).
    pub(super) fn answered(&self, permit: Permit) {
        let mut link = self.lock();
        if permit.epoch == link.epoch && link.down.is_some() {
            link.down = None;
            link.epoch = link.epoch.wrapping_add(1);
            drop(link);
            tracing::info!(
                redis = %self.redis,
                key = %self.shown_key,
                "the shared hold on Redis {} answers again; sends check it again",
                self.redis
            );
        }
    }

    /// Redis failed: its connection is dropped (a hung one included), and
    /// it is down; said at `WARN` when it was up, a longer back-off when
    /// this was a retry.
    pub(super) fn failed(&self, permit: Permit, made: Option<u64>, fault: &Fault) {
        let mut link = self.lock();
        if let (Some(made), Some((number, _))) = (made, &link.conn)
            && made == *number
        {
            link.conn = None;
        }
        if permit.epoch != link.epoch {
            return;
        }
        let now = Instant::now();
        match link.down {
            None => {
                link.down = Some(Down {
                    retry_at: later(now, FIRST_BACKOFF),
                    backoff: FIRST_BACKOFF.saturating_mul(2).min(LAST_BACKOFF),
                });
                link.epoch = link.epoch.wrapping_add(1);
                drop(link);
                let said = format!(
                    "the shared hold on Redis {} is not used: {}; each send keeps to this \
                     process's own hold until Redis answers again (tried again in {} s, then \
                     less often)",
                    self.redis,
                    self.fault_phrase(fault),
                    FIRST_BACKOFF.as_secs()
                );
                let said = self.concealer.show_all(&said);
                tracing::warn!(redis = %self.redis, key = %self.shown_key, "{said}");
            }
            Some(ref mut down) if permit.retry => {
                down.retry_at = later(now, down.backoff);
                down.backoff = down.backoff.saturating_mul(2).min(LAST_BACKOFF);
                drop(link);
                tracing::debug!(redis = %self.redis, "the shared hold's Redis is still failing");
            }
            Some(_) => {}
        }
    }

    /// A good value or none was read: a later garbage value is warned anew.
    pub(super) fn value_was_good(&self) {
        self.lock().garbage_warned = false;
    }

    /// A value this code did not write was read: warned once.
    pub(super) fn value_was_garbage(&self, what: &str) {
        let mut link = self.lock();
        if std::mem::replace(&mut link.garbage_warned, true) {
            return;
        }
        drop(link);
        tracing::warn!(
            redis = %self.redis,
            key = %self.shown_key,
            "the shared hold's key {} on Redis {} holds a value this transport did not write \
             ({what}); it is ignored, and the next hold a process sets replaces it",
            self.shown_key,
            self.redis
        );
    }

    fn fault_phrase(&self, fault: &Fault) -> String {
        match fault {
            Fault::Slow { connected: true } => {
                format!("it did not answer within {} ms", millis(self.wait))
            }
            Fault::Slow { connected: false } => format!(
                "it took no connection within {} ms (the connect goes on in the background; \
                 a Redis further away needs a longer wait)",
                millis(self.wait)
            ),
            Fault::Unreachable(why) => format!("connecting to it failed: {why}"),
            Fault::Broken(why) => format!("its connection failed: {why}"),
            Fault::Refused(code) => format!("it answered the error {code}"),
            Fault::Garbage => {
                "it answered, but not as Redis answers PTTL, GETRANGE and EVAL".to_owned()
            }
            Fault::Late => format!(
                "it did not answer within {} ms, even after the send stopped waiting",
                millis(super::LATE)
            ),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Link> {
        self.link.lock_unpoisoned()
    }
}

/// What went wrong with Redis, in words that hold no password: the OS's or
/// TLS's words for an I/O error, a server's error code, else the client's
/// category of error.
pub(super) fn describe(error: &RedisError) -> String {
    if let Some(code) = error.code() {
        return format!("it answered the error {}", error_code(code));
    }
    if error.kind() == redis::ErrorKind::AuthenticationFailed {
        return "it did not take the URL's user and password".to_owned();
    }
    if error.is_io_error() {
        // An I/O error's words are the OS's or rustls's (`Connection
        // refused (os error 111)`, `invalid peer certificate: …`): they
        // never quote the URL.
        let words = error.to_string();
        let words: String = words
            .chars()
            .take(200)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        return words;
    }
    error.category().to_owned()
}

#[cfg(test)]
mod tests {
    //! Against a real `redis-server` on loopback, a silent listener and a
    //! dead port, none of it mocked, as in the shared hold's own tests.

    use std::sync::Arc;
    use std::time::{Duration, Instant as Clock};

    use super::*;
    use crate::limits::SCOUT_EVERY;
    use crate::limits::fleet::LATE;
    use crate::limits::redis::server::{Redis, Silent, dead_port};
    use crate::limits::redis::tests::{TOKEN, WAIT, capture, concealer, hold_at, record};

    /// What a bounded call may take past its wait on a busy 2-core machine.
    const MARGIN: Duration = Duration::from_millis(200);

    /// Asserts that `shared` backs off from a Redis it could not use: the
    /// next check and extend do not wait at all.
    async fn backs_off(shared: &Arc<SharedHold>) {
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        shared
            .write_hold(
                Duration::from_secs(5),
                &record("HTTP 429", Duration::from_secs(5)),
            )
            .await;
        assert!(started.elapsed() < WAIT / 2, "took {:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_dead_redis_costs_a_send_no_more_than_the_wait_and_is_warned_about_once() {
        let port = dead_port();
        let url = format!("redis://:hunter2-pw@127.0.0.1:{port}/");
        let shared = hold_at(&url);
        let (events, _guard) = capture();
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        assert!(
            started.elapsed() < WAIT + MARGIN,
            "took {:?}",
            started.elapsed()
        );
        backs_off(&shared).await;
        let warnings = events.at(tracing::Level::WARN);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains(&format!("127.0.0.1:{port}")),
            "{}",
            warnings[0]
        );
        assert!(!warnings[0].contains("hunter2"), "{}", warnings[0]);
    }

    #[tokio::test]
    async fn what_a_warning_says_passes_through_the_concealer() {
        let url = format!("redis://127.0.0.1:{}/", dead_port());
        let key = format!("meterwire:hold:{TOKEN}");
        let shared = Arc::new(
            SharedHold::new(&url, key, WAIT, SCOUT_EVERY, concealer()).expect("a shared hold"),
        );
        let (events, _guard) = capture();
        assert_eq!(shared.check().await, None);
        let warnings = events.at(tracing::Level::WARN);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(!warnings[0].contains(TOKEN), "{}", warnings[0]);
        assert!(!format!("{shared:?}").contains(TOKEN));
    }

    #[tokio::test]
    async fn a_silent_redis_costs_a_send_no_more_than_the_wait_and_is_warned_about_once() {
        let silent = Silent::start();
        let shared = hold_at(&silent.url());
        let (events, _guard) = capture();
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        let took = started.elapsed();
        assert!(took >= WAIT && took < WAIT + MARGIN, "took {took:?}");
        backs_off(&shared).await;
        assert_eq!(silent.accepted(), 1);
        let warnings = events.at(tracing::Level::WARN);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("took no connection within 50 ms"),
            "{}",
            warnings[0]
        );
    }

    #[tokio::test]
    async fn a_redis_that_answers_late_costs_a_send_the_wait_and_its_answer_is_used_next() {
        let redis = Redis::start();
        let shared = hold_at(&redis.url());
        assert_eq!(shared.check().await, None);
        let asked = record("HTTP 429", Duration::from_secs(5));
        shared.write_hold(Duration::from_secs(5), &asked).await;
        let pause = Duration::from_millis(400);
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(millis(pause))
            .query(&mut redis.connection())
            .expect("CLIENT PAUSE");
        let (events, _guard) = capture();
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        let took = started.elapsed();
        assert!(took >= WAIT && took < WAIT + MARGIN, "took {took:?}");
        let warnings = events.at(tracing::Level::WARN);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("did not answer within 50 ms"),
            "{warnings:?}"
        );
        // Not counted down: the connection is kept, and the late answer
        // is there for the next send.
        tokio::time::sleep(pause + MARGIN).await;
        assert!(shared.lock().conn.is_some());
        assert!(shared.lock().down.is_none());
        let (_, late) = shared.late_answer().expect("the late answer");
        assert_eq!(late.hold.map(|found| found.record), Some(asked.clone()));
        assert_eq!(shared.check().await.map(|found| found.record), Some(asked));
        assert_eq!(events.at(tracing::Level::WARN).len(), 1);
    }

    #[tokio::test]
    async fn a_redis_that_stops_answering_is_counted_down_after_the_late_bound() {
        let redis = Redis::start();
        let shared = hold_at(&redis.url());
        assert_eq!(shared.check().await, None);
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(millis(LATE + MARGIN * 2))
            .query(&mut redis.connection())
            .expect("CLIENT PAUSE");
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        assert!(started.elapsed() < WAIT + MARGIN);
        tokio::time::sleep(LATE + MARGIN).await;
        // The hung connection is dropped, and sends skip Redis at once.
        assert!(shared.lock().conn.is_none());
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        assert!(started.elapsed() < WAIT / 2, "took {:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_silent_redis_is_retried_once_per_back_off_within_the_wait() {
        let silent = Silent::start();
        let shared = hold_at(&silent.url());
        assert_eq!(shared.check().await, None);
        tokio::time::sleep(FIRST_BACKOFF).await;
        // The retry waits once; the sends beside it do not wait at all.
        let (retry, beside) = tokio::join!(shared.check(), async {
            tokio::task::yield_now().await;
            let started = Clock::now();
            (shared.check().await, started.elapsed())
        });
        assert_eq!(retry, None);
        assert_eq!(beside.0, None);
        assert!(beside.1 < WAIT / 2, "took {:?}", beside.1);
    }

    #[tokio::test]
    async fn a_redis_that_comes_back_is_used_again_and_warned_about_anew() {
        let redis = Redis::start();
        let port = redis.port();
        let shared = hold_at(&redis.url());
        let (events, _guard) = capture();
        assert_eq!(shared.check().await, None);
        drop(redis);
        assert_eq!(shared.check().await, None);
        assert_eq!(events.at(tracing::Level::WARN).len(), 1);
        let redis = Redis::on_port(port);
        tokio::time::sleep(FIRST_BACKOFF).await;
        let asked = record("HTTP 429", Duration::from_secs(5));
        shared.write_hold(Duration::from_secs(5), &asked).await;
        assert_eq!(shared.check().await.map(|found| found.record), Some(asked));
        assert_eq!(events.at(tracing::Level::INFO).len(), 1);
        drop(redis);
        assert_eq!(shared.check().await, None);
        assert_eq!(shared.check().await, None);
        assert_eq!(events.at(tracing::Level::WARN).len(), 2);
    }

    #[tokio::test]
    async fn a_wrong_password_is_warned_about_without_it() {
        let redis = Redis::with_password("the-right-one");
        for url in [
            format!("redis://127.0.0.1:{}/", redis.port()),
            format!("redis://:hunter2-pw@127.0.0.1:{}/", redis.port()),
        ] {
            let shared = hold_at(&url);
            let (events, _guard) = capture();
            assert_eq!(shared.check().await, None);
            let warnings = events.at(tracing::Level::WARN);
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            let said = &warnings[0];
            let named = [
                "NOAUTH",
                "WRONGPASS",
                "did not take the URL's user and password",
            ];
            assert!(named.iter().any(|n| said.contains(n)), "{url}: {said}");
            assert!(
                !said.contains("hunter2") && !said.contains("the-right-one"),
                "{said}"
            );
        }
    }

    #[tokio::test]
    async fn many_sends_at_once_share_one_connection() {
        let redis = Redis::start();
        let shared = hold_at(&redis.url());
        let checks: Vec<_> = (0..32)
            .map(|_| {
                let shared = shared.clone();
                tokio::spawn(async move { shared.check().await })
            })
            .collect();
        for check in checks {
            assert_eq!(check.await.expect("a check"), None);
        }
        let info: String = redis::cmd("INFO")
            .arg("clients")
            .query(&mut redis.connection())
            .expect("INFO");
        // This test's own connection and the shared hold's one.
        assert!(info.contains("connected_clients:2"), "{info}");
    }
}
