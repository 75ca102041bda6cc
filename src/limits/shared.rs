//! One hold for a fleet (CONTRACT §13): the hold of §9 kept in Redis as
//! well as in the process, so that a `429` seen by one predictor process
//! holds every process that shares the account.
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
//! | no hold anywhere (the common path) | 1: [`SharedHold::check`], `PTTL` and `GETRANGE` pipelined |
//! | the fleet's hold is in force | 1: the check; the send is held, nothing goes to the engine |
//! | the engine's answer starts or lengthens a hold | 2: the check, then [`SharedHold::extend`] (one `EVAL`) |
//! | a process's first send | the connect (TCP, TLS for `rediss://`, one pipelined handshake) and the check, all within the wait; a connect not done by then goes on in the background, for at most 2 s |
//! | Redis down, silent or refusing | none while backing off (1 s, doubling to 16 s): the shared hold is skipped without waiting; one send per back-off tries again, for at most the wait |
//!
//! # What is stored
//!
//! One string under the key, `meterwire:hold:<scope>:<host:port>` by
//! default ([`SharedHold::default_key`]): `v1|<asked_at, Unix ms>|<asked,
//! ms>|<why>`, e.g. `v1|1764580000000|30000|HTTP 429`, expiring when the hold
//! ends. Neither holds anything of the token: the key names the scope and
//! the engine's host, the value what the engine asked. A value read back is
//! parsed defensively (at most 256 bytes are read, every number is checked),
//! and one this code did not write is ignored. Its `why` is text from
//! outside the process (anyone who may write the key wrote it): at most 160
//! printable ASCII characters, and quoted only where the concealer sees it.
//! Every log line here passes through the transport's concealer too.
//!
//! # The end only grows
//!
//! A later, shorter hint must not cut a fleet's hold short (a gateway's
//! cooldown that kept its first, shorter deadline is the bug this avoids).
//! §13 names `SET … PX NX` then `PEXPIRE … GT`; [`SharedHold::extend`] runs
//! the equivalent as one script instead: read the time left, and set the
//! value with the new end only when that end is later. It is one round
//! trip like the pipelined pair, and it also moves the record with the end,
//! which the pair cannot: after `SET NX` fails, `PEXPIRE GT` lengthens the
//! key but leaves the first hold's record, so a refusal would say "the
//! engine asked at 12:00 to wait 10 s, and 58 s is left". A key someone set
//! without an expiry is also replaced rather than kept forever.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

// redis-rs (the `redis` crate): Rust's most used Redis client, released
// often, on tokio, with rustls for `rediss://`; its multiplexed connection
// carries concurrent requests over one socket, pipelines them, and parses
// RESP (none is written here). Its `ConnectionManager` is not used: it makes its first connection
// only while a caller is polling it, so a connect longer than the send's
// wait (TLS to a remote Redis) would never finish; it never replaces a
// first connection that failed other than by I/O (a wrong password); and it
// needs a runtime when it is built. The connection here is made by one
// background task at a time, bounded, and replaced after any failure.
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ConnectionAddr, RedisError, Value};
use tokio::sync::watch;
use tokio::time::{Instant, timeout, timeout_at};

use crate::clock::later;
use crate::conceal::Concealer;
use crate::refusal::held::Hold;

/// How long a send waits for Redis, connecting included, unless told.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_millis(50);

/// How long the background connect may take: past the send's wait, so a
/// Redis a few round trips away is reached for the next send.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The first pause after Redis failed, doubled after each failed retry up
/// to the last: a send during the pause skips the shared hold at once.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const LAST_BACKOFF: Duration = Duration::from_secs(16);

/// The most of a value that is read back (`GETRANGE 0 255`): a key someone
/// filled with megabytes costs no more than this.
const MAX_VALUE: usize = 256;

/// The longest `why` stored and read back.
const MAX_WHY: usize = 160;

/// The longest key a caller may name.
const MAX_KEY: usize = 256;

/// The longest hold stored, in ms: thirty years, as `clock::later` saturates.
const MAX_PX: u64 = 30 * 365 * 24 * 3600 * 1000;

/// What is stored when a hold's `why` is not one this format can carry.
const FALLBACK_WHY: &str = "the engine's limits";

/// The version tag that opens every value.
const FORMAT: &str = "v1";

/// `KEYS[1]` ends no sooner than `ARGV[2]` ms from now, recording
/// `ARGV[1]`: set only when the time left is shorter (or there is no key,
/// `-2`, or a key that never expires, `-1`).
const EXTEND: &str = "\
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
    redis: String,
    /// The key as logs name it, concealed (a name the caller gave could
    /// hold anything).
    shown_key: String,
    /// The transport's concealer, which every log line passes through.
    concealer: Concealer,
    /// A check's request, encoded once.
    check: redis::Pipeline,
    link: Arc<Mutex<Link>>,
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

/// What the process that set a fleet's hold recorded of it: what the
/// engine asked, and nothing of the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// What asked: `HTTP 429`, or the rate-limit fields of an answer.
    pub(crate) why: String,
    /// How long the engine asked for (saturated to what fits in u64 ms).
    pub(crate) asked: Duration,
    /// When it asked, by the wall clock, to the millisecond.
    pub(crate) asked_at: SystemTime,
}

/// The fleet's hold in force: how long is left, as Redis counts it, and
/// what the process that set it recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shared {
    pub(crate) left: Duration,
    pub(crate) record: Record,
}

/// The connection, the connect under way, and Redis's health, behind one
/// `Mutex` held only to copy a few fields out.
#[derive(Default)]
struct Link {
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
struct Ticket {
    epoch: u64,
    retry: bool,
}

/// Why an exchange with Redis came to nothing.
enum Fault {
    /// No answer within the wait: from the connect under way (which goes
    /// on), or from Redis over a connection it had taken.
    Slow { connected: bool },
    /// The connect failed, and why.
    Unreachable(String),
    /// The connection failed or answered something that is not Redis's
    /// protocol, and why.
    Broken(String),
    /// Redis answered with an error: its code.
    Refused(String),
    /// Redis answered, but not as Redis answers these commands.
    Garbage,
}

/// What a check found under the key.
enum Found {
    Nothing,
    Hold(Shared),
    /// A value this code did not write, and what is wrong with it.
    Garbage(&'static str),
}

impl SharedHold {
    /// A shared hold in Redis at `url` (`redis://`, `rediss://`, a password
    /// allowed) under `key`, each exchange bounded by `wait`, its log lines
    /// passed through `concealer`. Nothing is connected until the first
    /// check: building needs neither Redis nor a runtime.
    pub(crate) fn new(
        url: &str,
        key: String,
        wait: Duration,
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
        let mut check = redis::pipe();
        check
            .cmd("PTTL")
            .arg(&key)
            .cmd("GETRANGE")
            .arg(&key)
            .arg(0)
            .arg(MAX_VALUE - 1)
            .ignore_errors();
        Ok(SharedHold {
            client,
            shown_key: concealer.conceal(&key).into_owned(),
            redis: concealer.conceal(&redis).into_owned(),
            concealer,
            key,
            wait,
            check,
            link: Arc::new(Mutex::new(Link::default())),
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

    /// The fleet's hold in force now, if any, within the wait. A Redis that
    /// is down, slow, refusing or answering garbage gives `None` (and one
    /// warning until it answers again); so does a key holding a value this
    /// code did not write (one warning until a good one is read).
    pub(crate) async fn check(&self) -> Option<Shared> {
        match self.exchange(&self.check, read_check).await? {
            Found::Nothing => {
                self.value_was_good();
                None
            }
            Found::Hold(shared) => {
                self.value_was_good();
                Some(shared)
            }
            Found::Garbage(what) => {
                self.value_was_garbage(what);
                None
            }
        }
    }

    /// Makes the fleet's hold end no sooner than `left` from now, recording
    /// `record`: the end only ever grows, and the record moves with it.
    /// Bounded by the same wait; a Redis that fails is warned about as in
    /// [`SharedHold::check`], and nothing else comes of it.
    pub(crate) async fn extend(&self, left: Duration, record: &Record) {
        let ms = u64::try_from(left.as_millis())
            .unwrap_or(u64::MAX)
            .min(MAX_PX);
        if ms == 0 {
            return;
        }
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(EXTEND)
            .arg(1)
            .arg(&self.key)
            .arg(record.encode())
            .arg(ms)
            .ignore_errors();
        let _ = self.exchange(&pipe, read_extend).await;
    }

    /// One pipelined request and its answer read by `read`, within the
    /// wait; `None` when Redis is skipped for a back-off or failed (which
    /// is recorded, and warned about once).
    async fn exchange<T>(
        &self,
        pipe: &redis::Pipeline,
        read: impl FnOnce(Value) -> Result<T, Fault>,
    ) -> Option<T> {
        let now = Instant::now();
        let ticket = self.ticket(now)?;
        let until = later(now, self.wait);
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
                self.answered(ticket);
                Some(found)
            }
            Err(fault) => {
                self.failed(ticket, made, &fault);
                None
            }
        }
    }

    /// Whether Redis may be asked now: `None` within a back-off; the one
    /// retry when a back-off has passed (the next back-off is assumed, so
    /// that the sends beside it skip Redis rather than wait on it too).
    fn ticket(&self, now: Instant) -> Option<Ticket> {
        let mut link = self.lock();
        let epoch = link.epoch;
        match &mut link.down {
            None => Some(Ticket {
                epoch,
                retry: false,
            }),
            Some(down) if now < down.retry_at => None,
            Some(down) => {
                down.retry_at = later(now, down.backoff);
                Some(Ticket { epoch, retry: true })
            }
        }
    }

    /// The connection, made now (one connect at a time, in the background)
    /// if there is none; the caller's timeout bounds the wait for it.
    async fn connection(&self) -> Result<(u64, MultiplexedConnection), Fault> {
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
                let mut link = lock(&link);
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
                            CONNECT_TIMEOUT.as_millis()
                        ));
                    }
                }
            }
            let _ = done.send(true);
        });
        ended
    }

    /// Redis answered: it is up again if it was down (said at `INFO`).
    fn answered(&self, ticket: Ticket) {
        let mut link = self.lock();
        if ticket.epoch == link.epoch && link.down.is_some() {
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
    fn failed(&self, ticket: Ticket, made: Option<u64>, fault: &Fault) {
        let mut link = self.lock();
        if let (Some(made), Some((number, _))) = (made, &link.conn)
            && made == *number
        {
            link.conn = None;
        }
        if ticket.epoch != link.epoch {
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
                let said = self.concealer.conceal(&said);
                tracing::warn!(redis = %self.redis, key = %self.shown_key, "{said}");
            }
            Some(ref mut down) if ticket.retry => {
                down.retry_at = later(now, down.backoff);
                down.backoff = down.backoff.saturating_mul(2).min(LAST_BACKOFF);
                drop(link);
                tracing::debug!(redis = %self.redis, "the shared hold's Redis is still failing");
            }
            Some(_) => {}
        }
    }

    /// A good value or none was read: a later garbage value is warned anew.
    fn value_was_good(&self) {
        self.lock().garbage_warned = false;
    }

    /// A value this code did not write was read: warned once.
    fn value_was_garbage(&self, what: &str) {
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
                format!("it did not answer within {} ms", self.wait.as_millis())
            }
            Fault::Slow { connected: false } => format!(
                "it took no connection within {} ms (the connect goes on in the background; \
                 a Redis further away needs a longer wait)",
                self.wait.as_millis()
            ),
            Fault::Unreachable(why) => format!("connecting to it failed: {why}"),
            Fault::Broken(why) => format!("its connection failed: {why}"),
            Fault::Refused(code) => format!("it answered the error {code}"),
            Fault::Garbage => {
                "it answered, but not as Redis answers PTTL, GETRANGE and EVAL".to_owned()
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Link> {
        lock(&self.link)
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

impl Record {
    /// What a hold of the process's own records for the fleet.
    pub(crate) fn of(hold: &Hold) -> Record {
        Record {
            why: hold.why.clone(),
            asked: hold.asked,
            asked_at: hold.asked_at,
        }
    }

    /// `v1|<asked_at ms>|<asked ms>|<why>`, every number saturated, a `why`
    /// the format cannot carry replaced.
    fn encode(&self) -> String {
        let at = self.asked_at.duration_since(UNIX_EPOCH).map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        });
        let asked = u64::try_from(self.asked.as_millis()).unwrap_or(u64::MAX);
        let why = if why_fits(&self.why) {
            self.why.as_str()
        } else {
            FALLBACK_WHY
        };
        format!("{FORMAT}|{at}|{asked}|{why}")
    }

    /// What [`crate::fuzzing::shared_record`] shows of a decoded value,
    /// and the value its record encodes to.
    #[cfg(fuzzing)]
    pub(crate) fn decode_for_fuzzing(value: &[u8]) -> Option<((String, u128, u128), String)> {
        let record = Record::decode(value)?;
        let at = record
            .asked_at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis());
        // As a held refusal says it: a date no HTTP date names included.
        let _ = crate::clock::http_date(record.asked_at);
        let shown = (record.why.clone(), record.asked.as_millis(), at);
        Some((shown, record.encode()))
    }

    /// The record `value` holds, or `None` for anything this code did not
    /// write: another version, a number that does not fit, a `why` too long
    /// or with control characters.
    fn decode(value: &[u8]) -> Option<Record> {
        let value = std::str::from_utf8(value).ok()?;
        let mut fields = value.splitn(4, '|');
        if fields.next()? != FORMAT {
            return None;
        }
        let at = millis(fields.next()?)?;
        let asked = millis(fields.next()?)?;
        let why = fields.next()?;
        if !why_fits(why) {
            return None;
        }
        Some(Record {
            why: why.to_owned(),
            asked: Duration::from_millis(asked),
            asked_at: UNIX_EPOCH.checked_add(Duration::from_millis(at))?,
        })
    }
}

impl Shared {
    /// The fleet's hold as this process holds it at `now`, cut to its own
    /// ceiling as a hint of its own would be, `from` the shared hold as
    /// [`SharedHold::shown`] names it.
    pub(crate) fn hold(&self, now: Instant, max_hold: Duration, from: String) -> Hold {
        Hold {
            until: later(now, self.left.min(max_hold)),
            asked_at: self.record.asked_at,
            asked: self.record.asked,
            ceiling: (self.record.asked > max_hold).then_some(max_hold),
            why: self.record.why.clone(),
            fleet: Some(from),
        }
    }
}

/// What a check's `PTTL` and `GETRANGE` answered.
fn read_check(answer: Value) -> Result<Found, Fault> {
    let Value::Array(items) = answer else {
        return Err(Fault::Garbage);
    };
    let [ttl, value] = items.as_slice() else {
        return Err(Fault::Garbage);
    };
    let value: &[u8] = match value {
        Value::BulkString(bytes) => bytes,
        Value::Nil => &[],
        Value::ServerError(error) if error.code() == "WRONGTYPE" => {
            return Ok(Found::Garbage("it is not a string"));
        }
        Value::ServerError(error) => return Err(Fault::Refused(error_code(error.code()))),
        _ => return Err(Fault::Garbage),
    };
    let ttl = match ttl {
        Value::Int(ms) => *ms,
        Value::ServerError(error) => return Err(Fault::Refused(error_code(error.code()))),
        _ => return Err(Fault::Garbage),
    };
    match ttl {
        // No key, or one that expired between the two commands.
        -2 | 0 => Ok(Found::Nothing),
        -1 => Ok(Found::Garbage("it never expires")),
        ms if ms > 0 => {
            if value.is_empty() {
                return Ok(Found::Nothing);
            }
            let left = Duration::from_millis(ms.unsigned_abs());
            Ok(match Record::decode(value) {
                Some(record) => Found::Hold(Shared { left, record }),
                None => Found::Garbage("it is not a hold in this transport's format"),
            })
        }
        _ => Err(Fault::Garbage),
    }
}

/// What an extend's `EVAL` answered: `0` or `1`.
fn read_extend(answer: Value) -> Result<(), Fault> {
    let Value::Array(items) = answer else {
        return Err(Fault::Garbage);
    };
    match items.as_slice() {
        [Value::Int(0 | 1)] => Ok(()),
        [Value::ServerError(error)] => Err(Fault::Refused(error_code(error.code()))),
        _ => Err(Fault::Garbage),
    }
}

/// A number of milliseconds as this code writes it: 1 to 20 ASCII digits
/// that fit in a u64 (no sign, no space).
fn millis(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Whether `why` can be stored and read back: 1 to 160 bytes of printable
/// ASCII.
fn why_fits(why: &str) -> bool {
    !why.is_empty() && why.len() <= MAX_WHY && why.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// A server's error code as a log may quote it: a short word of capitals,
/// or "an error".
fn error_code(code: &str) -> String {
    let word = code.len() <= 32
        && !code.is_empty()
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if word {
        code.to_owned()
    } else {
        "an error".to_owned()
    }
}

/// What went wrong with Redis, in words that hold no password: the OS's or
/// TLS's words for an I/O error, a server's error code, else the client's
/// category of error.
fn describe(error: &RedisError) -> String {
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

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn lock(link: &Mutex<Link>) -> MutexGuard<'_, Link> {
    link.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The integration tests' Redis, shared rather than copied: a real
/// `redis-server`, a silent listener and a dead port.
#[cfg(test)]
#[path = "../../tests/it/support/redis.rs"]
#[allow(dead_code)]
mod server;

#[cfg(test)]
mod tests {
    //! Against a real `redis-server` on loopback (and a silent listener, and
    //! a dead port), none of it mocked: `server` is the integration tests'
    //! helper, compiled here too.

    use std::fmt::Write as _;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant as Clock, SystemTime, UNIX_EPOCH};

    use base64::Engine as _;
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    use super::server::{Redis, Silent, dead_port};
    use super::*;

    const TOKEN: &str = "mw-test-Q7vX2kP9zR4tL8wN";
    const WAIT: Duration = DEFAULT_WAIT;
    /// What a bounded call may take past its wait on a busy 2-core machine.
    const MARGIN: Duration = Duration::from_millis(200);

    fn concealer() -> Concealer {
        Concealer::new([TOKEN])
    }

    fn hold_at(url: &str) -> SharedHold {
        let key = SharedHold::default_key("acme", "engine.example:443");
        match SharedHold::new(url, key, WAIT, concealer()) {
            Ok(hold) => hold,
            Err(error) => panic!("{url} should make a shared hold: {error}"),
        }
    }

    fn record(why: &str, asked: Duration) -> Record {
        Record {
            why: why.to_owned(),
            asked,
            // Stored to the millisecond.
            asked_at: UNIX_EPOCH + Duration::from_millis(1_764_580_000_123),
        }
    }

    fn pttl(redis: &Redis, key: &str) -> i64 {
        let answer = redis::cmd("PTTL").arg(key).query(&mut redis.connection());
        answer.unwrap_or(-3)
    }

    /// The events at `WARN` and `INFO`, each as its fields' text.
    #[derive(Clone, Default)]
    struct Events(Arc<Mutex<Vec<(tracing::Level, String)>>>);

    impl Events {
        fn at(&self, level: tracing::Level) -> Vec<String> {
            let events = self.0.lock().unwrap_or_else(PoisonError::into_inner);
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
            let mut events = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            events.push((*event.metadata().level(), text));
        }
    }

    /// Events said on this thread until the guard drops (the tests run on
    /// tokio's current-thread runtime, so the checks' events are here).
    fn capture() -> (Events, tracing::subscriber::DefaultGuard) {
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
        shared.extend(Duration::from_secs(10), &asked).await;
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
        shared.extend(Duration::from_secs(10), &first).await;
        shared
            .extend(
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
        shared.extend(Duration::from_secs(30), &longer).await;
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
        one.extend(
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
        let shared = hold_at(&redis.url());
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
        shared.extend(Duration::from_secs(5), &asked).await;
        assert_eq!(shared.check().await.map(|found| found.record), Some(asked));
        assert_eq!(events.at(tracing::Level::WARN).len(), 1);
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
        // Backing off: the next calls do not wait at all.
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        shared
            .extend(
                Duration::from_secs(5),
                &record("HTTP 429", Duration::from_secs(5)),
            )
            .await;
        assert!(started.elapsed() < WAIT / 2, "took {:?}", started.elapsed());
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
        let shared = SharedHold::new(&url, key, WAIT, concealer()).expect("a shared hold");
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
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        shared
            .extend(
                Duration::from_secs(5),
                &record("HTTP 429", Duration::from_secs(5)),
            )
            .await;
        assert!(started.elapsed() < WAIT / 2, "took {:?}", started.elapsed());
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
    async fn a_redis_that_stops_answering_costs_a_send_no_more_than_the_wait() {
        let redis = Redis::start();
        let shared = hold_at(&redis.url());
        assert_eq!(shared.check().await, None);
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(FIRST_BACKOFF.as_millis() as u64)
            .query(&mut redis.connection())
            .expect("CLIENT PAUSE");
        let (events, _guard) = capture();
        let started = Clock::now();
        assert_eq!(shared.check().await, None);
        let took = started.elapsed();
        assert!(took >= WAIT && took < WAIT + MARGIN, "took {took:?}");
        let warnings = events.at(tracing::Level::WARN);
        assert!(
            warnings[0].contains("did not answer within 50 ms"),
            "{warnings:?}"
        );
        // The hung connection is dropped; once Redis answers, a new one is used.
        assert!(shared.lock().conn.is_none());
        tokio::time::sleep(FIRST_BACKOFF + MARGIN).await;
        let asked = record("HTTP 429", Duration::from_secs(5));
        shared.extend(Duration::from_secs(5), &asked).await;
        assert_eq!(shared.check().await.map(|found| found.record), Some(asked));
        assert_eq!(events.at(tracing::Level::WARN).len(), 1);
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
        shared.extend(Duration::from_secs(5), &asked).await;
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
            assert!(named.iter().any(|n| said.contains(n)), "{said}");
            assert!(
                !said.contains("hunter2") && !said.contains("the-right-one"),
                "{said}"
            );
        }
    }

    #[tokio::test]
    async fn many_sends_at_once_share_one_connection() {
        let redis = Redis::start();
        let shared = Arc::new(hold_at(&redis.url()));
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

    #[tokio::test]
    async fn the_keys_hold_nothing_of_the_token() {
        let redis = Redis::with_password("a-redis-password");
        let key = SharedHold::default_key("acme", "engine.example:443");
        let shared = SharedHold::new(&redis.url(), key, WAIT, concealer()).expect("a shared hold");
        let hold = Hold {
            until: Instant::now() + Duration::from_secs(30),
            asked_at: SystemTime::now(),
            asked: Duration::from_secs(30),
            ceiling: None,
            why: "HTTP 429".to_owned(),
            fleet: None,
        };
        shared
            .extend(Duration::from_secs(30), &Record::of(&hold))
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
        send(shared.extend(Duration::from_secs(1), &record("HTTP 429", Duration::ZERO)));
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
            let error = SharedHold::new(url, key(), WAIT, concealer()).expect_err(url);
            assert_eq!(error, expected, "{url}");
            assert!(!error.to_string().contains("hunter2"), "{error}");
            assert!(!format!("{error:?}").contains("hunter2"), "{error:?}");
        }
        let url = "redis://127.0.0.1/";
        for bad in [String::new(), "k".repeat(257), "a\nb".to_owned()] {
            assert!(matches!(
                SharedHold::new(url, bad, WAIT, concealer()),
                Err(SharedHoldError::Key(_))
            ));
        }
        let zero = SharedHold::new(url, key(), Duration::ZERO, concealer());
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

    #[test]
    fn a_record_reads_back_and_anything_else_is_ignored() {
        let asked = record("HTTP 429", Duration::from_millis(1500));
        assert_eq!(Record::decode(asked.encode().as_bytes()), Some(asked));
        let odd = record("a\nb", Duration::MAX);
        let back = Record::decode(odd.encode().as_bytes()).expect("a record");
        assert_eq!(back.why, FALLBACK_WHY);
        assert_eq!(back.asked, Duration::from_millis(u64::MAX));
        let before_epoch = Record {
            asked_at: UNIX_EPOCH - Duration::from_secs(1),
            ..record("HTTP 429", Duration::ZERO)
        };
        assert_eq!(
            Record::decode(before_epoch.encode().as_bytes()).map(|r| r.asked_at),
            Some(UNIX_EPOCH)
        );
        let long_why = "w".repeat(MAX_WHY + 1);
        let garbage: [&[u8]; 14] = [
            b"",
            b"junk",
            b"v2|1|2|HTTP 429",
            b"v1|1|2",
            b"v1|1|2|",
            b"v1|+1|2|HTTP 429",
            b"v1|1|-2|HTTP 429",
            b"v1| 1|2|HTTP 429",
            b"v1|18446744073709551616|2|HTTP 429",
            b"v1|1|99999999999999999999|HTTP 429",
            b"v1|1|2|HTTP\x1b[2J",
            b"v1|1|2|\xff\xfe",
            b"\xff",
            long_why.as_bytes(),
        ];
        for value in garbage {
            assert_eq!(Record::decode(value), None, "{value:?}");
        }
        let long = format!("v1|1|2|{long_why}");
        assert_eq!(Record::decode(long.as_bytes()), None);
        // The furthest instant a u64 of ms names still fits a SystemTime.
        let far = format!("v1|{}|2|HTTP 429", u64::MAX);
        assert!(Record::decode(far.as_bytes()).is_some());
    }

    #[test]
    fn a_fleet_hold_longer_than_the_ceiling_is_cut_to_it() {
        let now = Instant::now();
        let shared = Shared {
            left: Duration::MAX,
            record: record("HTTP 429", Duration::MAX),
        };
        let hold = shared.hold(now, Duration::from_secs(60), String::new());
        assert_eq!(hold.until, now + Duration::from_secs(60));
        assert_eq!(hold.ceiling, Some(Duration::from_secs(60)));
        let _ = shared.hold(now, Duration::MAX, String::new());
    }
}
