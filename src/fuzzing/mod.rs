//! The crate's private readers of engine text, for the fuzz targets in
//! `fuzz/` only: built with `--cfg fuzzing` (as `cargo fuzz` builds), never
//! part of the public API. Each wraps one reader, taking plain strings and
//! bytes; header readers take `(name, value)` pairs, and a pair whose name
//! or value is not a valid header is left out, as the HTTP stack would
//! refuse it.
#![allow(missing_docs)]

use std::time::{Duration, SystemTime};

use crate::conceal::Concealer;
use crate::hint::header_map as headers;
use crate::limits::dialects::RateFields;
use crate::refusal::evidence::{challenge, request_id as id, retry, words};

pub fn retry_delay(pairs: &[(&str, &[u8])], now: SystemTime) -> Option<Duration> {
    retry::retry_hint(&headers(pairs), now).map(|hint| hint.delay)
}

pub fn exhausted(pairs: &[(&str, &[u8])], now: SystemTime) -> Option<Duration> {
    RateFields::read(&headers(pairs), now)
        .exhausted
        .map(|left| left.reset)
}

/// What the rate-limit fields say, in any dialect: the budget's
/// `(remaining, limit, reset)` and the hold's `(what, reset)`.
#[allow(clippy::type_complexity)]
pub fn rate_limit_fields(
    pairs: &[(&str, &[u8])],
    now: SystemTime,
) -> (
    Option<(u64, Option<u64>, Duration)>,
    Option<(&'static str, Duration)>,
) {
    let fields = RateFields::read(&headers(pairs), now);
    (
        fields
            .budget
            .map(|left| (left.remaining, left.limit, left.reset)),
        fields
            .exhausted
            .map(|left| (left.unit.counted(), left.reset)),
    )
}

/// An RFC 3339 time as Anthropic's resets are read.
pub fn rfc3339(text: &str) -> Option<SystemTime> {
    crate::hint::rfc3339(text)
}

/// `(error, error_description, scope)` of the `Bearer` challenge among
/// these `www-authenticate` values.
#[allow(clippy::type_complexity)]
pub fn bearer_challenge(
    values: &[&[u8]],
) -> Option<(Option<String>, Option<String>, Option<String>)> {
    let pairs: Vec<(&str, &[u8])> = values.iter().map(|v| ("www-authenticate", *v)).collect();
    challenge::bearer_challenge(&headers(&pairs)).map(|c| (c.error, c.description, c.scope))
}

pub fn request_id(pairs: &[(&str, &[u8])]) -> Option<Vec<u8>> {
    id::request_id(&headers(pairs)).map(<[u8]>::to_vec)
}

pub fn engine_words(text: &str, concealer: &Concealer) -> Option<String> {
    words::engine_words(text, concealer).map(|words| words.into_string())
}

pub fn engine_value(value: &[u8], concealer: &Concealer, limit: usize) -> String {
    concealer.show_engine(value, limit).into_string()
}

/// The codes of an error body, most specific first.
pub fn engine_codes(text: &str) -> Vec<String> {
    words::codes(text)
}

/// What an engine's answer is read as: the cause's name, the reason and
/// the remedy written from it, from an arbitrary status, headers and body,
/// to the engine at `https://engine.example/v1` whose token is `token`.
pub fn answer_read(
    status: u16,
    pairs: &[(&str, &[u8])],
    body: &str,
    token: &str,
) -> Option<(&'static str, String, String)> {
    use crate::config::address::Address;
    use crate::config::origin::Origin;
    use crate::config::site::Site;

    let concealer = Concealer::new([token]);
    let address = Address::parse(
        "https://engine.example/v1",
        Origin::Variable("CHANT_BEHAVIOUR_ENGINE".to_owned()),
    )
    .ok()?;
    let site = Site::new(
        "fuzz",
        address,
        Origin::Variable("CHANT_BEHAVIOUR_TOKEN".to_owned()),
        concealer.clone(),
    );
    let head = concealer.admit(body.to_owned());
    let refusal = crate::refusal::status::refusal_for_concealed_status(
        &site,
        status,
        &headers(pairs),
        &head,
        SystemTime::UNIX_EPOCH,
    )?;
    Some((
        refusal.cause().as_str(),
        refusal.reason().to_owned(),
        refusal.remedy().to_owned(),
    ))
}

pub fn json_message(text: &str) -> Option<String> {
    words::json_message(text)
}

pub fn html_text(text: &str) -> Option<String> {
    words::html_text(text)
}

pub fn bound_whole(text: &str, max_chars: usize) -> &str {
    crate::text::bound_whole(text, max_chars)
}

/// The concealer's decoding over the whole text, which the windowed
/// one must match.
pub fn conceal_whole(concealer: &Concealer, text: &str) -> String {
    concealer.conceal_whole(text).into_owned()
}

/// The concealment of `pieces` pushed one after another into a
/// `ConcealStream`, which must be `conceal` of them joined; and the most
/// bytes it held after a push, and its reach, which that must not pass.
pub fn conceal_in_pieces(concealer: &Concealer, pieces: &[&str]) -> (String, usize, usize) {
    let mut stream = concealer.stream();
    let mut out = String::new();
    let mut most = 0;
    for piece in pieces {
        stream.push(piece, &mut out);
        most = most.max(stream.held());
    }
    stream.finish(&mut out);
    (out, most, concealer.reach())
}

/// A token file's content as the transport reads it: the header value it
/// sends (`Bearer <token>`), or what a refusal says is wrong with it.
pub fn token_file(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let origin = crate::config::origin::Origin::File {
        path: "/run/secrets/engine".to_owned(),
        variable: Some("CHANT_BEHAVIOUR_TOKEN_FILE".to_owned()),
        twin: "CHANT_BEHAVIOUR_TOKEN_FILE".to_owned(),
    };
    crate::config::token::content::parse(bytes, origin)
        .map(|token| token.header().as_bytes().to_vec())
        .map_err(|problem| problem.describe().into_string())
}

pub use self::raced::{Raced, token_file_raced};

/// A token file read while a writer acts on it between the read's system
/// calls and during its waits, on a real file in a directory of the
/// process's own, in a time of the read's own (a wait passes at once).
mod raced;

/// Every way an address or a proxy as the caller gave it is shown: its
/// redacted text, and what parsing it as an engine's address shows (the
/// address and host it names, or the error's redacted value and the scheme
/// or host it quotes).
pub fn shown_address(text: &str) -> Vec<String> {
    use crate::config::address::{Address, AddressError};
    let mut shown = vec![crate::config::address::redact_address(text)];
    match Address::parse(
        text,
        crate::config::origin::Origin::Variable("E_ENGINE".to_owned()),
    ) {
        Ok(address) => shown.extend([address.to_string(), address.host()]),
        Err(error) => {
            shown.push(error.shown().to_owned());
            match error {
                AddressError::Scheme { scheme, .. } => shown.push(scheme),
                AddressError::UserInfo { host, .. } => shown.push(host),
                // Its words are the crate's or the URL parser's own.
                AddressError::Malformed { .. } => {}
            }
        }
    }
    shown
}

/// A shared hold's stored value as another process reads it back: the
/// record's `(why, asked ms, asked at Unix ms, the field quoted)`, or
/// `None` for a value it did not write; and what writing that record back
/// stores.
#[cfg(feature = "redis")]
#[allow(clippy::type_complexity)]
pub fn shared_record(value: &[u8]) -> Option<((String, u128, u128, Option<String>), String)> {
    crate::limits::fleet::Record::decode_for_fuzzing(value)
}

pub use self::engine::{End, Piece, Reply, Script, Sent, send_all};

/// A scripted engine for the response path end to end: every attempt of
/// every send goes through the real send loop (the door, the evidence, the
/// refusal, the limits, retries and the meter); only the request's trip
/// is replaced, by a script of what the engine answered, in pieces at
/// given (virtual) times.
mod engine;

/// A string value of a JSON object as a stream's channels read it.
#[derive(Clone, Debug)]
pub struct JsonStringRead {
    /// The literal's bytes, quotes included.
    pub raw: std::ops::Range<usize>,
    /// Its value, decoded.
    pub value: String,
    /// Its path by `index` members, by keys and array positions, and by
    /// keys alone.
    pub path: String,
    pub position: String,
    pub keys: String,
    /// Whether serde_json's reading drops it (a later member of one of
    /// its objects has the same key).
    pub shadowed: bool,
}

/// The string values of a JSON object as a stream's channels read them
/// (those nested past the reader's bound left out); or why the text is
/// read as no JSON object (`other`, `invalid`).
pub fn json_strings(text: &str) -> Result<Vec<JsonStringRead>, &'static str> {
    use crate::stream::channels::json_spans::{NotAnObject, strings};
    match strings(text) {
        Ok(found) => Ok(found
            .into_iter()
            .map(|s| JsonStringRead {
                raw: s.raw,
                value: s.value,
                path: s.path,
                position: s.position,
                keys: s.keys,
                shadowed: s.shadowed,
            })
            .collect()),
        Err(NotAnObject::Other) => Err("other"),
        Err(NotAnObject::Invalid) => Err("invalid"),
    }
}

/// How deep a stream's channels name the strings of a JSON object: a
/// string inside more containers than this (the object itself counted)
/// joins no channel.
pub const JSON_MAX_DEPTH: usize = crate::stream::channels::json_spans::MAX_DEPTH;

/// NDJSON lines through a stream's channels, each concealed first as the
/// stream conceals what arrives, then its end: the lines released, in
/// order, or the bound a stream is refused at.
pub fn join_lines(concealer: &Concealer, lines: &[&str]) -> Result<Vec<String>, String> {
    use crate::stream::channels::Joined;
    let mut joined: Joined<String> = Joined::new(Some(concealer));
    let mut out = Vec::new();
    let drain = |joined: &mut Joined<String>, out: &mut Vec<String>| {
        while let Some(Some(Ok(line))) = joined.out() {
            out.push(line);
        }
    };
    for line in lines {
        joined
            .take(Some(Ok(concealer.conceal(line).into_owned())))
            .map_err(|exceeded| format!("{exceeded:?}"))?;
        drain(&mut joined, &mut out);
    }
    joined
        .take(None)
        .map_err(|exceeded| format!("{exceeded:?}"))?;
    drain(&mut joined, &mut out);
    Ok(out)
}

/// What a whole answer's concealed text says was billed.
pub fn usage_whole(text: &str) -> Option<crate::Usage> {
    crate::usage::whole(text)
}

/// What a stream of `(event type, data)` says was billed, read as an
/// `AnswerStream` reads its events, the last figures winning.
pub fn usage_streamed(events: &[(Option<&str>, &str)]) -> Option<crate::Usage> {
    let mut streamed = crate::usage::Streamed::default();
    for (event, data) in events {
        streamed.read(*event, data);
    }
    streamed.usage()
}

/// The pieces of generated text in one event (of type `kind`, as the
/// channels name it) as `next_delta` reads them: each one's byte range,
/// whether it is a JSON string literal, its choice, and its part (`text`,
/// `reasoning`, or `call N`).
pub fn delta_spans(kind: &str, data: &str) -> Vec<(std::ops::Range<usize>, bool, u32, String)> {
    use crate::Part;
    crate::stream::delta::shapes::delta_spans(kind, data)
        .into_iter()
        .map(|span| {
            let part = match span.part {
                Part::Text => "text".to_owned(),
                Part::Reasoning => "reasoning".to_owned(),
                Part::ToolArguments { call } => format!("call {call}"),
            };
            (span.raw, span.json, span.choice, part)
        })
        .collect()
}
