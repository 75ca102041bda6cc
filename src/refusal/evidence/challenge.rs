//! Why the engine rejected the token: its `WWW-Authenticate: Bearer`
//! challenge (RFC 6750 §3). "Your token expired" and "your token lacks the
//! scope `predict`" are different fixes of the same variable.

use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};

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
    use crate::refusal::evidence::header_map as headers;

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
}
