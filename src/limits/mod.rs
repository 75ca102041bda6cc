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
//! [`Limits::observe`] decides what each attempt's outcome starts, and
//! [`Limits::gate`] what a send meets before it goes. Both are one `Mutex`
//! each, held only to copy a few fields out: a send that is not held never
//! waits on another.
//!
//! With the `redis` feature and a shared hold (`shared`), the hold is kept
//! in Redis too: [`Limits::consult`] takes in the fleet's hold before each
//! attempt, and [`Limits::share`] hands the fleet a hold this process
//! started. Without either, both do nothing.

#[cfg(feature = "redis")]
pub(crate) mod shared;

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::clock::later;
use crate::refusal::held::{Hold, Latched};
use crate::refusal::{Cause, Refusal};
use crate::retry::RetryPolicy;

/// What one attempt came to, as the limits see it.
pub(crate) enum Seen<'a> {
    /// An answer, and how long its rate-limit fields say nothing is left.
    Answer { exhausted: Option<Duration> },
    /// A refusal the engine's answer (or its absence) gave, to a send with
    /// the token of this generation (see `token::file`).
    Refused(&'a Refusal, u64),
}

/// What a send meets before it goes.
pub(crate) enum Gate {
    /// Nothing holds it.
    Open,
    /// A hold the send may wait out: its policy's `max_wait` and its
    /// deadline both cover it.
    Wait(Instant),
    /// A hold the send may not wait out: it is refused, not sent.
    Held(Hold),
}

/// The hold and the latch of one transport and its clones.
#[derive(Debug)]
pub(crate) struct Limits {
    respect: bool,
    latch_for: Option<Duration>,
    max_hold: Duration,
    hold: Mutex<Option<Hold>>,
    latch: Mutex<Option<Latched>>,
    /// The fleet's hold, in Redis.
    #[cfg(feature = "redis")]
    shared: Option<shared::SharedHold>,
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
            #[cfg(feature = "redis")]
            shared: None,
        }
    }

    /// These limits, with the fleet's hold kept in `shared` as well.
    #[cfg(feature = "redis")]
    pub(crate) fn with_shared(mut self, shared: shared::SharedHold) -> Limits {
        self.shared = Some(shared);
        self
    }

    /// Takes in the fleet's hold before an attempt: when limits are
    /// respected, no hold of the process's own is in force, and Redis
    /// answers within its wait with a hold, the process holds too. Redis
    /// that does not answer changes nothing (its warning is its own).
    pub(crate) async fn consult(&self) {
        #[cfg(feature = "redis")]
        {
            let Some(shared) = &self.shared else { return };
            if !self.respect || self.hold(Instant::now()).is_some() {
                return;
            }
            if let Some(found) = shared.check().await {
                let now = Instant::now();
                let hold = found.hold(now, self.max_hold, shared.shown());
                self.keep(hold);
            }
        }
    }

    /// Hands the fleet `hold`, which this process started or lengthened
    /// (what [`Limits::observe`] returned): its end in Redis only grows.
    pub(crate) async fn share(&self, hold: &Hold) {
        #[cfg(feature = "redis")]
        if let Some(shared) = &self.shared {
            let left = hold.until.saturating_duration_since(Instant::now());
            shared.extend(left, &shared::Record::of(hold)).await;
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
    pub(crate) fn observe(&self, now: Instant, seen: Seen<'_>) -> Option<Hold> {
        match seen {
            Seen::Answer { exhausted } => exhausted.and_then(|wait| {
                self.hold_for(
                    now,
                    wait,
                    "the rate-limit fields of an answer, which said none was left".to_owned(),
                )
            }),
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

    /// What a send meets at `now`: open, a hold it may wait out (with a
    /// retry policy of more than one attempt whose `max_wait` covers the
    /// time left, and a deadline after the hold ends), or a hold that
    /// refuses it.
    pub(crate) fn gate(&self, now: Instant, policy: &RetryPolicy, deadline: Instant) -> Gate {
        let Some(hold) = self.hold(now) else {
            return Gate::Open;
        };
        let left = hold.until.saturating_duration_since(now);
        let may_wait = policy.attempts() > 1 && left <= policy.waits_for() && hold.until < deadline;
        if may_wait {
            Gate::Wait(hold.until)
        } else {
            Gate::Held(hold)
        }
    }

    /// The hold in force at `now`, if any (none when limits are not
    /// respected).
    fn hold(&self, now: Instant) -> Option<Hold> {
        if !self.respect {
            return None;
        }
        let hold = self
            .hold
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        hold.as_ref().filter(|hold| hold.until > now).cloned()
    }

    /// Holds every send until `now + wait` (at most the ceiling), unless a
    /// longer hold is in force; the hold, when it is the new one.
    fn hold_for(&self, now: Instant, wait: Duration, why: String) -> Option<Hold> {
        if !self.respect {
            return None;
        }
        let hold = Hold {
            until: later(now, wait.min(self.max_hold)),
            asked_at: SystemTime::now(),
            asked: wait,
            ceiling: (wait > self.max_hold).then_some(self.max_hold),
            why,
            fleet: None,
        };
        self.keep(hold)
    }

    /// Keeps `hold` unless one that ends no sooner is in force; `hold`,
    /// when it was kept.
    fn keep(&self, new: Hold) -> Option<Hold> {
        let mut hold = self
            .hold
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if hold.as_ref().is_none_or(|held| held.until < new.until) {
            *hold = Some(new.clone());
            Some(new)
        } else {
            None
        }
    }

    /// The latched refusal in force at `now` for the token of `generation`,
    /// if any: a latch belongs to the token it judged, and a newer token (a
    /// file that rotated) clears it.
    pub(crate) fn latched(&self, now: Instant, generation: u64) -> Option<Latched> {
        let mut latch = self
            .latch
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
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
        let mut latch = self
            .latch
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
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
        let _ = limits.observe(now, Seen::Refused(&rejected, 2));
        let _ = limits.observe(now, Seen::Refused(&rejected, 1));
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
        let _ = limits.observe(now, Seen::Refused(&over_quota(429, 10), 0));
        let _ = limits.observe(now, Seen::Refused(&over_quota(503, 1), 0));
        let hold = limits.hold(now).expect("held");
        assert_eq!(hold.why, "HTTP 429");
        assert!(limits.hold(now + Duration::from_secs(11)).is_none());
    }

    #[test]
    fn a_hold_is_waited_out_only_within_the_policy_and_the_deadline() {
        let limits = Limits::new(true, None, DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let far = now + Duration::from_secs(60);
        assert!(matches!(
            limits.gate(now, &RetryPolicy::new(), far),
            Gate::Open
        ));
        let _ = limits.observe(now, Seen::Refused(&over_quota(429, 5), 0));
        assert!(matches!(
            limits.gate(now, &RetryPolicy::new(), far),
            Gate::Wait(_)
        ));
        assert!(matches!(
            limits.gate(now, &RetryPolicy::none(), far),
            Gate::Held(_)
        ));
        let soon = now + Duration::from_secs(1);
        assert!(matches!(
            limits.gate(now, &RetryPolicy::new(), soon),
            Gate::Held(_)
        ));
        let short = RetryPolicy::new().max_wait(Duration::from_secs(1));
        assert!(matches!(limits.gate(now, &short, far), Gate::Held(_)));
    }

    #[test]
    fn a_hint_past_the_ceiling_holds_for_the_ceiling_and_says_so() {
        let limits = Limits::new(true, None, Duration::from_secs(60));
        let now = Instant::now();
        let refusal = over_quota(429, u64::MAX);
        let _ = limits.observe(now, Seen::Refused(&refusal, 0));
        let hold = limits.hold(now).expect("held");
        assert_eq!(hold.until, now + Duration::from_secs(60));
        assert_eq!(hold.asked, Duration::from_secs(u64::MAX));
        assert_eq!(hold.ceiling, Some(Duration::from_secs(60)));
        let answer = Seen::Answer {
            exhausted: Some(Duration::MAX),
        };
        let _ = Limits::new(true, None, Duration::MAX).observe(now, answer);
    }

    #[test]
    fn limits_not_respected_never_hold() {
        let limits = Limits::new(false, None, DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let _ = limits.observe(now, Seen::Refused(&over_quota(429, 10), 0));
        let _ = limits.observe(
            now,
            Seen::Answer {
                exhausted: Some(Duration::from_secs(10)),
            },
        );
        assert!(limits.hold(now).is_none());
    }

    #[test]
    fn out_of_credit_latches_and_never_holds() {
        let limits = Limits::new(true, Some(Duration::from_secs(5)), DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let refusal = Refusal::new(Cause::EngineOutOfCredit, "r", "X_TOKEN", None)
            .with_status(429)
            .with_retry_after(Duration::from_secs(10));
        let _ = limits.observe(now, Seen::Refused(&refusal, 0));
        assert!(limits.hold(now).is_none());
        assert!(limits.latched(now, 0).is_some());
        assert!(limits.latched(now + Duration::from_secs(6), 0).is_none());
        let _ = limits.observe(now, Seen::Refused(&refusal, 0));
        assert!(
            limits.latched(now, 1).is_none(),
            "a new token clears the latch"
        );
        assert!(limits.latched(now, 0).is_none(), "and it stays cleared");
    }
}
