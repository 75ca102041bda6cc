//! The shapes of credentials scrubbed from text an engine wrote, whoever's
//! they are: URLs cut to their origin, `Bearer` / `Basic` credentials, JWTs
//! and PEM private keys.

use super::REDACTED;
use regex::{Captures, Regex};
use std::borrow::Cow;
use std::sync::LazyLock;

/// Compiles one of the constant patterns below; a typo fails every test.
fn constant(pattern: &str) -> Regex {
    match Regex::new(pattern) {
        Ok(regex) => regex,
        Err(error) => panic!("constant scrub pattern does not compile: {error}"),
    }
}

/// From BEGIN to its END line, or to the end of the text: a truncated key is
/// still a key.
static PEM: LazyLock<Regex> = LazyLock::new(|| {
    constant(
        r"(?s)-----BEGIN [^\r\n]*?PRIVATE KEY-----.*?(?:-----END [^\r\n]*?PRIVATE KEY-----|\z)",
    )
});

/// Scheme, separator (also JSON-escaped `:\/\/`), authority, then the rest,
/// which stops where a quote or an escape other than `\/` would end a string.
static URL: LazyLock<Regex> = LazyLock::new(|| {
    constant(
        r#"\b([A-Za-z][A-Za-z0-9+.\-]*)(://|:\\/\\/)([^\s/?#"'<>\\]*)((?:[/?#]|\\/)(?:[^\s"'<>\\]|\\/)*)?"#,
    )
});

/// The scheme word, in any case, then the credential up to a delimiter; a
/// marker already in place (`[`) is left alone.
static AUTH: LazyLock<Regex> =
    LazyLock::new(|| constant(r#"\b((?i-u:bearer|basic))[ \t]+[^\s"'<>,;(){}\[\]]+"#));

/// A JWS (three parts, the last possibly empty) or a JWE (five).
static JWT: LazyLock<Regex> = LazyLock::new(|| {
    constant(r"eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+){0,2}")
});

/// Sentence punctuation right after a URL is prose, not URL.
const TRAILING_PROSE: &[char] = &['.', ',', ';', ':', '!', '?', ')'];

/// The text with every shape removed; borrowed when there was none.
pub(super) fn scrub_shapes(text: &str) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(text);
    let pem = PEM.replace_all(&text, REDACTED);
    if let Cow::Owned(owned) = pem {
        text = Cow::Owned(owned);
    }
    let url = URL.replace_all(&text, |caps: &Captures| url_origin(caps));
    if let Cow::Owned(owned) = url {
        text = Cow::Owned(owned);
    }
    let auth = AUTH.replace_all(&text, |caps: &Captures| auth_credential(caps, &text));
    if let Cow::Owned(owned) = auth {
        text = Cow::Owned(owned);
    }
    let jwt = JWT.replace_all(&text, REDACTED);
    if let Cow::Owned(owned) = jwt {
        text = Cow::Owned(owned);
    }
    text
}

/// `Bearer [redacted]`, except for an auth-param of a challenge
/// (`Basic realm="engine"`), which names no credential.
fn auth_credential(caps: &Captures, text: &str) -> String {
    let whole = caps.get(0).map_or("", |m| m.as_str());
    let quoted_param = caps
        .get(0)
        .is_some_and(|m| whole.ends_with('=') && text[m.end()..].starts_with('"'));
    if quoted_param {
        return whole.to_owned();
    }
    let scheme = caps.get(1).map_or("", |m| m.as_str());
    // "a basic check", "Bearer token required": a word of prose after the
    // scheme name is not a credential. Credentials carry digits, mixed case
    // or token68 punctuation; the token itself is concealed exactly anyway.
    let credential = whole[scheme.len()..].trim_start();
    let mut letters = credential.chars();
    let prose = letters.next().is_some_and(|c| c.is_ascii_alphabetic())
        && letters.all(|c| c.is_ascii_lowercase());
    if prose {
        return whole.to_owned();
    }
    format!("{scheme} {REDACTED}")
}

/// `scheme://host[:port]`, keeping trailing sentence punctuation.
fn url_origin(caps: &Captures) -> String {
    let group = |i| caps.get(i).map_or("", |m: regex::Match| m.as_str());
    let (scheme, separator, authority, rest) = (group(1), group(2), group(3), group(4));
    let tail = if rest.is_empty() { authority } else { rest };
    let prose = &tail[tail.trim_end_matches(TRAILING_PROSE).len()..];
    let authority = if rest.is_empty() {
        &authority[..authority.len() - prose.len()]
    } else {
        authority
    };
    // The last `@` ends the userinfo: a password may hold a raw `@`.
    let host = authority.rsplit('@').next().unwrap_or(authority);
    // A password holding a raw `/` ends the authority early, leaving
    // `user:pass`: a port is digits, anything else after `:` goes.
    let host = match host.rsplit_once(':') {
        Some((name, port)) if !port.bytes().all(|b| b.is_ascii_digit()) && !port.ends_with(']') => {
            name
        }
        _ => host,
    };
    format!("{scheme}{separator}{host}{prose}")
}
