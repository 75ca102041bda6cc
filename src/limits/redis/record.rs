//! The fleet's hold as Redis keeps it and answers it: the record
//! stored under the key (`v1|<asked_at, Unix ms>|<asked, ms>|<why>` for a
//! hold a refusal asked for, `v2|<asked_at>|<asked>|<why>|<field>` for one
//! an answer's fields started, quoting the field; written with every number
//! saturated and read back defensively), the [`FleetHold`]
//! hold a check finds, and how the answers to a check's `PTTL` and
//! `GETRANGE` and to an extend's `EVAL` are read: into what a check
//! [`Found`], or the [`Fault`] an exchange with Redis came to instead.

use std::time::{Duration, UNIX_EPOCH};

use redis::Value;
use reqwest::header::HeaderValue;

use crate::clock::millis;
use crate::limits::dialects::{MAX_QUOTED, Quoted, named};
use crate::limits::fleet::{FleetHold, Record, Turn};

/// The most of a value that is read back (`GETRANGE 0 255`): a key someone
/// filled with megabytes costs no more than this.
pub(super) const MAX_VALUE: usize = 256;

/// The longest `why` stored and read back.
const MAX_WHY: usize = 160;

/// The longest hold stored, in ms: thirty years, as `clock::later` saturates.
pub(super) const MAX_PX: u64 = 30 * 365 * 24 * 3600 * 1000;

/// What is stored when a hold's `why` is not one this format can carry.
const FALLBACK_WHY: &str = "the engine's limits";

/// The version tag that opens the value of a hold a refusal asked for.
const FORMAT: &str = "v1";

/// The version tag that opens the value of a hold an answer's fields
/// started: a scout may go through it. A process that reads only `v1`
/// ignores it, and keeps to its own hold.
const SAID: &str = "v2";

/// Why an exchange with Redis came to nothing.
pub(super) enum Fault {
    /// No answer within the wait: from the connect under way (which goes
    /// on), or from Redis over a connection it had taken.
    Slow { connected: bool },
    /// The connect failed, and why.
    Unreachable(String),
    /// The connection failed or answered something that is not Redis's
    /// protocol, and why.
    Broken(String),
    /// Redis answered with an error: its code.
    Refused(String),
    /// Redis answered, but not as Redis answers these commands.
    Garbage,
    /// No answer within [`LATE`](super::LATE), even in the background.
    Late,
}

/// What a check found under the key.
pub(super) enum Found {
    Nothing,
    Hold(FleetHold),
    /// A value this code did not write, and what is wrong with it.
    Garbage(&'static str),
}

impl Record {
    /// `v1|<asked_at ms>|<asked ms>|<why>`, or `v2|…|<why>|<field>` when
    /// an answer's fields started it; every number saturated, a `why` the
    /// format cannot carry replaced, and the field's value cut so that the
    /// whole is read back (shorter than [`MAX_VALUE`]).
    pub(super) fn encode(&self) -> String {
        let at = self.asked_at.duration_since(UNIX_EPOCH).map_or(0, millis);
        let asked = millis(self.asked);
        let fits = why_fits(&self.why) && !(self.field.is_some() && self.why.contains('|'));
        let why = if fits {
            self.why.as_str()
        } else {
            FALLBACK_WHY
        };
        let Some(field) = &self.field else {
            return format!("{FORMAT}|{at}|{asked}|{why}");
        };
        let head = format!("{SAID}|{at}|{asked}|{why}|{}: ", field.name);
        let room = (MAX_VALUE - 1).saturating_sub(head.len());
        format!("{head}{}", ascii_within(&field.value(), room))
    }

    /// What [`crate::fuzzing::shared_record`] shows of a decoded value,
    /// and the value its record encodes to.
    #[cfg(fuzzing)]
    #[allow(clippy::type_complexity)]
    pub(crate) fn decode_for_fuzzing(
        value: &[u8],
    ) -> Option<((String, u128, u128, Option<String>), String)> {
        let record = Record::decode(value)?;
        let at = record
            .asked_at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis());
        // As a held refusal says it: a date no HTTP date names included.
        let _ = crate::clock::http_date(record.asked_at);
        let field = record.field.as_ref().map(ToString::to_string);
        let shown = (record.why.clone(), record.asked.as_millis(), at, field);
        Some((shown, record.encode()))
    }

    /// The record `value` holds, or `None` for anything this code did not
    /// write: another version, a number that does not fit, a `why` too long
    /// or with control characters.
    fn decode(value: &[u8]) -> Option<Record> {
        // A value as long as what is read may have been cut.
        if value.len() >= MAX_VALUE {
            return None;
        }
        let value = std::str::from_utf8(value).ok()?;
        let (said, rest) = match value.split_once('|')? {
            (FORMAT, rest) => (false, rest),
            (SAID, rest) => (true, rest),
            _ => return None,
        };
        let mut parts = rest.splitn(if said { 4 } else { 3 }, '|');
        let at = read_millis(parts.next()?)?;
        let asked = read_millis(parts.next()?)?;
        let why = parts.next()?;
        if !why_fits(why) {
            return None;
        }
        let field = match parts.next() {
            Some(field) => Some(quoted(field)?),
            None if said => return None,
            None => None,
        };
        Some(Record {
            why: why.to_owned(),
            asked: Duration::from_millis(asked),
            asked_at: UNIX_EPOCH.checked_add(Duration::from_millis(at))?,
            field,
        })
    }
}

/// A quoted field as the fleet stores it: printable ASCII, its value cut
/// to [`MAX_QUOTED`] characters (read back with [`quoted`]).
pub(super) fn storable(field: &Quoted) -> String {
    format!(
        "{}: {}",
        field.name,
        ascii_within(&field.value(), MAX_QUOTED)
    )
}

/// A quote as [`Quoted`]'s `Display` writes it (`name: value`), read back
/// from where another process stored it: the name must be one the
/// dialects read, the value at most [`MAX_QUOTED`] characters of printable
/// ASCII.
pub(super) fn quoted(text: &str) -> Option<Quoted> {
    let (name, value) = text.split_once(": ")?;
    let name = named(name)?;
    let printable = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    if value.trim().is_empty() || value.len() > MAX_QUOTED || !printable {
        return None;
    }
    Some(Quoted::new(name, HeaderValue::from_str(value).ok()?))
}

/// `text` with every character that is not printable ASCII as `?`, cut to
/// `room` bytes.
fn ascii_within(text: &str, room: usize) -> String {
    text.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .take(room)
        .collect()
}

/// What a check's `PTTL` and `GETRANGE` answered.
fn read_check(answer: Value) -> Result<Found, Fault> {
    let Value::Array(items) = answer else {
        return Err(Fault::Garbage);
    };
    let [ttl, value] = items.as_slice() else {
        return Err(Fault::Garbage);
    };
    let value: &[u8] = match value {
        Value::BulkString(bytes) => bytes,
        Value::Nil => &[],
        Value::ServerError(error) if error.code() == "WRONGTYPE" => {
            return Ok(Found::Garbage("it is not a string"));
        }
        Value::ServerError(error) => return Err(Fault::Refused(error_code(error.code()))),
        _ => return Err(Fault::Garbage),
    };
    let ttl = match ttl {
        Value::Int(ms) => *ms,
        Value::ServerError(error) => return Err(Fault::Refused(error_code(error.code()))),
        _ => return Err(Fault::Garbage),
    };
    match ttl {
        // No key, or one that expired between the two commands.
        -2 | 0 => Ok(Found::Nothing),
        -1 => Ok(Found::Garbage("it never expires")),
        ms if ms > 0 => {
            if value.is_empty() {
                return Ok(Found::Nothing);
            }
            let left = Duration::from_millis(ms.unsigned_abs());
            Ok(match Record::decode(value) {
                Some(record) => Found::Hold(FleetHold { left, record }),
                None => Found::Garbage("it is not a hold in this transport's format"),
            })
        }
        _ => Err(Fault::Garbage),
    }
}

/// What an ask's `EVAL` answered: the hold's `PTTL` and value (read as a
/// check's), then the budget's code and its two numbers.
pub(super) fn read_ask(answer: Value) -> Result<(Found, Turn), Fault> {
    let Value::Array(items) = answer else {
        return Err(Fault::Garbage);
    };
    let items = match items.as_slice() {
        [Value::Array(items)] => items,
        [Value::ServerError(error)] => return Err(Fault::Refused(error_code(error.code()))),
        _ => return Err(Fault::Garbage),
    };
    let [ttl, value, code, left, ms, field] = items.as_slice() else {
        return Err(Fault::Garbage);
    };
    let found = read_check(Value::Array(vec![ttl.clone(), value.clone()]))?;
    let number = |value: &Value| match value {
        Value::Int(n) => u64::try_from(*n).map_err(|_| Fault::Garbage),
        _ => Err(Fault::Garbage),
    };
    let reset = Duration::from_millis(number(ms)?.min(MAX_PX));
    let budget = match number(code)? {
        0 => Turn::Open,
        1 => Turn::Took {
            left: number(left)?,
            reset,
        },
        2 => Turn::Spent {
            reset,
            field: match field {
                Value::BulkString(bytes) => std::str::from_utf8(bytes).ok().and_then(quoted),
                _ => None,
            },
        },
        3 => Turn::First,
        4 => Turn::AfterFirst { reset },
        5 => Turn::Scout,
        _ => return Err(Fault::Garbage),
    };
    Ok((found, budget))
}

/// What an extend's `EVAL` answered: `0` or `1`.
pub(super) fn read_extend(answer: Value) -> Result<(), Fault> {
    let Value::Array(items) = answer else {
        return Err(Fault::Garbage);
    };
    match items.as_slice() {
        [Value::Int(0 | 1)] => Ok(()),
        [Value::ServerError(error)] => Err(Fault::Refused(error_code(error.code()))),
        _ => Err(Fault::Garbage),
    }
}

/// A number of milliseconds as this code writes it: 1 to 20 ASCII digits
/// that fit in a u64 (no sign, no space).
fn read_millis(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Whether `why` can be stored and read back: 1 to 160 bytes of printable
/// ASCII.
fn why_fits(why: &str) -> bool {
    !why.is_empty() && why.len() <= MAX_WHY && why.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// A server's error code as a log may quote it: a short word of capitals,
/// or "an error".
pub(super) fn error_code(code: &str) -> String {
    let word = code.len() <= 32
        && !code.is_empty()
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if word {
        code.to_owned()
    } else {
        "an error".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;
    use crate::limits::dialects::RateFields;
    use crate::limits::redis::tests::record;

    #[test]
    fn a_record_reads_back_and_anything_else_is_ignored() {
        let asked = record("HTTP 429", Duration::from_millis(1500));
        assert_eq!(Record::decode(asked.encode().as_bytes()), Some(asked));
        let odd = record("a\nb", Duration::MAX);
        let back = Record::decode(odd.encode().as_bytes()).expect("a record");
        assert_eq!(back.why, FALLBACK_WHY);
        assert_eq!(back.asked, Duration::from_millis(u64::MAX));
        let before_epoch = Record {
            asked_at: UNIX_EPOCH - Duration::from_secs(1),
            ..record("HTTP 429", Duration::ZERO)
        };
        assert_eq!(
            Record::decode(before_epoch.encode().as_bytes()).map(|r| r.asked_at),
            Some(UNIX_EPOCH)
        );
        let long_why = "w".repeat(MAX_WHY + 1);
        let garbage: [&[u8]; 14] = [
            b"",
            b"junk",
            b"v2|1|2|HTTP 429",
            b"v1|1|2",
            b"v1|1|2|",
            b"v1|+1|2|HTTP 429",
            b"v1|1|-2|HTTP 429",
            b"v1| 1|2|HTTP 429",
            b"v1|18446744073709551616|2|HTTP 429",
            b"v1|1|99999999999999999999|HTTP 429",
            b"v1|1|2|HTTP\x1b[2J",
            b"v1|1|2|\xff\xfe",
            b"\xff",
            long_why.as_bytes(),
        ];
        for value in garbage {
            assert_eq!(Record::decode(value), None, "{value:?}");
        }
        let long = format!("v1|1|2|{long_why}");
        assert_eq!(Record::decode(long.as_bytes()), None);
        // The furthest instant a u64 of ms names still fits a SystemTime.
        let far = format!("v1|{}|2|HTTP 429", u64::MAX);
        assert!(Record::decode(far.as_bytes()).is_some());
    }

    #[test]
    fn a_hold_an_answers_fields_started_reads_back_with_its_field() {
        let value = HeaderValue::from_static("1796407068");
        let field = Quoted::new("x-ratelimit-reset-requests", value);
        let said = Record {
            field: Some(field.clone()),
            ..record(
                "the rate-limit fields of an answer",
                Duration::from_secs(600),
            )
        };
        let encoded = said.encode();
        assert!(encoded.starts_with("v2|"), "{encoded}");
        assert!(
            encoded.ends_with(
                "|the rate-limit fields of an answer|x-ratelimit-reset-requests: 1796407068"
            ),
            "{encoded}"
        );
        assert_eq!(Record::decode(encoded.as_bytes()), Some(said.clone()));
        // A long field is cut so that the whole is read back; a `why` with
        // the separator is replaced.
        let long = HeaderValue::from_str(&"7".repeat(300)).expect("a value");
        let cut = Record {
            field: Some(Quoted::new("ratelimit", long)),
            why: "w|".repeat(80),
            ..said.clone()
        };
        let encoded = cut.encode();
        assert!(encoded.len() < MAX_VALUE, "{}", encoded.len());
        let back = Record::decode(encoded.as_bytes()).expect("a record");
        assert_eq!(back.why, FALLBACK_WHY);
        let shown = back.field.expect("a field").to_string();
        assert!(
            shown.starts_with("ratelimit: 777") && shown.ends_with("..."),
            "{shown}"
        );
        for garbage in [
            "v2|1|2|why",
            "v2|1|2|why|x-unknown: 5",
            "v2|1|2|why|ratelimit:5",
            "v2|1|2|why|ratelimit: \u{1b}[2J",
        ] {
            assert_eq!(Record::decode(garbage.as_bytes()), None, "{garbage:?}");
        }
        let too_long = format!("v1|1|2|{}", "w".repeat(MAX_VALUE));
        assert_eq!(Record::decode(too_long.as_bytes()), None);
    }

    #[test]
    fn a_quote_reads_back_as_another_process_stored_it() {
        let headers = crate::hint::header_map(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "1800000600"),
        ]);
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let fields = RateFields::read(&headers, now);
        let field = fields.exhausted.expect("nothing left").field;
        let text = field.to_string();
        assert_eq!(text, "x-ratelimit-reset-requests: 1800000600");
        assert_eq!(quoted(&text), Some(field));
        let long = format!("ratelimit: {}", "r".repeat(MAX_QUOTED + 1));
        for bad in [
            "x-unknown: 5",
            "ratelimit:5",
            "ratelimit: ",
            "ratelimit: a\u{7f}b",
            "ratelimit: caf\u{e9}",
            long.as_str(),
        ] {
            assert_eq!(quoted(bad), None, "{bad:?}");
        }
        let long = format!("\"d\";r=0;t=5, {}", "x".repeat(300));
        let cut = RateFields::read(&crate::hint::header_map(&[("ratelimit", long)]), now);
        let shown = cut.exhausted.expect("nothing left").field.to_string();
        assert!(shown.ends_with("...") && shown.len() < 120, "{shown}");
        let back = quoted(&shown).expect("a quote");
        assert_eq!(back.to_string(), shown, "shown once, shown the same again");
    }

    #[test]
    fn a_fleet_hold_longer_than_the_ceiling_is_cut_to_it() {
        let now = Instant::now();
        let shared = FleetHold {
            left: Duration::MAX,
            record: record("HTTP 429", Duration::MAX),
        };
        let hold = shared.hold(now, Duration::from_secs(60), String::new());
        assert_eq!(hold.until, now + Duration::from_secs(60));
        assert_eq!(hold.ceiling, Some(Duration::from_secs(60)));
        let _ = shared.hold(now, Duration::MAX, String::new());
    }
}
