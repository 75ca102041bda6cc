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
use super::record::{Fault, Found, read_ask, read_extend, storable};
use super::{EXTEND, SharedHold, millis};
use crate::clock::later;
use crate::limits::budget::Remaining;
#[cfg(test)]
use crate::limits::fleet::Turn;
use crate::limits::fleet::{Checked, FleetHold, LATE, Record};
use crate::lock::Unpoisoned;

/// The fleet's hold read, its budget set from the figure given and taken
/// from, in one round trip. `KEYS[1]` the hold, `KEYS[2]` the budget,
/// `KEYS[3]` the scout's lease; `ARGV`: the figure, its reset and how long
/// ago it was read, in ms, as `<figure>/<reset>/<age>` (empty for none; a
/// figure read before the window in Redis ended says nothing of the next
/// one, and is dropped); the act, `t` to take one (an attempt about to
/// go), `w` only to write the figure, `c` to write a scout's answer; and
/// the field the figure's reset was read from, as sent (empty for none).
/// The figure, reset and age travel as one argument, and `@VALUE@`,
/// `@PROBE@`, `@GRACE@` and `@SCOUT@` are set when the hold is built (the
/// last byte of the hold's value read, the probe's, the grace's and the
/// scouts' ms): Redis refuses a request of more than ten parts from a
/// client that has not authenticated, and so would say nothing of a
/// missing password.
///
/// It answers the hold's `PTTL` and value (as a check did), then what the
/// budget said: `0` open (no budget), `1` took one (and what is left, and
/// the ms to the reset), `2` spent (ms to the reset), `3` let go first
/// into a new window, `4` the one let go first is out (ms until another
/// may go): this send waits or is held, as for a spent window, since what
/// the new window holds is not known yet; `5` the fleet's scout. Last, the
/// field the budget's figure was read from.
///
/// # Scouts
///
/// A window an answer's fields closed (a hold whose value is `v2`, or a
/// spent budget) lets one send of the fleet through every `@SCOUT@` ms.
/// The lease holds when the next may go, and expires after two intervals
/// or with the window it was taken in, whichever comes first: the first
/// ask that meets a window takes it, and an ask it has come due for goes
/// and takes it anew, all within this one script, so two members never
/// both scout. A scout's answer (`c`) lifts a `v2` hold (never one a
/// refusal asked for), and replaces the budget with its figure (or drops
/// it, when the answer named none); the lease stays, so a window that
/// answer closes again is scouted a minute after this one.
pub(super) const ASK: &str = "\
local pttl = redis.call('PTTL', KEYS[1]) \
local value = redis.pcall('GETRANGE', KEYS[1], 0, @VALUE@) \
local t = redis.call('TIME') \
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) \
local act = ARGV[2] \
local function said() \
  return pttl > 0 and type(value) == 'string' and string.sub(value, 1, 3) == 'v2|' \
end \
local function scout(life) \
  local lease = redis.pcall('GET', KEYS[3]) \
  local due = nil \
  if type(lease) == 'string' then due = tonumber(lease) end \
  local go = due ~= nil and due <= now \
  if go or not due then \
    redis.call('SET', KEYS[3], now + @SCOUT@, 'PX', math.min(2 * @SCOUT@, life)) \
  end \
  return go \
end \
if act == 'c' and said() then \
  redis.call('DEL', KEYS[1]) pttl = -2 value = '' \
end \
local left, wend, probe, field = nil, nil, 0, '' \
local h = redis.pcall('HMGET', KEYS[2], 'left', 'end', 'probe', 'field') \
if type(h) == 'table' and not h.err then \
  left = tonumber(h[1]) wend = tonumber(h[2]) probe = tonumber(h[3]) or 0 \
  if type(h[4]) == 'string' then field = h[4] end \
end \
if not (left and wend) then left = nil wend = nil end \
local f = {} \
for part in string.gmatch(ARGV[1], '[^/]+') do f[#f + 1] = tonumber(part) end \
local figure, reset, age = f[1], f[2], f[3] \
if figure and reset and age then \
  local set = false \
  if act == 'c' then \
    left = figure wend = now + reset probe = 0 set = true \
  elseif left and now < wend then \
    if figure < left then left = figure set = true end \
  elseif not (left and now - age < wend) then \
    left = figure wend = now + reset probe = 0 set = true \
  end \
  if set then \
    field = ARGV[3] \
    redis.call('DEL', KEYS[2]) \
    redis.call('HSET', KEYS[2], 'left', left, 'end', wend, 'probe', probe, 'field', field) \
    redis.call('PEXPIRE', KEYS[2], wend - now + @GRACE@) \
  end \
elseif act == 'c' then \
  redis.call('DEL', KEYS[2]) left = nil \
end \
local code, n, ms = 0, 0, 0 \
if act == 't' then \
  if said() then \
    if scout(pttl) then code = 5 end \
  elseif pttl <= 0 and left then \
    if now < wend then \
      if left > 0 then \
        left = left - 1 \
        redis.call('HSET', KEYS[2], 'left', left) \
        code, n, ms = 1, left, wend - now \
      elseif scout(wend - now) then \
        code = 5 \
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
end \
return {pttl, value, code, n, ms, field}";

/// What an attempt does to the fleet's budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Act {
    /// Takes one from it: an attempt about to go.
    Take,
    /// Only writes the figure given (and reads the hold): the tests' look
    /// at the fleet.
    #[cfg(test)]
    Write,
    /// Writes the answer of a scout, or of the first send into a window
    /// that just reset: its figure replaces the budget (none drops it), and
    /// a hold an answer's fields started is lifted.
    Correct,
}

/// What an attempt asks of the fleet.
#[derive(Clone, Debug)]
pub(super) struct Ask {
    pub(super) act: Act,
    /// The latest figure this process read.
    pub(super) set: Option<Remaining>,
}

impl SharedHold {
    /// The fleet's hold in force now, if any, within the wait (an ask that
    /// takes nothing and writes nothing).
    #[cfg(test)]
    pub(super) async fn check(self: &Arc<Self>) -> Option<FleetHold> {
        let ask = Ask {
            act: Act::Write,
            set: None,
        };
        self.ask(ask).await.and_then(|checked| checked.hold)
    }

    /// Writes a scout's answer: `set`, its figure, replaces the fleet's
    /// budget (none drops it), a hold an answer's fields started is lifted,
    /// and `hold`, the one this answer's fields started (the time left and
    /// its record), if any, is set in its place. One round trip (both
    /// scripts pipelined), bounded as [`SharedHold::write_hold`] is; whether
    /// Redis answered.
    pub(super) async fn write_correction(
        &self,
        set: Option<Remaining>,
        hold: Option<(Duration, Record)>,
    ) -> bool {
        let mut pipe = self.ask_pipe(&Ask {
            act: Act::Correct,
            set,
        });
        if let Some((left, record)) = hold.filter(|(left, _)| millis(*left) > 0) {
            pipe.cmd("EVAL")
                .arg(EXTEND)
                .arg(1)
                .arg(&self.key)
                .arg(record.encode())
                .arg(millis(left))
                .ignore_errors();
        }
        let read = |answer: Value| {
            let Value::Array(items) = answer else {
                return Err(Fault::Garbage);
            };
            let mut items = items.into_iter();
            let asked = items.next().ok_or(Fault::Garbage)?;
            read_ask(Value::Array(vec![asked]))?;
            match items.next() {
                Some(extended) => read_extend(Value::Array(vec![extended])),
                None => Ok(()),
            }
        };
        self.exchange(&pipe, read).await.is_some()
    }

    /// The fleet's hold in force now and what its budget says, within the
    /// wait, in one round trip; `ask.set` written first. A Redis that is
    /// down, refusing or answering garbage gives `None` (and one warning
    /// until it answers again); so does a key holding a value this code did
    /// not write (one warning until a good one is read). A Redis that
    /// answers after the wait gives `None` now, and its answer to
    /// [`SharedHold::late_answer`].
    pub(super) async fn ask(self: &Arc<Self>, ask: Ask) -> Option<Checked> {
        let now = Instant::now();
        let permit = self.permit(now)?;
        let until = later(now, self.wait);
        let (number, mut conn) = match timeout_at(until, self.connection()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(fault)) => {
                self.failed(permit, None, &fault);
                return None;
            }
            Err(_) => {
                self.failed(permit, None, &Fault::Slow { connected: false });
                return None;
            }
        };
        let pipe = self.ask_pipe(&ask);
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
                    this.answered(permit);
                    let checked = Checked {
                        hold: this.found(found),
                        budget,
                    };
                    if let Err(checked) = tell.send(checked) {
                        let mut late = this.late.lock_unpoisoned();
                        *late = Some((Instant::now(), checked));
                    }
                }
                Err(fault) => this.failed(permit, Some(number), &fault),
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
    pub(super) fn late_answer(&self) -> Option<(Instant, Checked)> {
        self.late.lock_unpoisoned().take()
    }

    fn ask_pipe(&self, ask: &Ask) -> redis::Pipeline {
        let (figure, field) = match &ask.set {
            Some(set) => (
                format!(
                    "{}/{}/{}",
                    set.left,
                    millis(set.reset).max(1),
                    millis(set.age)
                ),
                set.field.as_ref().map(storable).unwrap_or_default(),
            ),
            None => (String::new(), String::new()),
        };
        let act = match ask.act {
            Act::Take => "t",
            #[cfg(test)]
            Act::Write => "w",
            Act::Correct => "c",
        };
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(&self.script)
            .arg(3)
            .arg(&self.key)
            .arg(&self.budget_key)
            .arg(&self.scout_key)
            .arg(figure)
            .arg(act)
            .arg(field)
            .ignore_errors();
        pipe
    }

    /// The hold a check found, its value's health recorded.
    fn found(&self, found: Found) -> Option<FleetHold> {
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
        let said = self.concealer.show_all(&said);
        tracing::warn!(redis = %self.redis, key = %self.shown_key, "{said}");
    }
}

#[cfg(test)]
mod tests {
    //! Against a real `redis-server` on loopback, as the shared hold's own
    //! tests are.

    use reqwest::header::HeaderValue;

    use super::*;
    use crate::limits::dialects::Quoted;
    use crate::limits::redis::server::Redis;
    use crate::limits::redis::tests::{record, scouting_at};
    use crate::limits::redis::{GRACE, PROBE};

    const SECOND: Duration = Duration::from_secs(1);

    // These tests are of what Redis keeps, not of the wait.
    use crate::limits::redis::tests::patient_at as hold_at;

    /// A figure of `left` for `reset`, read `age` ago.
    fn figure(left: u64, reset: Duration, age: Duration) -> Option<Remaining> {
        Some(Remaining {
            left,
            reset,
            age,
            field: None,
        })
    }

    async fn take(shared: &Arc<SharedHold>, set: Option<Remaining>) -> Turn {
        let ask = Ask {
            act: Act::Take,
            set,
        };
        shared.ask(ask).await.expect("Redis answers").budget
    }

    #[tokio::test]
    async fn the_fleets_budget_is_set_taken_from_and_spent() {
        let redis = Redis::start();
        let (one, other) = (hold_at(&redis.url()), hold_at(&redis.url()));
        assert_eq!(take(&one, None).await, Turn::Open, "no budget, no cost");
        let set = figure(2, SECOND, Duration::ZERO);
        assert!(matches!(
            take(&one, set.clone()).await,
            Turn::Took { left: 1, .. }
        ));
        assert!(matches!(
            take(&other, None).await,
            Turn::Took { left: 0, .. }
        ));
        assert!(matches!(take(&one, None).await, Turn::Spent { reset, .. } if reset <= SECOND));
        // A higher figure within the window gives nothing back.
        assert!(matches!(
            take(&other, set.clone()).await,
            Turn::Spent { .. }
        ));
    }

    #[tokio::test]
    async fn after_the_reset_one_send_goes_first_and_the_others_wait_on_it() {
        let redis = Redis::start();
        let (one, other) = (hold_at(&redis.url()), hold_at(&redis.url()));
        let short = Duration::from_millis(100);
        assert!(matches!(
            take(&one, figure(0, short, Duration::ZERO)).await,
            Turn::Spent { .. }
        ));
        tokio::time::sleep(short + Duration::from_millis(20)).await;
        // A figure read before the window ended says nothing of the next.
        let stale = figure(5, SECOND, short + Duration::from_millis(20));
        assert_eq!(take(&one, stale).await, Turn::First);
        let asked = std::time::Instant::now();
        match take(&other, None).await {
            Turn::AfterFirst { reset } => assert!(reset <= PROBE),
            // A machine so busy that the first one's turn passed: the next
            // goes first in its place.
            Turn::First => assert!(asked.elapsed() >= PROBE / 2),
            other => panic!("{other:?}"),
        }
        // The first send's answer opens the new window for every member.
        let fresh = figure(4, SECOND, Duration::ZERO);
        let write = Ask {
            act: Act::Write,
            set: fresh,
        };
        assert!(one.ask(write).await.is_some());
        assert!(matches!(
            take(&other, None).await,
            Turn::Took { left: 3, .. }
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
        let set = figure(3, SECOND, Duration::ZERO);
        assert!(matches!(
            take(&shared, set).await,
            Turn::Took { left: 2, .. }
        ));
        shared.write_hold(SECOND, &record("HTTP 429", SECOND)).await;
        let checked = shared
            .ask(Ask {
                act: Act::Take,
                set: None,
            })
            .await
            .expect("Redis answers");
        assert!(checked.hold.is_some());
        assert_eq!(checked.budget, Turn::Open);
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
        assert_eq!(take(&shared, None).await, Turn::Open);
        let set = figure(1, SECOND, Duration::ZERO);
        assert!(matches!(
            take(&shared, set).await,
            Turn::Took { left: 0, .. }
        ));
        let _: () = redis::cmd("HSET")
            .arg(key)
            .arg("left")
            .arg("-7")
            .arg("end")
            .arg("lots")
            .query(&mut redis.connection())
            .expect("HSET");
        assert_eq!(take(&shared, None).await, Turn::Open);
    }

    fn quoted() -> Quoted {
        let value = HeaderValue::from_static("1796407068");
        Quoted::new("x-ratelimit-reset-requests", value)
    }

    /// The scouts' interval in these tests.
    const EVERY: Duration = Duration::from_millis(300);

    /// Past the interval, and what a busy machine adds to a sleep.
    const PAST: Duration = Duration::from_millis(330);

    #[tokio::test]
    async fn a_spent_budget_lets_one_member_scout_an_interval_and_its_answer_reopens_it() {
        let redis = Redis::start();
        let (one, other) = (
            scouting_at(&redis.url(), EVERY),
            scouting_at(&redis.url(), EVERY),
        );
        let spent = Some(Remaining {
            left: 0,
            reset: 10 * SECOND,
            age: Duration::ZERO,
            field: Some(quoted()),
        });
        // The first ask that meets the window takes the lease: nobody goes.
        match take(&one, spent.clone()).await {
            Turn::Spent { field, .. } => assert_eq!(field, Some(quoted())),
            other => panic!("{other:?}"),
        }
        assert!(matches!(take(&other, None).await, Turn::Spent { .. }));
        for _ in 0..2 {
            tokio::time::sleep(PAST).await;
            // Of two members asking at once, one goes.
            let (a, b) = tokio::join!(take(&one, None), take(&other, None));
            let scouts = [&a, &b].iter().filter(|f| ***f == Turn::Scout).count();
            assert_eq!(scouts, 1, "{a:?}, {b:?}");
            assert!(matches!(take(&one, None).await, Turn::Spent { .. }));
            // Its answer says the same: the window stands.
            one.write_correction(spent.clone(), None).await;
            assert!(matches!(take(&other, None).await, Turn::Spent { .. }));
        }
        // An answer that says there is room replaces the window, higher
        // though its figure is.
        let room = Some(Remaining {
            left: 5,
            ..spent.clone().expect("a figure")
        });
        tokio::time::sleep(PAST).await;
        assert_eq!(take(&other, None).await, Turn::Scout);
        other.write_correction(room, None).await;
        assert!(matches!(take(&one, None).await, Turn::Took { left: 4, .. }));
        // One with no figure drops the budget.
        other.write_correction(None, None).await;
        assert_eq!(take(&one, None).await, Turn::Open);
    }

    #[tokio::test]
    async fn a_hold_an_answers_fields_started_is_scouted_and_lifted_and_a_refusals_is_neither() {
        let redis = Redis::start();
        let shared = scouting_at(&redis.url(), EVERY);
        let asks = |shared: Arc<SharedHold>| async move {
            let ask = Ask {
                act: Act::Take,
                set: None,
            };
            shared.ask(ask).await.expect("Redis answers")
        };
        let said = Record {
            field: Some(quoted()),
            ..record(
                "the rate-limit fields of an answer, which said none was left of its requests window",
                10 * SECOND,
            )
        };
        shared.write_hold(10 * SECOND, &said).await;
        let met = asks(shared.clone()).await;
        assert_eq!(met.hold.map(|found| found.record), Some(said.clone()));
        assert_eq!(met.budget, Turn::Open);
        tokio::time::sleep(PAST).await;
        assert_eq!(asks(shared.clone()).await.budget, Turn::Scout);
        assert_eq!(asks(shared.clone()).await.budget, Turn::Open);
        // The scout's answer still says nothing is left, for less time: its
        // hold replaces the longer one.
        let shorter = Record {
            asked: 2 * SECOND,
            ..said.clone()
        };
        shared
            .write_correction(None, Some((2 * SECOND, shorter.clone())))
            .await;
        let found = shared.check().await.expect("the scout's hold");
        assert_eq!(found.record, shorter);
        assert!(found.left <= 2 * SECOND);
        // Room: lifted.
        shared.write_correction(None, None).await;
        assert_eq!(shared.check().await, None);
        // A refusal's hold is never scouted, nor lifted by a scout's answer.
        let refused = record("HTTP 429", 10 * SECOND);
        shared.write_hold(10 * SECOND, &refused).await;
        for _ in 0..3 {
            assert_eq!(asks(shared.clone()).await.budget, Turn::Open);
            tokio::time::sleep(PAST).await;
        }
        shared.write_correction(None, None).await;
        assert_eq!(
            shared.check().await.map(|found| found.record),
            Some(refused)
        );
    }
}
