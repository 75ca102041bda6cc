//! How an engine writes a wait: the `retry-after` hint (delay-seconds or
//! an HTTP-date, RFC 9110 §10.2.3) and `retry-after-ms`, and the forms a
//! rate-limit field's reset comes in: bare numbers (seconds, or a Unix
//! time), Go durations and RFC 3339 times.
//!
//! A leaf: it reads header text and knows neither refusals nor limits. A
//! refusal takes a `429`'s hint from here (`refusal/evidence/retry.rs`), and
//! the limits read every reset through it (`limits/dialects.rs`); so the
//! refusal may read the limits' fields without the limits reading the
//! refusal's evidence, and no two rooms import each other.
//!
//! Parsing is lenient in what it ignores and strict in what it believes: a
//! malformed `retry-after` is echoed as sent but never turned into a delay,
//! and nothing here can panic on what an engine sends.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{DATE, HeaderMap, RETRY_AFTER};

/// Above this, a bare reset is a Unix time in seconds, not seconds.
const UNIX_SECONDS_FROM: u64 = 1_000_000_000;

/// Above this, a bare reset is a Unix time in milliseconds.
const UNIX_MILLIS_FROM: u64 = 1_000_000_000_000;

/// A wait the engine asked for, with the header it came from and that
/// header's value as sent (already concealed at the door), so a reason can
/// quote the very header whose value was used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hint<'h> {
    pub(crate) delay: Duration,
    pub(crate) header: &'static str,
    pub(crate) value: &'h str,
}

/// How long the engine asks the caller to wait in the headers made for it,
/// in order of trust: `retry-after-ms`, then `retry-after`. An HTTP-date is
/// measured from the response's own `date` header when it has one (so a
/// skewed local clock does not matter), else from `now`; a date in the past
/// is zero. A delay too long to hold saturates.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Hint<'_>> {
    if let Some(value) = header_text(headers, "retry-after-ms")
        && let Some(delay) = parse_millis(value)
    {
        return Some(Hint {
            delay,
            header: "retry-after-ms",
            value,
        });
    }
    let value = header_text(headers, RETRY_AFTER.as_str())?;
    let from_date = || {
        let at = httpdate::parse_http_date(value).ok()?;
        let from = header_text(headers, DATE.as_str())
            .and_then(|date| httpdate::parse_http_date(date).ok())
            .unwrap_or(now);
        Some(at.duration_since(from).unwrap_or(Duration::ZERO))
    };
    let delay = parse_seconds(value).or_else(from_date)?;
    Some(Hint {
        delay,
        header: "retry-after",
        value,
    })
}

/// A header's value as trimmed text, when it is text and not blank.
pub(crate) fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty())
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

/// Plain seconds (`30`), or a Go-style duration of hours, minutes, seconds
/// and milliseconds (`6m0s`, `1h2m`, `2.5s`, `120ms`), as OpenAI writes its
/// resets.
pub(crate) fn duration(text: &str) -> Option<Duration> {
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

/// A number without a unit: digits, and a fraction after a `.`.
pub(crate) struct Bare {
    /// The whole part, saturated to `u64::MAX`.
    whole: u64,
    /// The fraction, in billionths (its first nine digits).
    nanos: u64,
}

impl Bare {
    pub(crate) fn read(text: &str) -> Option<Bare> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(fraction) {
            return None;
        }
        Some(Bare {
            whole: whole.parse().unwrap_or(u64::MAX),
            nanos: fraction_nanos(fraction),
        })
    }

    /// The time from `now` to the reset it names: a Unix time in
    /// milliseconds above 10^12, in seconds above 10^9, else seconds; a
    /// Unix time not in the future is none.
    pub(crate) fn reset_from(&self, now: SystemTime) -> Option<Duration> {
        let fraction = Duration::from_nanos(self.nanos);
        let since_epoch = if self.whole > UNIX_MILLIS_FROM {
            Duration::from_millis(self.whole).saturating_add(fraction / 1000)
        } else if self.whole > UNIX_SECONDS_FROM {
            Duration::from_secs(self.whole).saturating_add(fraction)
        } else {
            return Some(Duration::from_secs(self.whole).saturating_add(fraction));
        };
        UNIX_EPOCH
            .checked_add(since_epoch)?
            .duration_since(now)
            .ok()
    }
}

/// The nanoseconds of a decimal fraction's digits (the first nine read).
fn fraction_nanos(digits: &str) -> u64 {
    let mut nanos = 0u64;
    let mut scale = 100_000_000u64;
    for b in digits.bytes().take(9) {
        nanos += u64::from(b - b'0') * scale;
        scale /= 10;
    }
    nanos
}

/// An RFC 3339 time (`2026-12-01T23:50:38Z`, `2026-12-01T23:50:38.250+01:00`),
/// as Anthropic writes its resets. Written here because the crates in the
/// tree read HTTP dates only (`httpdate`), and a time library for one
/// format is more than the format: fixed-width digits, checked ranges, and
/// arithmetic in `i64` that cannot overflow for a four-digit year. A time
/// before 1970 is `None`.
pub(crate) fn rfc3339(text: &str) -> Option<SystemTime> {
    let b = text.trim().as_bytes();
    if b.len() < 20 || b.len() > 64 {
        return None;
    }
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let at = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(at(4, b"-") && at(7, b"-") && at(10, b"Tt ") && at(13, b":") && at(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0;
    if at(i, b".") {
        let start = i + 1;
        let end = start + b[start..].iter().take_while(|d| d.is_ascii_digit()).count();
        if end == start {
            return None;
        }
        // The digits are ASCII: the slice is valid UTF-8.
        nanos = fraction_nanos(std::str::from_utf8(&b[start..end]).ok()?);
        i = end;
    }
    let offset = match b.get(i..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let offset = h * 3600 + m * 60;
            if *sign == b'+' { offset } else { -offset }
        }
        _ => return None,
    };
    // Days from 1970-01-01 of a proleptic Gregorian date (the civil-days
    // algorithm: years from March, so the leap day ends a year).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset;
    let seconds = u64::try_from(seconds).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(seconds, u32::try_from(nanos).ok()?))
}

/// A header map from `(name, value)` pairs, for the unit tests of the
/// readers and the fuzz targets: a pair whose name or value is not a valid
/// header is left out, as the HTTP stack would refuse it.
#[cfg(any(test, fuzzing))]
pub(crate) fn header_map<V: AsRef<[u8]>>(pairs: &[(&str, V)]) -> HeaderMap {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value.as_ref()),
        ) {
            map.append(name, value);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        header_map(pairs)
    }

    fn delay(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
        retry_after(headers, now).map(|hint| hint.delay)
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
    fn the_hint_names_the_header_whose_value_was_used() {
        let h = headers(&[("retry-after", "1"), ("retry-after-ms", "250")]);
        let hint = retry_after(&h, SystemTime::now()).expect("a hint");
        assert_eq!(hint.delay, Duration::from_millis(250));
        assert_eq!((hint.header, hint.value), ("retry-after-ms", "250"));
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
    #[test]
    fn absurd_waits_saturate_instead_of_failing() {
        let huge = "9".repeat(400);
        assert_eq!(parse_millis(&huge), Some(Duration::MAX));
        assert_eq!(duration(&format!("{huge}h")), Some(Duration::MAX));
        assert_eq!(duration(&format!("{huge}h{huge}m")), Some(Duration::MAX));
    }

    #[test]
    fn rfc3339_times_are_read_with_their_offsets() {
        let at = |text| rfc3339(text).map(|t| t.duration_since(UNIX_EPOCH).ok());
        assert_eq!(at("1970-01-01T00:00:00Z"), Some(Some(Duration::ZERO)));
        assert_eq!(
            at("2000-03-01T00:00:00Z"),
            Some(Some(Duration::from_secs(951_868_800)))
        );
        assert_eq!(
            at("2000-03-01T01:30:00+01:30"),
            Some(Some(Duration::from_secs(951_868_800)))
        );
        assert_eq!(
            at("2024-02-29t12:00:00.123456789123z"),
            Some(Some(Duration::new(1_709_208_000, 123_456_789)))
        );
        for bad in [
            "1969-12-31T23:59:59Z",
            "2024-02-30T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00+1:00",
            "2024-01-01T00:00:00.Z",
            "２０２４-01-01T00:00:00Z",
            "",
        ] {
            assert_eq!(rfc3339(bad), None, "{bad}");
        }
    }
}
