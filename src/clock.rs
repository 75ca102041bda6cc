//! Where a duration meets a clock.
//!
//! Durations come from the wire (a `retry-after` of 10^35 seconds is one
//! header away) and from the caller (`deadline(Duration::MAX)`), and
//! `Instant + Duration` panics when the sum does not fit. So every sum of an
//! instant and such a duration is taken here, and saturates: a wait too long
//! for the clock ends at the furthest instant it holds, which is past any
//! deadline or hold that means anything.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// Thirty years: what tokio itself takes for "never" in its timers.
const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// `now + wait`, or the far future when that does not fit.
pub(crate) fn later(now: Instant, wait: Duration) -> Instant {
    now.checked_add(wait.min(FAR)).unwrap_or(now)
}

/// The first instant of the year 10000, which no HTTP date can name.
const YEAR_10000: Duration = Duration::from_secs(253_402_300_800);

/// `at` as an HTTP date (`Tue, 01 Dec 2026 11:08:37 GMT`), for a time that
/// may have come from outside (a fleet's hold records when the engine asked,
/// and anyone who may write its key can write any number there): `httpdate`
/// panics on a time before 1970 or past 9999, so those are said in words.
pub(crate) fn http_date(at: SystemTime) -> String {
    match at.duration_since(UNIX_EPOCH) {
        Ok(since) if since < YEAR_10000 => httpdate::fmt_http_date(at),
        Ok(_) => "a time past the year 9999".to_owned(),
        Err(_) => "a time before 1970".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_no_http_date_names_is_said_in_words() {
        let at = UNIX_EPOCH + Duration::from_secs(1_764_587_317);
        assert_eq!(http_date(at), "Mon, 01 Dec 2025 11:08:37 GMT");
        let last = UNIX_EPOCH + YEAR_10000 - Duration::from_secs(1);
        assert_eq!(http_date(last), "Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(
            http_date(UNIX_EPOCH + YEAR_10000),
            "a time past the year 9999"
        );
        let far = UNIX_EPOCH + Duration::from_millis(u64::MAX);
        assert_eq!(http_date(far), "a time past the year 9999");
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(http_date(before), "a time before 1970");
    }

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
