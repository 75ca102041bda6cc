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
//! | the common convention | `x-ratelimit-remaining` | `x-ratelimit-reset`, seconds |
//!
//! In every dialect a reset that is a bare number (no unit) is read the
//! same way, as engines write it rather than as the dialect's document
//! says: above 10^9 it is a Unix time in seconds, above 10^12 in
//! milliseconds, and below, seconds. An engine that wrote
//! `x-ratelimit-reset-requests: 1796407068` (a Unix time) was once read as
//! asking for 57 years, and held a fleet for the longest hold there is.
//!
//! Every value is read from the door's concealed header text. A figure is
//! 1 to 20 ASCII digits that fit a `u64`, or it is ignored (a negative,
//! fractional or huge "remaining" names no window); a reset that is not in
//! the future is no window; a reset too far off saturates, and the limits
//! cut it to their ceiling. Nothing here panics, and the work is bounded
//! by the headers' own size.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderValue};

use super::super::header_text;
use super::{duration, ratelimit_param};
use crate::text::{bound_whole, tame};

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
    /// The field the reset was read from, as sent.
    pub(crate) field: Quoted,
}

/// A rate-limit field as the engine sent it (its value concealed at the
/// door), for a held refusal to quote: `x-ratelimit-reset-requests:
/// 1796407068`. An operator who reads what the transport made of a field
/// can tell a misread one from an engine that asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Quoted {
    /// The field's name, one of the dialects' own.
    pub(crate) name: &'static str,
    /// Its value; cloning it shares the bytes the answer came with.
    value: HeaderValue,
}

/// The most of a field's value a quote shows.
pub(crate) const MAX_QUOTED: usize = 100;

impl Quoted {
    pub(crate) fn new(name: &'static str, value: HeaderValue) -> Quoted {
        Quoted { name, value }
    }

    /// A quote as [`Quoted`]'s `Display` writes it (`name: value`), read
    /// back from where another process stored it: the name must be one of
    /// the dialects' resets, the value at most [`MAX_QUOTED`] characters of
    /// printable ASCII.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn parse(text: &str) -> Option<Quoted> {
        let (name, value) = text.split_once(": ")?;
        let name = RESETS.into_iter().find(|known| *known == name)?;
        let printable = value.bytes().all(|b| (0x20..0x7f).contains(&b));
        if value.trim().is_empty() || value.len() > MAX_QUOTED || !printable {
            return None;
        }
        Some(Quoted::new(name, HeaderValue::from_str(value).ok()?))
    }

    /// The value as a reason shows it: control characters tamed, at most
    /// [`MAX_QUOTED`] characters, the last three `...` where it was cut (so
    /// that a value shown once shows the same again).
    pub(crate) fn value(&self) -> String {
        let text = String::from_utf8_lossy(self.value.as_bytes());
        let text = tame(&text);
        if text.chars().count() <= MAX_QUOTED {
            return text.into_owned();
        }
        format!("{}...", bound_whole(&text, MAX_QUOTED - 3))
    }
}

impl fmt::Display for Quoted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.value())
    }
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

/// Above this, a bare reset is a Unix time in seconds, not seconds.
const UNIX_SECONDS_FROM: u64 = 1_000_000_000;

/// Above this, a bare reset is a Unix time in milliseconds.
const UNIX_MILLIS_FROM: u64 = 1_000_000_000_000;

/// How a dialect writes a reset when it is not a bare number.
#[derive(Clone, Copy, Debug)]
pub(super) enum Written {
    /// Only bare numbers.
    Bare,
    /// A Go duration (`1s`, `6m0s`, `120ms`), as OpenAI writes it.
    GoDuration,
    /// An RFC 3339 time, as Anthropic writes it.
    Rfc3339,
}

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

/// Every field a reset is read from, as a quote names it.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
const RESETS: [&str; 9] = [
    "ratelimit",
    "ratelimit-reset",
    OPENAI[0].3,
    OPENAI[1].3,
    ANTHROPIC[0].3,
    ANTHROPIC[1].3,
    ANTHROPIC[2].3,
    ANTHROPIC[3].3,
    "x-ratelimit-reset",
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
        ietf(headers, &mut fields, now);
        let figure = |name| header_text(headers, name).and_then(count);
        let reset = |name, written| reset_field(headers, name, written, now);
        if let (Some(remaining), Some(reset)) = (
            figure("ratelimit-remaining"),
            reset("ratelimit-reset", Written::GoDuration),
        ) {
            let limit = figure("ratelimit-limit");
            fields.add("requests", remaining, limit, reset);
        }
        for (what, limit, remaining, name) in OPENAI {
            if let (Some(remaining), Some(reset)) =
                (figure(remaining), reset(name, Written::GoDuration))
            {
                fields.add(what, remaining, figure(limit), reset);
            }
        }
        for (what, limit, remaining, name) in ANTHROPIC {
            if let (Some(remaining), Some(reset)) =
                (figure(remaining), reset(name, Written::Rfc3339))
            {
                fields.add(what, remaining, figure(limit), reset);
            }
        }
        if let (Some(remaining), Some(reset)) = (
            figure("x-ratelimit-remaining"),
            reset("x-ratelimit-reset", Written::Bare),
        ) {
            let limit = figure("x-ratelimit-limit");
            fields.add("requests", remaining, limit, reset);
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
        (reset, field): (Duration, Quoted),
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
            field,
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
fn ietf(headers: &HeaderMap, fields: &mut Fields, now: SystemTime) {
    let (Some(field), Some(value)) = (header_text(headers, "ratelimit"), headers.get("ratelimit"))
    else {
        return;
    };
    let quoted = || Quoted::new("ratelimit", value.clone());
    let policy = header_text(headers, "ratelimit-policy");
    let mut any = false;
    for item in field.split(',').take(MAX_ITEMS) {
        let (Some(remaining), Some(reset)) = (
            ratelimit_param(item, "r"),
            ratelimit_param(item, "t").and_then(|t| reset(t, Written::GoDuration, now)),
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
        fields.add(what, remaining, limit, (reset, quoted()));
    }
    if !any
        && let (Some(remaining), Some(reset)) = (
            ratelimit_param(field, "remaining").and_then(count),
            ratelimit_param(field, "reset").and_then(|t| reset(t, Written::GoDuration, now)),
        )
    {
        let limit = ratelimit_param(field, "limit").and_then(count);
        fields.add("requests", remaining, limit, (reset, quoted()));
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

/// The reset in the field `name` of `headers`, written as `written` or as
/// a bare number, measured from `now`; and the field as sent.
fn reset_field(
    headers: &HeaderMap,
    name: &'static str,
    written: Written,
    now: SystemTime,
) -> Option<(Duration, Quoted)> {
    let reset = reset(header_text(headers, name)?, written, now)?;
    Some((reset, Quoted::new(name, headers.get(name)?.clone())))
}

/// A reset measured from `now`: a bare number as every dialect's is read
/// (seconds, or a Unix time above 10^9, in milliseconds above 10^12), else
/// as the dialect writes it. `None` for text that is neither, or a time not
/// in the future.
pub(super) fn reset(text: &str, written: Written, now: SystemTime) -> Option<Duration> {
    let text = text.trim();
    if let Some(bare) = Bare::read(text) {
        return bare.reset_from(now);
    }
    match written {
        Written::Bare => None,
        Written::GoDuration => duration(text),
        Written::Rfc3339 => rfc3339(text)?.duration_since(now).ok(),
    }
}

/// A number without a unit: digits, and a fraction after a `.`.
struct Bare {
    /// The whole part, saturated to `u64::MAX`.
    whole: u64,
    /// The fraction, in billionths (its first nine digits).
    nanos: u64,
}

impl Bare {
    fn read(text: &str) -> Option<Bare> {
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
    fn reset_from(&self, now: SystemTime) -> Option<Duration> {
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

    /// Each dialect's requests window, `remaining` left, its reset written
    /// as `reset`.
    fn each_dialect(remaining: &str, reset: &str) -> [Vec<(&'static str, String)>; 5] {
        let pair = |left: &'static str, at: &'static str| {
            vec![(left, remaining.to_owned()), (at, reset.to_owned())]
        };
        [
            vec![("ratelimit", format!("\"default\";r={remaining};t={reset}"))],
            pair("ratelimit-remaining", "ratelimit-reset"),
            pair(
                "x-ratelimit-remaining-requests",
                "x-ratelimit-reset-requests",
            ),
            pair(
                "anthropic-ratelimit-requests-remaining",
                "anthropic-ratelimit-requests-reset",
            ),
            pair("x-ratelimit-remaining", "x-ratelimit-reset"),
        ]
    }

    #[test]
    fn a_bare_reset_past_ten_to_the_ninth_is_a_unix_time_in_every_dialect() {
        let in_ten_minutes = NOW + Duration::from_secs(600);
        let seconds = in_ten_minutes.as_secs().to_string();
        let millis = in_ten_minutes.as_millis().to_string();
        let fractional = format!("{}.5", in_ten_minutes.as_secs());
        for (reset, expected) in [
            (seconds.as_str(), Duration::from_secs(600)),
            (millis.as_str(), Duration::from_secs(600)),
            (fractional.as_str(), Duration::from_millis(600_500)),
            ("600", Duration::from_secs(600)),
            ("1000000000", Duration::from_secs(1_000_000_000)),
        ] {
            for pairs in each_dialect("0", reset) {
                let pairs: Vec<(&str, &str)> =
                    pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
                let fields = read(&pairs);
                let held = fields.exhausted.expect("nothing left");
                assert_eq!(held.reset, expected, "{pairs:?}");
                // The field is quoted as sent.
                let quoted = held.field.to_string();
                assert!(quoted.ends_with(reset), "{quoted}");
                assert!(quoted.starts_with(held.field.name), "{quoted}");
            }
        }
        // A Unix time in the past, in seconds or milliseconds, is no window.
        let past = (NOW - Duration::from_secs(60)).as_secs().to_string();
        let past_ms = (NOW - Duration::from_secs(60)).as_millis().to_string();
        for reset in [past, past_ms] {
            for pairs in each_dialect("0", &reset) {
                let pairs: Vec<(&str, &str)> =
                    pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
                assert_eq!(read(&pairs), Fields::default(), "{pairs:?}");
            }
        }
    }

    #[test]
    fn a_quote_reads_back_as_another_process_stored_it() {
        let fields = read(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "1800000600"),
        ]);
        let field = fields.exhausted.expect("nothing left").field;
        let text = field.to_string();
        assert_eq!(text, "x-ratelimit-reset-requests: 1800000600");
        assert_eq!(Quoted::parse(&text), Some(field));
        let long = format!("ratelimit: {}", "r".repeat(MAX_QUOTED + 1));
        for bad in [
            "x-unknown: 5",
            "ratelimit:5",
            "ratelimit: ",
            "ratelimit: a\u{7f}b",
            "ratelimit: caf\u{e9}",
            long.as_str(),
        ] {
            assert_eq!(Quoted::parse(bad), None, "{bad:?}");
        }
        let cut = read(&[(
            "ratelimit",
            format!("\"d\";r=0;t=5, {}", "x".repeat(300)).as_str(),
        )]);
        let quoted = cut.exhausted.expect("nothing left").field.to_string();
        assert!(quoted.ends_with("...") && quoted.len() < 120, "{quoted}");
        let back = Quoted::parse(&quoted).expect("a quote");
        assert_eq!(back.to_string(), quoted, "shown once, shown the same again");
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
        // A Unix time far off is a long window (the limits cut it to
        // their ceiling); the furthest a u64 of milliseconds names, half a
        // billion years.
        let furthest = Duration::from_millis(u64::MAX) - NOW;
        for (reset, at_least) in [
            (u64::MAX.to_string(), furthest),
            ("9".repeat(40), furthest),
            ("99999999999".to_owned(), Duration::from_secs(1 << 36)),
        ] {
            let far = read(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", &reset),
            ]);
            assert!(
                far.exhausted
                    .as_ref()
                    .is_some_and(|left| left.reset >= at_least),
                "{reset}: {far:?}"
            );
        }
        let ten_years = read(&[
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2037-01-15T08:00:00Z"),
        ]);
        assert!(ten_years.exhausted.is_some());
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
