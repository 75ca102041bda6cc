//! The engine's limits, respected by every clone of a transport.
//!
//! A `429` with a retry hint says the account's window is spent; sending
//! again before it passes costs the engine a request and the account its
//! standing, and a predictor with many tasks would do it many times at
//! once. So the hint becomes a **hold** shared by every clone: a send
//! before the window ends is not sent (§9). A **latch** (opt-in) does the
//! same after a `402`, `401` or `403` for a fixed time: an empty account or
//! a rejected token is not fixed by asking again a millisecond later.
//!
//! Both are one `Mutex` each, read once per send and held only to copy a
//! few fields out: a send that is not held never waits on another.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio::time::Instant;

use crate::Refusal;

/// A window the engine asked the caller to wait out.
#[derive(Clone, Debug)]
pub(crate) struct Hold {
    pub(crate) until: Instant,
    /// When the engine asked, by the wall clock.
    pub(crate) asked_at: SystemTime,
    /// How long it asked for.
    pub(crate) asked: Duration,
    /// What asked: `HTTP 429`, or the rate-limit fields of an answer.
    pub(crate) why: String,
}

/// A refusal repeated without sending until `until`.
#[derive(Clone, Debug)]
pub(crate) struct Latched {
    pub(crate) until: Instant,
    pub(crate) at: SystemTime,
    pub(crate) refusal: Refusal,
}

/// The hold and the latch of one transport and its clones.
#[derive(Debug, Default)]
pub(crate) struct Limits {
    hold: Mutex<Option<Hold>>,
    latch: Mutex<Option<Latched>>,
}

impl Limits {
    /// The hold in force at `now`, if any.
    pub(crate) fn hold(&self, now: Instant) -> Option<Hold> {
        let hold = self
            .hold
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        hold.as_ref().filter(|hold| hold.until > now).cloned()
    }

    /// Holds every send until `now + wait`, unless a longer hold is in force.
    pub(crate) fn hold_for(&self, now: Instant, wait: Duration, why: String) {
        let until = now + wait;
        let mut hold = self
            .hold
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if hold.as_ref().is_none_or(|held| held.until < until) {
            *hold = Some(Hold {
                until,
                asked_at: SystemTime::now(),
                asked: wait,
                why,
            });
        }
    }

    /// The latched refusal in force at `now`, if any.
    pub(crate) fn latched(&self, now: Instant) -> Option<Latched> {
        let latch = self
            .latch
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        latch
            .as_ref()
            .filter(|latched| latched.until > now)
            .cloned()
    }

    /// Repeats `refusal` without sending until `now + duration`.
    pub(crate) fn latch(&self, now: Instant, duration: Duration, refusal: &Refusal) {
        let mut latch = self
            .latch
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *latch = Some(Latched {
            until: now + duration,
            at: SystemTime::now(),
            refusal: refusal.clone(),
        });
    }
}

/// How long an answer's rate-limit fields say to wait because nothing is
/// left: an IETF `RateLimit` field with `r=0` and a `t=`, the older
/// draft's `ratelimit-remaining: 0` with `ratelimit-reset`, or OpenAI's
/// `x-ratelimit-remaining-requests: 0` with `x-ratelimit-reset-requests`
/// (`2s`, `6m0s`, `120ms`, or plain seconds).
pub(crate) fn exhausted(headers: &HeaderMap) -> Option<Duration> {
    // Most answers carry none of the headers read: no name need be parsed.
    if headers.is_empty() {
        return None;
    }
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(field) = text("ratelimit") {
        let params: Vec<(&str, &str)> = field
            .split([';', ','])
            .filter_map(|param| param.trim().split_once('='))
            .map(|(key, value)| (key.trim(), value.trim()))
            .collect();
        let get = |key: &str| {
            params
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(key))
                .map(|(_, value)| *value)
        };
        if get("r") == Some("0")
            && let Some(reset) = get("t").and_then(duration)
        {
            return Some(reset);
        }
    }
    for (remaining, reset) in [
        ("ratelimit-remaining", "ratelimit-reset"),
        (
            "x-ratelimit-remaining-requests",
            "x-ratelimit-reset-requests",
        ),
    ] {
        if text(remaining) == Some("0")
            && let Some(reset) = text(reset).and_then(duration)
        {
            return Some(reset);
        }
    }
    None
}

/// Plain seconds (`30`), or a Go-style duration of hours, minutes, seconds
/// and milliseconds (`6m0s`, `1h2m`, `2.5s`, `120ms`).
fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(text.parse().unwrap_or(u64::MAX)));
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
        total = total.checked_add(Duration::try_from_secs_f64(number * seconds).ok()?)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("test header"));
        }
        map
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
    fn a_longer_hold_is_kept_and_an_expired_one_is_none() {
        let limits = Limits::default();
        let now = Instant::now();
        limits.hold_for(now, Duration::from_secs(10), "HTTP 429".into());
        limits.hold_for(now, Duration::from_secs(1), "HTTP 503".into());
        let hold = limits.hold(now).expect("held");
        assert_eq!(hold.why, "HTTP 429");
        assert!(limits.hold(now + Duration::from_secs(11)).is_none());
    }
}
