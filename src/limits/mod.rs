//! The engine's limits, respected by every clone of a transport: the one
//! place that says why a send was held.
//!
//! A `429` with a retry hint says the account's window is spent; sending
//! again before it passes costs the engine a request and the account its
//! standing, and a predictor with many tasks would do it many times at
//! once. So the hint becomes a **hold** shared by every clone: a send
//! before the window ends is not sent. An answer whose rate-limit fields say
//! nothing is left holds the same way. A **latch** (opt-in) does the same
//! after a `402`, `401` or `403` for a fixed time: an empty account or a
//! rejected token is not fixed by asking again a millisecond later.
//!
//! Every answer also says how much of its windows is left: the **budget**
//! ([`budget`]) keeps what the latest one said of its requests window, less
//! the sends started since, and a send starts only while something is left.
//!
//! [`Limits::observe`] decides what each attempt's outcome starts, and
//! [`Limits::admit`] what a send meets before it goes. Each is a `Mutex`
//! or two, held only to copy a few fields out: a send that is not held
//! never waits on another.
//!
//! With the `redis` feature and a shared hold (`shared`), the hold and the
//! budget are kept in Redis too: [`Limits::admit`] checks the fleet's hold
//! and takes one from the fleet's budget in one round trip before each
//! attempt (carrying the latest figure this process read), and
//! [`Limits::share`] hands the fleet a hold this process started. When a
//! window the fleet waited on ends, its members resume spread over
//! [`REOPEN_SPREAD`], each its own draw, so a small quota is not spent at
//! once by whoever wakes first.

mod budget;
pub(crate) mod hold;
#[cfg(feature = "redis")]
pub(crate) mod shared;

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use self::budget::Budget;
pub(crate) use self::budget::Ticket;
use self::hold::{Hold, Latched, Spent};
use crate::clock::later;
use crate::lock::Unpoisoned;
use crate::refusal::evidence::retry::Fields;
use crate::refusal::{Cause, Refusal};
use crate::retry::RetryPolicy;

/// The longest a member of a fleet waits past the end of a window it
/// waited on, at most: each draws its own delay from zero to this (within
/// its deadline and its policy's `max_wait`).
pub(crate) const REOPEN_SPREAD: Duration = Duration::from_millis(100);

/// What one attempt came to, as the limits see it.
pub(crate) enum Seen<'a> {
    /// An answer, and what its rate-limit fields said.
    Answer { fields: &'a Fields },
    /// A refusal the engine's answer (or its absence) gave, to a send with
    /// the token of this generation (see `token::file`).
    Refused(&'a Refusal, u64),
}

/// What a send meets before it goes.
pub(crate) enum Gate {
    /// Nothing holds it: it goes, in flight until its ticket drops.
    Open(Ticket),
    /// A hold or a spent window the send may wait out: its policy's
    /// `max_wait` and its deadline both cover it.
    Wait(Instant),
    /// A hold the send may not wait out: it is refused, not sent.
    Held(Hold),
    /// A spent requests window the send may not wait out: refused, not
    /// sent.
    Spent(Spent),
}

/// The hold and the latch of one transport and its clones.
#[derive(Debug)]
pub(crate) struct Limits {
    respect: bool,
    latch_for: Option<Duration>,
    max_hold: Duration,
    hold: Mutex<Option<Hold>>,
    latch: Mutex<Option<Latched>>,
    budget: Budget,
    /// The fleet's hold and budget, in Redis.
    #[cfg(feature = "redis")]
    shared: Option<std::sync::Arc<shared::SharedHold>>,
}

/// The longest hold when none is set: a day. An engine (or anyone on the
/// path) that asks for a week, or for 10^35 seconds, must not brick a
/// predictor until someone restarts it.
pub(crate) const DEFAULT_MAX_HOLD: Duration = Duration::from_secs(24 * 3600);

impl Limits {
    /// Limits that hold after the engine asks to wait when `respect` is on,
    /// for at most `max_hold`, and latch for `latch_for` after a `402`,
    /// `401` or `403` when it is set.
    pub(crate) fn new(respect: bool, latch_for: Option<Duration>, max_hold: Duration) -> Limits {
        Limits {
            respect,
            latch_for,
            max_hold,
            hold: Mutex::new(None),
            latch: Mutex::new(None),
            budget: Budget::default(),
            #[cfg(feature = "redis")]
            shared: None,
        }
    }

    /// These limits, with the fleet's hold kept in `shared` as well.
    #[cfg(feature = "redis")]
    pub(crate) fn with_shared(mut self, shared: shared::SharedHold) -> Limits {
        self.shared = Some(std::sync::Arc::new(shared));
        self
    }

    /// What an attempt meets before it goes, at the moment it would go
    /// (`now`, which the caller read):
    /// a hold or a spent window it may wait out ([`Gate::Wait`]) or that
    /// refuses it, or leave to go, with one taken from the budget. With a
    /// shared hold, the fleet's hold and budget are asked in one round trip
    /// within the shared hold's wait (a Redis that does not answer in time
    /// changes nothing now; its late answer is used by the next attempt).
    pub(crate) async fn admit(
        &self,
        policy: &RetryPolicy,
        deadline: Instant,
        now: Instant,
    ) -> Gate {
        if !self.respect {
            return Gate::Open(self.budget.start(now, false));
        }
        if let Some(gate) = self.closed(now, policy, deadline) {
            return gate;
        }
        #[cfg(feature = "redis")]
        let mut probe = false;
        #[cfg(feature = "redis")]
        if let Some(shared) = &self.shared {
            if let Some((at, late)) = shared.late() {
                self.apply(at, &late, shared);
                if let Some(gate) = self.closed(Instant::now(), policy, deadline) {
                    return gate;
                }
            }
            let now = Instant::now();
            let ask = shared::Ask {
                take: true,
                set: self.budget.pending(now),
            };
            if let Some(checked) = shared.ask(ask).await {
                probe = self.apply(Instant::now(), &checked, shared);
            }
            if let Some(gate) = self.closed(Instant::now(), policy, deadline) {
                return gate;
            }
        }
        // Without a fleet nothing was awaited since `now`.
        #[cfg(not(feature = "redis"))]
        let probe = false;
        let now = if self.fleet() { Instant::now() } else { now };
        Gate::Open(self.budget.start(now, probe))
    }

    /// What the fleet said at `at`: its hold kept as this process's own,
    /// its budget as this process's; whether this send is the one let go
    /// first into a window that just reset.
    #[cfg(feature = "redis")]
    fn apply(&self, at: Instant, checked: &shared::Checked, shared: &shared::SharedHold) -> bool {
        let now = Instant::now();
        let since = now.saturating_duration_since(at);
        if let Some(found) = &checked.hold {
            let mut found = found.clone();
            found.left = found.left.saturating_sub(since);
            if !found.left.is_zero() {
                let _ = self.keep(found.hold(now, self.max_hold, shared.shown()));
            }
        }
        let left = |ms: Duration| ms.saturating_sub(since).min(self.max_hold);
        match checked.budget {
            shared::Fleet::Open => false,
            shared::Fleet::Probe => true,
            shared::Fleet::Took { left: n, reset } => {
                self.budget
                    .fleet_left(now, n, left(reset), &shared.shown_budget());
                false
            }
            shared::Fleet::Spent { reset } | shared::Fleet::Probing { reset } => {
                let reset = left(reset);
                if !reset.is_zero() {
                    self.budget.fleet_spent(now, reset, &shared.shown_budget());
                }
                false
            }
        }
    }

    /// A hold or a spent window in force at `now`, as the gate a send meets.
    fn closed(&self, now: Instant, policy: &RetryPolicy, deadline: Instant) -> Option<Gate> {
        if let Some(hold) = self.hold(now) {
            let until = hold.until;
            return Some(self.wait_or(now, until, policy, deadline, Gate::Held(hold)));
        }
        let spent = self.budget.spent(now)?;
        let until = spent.until;
        Some(self.wait_or(now, until, policy, deadline, Gate::Spent(spent)))
    }

    /// A wait until `until` when the policy and the deadline cover it (a
    /// member of a fleet drawing its own delay past it, within both), else
    /// `refused`.
    fn wait_or(
        &self,
        now: Instant,
        until: Instant,
        policy: &RetryPolicy,
        deadline: Instant,
        refused: Gate,
    ) -> Gate {
        let left = until.saturating_duration_since(now);
        if !(policy.attempts() > 1 && left <= policy.waits_for() && until < deadline) {
            return refused;
        }
        if !self.fleet() {
            return Gate::Wait(until);
        }
        let spread = u64::try_from(REOPEN_SPREAD.as_micros()).unwrap_or(0);
        let drawn = later(until, Duration::from_micros(fastrand::u64(0..=spread)));
        let bound = later(now, policy.waits_for()).min(deadline);
        Gate::Wait(drawn.min(bound).max(until))
    }

    /// Whether this transport is a member of a fleet (a shared hold).
    fn fleet(&self) -> bool {
        #[cfg(feature = "redis")]
        let fleet = self.shared.is_some();
        #[cfg(not(feature = "redis"))]
        let fleet = false;
        fleet
    }

    /// Hands the fleet `hold`, which this process started or lengthened
    /// (what [`Limits::observe`] returned): its end in Redis only grows.
    /// The send waits for the write no longer than the shared hold's wait;
    /// a write that takes longer goes on in the background, so that a Redis
    /// slow to answer is still told.
    pub(crate) async fn share(&self, hold: &Hold) {
        #[cfg(feature = "redis")]
        if let Some(shared) = &self.shared {
            let left = hold.until.saturating_duration_since(Instant::now());
            let wait = shared.wait();
            let shared = shared.clone();
            let record = shared::Record::of(hold);
            let write = tokio::spawn(async move { shared.extend(left, &record).await });
            let _ = tokio::time::timeout(wait, write).await;
        }
        #[cfg(not(feature = "redis"))]
        let _ = hold;
    }

    /// What an attempt's outcome starts: a hold after a `429` or `503` with
    /// a retry hint (unless it names the account's credit, which no wait
    /// mends) or an answer whose rate-limit fields say nothing is left; a
    /// latch after the engine answered `402`, `401` or `403`. The hold it
    /// started or lengthened, if any, for [`Limits::share`].
    #[must_use = "a hold this process started is shared with the fleet"]
    pub(crate) fn observe(&self, now: Instant, seen: Seen<'_>, ticket: &Ticket) -> Option<Hold> {
        match seen {
            Seen::Answer { fields } => {
                if self.respect
                    && let Some(left) = &fields.budget
                {
                    self.budget.learn(now, left, ticket, self.max_hold);
                    #[cfg(feature = "redis")]
                    self.probed(ticket);
                }
                fields.exhausted.as_ref().and_then(|left| {
                    self.hold_for(
                        now,
                        left.reset,
                        format!(
                            "the rate-limit fields of an answer, which said none was left of its {} window",
                            left.what
                        ),
                    )
                })
            }
            Seen::Refused(refusal, generation) => {
                let mut started = None;
                if let (Some(wait), Some(status @ (429 | 503))) =
                    (refusal.retry_after(), refusal.status())
                    && refusal.cause() != Cause::EngineOutOfCredit
                {
                    started = self.hold_for(now, wait, format!("HTTP {status}"));
                }
                if let Some(duration) = self.latch_for
                    && refusal.status().is_some()
                    && matches!(refusal.cause(), Cause::NoEngine | Cause::EngineOutOfCredit)
                {
                    self.latch(now, duration, refusal, generation);
                }
                started
            }
        }
    }

    /// The answer of the send the fleet let go first into a window that
    /// just reset is written to the fleet at once (in the background): the
    /// others wait on it.
    #[cfg(feature = "redis")]
    fn probed(&self, ticket: &Ticket) {
        let Some(shared) = self.shared.as_ref().filter(|_| ticket.probe) else {
            return;
        };
        let Some(set) = self.budget.pending(Instant::now()) else {
            return;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let ask = shared::Ask {
                take: false,
                set: Some(set),
            };
            let _ = shared.ask(ask).await;
        });
    }

    /// The hold in force at `now`, if any (none when limits are not
    /// respected).
    fn hold(&self, now: Instant) -> Option<Hold> {
        if !self.respect {
            return None;
        }
        let hold = self.hold.lock_unpoisoned();
        hold.as_ref().filter(|hold| hold.until > now).cloned()
    }

    /// Holds every send until `now + wait` (at most the ceiling), unless a
    /// longer hold is in force; the hold, when it is the new one.
    fn hold_for(&self, now: Instant, wait: Duration, why: String) -> Option<Hold> {
        if !self.respect {
            return None;
        }
        let hold = Hold::cut(now, wait, self.max_hold, SystemTime::now(), wait, why);
        self.keep(hold)
    }

    /// Keeps `hold` unless one that ends no sooner is in force; `hold`,
    /// when it was kept.
    fn keep(&self, new: Hold) -> Option<Hold> {
        let mut hold = self.hold.lock_unpoisoned();
        if hold.as_ref().is_none_or(|held| held.until < new.until) {
            *hold = Some(new.clone());
            Some(new)
        } else {
            None
        }
    }

    /// [`Limits::latched`] now, the clock read only when a latch is
    /// configured.
    pub(crate) fn latched_now(&self, generation: u64) -> Option<Latched> {
        self.latch_for?;
        self.latched(Instant::now(), generation)
    }

    /// The latched refusal in force at `now` for the token of `generation`,
    /// if any: a latch belongs to the token it judged, and a newer token (a
    /// file that rotated) clears it.
    pub(crate) fn latched(&self, now: Instant, generation: u64) -> Option<Latched> {
        // Only a latch that is set latches: with none, no send waits on the
        // lock.
        self.latch_for?;
        let mut latch = self.latch.lock_unpoisoned();
        if latch
            .as_ref()
            .is_some_and(|latched| latched.generation < generation)
        {
            *latch = None;
        }
        latch
            .as_ref()
            .filter(|latched| latched.until > now)
            .cloned()
    }

    /// Repeats `refusal` without sending until `now + duration`, for the
    /// token of `generation`. A rejection of an older token, arriving late
    /// from a send that was in flight when the file rotated, never replaces
    /// the latch of a newer one (which the next send would then clear, and
    /// send the rejected token again).
    fn latch(&self, now: Instant, duration: Duration, refusal: &Refusal, generation: u64) {
        let mut latch = self.latch.lock_unpoisoned();
        if latch
            .as_ref()
            .is_some_and(|latched| latched.generation > generation)
        {
            return;
        }
        *latch = Some(Latched {
            until: later(now, duration),
            at: SystemTime::now(),
            refusal: refusal.clone(),
            generation,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(limits: &Limits) -> Ticket {
        limits.budget.start(Instant::now(), false)
    }

    fn exhausted(reset: Duration) -> Fields {
        Fields {
            budget: None,
            exhausted: Some(crate::refusal::evidence::retry::Left {
                what: "requests",
                remaining: 0,
                limit: None,
                reset,
                header: "ratelimit",
            }),
        }
    }

    fn over_quota(status: u16, wait: u64) -> Refusal {
        Refusal::new(Cause::EngineOverQuota, "r", "CHANT_BEHAVIOUR_TOKEN", None)
            .with_status(status)
            .with_retry_after(Duration::from_secs(wait))
    }

    #[test]
    fn a_late_rejection_of_an_older_token_leaves_the_newer_tokens_latch() {
        let limits = Limits::new(true, Some(Duration::from_secs(60)), DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let rejected =
            Refusal::new(Cause::NoEngine, "r", "CHANT_BEHAVIOUR_TOKEN", None).with_status(401);
        let _ = limits.observe(now, Seen::Refused(&rejected, 2), &ticket(&limits));
        let _ = limits.observe(now, Seen::Refused(&rejected, 1), &ticket(&limits));
        assert!(
            limits.latched(now, 2).is_some(),
            "the newer token stays latched"
        );
        assert!(limits.latched(now, 3).is_none(), "a newer token clears it");
    }

    #[test]
    fn a_longer_hold_is_kept_and_an_expired_one_is_none() {
        let limits = Limits::new(true, None, DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let _ = limits.observe(
            now,
            Seen::Refused(&over_quota(429, 10), 0),
            &ticket(&limits),
        );
        let _ = limits.observe(now, Seen::Refused(&over_quota(503, 1), 0), &ticket(&limits));
        let hold = limits.hold(now).expect("held");
        assert_eq!(hold.why, "HTTP 429");
        assert!(limits.hold(now + Duration::from_secs(11)).is_none());
    }

    #[test]
    fn a_hold_is_waited_out_only_within_the_policy_and_the_deadline() {
        let limits = Limits::new(true, None, DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let far = now + Duration::from_secs(60);
        assert!(limits.closed(now, &RetryPolicy::new(), far).is_none());
        let _ = limits.observe(now, Seen::Refused(&over_quota(429, 5), 0), &ticket(&limits));
        assert!(matches!(
            limits.closed(now, &RetryPolicy::new(), far),
            Some(Gate::Wait(_))
        ));
        assert!(matches!(
            limits.closed(now, &RetryPolicy::none(), far),
            Some(Gate::Held(_))
        ));
        let soon = now + Duration::from_secs(1);
        assert!(matches!(
            limits.closed(now, &RetryPolicy::new(), soon),
            Some(Gate::Held(_))
        ));
        let short = RetryPolicy::new().max_wait(Duration::from_secs(1));
        assert!(matches!(
            limits.closed(now, &short, far),
            Some(Gate::Held(_))
        ));
    }

    #[test]
    fn a_hint_past_the_ceiling_holds_for_the_ceiling_and_says_so() {
        let limits = Limits::new(true, None, Duration::from_secs(60));
        let now = Instant::now();
        let refusal = over_quota(429, u64::MAX);
        let _ = limits.observe(now, Seen::Refused(&refusal, 0), &ticket(&limits));
        let hold = limits.hold(now).expect("held");
        assert_eq!(hold.until, now + Duration::from_secs(60));
        assert_eq!(hold.asked, Duration::from_secs(u64::MAX));
        assert_eq!(hold.ceiling, Some(Duration::from_secs(60)));
        let fields = exhausted(Duration::MAX);
        let answer = Seen::Answer { fields: &fields };
        let unbounded = Limits::new(true, None, Duration::MAX);
        let _ = unbounded.observe(now, answer, &ticket(&unbounded));
    }

    #[test]
    fn limits_not_respected_never_hold() {
        let limits = Limits::new(false, None, DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let _ = limits.observe(
            now,
            Seen::Refused(&over_quota(429, 10), 0),
            &ticket(&limits),
        );
        let fields = exhausted(Duration::from_secs(10));
        let _ = limits.observe(now, Seen::Answer { fields: &fields }, &ticket(&limits));
        assert!(limits.hold(now).is_none());
    }

    #[test]
    fn out_of_credit_latches_and_never_holds() {
        let limits = Limits::new(true, Some(Duration::from_secs(5)), DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let refusal = Refusal::new(Cause::EngineOutOfCredit, "r", "X_TOKEN", None)
            .with_status(429)
            .with_retry_after(Duration::from_secs(10));
        let _ = limits.observe(now, Seen::Refused(&refusal, 0), &ticket(&limits));
        assert!(limits.hold(now).is_none());
        assert!(limits.latched(now, 0).is_some());
        assert!(limits.latched(now + Duration::from_secs(6), 0).is_none());
        let _ = limits.observe(now, Seen::Refused(&refusal, 0), &ticket(&limits));
        assert!(
            limits.latched(now, 1).is_none(),
            "a new token clears the latch"
        );
        assert!(limits.latched(now, 0).is_none(), "and it stays cleared");
    }
}
