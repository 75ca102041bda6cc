//! Which request it was: the id the engine's support desk asks for.

use reqwest::header::HeaderMap;

/// The headers an engine's request id arrives in, most common first.
pub(crate) const REQUEST_ID_HEADERS: [&str; 5] = [
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-correlation-id",
    "cf-ray",
];

/// The first request id the engine sent, raw (the caller scrubs it).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::evidence::test_headers as headers;

    #[test]
    fn the_first_request_id_header_present_is_taken() {
        let h = headers(&[("cf-ray", "ray-1"), ("request-id", "req-2")]);
        assert_eq!(request_id(&h), Some(&b"req-2"[..]));
    }
}
