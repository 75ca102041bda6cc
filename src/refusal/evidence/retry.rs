//! When the engine asks the caller to wait: its retry hints, and its
//! rate-limit fields.
//!
//! One reader for both, because they are one kind of evidence: a `429`
//! says "wait" in `retry-after`, and every answer says how much of its
//! windows is left, and until when, in one of four dialects ([`fields`]:
//! the IETF `RateLimit` fields, OpenAI's, Anthropic's, and
//! `X-RateLimit-*`). The budget, the hold and the refusal's words all read
//! from here.
//!
//! Parsing is lenient in what it ignores and strict in what it believes: a
//! malformed `retry-after` is echoed as sent but never turned into a delay,
//! and nothing here can panic on what an engine sends.

use std::time::{Duration, SystemTime};

use reqwest::header::{DATE, HeaderMap, RETRY_AFTER};

use super::header_text;

mod fields;

#[cfg(feature = "redis")]
pub(crate) use self::fields::MAX_QUOTED;
#[cfg(fuzzing)]
pub(crate) use self::fields::rfc3339;
pub(crate) use self::fields::{Fields, Left, Quoted};
use self::fields::{Written, reset};

/// A wait the engine asked for, with the header it came from and that
/// header's value as sent (already concealed at the door), so a reason can
/// quote the very header whose value was used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hint<'h> {
    pub(crate) delay: Duration,
    pub(crate) header: &'static str,
    pub(crate) value: &'h str,
}

/// How long the engine asks the caller to wait, from (in order of trust)
/// `retry-after-ms`, `retry-after` (delay-seconds or an HTTP-date, RFC 9110
/// §10.2.3), then the rate-limit fields: first those that say nothing is
/// left ([`exhausted`]), then the bare reset of an IETF `RateLimit` field
/// (`t=`) or of the older draft's `ratelimit-reset`.
///
/// An HTTP-date is measured from the response's own `date` header when it
/// has one (so a skewed local clock does not matter), else from `now`; a
/// date in the past is zero. A delay too long to hold saturates.
pub(crate) fn retry_hint(headers: &HeaderMap, now: SystemTime) -> Option<Hint<'_>> {
    let hint = |header: &'static str, parse: fn(&str) -> Option<Duration>| {
        let value = header_text(headers, header)?;
        parse(value).map(|delay| Hint {
            delay,
            header,
            value,
        })
    };
    if let Some(hint) = hint("retry-after-ms", parse_millis) {
        return Some(hint);
    }
    if let Some(value) = header_text(headers, RETRY_AFTER.as_str()) {
        let from_date = || {
            let at = httpdate::parse_http_date(value).ok()?;
            let from = header_text(headers, DATE.as_str())
                .and_then(|date| httpdate::parse_http_date(date).ok())
                .unwrap_or(now);
            Some(at.duration_since(from).unwrap_or(Duration::ZERO))
        };
        if let Some(delay) = parse_seconds(value).or_else(from_date) {
            return Some(Hint {
                delay,
                header: "retry-after",
                value,
            });
        }
    }
    if let Some(hint) = exhausted_hint(headers, now) {
        return Some(hint);
    }
    // The bare resets are read as the rate-limit fields read them (a Unix
    // time above 10^9).
    let reset = |text| reset(text, Written::GoDuration, now);
    if let Some(value) = header_text(headers, "ratelimit")
        && let Some(delay) = ratelimit_param(value, "t").and_then(reset)
    {
        return Some(Hint {
            delay,
            header: "ratelimit",
            value,
        });
    }
    let value = header_text(headers, "ratelimit-reset")?;
    reset(value).map(|delay| Hint {
        delay,
        header: "ratelimit-reset",
        value,
    })
}

/// How long an answer's rate-limit fields say to wait because nothing is
/// left, in any dialect [`Fields`] reads (a requests window or a tokens
/// window with `0` left, and its reset), and the header whose value gave
/// the wait. Read on every status: on an answer it starts a hold, on a
/// `429` without `retry-after` it is the wait.
fn exhausted_hint(headers: &HeaderMap, now: SystemTime) -> Option<Hint<'_>> {
    let left = Fields::read(headers, now).exhausted?;
    Some(Hint {
        delay: left.reset,
        header: left.field.name,
        value: header_text(headers, left.field.name)?,
    })
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
/// in `retry-after-ms`. Absurd values saturate.
fn parse_millis(value: &str) -> Option<Duration> {
    let value = value.trim();
    let digits_and_dot = value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if value.is_empty() || !digits_and_dot || !value.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms: f64 = value.parse().ok()?;
    Some(saturating_seconds(ms / 1000.0))
}

/// A number of seconds parsed from digits (never negative or NaN): the
/// duration, or the longest one when it does not fit.
fn saturating_seconds(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

/// A parameter of an IETF `RateLimit` field (`"default";r=0;t=30`): `r`
/// is what is left, `t` the seconds until the quota resets.
pub(super) fn ratelimit_param<'v>(field: &'v str, key: &str) -> Option<&'v str> {
    field
        .split([';', ','])
        .filter_map(|param| param.trim().split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case(key))
        .map(|(_, value)| value.trim())
}

/// Plain seconds (`30`), or a Go-style duration of hours, minutes, seconds
/// and milliseconds (`6m0s`, `1h2m`, `2.5s`, `120ms`), as OpenAI writes its
/// resets.
pub(super) fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Some(seconds) = parse_seconds(text) {
        return Some(seconds);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|end| *end > 0)?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let (unit, seconds) = [("ms", 0.001), ("h", 3600.0), ("m", 60.0), ("s", 1.0)]
            .into_iter()
            .find(|(unit, _)| rest.starts_with(unit))?;
        rest = &rest[unit.len()..];
        total = total.saturating_add(saturating_seconds(number * seconds));
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::evidence::header_map as headers;

    fn exhausted(headers: &HeaderMap) -> Option<Duration> {
        Fields::read(headers, SystemTime::now())
            .exhausted
            .map(|left| left.reset)
    }

    fn delay(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
        retry_hint(headers, now).map(|hint| hint.delay)
    }

    #[test]
    fn delay_seconds_are_a_delay() {
        let h = headers(&[("retry-after", "120")]);
        assert_eq!(delay(&h, SystemTime::now()), Some(Duration::from_secs(120)));
    }

    #[test]
    fn an_http_date_is_measured_from_the_responses_own_date() {
        let h = headers(&[
            ("retry-after", "Sun, 29 Nov 2026 07:28:00 GMT"),
            ("date", "Sun, 29 Nov 2026 07:13:00 GMT"),
        ]);
        assert_eq!(
            delay(&h, SystemTime::UNIX_EPOCH),
            Some(Duration::from_secs(900))
        );
    }

    #[test]
    fn a_date_in_the_past_is_zero() {
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        assert_eq!(delay(&h, SystemTime::now()), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_ms_wins_and_may_be_fractional() {
        let h = headers(&[("retry-after", "9"), ("retry-after-ms", "1500.5")]);
        assert_eq!(
            delay(&h, SystemTime::now()),
            Some(Duration::from_micros(1_500_500))
        );
    }

    #[test]
    fn a_ratelimit_reset_is_the_fallback() {
        let h = headers(&[("ratelimit", "\"default\";r=0;t=42")]);
        assert_eq!(delay(&h, SystemTime::now()), Some(Duration::from_secs(42)));
        let h = headers(&[("ratelimit-reset", "7")]);
        assert_eq!(delay(&h, SystemTime::now()), Some(Duration::from_secs(7)));
    }

    #[test]
    fn a_429_without_retry_after_waits_for_its_rate_limit_fields() {
        let h = headers(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "6m0s"),
        ]);
        let hint = retry_hint(&h, SystemTime::now()).expect("a hint");
        assert_eq!(hint.delay, Duration::from_secs(360));
        assert_eq!(hint.header, "x-ratelimit-reset-requests");
        assert_eq!(hint.value, "6m0s");
    }

    #[test]
    fn the_hint_names_the_header_whose_value_was_used() {
        let h = headers(&[("retry-after", "1"), ("retry-after-ms", "250")]);
        let hint = retry_hint(&h, SystemTime::now()).expect("a hint");
        assert_eq!(hint.delay, Duration::from_millis(250));
        assert_eq!((hint.header, hint.value), ("retry-after-ms", "250"));
    }

    #[test]
    fn absurd_waits_saturate_instead_of_failing() {
        let huge = "9".repeat(400);
        assert_eq!(parse_millis(&huge), Some(Duration::MAX));
        assert_eq!(duration(&format!("{huge}h")), Some(Duration::MAX));
        assert_eq!(duration(&format!("{huge}h{huge}m")), Some(Duration::MAX));
        // A bare number past 10^12 is a Unix time in milliseconds, and
        // one past what a u64 holds the furthest of them: half a billion
        // years off, which the limits cut to their ceiling.
        let h = headers(&[("ratelimit", "\"d\";r=0;t=99999999999999999999")]);
        let far = Duration::from_millis(u64::MAX).saturating_sub(Duration::from_secs(1 << 40));
        assert!(exhausted(&h).is_some_and(|reset| reset > far));
    }

    #[test]
    fn go_durations_and_plain_seconds_are_read() {
        assert_eq!(duration("2s"), Some(Duration::from_secs(2)));
        assert_eq!(duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(duration("120ms"), Some(Duration::from_millis(120)));
        assert_eq!(duration("1h2m3s"), Some(Duration::from_secs(3723)));
        assert_eq!(duration("2.5s"), Some(Duration::from_millis(2500)));
        assert_eq!(duration("30"), Some(Duration::from_secs(30)));
        for bad in ["", "s", "5x", "-3s", "1e3s", "ms"] {
            assert_eq!(duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn nothing_left_in_the_rate_limit_fields_is_a_wait() {
        let wait = |pairs: &[(&'static str, &str)]| exhausted(&headers(pairs));
        assert_eq!(
            wait(&[("ratelimit", "\"default\";r=0;t=7")]),
            Some(Duration::from_secs(7))
        );
        assert_eq!(wait(&[("ratelimit", "\"default\";r=3;t=7")]), None);
        assert_eq!(
            wait(&[
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "6m0s")
            ]),
            Some(Duration::from_secs(360))
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-remaining-requests", "12"),
                ("x-ratelimit-reset-requests", "1s")
            ]),
            None
        );
        assert_eq!(
            wait(&[("ratelimit-remaining", "0"), ("ratelimit-reset", "3")]),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            wait(&[("x-ratelimit-remaining-requests", "0")]),
            None,
            "no reset, no hold"
        );
    }

    #[test]
    fn malformed_values_are_no_delay() {
        for bad in ["soon", "-5", "1e3", "12 seconds", "", "Sun, 99 Foo 2026"] {
            let h = headers(&[("retry-after", bad), ("retry-after-ms", bad)]);
            assert_eq!(delay(&h, SystemTime::now()), None, "{bad:?}");
        }
        let h = headers(&[("retry-after", "99999999999999999999999")]);
        assert_eq!(
            delay(&h, SystemTime::now()),
            Some(Duration::from_secs(u64::MAX))
        );
    }
}
