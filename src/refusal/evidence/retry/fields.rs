//! The rate-limit fields of an answer, in the four dialects engines send,
//! read into one [`Fields`]: what is left of the requests window with the
//! least left (the budget), and the longest wait among the windows with
//! nothing left (a hold).
//!
//! | dialect | remaining | reset |
//! |---|---|---|
//! | IETF (`RateLimit`, `RateLimit-Policy`) | `r=` of each item | `t=`, seconds |
//! | the older IETF draft | `ratelimit-remaining` | `ratelimit-reset`, seconds |
//! | OpenAI | `x-ratelimit-remaining-{requests,tokens}` | `x-ratelimit-reset-…`, `1.2s`, `6m0s`, `120ms` |
//! | Anthropic | `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining` | `…-reset`, an RFC 3339 time |
//! | the common convention | `x-ratelimit-remaining` | `x-ratelimit-reset`, seconds, or a Unix time above 10^9 |
//!
//! Every value is read from the door's concealed header text. A figure is
//! 1 to 20 ASCII digits that fit a `u64`, or it is ignored (a negative,
//! fractional or huge "remaining" names no window); a reset that is not in
//! the future is no window; a reset too far off saturates, and the limits
//! cut it to their ceiling. Nothing here panics, and the work is bounded
//! by the headers' own size.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

use super::super::header_text;
use super::{duration, ratelimit_param};

/// One window an answer named: what is left of which limit, and until
/// when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Left {
    /// What the limit counts, as a reason names it: `requests`, `tokens`,
    /// `input tokens`, `output tokens`, or `units` for an IETF quota unit
    /// other than requests.
    pub(crate) what: &'static str,
    pub(crate) remaining: u64,
    /// The window's limit, when the answer named it.
    pub(crate) limit: Option<u64>,
    /// How long until the window resets, from when the answer was read.
    pub(crate) reset: Duration,
    /// The header the reset came from (its value is quoted from there).
    pub(crate) header: &'static str,
}

/// What an answer's rate-limit fields said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    /// The requests window with the least left (with its reset): what a
    /// budget is kept from.
    pub(crate) budget: Option<Left>,
    /// Of the windows with nothing left (requests, tokens or any other
    /// unit), the one that resets last: a hold until then.
    pub(crate) exhausted: Option<Left>,
}

/// The most items of an IETF `RateLimit` field read: a field of thousands
/// costs no more than this.
const MAX_ITEMS: usize = 16;

/// Above this, `X-RateLimit-Reset` is a Unix time, not seconds.
const UNIX_TIME_FROM: u64 = 1_000_000_000;

const OPENAI: [(&str, &str, &str, &str); 2] = [
    (
        "requests",
        "x-ratelimit-limit-requests",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
    ),
    (
        "tokens",
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-tokens",
    ),
];

const ANTHROPIC: [(&str, &str, &str, &str); 4] = [
    (
        "requests",
        "anthropic-ratelimit-requests-limit",
        "anthropic-ratelimit-requests-remaining",
        "anthropic-ratelimit-requests-reset",
    ),
    (
        "tokens",
        "anthropic-ratelimit-tokens-limit",
        "anthropic-ratelimit-tokens-remaining",
        "anthropic-ratelimit-tokens-reset",
    ),
    (
        "input tokens",
        "anthropic-ratelimit-input-tokens-limit",
        "anthropic-ratelimit-input-tokens-remaining",
        "anthropic-ratelimit-input-tokens-reset",
    ),
    (
        "output tokens",
        "anthropic-ratelimit-output-tokens-limit",
        "anthropic-ratelimit-output-tokens-remaining",
        "anthropic-ratelimit-output-tokens-reset",
    ),
];

/// Whether `headers` may hold a field: most answers carry none of the
/// headers read, and every one read has `ratelimit` in its name, so one
/// look at each name the answer has is cheaper than a lookup of each of
/// the two dozen names.
fn any(headers: &HeaderMap) -> bool {
    headers
        .keys()
        .any(|name| name.as_str().contains("ratelimit"))
}

impl Fields {
    /// The fields of `headers` (concealed at the door), resets measured
    /// from now: the clock is read only when there are any.
    pub(crate) fn read_now(headers: &HeaderMap) -> Fields {
        if !any(headers) {
            return Fields::default();
        }
        Fields::read(headers, SystemTime::now())
    }

    /// The fields of `headers` (concealed at the door), resets measured
    /// from `now`.
    pub(crate) fn read(headers: &HeaderMap, now: SystemTime) -> Fields {
        let mut fields = Fields::default();
        if !any(headers) {
            return fields;
        }
        ietf(headers, &mut fields);
        let figure = |name| header_text(headers, name).and_then(count);
        if let (Some(remaining), Some(reset)) = (
            figure("ratelimit-remaining"),
            header_text(headers, "ratelimit-reset").and_then(duration),
        ) {
            let limit = figure("ratelimit-limit");
            fields.add("requests", remaining, limit, reset, "ratelimit-reset");
        }
        for (what, limit, remaining, reset) in OPENAI {
            if let (Some(remaining), Some(wait)) = (
                figure(remaining),
                header_text(headers, reset).and_then(duration),
            ) {
                fields.add(what, remaining, figure(limit), wait, reset);
            }
        }
        for (what, limit, remaining, reset) in ANTHROPIC {
            if let (Some(remaining), Some(wait)) = (
                figure(remaining),
                header_text(headers, reset)
                    .and_then(rfc3339)
                    .and_then(|at| at.duration_since(now).ok()),
            ) {
                fields.add(what, remaining, figure(limit), wait, reset);
            }
        }
        if let (Some(remaining), Some(wait)) = (
            figure("x-ratelimit-remaining"),
            header_text(headers, "x-ratelimit-reset").and_then(|reset| unix_or_seconds(reset, now)),
        ) {
            let limit = figure("x-ratelimit-limit");
            fields.add("requests", remaining, limit, wait, "x-ratelimit-reset");
        }
        fields
    }

    /// Counts one window: a requests window with less left than the budget
    /// so far becomes it; a window with nothing left that resets later than
    /// the one so far becomes the hold. A reset of zero is no window.
    fn add(
        &mut self,
        what: &'static str,
        remaining: u64,
        limit: Option<u64>,
        reset: Duration,
        header: &'static str,
    ) {
        if reset.is_zero() {
            return;
        }
        // An engine that says more is left than its limit is believed as
        // far as its limit.
        let remaining = limit.map_or(remaining, |limit| remaining.min(limit));
        let left = Left {
            what,
            remaining,
            limit,
            reset,
            header,
        };
        if remaining == 0
            && self
                .exhausted
                .as_ref()
                .is_none_or(|held| held.reset < reset)
        {
            self.exhausted = Some(left.clone());
        }
        if what == "requests"
            && self
                .budget
                .as_ref()
                .is_none_or(|budget| remaining < budget.remaining)
        {
            self.budget = Some(left);
        }
    }
}

/// The items of an IETF `RateLimit` field (`"default";r=12;t=30,
/// "daily";r=900;t=3600`), each with its policy's quota and unit from
/// `RateLimit-Policy` (`"default";q=100;w=60;qu="requests"`) when that names
/// it; and the older drafts' one-item form (`limit=10, remaining=0,
/// reset=7`).
fn ietf(headers: &HeaderMap, fields: &mut Fields) {
    let Some(field) = header_text(headers, "ratelimit") else {
        return;
    };
    let policy = header_text(headers, "ratelimit-policy");
    let mut any = false;
    for item in field.split(',').take(MAX_ITEMS) {
        let (Some(remaining), Some(reset)) = (
            ratelimit_param(item, "r"),
            ratelimit_param(item, "t").and_then(duration),
        ) else {
            continue;
        };
        any = true;
        let Some(remaining) = count(remaining) else {
            continue;
        };
        let name = item.split(';').next().unwrap_or_default().trim();
        let policy = policy.and_then(|policy| {
            policy
                .split(',')
                .take(MAX_ITEMS)
                .find(|p| p.split(';').next().unwrap_or_default().trim() == name)
        });
        let limit = policy.and_then(|p| ratelimit_param(p, "q")).and_then(count);
        let unit = policy.and_then(|p| ratelimit_param(p, "qu"));
        let what = match unit.map(|unit| unit.trim_matches('"')) {
            None | Some("requests") => "requests",
            Some(_) => "units",
        };
        fields.add(what, remaining, limit, reset, "ratelimit");
    }
    if !any
        && let (Some(remaining), Some(reset)) = (
            ratelimit_param(field, "remaining").and_then(count),
            ratelimit_param(field, "reset").and_then(duration),
        )
    {
        let limit = ratelimit_param(field, "limit").and_then(count);
        fields.add("requests", remaining, limit, reset, "ratelimit");
    }
}

/// A figure: 1 to 20 ASCII digits that fit a `u64`. A sign, a fraction or
/// a number past 2^64 − 1 names nothing this transport believes.
pub(crate) fn count(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `X-RateLimit-Reset`: seconds (`30`, `1.5`), or a Unix time when above
/// 10^9 (`1764580000`), measured from `now`; a time not in the future is
/// no window.
fn unix_or_seconds(text: &str, now: SystemTime) -> Option<Duration> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || whole.len() > 20 || !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole: u64 = whole.parse().unwrap_or(u64::MAX);
    let nanos = fraction_nanos(fraction);
    let value = Duration::from_secs(whole).saturating_add(Duration::from_nanos(nanos));
    if whole > UNIX_TIME_FROM {
        let at = UNIX_EPOCH.checked_add(value)?;
        at.duration_since(now).ok()
    } else {
        Some(value)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::evidence::header_map as headers;

    const NOW: Duration = Duration::from_secs(1_800_000_000);

    fn read(pairs: &[(&str, &str)]) -> Fields {
        Fields::read(&headers(pairs), UNIX_EPOCH + NOW)
    }

    fn budget(pairs: &[(&str, &str)]) -> Option<(u64, Duration)> {
        read(pairs).budget.map(|left| (left.remaining, left.reset))
    }

    #[test]
    fn each_dialect_gives_the_requests_left_and_the_reset() {
        let secs = Duration::from_secs;
        assert_eq!(
            budget(&[("ratelimit", "\"default\";r=12;t=30")]),
            Some((12, secs(30)))
        );
        assert_eq!(
            budget(&[
                ("x-ratelimit-remaining-requests", "59"),
                ("x-ratelimit-reset-requests", "1.2s"),
                ("x-ratelimit-limit-requests", "60"),
            ]),
            Some((59, Duration::from_millis(1200)))
        );
        assert_eq!(
            budget(&[
                ("anthropic-ratelimit-requests-remaining", "4"),
                (
                    "anthropic-ratelimit-requests-reset",
                    "2027-01-15T08:00:02.5Z"
                ),
            ]),
            Some((4, Duration::from_millis(2500)))
        );
        assert_eq!(
            budget(&[
                ("x-ratelimit-remaining", "7"),
                ("x-ratelimit-reset", "1800000010"),
            ]),
            Some((7, secs(10)))
        );
        assert_eq!(
            budget(&[("x-ratelimit-remaining", "7"), ("x-ratelimit-reset", "10")]),
            Some((7, secs(10)))
        );
        assert_eq!(
            budget(&[("ratelimit-remaining", "3"), ("ratelimit-reset", "9")]),
            Some((3, secs(9)))
        );
        assert_eq!(
            budget(&[("ratelimit", "limit=10, remaining=2, reset=5")]),
            Some((2, secs(5)))
        );
    }

    #[test]
    fn the_smallest_requests_window_wins_with_its_reset() {
        let fields = read(&[
            ("ratelimit", "\"minute\";r=50;t=60, \"second\";r=2;t=1"),
            (
                "ratelimit-policy",
                "\"minute\";q=100;w=60, \"second\";q=5;w=1",
            ),
            ("x-ratelimit-remaining-requests", "9"),
            ("x-ratelimit-reset-requests", "6m0s"),
        ]);
        let budget = fields.budget.expect("a budget");
        assert_eq!(
            (budget.remaining, budget.reset, budget.limit),
            (2, Duration::from_secs(1), Some(5))
        );
        assert_eq!(fields.exhausted, None);
    }

    #[test]
    fn a_tokens_window_with_nothing_left_holds_and_budgets_nothing() {
        let fields = read(&[
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "120ms"),
            ("anthropic-ratelimit-output-tokens-remaining", "0"),
            (
                "anthropic-ratelimit-output-tokens-reset",
                "2027-01-15T08:00:03Z",
            ),
        ]);
        assert_eq!(fields.budget, None);
        let held = fields.exhausted.expect("a hold");
        assert_eq!(
            (held.what, held.reset),
            ("output tokens", Duration::from_secs(3))
        );
        let units = read(&[
            ("ratelimit", "\"bytes\";r=0;t=4"),
            ("ratelimit-policy", "\"bytes\";q=1000;qu=\"content-bytes\""),
        ]);
        assert_eq!(units.budget, None);
        assert_eq!(units.exhausted.map(|left| left.what), Some("units"));
    }

    #[test]
    fn nonsense_names_no_window() {
        let huge = "18446744073709551616";
        for remaining in ["-1", huge, "1.5", "lots", "", "1e3", "+3"] {
            for (name, reset_name, reset) in [
                (
                    "x-ratelimit-remaining-requests",
                    "x-ratelimit-reset-requests",
                    "1s",
                ),
                ("x-ratelimit-remaining", "x-ratelimit-reset", "5"),
                (
                    "anthropic-ratelimit-requests-remaining",
                    "anthropic-ratelimit-requests-reset",
                    "2027-01-15T08:00:03Z",
                ),
            ] {
                let fields = read(&[(name, remaining), (reset_name, reset)]);
                assert_eq!(fields, Fields::default(), "{name}: {remaining:?}");
            }
            let item = format!("\"d\";r={remaining};t=5");
            assert_eq!(read(&[("ratelimit", &item)]), Fields::default(), "{item}");
        }
        // Resets in the past, now, or unreadable: no window.
        for (name, reset) in [
            ("anthropic-ratelimit-requests-reset", "2020-01-01T00:00:00Z"),
            ("anthropic-ratelimit-requests-reset", "2027-13-01T00:00:00Z"),
            ("anthropic-ratelimit-requests-reset", "2027-02-29T00:00:00Z"),
            ("anthropic-ratelimit-requests-reset", "2027-01-15 08:00:03"),
            ("x-ratelimit-reset", "1700000000"),
            ("x-ratelimit-reset", "-5"),
            ("x-ratelimit-reset", "0"),
        ] {
            let remaining = name.replace("reset", "remaining");
            let fields = read(&[(remaining.as_str(), "0"), (name, reset)]);
            assert_eq!(fields, Fields::default(), "{name}: {reset}");
        }
    }

    #[test]
    fn far_resets_saturate_and_more_than_the_limit_is_the_limit() {
        // A Unix time past what the clock can name is no window; one the
        // clock can name, a long one (the limits cut it to their ceiling).
        let unnamed = read(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &u64::MAX.to_string()),
        ]);
        assert_eq!(unnamed, Fields::default());
        let far = read(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "99999999999"),
        ]);
        assert!(
            far.exhausted
                .is_some_and(|left| left.reset > Duration::from_secs(1 << 36))
        );
        let ten_years = read(&[
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2037-01-15T08:00:00Z"),
        ]);
        assert!(ten_years.exhausted.is_some());
        let t = "9".repeat(40);
        let saturated = read(&[("ratelimit", format!("\"d\";r=0;t={t}").as_str())]);
        assert_eq!(
            saturated.exhausted.map(|left| left.reset),
            Some(Duration::from_secs(u64::MAX))
        );
        let over = budget(&[
            ("x-ratelimit-limit-requests", "10"),
            ("x-ratelimit-remaining-requests", "900"),
            ("x-ratelimit-reset-requests", "1s"),
        ]);
        assert_eq!(over, Some((10, Duration::from_secs(1))));
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
