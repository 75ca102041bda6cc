//! Which request it was: the id the engine's support desk asks for.

use reqwest::header::HeaderMap;

use crate::conceal::{Concealer, Shown};

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

/// The first request id the engine sent, raw: the first value of the
/// first header of [`REQUEST_ID_HEADERS`] whose first value is not blank.
pub(crate) fn request_id(headers: &HeaderMap) -> Option<&[u8]> {
    // One pass over the names the answer has, not a lookup (a parse and a
    // hash) of each of the five: most answers carry one of them or none.
    let mut seen = [false; REQUEST_ID_HEADERS.len()];
    let mut best: Option<(usize, &[u8])> = None;
    for (name, value) in headers {
        let Some(rank) = REQUEST_ID_HEADERS
            .iter()
            .position(|id| *id == name.as_str())
        else {
            continue;
        };
        // Only a name's first value counts, as a lookup would find it.
        if std::mem::replace(&mut seen[rank], true) {
            continue;
        }
        let value = value.as_bytes();
        let blank = value.iter().all(u8::is_ascii_whitespace);
        if !blank && best.is_none_or(|(best, _)| rank < best) {
            best = Some((rank, value));
        }
    }
    best.map(|(_, value)| value)
}

/// The first request id the engine sent, scrubbed and bounded as answers
/// and refusals keep it; `None` when it sent none, or one that scrubs to
/// nothing.
pub(crate) fn shown_request_id(headers: &HeaderMap, concealer: &Concealer) -> Option<Shown> {
    request_id(headers)
        .map(|id| concealer.show_engine(id, REQUEST_ID_LIMIT))
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::evidence::header_map as headers;

    #[test]
    fn the_first_named_header_whose_first_value_is_not_blank_is_taken() {
        // `request-id`'s first value is blank, so its second is not read;
        // `x-amzn-requestid` comes next in the list, whatever the order
        // the answer sent them in.
        let h = headers(&[
            ("cf-ray", "ray-1"),
            ("request-id", " "),
            ("request-id", "req-2"),
            ("x-amzn-requestid", "amzn-3"),
        ]);
        assert_eq!(request_id(&h), Some(&b"amzn-3"[..]));
        let h = headers(&[("x-correlation-id", "c-4"), ("x-request-id", "x-5")]);
        assert_eq!(request_id(&h), Some(&b"x-5"[..]));
        assert_eq!(request_id(&headers(&[("request-id", "\t ")])), None);
    }

    /// The reading before it was one pass: a lookup of each name in turn.
    fn looked_up(headers: &HeaderMap) -> Option<&[u8]> {
        REQUEST_ID_HEADERS.iter().find_map(|name| {
            headers
                .get(*name)
                .map(|value| value.as_bytes())
                .filter(|value| !value.iter().all(u8::is_ascii_whitespace))
        })
    }

    proptest::proptest! {
        #[test]
        fn one_pass_takes_the_id_a_lookup_of_each_name_took(
            pairs in proptest::collection::vec((0usize..7, 0usize..5), 0..12)
        ) {
            const NAMES: [&str; 7] = [
                "x-request-id", "request-id", "x-amzn-requestid", "x-correlation-id",
                "cf-ray", "x-other", "content-type",
            ];
            const VALUES: [&str; 5] = ["a", "b", " ", "\t", "c d"];
            let pairs: Vec<(&str, &str)> =
                pairs.iter().map(|&(n, v)| (NAMES[n], VALUES[v])).collect();
            let h = headers(&pairs);
            proptest::prop_assert_eq!(request_id(&h), looked_up(&h));
        }
    }

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
