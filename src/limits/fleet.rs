//! The fleet: the limits kept outside the process, so that every process
//! that shares an account shares its hold and its budget. The limits hold
//! one as `Option<Arc<dyn Fleet>>`; its one implementation is Redis's
//! (`limits/redis/`, behind the cargo feature `redis`), and without it
//! there is none, and no code path asks.
//!
//! The fleet is advice and never a gate of its own: every exchange is
//! bounded by its wait, and one that does not answer in time changes
//! nothing now (the process keeps to its own limits; a late answer is used
//! by the next send). What is told to the fleet carries nothing of the
//! token: a hold's [`Record`] says what the engine asked, and a budget's
//! [`Remaining`] what it said was left.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::budget::Remaining;
use super::dialects::Quoted;
use super::hold::Hold;

/// How long an answer from the fleet is waited for in the background after
/// a send stopped waiting, and how long a write may take: past it, the
/// fleet has been told, or will not be.
pub(crate) const LATE: Duration = Duration::from_secs(2);

/// A fleet's exchange, bounded by its own wait; it owns what it needs, so
/// that a write can go on in the background.
pub(crate) type Exchange<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The fleet's hold and budget, as the limits ask and tell them.
pub(crate) trait Fleet: fmt::Debug + Send + Sync {
    /// For an attempt about to go: the fleet's hold in force, and one
    /// taken from its budget (or what it says instead), `set`, the latest
    /// figure this process read, written first; `None` when the fleet did
    /// not answer within its wait (its answer, when it comes, is
    /// [`Fleet::late`]'s).
    fn take(self: Arc<Self>, set: Option<Remaining>) -> Exchange<Option<Checked>>;

    /// The answer that came after its send stopped waiting, if one did
    /// since the last call, and when it came.
    fn late(&self) -> Option<(Instant, Checked)>;

    /// Makes the fleet's hold end no sooner than `left` from now, recording
    /// `record`: the end only ever grows. Whether the fleet answered.
    fn extend(self: Arc<Self>, left: Duration, record: Record) -> Exchange<bool>;

    /// Writes the answer of a scout (or of the first send into a window
    /// that just reset): `set`, its figure, replaces the budget (none drops
    /// it), a hold an answer's fields started is lifted, and `hold`, the
    /// one this answer's fields started, if any, is set in its place.
    /// Whether the fleet answered.
    fn correct(
        self: Arc<Self>,
        set: Option<Remaining>,
        hold: Option<(Duration, Record)>,
    ) -> Exchange<bool>;

    /// How long a send waits for the fleet.
    fn wait(&self) -> Duration;

    /// The fleet's hold as a refusal names it (`Redis host:port, key …`),
    /// concealed.
    fn shown(&self) -> String;

    /// The fleet's budget as a refusal names it, concealed.
    fn shown_budget(&self) -> String;
}

/// What the fleet answered: its hold in force, and what its budget said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) hold: Option<FleetHold>,
    pub(crate) budget: Turn,
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
    /// The field an answer said it in, as sent (see [`Hold::field`]).
    pub(crate) field: Option<Quoted>,
}

/// The fleet's hold in force: how long is left, as Redis counts it, and
/// what the process that set it recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FleetHold {
    pub(crate) left: Duration,
    pub(crate) record: Record,
}

/// What the fleet's budget said to an ask: whose turn it is. (Only a
/// fleet says it, and without the `redis` feature there is none.)
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) enum Turn {
    /// No budget: the engine sends no fields, or the window is long past.
    Open,
    /// One was taken for this send; `left` is left for `reset`.
    Took { left: u64, reset: Duration },
    /// Nothing is left for `reset`, as `field` said.
    Spent {
        reset: Duration,
        field: Option<Quoted>,
    },
    /// The window just reset, and this send goes first into it.
    First,
    /// The window just reset, and another send went first into it: its
    /// answer is due within `reset`.
    AfterFirst { reset: Duration },
    /// A window an answer's fields closed, and this send goes through it
    /// as the fleet's scout.
    Scout,
}

impl Record {
    /// What a hold of the process's own records for the fleet.
    pub(crate) fn of(hold: &Hold) -> Record {
        Record {
            why: hold.why.clone(),
            asked: hold.asked,
            asked_at: hold.asked_at,
            field: hold.field.clone(),
        }
    }
}

impl FleetHold {
    /// The fleet's hold as this process holds it at `now`, cut to its own
    /// ceiling as a hint of its own would be, `from` the shared hold as
    /// [`Fleet::shown`] names it.
    pub(crate) fn hold(&self, now: Instant, max_hold: Duration, from: String) -> Hold {
        let record = &self.record;
        let hold = Hold::cut(
            now,
            self.left,
            max_hold,
            record.asked_at,
            record.asked,
            record.why.clone(),
        );
        Hold {
            field: record.field.clone(),
            fleet: Some(from),
            ..hold
        }
    }
}
