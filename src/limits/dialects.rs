//! The rate-limit fields of an answer, in the dialects engines send, read
//! into one [`RateFields`]: what is left of the requests window with the least
//! left (the budget), and the longest wait among the windows with nothing
//! left (a hold).
//!
//! The dialects are a table ([`DIALECTS`]), each entry a window some engine
//! names in three fields of its own, what it counts ([`Unit`]) and how its
//! reset is written besides a bare number; the IETF structured field, which
//! names every window in one, is read beside it:
//!
//! | dialect | remaining | reset |
//! |---|---|---|
//! | IETF (`RateLimit`, `RateLimit-Policy`) | `r=` of each item | `t=`, seconds |
//! | the older IETF draft | `ratelimit-remaining` | `ratelimit-reset`, seconds |
//! | OpenAI | `x-ratelimit-remaining-{requests,tokens}` | `x-ratelimit-reset-…`, `1.2s`, `6m0s`, `120ms` |
//! | Anthropic | `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining` | `…-reset`, an RFC 3339 time |
//! | the common convention | `x-ratelimit-remaining` | `x-ratelimit-reset`, seconds |
//!
//! Most answers carry none of these fields, so an answer is first looked
//! over for any name the table holds ([`named`]), derived from the table
//! itself: a dialect added to it is never skipped.
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
//! by the headers' own size. The forms a reset is written in are read in
//! [`crate::hint`].

use std::fmt;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderValue};

use crate::hint::{Bare, duration, header_text, rfc3339};
use crate::text::{bound_whole, tame};

/// What a limit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Requests,
    Tokens,
    InputTokens,
    OutputTokens,
    /// An IETF quota unit other than requests (`qu="content-bytes"`).
    Other,
}

impl Unit {
    /// The unit as a reason names it.
    pub(crate) fn counted(self) -> &'static str {
        match self {
            Unit::Requests => "requests",
            Unit::Tokens => "tokens",
            Unit::InputTokens => "input tokens",
            Unit::OutputTokens => "output tokens",
            Unit::Other => "units",
        }
    }
}

/// How a dialect writes a reset when it is not a bare number.
#[derive(Clone, Copy, Debug)]
enum Written {
    /// Only bare numbers.
    Bare,
    /// A Go duration (`1s`, `6m0s`, `120ms`), as OpenAI writes it.
    GoDuration,
    /// An RFC 3339 time, as Anthropic writes it.
    Rfc3339,
}

/// One window a dialect names in three fields of its own.
#[derive(Debug)]
pub(crate) struct Dialect {
    unit: Unit,
    limit: &'static str,
    remaining: &'static str,
    reset: &'static str,
    written: Written,
}

const fn window(
    unit: Unit,
    [limit, remaining, reset]: [&'static str; 3],
    written: Written,
) -> Dialect {
    Dialect {
        unit,
        limit,
        remaining,
        reset,
        written,
    }
}

/// The dialects, each entry with its source. Read in this order: among
/// windows that leave as little, or reset as late, the first read wins.
pub(crate) const DIALECTS: [Dialect; 8] = [
    // The older IETF draft (draft-ietf-httpapi-ratelimit-headers-03 and
    // before), in three fields.
    window(
        Unit::Requests,
        ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"],
        Written::GoDuration,
    ),
    // OpenAI (platform.openai.com/docs/guides/rate-limits): a requests and
    // a tokens window, their resets Go durations.
    window(
        Unit::Requests,
        [
            "x-ratelimit-limit-requests",
            "x-ratelimit-remaining-requests",
            "x-ratelimit-reset-requests",
        ],
        Written::GoDuration,
    ),
    window(
        Unit::Tokens,
        [
            "x-ratelimit-limit-tokens",
            "x-ratelimit-remaining-tokens",
            "x-ratelimit-reset-tokens",
        ],
        Written::GoDuration,
    ),
    // Anthropic (docs.anthropic.com/en/api/rate-limits): four windows,
    // their resets RFC 3339 times.
    window(
        Unit::Requests,
        [
            "anthropic-ratelimit-requests-limit",
            "anthropic-ratelimit-requests-remaining",
            "anthropic-ratelimit-requests-reset",
        ],
        Written::Rfc3339,
    ),
    window(
        Unit::Tokens,
        [
            "anthropic-ratelimit-tokens-limit",
            "anthropic-ratelimit-tokens-remaining",
            "anthropic-ratelimit-tokens-reset",
        ],
        Written::Rfc3339,
    ),
    window(
        Unit::InputTokens,
        [
            "anthropic-ratelimit-input-tokens-limit",
            "anthropic-ratelimit-input-tokens-remaining",
            "anthropic-ratelimit-input-tokens-reset",
        ],
        Written::Rfc3339,
    ),
    window(
        Unit::OutputTokens,
        [
            "anthropic-ratelimit-output-tokens-limit",
            "anthropic-ratelimit-output-tokens-remaining",
            "anthropic-ratelimit-output-tokens-reset",
        ],
        Written::Rfc3339,
    ),
    // The common convention (GitHub's, and many gateways'): seconds, or a
    // Unix time.
    window(
        Unit::Requests,
        [
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
        ],
        Written::Bare,
    ),
];

/// The IETF structured field (draft-ietf-httpapi-ratelimit-headers), which
/// names every window in one (`"default";r=12;t=30`), and its policies.
const STRUCTURED: &str = "ratelimit";
const POLICY: &str = "ratelimit-policy";

/// Every field the table reads.
const NAMES: [&str; 2 + 3 * DIALECTS.len()] = {
    let mut names = [STRUCTURED; 2 + 3 * DIALECTS.len()];
    names[1] = POLICY;
    let mut i = 0;
    while i < DIALECTS.len() {
        names[2 + 3 * i] = DIALECTS[i].limit;
        names[3 + 3 * i] = DIALECTS[i].remaining;
        names[4 + 3 * i] = DIALECTS[i].reset;
        i += 1;
    }
    names
};

/// The first bytes of the names the table reads, for a look at a header's
/// name that is one table load for most of them.
const FIRST_BYTES: [bool; 256] = {
    let mut first = [false; 256];
    let mut i = 0;
    while i < NAMES.len() {
        first[NAMES[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    first
};

/// `name` (a header's, in lower case) as the table names it, when it is
/// one the table reads.
pub(crate) fn named(name: &str) -> Option<&'static str> {
    let first = *name.as_bytes().first()?;
    if !FIRST_BYTES[usize::from(first)] {
        return None;
    }
    NAMES.into_iter().find(|known| *known == name)
}

/// Whether `headers` may hold a field: most answers carry none of the
/// names the table reads, and one look at each name the answer has is
/// cheaper than a lookup of each of the two dozen names.
fn any(headers: &HeaderMap) -> bool {
    headers.keys().any(|name| named(name.as_str()).is_some())
}

/// One window an answer named: what is left of which limit, and until
/// when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Left {
    /// What the limit counts.
    pub(crate) unit: Unit,
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
pub(crate) struct RateFields {
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

impl RateFields {
    /// The fields of `headers` (concealed at the door), resets measured
    /// from now: the clock is read only when there are any.
    pub(crate) fn read_now(headers: &HeaderMap) -> RateFields {
        if !any(headers) {
            return RateFields::default();
        }
        RateFields::read(headers, SystemTime::now())
    }

    /// The fields of `headers` (concealed at the door), resets measured
    /// from `now`.
    pub(crate) fn read(headers: &HeaderMap, now: SystemTime) -> RateFields {
        let mut fields = RateFields::default();
        if !any(headers) {
            return fields;
        }
        ietf(headers, &mut fields, now);
        let figure = |name| header_text(headers, name).and_then(count);
        for dialect in &DIALECTS {
            if let (Some(remaining), Some(reset)) = (
                figure(dialect.remaining),
                reset_field(headers, dialect.reset, dialect.written, now),
            ) {
                fields.add(dialect.unit, remaining, figure(dialect.limit), reset);
            }
        }
        fields
    }

    /// Counts one window: a requests window with less left than the budget
    /// so far becomes it; a window with nothing left that resets later than
    /// the one so far becomes the hold. A reset of zero is no window.
    fn add(
        &mut self,
        unit: Unit,
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
            unit,
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
        if unit == Unit::Requests
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
fn ietf(headers: &HeaderMap, fields: &mut RateFields, now: SystemTime) {
    let (Some(field), Some(value)) = (header_text(headers, STRUCTURED), headers.get(STRUCTURED))
    else {
        return;
    };
    let quoted = || Quoted::new(STRUCTURED, value.clone());
    let policy = header_text(headers, POLICY);
    let mut any = false;
    for item in field.split(',').take(MAX_ITEMS) {
        let (Some(remaining), Some(reset)) = (
            ratelimit_param(item, "r"),
            ratelimit_param(item, "t").and_then(|t| ietf_reset(t, now)),
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
        let unit = match unit.map(|unit| unit.trim_matches('"')) {
            None | Some("requests") => Unit::Requests,
            Some(_) => Unit::Other,
        };
        fields.add(unit, remaining, limit, (reset, quoted()));
    }
    if !any
        && let (Some(remaining), Some(reset)) = (
            ratelimit_param(field, "remaining").and_then(count),
            ratelimit_param(field, "reset").and_then(|t| ietf_reset(t, now)),
        )
    {
        let limit = ratelimit_param(field, "limit").and_then(count);
        fields.add(Unit::Requests, remaining, limit, (reset, quoted()));
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

/// A reset as an IETF field (`t=`, `ratelimit-reset`) writes it, measured
/// from `now`.
pub(crate) fn ietf_reset(text: &str, now: SystemTime) -> Option<Duration> {
    reset(text, Written::GoDuration, now)
}

/// A reset measured from `now`: a bare number as every dialect's is read
/// (seconds, or a Unix time above 10^9, in milliseconds above 10^12), else
/// as the dialect writes it. `None` for text that is neither, or a time not
/// in the future.
fn reset(text: &str, written: Written, now: SystemTime) -> Option<Duration> {
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

/// A parameter of an IETF `RateLimit` field (`"default";r=0;t=30`): `r`
/// is what is left, `t` the seconds until the quota resets.
pub(crate) fn ratelimit_param<'v>(field: &'v str, key: &str) -> Option<&'v str> {
    field
        .split([';', ','])
        .filter_map(|param| param.trim().split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case(key))
        .map(|(_, value)| value.trim())
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::hint::header_map as headers;

    const NOW: Duration = Duration::from_secs(1_800_000_000);

    fn read(pairs: &[(&str, &str)]) -> RateFields {
        RateFields::read(&headers(pairs), UNIX_EPOCH + NOW)
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
                assert_eq!(read(&pairs), RateFields::default(), "{pairs:?}");
            }
        }
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
            (held.unit.counted(), held.reset),
            ("output tokens", Duration::from_secs(3))
        );
        let units = read(&[
            ("ratelimit", "\"bytes\";r=0;t=4"),
            ("ratelimit-policy", "\"bytes\";q=1000;qu=\"content-bytes\""),
        ]);
        assert_eq!(units.budget, None);
        assert_eq!(units.exhausted.map(|left| left.unit), Some(Unit::Other));
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
                assert_eq!(fields, RateFields::default(), "{name}: {remaining:?}");
            }
            let item = format!("\"d\";r={remaining};t=5");
            assert_eq!(
                read(&[("ratelimit", &item)]),
                RateFields::default(),
                "{item}"
            );
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
            assert_eq!(fields, RateFields::default(), "{name}: {reset}");
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
    fn every_name_the_table_reads_is_looked_at_and_no_other() {
        for dialect in &DIALECTS {
            for name in [dialect.limit, dialect.remaining, dialect.reset] {
                assert_eq!(named(name), Some(name));
            }
        }
        assert_eq!(named("ratelimit-policy"), Some("ratelimit-policy"));
        for other in [
            "",
            "content-type",
            "x-ratelimit",
            "retry-after",
            "anthropic-version",
        ] {
            assert_eq!(named(other), None, "{other}");
        }
    }
}
