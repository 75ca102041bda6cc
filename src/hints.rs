//! The evidence an engine attaches to a refusal: when to retry, which
//! request it was, and why it rejected the token.
//!
//! A cause says *what* to do; these say *when* and *with what*. An operator
//! who reads "over quota" still has to know whether to wait a second or an
//! hour, the support desk asks for the request id, and "your token expired"
//! and "your token lacks the scope `predict`" are different fixes of the same
//! variable. Every value here comes from the engine's headers, so every value
//! that is printed passes through the concealer like the engine's words do.
//!
//! Parsing is lenient in what it ignores and strict in what it believes: a
//! malformed `retry-after` is echoed as sent but never turned into a delay,
//! and nothing here can panic on what an engine sends.

use std::time::{Duration, SystemTime};

use reqwest::header::{DATE, HeaderMap, RETRY_AFTER, WWW_AUTHENTICATE};

/// The headers an engine's request id arrives in, most common first.
const REQUEST_ID_HEADERS: [&str; 5] = [
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-correlation-id",
    "cf-ray",
];

/// How long the engine asks the caller to wait, from (in order of trust)
/// `retry-after-ms`, `retry-after` (delay-seconds or an HTTP-date, RFC 9110
/// §10.2.3), then the reset of an IETF `RateLimit` field (`t=`), or the
/// older draft's `ratelimit-reset`.
///
/// An HTTP-date is measured from the response's own `date` header when it
/// has one (so a skewed local clock does not matter), else from `now`; a
/// date in the past is zero.
pub(crate) fn retry_delay(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header_text(headers, "retry-after-ms").and_then(parse_millis) {
        return Some(ms);
    }
    if let Some(value) = header_text(headers, RETRY_AFTER.as_str()) {
        if let Some(seconds) = parse_seconds(value) {
            return Some(seconds);
        }
        if let Ok(at) = httpdate::parse_http_date(value) {
            let from = header_text(headers, DATE.as_str())
                .and_then(|date| httpdate::parse_http_date(date).ok())
                .unwrap_or(now);
            return Some(at.duration_since(from).unwrap_or(Duration::ZERO));
        }
    }
    if let Some(reset) = header_text(headers, "ratelimit").and_then(ratelimit_reset) {
        return Some(reset);
    }
    header_text(headers, "ratelimit-reset").and_then(parse_seconds)
}

/// The first request id the engine sent, raw (the caller scrubs it).
pub(crate) fn request_id(headers: &HeaderMap) -> Option<&[u8]> {
    REQUEST_ID_HEADERS.iter().find_map(|name| {
        headers
            .get(*name)
            .map(|value| value.as_bytes())
            .filter(|value| !value.iter().all(u8::is_ascii_whitespace))
    })
}

/// What a `WWW-Authenticate: Bearer` challenge (RFC 6750 §3) says about the
/// rejected token. The values are raw; the caller scrubs them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BearerChallenge {
    pub(crate) error: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) scope: Option<String>,
}

/// The `Bearer` challenge among the `www-authenticate` headers, if any
/// carries an `error`, `error_description` or `scope`.
pub(crate) fn bearer_challenge(headers: &HeaderMap) -> Option<BearerChallenge> {
    headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|value| std::str::from_utf8(value.as_bytes()).ok())
        .find_map(parse_bearer_challenge)
}

fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty())
}

/// delay-seconds: `1*DIGIT`, nothing else. Absurd values saturate rather
/// than overflow.
fn parse_seconds(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)))
}

/// Milliseconds, possibly fractional (`1500`, `250.5`), as some engines send
/// in `retry-after-ms`.
fn parse_millis(value: &str) -> Option<Duration> {
    let value = value.trim();
    let digits_and_dot = value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if value.is_empty() || !digits_and_dot || !value.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms: f64 = value.parse().ok()?;
    Duration::try_from_secs_f64(ms / 1000.0).ok()
}

/// The `t=` parameter of an IETF `RateLimit` field
/// (`"default";r=0;t=30`): seconds until the quota resets.
fn ratelimit_reset(value: &str) -> Option<Duration> {
    value
        .split([';', ','])
        .filter_map(|param| param.trim().split_once('='))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case("t"))
        .and_then(|(_, seconds)| parse_seconds(seconds))
}

/// Parses the auth-params of a `Bearer` challenge in one `WWW-Authenticate`
/// value, which may hold several challenges (`Basic realm="a", Bearer
/// error="invalid_token"`). Hand-written: RFC 9110 §11.6.1's grammar is
/// small, and no maintained crate parses challenges for a current `http`.
fn parse_bearer_challenge(value: &str) -> Option<BearerChallenge> {
    let mut challenge: Option<BearerChallenge> = None;
    for item in AuthParams::new(value) {
        match (item, challenge.as_mut()) {
            // The scheme that follows the Bearer challenge ends it.
            (AuthItem::Scheme(_), Some(_)) => break,
            (AuthItem::Scheme(scheme), None) => {
                if scheme.eq_ignore_ascii_case("bearer") {
                    challenge = Some(BearerChallenge::default());
                }
            }
            (AuthItem::Param(key, param), Some(found)) => {
                let slot = match key.to_ascii_lowercase().as_str() {
                    "error" => &mut found.error,
                    "error_description" => &mut found.description,
                    "scope" => &mut found.scope,
                    _ => continue,
                };
                if slot.is_none() && !param.trim().is_empty() {
                    *slot = Some(param);
                }
            }
            (AuthItem::Param(..), None) => {}
        }
    }
    challenge.filter(|c| c.error.is_some() || c.description.is_some() || c.scope.is_some())
}

/// One item of a challenge list.
enum AuthItem {
    /// A bare word: an auth-scheme (or a token68 credential).
    Scheme(String),
    /// `key=value` or `key="quoted"`, unquoted.
    Param(String, String),
}

/// The items of a challenge list, in order.
struct AuthParams<'a> {
    rest: &'a str,
}

impl<'a> AuthParams<'a> {
    fn new(value: &'a str) -> AuthParams<'a> {
        AuthParams { rest: value }
    }
}

impl Iterator for AuthParams<'_> {
    type Item = AuthItem;

    fn next(&mut self) -> Option<Self::Item> {
        self.rest = self
            .rest
            .trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        if self.rest.is_empty() {
            return None;
        }
        let word_end = self
            .rest
            .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .unwrap_or(self.rest.len());
        let word = &self.rest[..word_end];
        let after = self.rest[word_end..].trim_start_matches([' ', '\t']);
        let Some(after_eq) = after.strip_prefix('=') else {
            self.rest = &self.rest[word_end..];
            return Some(AuthItem::Scheme(word.to_owned()));
        };
        let after_eq = after_eq.trim_start_matches([' ', '\t']);
        if let Some(quoted) = after_eq.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    _ => value.push(c),
                }
            }
            self.rest = &quoted[end.min(quoted.len())..];
            Some(AuthItem::Param(word.to_owned(), value))
        } else {
            let value_end = after_eq.find([',', ' ', '\t']).unwrap_or(after_eq.len());
            // A token68 credential's `=` padding (`Basic abc==`) reads as a
            // key with an empty value, which no Bearer param is.
            let value = after_eq[..value_end].trim_end_matches('=');
            self.rest = &after_eq[value_end..];
            Some(AuthItem::Param(word.to_owned(), value.to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).expect("test header"));
        }
        map
    }

    #[test]
    fn delay_seconds_are_a_delay() {
        let h = headers(&[("retry-after", "120")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_secs(120))
        );
    }

    #[test]
    fn an_http_date_is_measured_from_the_responses_own_date() {
        let h = headers(&[
            ("retry-after", "Sun, 29 Nov 2026 07:28:00 GMT"),
            ("date", "Sun, 29 Nov 2026 07:13:00 GMT"),
        ]);
        assert_eq!(
            retry_delay(&h, SystemTime::UNIX_EPOCH),
            Some(Duration::from_secs(900))
        );
    }

    #[test]
    fn a_date_in_the_past_is_zero() {
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        assert_eq!(retry_delay(&h, SystemTime::now()), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_ms_wins_and_may_be_fractional() {
        let h = headers(&[("retry-after", "9"), ("retry-after-ms", "1500.5")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_micros(1_500_500))
        );
    }

    #[test]
    fn a_ratelimit_reset_is_the_fallback() {
        let h = headers(&[("ratelimit", "\"default\";r=0;t=42")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_secs(42))
        );
        let h = headers(&[("ratelimit-reset", "7")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn malformed_values_are_no_delay() {
        for bad in ["soon", "-5", "1e3", "12 seconds", "", "Sun, 99 Foo 2026"] {
            let h = headers(&[("retry-after", bad), ("retry-after-ms", bad)]);
            assert_eq!(retry_delay(&h, SystemTime::now()), None, "{bad:?}");
        }
        let h = headers(&[("retry-after", "99999999999999999999999")]);
        assert_eq!(
            retry_delay(&h, SystemTime::now()),
            Some(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn a_bearer_challenge_is_read_among_others() {
        let h = headers(&[(
            "www-authenticate",
            r#"Basic realm="x", Bearer realm="engine", error="insufficient_scope", scope="predict read", error_description="needs \"predict\"""#,
        )]);
        let found = bearer_challenge(&h).expect("a bearer challenge");
        assert_eq!(found.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(found.scope.as_deref(), Some("predict read"));
        assert_eq!(found.description.as_deref(), Some("needs \"predict\""));
    }

    #[test]
    fn a_challenge_without_bearer_is_none() {
        let h = headers(&[(
            "www-authenticate",
            r#"Basic realm="x", error="invalid_token""#,
        )]);
        assert_eq!(bearer_challenge(&h), None);
        let h = headers(&[("www-authenticate", "Bearer")]);
        assert_eq!(bearer_challenge(&h), None);
    }

    #[test]
    fn unquoted_and_unterminated_params_do_not_panic() {
        let h = headers(&[(
            "www-authenticate",
            r#"Bearer error=invalid_token, error_description="cut"#,
        )]);
        let found = bearer_challenge(&h).expect("a bearer challenge");
        assert_eq!(found.error.as_deref(), Some("invalid_token"));
        assert_eq!(found.description.as_deref(), Some("cut"));
    }

    #[test]
    fn the_first_request_id_header_present_is_taken() {
        let h = headers(&[("cf-ray", "ray-1"), ("request-id", "req-2")]);
        assert_eq!(request_id(&h), Some(&b"req-2"[..]));
    }
}
