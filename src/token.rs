//! The bearer token, and the one place its value leaves its wrapper.
//!
//! The token is the one secret the crate holds: anyone who reads it can spend
//! the account it names. It lives in a [`secrecy::SecretString`], its `Debug`
//! prints only the variable it came from, and [`Token::arm`] is the single
//! function that calls `expose_secret()`: it turns the value into the
//! `authorization` header (marked sensitive, so HTTP/2 never indexes it and
//! debug output hides it) and into the [`Concealer`] that removes it from
//! everything the crate prints.
//!
//! A value that is not visible ASCII is refused by name before anything is
//! sent: a line break in a header value is how a header is smuggled into a
//! request, and a space or a non-ASCII byte means the variable holds
//! something other than the token the engine issued (a quoted value, a
//! pasted sentence).

use std::fmt;

use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};

use crate::{Concealer, Env};

/// A bearer token read from a variable of the token chain.
///
/// ```
/// use meterwire::Token;
///
/// let token = Token::new("mw-0123456789abcdef", "CHANT_BEHAVIOUR_TOKEN")?;
/// assert_eq!(token.source(), "CHANT_BEHAVIOUR_TOKEN");
/// assert_eq!(format!("{token:?}"), "Token { source: \"CHANT_BEHAVIOUR_TOKEN\" }");
///
/// let err = Token::new("mw 0123", "CHANT_BEHAVIOUR_TOKEN").unwrap_err();
/// assert!(err.to_string().contains("CHANT_BEHAVIOUR_TOKEN"));
/// assert!(!err.to_string().contains("0123"));
/// # Ok::<(), meterwire::UnusableToken>(())
/// ```
#[derive(Clone)]
pub struct Token {
    value: SecretString,
    source: String,
}

/// A token value that cannot be sent as a header value. It names the variable
/// and what is wrong, never the value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the token in {source_variable} {problem}, so it cannot be sent as a header value")]
pub struct UnusableToken {
    source_variable: String,
    problem: &'static str,
}

impl UnusableToken {
    /// The variable that held the value.
    pub fn source_variable(&self) -> &str {
        &self.source_variable
    }

    /// What is wrong with the value, without the value: for example
    /// `"holds a line break"`.
    pub fn problem(&self) -> &'static str {
        self.problem
    }
}

impl Token {
    /// A token from its value and the variable that held it.
    ///
    /// The value must be visible ASCII (`0x21`–`0x7E`) throughout; the error
    /// says which kind of character broke that rule, never where or what.
    pub fn new(value: &str, source: impl Into<String>) -> Result<Token, UnusableToken> {
        let source = source.into();
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
            Some(problem) => Err(UnusableToken {
                source_variable: source,
                problem,
            }),
            None => Ok(Token {
                value: SecretString::from(value),
                source,
            }),
        }
    }

    /// The variable the token came from: the only thing about it that is
    /// ever printed.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The one place the value is exposed: it becomes the sensitive
    /// `authorization` header and the concealer that removes it (and the
    /// credential-shaped values of `env`) from every outward string.
    pub(crate) fn arm(&self, env: &Env) -> (HeaderValue, Concealer) {
        let value = self.value.expose_secret();
        // `new` admitted visible ASCII only, which is always a valid header
        // value; the fallback keeps this total without a panic path.
        let mut header = HeaderValue::from_str(&format!("Bearer {value}"))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        header.set_sensitive(true);
        (header, Concealer::with_env([value], env))
    }
}

/// Only the variable: the value is the secret.
impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("source", &self.source)
            .finish()
    }
}
