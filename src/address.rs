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

/// An engine's address: an `http` or `https` URL without userinfo, with the
/// variable it came from.
///
/// ```
/// use meterwire::Address;
///
/// let address = Address::parse("https://engine.example/v1/predict?key=abc#frag", "CHANT_BEHAVIOUR_ENGINE")?;
/// assert_eq!(address.to_string(), "https://engine.example/v1/predict?[redacted]#[redacted]");
/// assert_eq!(address.source(), "CHANT_BEHAVIOUR_ENGINE");
/// assert!(!address.is_loopback());
///
/// assert!(Address::parse("http://127.0.0.1:8080/", "BEHAVIOUR_ENGINE")?.is_loopback());
/// assert!(Address::parse("grpc://engine.example", "BEHAVIOUR_ENGINE").is_err());
/// # Ok::<(), meterwire::AddressError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Address {
    url: Url,
    source: String,
}

/// Why a value cannot be an engine's address. Its `Display` shows the value
/// redacted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddressError {
    /// Not a URL at all.
    #[error("{shown} (from {source_variable}) is not a URL: {why}")]
    Malformed {
        /// The value, redacted.
        shown: String,
        /// The variable that held it.
        source_variable: String,
        /// What the URL parser objected to (it never quotes the input).
        why: String,
    },
    /// A URL whose scheme is not `http` or `https`.
    #[error(
        "{shown} (from {source_variable}) uses the scheme {scheme:?}; only http and https reach an engine"
    )]
    Scheme {
        /// The value, redacted.
        shown: String,
        /// The variable that held it.
        source_variable: String,
        /// The scheme it has, bounded to 32 characters.
        scheme: String,
    },
    /// A URL carrying `user:password@`.
    #[error(
        "{shown} (from {source_variable}) carries userinfo (user:password@), which would put a second credential on the wire"
    )]
    UserInfo {
        /// The value, redacted.
        shown: String,
        /// The variable that held it.
        source_variable: String,
    },
}

impl AddressError {
    /// The variable that held the rejected value.
    pub fn source_variable(&self) -> &str {
        match self {
            AddressError::Malformed {
                source_variable, ..
            }
            | AddressError::Scheme {
                source_variable, ..
            }
            | AddressError::UserInfo {
                source_variable, ..
            } => source_variable,
        }
    }

    /// The rejected value, redacted.
    pub fn shown(&self) -> &str {
        match self {
            AddressError::Malformed { shown, .. }
            | AddressError::Scheme { shown, .. }
            | AddressError::UserInfo { shown, .. } => shown,
        }
    }
}

impl Address {
    /// Parses an address read from `source`.
    pub fn parse(value: &str, source: impl Into<String>) -> Result<Address, AddressError> {
        let source_variable = source.into();
        let url = Url::parse(value.trim()).map_err(|e| AddressError::Malformed {
            shown: redact_address(value),
            source_variable: source_variable.clone(),
            why: e.to_string(),
        })?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(AddressError::Scheme {
                shown: redact_url(&url),
                scheme: crate::conceal::bound(url.scheme(), 32).to_owned(),
                source_variable,
            });
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(AddressError::UserInfo {
                shown: redact_url(&url),
                source_variable,
            });
        }
        if url.host().is_none() {
            return Err(AddressError::Malformed {
                shown: redact_url(&url),
                source_variable,
                why: "it names no host".to_owned(),
            });
        }
        Ok(Address {
            url,
            source: source_variable,
        })
    }

    /// The variable the address came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The host (and port, when one is given), as an operator would check it.
    pub fn host(&self) -> String {
        let host = self.url.host_str().unwrap_or_default();
        match self.url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }

    /// Whether the scheme is `https`.
    pub fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// Whether the host is loopback: `localhost`, `127.0.0.0/8` or `::1`.
    /// Plain `http` is allowed to these alone without an explicit opt-in.
    pub fn is_loopback(&self) -> bool {
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
            .field("source", &self.source)
            .finish()
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

/// Redacts address-like text that may not parse as a URL at all (a
/// malformed address, or an engine given as a command line): userinfo,
/// query and fragment as for a URL, and the value of every credential-named
/// `--flag=value`.
///
/// ```
/// use meterwire::redact_address;
///
/// assert_eq!(redact_address("https://u:p@host/x?k=v"), "https://[redacted]@host/x?[redacted]");
/// assert_eq!(redact_address("engine --api-key=abc123 --port=9"), "engine --api-key=[redacted] --port=9");
/// assert_eq!(redact_address("http//broken?secret=1"), "http//broken?[redacted]");
/// ```
pub fn redact_address(text: &str) -> String {
    let text = text.trim();
    if let Ok(url) = Url::parse(text)
        && url.has_host()
    {
        return redact_url(&url);
    }
    // Not a URL with a host: cut at the first `?` or `#`, and hide anything
    // before an `@` in what looks like an authority.
    let mut shown = String::with_capacity(text.len());
    let (head, tail) = match text.find(['?', '#']) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    match (head.find("://"), head.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let authority_end = head[scheme_end + 3..]
                .find('/')
                .map_or(head.len(), |i| scheme_end + 3 + i);
            if at < authority_end {
                shown.push_str(&head[..scheme_end + 3]);
                shown.push_str(REDACTED);
                shown.push_str(&head[at..]);
            } else {
                shown.push_str(head);
            }
        }
        _ => shown.push_str(head),
    }
    if let Some(mark) = tail.chars().next() {
        shown.push(mark);
        shown.push_str(REDACTED);
    }
    redact_flags(&shown)
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
