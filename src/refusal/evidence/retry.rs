//! When the engine asks the caller to wait.
//!
//! Parsing is lenient in what it ignores and strict in what it believes: a
//! malformed `retry-after` is echoed as sent but never turned into a delay,
//! and nothing here can panic on what an engine sends.

use std::time::{Duration, SystemTime};

use reqwest::header::{DATE, HeaderMap, RETRY_AFTER};

use super::header_text;

/// How long the engine asks the caller to wait, from (in order of trust)
/// `retry-after-ms`, `retry-after` (delay-seconds or an HTTP-date, RFC 9110
/// §10.2.3), then the reset of an IETF `RateLimit` field (`t=`), or the
/// older draft's `ratelimit-reset`.
///
/// An HTTP-date is measured from the response's own `date` header when it
/// has one (so a skewed local clock does not matter), else from `now`; a
/// date in the past is zero.
pub(crate) fn retry_delay(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header_text(headers, "retry-after-ms").and_then(parse_millis) {
        return Some(ms);
    }
    if let Some(value) = header_text(headers, RETRY_AFTER.as_str()) {
        if let Some(seconds) = parse_seconds(value) {
            return Some(seconds);
        }
        if let Ok(at) = httpdate::parse_http_date(value) {
            let from = header_text(headers, DATE.as_str())
                .and_then(|date| httpdate::parse_http_date(date).ok())
                .unwrap_or(now);
            return Some(at.duration_since(from).unwrap_or(Duration::ZERO));
        }
    }
    if let Some(reset) = header_text(headers, "ratelimit").and_then(ratelimit_reset) {
        return Some(reset);
    }
    header_text(headers, "ratelimit-reset").and_then(parse_seconds)
}

/// delay-seconds: `1*DIGIT`, nothing else. Absurd values saturate rather
/// than overflow.
fn parse_seconds(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)))
}

/// Milliseconds, possibly fractional (`1500`, `250.5`), as some engines send
/// in `retry-after-ms`.
fn parse_millis(value: &str) -> Option<Duration> {
    let value = value.trim();
    let digits_and_dot = value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if value.is_empty() || !digits_and_dot || !value.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms: f64 = value.parse().ok()?;
    Duration::try_from_secs_f64(ms / 1000.0).ok()
}

/// The `t=` parameter of an IETF `RateLimit` field
/// (`"default";r=0;t=30`): seconds until the quota resets.
fn ratelimit_reset(value: &str) -> Option<Duration> {
    value
        .split([';', ','])
        .filter_map(|param| param.trim().split_once('='))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case("t"))
        .and_then(|(_, seconds)| parse_seconds(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::evidence::test_headers as headers;

    #[test]
    fn delay_seconds_are_a_delay() {
        let h = headers(&[("retry-after", "120")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_secs(120))
        );
    }

    #[test]
    fn an_http_date_is_measured_from_the_responses_own_date() {
        let h = headers(&[
            ("retry-after", "Sun, 29 Nov 2026 07:28:00 GMT"),
            ("date", "Sun, 29 Nov 2026 07:13:00 GMT"),
        ]);
        assert_eq!(
            retry_delay(&h, SystemTime::UNIX_EPOCH),
            Some(Duration::from_secs(900))
        );
    }

    #[test]
    fn a_date_in_the_past_is_zero() {
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        assert_eq!(retry_delay(&h, SystemTime::now()), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_ms_wins_and_may_be_fractional() {
        let h = headers(&[("retry-after", "9"), ("retry-after-ms", "1500.5")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_micros(1_500_500))
        );
    }

    #[test]
    fn a_ratelimit_reset_is_the_fallback() {
        let h = headers(&[("ratelimit", "\"default\";r=0;t=42")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_secs(42))
        );
        let h = headers(&[("ratelimit-reset", "7")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn malformed_values_are_no_delay() {
        for bad in ["soon", "-5", "1e3", "12 seconds", "", "Sun, 99 Foo 2026"] {
            let h = headers(&[("retry-after", bad), ("retry-after-ms", bad)]);
            assert_eq!(retry_delay(&h, SystemTime::now()), None, "{bad:?}");
        }
        let h = headers(&[("retry-after", "99999999999999999999999")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_secs(u64::MAX))
        );
    }
}
