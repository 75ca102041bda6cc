//! The engine's address, and how it is printed.
//!
//! An address is printed in every refusal, so it is printed redacted: an
//! operator pasting a refusal into a public merge-request comment must not
//! paste a password from `https://user:pass@host/`, an API key from
//! `?key=…`, or a secret from a fragment. Userinfo, query and fragment are
//! each replaced by `[redacted]`; the scheme, host, port and path stay, since
//! they are what an operator checks.
//!
//! Only `http` and `https` are accepted, and never with userinfo: userinfo
//! would put a second credential on the wire (as `Basic` authorization) next
//! to the bearer token.

use std::fmt;
use std::net::IpAddr;

use url::{Host, Url};

use crate::conceal::REDACTED;
use crate::config::origin::Origin;

/// An engine's address: an `http` or `https` URL without userinfo, with
/// where it came from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Address {
    url: Url,
    origin: Origin,
}

/// Why a value cannot be an engine's address. Its `Display` shows the value
/// redacted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AddressError {
    /// Not a URL at all.
    Malformed {
        /// The value, redacted.
        shown: String,
        /// Where it came from.
        origin: Origin,
        /// What the URL parser objected to (it never quotes the input).
        why: String,
    },
    /// A URL whose scheme is not `http` or `https`.
    Scheme {
        /// The value, redacted.
        shown: String,
        /// Where it came from.
        origin: Origin,
        /// The scheme it has, bounded to 32 characters.
        scheme: String,
    },
    /// A URL carrying `user:password@`.
    UserInfo {
        /// The value, redacted.
        shown: String,
        /// The host (and port) it names, for the remedy.
        host: String,
        /// Where it came from.
        origin: Origin,
    },
}

impl AddressError {
    /// Where the rejected value came from.
    pub(crate) fn origin(&self) -> &Origin {
        match self {
            AddressError::Malformed { origin, .. }
            | AddressError::Scheme { origin, .. }
            | AddressError::UserInfo { origin, .. } => origin,
        }
    }

    /// The rejected value, redacted.
    pub(crate) fn shown(&self) -> &str {
        match self {
            AddressError::Malformed { shown, .. }
            | AddressError::Scheme { shown, .. }
            | AddressError::UserInfo { shown, .. } => shown,
        }
    }
}

impl Address {
    /// Parses an address (trimmed, as a chain's value is) that came from
    /// `origin`.
    pub(crate) fn parse(value: &str, origin: Origin) -> Result<Address, AddressError> {
        if value.trim().is_empty() {
            return Err(AddressError::Malformed {
                shown: String::new(),
                origin,
                why: "it is blank".to_owned(),
            });
        }
        let url = Url::parse(value.trim()).map_err(|e| AddressError::Malformed {
            shown: redact_address(value),
            origin: origin.clone(),
            why: e.to_string(),
        })?;
        // Before the scheme is quoted: in `user:pass@host` the "scheme" is
        // the user, and the password is in the path.
        if has_stray_at(&url) {
            return Err(AddressError::Malformed {
                shown: redact_unparsed(value),
                origin,
                why: STRAY_AT.to_owned(),
            });
        }
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(AddressError::Scheme {
                shown: redact_url(&url),
                scheme: crate::text::bound(url.scheme(), 32).to_owned(),
                origin,
            });
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(AddressError::UserInfo {
                shown: redact_url(&url),
                host: host_and_port(&url),
                origin,
            });
        }
        if url.host().is_none() {
            return Err(AddressError::Malformed {
                shown: redact_url(&url),
                origin,
                why: "it names no host".to_owned(),
            });
        }
        Ok(Address { url, origin })
    }

    /// Where the address came from.
    pub(crate) fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The host (and port, when one is given), as an operator would check it.
    pub(crate) fn host(&self) -> String {
        host_and_port(&self.url)
    }

    /// The path, as the engine would be asked for it.
    pub(crate) fn path(&self) -> &str {
        self.url.path()
    }

    /// Whether the scheme is `https`.
    pub(crate) fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// Whether the host is loopback: `localhost`, `127.0.0.0/8` or `::1`.
    /// Plain `http` is allowed to these alone without an explicit opt-in.
    pub(crate) fn is_loopback(&self) -> bool {
        match self.url.host() {
            Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            Some(Host::Ipv4(ip)) => ip.is_loopback(),
            Some(Host::Ipv6(ip)) => {
                IpAddr::V6(ip).is_loopback()
                    || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
            None => false,
        }
    }

    /// The URL itself, for the one place a request is built.
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }
}

/// The redacted form: userinfo, query and fragment each become `[redacted]`.
impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.url))
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Address")
            .field("url", &redact_url(&self.url))
            .field("origin", &self.origin)
            .finish()
    }
}

fn host_and_port(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

fn redact_url(url: &Url) -> String {
    let mut shown = format!("{}://", url.scheme());
    if !url.username().is_empty() || url.password().is_some() {
        shown.push_str(REDACTED);
        shown.push('@');
    }
    if let Some(host) = url.host_str() {
        shown.push_str(host);
    }
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    if url.query().is_some() {
        shown.push('?');
        shown.push_str(REDACTED);
    }
    if url.fragment().is_some() {
        shown.push('#');
        shown.push_str(REDACTED);
    }
    redact_flags(&shown)
}

/// Why an address with an `@` outside its userinfo is refused.
const STRAY_AT: &str = "an @ follows its host: a /, ?, # or \\ in a user:password@ part ends the host early, and an engine's address carries no userinfo; an @ its path or query needs is written %40";

/// Whether an `@` sits in the path, query or fragment. The URL parser ends
/// the authority at the first `/`, `?`, `#` (or `\`), so in
/// `https://user:pa/ss@host/` the host is `user`, and the rest of the
/// password and the real host are in the path: such a URL cannot be shown
/// from its parts.
pub(crate) fn has_stray_at(url: &Url) -> bool {
    url.path().contains('@')
        || url.query().is_some_and(|query| query.contains('@'))
        || url
            .fragment()
            .is_some_and(|fragment| fragment.contains('@'))
}

/// Redacts address-like text that may not parse as a URL at all (a
/// malformed address, a proxy, or an engine given as a command line):
/// userinfo, query and fragment as for a URL, and the value of every
/// credential-named `--flag=value`.
pub(crate) fn redact_address(text: &str) -> String {
    let text = text.trim();
    if let Ok(url) = Url::parse(text)
        && url.has_host()
        && !has_stray_at(&url)
    {
        return redact_url(&url);
    }
    redact_unparsed(text)
}

/// Redacts text that is not a URL whose parts can be trusted. Where its
/// userinfo ends cannot be told from its shape (a password may hold `/`,
/// `?`, `#`, `:` or `@`), so everything after the scheme up to the last
/// `@` is hidden, and after that `@` everything from the first `?` or `#`.
/// Written by hand: a URL parser is exactly what has failed here.
fn redact_unparsed(text: &str) -> String {
    let text = text.trim();
    let (scheme, rest) = match text.find("://") {
        Some(end) if is_scheme(&text[..end]) => text.split_at(end + 3),
        _ => ("", text),
    };
    let mut shown = String::with_capacity(text.len());
    shown.push_str(scheme);
    let rest = match rest.rfind('@') {
        Some(at) => {
            shown.push_str(REDACTED);
            &rest[at..]
        }
        None => rest,
    };
    match rest.find(['?', '#']) {
        Some(at) => {
            shown.push_str(&rest[..=at]);
            shown.push_str(REDACTED);
        }
        None => shown.push_str(rest),
    }
    redact_flags(&shown)
}

/// A URL scheme: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Hides the value of `--name=value` where the name is credential-shaped, as
/// in an engine given as `engine --token=…`.
fn redact_flags(text: &str) -> String {
    if !text.contains("--") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match word
            .strip_prefix("--")
            .and_then(|flag| flag.split_once('='))
        {
            Some((name, value))
                if !value.is_empty() && crate::conceal::is_credential_name(name) =>
            {
                out.push_str("--");
                out.push_str(name);
                out.push('=');
                out.push_str(REDACTED);
            }
            _ => out.push_str(word),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(name: &str) -> Origin {
        Origin::variable_named(name)
    }

    #[test]
    fn an_address_is_shown_without_its_query_and_fragment() {
        let address = Address::parse(
            "https://engine.example/v1/predict?key=abc#frag",
            from("CHANT_BEHAVIOUR_ENGINE"),
        )
        .unwrap();
        assert_eq!(
            address.to_string(),
            "https://engine.example/v1/predict?[redacted]#[redacted]"
        );
        assert_eq!(address.origin(), &from("CHANT_BEHAVIOUR_ENGINE"));
        assert!(!address.is_loopback());
        assert!(!format!("{address:?}").contains("abc"));
    }

    #[test]
    fn loopback_is_localhost_127_0_0_0_8_and_ipv6_loopback() {
        for value in [
            "http://localhost:8080/",
            "http://LOCALHOST/",
            "http://127.0.0.1:8080/",
            "http://127.9.8.7/",
            "http://[::1]:9/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            assert!(
                Address::parse(value, from("E_ENGINE"))
                    .unwrap()
                    .is_loopback(),
                "{value}"
            );
        }
        for value in [
            "http://10.0.0.1/",
            "http://localhost.example/",
            "http://[::2]/",
        ] {
            assert!(
                !Address::parse(value, from("E_ENGINE"))
                    .unwrap()
                    .is_loopback(),
                "{value}"
            );
        }
    }

    #[test]
    fn what_is_not_an_engines_address_is_refused() {
        let err = |value| Address::parse(value, from("E_ENGINE")).unwrap_err();
        assert!(matches!(
            err("grpc://engine.example"),
            AddressError::Scheme { .. }
        ));
        assert!(matches!(err("not a url"), AddressError::Malformed { .. }));
        assert!(matches!(err("   "), AddressError::Malformed { .. }));
        match err("https://user:pa55@engine.example:8443/v1") {
            AddressError::UserInfo { shown, host, .. } => {
                assert_eq!(host, "engine.example:8443");
                assert!(!shown.contains("pa55"), "{shown}");
            }
            other => panic!("not userinfo: {other:?}"),
        }
    }

    #[test]
    fn text_that_is_not_a_url_is_redacted_too() {
        assert_eq!(
            redact_address("https://u:p@host/x?k=v"),
            "https://[redacted]@host/x?[redacted]"
        );
        assert_eq!(
            redact_address("engine --api-key=abc123 --port=9"),
            "engine --api-key=[redacted] --port=9"
        );
        assert_eq!(
            redact_address("http//broken?secret=1"),
            "http//broken?[redacted]"
        );
    }

    #[test]
    fn an_address_that_does_not_parse_hides_everything_before_its_last_at() {
        for (value, shown) in [
            (
                "https://user:s3cret/Passw0rdXYZ@engine.example/v1",
                "https://[redacted]@engine.example/v1",
            ),
            (
                "https://user:s3cret#Passw0rdXYZ@engine.example/v1",
                "https://[redacted]@engine.example/v1",
            ),
            (
                "https://user:s3cret?Passw0rdXYZ@engine.example/v1?k=v",
                "https://[redacted]@engine.example/v1?[redacted]",
            ),
            (
                "user:s3cretPassw0rdXYZ@engine.example/v1",
                "[redacted]@engine.example/v1",
            ),
            (
                "https://a@b:c/d@e?f@engine.example:99999/v1#x",
                "https://[redacted]@engine.example:99999/v1#[redacted]",
            ),
            (
                "https://engine.example:99999/v1",
                "https://engine.example:99999/v1",
            ),
        ] {
            assert_eq!(redact_address(value), shown, "{value}");
            let refused = Address::parse(value, from("E_ENGINE")).unwrap_err();
            assert!(
                matches!(refused, AddressError::Malformed { .. }),
                "{value}: {refused:?}"
            );
            assert_eq!(refused.shown(), shown, "{value}");
        }
    }

    #[test]
    fn an_at_after_the_host_is_refused_though_the_url_parses() {
        // Each parses: the host is `user` and the password's tail is in
        // the path, query or fragment.
        for value in [
            "https://user:8443/Passw0rdXYZ@engine.example/v1",
            "https://user:8443?Passw0rdXYZ@engine.example/v1",
            "https://user#Passw0rdXYZ@engine.example/v1",
            "https://user:p@ss?w0rdXYZ@engine.example/v1",
            "https://user:8443\\Passw0rdXYZ@engine.example/v1",
        ] {
            let refused = Address::parse(value, from("E_ENGINE")).unwrap_err();
            match &refused {
                AddressError::Malformed { shown, why, .. } => {
                    assert_eq!(shown, "https://[redacted]@engine.example/v1", "{value}");
                    assert!(why.contains("%40"), "{why}");
                }
                other => panic!("{value}: not malformed: {other:?}"),
            }
            assert_eq!(
                redact_address(value),
                "https://[redacted]@engine.example/v1",
                "{value}"
            );
        }
        // An @ written as %40 is no userinfo.
        assert!(Address::parse("https://engine.example/users/%40me", from("E_ENGINE")).is_ok());
    }
}
