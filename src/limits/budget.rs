//! The budget of one transport and its clones: what the latest answer said
//! is left of its requests window (the smallest, with its reset), less the
//! sends started since.
//!
//! An answer's figure is what the engine had counted when it answered; the
//! sends that started after that answer's request and are still in flight
//! may not be counted yet, so the figure is lowered by them. Within one
//! window (until its reset) a figure only ever lowers what is left: an
//! answer that overtook a later one must not give back what the later one
//! spent. The answer of a scout, or of the first send into a window that
//! just reset, is the exception: it was sent to learn what the window
//! holds, and replaces it whatever it says. Every send in flight holds an
//! [`InFlight`], whose drop ends it (a send its caller dropped included),
//! so nothing leaks.
//!
//! A transport whose engine sends no fields has no window here, and a send
//! pays one lock and a set insertion for its [`InFlight`].

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::clock::later;
use crate::limits::dialects::{Left, Quoted, Unit};
use crate::limits::hold::Spent;
use crate::lock::Unpoisoned;

/// The most a figure is believed: far past any window an engine keeps, and
/// small enough to travel to Redis as an exact number.
pub(crate) const MAX_FIGURE: u64 = 1_000_000_000_000;

#[derive(Debug, Default)]
pub(crate) struct Budget {
    state: Arc<Mutex<Ledger>>,
}

#[derive(Debug, Default)]
struct Ledger {
    window: Option<RequestsWindow>,
    /// The sends in flight, by the order they started in.
    in_flight: BTreeSet<u64>,
    /// How many sends started: the next one's number.
    started: u64,
    /// The latest figure not yet handed to the fleet.
    pending: Option<Pending>,
}

#[derive(Clone, Debug)]
struct RequestsWindow {
    left: u64,
    /// What was said, for a refusal's words; `until` is the reset.
    said: Spent,
}

/// A figure for the fleet: what an answer said was left less the sends
/// then in flight, the time to its reset, when it was read, and the field
/// it was read from.
#[derive(Clone, Debug)]
struct Pending {
    figure: u64,
    reset: Duration,
    at: Instant,
    started: u64,
    field: Quoted,
}

/// The latest figure an answer gave, as the fleet is handed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Remaining {
    /// What is left, less the sends in flight then and started since.
    pub(crate) left: u64,
    /// The time to the window's reset.
    pub(crate) reset: Duration,
    /// How long ago the figure was read.
    pub(crate) age: Duration,
    /// The field the reset was read from, as sent.
    pub(crate) field: Option<Quoted>,
}

/// How a send was let go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Nothing held it.
    Open,
    /// The fleet let it go first into a window that just reset: its
    /// answer replaces what answers said of the window, here and in the
    /// fleet, at once (the others wait on it).
    First,
    /// Through a window an answer's fields closed, to check them: its
    /// answer replaces what they said, here and in the fleet.
    Scout,
}

/// One send in flight; its drop ends it.
#[derive(Debug)]
pub(crate) struct InFlight {
    number: u64,
    pub(crate) pass: Pass,
    state: Arc<Mutex<Ledger>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.state.lock_unpoisoned().in_flight.remove(&self.number);
    }
}

impl Budget {
    /// The window in force at `now` when nothing is left of it.
    pub(crate) fn spent(&self, now: Instant) -> Option<Spent> {
        let mut state = self.lock();
        let window = state.window.as_ref()?;
        if window.said.until <= now {
            state.window = None;
            return None;
        }
        (window.left == 0).then(|| window.said.clone())
    }

    /// Starts a send at `now`: one is taken from the window, if there is
    /// one, and the send is in flight until its [`InFlight`] drops.
    pub(crate) fn start(&self, now: Instant, pass: Pass) -> InFlight {
        let mut state = self.lock();
        if let Some(window) = &mut state.window {
            if window.said.until > now {
                window.left = window.left.saturating_sub(1);
                window.said.started = window.said.started.saturating_add(1);
            } else {
                state.window = None;
            }
        }
        let number = state.started;
        state.started = state.started.wrapping_add(1);
        state.in_flight.insert(number);
        InFlight {
            number,
            pass,
            state: self.state.clone(),
        }
    }

    /// What an answer to `ticket`'s send said of its requests window, read
    /// at `now`, its reset cut to `max_hold`: the figure, less the sends
    /// that started after it and are in flight, lowers what is left within
    /// the window, or opens a new one when the last has reset. A scout's
    /// answer (or the first into a window that just reset) replaces the
    /// window whatever it says.
    pub(crate) fn learn(&self, now: Instant, said: &Left, ticket: &InFlight, max_hold: Duration) {
        let mut state = self.lock();
        let after = state
            .in_flight
            .range(ticket.number.saturating_add(1)..)
            .count();
        let figure = said
            .remaining
            .saturating_sub(u64::try_from(after).unwrap_or(u64::MAX))
            .min(MAX_FIGURE);
        let reset = said.reset.min(max_hold);
        let until = later(now, reset);
        let new = RequestsWindow {
            left: figure,
            said: Spent {
                until,
                said_at: SystemTime::now(),
                what: said.unit.counted(),
                remaining: figure,
                limit: said.limit,
                field: Some(said.field.clone()),
                started: 0,
                fleet: None,
            },
        };
        let scout = matches!(ticket.pass, Pass::Scout | Pass::First);
        match &mut state.window {
            Some(window) if window.said.until > now && !scout => {
                if figure < window.left {
                    *window = new;
                }
            }
            _ => state.window = Some(new),
        }
        state.pending = Some(Pending {
            figure,
            reset,
            at: now,
            started: state.started,
            field: said.field.clone(),
        });
    }

    /// A scout's answer (or the first into a window that just reset) said
    /// nothing of a requests window: whatever window an earlier answer
    /// described is gone.
    pub(crate) fn forget(&self) {
        let mut state = self.lock();
        state.window = None;
        state.pending = None;
    }

    /// The latest figure for the fleet, taken (each is handed over once):
    /// less the sends started since it was read, its reset less the time
    /// since, and that time; none when its window has passed.
    pub(crate) fn pending(&self, now: Instant) -> Option<Remaining> {
        let mut state = self.lock();
        let pending = state.pending.take()?;
        let age = now.saturating_duration_since(pending.at);
        let reset = pending
            .reset
            .checked_sub(age)
            .filter(|reset| !reset.is_zero())?;
        let since = state.started.wrapping_sub(pending.started);
        Some(Remaining {
            left: pending.figure.saturating_sub(since),
            reset,
            age,
            field: Some(pending.field),
        })
    }

    /// The fleet took one for the send about to start, leaving `left` for
    /// `reset`: this process keeps what the fleet keeps (plus the one its
    /// own start takes), so a Redis that is slow later finds it no richer
    /// than the fleet, and a window the fleet reopened is open here too.
    /// An answer that came `late` only ever lowers what is left.
    pub(crate) fn fleet_left(
        &self,
        now: Instant,
        left: u64,
        reset: Duration,
        shown: &str,
        late: bool,
    ) {
        let mut state = self.lock();
        let left = left.min(MAX_FIGURE).saturating_add(1);
        match &mut state.window {
            Some(window) if window.said.until > now && late => window.left = window.left.min(left),
            Some(window) if window.said.until > now => window.left = left,
            _ => state.window = Some(fleet_window(now, left, reset, shown, None)),
        }
    }

    /// The fleet has nothing left for `reset`, as `field` said.
    pub(crate) fn fleet_spent(
        &self,
        now: Instant,
        reset: Duration,
        shown: &str,
        field: Option<Quoted>,
    ) {
        self.lock().window = Some(fleet_window(now, 0, reset, shown, field));
    }

    /// The fleet keeps no budget: a spent window here is gone too (a
    /// scout's answer said nothing of one).
    pub(crate) fn fleet_open(&self) {
        let mut state = self.lock();
        if state.window.as_ref().is_some_and(|window| window.left == 0) {
            state.window = None;
        }
    }

    fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.state.lock_unpoisoned()
    }
}

fn fleet_window(
    now: Instant,
    left: u64,
    reset: Duration,
    shown: &str,
    field: Option<Quoted>,
) -> RequestsWindow {
    RequestsWindow {
        left,
        said: Spent {
            until: later(now, reset),
            said_at: SystemTime::now(),
            what: Unit::Requests.counted(),
            remaining: left,
            limit: None,
            field,
            started: 0,
            fleet: Some(shown.to_owned()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn quoted() -> Quoted {
        let value = reqwest::header::HeaderValue::from_static("\"default\";r=0;t=1");
        Quoted::new("ratelimit", value)
    }

    fn said(remaining: u64, reset_ms: u64) -> Left {
        Left {
            unit: Unit::Requests,
            remaining,
            limit: Some(10),
            reset: Duration::from_millis(reset_ms),
            field: quoted(),
        }
    }

    #[test]
    fn no_window_costs_nothing_and_never_holds() {
        let budget = Budget::default();
        let now = Instant::now();
        let tickets: Vec<_> = (0..100).map(|_| budget.start(now, Pass::Open)).collect();
        assert!(budget.spent(now).is_none());
        drop(tickets);
        assert!(budget.lock().in_flight.is_empty(), "every ticket ended");
    }

    #[test]
    fn what_is_left_is_taken_one_send_at_a_time_until_the_reset() {
        let budget = Budget::default();
        let now = Instant::now();
        let first = budget.start(now, Pass::Open);
        budget.learn(now, &said(2, 1000), &first, HOUR);
        drop(first);
        let _a = budget.start(now, Pass::Open);
        assert!(budget.spent(now).is_none());
        let _b = budget.start(now, Pass::Open);
        let spent = budget.spent(now).expect("spent");
        assert_eq!((spent.remaining, spent.started), (2, 2));
        assert!(budget.spent(now + Duration::from_millis(1001)).is_none());
    }

    #[test]
    fn a_figure_is_lowered_by_the_sends_that_started_after_its_request() {
        let budget = Budget::default();
        let now = Instant::now();
        let early = budget.start(now, Pass::Open);
        let later_ones: Vec<_> = (0..3).map(|_| budget.start(now, Pass::Open)).collect();
        // The engine counted the early one; the three after it are in flight.
        budget.learn(now, &said(5, 1000), &early, HOUR);
        assert_eq!(budget.lock().window.as_ref().map(|w| w.left), Some(2));
        drop(later_ones);
        let figure = Remaining {
            left: 2,
            reset: Duration::from_secs(1),
            age: Duration::ZERO,
            field: Some(quoted()),
        };
        assert_eq!(budget.pending(now), Some(figure));
        assert_eq!(budget.pending(now), None, "handed over once");
    }

    #[test]
    fn within_a_window_a_higher_figure_gives_nothing_back() {
        let budget = Budget::default();
        let now = Instant::now();
        let ticket = budget.start(now, Pass::Open);
        budget.learn(now, &said(1, 1000), &ticket, HOUR);
        budget.learn(now, &said(8, 1000), &ticket, HOUR);
        assert_eq!(budget.lock().window.as_ref().map(|w| w.left), Some(1));
        // After the reset, a new window opens with what the engine says.
        let next = now + Duration::from_millis(1500);
        budget.learn(next, &said(8, 1000), &ticket, HOUR);
        assert_eq!(budget.lock().window.as_ref().map(|w| w.left), Some(8));
    }

    #[test]
    fn a_reset_past_the_ceiling_is_cut_to_it() {
        let budget = Budget::default();
        let now = Instant::now();
        let ticket = budget.start(now, Pass::Open);
        let mut far = said(0, 0);
        far.reset = Duration::MAX;
        budget.learn(now, &far, &ticket, Duration::from_secs(5));
        let spent = budget.spent(now).expect("spent");
        assert_eq!(spent.until, now + Duration::from_secs(5));
        let mut huge = said(u64::MAX, 1000);
        huge.limit = None;
        budget.learn(now + Duration::from_secs(6), &huge, &ticket, HOUR);
        assert_eq!(
            budget.lock().window.as_ref().map(|w| w.left),
            Some(MAX_FIGURE)
        );
    }

    #[test]
    fn the_fleet_lowers_what_is_left_and_can_spend_it() {
        let budget = Budget::default();
        let now = Instant::now();
        budget.fleet_left(now, 3, Duration::from_secs(1), "Redis r, key k", false);
        let _ticket = budget.start(now, Pass::Open);
        assert_eq!(budget.lock().window.as_ref().map(|w| w.left), Some(3));
        budget.fleet_spent(now, Duration::from_millis(200), "Redis r, key k", None);
        let spent = budget.spent(now).expect("spent");
        assert_eq!(spent.fleet.as_deref(), Some("Redis r, key k"));
        assert!(budget.spent(now + Duration::from_millis(201)).is_none());
    }
}
