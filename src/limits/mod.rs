//! The engine's limits, respected by every clone of a transport: the one
//! place that says why a send was held.
//!
//! A `429` with a retry hint says the account's window is spent; sending
//! again before it passes costs the engine a request and the account its
//! standing, and a predictor with many tasks would do it many times at
//! once. So the hint becomes a **hold** shared by every clone: a send
//! before the window ends is not sent. An answer whose rate-limit fields say
//! nothing is left holds the same way, with one difference: that answer was
//! not refused, and its fields may be wrong or misread (an engine once
//! wrote a Unix time where a duration was expected, and held a fleet for a
//! day). So a window an answer's fields closed, a hold or a spent budget,
//! lets one send through every [`SCOUT_EVERY`] while it lasts, a **scout**,
//! whose answer replaces what the fields said: a wrong field costs a
//! minute, not a day. A `429`'s hint is the engine refusing, and stands.
//! A **latch** (opt-in) does the same
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
//! With a fleet ([`fleet`]: with the `redis` feature and a shared hold, in
//! Redis), the hold and the budget are kept there too: [`Limits::admit`]
//! checks the fleet's hold and takes one from the fleet's budget in one
//! exchange before each attempt (carrying the latest figure this process
//! read), and
//! [`Limits::share`] hands the fleet a hold this process started, or what
//! a scout's answer said. When a window the fleet waited on ends, its
//! members resume spread over [`REOPEN_SPREAD`], each its own draw, so a
//! small quota is not spent at once by whoever wakes first. The fleet has
//! one scout at a time, which Redis lets go: a member held by a window an
//! answer's fields closed asks the fleet before each send, and the first
//! answer that says there is room reopens every member.
//!
//! The limits read answers' rate-limit fields ([`dialects`]) and know of a
//! refusal only what [`Refused`] asks of it: the refusal's own module says
//! that of each refusal, and words what the limits keep ([`hold`]).

mod budget;
pub(crate) mod dialects;
pub(crate) mod fleet;
pub(crate) mod hold;
#[cfg(feature = "redis")]
pub(crate) mod redis;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use self::budget::Budget;
pub(crate) use self::budget::{InFlight, Pass};
use self::dialects::{Left, RateFields};
use self::fleet::{Checked, Fleet, LATE, Record, Turn};
use self::hold::{Hold, Latched, Spent};
use crate::clock::later;
use crate::lock::Unpoisoned;
use crate::retry::RetryPolicy;

/// The longest a member of a fleet waits past the end of a window it
/// waited on, at most: each draws its own delay from zero to this (within
/// its deadline and its policy's `max_wait`).
pub(crate) const REOPEN_SPREAD: Duration = Duration::from_millis(100);

/// How often a window an answer's fields closed lets one send through, to
/// check them, unless the transport is told otherwise (its tests are).
pub(crate) const SCOUT_EVERY: Duration = Duration::from_secs(60);

/// What one attempt came to, as the limits see it.
pub(crate) enum Observed<'a, R> {
    /// An answer, and what its rate-limit fields said.
    Answer { fields: &'a RateFields },
    /// A refusal the engine's answer (or its absence) gave, to a send with
    /// the token of this generation (see `token::file`).
    Refused(&'a R, u64),
}

/// What the limits read of a refusal an attempt came to: whether it starts
/// a hold or a latch. The refusal's own module says it of each refusal; a
/// latch keeps the refusal itself, to repeat it.
pub(crate) trait Refused: Clone + fmt::Debug + Send + Sync {
    /// The status the engine answered with, when it answered.
    fn status(&self) -> Option<u16>;
    /// How long the engine asked the caller to wait, when it did.
    fn wait_asked(&self) -> Option<Duration>;
    /// Whether a wait can mend it: not when it names the account's credit.
    fn mended_by_waiting(&self) -> bool;
    /// Whether the engine judged the token or the account (a `402`, `401`
    /// or `403`): what a latch repeats.
    fn judged_the_account(&self) -> bool;
    /// Whether the engine held the caller back for a while, whatever its
    /// status (a `401` or `403` with a retry hint: an address or a key
    /// banned until then): a hold, like a hinted `429`.
    fn banned(&self) -> bool;
}

/// What a send meets before it goes.
pub(crate) enum Admission {
    /// Nothing holds it, or it goes as a scout: it goes, in flight until
    /// its [`InFlight`] drops.
    Open(InFlight),
    /// A hold or a spent window the send may wait out: its policy's
    /// `max_wait` and its deadline both cover it.
    Wait(Instant),
    /// A hold the send may not wait out: it is refused, not sent.
    Held(Hold),
    /// A spent requests window the send may not wait out: refused, not
    /// sent.
    Spent(Spent),
}

/// What an attempt's outcome gives the fleet to know (see
/// [`Limits::share`]).
#[derive(Clone, Debug)]
pub(crate) enum Share {
    /// A hold this process started or lengthened.
    Hold(Hold),
    /// A scout's answer: the hold its fields started, if any, replaces any
    /// an answer's fields started before, and its figure the budget's.
    Correction(Option<Hold>),
}

/// What keeps a send from going at some instant.
enum Closed {
    /// A hold a refusal asked for: it stands.
    Asked(Hold),
    /// A hold an answer's fields started: a scout may go through.
    Said(Hold),
    /// A spent requests window: a scout may go through.
    Spent(Spent),
}

impl Closed {
    fn until(&self) -> Instant {
        match self {
            Closed::Asked(hold) | Closed::Said(hold) => hold.until,
            Closed::Spent(spent) => spent.until,
        }
    }

    /// What a send that may not wait it out meets.
    fn refusal(self) -> Admission {
        match self {
            Closed::Asked(hold) | Closed::Said(hold) => Admission::Held(hold),
            Closed::Spent(spent) => Admission::Spent(spent),
        }
    }
}

/// The holds in force, and the next scout.
#[derive(Debug, Default)]
struct Standing {
    /// Asked for by a `429` or `503` with a hint.
    refused: Option<Hold>,
    /// Started by an answer's rate-limit fields.
    said: Option<Hold>,
    /// When the next scout may go, and until when that stands.
    scout: Option<Lease>,
}

/// The next scout: it may go at `due`; past `ends` (which no window
/// outlives) a window met is a new one, and the lease is taken anew.
#[derive(Clone, Copy, Debug)]
struct Lease {
    due: Instant,
    ends: Instant,
}

/// The hold and the latch of one transport and its clones, the latch
/// repeating refusals of type `R`.
#[derive(Debug)]
pub(crate) struct Limits<R> {
    respect: bool,
    latch_for: Option<Duration>,
    max_hold: Duration,
    scout_every: Duration,
    holds: Mutex<Standing>,
    latch: Mutex<Option<Latched<R>>>,
    budget: Budget,
    /// The fleet's hold and budget, when the transport has one.
    fleet: Option<Arc<dyn Fleet>>,
}

/// The longest hold when none is set: a day. An engine (or anyone on the
/// path) that asks for a week, or for 10^35 seconds, must not brick a
/// predictor until someone restarts it.
pub(crate) const DEFAULT_MAX_HOLD: Duration = Duration::from_secs(24 * 3600);

impl<R: Refused> Limits<R> {
    /// Limits that hold after the engine asks to wait when `respect` is on,
    /// for at most `max_hold`, and latch for `latch_for` after a `402`,
    /// `401` or `403` when it is set; a window an answer's fields closed
    /// lets a scout through every `scout_every`; kept in `fleet` as well,
    /// when there is one.
    pub(crate) fn new(
        respect: bool,
        latch_for: Option<Duration>,
        max_hold: Duration,
        scout_every: Duration,
        fleet: Option<Arc<dyn Fleet>>,
    ) -> Limits<R> {
        Limits {
            respect,
            latch_for,
            max_hold,
            scout_every,
            holds: Mutex::new(Standing::default()),
            latch: Mutex::new(None),
            budget: Budget::default(),
            fleet,
        }
    }

    /// What an attempt meets before it goes, at the moment it would go
    /// (`now`, which the caller read): a hold or a spent window it may
    /// wait out ([`Admission::Wait`]) or that refuses it, or leave to go,
    /// with one taken from the budget. A window an answer's fields closed lets
    /// it go as a scout when one is due. With a shared hold, the fleet's
    /// hold and budget are asked in one round trip within the shared
    /// hold's wait (a Redis that does not answer in time changes nothing
    /// now; its late answer is used by the next attempt), and the fleet
    /// decides which send scouts; a hold a refusal asked for is not asked
    /// about.
    pub(crate) async fn admit(
        &self,
        policy: &RetryPolicy,
        deadline: Instant,
        now: Instant,
    ) -> Admission {
        if !self.respect {
            return Admission::Open(self.budget.start(now, Pass::Open));
        }
        if let Some(hold) = self.refused(now) {
            let until = hold.until;
            return self.wait_or(now, until, policy, deadline, Admission::Held(hold));
        }
        let (pass, asked) = self.ask_fleet().await;
        // Without a fleet nothing was awaited since `now`.
        let now = if self.fleet.is_some() {
            Instant::now()
        } else {
            now
        };
        if pass == Pass::Scout {
            return Admission::Open(self.budget.start(now, Pass::Scout));
        }
        let Some(closed) = self.closed(now) else {
            return Admission::Open(self.budget.start(now, pass));
        };
        // The fleet decides which of its members scouts; this process on
        // its own when the fleet did not answer.
        if !matches!(closed, Closed::Asked(_)) && !asked && self.scout_due(closed.until(), now) {
            return Admission::Open(self.budget.start(now, Pass::Scout));
        }
        let until = closed.until();
        self.wait_or(now, until, policy, deadline, closed.refusal())
    }

    /// Asks the fleet (when there is one) for its hold and one from its
    /// budget: how the send may go, and whether the fleet answered in time.
    async fn ask_fleet(&self) -> (Pass, bool) {
        let Some(fleet) = &self.fleet else {
            return (Pass::Open, false);
        };
        if let Some((at, late)) = fleet.late() {
            let _ = self.apply(at, &late, fleet.as_ref(), true);
        }
        let set = self.budget.pending(Instant::now());
        let Some(checked) = Arc::clone(fleet).take(set).await else {
            return (Pass::Open, false);
        };
        // While the fleet answers, it decides who scouts: this process's
        // own lease starts only when it stops answering.
        self.holds.lock_unpoisoned().scout = None;
        (
            self.apply(Instant::now(), &checked, fleet.as_ref(), false),
            true,
        )
    }

    /// What the fleet said at `at`: its hold kept as this process's own,
    /// its budget as this process's; how this send may go (first into a
    /// window that just reset, or as the fleet's scout). An answer that
    /// came `late` only adds to what holds this process.
    fn apply(&self, at: Instant, checked: &Checked, fleet: &dyn Fleet, late: bool) -> Pass {
        let now = Instant::now();
        let since = now.saturating_duration_since(at);
        let found = checked.hold.as_ref().and_then(|found| {
            let mut found = found.clone();
            found.left = found.left.saturating_sub(since);
            (!found.left.is_zero()).then(|| found.hold(now, self.max_hold, fleet.shown()))
        });
        match found {
            Some(hold) if !hold.said() => {
                let _ = self.keep(hold);
            }
            found => self.fleet_said(found, now, late),
        }
        let left = |ms: Duration| ms.saturating_sub(since).min(self.max_hold);
        match &checked.budget {
            Turn::Open => {
                if !late {
                    self.budget.fleet_open();
                }
                Pass::Open
            }
            Turn::First if !late => Pass::First,
            Turn::Scout if !late => Pass::Scout,
            Turn::First | Turn::Scout => Pass::Open,
            Turn::Took { left: n, reset } => {
                self.budget
                    .fleet_left(now, *n, left(*reset), &fleet.shown_budget(), late);
                Pass::Open
            }
            Turn::Spent { reset, field } => {
                let reset = left(*reset);
                if !reset.is_zero() {
                    self.budget
                        .fleet_spent(now, reset, &fleet.shown_budget(), field.clone());
                }
                Pass::Open
            }
            Turn::AfterFirst { reset } => {
                let reset = left(*reset);
                if !reset.is_zero() {
                    self.budget
                        .fleet_spent(now, reset, &fleet.shown_budget(), None);
                }
                Pass::Open
            }
        }
    }

    /// The fleet holds `found` of the holds an answer's fields started
    /// (or none): this process holds what the fleet holds, since a scout's
    /// answer may have replaced or lifted it. A hold of this process's own
    /// that the fleet may not have been told yet (its write not answered,
    /// and begun less than [`LATE`] ago) is kept; so is one the fleet holds
    /// too. An answer that came `late` only adds.
    fn fleet_said(&self, found: Option<Hold>, now: Instant, late: bool) {
        let mut holds = self.holds.lock_unpoisoned();
        let own = holds.said.as_ref().filter(|held| {
            let untold = !held.written && later(held.learned, LATE) > now;
            let same = |found: &Hold| Record::of(found) == Record::of(held);
            held.until > now && held.fleet.is_none() && (untold || found.as_ref().is_some_and(same))
        });
        match (own, found) {
            (Some(_), None) => {}
            (Some(own), Some(found)) if own.until >= found.until => {}
            (_, found) if late => {
                if let Some(found) = found
                    && holds
                        .said
                        .as_ref()
                        .is_none_or(|held| held.until < found.until)
                {
                    holds.said = Some(found);
                }
            }
            (_, found) => holds.said = found,
        }
    }

    /// The fleet answered the write of the hold this process learned at
    /// `learned`: from now on the fleet's word on it is this process's.
    fn written(&self, learned: Instant) {
        let mut holds = self.holds.lock_unpoisoned();
        if let Some(said) = holds.said.as_mut().filter(|said| said.learned == learned) {
            said.written = true;
        }
    }

    /// The hold in force at `now` that a refusal asked for, if any (none
    /// when limits are not respected).
    fn refused(&self, now: Instant) -> Option<Hold> {
        if !self.respect {
            return None;
        }
        let holds = self.holds.lock_unpoisoned();
        holds
            .refused
            .as_ref()
            .filter(|hold| hold.until > now)
            .cloned()
    }

    /// What keeps a send from going at `now`, if anything: a hold a
    /// refusal asked for first, then one an answer's fields started, then
    /// a spent window.
    fn closed(&self, now: Instant) -> Option<Closed> {
        if !self.respect {
            return None;
        }
        {
            let holds = self.holds.lock_unpoisoned();
            let held = |hold: &Option<Hold>| hold.as_ref().filter(|hold| hold.until > now).cloned();
            if let Some(hold) = held(&holds.refused) {
                return Some(Closed::Asked(hold));
            }
            if let Some(hold) = held(&holds.said) {
                return Some(Closed::Said(hold));
            }
        }
        self.budget.spent(now).map(Closed::Spent)
    }

    /// Whether a scout may go at `now` through the window that ends at
    /// `until`: one every `scout_every`, the first that long after a send
    /// first met the window. The lease lasts two intervals at most, and no
    /// longer than the window it was taken in: a scout's answer that closes
    /// the window again keeps it (the next scout a minute after this one),
    /// and a window met after it is taken anew.
    fn scout_due(&self, until: Instant, now: Instant) -> bool {
        let mut holds = self.holds.lock_unpoisoned();
        let lease = Lease {
            due: later(now, self.scout_every),
            ends: later(now, self.scout_every.saturating_mul(2)).min(until),
        };
        match holds.scout {
            Some(held) if held.ends > now => {
                let go = held.due <= now;
                if go {
                    holds.scout = Some(lease);
                }
                go
            }
            _ => {
                holds.scout = Some(lease);
                false
            }
        }
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
        refused: Admission,
    ) -> Admission {
        let left = until.saturating_duration_since(now);
        if !(policy.attempts() > 1 && left <= policy.waits_for() && until < deadline) {
            return refused;
        }
        if self.fleet.is_none() {
            return Admission::Wait(until);
        }
        let spread = u64::try_from(REOPEN_SPREAD.as_micros()).unwrap_or(0);
        let drawn = later(until, Duration::from_micros(fastrand::u64(0..=spread)));
        let bound = later(now, policy.waits_for()).min(deadline);
        Admission::Wait(drawn.min(bound).max(until))
    }

    /// Hands the fleet what [`Limits::observe`] returned: a hold this
    /// process started or lengthened (its end in Redis only grows), or a
    /// scout's answer (which replaces what answers' fields said). The send
    /// waits for the write no longer than the fleet's wait; a write that
    /// takes longer goes on in the background, so that a fleet slow to
    /// answer is still told.
    pub(crate) async fn share(&self, share: &Share) {
        let Some(fleet) = &self.fleet else {
            return;
        };
        let now = Instant::now();
        let record = |hold: &Hold| {
            let left = hold.until.saturating_duration_since(now);
            (left, Record::of(hold))
        };
        let (said, write) = match share {
            Share::Hold(hold) => {
                let (left, record) = record(hold);
                let write = Arc::clone(fleet).extend(left, record);
                (hold.said().then_some(hold.learned), write)
            }
            Share::Correction(hold) => {
                let said = hold.as_ref().map(|hold| hold.learned);
                let hold = hold.as_ref().map(record);
                let set = self.budget.pending(now);
                (said, Arc::clone(fleet).correct(set, hold))
            }
        };
        let write = tokio::spawn(write);
        let answered = tokio::time::timeout(fleet.wait(), write).await;
        if let (Some(learned), Ok(Ok(true))) = (said, answered) {
            self.written(learned);
        }
    }

    /// What an attempt's outcome starts: a hold after a `429` or `503` with
    /// a retry hint, or a ban that ends (unless it names the account's credit, which no wait
    /// mends) or an answer whose rate-limit fields say nothing is left; a
    /// latch after the engine answered `402`, `401` or `403`. A scout's
    /// answer replaces whatever answers' fields said before. What the fleet
    /// is to be told, if anything, for [`Limits::share`].
    #[must_use = "what this process learned is shared with the fleet"]
    pub(crate) fn observe(
        &self,
        now: Instant,
        observed: Observed<'_, R>,
        ticket: &InFlight,
    ) -> Option<Share> {
        match observed {
            Observed::Answer { fields } => {
                if !self.respect {
                    return None;
                }
                // The first send into a window that just reset, and a
                // scout, are answered for the window: what their answer
                // says replaces what answers said before.
                let scout = matches!(ticket.pass, Pass::Scout | Pass::First);
                match &fields.budget {
                    Some(left) => self.budget.learn(now, left, ticket, self.max_hold),
                    None if scout => self.budget.forget(),
                    None => {}
                }
                let hold = fields
                    .exhausted
                    .as_ref()
                    .map(|left| self.said_hold(now, left));
                if scout {
                    let mut holds = self.holds.lock_unpoisoned();
                    holds.said.clone_from(&hold);
                    return Some(Share::Correction(hold));
                }
                hold.and_then(|hold| self.keep(hold)).map(Share::Hold)
            }
            Observed::Refused(refusal, generation) => {
                let mut started = None;
                if self.respect
                    && let (Some(wait), Some(status)) = (refusal.wait_asked(), refusal.status())
                    && (matches!(status, 429 | 503) || refusal.banned())
                    && refusal.mended_by_waiting()
                {
                    let hold = Hold::cut(
                        now,
                        wait,
                        self.max_hold,
                        SystemTime::now(),
                        wait,
                        format!("HTTP {status}"),
                    );
                    started = self.keep(hold).map(Share::Hold);
                }
                if let Some(duration) = self.latch_for
                    && refusal.status().is_some()
                    && refusal.judged_the_account()
                {
                    self.latch(now, duration, refusal, generation);
                }
                started
            }
        }
    }

    /// The hold an answer's fields start when they say nothing is left of
    /// `left`'s window, read at `now`: cut to the ceiling, and quoting the
    /// field it was read from.
    fn said_hold(&self, now: Instant, left: &Left) -> Hold {
        let why = format!(
            "the rate-limit fields of an answer, which said none was left of its {} window",
            left.unit.counted()
        );
        let hold = Hold::cut(
            now,
            left.reset,
            self.max_hold,
            SystemTime::now(),
            left.reset,
            why,
        );
        Hold {
            field: Some(left.field.clone()),
            ..hold
        }
    }

    /// Keeps `new` (in its place: asked for by a refusal, or started by an
    /// answer's fields) unless one that ends no sooner is in force there;
    /// `new`, when it was kept.
    fn keep(&self, new: Hold) -> Option<Hold> {
        let mut holds = self.holds.lock_unpoisoned();
        let slot = if new.said() {
            &mut holds.said
        } else {
            &mut holds.refused
        };
        if slot.as_ref().is_none_or(|held| held.until < new.until) {
            *slot = Some(new.clone());
            Some(new)
        } else {
            None
        }
    }

    /// [`Limits::latched`] now, the clock read only when a latch is
    /// configured.
    pub(crate) fn latched_now(&self, generation: u64) -> Option<Latched<R>> {
        self.latch_for?;
        self.latched(Instant::now(), generation)
    }

    /// The latched refusal in force at `now` for the token of `generation`,
    /// if any: a latch belongs to the token it judged, and a newer token (a
    /// file that rotated) clears it.
    pub(crate) fn latched(&self, now: Instant, generation: u64) -> Option<Latched<R>> {
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
    fn latch(&self, now: Instant, duration: Duration, refusal: &R, generation: u64) {
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
    use reqwest::header::HeaderValue;

    use super::*;
    use crate::limits::dialects::{Quoted, Unit};

    /// A refusal as the limits read it: the engine's status and the wait
    /// it asked, and whether it named the account's credit or judged the
    /// token.
    #[derive(Clone, Debug, Default)]
    struct Said {
        status: Option<u16>,
        wait: Option<Duration>,
        out_of_credit: bool,
        rejected: bool,
    }

    impl Refused for Said {
        fn status(&self) -> Option<u16> {
            self.status
        }

        fn wait_asked(&self) -> Option<Duration> {
            self.wait
        }

        fn mended_by_waiting(&self) -> bool {
            !self.out_of_credit
        }

        fn judged_the_account(&self) -> bool {
            self.out_of_credit || self.rejected
        }

        fn banned(&self) -> bool {
            false
        }
    }

    const MINUTE: Duration = Duration::from_secs(60);

    fn respecting(latch_for: Option<Duration>, max_hold: Duration) -> Limits<Said> {
        Limits::new(true, latch_for, max_hold, SCOUT_EVERY, None)
    }

    fn ticket(limits: &Limits<Said>) -> InFlight {
        limits.budget.start(Instant::now(), Pass::Open)
    }

    /// A window of `remaining` requests for `reset`, in OpenAI's fields.
    fn left(remaining: u64, reset: Duration) -> Left {
        let value = HeaderValue::from_static("1796407068");
        Left {
            unit: Unit::Requests,
            remaining,
            limit: None,
            reset,
            field: Quoted::new("x-ratelimit-reset-requests", value),
        }
    }

    fn exhausted(reset: Duration) -> RateFields {
        RateFields {
            budget: None,
            exhausted: Some(left(0, reset)),
        }
    }

    impl Limits<Said> {
        /// The hold in force at `now`, of either kind.
        fn hold(&self, now: Instant) -> Option<Hold> {
            match self.closed(now)? {
                Closed::Asked(hold) | Closed::Said(hold) => Some(hold),
                Closed::Spent(_) => None,
            }
        }

        /// The gate a send meets at `now` when something keeps it from
        /// going.
        fn gate(&self, now: Instant, policy: &RetryPolicy, deadline: Instant) -> Option<Admission> {
            let closed = self.closed(now)?;
            let until = closed.until();
            Some(self.wait_or(now, until, policy, deadline, closed.refusal()))
        }

        /// What a send with no retry policy meets at `now`: `Some(pass)`
        /// when it goes, `None` when it is held.
        async fn goes(&self, now: Instant) -> Option<Pass> {
            let far = later(now, 2 * DEFAULT_MAX_HOLD);
            match self.admit(&RetryPolicy::none(), far, now).await {
                Admission::Open(ticket) => Some(ticket.pass),
                Admission::Held(_) | Admission::Spent(_) => None,
                Admission::Wait(_) => panic!("no policy, no wait"),
            }
        }
    }

    fn over_quota(status: u16, wait: u64) -> Said {
        Said {
            status: Some(status),
            wait: Some(Duration::from_secs(wait)),
            ..Said::default()
        }
    }

    #[test]
    fn a_late_rejection_of_an_older_token_leaves_the_newer_tokens_latch() {
        let limits = respecting(Some(Duration::from_secs(60)), DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let rejected = Said {
            status: Some(401),
            rejected: true,
            ..Said::default()
        };
        let _ = limits.observe(now, Observed::Refused(&rejected, 2), &ticket(&limits));
        let _ = limits.observe(now, Observed::Refused(&rejected, 1), &ticket(&limits));
        assert!(
            limits.latched(now, 2).is_some(),
            "the newer token stays latched"
        );
        assert!(limits.latched(now, 3).is_none(), "a newer token clears it");
    }

    #[test]
    fn a_longer_hold_is_kept_and_an_expired_one_is_none() {
        let limits = respecting(None, DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let _ = limits.observe(
            now,
            Observed::Refused(&over_quota(429, 10), 0),
            &ticket(&limits),
        );
        let _ = limits.observe(
            now,
            Observed::Refused(&over_quota(503, 1), 0),
            &ticket(&limits),
        );
        let hold = limits.hold(now).expect("held");
        assert_eq!(hold.why, "HTTP 429");
        assert!(limits.hold(now + Duration::from_secs(11)).is_none());
    }

    #[test]
    fn a_hold_is_waited_out_only_within_the_policy_and_the_deadline() {
        let limits = respecting(None, DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let far = now + Duration::from_secs(60);
        assert!(limits.gate(now, &RetryPolicy::new(), far).is_none());
        let _ = limits.observe(
            now,
            Observed::Refused(&over_quota(429, 5), 0),
            &ticket(&limits),
        );
        assert!(matches!(
            limits.gate(now, &RetryPolicy::new(), far),
            Some(Admission::Wait(_))
        ));
        assert!(matches!(
            limits.gate(now, &RetryPolicy::none(), far),
            Some(Admission::Held(_))
        ));
        let soon = now + Duration::from_secs(1);
        assert!(matches!(
            limits.gate(now, &RetryPolicy::new(), soon),
            Some(Admission::Held(_))
        ));
        let short = RetryPolicy::new().max_wait(Duration::from_secs(1));
        assert!(matches!(
            limits.gate(now, &short, far),
            Some(Admission::Held(_))
        ));
    }

    #[test]
    fn a_hint_past_the_ceiling_holds_for_the_ceiling_and_says_so() {
        let limits = respecting(None, Duration::from_secs(60));
        let now = Instant::now();
        let refusal = over_quota(429, u64::MAX);
        let _ = limits.observe(now, Observed::Refused(&refusal, 0), &ticket(&limits));
        let hold = limits.hold(now).expect("held");
        assert_eq!(hold.until, now + Duration::from_secs(60));
        assert_eq!(hold.asked, Duration::from_secs(u64::MAX));
        assert_eq!(hold.ceiling, Some(Duration::from_secs(60)));
        let fields = exhausted(Duration::MAX);
        let answer = Observed::Answer { fields: &fields };
        let unbounded = respecting(None, Duration::MAX);
        let _ = unbounded.observe(now, answer, &ticket(&unbounded));
    }

    #[test]
    fn limits_not_respected_never_hold() {
        let limits = Limits::<Said>::new(false, None, DEFAULT_MAX_HOLD, SCOUT_EVERY, None);
        let now = Instant::now();
        let _ = limits.observe(
            now,
            Observed::Refused(&over_quota(429, 10), 0),
            &ticket(&limits),
        );
        let fields = exhausted(Duration::from_secs(10));
        let _ = limits.observe(now, Observed::Answer { fields: &fields }, &ticket(&limits));
        assert!(limits.hold(now).is_none());
    }

    #[test]
    fn out_of_credit_latches_and_never_holds() {
        let limits = respecting(Some(Duration::from_secs(5)), DEFAULT_MAX_HOLD);
        let now = Instant::now();
        let refusal = Said {
            out_of_credit: true,
            ..over_quota(429, 10)
        };
        let _ = limits.observe(now, Observed::Refused(&refusal, 0), &ticket(&limits));
        assert!(limits.hold(now).is_none());
        assert!(limits.latched(now, 0).is_some());
        assert!(limits.latched(now + Duration::from_secs(6), 0).is_none());
        let _ = limits.observe(now, Observed::Refused(&refusal, 0), &ticket(&limits));
        assert!(
            limits.latched(now, 1).is_none(),
            "a new token clears the latch"
        );
        assert!(limits.latched(now, 0).is_none(), "and it stays cleared");
    }

    /// Scouts through a window of ten minutes that an answer's fields
    /// closed: sends meet it at `start` and every ten seconds for three
    /// minutes; the instants at which one went as a scout. Each scout's
    /// answer says the same as the first.
    async fn scouts_in_three_minutes(
        limits: &Limits<Said>,
        start: Instant,
        said: &RateFields,
    ) -> Vec<Duration> {
        let mut scouts = Vec::new();
        for tick in 0..=18 {
            let now = start + Duration::from_secs(10 * tick);
            match limits.goes(now).await {
                Some(Pass::Scout) => {
                    scouts.push(now - start);
                    let scout = limits.budget.start(now, Pass::Scout);
                    let answer = Observed::Answer { fields: said };
                    let told = limits.observe(now, answer, &scout);
                    assert!(matches!(told, Some(Share::Correction(Some(_)))));
                }
                Some(pass) => panic!("sent at {tick}: {pass:?}"),
                None => {}
            }
        }
        scouts
    }

    #[tokio::test]
    async fn a_hold_an_answers_fields_started_lets_one_scout_through_a_minute() {
        let limits = respecting(None, DEFAULT_MAX_HOLD);
        let start = Instant::now();
        let said = exhausted(10 * MINUTE);
        let answer = Observed::Answer { fields: &said };
        let told = limits.observe(start, answer, &ticket(&limits));
        assert!(matches!(told, Some(Share::Hold(_))));
        let hold = limits.hold(start).expect("held");
        assert_eq!(
            hold.field.map(|field| field.to_string()).as_deref(),
            Some("x-ratelimit-reset-requests: 1796407068")
        );
        let scouts = scouts_in_three_minutes(&limits, start, &said).await;
        assert_eq!(scouts, [MINUTE, 2 * MINUTE, 3 * MINUTE]);
    }

    #[tokio::test]
    async fn a_spent_budget_an_answer_gave_lets_one_scout_through_a_minute() {
        let limits = respecting(None, DEFAULT_MAX_HOLD);
        let start = Instant::now();
        let said = RateFields {
            budget: Some(left(0, 10 * MINUTE)),
            exhausted: None,
        };
        let answer = Observed::Answer { fields: &said };
        assert!(limits.observe(start, answer, &ticket(&limits)).is_none());
        assert!(limits.budget.spent(start).is_some());
        let mut scouts = Vec::new();
        for tick in 0..=18 {
            let now = start + Duration::from_secs(10 * tick);
            if let Some(pass) = limits.goes(now).await {
                assert_eq!(pass, Pass::Scout, "at {tick}");
                scouts.push(now - start);
                let scout = limits.budget.start(now, Pass::Scout);
                let _ = limits.observe(now, Observed::Answer { fields: &said }, &scout);
            }
        }
        assert_eq!(scouts, [MINUTE, 2 * MINUTE, 3 * MINUTE]);
    }

    #[tokio::test]
    async fn a_scouts_answer_that_says_there_is_room_reopens_the_window() {
        for room in [
            RateFields {
                budget: Some(left(50, 10 * MINUTE)),
                exhausted: None,
            },
            RateFields::default(),
        ] {
            let limits = respecting(None, DEFAULT_MAX_HOLD);
            let start = Instant::now();
            let said = RateFields {
                budget: Some(left(0, 10 * MINUTE)),
                exhausted: Some(left(0, 10 * MINUTE)),
            };
            let _ = limits.observe(start, Observed::Answer { fields: &said }, &ticket(&limits));
            assert_eq!(limits.goes(start).await, None);
            let at = start + MINUTE;
            assert_eq!(limits.goes(at).await, Some(Pass::Scout));
            let scout = limits.budget.start(at, Pass::Scout);
            let told = limits.observe(at, Observed::Answer { fields: &room }, &scout);
            assert!(matches!(told, Some(Share::Correction(None))));
            drop(scout);
            for second in 1..=3 {
                let now = at + Duration::from_secs(second);
                assert_eq!(limits.goes(now).await, Some(Pass::Open), "{room:?}");
            }
        }
    }

    #[tokio::test]
    async fn a_hold_a_429_asked_for_lets_no_scout_through() {
        let limits = respecting(None, DEFAULT_MAX_HOLD);
        let start = Instant::now();
        let refusal = over_quota(429, 600);
        let _ = limits.observe(start, Observed::Refused(&refusal, 0), &ticket(&limits));
        for tick in 0..=18 {
            let now = start + Duration::from_secs(10 * tick);
            assert_eq!(limits.goes(now).await, None, "at {tick}");
        }
        // Beside a hold an answer's fields started, it still stands.
        let said = exhausted(10 * MINUTE);
        let _ = limits.observe(start, Observed::Answer { fields: &said }, &ticket(&limits));
        for tick in 0..=18 {
            let now = start + Duration::from_secs(10 * tick);
            assert_eq!(limits.goes(now).await, None, "at {tick}");
        }
    }
}
