//! What a caller may put on the wire besides the body: its own headers and
//! an idempotency key.
//!
//! The transport owns the headers that carry a credential or frame the
//! request; a caller who set `authorization` would send a second credential
//! beside the token, and one who set `content-length` could split the
//! request. So those names are refused, as is any value in which the
//! concealer finds a secret: secrets go only in the token, where the crate
//! knows to conceal them. A refusal names the header, never its value.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::conceal::{Concealer, Shown, shown};

/// Names a caller may not set with `header()`: the credential and framing
/// headers the transport owns, and the idempotency key, which has a method
/// of its own.
const RESERVED_HEADERS: [&str; 11] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "idempotency-key",
    "keep-alive",
];

/// The header an idempotency key travels in.
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// Why a header given with `header()` cannot be sent. The text names the
/// header (concealed), never its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderProblem {
    pub(crate) name: Shown,
    pub(crate) why: &'static str,
}

impl HeaderProblem {
    /// `the header "x-trace" holds a secret …`.
    pub(crate) fn describe(&self) -> Shown {
        shown!("the header {} {}", self.name.quoted(), self.why)
    }
}

/// Checks caller headers and gathers them; a later one of the same name
/// replaces an earlier one.
pub(crate) fn header_map(
    headers: &[(String, String)],
    concealer: &Concealer,
) -> Result<HeaderMap, HeaderProblem> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let (name, value) = check_header(name, value, concealer)?;
        map.insert(name, value);
    }
    Ok(map)
}

/// A header name as `Debug` and refusals show it: concealed, tamed and
/// bounded, since a caller may have built it from a secret.
pub(crate) fn shown_name(name: &str, concealer: &Concealer) -> Shown {
    concealer.show_tamed(name, 64)
}

/// Checks one caller header: a token name, a header-safe value, not one the
/// transport owns, and no secret the concealer knows in its value.
pub(crate) fn check_header(
    name: &str,
    value: &str,
    concealer: &Concealer,
) -> Result<(HeaderName, HeaderValue), HeaderProblem> {
    let problem = |why| HeaderProblem {
        name: shown_name(name, concealer),
        why,
    };
    let header_name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| problem("is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"))?;
    if RESERVED_HEADERS.contains(&header_name.as_str()) {
        return Err(problem(
            "is one the transport sets itself (authorization, cookie, host, framing, idempotency-key): use the transport's own option for it",
        ));
    }
    if concealer.finds(name) {
        return Err(problem("names a secret"));
    }
    let header_value = HeaderValue::from_str(value).map_err(|_| {
        problem("has a value that is not header-safe (visible ASCII, spaces and tabs only, no line breaks)")
    })?;
    if concealer.finds(value) {
        return Err(problem(
            "has a value in which the concealer finds a secret (the token or a credential variable's value); secrets go only in the token",
        ));
    }
    Ok((header_name, header_value))
}

/// One send's idempotency key: the key as refusals and spans name it (it is
/// not a secret: the concealer finds none in it), and the header that
/// carries it, written as the IETF draft's quoted string
/// (`Idempotency-Key: "order-7"`). Every attempt of the send carries the
/// same one.
#[derive(Clone, Debug)]
pub(crate) struct IdempotencyKey {
    key: Shown,
    value: HeaderValue,
}

impl IdempotencyKey {
    /// A key the caller gave: visible ASCII without quotes or backslashes
    /// (so the quoted string needs no escapes), and nothing the concealer
    /// finds a secret in.
    pub(crate) fn given(key: &str, concealer: &Concealer) -> Result<IdempotencyKey, HeaderProblem> {
        let problem = |why| HeaderProblem {
            name: Shown::from("idempotency-key"),
            why,
        };
        let safe = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
        if !safe {
            return Err(problem(
                "has a key that is empty or not visible ASCII without quotes and backslashes",
            ));
        }
        let Some(key) = concealer.show_unchanged(key) else {
            return Err(problem("has a key in which the concealer finds a secret"));
        };
        IdempotencyKey::quoted(key).ok_or_else(|| problem("has a key that is not header-safe"))
    }

    /// A fresh random key (a UUID v4) for one send.
    pub(crate) fn fresh() -> IdempotencyKey {
        let key = shown!("{}", uuid::Uuid::new_v4());
        // A UUID is always a header value; the fallback keeps this total.
        IdempotencyKey::quoted(key).unwrap_or_else(|| IdempotencyKey {
            key: Shown::default(),
            value: HeaderValue::from_static("\"\""),
        })
    }

    fn quoted(key: Shown) -> Option<IdempotencyKey> {
        let value = HeaderValue::from_str(&format!("\"{key}\"")).ok()?;
        Some(IdempotencyKey { key, value })
    }

    /// The key itself, unquoted.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        self.key.as_str()
    }

    /// The key as refusals name it.
    pub(crate) fn shown(&self) -> &Shown {
        &self.key
    }

    /// Sets the key's header on a request's headers.
    pub(crate) fn apply(&self, headers: &mut HeaderMap) {
        headers.insert(IDEMPOTENCY_KEY, self.value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concealer() -> Concealer {
        Concealer::new(["mw-secret-0123456789"])
    }

    #[test]
    fn a_plain_header_is_accepted() {
        let (name, value) = check_header("Engine-Version", "2025-01-01", &concealer()).unwrap();
        assert_eq!(name.as_str(), "engine-version");
        assert_eq!(value, "2025-01-01");
    }

    #[test]
    fn reserved_names_are_refused_whatever_their_case() {
        for name in RESERVED_HEADERS {
            let upper = name.to_ascii_uppercase();
            let problem = check_header(&upper, "x", &concealer()).unwrap_err();
            assert!(
                problem.describe().contains("transport sets itself"),
                "{name}"
            );
        }
    }

    #[test]
    fn bad_names_and_values_are_refused_without_the_value() {
        let problem = check_header("x trace", "v", &concealer()).unwrap_err();
        assert!(problem.describe().contains("is not a header name"));
        let problem = check_header("x-trace", "a\r\nx-evil: 1", &concealer()).unwrap_err();
        assert!(problem.describe().contains("not header-safe"));
        assert!(!problem.describe().contains("evil"));
    }

    #[test]
    fn a_value_holding_a_secret_is_refused_and_not_shown() {
        for value in [
            "mw-secret-0123456789",
            "Bearer bXctc2VjcmV0LTAxMjM0NTY3ODk=",
        ] {
            let problem = check_header("x-debug", value, &concealer()).unwrap_err();
            assert!(problem.describe().contains("finds a secret"), "{value}");
            assert!(!problem.describe().contains("mw-secret"));
        }
        let problem = check_header("mw-secret-0123456789", "v", &concealer()).unwrap_err();
        assert!(!problem.describe().contains("mw-secret"));
    }

    #[test]
    fn an_idempotency_key_is_a_quoted_string() {
        let key = IdempotencyKey::given("order-7", &concealer()).unwrap();
        let mut headers = HeaderMap::new();
        key.apply(&mut headers);
        assert_eq!(headers["idempotency-key"], "\"order-7\"");
        assert_eq!(key.as_str(), "order-7");
        assert!(IdempotencyKey::given("", &concealer()).is_err());
        assert!(IdempotencyKey::given("a\"b", &concealer()).is_err());
        assert!(IdempotencyKey::given("mw-secret-0123456789", &concealer()).is_err());
        let fresh = IdempotencyKey::fresh();
        assert_eq!(fresh.as_str().len(), 36);
        assert_ne!(fresh.as_str(), IdempotencyKey::fresh().as_str());
    }
}
