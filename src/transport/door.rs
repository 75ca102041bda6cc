//! The door: every header of an answer is concealed as it enters, before
//! any parser sees it, and those that carry a credential are not kept.
//!
//! Everything read from the headers (a retry delay, a request id, a
//! challenge, a redirect's host, rate-limit figures) is read from these, so
//! no parser can cut a token in half, fold its case, or turn a digits-only
//! token into a number.

use std::borrow::Cow;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::conceal::Concealer;

/// Response headers that carry a credential, which the crate keeps for no
/// one: a cookie the engine sets is the caller's session, not an answer.
const CREDENTIAL_HEADERS: [&str; 7] = [
    "set-cookie",
    "set-cookie2",
    "cookie",
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
];

/// Name endings that mark a header as a credential's (`x-auth-token`,
/// `x-client-secret`); `x-ratelimit-remaining-tokens` ends otherwise.
const CREDENTIAL_ENDINGS: [&str; 7] = [
    "-token",
    "-secret",
    "-password",
    "-api-key",
    "-apikey",
    "-credential",
    "-session",
];

/// Whether a response header carries a credential.
fn carries_credential(name: &HeaderName) -> bool {
    let name = name.as_str();
    CREDENTIAL_HEADERS.contains(&name) || CREDENTIAL_ENDINGS.iter().any(|end| name.ends_with(end))
}

/// The headers of an answer as the crate keeps them: every one but those
/// that carry a credential or whose name holds a secret, each value
/// concealed and kept as UTF-8 text (a value that is not has its invalid
/// bytes replaced, as every reader of it would read it). A value the
/// concealer changed keeps its `[redacted]` (still a valid header value),
/// so a parser that reads it finds no number and no token.
///
/// The secrets are loaded once for the whole head, and a name or a value
/// shorter than any form of one (most are) is kept as it came, with no
/// call of its own; a head with nothing to leave out or change (most are)
/// is kept as the map it came in.
pub(crate) fn at_the_door(headers: HeaderMap, concealer: &Concealer) -> HeaderMap {
    let shortest = concealer.leaves_shorter_than();
    // A name the concealer would change held a secret: the header goes,
    // since no name can be `[redacted]` in its place.
    let kept = |name: &HeaderName| {
        !carries_credential(name)
            && matches!(
                short_or_concealed(name.as_str(), shortest, concealer),
                Cow::Borrowed(_)
            )
    };
    let changed = |value: &HeaderValue| {
        let text = String::from_utf8_lossy(value.as_bytes());
        match (short_or_concealed(&text, shortest, concealer), &text) {
            (Cow::Borrowed(_), Cow::Borrowed(_)) => None,
            (concealed, _) => Some(match HeaderValue::from_bytes(concealed.as_bytes()) {
                Ok(value) => value,
                // The replacement character and the concealer's marker
                // are valid header bytes, so this is never reached; were
                // it, the value would be dropped rather than kept raw.
                Err(_) => HeaderValue::from_static(crate::conceal::REDACTED),
            }),
        }
    };
    if headers
        .iter()
        .all(|(name, value)| kept(name) && changed(value).is_none())
    {
        return headers;
    }
    let mut concealed = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers.iter().filter(|(name, _)| kept(name)) {
        let value = changed(value).unwrap_or_else(|| value.clone());
        concealed.append(name.clone(), value);
    }
    concealed
}

/// `text` as it is when it is shorter than every form of a secret, else
/// concealed.
fn short_or_concealed<'t>(text: &'t str, shortest: usize, concealer: &Concealer) -> Cow<'t, str> {
    if text.len() < shortest {
        Cow::Borrowed(text)
    } else {
        concealer.conceal(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_left_out_and_the_rest_concealed() {
        let concealer = Concealer::new(["mw-door-0123456789"]);
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("set-cookie", "session=abc"),
            ("x-auth-token", "t"),
            ("x-ratelimit-remaining-tokens", "10"),
            ("x-echo", "mw-door-0123456789"),
        ] {
            headers.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let kept = at_the_door(headers, &concealer);
        assert!(kept.get("set-cookie").is_none());
        assert!(kept.get("x-auth-token").is_none());
        assert_eq!(kept["x-ratelimit-remaining-tokens"], "10");
        assert_eq!(kept["x-echo"], "[redacted]");
    }

    #[test]
    fn a_header_whose_name_holds_a_secret_is_left_out() {
        // Header names arrive lower-cased: a secret that is so is whole in one.
        let concealer = Concealer::new(["mw-door-0123456789"]);
        let mut headers = HeaderMap::new();
        for name in ["x-mw-door-0123456789", "x-mw-door-0123456789%2b", "x-fine"] {
            headers.append(
                HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                HeaderValue::from_static("1"),
            );
        }
        let kept = at_the_door(headers, &concealer);
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(kept["x-fine"], "1");
        assert!(!format!("{kept:?}").contains("0123456789"), "{kept:?}");
    }
}
