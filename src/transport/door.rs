//! The door: every header of an answer the crate reads is concealed as it
//! enters, before any parser sees it.
//!
//! Everything read from the headers (a retry delay, a request id, a
//! challenge, a redirect's host, rate-limit figures) is read from these, so
//! no parser can cut a token in half, fold its case, or turn a digits-only
//! token into a number.

use reqwest::header::{HeaderMap, HeaderValue};

use crate::conceal::Concealer;
use crate::refusal::evidence::request_id::REQUEST_ID_HEADERS;

/// Every header the crate reads besides the request ids (whose list is
/// `request_id::REQUEST_ID_HEADERS`): retry hints and their clock,
/// rate-limit fields, the challenge and a redirect's target.
const READ_HEADERS: [&str; 10] = [
    "retry-after",
    "retry-after-ms",
    "date",
    "ratelimit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "www-authenticate",
    "location",
];

/// The headers the crate reads, with every value concealed. A value the
/// concealer changed keeps its `[redacted]` (still a valid header value), so
/// a parser that reads it finds no number and no token. Headers the crate
/// does not read are left out: nothing could quote them.
pub(super) fn at_the_door(headers: &HeaderMap, concealer: &Concealer) -> HeaderMap {
    let mut concealed = HeaderMap::new();
    // One pass over the answer's few headers: a lookup of each name the
    // crate reads would parse and hash twenty names per send.
    let read = headers.iter().filter(|(name, _)| {
        let name = name.as_str();
        READ_HEADERS.contains(&name) || REQUEST_ID_HEADERS.contains(&name)
    });
    for (name, value) in read {
        let text = String::from_utf8_lossy(value.as_bytes());
        let value = match concealer.conceal(&text) {
            std::borrow::Cow::Borrowed(_) => value.clone(),
            std::borrow::Cow::Owned(text) => match HeaderValue::from_bytes(text.as_bytes()) {
                Ok(value) => value,
                // Only a value that was not text can fail here; it held a
                // secret, so it is dropped rather than kept raw.
                Err(_) => HeaderValue::from_static(crate::conceal::REDACTED),
            },
        };
        concealed.append(name.clone(), value);
    }
    concealed
}
