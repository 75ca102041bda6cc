//! Finding and reading the figures an engine billed in a JSON text.
//!
//! Every engine puts what it billed at the end of its answer (OpenAI's and
//! Anthropic's `usage`, Gemini's `usageMetadata`, Ollama's
//! `prompt_eval_count` and `eval_count`), so the text is not parsed whole:
//! the member's key is looked for in the text's last [`TAIL`] bytes, block
//! by block from the end, and only its value is parsed. An answer without
//! usage costs a search of at most that tail; the text is never parsed
//! beyond the one value.
//!
//! Nothing here fails: a figure that is not a whole number from 0 to 2^53
//! is *invalid*, and the reader of [`Raw`] decides what that makes of the
//! field it belongs to. This file uses nothing of the crate but itself, so
//! that the send bench can measure it alone.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// How far from the end of a text usage is looked for: every engine's
/// shape puts it within a few hundred bytes of the end (the Responses API
/// follows it with `user` and `metadata`, at most a few KiB), and a
/// search of 32 KiB is a few microseconds, so an answer of any size that
/// says nothing of usage costs about nothing.
pub(crate) const TAIL: usize = 32 * 1024;

/// The tail is searched in blocks of this size from the end, so that the
/// usual answer, usage in its last block, is found in one short search.
const BLOCK: usize = 4 * 1024;

/// The most keys whose value is parsed in one search: a real answer has
/// one or two in its tail, and a text made of nothing but keys whose
/// values do not parse must not cost a parse of the tail per key.
const MOST_TRIES: usize = 8;

/// The largest figure taken: 2^53, the largest integer every JSON reader
/// (JavaScript's included) holds exactly; a count past it is no count.
pub(crate) const MOST: u64 = 1 << 53;

/// One figure as the engine wrote it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Figure {
    /// Not there, or `null` (Anthropic's `message_delta` writes
    /// `"input_tokens": null` for a count it does not repeat).
    #[default]
    Absent,
    Valid(u64),
    /// There, but not a whole number from 0 to 2^53.
    Invalid,
}

impl Figure {
    /// This figure, or a later one for the same field when there is one.
    fn or_later(self, later: Figure) -> Figure {
        match later {
            Figure::Absent => self,
            later => later,
        }
    }

    /// `None` when absent; `Some(None)` when invalid.
    fn present(self) -> Option<Option<u64>> {
        match self {
            Figure::Absent => None,
            Figure::Valid(n) => Some(Some(n)),
            Figure::Invalid => Some(None),
        }
    }
}

/// The figures of every engine's shape, by the names they are written
/// under. One engine fills a few of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Raw {
    /// OpenAI chat and completions.
    prompt_tokens: Figure,
    completion_tokens: Figure,
    /// OpenAI Responses, and Anthropic (whose `input_tokens` leaves out
    /// the cache's).
    input_tokens: Figure,
    output_tokens: Figure,
    /// `prompt_tokens_details` / `input_tokens_details`.
    cached_tokens: Figure,
    /// `completion_tokens_details` / `output_tokens_details`.
    reasoning_tokens: Figure,
    /// Anthropic.
    cache_read_input_tokens: Figure,
    cache_creation_input_tokens: Figure,
    /// Gemini.
    prompt_token_count: Figure,
    candidates_token_count: Figure,
    cached_content_token_count: Figure,
    thoughts_token_count: Figure,
    /// Ollama.
    prompt_eval_count: Figure,
    eval_count: Figure,
}

/// What an engine billed, in one meaning across engines: `input` every
/// input token, `cached` the part of it read from a cache, `output` every
/// output token, `reasoning` the part of it spent thinking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Figures {
    pub(crate) input: Option<u64>,
    pub(crate) output: Option<u64>,
    pub(crate) cached: Option<u64>,
    pub(crate) reasoning: Option<u64>,
}

impl Raw {
    /// These figures with `later`'s over them, field by field: in a stream
    /// the last figures win, and a field a later event leaves out keeps
    /// its earlier figure (Anthropic's `message_delta` repeats only what
    /// changed).
    pub(crate) fn merged(self, later: Raw) -> Raw {
        Raw {
            prompt_tokens: self.prompt_tokens.or_later(later.prompt_tokens),
            completion_tokens: self.completion_tokens.or_later(later.completion_tokens),
            input_tokens: self.input_tokens.or_later(later.input_tokens),
            output_tokens: self.output_tokens.or_later(later.output_tokens),
            cached_tokens: self.cached_tokens.or_later(later.cached_tokens),
            reasoning_tokens: self.reasoning_tokens.or_later(later.reasoning_tokens),
            cache_read_input_tokens: self
                .cache_read_input_tokens
                .or_later(later.cache_read_input_tokens),
            cache_creation_input_tokens: self
                .cache_creation_input_tokens
                .or_later(later.cache_creation_input_tokens),
            prompt_token_count: self.prompt_token_count.or_later(later.prompt_token_count),
            candidates_token_count: self
                .candidates_token_count
                .or_later(later.candidates_token_count),
            cached_content_token_count: self
                .cached_content_token_count
                .or_later(later.cached_content_token_count),
            thoughts_token_count: self
                .thoughts_token_count
                .or_later(later.thoughts_token_count),
            prompt_eval_count: self.prompt_eval_count.or_later(later.prompt_eval_count),
            eval_count: self.eval_count.or_later(later.eval_count),
        }
    }

    /// The figures in one meaning; `None` when no field has a valid one.
    pub(crate) fn figures(&self) -> Option<Figures> {
        let figures = Figures {
            // Anthropic's input is its three counts together; an engine
            // that has no cache counts writes none of them.
            input: first([
                self.prompt_tokens.present(),
                sum([
                    self.input_tokens,
                    self.cache_read_input_tokens,
                    self.cache_creation_input_tokens,
                ]),
                self.prompt_token_count.present(),
                self.prompt_eval_count.present(),
            ]),
            // Gemini counts thinking apart from the candidates.
            output: first([
                self.completion_tokens.present(),
                self.output_tokens.present(),
                sum([self.candidates_token_count, self.thoughts_token_count]),
                self.eval_count.present(),
            ]),
            cached: first([
                self.cached_tokens.present(),
                self.cache_read_input_tokens.present(),
                self.cached_content_token_count.present(),
            ]),
            reasoning: first([
                self.reasoning_tokens.present(),
                self.thoughts_token_count.present(),
            ]),
        };
        (figures != Figures::default()).then_some(figures)
    }
}

/// The first field that is present, valid or not: an engine writes one of
/// them, and a bad one is no figure rather than another's.
fn first<const N: usize>(fields: [Option<Option<u64>>; N]) -> Option<u64> {
    fields.into_iter().flatten().next().flatten()
}

/// Counts that make one figure together: absent ones count nothing, and
/// one invalid makes the whole unknown (`Some(None)`); `None` when all are
/// absent.
fn sum<const N: usize>(parts: [Figure; N]) -> Option<Option<u64>> {
    let mut total: Option<u64> = None;
    for part in parts {
        match part {
            Figure::Absent => {}
            Figure::Invalid => return Some(None),
            Figure::Valid(n) => total = Some(total.unwrap_or(0).saturating_add(n)),
        }
    }
    total.map(Some)
}

/// What `text` says was billed: the last `"usage"` or `"usageMetadata"`
/// member whose value is an object, in its tail, or else Ollama's
/// top-level counts; `None` when it has neither. Never fails.
pub(crate) fn read(text: &[u8]) -> Option<Raw> {
    static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage"));
    let tail = &text[text.len().saturating_sub(TAIL)..];
    if let Some(raw) = last_member(tail, &USAGE, usage_value) {
        return Some(raw);
    }
    ollama(tail)
}

/// Ollama writes its counts at the top level of its last line or answer.
fn ollama(tail: &[u8]) -> Option<Raw> {
    static EVAL: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"eval_count\""));
    static PROMPT: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(b"\"prompt_eval_count\""));
    let figure =
        |value: &[u8]| Figure::deserialize(&mut serde_json::Deserializer::from_slice(value)).ok();
    let raw = Raw {
        eval_count: last_member(tail, &EVAL, figure).unwrap_or_default(),
        prompt_eval_count: last_member(tail, &PROMPT, figure).unwrap_or_default(),
        ..Raw::default()
    };
    (raw != Raw::default()).then_some(raw)
}

/// The value of `"usage"` or `"usageMetadata"` that `rest` starts with,
/// when it is an object; what follows it is not read.
fn usage_value(rest: &[u8]) -> Option<Raw> {
    let mut de = serde_json::Deserializer::from_slice(rest);
    match Member::deserialize(&mut de) {
        Ok(Member(Some(raw))) => Some(raw),
        _ => None,
    }
}

/// The last member found by `key` (its opening quote) in `text` that is a
/// key and whose value `value` reads, searching block by block from the
/// end. A hit is a key when its opening quote is not escaped and its
/// closing quote is followed by `:`: a string that holds the key's text
/// escapes its quotes.
fn last_member<T>(text: &[u8], key: &Finder<'_>, value: impl Fn(&[u8]) -> Option<T>) -> Option<T> {
    let needle = key.needle().len();
    let mut tries = 0;
    let mut end = text.len();
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        // A hit may begin in this block and end in the next one.
        let reach = (end + needle - 1).min(text.len());
        let hits: Vec<usize> = key
            .find_iter(&text[start..reach])
            .map(|at| start + at)
            .collect();
        for &at in hits.iter().rev() {
            let Some(at) = member_value(text, at, needle) else {
                continue;
            };
            if let Some(found) = value(&text[at..]) {
                return Some(found);
            }
            tries += 1;
            if tries == MOST_TRIES {
                return None;
            }
        }
        end = start;
    }
    None
}

/// Where the value of the key whose text `needle` long starts at `at`
/// begins: past the rest of the key (`"` or `Metadata"` for the usage
/// needle, nothing for a needle that ends with its quote), white space
/// and the colon.
fn member_value(text: &[u8], at: usize, needle: usize) -> Option<usize> {
    let escapes = text[..at].iter().rev().take_while(|&&b| b == b'\\').count();
    if escapes % 2 == 1 {
        return None;
    }
    let mut next = at + needle;
    if text[at + needle - 1] != b'"' {
        let rest = &text[next..];
        next += if rest.starts_with(b"\"") {
            1
        } else if rest.starts_with(b"Metadata\"") {
            9
        } else {
            return None;
        };
    }
    let colon = next + text[next..].iter().take_while(|b| is_space(**b)).count();
    (text.get(colon) == Some(&b':')).then_some(colon + 1)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A usage member's value: its figures when it is an object, `None` when
/// it is anything else (`null` in the chunks before OpenAI's last).
struct Member(Option<Raw>);

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Member, D::Error> {
        deserializer.deserialize_any(MemberVisitor)
    }
}

struct MemberVisitor;

impl<'de> Visitor<'de> for MemberVisitor {
    type Value = Member;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a usage object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Member, A::Error> {
        let mut raw = Raw::default();
        while let Some(key) = map.next_key::<Key>()? {
            // A repeated key: the last one wins, as in most JSON readers.
            match key {
                Key::PromptTokens => raw.prompt_tokens = map.next_value()?,
                Key::CompletionTokens => raw.completion_tokens = map.next_value()?,
                Key::InputTokens => raw.input_tokens = map.next_value()?,
                Key::OutputTokens => raw.output_tokens = map.next_value()?,
                Key::CacheRead => raw.cache_read_input_tokens = map.next_value()?,
                Key::CacheCreation => raw.cache_creation_input_tokens = map.next_value()?,
                Key::InputDetails => raw.cached_tokens = map.next_value::<Details>()?.cached,
                Key::OutputDetails => {
                    raw.reasoning_tokens = map.next_value::<Details>()?.reasoning;
                }
                Key::PromptCount => raw.prompt_token_count = map.next_value()?,
                Key::CandidatesCount => raw.candidates_token_count = map.next_value()?,
                Key::CachedCount => raw.cached_content_token_count = map.next_value()?,
                Key::ThoughtsCount => raw.thoughts_token_count = map.next_value()?,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Member(Some(raw)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Member, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Member(None))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Member, E> {
        Ok(Member(None))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Member, E> {
        Ok(Member(None))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Member, E> {
        Ok(Member(None))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Member, E> {
        Ok(Member(None))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Member, E> {
        Ok(Member(None))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Member, E> {
        Ok(Member(None))
    }
}

/// The names a usage object's members are read under.
enum Key {
    PromptTokens,
    CompletionTokens,
    InputTokens,
    OutputTokens,
    CacheRead,
    CacheCreation,
    InputDetails,
    OutputDetails,
    PromptCount,
    CandidatesCount,
    CachedCount,
    ThoughtsCount,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
        Ok(match name {
            "prompt_tokens" => Key::PromptTokens,
            "completion_tokens" => Key::CompletionTokens,
            "input_tokens" => Key::InputTokens,
            "output_tokens" => Key::OutputTokens,
            "cache_read_input_tokens" => Key::CacheRead,
            "cache_creation_input_tokens" => Key::CacheCreation,
            "prompt_tokens_details" | "input_tokens_details" => Key::InputDetails,
            "completion_tokens_details" | "output_tokens_details" => Key::OutputDetails,
            "promptTokenCount" => Key::PromptCount,
            "candidatesTokenCount" => Key::CandidatesCount,
            "cachedContentTokenCount" => Key::CachedCount,
            "thoughtsTokenCount" => Key::ThoughtsCount,
            _ => Key::Other,
        })
    }
}

/// A `…_tokens_details` object: the cached and reasoning counts in it. Any
/// value but an object (or `null`) makes them invalid.
#[derive(Default)]
struct Details {
    cached: Figure,
    reasoning: Figure,
}

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Details, D::Error> {
        deserializer.deserialize_any(DetailsVisitor)
    }
}

struct DetailsVisitor;

const INVALID_DETAILS: Details = Details {
    cached: Figure::Invalid,
    reasoning: Figure::Invalid,
};

impl<'de> Visitor<'de> for DetailsVisitor {
    type Value = Details;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a details object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Details, A::Error> {
        let mut details = Details::default();
        while let Some(name) = map.next_key::<Name>()? {
            match name.0 {
                Some("cached_tokens") => details.cached = map.next_value()?,
                Some("reasoning_tokens") => details.reasoning = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(details)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Details, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(INVALID_DETAILS)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Details, E> {
        Ok(Details::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Details, E> {
        Ok(INVALID_DETAILS)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Details, E> {
        Ok(INVALID_DETAILS)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Details, E> {
        Ok(INVALID_DETAILS)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Details, E> {
        Ok(INVALID_DETAILS)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Details, E> {
        Ok(INVALID_DETAILS)
    }
}

/// A member name inside a details object, kept only when it is one of the
/// two read (every other is skipped without a copy).
struct Name(Option<&'static str>);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Name, D::Error> {
        struct NameVisitor;
        impl Visitor<'_> for NameVisitor {
            type Value = Name;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Name, E> {
                Ok(Name(match name {
                    "cached_tokens" => Some("cached_tokens"),
                    "reasoning_tokens" => Some("reasoning_tokens"),
                    _ => None,
                }))
            }
        }
        deserializer.deserialize_identifier(NameVisitor)
    }
}

/// A figure from the raw text of its value, never from a float the JSON
/// reader made of it: a number too large for any float (`1e400`) is an
/// error to `serde_json`, which would lose every other figure of the
/// object, and is only an invalid figure here.
impl<'de> Deserialize<'de> for Figure {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Figure, D::Error> {
        let raw = <&RawValue>::deserialize(deserializer)?;
        Ok(Figure::of(raw.get().trim()))
    }
}

impl Figure {
    /// `null` is absent; a whole number from 0 to 2^53 is valid, also
    /// when written with a fraction or an exponent (`12.0`, `1e3`), as a
    /// protobuf JSON reader (Gemini's) takes it; anything else (`-1`,
    /// `12.5`, `2e60`, `"12"`, `true`, an object) is invalid.
    fn of(text: &str) -> Figure {
        if text == "null" {
            return Figure::Absent;
        }
        if !text.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            return Figure::Invalid;
        }
        if let Ok(n) = text.parse::<u64>() {
            return if n <= MOST {
                Figure::Valid(n)
            } else {
                Figure::Invalid
            };
        }
        match text.parse::<f64>() {
            // `MOST` is a power of two, exact as a float, and every whole
            // float up to it converts exactly.
            Ok(x) if x.is_finite() && x.fract() == 0.0 && (0.0..=MOST as f64).contains(&x) => {
                Figure::Valid(x as u64)
            }
            _ => Figure::Invalid,
        }
    }
}
