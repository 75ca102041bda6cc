//! What the limits keep of a window until it ends: a [`Hold`] the engine
//! asked for, a [`Latched`] refusal, or a requests window the budget says
//! is [`Spent`]. The refusals a send meets while one stands are worded in
//! `refusal/held.rs`, from these fields.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::dialects::Quoted;
use crate::clock::later;

/// A window the engine asked the caller to wait out.
#[derive(Clone, Debug)]
pub(crate) struct Hold {
    pub(crate) until: Instant,
    /// When the engine asked, by the wall clock.
    pub(crate) asked_at: SystemTime,
    /// How long it asked for, as sent (saturated to what fits).
    pub(crate) asked: Duration,
    /// The longest hold the transport keeps, when the engine asked for
    /// longer and the hold was cut to it.
    pub(crate) ceiling: Option<Duration>,
    /// What asked: `HTTP 429`, or the rate-limit fields of an answer.
    pub(crate) why: String,
    /// The field it was read from, as sent, when an answer's rate-limit
    /// fields started it (an answer that was not refused): such a hold lets
    /// one send through now and then, whose answer corrects it. A hold
    /// without one was asked for by a refusal, and stands.
    pub(crate) field: Option<Quoted>,
    /// Where the hold came from when another process saw it: the shared
    /// hold, as logs name it (`Redis host:port, key …`).
    pub(crate) fleet: Option<String>,
    /// When this process learned it.
    pub(crate) learned: Instant,
    /// The fleet has it: Redis answered the write of it.
    pub(crate) written: bool,
}

impl Hold {
    /// The hold of a wait the engine asked for at `asked_at` (`asked`
    /// long, because of `why`), `left` of which is left at `now`; cut to
    /// `max_hold`, the ceiling named when the engine asked for longer.
    pub(crate) fn cut(
        now: Instant,
        left: Duration,
        max_hold: Duration,
        asked_at: SystemTime,
        asked: Duration,
        why: String,
    ) -> Hold {
        Hold {
            until: later(now, left.min(max_hold)),
            asked_at,
            asked,
            ceiling: (asked > max_hold).then_some(max_hold),
            why,
            field: None,
            fleet: None,
            learned: now,
            written: false,
        }
    }

    /// Whether an answer's fields started it (see [`Hold::field`]).
    pub(crate) fn said(&self) -> bool {
        self.field.is_some()
    }
}

/// A refusal (of type `R`) repeated without sending until `until`.
#[derive(Clone, Debug)]
pub(crate) struct Latched<R> {
    pub(crate) until: Instant,
    pub(crate) at: SystemTime,
    pub(crate) refusal: R,
    /// Which token the engine judged (see `token::file`).
    pub(crate) generation: u64,
}

/// A requests window the engine's answers said is spent: what an answer
/// said was left of which limit, and until when, and how many sends
/// started since (they took the rest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Spent {
    /// When the window resets.
    pub(crate) until: Instant,
    /// When the answer that said it came, by the wall clock.
    pub(crate) said_at: SystemTime,
    /// What the limit counts (`requests`).
    pub(crate) what: &'static str,
    /// What the answer said was left, less the sends then in flight.
    pub(crate) remaining: u64,
    /// The window's limit, when the answer named it.
    pub(crate) limit: Option<u64>,
    /// The field whose reset the window ends at, as sent (none when the
    /// fleet's budget did not record it).
    pub(crate) field: Option<Quoted>,
    /// Sends started since, which took what was left.
    pub(crate) started: u64,
    /// Where the budget came from when the fleet spent it: the shared
    /// budget, as logs name it (`Redis host:port, key …`).
    pub(crate) fleet: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn a_hold_is_cut_to_the_ceiling_and_names_it_only_when_more_was_asked() {
        let now = Instant::now();
        let at = SystemTime::now();
        let within = Hold::cut(now, MINUTE, 2 * MINUTE, at, MINUTE, "HTTP 429".to_owned());
        assert_eq!(within.until, now + MINUTE);
        assert_eq!(within.ceiling, None);
        let past = Hold::cut(
            now,
            5 * MINUTE,
            2 * MINUTE,
            at,
            5 * MINUTE,
            "HTTP 429".to_owned(),
        );
        assert_eq!(past.until, now + 2 * MINUTE);
        assert_eq!(past.ceiling, Some(2 * MINUTE));
        assert_eq!(past.asked, 5 * MINUTE, "what was asked is kept as sent");
        // A fleet's hold with little left of a long wait: held for what is
        // left, and the ceiling still named, since the engine asked past it.
        let fleet = Hold::cut(
            now,
            MINUTE,
            2 * MINUTE,
            at,
            5 * MINUTE,
            "HTTP 429".to_owned(),
        );
        assert_eq!(fleet.until, now + MINUTE);
        assert_eq!(fleet.ceiling, Some(2 * MINUTE));
        assert_eq!(fleet.fleet, None);
    }
}
