//! The one deadline of a send: an instant, and the budget it was set from,
//! which is what a refusal names ("no answer within 2000 ms").

use std::time::Duration;

use tokio::time::Instant;

use crate::clock::{later, millis};

/// When a send must be over, and the budget that put it there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    at: Instant,
    budget: Duration,
}

impl Deadline {
    /// `budget` from `started`. A budget too large for the clock saturates
    /// to the furthest instant it can hold.
    pub(crate) fn new(started: Instant, budget: Duration) -> Deadline {
        Deadline {
            at: later(started, budget),
            budget,
        }
    }

    /// The instant itself.
    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// The budget in whole milliseconds, as refusals name it.
    pub(crate) fn ms(&self) -> u64 {
        millis(self.budget)
    }

    /// Whether something that ends at `end` would end before the deadline.
    pub(crate) fn allows(&self, end: Instant) -> bool {
        end < self.at
    }
}
