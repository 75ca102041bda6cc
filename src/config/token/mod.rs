//! The bearer token, and the one file its value leaves its wrapper in.
//!
//! The token is the one secret the crate holds: anyone who reads it can spend
//! the account it names. It lives in a [`secrecy::SecretString`], its `Debug`
//! prints only the variable it came from, and only this file calls
//! `expose_secret()`: to check it, to compare two tokens a file held, and
//! to turn it into the `authorization` header (marked sensitive, so HTTP/2
//! never indexes it and debug output hides it) and into the [`Concealer`]
//! that removes it from everything the crate prints. `file.rs` keeps a
//! token that comes from a file that rotates, and `read.rs` reads it.
//!
//! A value that is not visible ASCII is refused by name before anything is
//! sent: a line break in a header value is how a header is smuggled into a
//! request, and a space or a non-ASCII byte means the variable holds
//! something other than the token the engine issued (a quoted value, a
//! pasted sentence).

use std::fmt;

use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};

pub(crate) mod content;
pub(crate) mod file;
pub(crate) mod read;

use crate::conceal::Concealer;
use crate::config::env::Env;
use crate::config::origin::Origin;

/// A bearer token, with where it came from.
#[derive(Clone)]
pub(crate) struct Token {
    value: SecretString,
    origin: Origin,
}

/// A token value that cannot be sent as a header value. It names where the
/// value came from and what is wrong, never the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UnusableToken {
    origin: Origin,
    problem: &'static str,
}

impl UnusableToken {
    /// Where the value came from.
    pub(crate) fn origin(&self) -> &Origin {
        &self.origin
    }

    /// What is wrong with the value, without the value: for example
    /// `"holds a line break"`.
    pub(crate) fn problem(&self) -> &'static str {
        self.problem
    }
}

impl Token {
    /// A token from its value (trimmed, as a chain's value is) and where it
    /// came from.
    ///
    /// The value must be visible ASCII (`0x21`–`0x7E`) throughout; the error
    /// says which kind of character broke that rule, never where or what.
    pub(crate) fn new(value: &str, origin: Origin) -> Result<Token, UnusableToken> {
        let value = value.trim();
        let problem = if value.is_empty() {
            Some("is empty")
        } else if value.bytes().any(|b| b == b'\n' || b == b'\r') {
            Some("holds a line break")
        } else if value.bytes().any(|b| b == b' ' || b == b'\t') {
            Some("holds a space or tab")
        } else if value.bytes().any(|b| b.is_ascii_control()) {
            Some("holds a control character")
        } else if !value.is_ascii() {
            Some("holds a character outside visible ASCII")
        } else {
            None
        };
        match problem {
            Some(problem) => Err(UnusableToken { origin, problem }),
            None => Ok(Token {
                value: SecretString::from(value),
                origin,
            }),
        }
    }

    /// A token given in code, checked like a chain's value.
    pub(crate) fn from_secret(
        secret: &SecretString,
        origin: Origin,
    ) -> Result<Token, UnusableToken> {
        Token::new(secret.expose_secret(), origin)
    }

    /// Where the token came from: the only thing about it that is ever
    /// printed.
    pub(crate) fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The token as the sensitive `authorization` header, and the
    /// concealer that removes it (and the credential-shaped values of
    /// `env`) from every outward string.
    pub(crate) fn arm(&self, env: &Env) -> (HeaderValue, Concealer) {
        let value = self.value.expose_secret();
        (self.header(), Concealer::with_env([value], env))
    }

    /// The sensitive `authorization: Bearer <token>` header.
    pub(crate) fn header(&self) -> HeaderValue {
        let value = self.value.expose_secret();
        // `new` admitted visible ASCII only, which is always a valid header
        // value; the fallback keeps this total without a panic path.
        let mut header = HeaderValue::from_str(&format!("Bearer {value}"))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        header.set_sensitive(true);
        header
    }

    /// Has `concealer` conceal exactly these tokens of a file that
    /// rotates (the current one and those it replaced), in place of those
    /// it held before.
    pub(crate) fn hold_in(tokens: &[Token], concealer: &Concealer) {
        concealer.hold(tokens.iter().map(|token| token.value.expose_secret()));
    }

    /// Whether `other` is the same token.
    pub(crate) fn same_value(&self, other: &Token) -> bool {
        self.value.expose_secret() == other.value.expose_secret()
    }
}

/// Only the variable: the value is the secret.
impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("origin", &self.origin)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(name: &str) -> Origin {
        Origin::variable_named(name)
    }

    #[test]
    fn debug_shows_where_the_token_came_from_and_never_the_value() {
        let token = Token::new("mw-0123456789abcdef", from("CHANT_BEHAVIOUR_TOKEN")).unwrap();
        let shown = format!("{token:?}");
        assert!(shown.contains("CHANT_BEHAVIOUR_TOKEN"));
        assert!(!shown.contains("0123456789"));
    }

    #[test]
    fn values_that_cannot_be_a_header_are_refused_by_kind() {
        for (value, problem) in [
            ("", "is empty"),
            ("   ", "is empty"),
            ("mw-01\n23", "holds a line break"),
            ("mw-01\r23", "holds a line break"),
            ("mw 0123", "holds a space or tab"),
            ("mw\t0123", "holds a space or tab"),
            ("mw\u{7f}0123", "holds a control character"),
            ("mw-0123é", "holds a character outside visible ASCII"),
        ] {
            let err = Token::new(value, from("T_TOKEN")).unwrap_err();
            assert_eq!(err.problem(), problem, "{value:?}");
            assert_eq!(err.origin(), &from("T_TOKEN"));
        }
    }

    #[test]
    fn a_token_is_trimmed_like_a_chains_value() {
        let token = Token::new("  mw-0123456789  ", from("T_TOKEN")).unwrap();
        let (header, _) = token.arm(&Env::new());
        assert!(header.is_sensitive());
        assert_eq!(header, "Bearer mw-0123456789");
    }

    #[test]
    fn holding_tokens_replaces_those_held_before_and_keeps_every_other_secret() {
        let env = Env::from_pairs([("GITHUB_TOKEN", "ghp_0123456789abcdefghij")]);
        let concealer = Concealer::with_env(["mw-given-0123456789"], &env);
        let token = |value: &str| Token::new(value, from("T_TOKEN_FILE")).unwrap();
        let (first, second) = (token("mw-first-0123456789"), token("mw-second-0123456789"));
        Token::hold_in(std::slice::from_ref(&first), &concealer);
        assert_eq!(format!("{concealer:?}"), "Concealer { secrets: 3 }");
        Token::hold_in(std::slice::from_ref(&second), &concealer);
        assert_eq!(format!("{concealer:?}"), "Concealer { secrets: 3 }");
        assert_eq!(
            concealer.conceal("mw-given-0123456789 ghp_0123456789abcdefghij mw-second-0123456789"),
            "[redacted] [redacted] [redacted]"
        );
        assert_eq!(
            concealer.conceal("mw-first-0123456789"),
            "mw-first-0123456789"
        );
    }
}
