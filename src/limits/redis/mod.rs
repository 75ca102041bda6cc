//! One hold for a fleet, in Redis: the [`Fleet`] the limits ask (cargo
//! feature `redis`), so that a `429` seen by one predictor process holds
//! every process that shares the account, and the budget an engine's
//! answers give is spent once, by all of them.
//!
//! Each process learns the window only from its own `429`: four processes
//! sent four requests into one spent window, and LLM gateways keep shared
//! cooldowns in Redis for this reason. A Redis on the send path, though, is
//! one more thing that can be down, slow or wrong, so the shared hold is
//! advice and never a gate of its own: every exchange with Redis is bounded
//! by one wait (50 ms by default, connecting included), and a Redis that is
//! down, slow, refusing or answering garbage costs a send at most that wait
//! and never fails it. It is logged once at `WARN`, and the process keeps to
//! its own hold until Redis answers again.
//!
//! # Round trips per send
//!
//! | case | Redis round trips |
//! |---|---|
//! | no hold anywhere (the common path) | 1: [`Fleet::take`], one `EVAL` that reads the hold, takes one from the fleet's budget, and writes the figure the last answer gave |
//! | the fleet's hold is in force, or its budget spent | 1: the ask; the send is held (or waits), nothing goes to the engine |
//! | the engine's answer starts or lengthens a hold | 2: the ask, then [`SharedHold::write_hold`] (one `EVAL`, in the background) |
//! | the first send into a window that just reset | 2: the ask, then its answer's figure written at once, in the background, for the members waiting on it |
//! | the fleet's scout through a window an answer's fields closed | 2: the ask, then [`Fleet::correct`] (two `EVAL`s pipelined, in the background): what its answer said replaces what the fields had said |
//! | a process's first send | the connect (TCP, TLS for `rediss://`, one pipelined handshake) and the check, all within the wait; a connect not done by then goes on in the background, for at most 2 s |
//! | Redis down, silent or refusing | none while backing off (1 s, doubling to 16 s): the shared hold is skipped without waiting; one send per back-off tries again, for at most the wait |
//!
//! # What is stored
//!
//! One string under the key, `meterwire:hold:<scope>:<host:port>` by
//! default ([`SharedHold::default_key`]): `v1|<asked_at, Unix ms>|<asked,
//! ms>|<why>`, e.g. `v1|1764580000000|30000|HTTP 429`, for a hold a refusal
//! asked for, and `v2|<asked_at>|<asked>|<why>|<field>` for one an answer's
//! rate-limit fields started, quoting the field as the engine sent it
//! (`x-ratelimit-reset-requests: 1796407068`); expiring when the hold ends.
//! Neither holds anything of the token: the key names the scope and the
//! engine's host, the value what the engine asked (its fields concealed at
//! the door). A value read back is parsed defensively (at most 256 bytes
//! are read, every number is checked, a field must name a known reset), and
//! one this code did not write is ignored. Its `why` and field are text
//! from outside the process (anyone who may write the key wrote them):
//! printable ASCII, at most 160 and 100 characters, and quoted only where
//! the concealer sees them. Every log line here passes through the
//! transport's concealer too.
//!
//! # The fleet's budget
//!
//! A hash beside the hold, `meterwire:budget:<scope>:<host:port>` (or the
//! hold's own key with `:budget` appended, for a key the caller named):
//! `left`, the requests left in the window; `end`, when the window resets,
//! in Redis's own milliseconds (`TIME`), so no process's clock is trusted
//! over another's; `probe`, until when the one send let go first into a
//! new window is out. Each ask takes one from `left` while the window
//! lasts, or answers how long until it resets; it first sets `left` from
//! the latest figure this process read (what the engine said, less this
//! process's sends in flight then and started since), never above what is
//! there within the window, so N processes start no more sends than the
//! engine said were left. The key outlives its window by [`GRACE`]: the
//! first ask after the reset is let go alone ([`PROBE`] at most), and the
//! others wait for what its answer says rather than all spend a small quota
//! at once. `field` is the field the latest figure's reset was read from,
//! for a held refusal to quote. An engine that sends no fields never writes
//! the key, and the ask only reads the hold. Nothing of the token is in it.
//!
//! # The fleet's scout
//!
//! A window an answer's fields closed (a `v2` hold, or a spent budget) may
//! be wrong: the answer was not refused, and its field may have been
//! misread. So the fleet lets one send through it every minute, its
//! **scout**, and what the scout's answer says replaces what the fields
//! said, for every member: a wrong field holds a fleet a minute, not a day.
//! A third key, `meterwire:scout:<scope>:<host:port>` (or the hold's key
//! with `:scout` appended), holds when the next scout may go (Redis's
//! milliseconds), and expires after two minutes or with the window,
//! whichever is first. The ask takes it in the same script that reads the
//! hold and takes from the budget, so two members never both scout; a
//! member held by such a window asks the fleet before every send, so the
//! first answer that says there is room reopens them all. A hold a refusal
//! asked for (`v1`) is never scouted, nor lifted by a scout's answer.
//!
//! # A Redis that answers late
//!
//! A send waits for Redis no longer than the wait; an answer that comes
//! later is still read (for at most [`LATE`]) and used by the next send,
//! and Redis is not counted down for being slow: a busy machine does not
//! blind the process to the fleet for a back-off. Writes (a hold, the first
//! figure of a window) go in the background, bounded by [`LATE`], so what a
//! process learns is written even while reads come late.
//!
//! # The end only grows
//!
//! A later, shorter hint must not cut a fleet's hold short (a gateway's
//! cooldown that kept its first, shorter deadline is the bug this avoids).
//! The usual recipe is `SET … PX NX` then `PEXPIRE … GT`; [`SharedHold::write_hold`] runs
//! the equivalent as one script instead: read the time left, and set the
//! value with the new end only when that end is later. It is one round
//! trip like the pipelined pair, and it also moves the record with the end,
//! which the pair cannot: after `SET NX` fails, `PEXPIRE GT` lengthens the
//! key but leaves the first hold's record, so a refusal would say "the
//! engine asked at 12:00 to wait 10 s, and 58 s is left". A key someone set
//! without an expiry is also replaced rather than kept forever.
//!
//! # Where it is
//!
//! This module is the whole of the `redis` feature's fleet: the limits
//! reach it only through [`Fleet`], and the builder only to make one. This
//! file holds [`SharedHold`]: building it, the hold's write, the one
//! bounded exchange each write makes, and the [`Fleet`] it is. [`ask`]
//! holds the ask (its script, the budget, the scout) and a scout's
//! correction; [`link`] its connection to Redis and what it knows of
//! Redis's health; [`record`] the value stored under the key and how
//! Redis's answers are read; `server` the tests' real `redis-server`.

mod ask;
mod link;
mod record;

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// redis-rs (the `redis` crate): Rust's most used Redis client, released
// often, on tokio, with rustls for `rediss://`; its multiplexed connection
// carries concurrent requests over one socket, pipelines them, and parses
// RESP (none is written here). Its `ConnectionManager` is not used: it makes its first connection
// only while a caller is polling it, so a connect longer than the send's
// wait (TLS to a remote Redis) would never finish; it never replaces a
// first connection that failed other than by I/O (a wrong password); and it
// needs a runtime when it is built. The connection (`link`) is made by one
// background task at a time, bounded, and replaced after any failure.
use redis::{Client, ConnectionAddr, Value};
use tokio::time::{Instant, timeout_at};

use self::ask::{Act, Ask};
use self::link::{Link, describe};
use self::record::{Fault, MAX_PX, MAX_VALUE, read_extend};
use crate::clock::later;
use crate::conceal::{Concealer, Shown};
use crate::limits::budget::Remaining;
use crate::limits::fleet::{Checked, Exchange, Fleet, LATE, Record};

/// How long a send waits for Redis, connecting included, unless told.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_millis(50);

/// The longest key a caller may name.
const MAX_KEY: usize = 256;

/// How long the one send let go first into a window that just reset is
/// out before another may go first: the others wait on its answer.
pub(crate) const PROBE: Duration = Duration::from_millis(50);

/// How long the fleet's budget outlives its window, so that the first ask
/// after the reset is let go alone.
pub(crate) const GRACE: Duration = Duration::from_secs(5);

/// `KEYS[1]` ends no sooner than `ARGV[2]` ms from now, recording
/// `ARGV[1]`: set only when the time left is shorter (or there is no key,
/// `-2`, or a key that never expires, `-1`).
pub(super) const EXTEND: &str = "\
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then \
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end return 0";

/// The fleet's hold: a Redis client, the key, the bounded wait, and what
/// it knows of Redis's health (so that a warning is said once).
pub(crate) struct SharedHold {
    client: Client,
    key: String,
    wait: Duration,
    /// Redis's host and port as logs name it, concealed: never the
    /// password.
    redis: Shown,
    /// The key as logs name it, concealed (a name the caller gave could
    /// hold anything).
    shown_key: Shown,
    /// The transport's concealer, which every log line passes through.
    concealer: Concealer,
    /// The fleet's budget's key, and as logs name it.
    budget_key: String,
    /// The ask's script, its constants set.
    script: String,
    shown_budget_key: Shown,
    /// The key of the lease the fleet's scout takes.
    scout_key: String,
    link: Arc<Mutex<Link>>,
    /// An answer that came after its send stopped waiting, and when.
    late: Mutex<Option<(Instant, Checked)>>,
    /// Redis was said to be slow (once).
    slow_warned: AtomicBool,
}

/// What building a shared hold found wrong. No message names the URL's
/// password, or the URL at all past its scheme.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum SharedHoldError {
    #[error("the shared hold's Redis URL is not a URL; give one like redis://host:6379/")]
    NotAUrl,
    #[error("the shared hold's Redis URL starts {0}://; give a redis:// or rediss:// URL")]
    Scheme(String),
    #[error("the shared hold's Redis URL names no host; give one like redis://host:6379/")]
    NoHost,
    #[error(
        "the shared hold's Redis URL ends #insecure, which asks for TLS without checking the \
         server's certificate; this transport always checks it"
    )]
    Insecure,
    #[error(
        "the Redis client did not take the shared hold's URL ({0}); check its port, database and options"
    )]
    Rejected(String),
    #[error("the shared hold's key {0}; give a name of 1 to 256 bytes with no control characters")]
    Key(&'static str),
    #[error("the shared hold's wait is zero; give it at least a millisecond (50 ms by default)")]
    Wait,
}

impl SharedHold {
    /// A shared hold in Redis at `url` (`redis://`, `rediss://`, a password
    /// allowed) under `key`, each exchange bounded by `wait`, a scout let
    /// through a window an answer's fields closed every `scout_every`, its
    /// log lines passed through `concealer`. Nothing is connected until the
    /// first check: building needs neither Redis nor a runtime.
    pub(crate) fn new(
        url: &str,
        key: String,
        wait: Duration,
        scout_every: Duration,
        concealer: Concealer,
    ) -> Result<SharedHold, SharedHoldError> {
        let parsed = url::Url::parse(url).map_err(|_| SharedHoldError::NotAUrl)?;
        if !matches!(parsed.scheme(), "redis" | "rediss") {
            return Err(SharedHoldError::Scheme(parsed.scheme().to_owned()));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(SharedHoldError::NoHost);
        }
        if parsed.fragment() == Some("insecure") {
            return Err(SharedHoldError::Insecure);
        }
        check_key(&key)?;
        if wait.is_zero() {
            return Err(SharedHoldError::Wait);
        }
        // The client's own message could quote the URL: only its category
        // is said.
        let client = Client::open(url)
            .map_err(|error| SharedHoldError::Rejected(error.category().to_owned()))?;
        let redis = match client.get_connection_info().addr() {
            ConnectionAddr::Tcp(host, port) => host_port(host, *port),
            ConnectionAddr::TcpTls { host, port, .. } => {
                format!("{} (TLS)", host_port(host, *port))
            }
            _ => return Err(SharedHoldError::Scheme(parsed.scheme().to_owned())),
        };
        let beside = |what: &str| match key.strip_prefix("meterwire:hold:") {
            Some(rest) => format!("meterwire:{what}:{rest}"),
            None => format!("{key}:{what}"),
        };
        let (budget_key, scout_key) = (beside("budget"), beside("scout"));
        Ok(SharedHold {
            client,
            shown_key: concealer.show_all(&key),
            shown_budget_key: concealer.show_all(&budget_key),
            redis: concealer.show_all(&redis),
            concealer,
            key,
            budget_key,
            scout_key,
            script: ask::ASK
                .replace("@VALUE@", &(MAX_VALUE - 1).to_string())
                .replace("@PROBE@", &millis(PROBE).to_string())
                .replace("@GRACE@", &millis(GRACE).to_string())
                .replace("@SCOUT@", &millis(scout_every).max(1).to_string()),
            wait,
            link: Arc::new(Mutex::new(Link::default())),
            late: Mutex::new(None),
            slow_warned: AtomicBool::new(false),
        })
    }

    /// The key a transport uses unless told: `meterwire:hold:<scope>:<host>`,
    /// the scope folded to `[a-z0-9_-]` and `host` the engine's host with
    /// its port (`engine.example:443`). Every process with the same scope
    /// and engine shares it; nothing of the token is in it.
    pub(crate) fn default_key(scope: &str, host: &str) -> String {
        let scope: String = scope
            .chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9' | '_' | '-') => c,
                _ => '_',
            })
            .collect();
        let host: String = host
            .chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9' | '.' | '-' | '_' | ':' | '[' | ']') => c,
                _ => '_',
            })
            .collect();
        format!("meterwire:hold:{scope}:{host}")
    }

    /// The shared hold as a refusal names it: `Redis host:port, key …`,
    /// concealed, never the password.
    pub(crate) fn shown(&self) -> String {
        format!("Redis {}, key {}", self.redis, self.shown_key)
    }

    /// The fleet's budget as a refusal names it.
    pub(crate) fn shown_budget(&self) -> String {
        format!("Redis {}, key {}", self.redis, self.shown_budget_key)
    }

    /// Makes the fleet's hold end no sooner than `left` from now, recording
    /// `record`: the end only ever grows, and the record moves with it.
    /// Bounded by the same wait; a Redis that fails is warned about as in
    /// an ask, and nothing else comes of it. Whether Redis
    /// answered.
    pub(super) async fn write_hold(&self, left: Duration, record: &Record) -> bool {
        let ms = millis(left);
        if ms == 0 {
            return false;
        }
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(EXTEND)
            .arg(1)
            .arg(&self.key)
            .arg(record.encode())
            .arg(ms)
            .ignore_errors();
        self.exchange(&pipe, read_extend).await.is_some()
    }

    /// One pipelined request and its answer read by `read`, within
    /// [`LATE`] (writes go in the background); `None` when Redis is
    /// skipped for a back-off or failed (which is recorded, and warned
    /// about once).
    async fn exchange<T>(
        &self,
        pipe: &redis::Pipeline,
        read: impl FnOnce(Value) -> Result<T, Fault>,
    ) -> Option<T> {
        let now = Instant::now();
        let permit = self.permit(now)?;
        let until = later(now, LATE);
        let mut made = None;
        let asked = async {
            let (number, mut conn) = self.connection().await?;
            made = Some(number);
            let answer = pipe.query_async::<Value>(&mut conn).await;
            answer.map_err(|error| Fault::Broken(describe(&error)))
        };
        let answer = match timeout_at(until, asked).await {
            Ok(answer) => answer,
            Err(_) => Err(Fault::Slow {
                connected: made.is_some(),
            }),
        };
        match answer.and_then(read) {
            Ok(found) => {
                self.answered(permit);
                Some(found)
            }
            Err(fault) => {
                self.failed(permit, made, &fault);
                None
            }
        }
    }
}

/// The fleet, as the limits ask it: each exchange as [`SharedHold`]'s own
/// methods make it.
impl Fleet for SharedHold {
    fn take(self: Arc<Self>, set: Option<Remaining>) -> Exchange<Option<Checked>> {
        Box::pin(async move {
            let ask = Ask {
                act: Act::Take,
                set,
            };
            SharedHold::ask(&self, ask).await
        })
    }

    fn late(&self) -> Option<(Instant, Checked)> {
        SharedHold::late_answer(self)
    }

    fn extend(self: Arc<Self>, left: Duration, record: Record) -> Exchange<bool> {
        Box::pin(async move { SharedHold::write_hold(&self, left, &record).await })
    }

    fn correct(
        self: Arc<Self>,
        set: Option<Remaining>,
        hold: Option<(Duration, Record)>,
    ) -> Exchange<bool> {
        Box::pin(async move { SharedHold::write_correction(&self, set, hold).await })
    }

    fn wait(&self) -> Duration {
        self.wait
    }

    fn shown(&self) -> String {
        SharedHold::shown(self)
    }

    fn shown_budget(&self) -> String {
        SharedHold::shown_budget(self)
    }
}

impl fmt::Debug for SharedHold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedHold")
            .field("redis", &self.redis)
            .field("key", &self.shown_key)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

fn check_key(key: &str) -> Result<(), SharedHoldError> {
    if key.is_empty() {
        return Err(SharedHoldError::Key("is empty"));
    }
    if key.len() > MAX_KEY {
        return Err(SharedHoldError::Key("is longer than 256 bytes"));
    }
    if key.chars().any(char::is_control) {
        return Err(SharedHoldError::Key("has a control character"));
    }
    Ok(())
}

/// `duration` in ms as a Redis `PX` takes it: at most [`MAX_PX`].
fn millis(duration: Duration) -> u64 {
    crate::clock::millis(duration).min(MAX_PX)
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The tests' Redis, shared with the integration tests and the fleet bench
/// rather than copied: a real `redis-server`, a silent listener and a dead
/// port.
#[cfg(test)]
#[allow(dead_code)]
pub(crate) mod server;

#[cfg(test)]
mod tests {
    //! Against a real `redis-server` on loopback (and a dead port), none of
    //! it mocked: `server` is the tests' Redis, which the integration
    //! tests include too. The helpers here serve `link`'s and `record`'s tests as well.

    use std::fmt::Write as _;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use base64::Engine as _;
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    use super::server::{Redis, dead_port};
    use super::*;
    use crate::limits::SCOUT_EVERY;
    use crate::limits::hold::Hold;
    use crate::lock::Unpoisoned;

    pub(super) const TOKEN: &str = "mw-test-Q7vX2kP9zR4tL8wN";
    pub(super) const WAIT: Duration = DEFAULT_WAIT;

    pub(super) fn concealer() -> Concealer {
        Concealer::new([TOKEN])
    }

    pub(super) fn hold_at(url: &str) -> Arc<SharedHold> {
        let key = SharedHold::default_key("acme", "engine.example:443");
        match SharedHold::new(url, key, WAIT, SCOUT_EVERY, concealer()) {
            Ok(hold) => Arc::new(hold),
            Err(error) => panic!("{url} should make a shared hold: {error}"),
        }
    }

    /// A shared hold whose wait is long enough for a loaded machine, for
    /// the tests of what Redis keeps rather than of the wait.
    pub(super) fn patient_at(url: &str) -> Arc<SharedHold> {
        let key = SharedHold::default_key("acme", "engine.example:443");
        let wait = Duration::from_secs(2);
        Arc::new(SharedHold::new(url, key, wait, SCOUT_EVERY, concealer()).expect("a shared hold"))
    }

    /// A shared hold as [`patient_at`] makes it, its scouts `every` apart.
    pub(super) fn scouting_at(url: &str, every: Duration) -> Arc<SharedHold> {
        let key = SharedHold::default_key("acme", "engine.example:443");
        let wait = Duration::from_secs(2);
        Arc::new(SharedHold::new(url, key, wait, every, concealer()).expect("a shared hold"))
    }

    pub(super) fn record(why: &str, asked: Duration) -> Record {
        Record {
            why: why.to_owned(),
            asked,
            // Stored to the millisecond.
            asked_at: UNIX_EPOCH + Duration::from_millis(1_764_580_000_123),
            field: None,
        }
    }

    fn pttl(redis: &Redis, key: &str) -> i64 {
        let answer = redis::cmd("PTTL").arg(key).query(&mut redis.connection());
        answer.unwrap_or(-3)
    }

    /// The events at `WARN` and `INFO`, each as its fields' text.
    #[derive(Clone, Default)]
    pub(super) struct Events(Arc<Mutex<Vec<(tracing::Level, String)>>>);

    impl Events {
        pub(super) fn at(&self, level: tracing::Level) -> Vec<String> {
            let events = self.0.lock_unpoisoned();
            events
                .iter()
                .filter(|(l, _)| *l == level)
                .map(|(_, text)| text.clone())
                .collect()
        }
    }

    impl<S: tracing::Subscriber> Layer<S> for Events {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            struct Text<'a>(&'a mut String);
            impl Visit for Text<'_> {
                fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
                    let _ = write!(self.0, "{}={value:?} ", field.name());
                }
            }
            let mut text = String::new();
            event.record(&mut Text(&mut text));
            let mut events = self.0.lock_unpoisoned();
            events.push((*event.metadata().level(), text));
        }
    }

    /// Events said on this thread until the guard drops (the tests run on
    /// tokio's current-thread runtime, so the checks' events are here).
    pub(super) fn capture() -> (Events, tracing::subscriber::DefaultGuard) {
        let events = Events::default();
        let subscriber = tracing_subscriber::registry().with(events.clone());
        (events, tracing::subscriber::set_default(subscriber))
    }

    #[tokio::test]
    async fn a_hold_extended_is_read_back_with_its_record() {
        let redis = Redis::start();
        let shared = hold_at(&redis.url());
        assert_eq!(shared.check().await, None);
        let asked = record("HTTP 429", Duration::from_secs(10));
        shared.write_hold(Duration::from_secs(10), &asked).await;
        let found = shared.check().await.expect("the fleet's hold");
        assert_eq!(found.record, asked);
        assert!(found.left > Duration::from_secs(9) && found.left <= Duration::from_secs(10));
    }

    #[tokio::test]
    async fn the_end_only_grows_and_the_record_moves_with_it() {
        let redis = Redis::start();
        let shared = hold_at(&redis.url());
        let key = SharedHold::default_key("acme", "engine.example:443");
        let first = record("HTTP 429", Duration::from_secs(10));
        shared.write_hold(Duration::from_secs(10), &first).await;
        shared
            .write_hold(
                Duration::from_secs(2),
                &record("HTTP 503", Duration::from_secs(2)),
            )
            .await;
        assert!(
            pttl(&redis, &key) > 9_000,
            "a shorter hold cut the end short"
        );
        assert_eq!(shared.check().await.map(|found| found.record), Some(first));
        let longer = record("HTTP 503", Duration::from_secs(30));
        shared.write_hold(Duration::from_secs(30), &longer).await;
        assert!(
            pttl(&redis, &key) > 29_000,
            "a longer hold did not lengthen it"
        );
        assert_eq!(shared.check().await.map(|found| found.record), Some(longer));
    }

    #[tokio::test]
    async fn one_process_sees_the_hold_another_set() {
        let redis = Redis::start();
        let (one, other) = (hold_at(&redis.url()), hold_at(&redis.url()));
        one.write_hold(
            Duration::from_secs(5),
            &record("HTTP 429", Duration::from_secs(5)),
        )
        .await;
        let found = other.check().await.expect("the fleet's hold");
        let now = Instant::now();
        let hold = found.hold(now, Duration::from_secs(3600), other.shown());
        assert_eq!(hold.why, "HTTP 429");
        assert!(hold.until > now + Duration::from_secs(4));
        assert_eq!(hold.ceiling, None);
    }

    #[tokio::test]
    async fn a_key_a_stranger_wrote_is_ignored_and_warned_about_once() {
        let redis = Redis::start();
        let shared = patient_at(&redis.url());
        let key = SharedHold::default_key("acme", "engine.example:443");
        let mut connection = redis.connection();
        let (events, _guard) = capture();
        for (value, px) in [("junk", Some(10_000)), ("v1|1|2|HTTP 429", None)] {
            let mut set = redis::cmd("SET");
            set.arg(&key).arg(value);
            if let Some(px) = px {
                set.arg("PX").arg(px);
            }
            let _: () = set.query(&mut connection).expect("SET");
            assert_eq!(shared.check().await, None);
            assert_eq!(shared.check().await, None);
        }
        assert_eq!(events.at(tracing::Level::WARN).len(), 1);
        // Not a string: ignored too, and not counted against Redis.
        let _: () = redis::cmd("DEL")
            .arg(&key)
            .query(&mut connection)
            .expect("DEL");
        let _: () = redis::cmd("RPUSH")
            .arg(&key)
            .arg("x")
            .query(&mut connection)
            .expect("RPUSH");
        assert_eq!(shared.check().await, None);
        // The next hold replaces any of them.
        let asked = record("HTTP 429", Duration::from_secs(5));
        shared.write_hold(Duration::from_secs(5), &asked).await;
        assert_eq!(shared.check().await.map(|found| found.record), Some(asked));
        assert_eq!(events.at(tracing::Level::WARN).len(), 1);
    }

    #[tokio::test]
    async fn the_keys_hold_nothing_of_the_token() {
        let redis = Redis::with_password("a-redis-password");
        let key = SharedHold::default_key("acme", "engine.example:443");
        let shared = SharedHold::new(&redis.url(), key, WAIT, SCOUT_EVERY, concealer())
            .expect("a shared hold");
        let shared = Arc::new(shared);
        let hold = Hold {
            until: Instant::now() + Duration::from_secs(30),
            asked_at: SystemTime::now(),
            asked: Duration::from_secs(30),
            ceiling: None,
            why: "HTTP 429".to_owned(),
            field: None,
            fleet: None,
            learned: Instant::now(),
            written: false,
        };
        shared
            .write_hold(Duration::from_secs(30), &Record::of(&hold))
            .await;
        assert!(shared.check().await.is_some());
        let forms = [
            TOKEN.to_owned(),
            base64::engine::general_purpose::STANDARD.encode(TOKEN),
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(TOKEN),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(TOKEN),
            TOKEN.bytes().fold(String::new(), |mut hex, b| {
                let _ = write!(hex, "{b:02x}");
                hex
            }),
            TOKEN.bytes().fold(String::new(), |mut hex, b| {
                let _ = write!(hex, "{b:02X}");
                hex
            }),
        ];
        let everything = redis.everything();
        assert_eq!(everything.len(), 1);
        for (key, value) in everything {
            for form in &forms {
                let form = form.as_bytes();
                for stored in [&key, &value] {
                    assert!(!stored.windows(form.len()).any(|w| w == form));
                }
            }
        }
    }

    #[test]
    fn the_hold_and_its_calls_can_cross_threads() {
        fn send_sync<T: Send + Sync>(_: &T) {}
        fn send<T: Send>(_: T) {}
        let shared = hold_at("redis://127.0.0.1:6379/");
        send_sync(&shared);
        send(shared.check());
        send(shared.write_hold(Duration::from_secs(1), &record("HTTP 429", Duration::ZERO)));
    }

    #[test]
    fn building_needs_no_redis_and_no_runtime() {
        let shared = hold_at(&format!("redis://:hunter2-pw@127.0.0.1:{}/3", dead_port()));
        let shown = format!("{shared:?}");
        assert!(
            shown.contains("127.0.0.1:") && !shown.contains("hunter2"),
            "{shown}"
        );
        let tls = hold_at("rediss://user:hunter2-pw@redis.example:6380/");
        assert!(format!("{tls:?}").contains("redis.example:6380 (TLS)"));
    }

    #[test]
    fn a_url_or_key_that_will_not_do_is_named_without_its_password() {
        let key = || "meterwire:hold:acme:engine.example:443".to_owned();
        let cases = [
            ("not a url :hunter2@", SharedHoldError::NotAUrl),
            (
                "http://:hunter2@redis.example/",
                SharedHoldError::Scheme("http".to_owned()),
            ),
            (
                "unix:///tmp/redis.sock",
                SharedHoldError::Scheme("unix".to_owned()),
            ),
            ("redis://:hunter2@/", SharedHoldError::NotAUrl),
            ("redis:///0", SharedHoldError::NoHost),
            (
                "rediss://:hunter2@redis.example/#insecure",
                SharedHoldError::Insecure,
            ),
        ];
        for (url, expected) in cases {
            let error = SharedHold::new(url, key(), WAIT, SCOUT_EVERY, concealer()).expect_err(url);
            assert_eq!(error, expected, "{url}");
            assert!(!error.to_string().contains("hunter2"), "{error}");
            assert!(!format!("{error:?}").contains("hunter2"), "{error:?}");
        }
        let url = "redis://127.0.0.1/";
        for bad in [String::new(), "k".repeat(257), "a\nb".to_owned()] {
            assert!(matches!(
                SharedHold::new(url, bad, WAIT, SCOUT_EVERY, concealer()),
                Err(SharedHoldError::Key(_))
            ));
        }
        let zero = SharedHold::new(url, key(), Duration::ZERO, SCOUT_EVERY, concealer());
        assert_eq!(zero.err(), Some(SharedHoldError::Wait));
    }

    #[test]
    fn the_default_key_folds_the_scope_and_keeps_the_port() {
        assert_eq!(
            SharedHold::default_key("Acme Prod/EU", "Engine.Example:8443"),
            "meterwire:hold:acme_prod_eu:engine.example:8443"
        );
        assert_eq!(
            SharedHold::default_key("a_b-c9", "[::1]:443"),
            "meterwire:hold:a_b-c9:[::1]:443"
        );
    }
}
