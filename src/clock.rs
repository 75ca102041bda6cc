//! Where a duration meets a clock.
//!
//! Durations come from the wire (a `retry-after` of 10^35 seconds is one
//! header away) and from the caller (`deadline(Duration::MAX)`), and
//! `Instant + Duration` panics when the sum does not fit. So every sum of an
//! instant and such a duration is taken here, and saturates: a wait too long
//! for the clock ends at the furthest instant it holds, which is past any
//! deadline or hold that means anything.

use std::time::Duration;

use tokio::time::Instant;

/// Thirty years: what tokio itself takes for "never" in its timers.
const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// `now + wait`, or the far future when that does not fit.
pub(crate) fn later(now: Instant, wait: Duration) -> Instant {
    now.checked_add(wait.min(FAR)).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_too_long_for_the_clock_saturates() {
        let now = Instant::now();
        assert_eq!(
            later(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert_eq!(later(now, Duration::MAX), now + FAR);
        assert_eq!(later(now, Duration::from_secs(u64::MAX)), now + FAR);
    }
}
