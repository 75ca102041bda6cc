//! When the engine asks the caller to wait, as a refusal reads it: the
//! headers made for it first (`retry-after-ms`, `retry-after`, read in
//! [`crate::hint`]), then the answer's rate-limit fields (read in
//! `limits/dialects.rs`): those that say nothing is left of a window, then
//! the bare reset of an IETF `RateLimit` field (`t=`) or of the older
//! draft's `ratelimit-reset`.
//!
//! The readers are a leaf's and the limits'; this is only the order a
//! refusal believes them in, so that its `retryAfter` and its words quote
//! the very header whose value was used.

use std::time::SystemTime;

use reqwest::header::HeaderMap;

use super::header_text;
pub(crate) use crate::hint::Hint;
use crate::hint::retry_after;
use crate::limits::dialects::{RateFields, ietf_reset, ratelimit_param};

/// How long the engine asks the caller to wait, from (in order of trust)
/// `retry-after-ms`, `retry-after` (delay-seconds or an HTTP-date, RFC 9110
/// §10.2.3), then the rate-limit fields: first those that say nothing is
/// left ([`exhausted_hint`]), then the bare reset of an IETF `RateLimit`
/// field (`t=`) or of the older draft's `ratelimit-reset`.
pub(crate) fn retry_hint(headers: &HeaderMap, now: SystemTime) -> Option<Hint<'_>> {
    if let Some(hint) = retry_after(headers, now) {
        return Some(hint);
    }
    if let Some(hint) = exhausted_hint(headers, now) {
        return Some(hint);
    }
    // The bare resets are read as the rate-limit fields read them (a Unix
    // time above 10^9).
    let reset = |text| ietf_reset(text, now);
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
/// left, in any dialect [`RateFields`] reads (a requests window or a tokens
/// window with `0` left, and its reset), and the header whose value gave
/// the wait. Read on every status: on an answer it starts a hold, on a
/// `429` without `retry-after` it is the wait.
fn exhausted_hint(headers: &HeaderMap, now: SystemTime) -> Option<Hint<'_>> {
    let left = RateFields::read(headers, now).exhausted?;
    Some(Hint {
        delay: left.reset,
        header: left.field.name,
        value: header_text(headers, left.field.name)?,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::refusal::evidence::header_map as headers;

    fn exhausted(headers: &HeaderMap) -> Option<Duration> {
        RateFields::read(headers, SystemTime::now())
            .exhausted
            .map(|left| left.reset)
    }

    fn delay(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
        retry_hint(headers, now).map(|hint| hint.delay)
    }

    #[test]
    fn a_retry_after_comes_before_the_rate_limit_fields() {
        let h = headers(&[
            ("retry-after", "9"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "6m0s"),
        ]);
        assert_eq!(delay(&h, SystemTime::now()), Some(Duration::from_secs(9)));
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
    fn a_bare_reset_past_ten_to_the_twelfth_is_a_unix_time_in_milliseconds() {
        // One past what a u64 holds is the furthest of them: half a billion
        // years off, which the limits cut to their ceiling.
        let h = headers(&[("ratelimit", "\"d\";r=0;t=99999999999999999999")]);
        let far = Duration::from_millis(u64::MAX).saturating_sub(Duration::from_secs(1 << 40));
        assert!(exhausted(&h).is_some_and(|reset| reset > far));
    }
}
