//! The evidence an engine attaches to a refusal: when to retry
//! ([`retry`]), which request it was ([`request_id`]), why it rejected the
//! token ([`challenge`]), what it said ([`words`]), which of its codes and
//! phrases name a cause ([`dialect`]), and what the protocol on the wire
//! says ([`protocol`]: x402, a ban that ends, a gateway's relay).
//!
//! A cause says *what* to do; these say *why*, *when* and *with what*. An
//! operator who reads "over quota" still has to know whether to wait a
//! second or an hour, and the support desk asks for the request id. Every
//! value here comes from the engine, so every value is read from what the
//! door concealed, and every value that is printed passes through the
//! concealer again.

pub(crate) mod challenge;
pub(crate) mod dialect;
pub(crate) mod protocol;
pub(crate) mod request_id;
pub(crate) mod retry;
pub(crate) mod words;

use reqwest::header::HeaderMap;

/// A header's value as trimmed text, when it is text and not blank.
fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty())
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
