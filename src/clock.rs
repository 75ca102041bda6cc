//! Where a duration meets a clock.
//!
//! Durations come from the wire (a `retry-after` of 10^35 seconds is one
//! header away) and from the caller (`deadline(Duration::MAX)`), and
//! `Instant + Duration` panics when the sum does not fit. So every sum of an
//! instant and such a duration is taken here, and saturates: a wait too long
//! for the clock ends at the furthest instant it holds, which is past any
//! deadline or hold that means anything.
//!
//! # Every number and time from the wire
//!
//! Nothing an engine (or Redis, or a token file) sends may panic the crate, so
//! every place where outside text becomes a number or a time is listed here,
//! with what keeps it in range. Each is behind a fuzz target (`fuzz/`).
//!
//! | where | what is read | how it stays in range |
//! |---|---|---|
//! | `hint.rs` `parse_seconds` | `retry-after: 1*DIGIT`, `ratelimit-reset`, `RateLimit` `t=` | digits only; a value past `u64` saturates to `u64::MAX` s |
//! | `hint.rs` `parse_millis` | `retry-after-ms` (fractional) | digits and `.` only, `f64` → `Duration::try_from_secs_f64`, saturating to `Duration::MAX` |
//! | `hint.rs` (`from_date` in `retry_after`) | `retry-after: <HTTP-date>` against `date:` | `httpdate`; a date in the past is zero, `duration_since` never panics |
//! | `hint.rs` `duration` | `x-ratelimit-reset-requests: 6m0s`, `120ms`, `2.5s` | each part saturates, the sum `saturating_add` |
//! | `hint.rs` `Bare` | a bare reset in any dialect: seconds, or a Unix time above 10^9 (ms above 10^12) | digits only, saturating to `u64::MAX`; `Duration::from_secs`/`from_millis` never overflow, `saturating_add` for the fraction, `UNIX_EPOCH.checked_add`, and a time in the past is no window |
//! | `limits/mod.rs` `observe`, `said_hold` | every delay above, as a hold | cut to `max_hold` (24 h by default); `clock::later` never overflows an `Instant` |
//! | `refusal/held.rs`, `report` | the hold's time left, `retryAfter` | `saturating_duration_since`; ms rounded in `u64` with `try_from(..).unwrap_or(MAX)` |
//! | `transport/body.rs` | `content-length` | compared against the cap as `u64`; the reservation is capped at 1 MiB, never the declared length |
//! | `transport/body.rs`, `stream/mod.rs` | bytes arrived, events, pieces | `saturating_add`, `try_from(..).unwrap_or(MAX)` |
//! | `stream/sse.rs` | `retry:` field | skipped, never parsed |
//! | `stream/channels/json_spans.rs` `number` | an object's `index` member | digits only, `checked_mul`/`checked_add` into `u64`; past it, not an index |
//! | `limits/redis/record.rs` `read_check` | Redis `PTTL` | only `-2`, `-1`, `0` or a positive `i64` taken; `unsigned_abs` of a positive value |
//! | `limits/redis/record.rs` `Record::decode` | the stored `v1\|<ms>\|<ms>\|<why>` and `v2\|…\|<field>` | 1–20 ASCII digits that fit `u64`, `UNIX_EPOCH.checked_add`; at most 256 bytes read |
//! | `limits/redis/record.rs` `read_ask` | the ask's code, figure and ms | `u64::try_from` of Redis's integers, ms cut to thirty years |
//! | `token/file.rs` `parse` | the token file's length | `metadata().len()` and the bytes read, both against 64 KiB |
//! | `token/read.rs` `unsettled_for` | the token file's modification time | `duration_since` errs for a time in the future, which is then read as no time at all (two reads must agree); `SETTLE - age` only when `age < SETTLE` |
//! | `meter.rs` | latency, bytes | µs as `u64` saturating; HdrHistogram `saturating_record` |
//! | `clock.rs` `http_date` | a hold's end as a date, in a held refusal and the probe | a time past 9999-12-31 or before 1970 is said in words; `httpdate` (which panics there) never sees it |

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// Thirty years: what tokio itself takes for "never" in its timers.
const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// `duration` in whole milliseconds, as refusals, spans and Redis take
/// it. A duration past `u64::MAX` ms (`Duration::MAX`, or a hint of 10^35
/// seconds) saturates to it, where `as_millis` would hand back a `u128` and
/// a cast would wrap.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

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
    fn milliseconds_past_what_a_u64_holds_saturate() {
        assert_eq!(millis(Duration::ZERO), 0);
        assert_eq!(millis(Duration::from_micros(1999)), 1);
        assert_eq!(millis(Duration::from_millis(u64::MAX)), u64::MAX);
        assert_eq!(millis(Duration::from_secs(u64::MAX)), u64::MAX);
        assert_eq!(millis(Duration::MAX), u64::MAX);
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
