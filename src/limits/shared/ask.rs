//! The ask: before each attempt, one `EVAL` that reads the fleet's hold,
//! sets the fleet's budget from the latest figure this process read, and
//! takes one from it; waited for within the shared hold's wait, and read in
//! the background when it comes later, for the next send. The methods here
//! are [`SharedHold`]'s own.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use redis::Value;
use tokio::sync::oneshot;
use tokio::time::{Instant, timeout, timeout_at};

use super::link::describe;
use super::record::{Fault, Found, read_ask};
use super::{Fleet, LATE, Shared, SharedHold, millis};
use crate::clock::later;
use crate::lock::Unpoisoned;

/// The fleet's hold read, its budget set from the figure given and taken
/// from, in one round trip. `KEYS[1]` the hold, `KEYS[2]` the budget;
/// `ARGV`: the figure (empty for none), its reset in ms, `1` to take one
/// (`0` only writes), and how long ago the figure was read, in ms (a
/// figure read before the window in Redis ended says nothing of the next
/// one, and is dropped). `@VALUE@`,
/// `@PROBE@` and `@GRACE@` are set when the hold is built (the last byte of
/// the hold's value read, the probe's and the grace's ms): Redis refuses a
/// request of more than ten parts from a client that has not
/// authenticated, and so would say nothing of a missing password.
///
/// It answers the hold's `PTTL` and value (as a check did), then what the
/// budget said: `0` open (no budget), `1` took one (and what is left, and
/// the ms to the reset), `2` spent (ms to the reset), `3` let go first
/// into a new window, `4` the one let go first is out (ms until another
/// may go): this send waits or is held, as for a spent window, since what
/// the new window holds is not known yet.
pub(super) const ASK: &str = "\
local pttl = redis.call('PTTL', KEYS[1]) \
local value = redis.pcall('GETRANGE', KEYS[1], 0, @VALUE@) \
local t = redis.call('TIME') \
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) \
local left, wend, probe = nil, nil, 0 \
local h = redis.pcall('HMGET', KEYS[2], 'left', 'end', 'probe') \
if type(h) == 'table' and not h.err then \
  left = tonumber(h[1]) wend = tonumber(h[2]) probe = tonumber(h[3]) or 0 \
end \
if not (left and wend) then left = nil wend = nil end \
local figure = tonumber(ARGV[1]) \
if figure then \
  local read = now - tonumber(ARGV[4]) \
  local set = false \
  if left and now < wend then \
    if figure < left then left = figure set = true end \
  elseif not (left and read < wend) then \
    left = figure wend = now + tonumber(ARGV[2]) probe = 0 set = true \
  end \
  if set then \
    redis.call('DEL', KEYS[2]) \
    redis.call('HSET', KEYS[2], 'left', left, 'end', wend, 'probe', probe) \
    redis.call('PEXPIRE', KEYS[2], wend - now + @GRACE@) \
  end \
end \
local code, n, ms = 0, 0, 0 \
if ARGV[3] == '1' and pttl <= 0 and left then \
  if now < wend then \
    if left > 0 then \
      left = left - 1 \
      redis.call('HSET', KEYS[2], 'left', left) \
      code, n, ms = 1, left, wend - now \
    else \
      code, ms = 2, wend - now \
    end \
  elseif probe <= now then \
    redis.call('HSET', KEYS[2], 'probe', now + @PROBE@) \
    code = 3 \
  else \
    code, ms = 4, probe - now \
  end \
end \
return {pttl, value, code, n, ms}";

/// What an attempt asks of the fleet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ask {
    /// Take one from the budget (an attempt about to go), or only write.
    pub(crate) take: bool,
    /// The latest figure this process read, the time to its reset, and
    /// how long ago it was read.
    pub(crate) set: Option<(u64, Duration, Duration)>,
}

/// What the fleet answered: its hold in force, and what its budget said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) hold: Option<Shared>,
    pub(crate) budget: Fleet,
}

impl SharedHold {
    /// The fleet's hold in force now, if any, within the wait (an ask that
    /// takes nothing and writes nothing).
    #[cfg(test)]
    pub(crate) async fn check(self: &Arc<Self>) -> Option<Shared> {
        let ask = Ask {
            take: false,
            set: None,
        };
        self.ask(ask).await.and_then(|checked| checked.hold)
    }

    /// The fleet's hold in force now and what its budget says, within the
    /// wait, in one round trip; `ask.set` written first. A Redis that is
    /// down, refusing or answering garbage gives `None` (and one warning
    /// until it answers again); so does a key holding a value this code did
    /// not write (one warning until a good one is read). A Redis that
    /// answers after the wait gives `None` now, and its answer to
    /// [`SharedHold::late`].
    pub(crate) async fn ask(self: &Arc<Self>, ask: Ask) -> Option<Checked> {
        let now = Instant::now();
        let ticket = self.ticket(now)?;
        let until = later(now, self.wait);
        let (number, mut conn) = match timeout_at(until, self.connection()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(fault)) => {
                self.failed(ticket, None, &fault);
                return None;
            }
            Err(_) => {
                self.failed(ticket, None, &Fault::Slow { connected: false });
                return None;
            }
        };
        let pipe = self.ask_pipe(ask);
        let (tell, mut told) = oneshot::channel();
        let this = Arc::clone(self);
        // The request goes on past the send's wait, in a task of its own:
        // a late answer is still read, and used by the next send.
        tokio::spawn(async move {
            let answer = match timeout(LATE, pipe.query_async::<Value>(&mut conn)).await {
                Ok(Ok(answer)) => read_ask(answer),
                Ok(Err(error)) => Err(Fault::Broken(describe(&error))),
                Err(_) => Err(Fault::Late),
            };
            match answer {
                Ok((found, budget)) => {
                    this.answered(ticket);
                    let checked = Checked {
                        hold: this.found(found),
                        budget,
                    };
                    if let Err(checked) = tell.send(checked) {
                        let mut late = this.late.lock_unpoisoned();
                        *late = Some((Instant::now(), checked));
                    }
                }
                Err(fault) => this.failed(ticket, Some(number), &fault),
            }
        });
        match timeout_at(until, &mut told).await {
            Ok(answer) => answer.ok(),
            Err(_) => {
                told.close();
                if let Ok(checked) = told.try_recv() {
                    return Some(checked);
                }
                self.was_slow();
                None
            }
        }
    }

    /// The answer that came after its send stopped waiting, if one did
    /// since the last call, and when it came.
    pub(crate) fn late(&self) -> Option<(Instant, Checked)> {
        self.late.lock_unpoisoned().take()
    }

    fn ask_pipe(&self, ask: Ask) -> redis::Pipeline {
        let (figure, reset, age) = match ask.set {
            Some((figure, reset, age)) => (figure.to_string(), millis(reset), millis(age)),
            None => (String::new(), 0, 0),
        };
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(&self.script)
            .arg(2)
            .arg(&self.key)
            .arg(&self.budget_key)
            .arg(figure)
            .arg(reset.max(1))
            .arg(u8::from(ask.take))
            .arg(age)
            .ignore_errors();
        pipe
    }

    /// The hold a check found, its value's health recorded.
    fn found(&self, found: Found) -> Option<Shared> {
        match found {
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

    /// A send stopped waiting for Redis: said once at `WARN`; Redis is not
    /// counted down for it.
    fn was_slow(&self) {
        if self.slow_warned.swap(true, Ordering::Relaxed) {
            return;
        }
        let said = format!(
            "the shared hold on Redis {} did not answer within {} ms; the send kept to this \
             process's own hold and budget, and Redis's answer, when it comes, is used by the \
             next send (said once)",
            self.redis,
            crate::clock::millis(self.wait)
        );
        let said = self.concealer.conceal(&said);
        tracing::warn!(redis = %self.redis, key = %self.shown_key, "{said}");
    }
}

#[cfg(test)]
mod tests {
    //! Against a real `redis-server` on loopback, as the shared hold's own
    //! tests are.

    use super::*;
    use crate::limits::shared::server::Redis;
    use crate::limits::shared::tests::record;
    use crate::limits::shared::{GRACE, PROBE};

    const SECOND: Duration = Duration::from_secs(1);

    // These tests are of what Redis keeps, not of the wait.
    use crate::limits::shared::tests::patient_at as hold_at;

    async fn take(shared: &Arc<SharedHold>, set: Option<(u64, Duration, Duration)>) -> Fleet {
        let ask = Ask { take: true, set };
        shared.ask(ask).await.expect("Redis answers").budget
    }

    #[tokio::test]
    async fn the_fleets_budget_is_set_taken_from_and_spent() {
        let redis = Redis::start();
        let (one, other) = (hold_at(&redis.url()), hold_at(&redis.url()));
        assert_eq!(take(&one, None).await, Fleet::Open, "no budget, no cost");
        let set = Some((2, SECOND, Duration::ZERO));
        assert!(matches!(take(&one, set).await, Fleet::Took { left: 1, .. }));
        assert!(matches!(
            take(&other, None).await,
            Fleet::Took { left: 0, .. }
        ));
        assert!(matches!(take(&one, None).await, Fleet::Spent { reset } if reset <= SECOND));
        // A higher figure within the window gives nothing back.
        assert!(matches!(take(&other, set).await, Fleet::Spent { .. }));
    }

    #[tokio::test]
    async fn after_the_reset_one_send_goes_first_and_the_others_wait_on_it() {
        let redis = Redis::start();
        let (one, other) = (hold_at(&redis.url()), hold_at(&redis.url()));
        let short = Duration::from_millis(100);
        assert!(matches!(
            take(&one, Some((0, short, Duration::ZERO))).await,
            Fleet::Spent { .. }
        ));
        tokio::time::sleep(short + Duration::from_millis(20)).await;
        // A figure read before the window ended says nothing of the next.
        let stale = Some((5, SECOND, short + Duration::from_millis(20)));
        assert_eq!(take(&one, stale).await, Fleet::Probe);
        let asked = std::time::Instant::now();
        match take(&other, None).await {
            Fleet::Probing { reset } => assert!(reset <= PROBE),
            // A machine so busy that the first one's turn passed: the next
            // goes first in its place.
            Fleet::Probe => assert!(asked.elapsed() >= PROBE / 2),
            other => panic!("{other:?}"),
        }
        // The first send's answer opens the new window for every member.
        let fresh = Some((4, SECOND, Duration::ZERO));
        let write = Ask {
            take: false,
            set: fresh,
        };
        assert!(one.ask(write).await.is_some());
        assert!(matches!(
            take(&other, None).await,
            Fleet::Took { left: 3, .. }
        ));
        let ttl: i64 = redis::cmd("PTTL")
            .arg("meterwire:budget:acme:engine.example:443")
            .query(&mut redis.connection())
            .expect("PTTL");
        let most = (SECOND + GRACE).as_millis() as i64;
        assert!(ttl > 0 && ttl <= most, "{ttl}");
    }

    #[tokio::test]
    async fn a_hold_in_force_takes_nothing_from_the_budget() {
        let redis = Redis::start();
        let shared = hold_at(&redis.url());
        let set = Some((3, SECOND, Duration::ZERO));
        assert!(matches!(
            take(&shared, set).await,
            Fleet::Took { left: 2, .. }
        ));
        shared.extend(SECOND, &record("HTTP 429", SECOND)).await;
        let checked = shared
            .ask(Ask {
                take: true,
                set: None,
            })
            .await
            .expect("Redis answers");
        assert!(checked.hold.is_some());
        assert_eq!(checked.budget, Fleet::Open);
        let left: String = redis::cmd("HGET")
            .arg("meterwire:budget:acme:engine.example:443")
            .arg("left")
            .query(&mut redis.connection())
            .expect("HGET");
        assert_eq!(left, "2");
    }

    #[tokio::test]
    async fn a_stranger_value_under_the_budget_key_is_replaced_not_believed() {
        let redis = Redis::start();
        let shared = hold_at(&redis.url());
        let key = "meterwire:budget:acme:engine.example:443";
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg("not a hash")
            .query(&mut redis.connection())
            .expect("SET");
        assert_eq!(take(&shared, None).await, Fleet::Open);
        let set = Some((1, SECOND, Duration::ZERO));
        assert!(matches!(
            take(&shared, set).await,
            Fleet::Took { left: 0, .. }
        ));
        let _: () = redis::cmd("HSET")
            .arg(key)
            .arg("left")
            .arg("-7")
            .arg("end")
            .arg("lots")
            .query(&mut redis.connection())
            .expect("HSET");
        assert_eq!(take(&shared, None).await, Fleet::Open);
    }
}
