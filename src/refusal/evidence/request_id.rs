//! Which request it was: the id the engine's support desk asks for.

use reqwest::header::HeaderMap;

use super::words::engine_value;
use crate::conceal::Concealer;

/// The headers an engine's request id arrives in, most common first.
pub(crate) const REQUEST_ID_HEADERS: [&str; 5] = [
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-correlation-id",
    "cf-ray",
];

/// How many characters of a request id are kept.
const REQUEST_ID_LIMIT: usize = 100;

/// The first request id the engine sent, raw.
pub(crate) fn request_id(headers: &HeaderMap) -> Option<&[u8]> {
    // Most answers carry none of the headers read: no name need be parsed.
    if headers.is_empty() {
        return None;
    }
    REQUEST_ID_HEADERS.iter().find_map(|name| {
        headers
            .get(*name)
            .map(|value| value.as_bytes())
            .filter(|value| !value.iter().all(u8::is_ascii_whitespace))
    })
}

/// The first request id the engine sent, scrubbed and bounded as answers
/// and refusals keep it; `None` when it sent none, or one that scrubs to
/// nothing.
pub(crate) fn shown_request_id(headers: &HeaderMap, concealer: &Concealer) -> Option<String> {
    request_id(headers)
        .map(|id| engine_value(id, concealer, REQUEST_ID_LIMIT))
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::evidence::header_map as headers;

    #[test]
    fn the_first_request_id_header_present_is_taken() {
        let h = headers(&[("cf-ray", "ray-1"), ("request-id", "req-2")]);
        assert_eq!(request_id(&h), Some(&b"req-2"[..]));
        let concealer = Concealer::new(["req-2"]);
        assert_eq!(
            shown_request_id(&h, &concealer).as_deref(),
            Some("[redacted]")
        );
        assert_eq!(shown_request_id(&HeaderMap::new(), &concealer), None);
    }
}
