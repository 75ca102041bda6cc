//! The crate's private readers of engine text, for the fuzz targets in
//! `fuzz/` only: built with `--cfg fuzzing` (as `cargo fuzz` builds), never
//! part of the public API. Each wraps one reader, taking plain strings and
//! bytes; header readers take `(name, value)` pairs, and a pair whose name
//! or value is not a valid header is left out, as the HTTP stack would
//! refuse it.
#![allow(missing_docs)]

use std::time::{Duration, SystemTime};

use crate::conceal::Concealer;
use crate::refusal::evidence::header_map as headers;
use crate::refusal::evidence::{challenge, request_id as id, retry, words};

pub fn retry_delay(pairs: &[(&str, &[u8])], now: SystemTime) -> Option<Duration> {
    retry::retry_hint(&headers(pairs), now).map(|hint| hint.delay)
}

pub fn exhausted(pairs: &[(&str, &[u8])]) -> Option<Duration> {
    retry::exhausted(&headers(pairs))
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
    words::engine_words(text, concealer)
}

pub fn engine_value(value: &[u8], concealer: &Concealer, limit: usize) -> String {
    words::engine_value(value, concealer, limit)
}

pub fn credit_code(text: &str, concealer: &Concealer) -> Option<String> {
    words::credit_code(text, concealer)
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
