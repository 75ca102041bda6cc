//! What the wire says, and what it becomes.
//!
//! This module is the README's wire table ("What the wire becomes") as
//! code: one pure function from what the engine answered (status, headers,
//! the head of the body) to an optional [`Refusal`], one from a failed
//! request to a refusal, and the refusals given before anything is sent.
//! Every reason is written here, so a reader checking what an operator will
//! see reads one file.
//!
//! The statuses are read the way HTTP defines them: `401`/`403` reject the
//! token (set a variable), `402` says the account is empty (fund it), `429`
//! says a limit is spent (wait). Anything else that is not `2xx`, including
//! a `4xx` outside those three, is `engine-unreachable`: "malformed request"
//! has no remedy an operator can apply, and the reason names the status so a
//! reader can tell which side of the wire is wrong.
//!
//! Every string that came from outside (the engine's words, an echoed
//! header, the address) is scrubbed before it is placed, and the finished
//! reason and remedy pass through the concealer once more and are bounded
//! last, so no bound can cut a token in half.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, LOCATION, RETRY_AFTER};

use crate::conceal::bound;
use crate::detail::{engine_value, engine_words};
use crate::hints;
use crate::{Address, Cause, Concealer, Naming, Refusal};

/// Every reason stays under this many characters, whatever the engine sends.
const REASON_LIMIT: usize = 999;
/// How much of a scope a reason quotes.
const SCOPE_LIMIT: usize = 64;
/// How much of an address a reason quotes.
const ADDRESS_LIMIT: usize = 200;
/// How much of an echoed header a reason quotes.
const HEADER_LIMIT: usize = 64;
/// How much of a request id a reason quotes.
const REQUEST_ID_LIMIT: usize = 100;
/// How much of an `error_description` a reason quotes.
const DESCRIPTION_LIMIT: usize = 200;

/// Where a call was going: the scope, the address and the variable holding
/// the token, and the concealer for everything that came
/// from outside. Reasons are written from it.
///
/// ```
/// use meterwire::{Address, Site};
///
/// let address = Address::parse("https://engine.example/v1", "CHANT_BEHAVIOUR_ENGINE")?;
/// let site = Site::new("acme", address, "CHANT_BEHAVIOUR_TOKEN");
/// assert_eq!(site.token_source(), "CHANT_BEHAVIOUR_TOKEN");
/// # Ok::<(), meterwire::AddressError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Site {
    scope: String,
    address: Address,
    token_source: String,
    concealer: Concealer,
}

impl Site {
    /// A site with a concealer that conceals nothing; see
    /// [`Site::with_concealer`].
    pub fn new(scope: &str, address: Address, token_source: &str) -> Site {
        Site {
            scope: scope.to_owned(),
            address,
            token_source: token_source.to_owned(),
            concealer: Concealer::new([]),
        }
    }

    /// The same site, scrubbing engine text with `concealer`.
    pub fn with_concealer(mut self, concealer: Concealer) -> Site {
        self.concealer = concealer;
        self
    }

    /// The address.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// The variable that held the token.
    pub fn token_source(&self) -> &str {
        &self.token_source
    }

    /// The concealer.
    pub fn concealer(&self) -> &Concealer {
        &self.concealer
    }

    /// `scope "acme": engine at https://host/path (from VARIABLE)`.
    fn at(&self) -> String {
        format!(
            "{}: engine at {} (from {})",
            scope_phrase(&self.scope),
            self.shown_address(),
            self.address.source()
        )
    }

    fn shown_address(&self) -> String {
        shown_address(&self.address.to_string(), &self.concealer)
    }

    fn check_address_remedy(&self) -> String {
        format!(
            "check that the engine at {} is up and reachable from here, or set {} to the engine's address",
            self.shown_address(),
            self.address.source()
        )
    }

    /// The last pass over every refusal this site writes.
    fn seal(&self, refusal: Refusal) -> Refusal {
        seal(&self.concealer, refusal)
    }
}

fn seal(concealer: &Concealer, refusal: Refusal) -> Refusal {
    refusal.map_text(|text| bound(&concealer.conceal(text), REASON_LIMIT).to_owned())
}

/// An address, already redacted, as a reason quotes it: concealed first
/// (a token can sit in its path), then bounded.
fn shown_address(redacted: &str, concealer: &Concealer) -> String {
    bound(&concealer.conceal(redacted), ADDRESS_LIMIT).to_owned()
}

fn scope_phrase(scope: &str) -> String {
    format!("scope {:?}", bound(scope, SCOPE_LIMIT))
}

/// What the engine's answer becomes: `None` for a `2xx` (the body is the
/// answer), otherwise the refusal of the wire table.
///
/// `body` is the head of the body as read (the transport reads at most
/// 64 KiB of an error body); the engine's words are taken from it.
///
/// ```
/// use meterwire::{Address, Cause, Site, refusal_for_status};
/// use reqwest::header::HeaderMap;
///
/// let address = Address::parse("https://engine.example/v1", "CHANT_BEHAVIOUR_ENGINE")?;
/// let site = Site::new("acme", address, "CHANT_BEHAVIOUR_TOKEN");
///
/// assert!(refusal_for_status(&site, 200, &HeaderMap::new(), b"{}").is_none());
///
/// let refusal = refusal_for_status(&site, 402, &HeaderMap::new(), b"balance is zero").unwrap();
/// assert_eq!(refusal.cause(), Cause::EngineOutOfCredit);
/// assert!(refusal.reason().contains("HTTP 402"));
/// assert!(refusal.reason().contains("balance is zero"));
/// assert_eq!(refusal.source(), Some("CHANT_BEHAVIOUR_ENGINE"));
/// # Ok::<(), meterwire::AddressError>(())
/// ```
pub fn refusal_for_status(
    site: &Site,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
) -> Option<Refusal> {
    refusal_for_status_at(site, status, headers, body, SystemTime::now())
}

/// [`refusal_for_status`] with the clock given: `now` is what an HTTP-date
/// in `retry-after` is measured from when the response has no `date` header.
pub fn refusal_for_status_at(
    site: &Site,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now: SystemTime,
) -> Option<Refusal> {
    if (200..300).contains(&status) {
        return None;
    }
    let said = match engine_words(body, &site.concealer) {
        Some(words) => format!("; the engine said: \"{words}\""),
        None => String::new(),
    };
    let request_id = hints::request_id(headers)
        .map(|id| engine_value(id, &site.concealer, REQUEST_ID_LIMIT))
        .filter(|id| !id.is_empty());
    let request = match &request_id {
        Some(id) => format!("; request id {id}"),
        None => String::new(),
    };
    let delay = hints::retry_delay(headers, now);
    let retry = match (headers.get(RETRY_AFTER), delay) {
        (Some(value), _) => format!(
            "; retry after {}",
            engine_value(value.as_bytes(), &site.concealer, HEADER_LIMIT)
        ),
        (None, Some(delay)) => format!("; retry after {}", seconds_phrase(delay)),
        (None, None) => String::new(),
    };
    let at = site.at();
    let token = site.token_source();
    let address_source = Some(site.address.source().to_owned());
    let refusal = match status {
        401 | 403 => {
            let challenge = hints::bearer_challenge(headers);
            let diagnosis = challenge
                .as_ref()
                .map(|challenge| diagnose(challenge, &site.concealer))
                .unwrap_or_default();
            let with_scope = match challenge.as_ref().and_then(|c| c.scope.as_deref()) {
                Some(scope) => format!(
                    " (one with the scope \"{}\")",
                    engine_value(scope.as_bytes(), &site.concealer, HEADER_LIMIT)
                ),
                None => String::new(),
            };
            Refusal::new(
                Cause::NoEngine,
                format!(
                    "{at} answered HTTP {status}: the engine rejected the token held in {token}{diagnosis}{request}{said}"
                ),
                format!(
                    "set {token} to a token the engine at {} accepts{with_scope}",
                    site.address.host()
                ),
                Some(token.to_owned()),
            )
        }
        402 => Refusal::new(
            Cause::EngineOutOfCredit,
            format!(
                "{at} answered HTTP 402: the account billed through the token in {token} is out of credit{request}{said}"
            ),
            format!(
                "fund the account the token in {token} bills (add credit to it), or set {token} to a token whose account has credit"
            ),
            address_source,
        ),
        429 => Refusal::new(
            Cause::EngineOverQuota,
            format!(
                "{at} answered HTTP 429: the account of the token in {token} is over a quota or rate limit{retry}{request}{said}"
            ),
            format!(
                "wait for the engine's limit window to pass{} before sending again, or set {token} to a token with a limit of its own",
                match delay {
                    Some(delay) => format!(" (it asks for {})", seconds_phrase(delay)),
                    None => String::new(),
                }
            ),
            address_source,
        ),
        300..=399 => {
            let to = match headers.get(LOCATION) {
                Some(location) => format!(
                    " to {}",
                    redirect_target(location.as_bytes(), &site.concealer)
                ),
                None => String::new(),
            };
            Refusal::new(
                Cause::EngineUnreachable,
                format!(
                    "{at} answered HTTP {status}, a redirect{to}, instead of an answer; redirects are not followed, so the token never reaches a host the engine names{request}{said}"
                ),
                format!(
                    "set {} to the address the engine answers at itself, without a redirect",
                    site.address.source()
                ),
                address_source,
            )
        }
        _ => {
            let kind = match status {
                400..=499 => "the engine refused the request itself",
                500..=599 => "the engine failed while answering",
                _ => "that is not an answer",
            };
            Refusal::new(
                Cause::EngineUnreachable,
                format!(
                    "{at} answered HTTP {status} instead of an answer: {kind}, so it did not answer the question{retry}{request}{said}"
                ),
                site.check_address_remedy(),
                address_source,
            )
        }
    };
    let mut refusal = refusal.with_status(status);
    if let Some(delay) = delay {
        refusal = refusal.with_retry_after(delay);
    }
    if let Some(id) = request_id {
        refusal = refusal.with_request_id(id);
    }
    Some(site.seal(refusal))
}

/// What a `Bearer` challenge says about the rejected token, in words an
/// operator can tell apart: expired or revoked, missing a scope, malformed.
fn diagnose(challenge: &hints::BearerChallenge, concealer: &Concealer) -> String {
    let value = |text: &str, limit| engine_value(text.as_bytes(), concealer, limit);
    let mut said = match challenge.error.as_deref() {
        Some("invalid_token") => {
            "; the engine says the token is invalid, expired or revoked (invalid_token)".to_owned()
        }
        Some("insufficient_scope") => match challenge.scope.as_deref() {
            Some(scope) => format!(
                "; the engine says the token lacks the scope \"{}\" (insufficient_scope)",
                value(scope, HEADER_LIMIT)
            ),
            None => {
                "; the engine says the token lacks a scope it needs (insufficient_scope)".to_owned()
            }
        },
        Some("invalid_request") => {
            "; the engine says the request's credentials are malformed (invalid_request)".to_owned()
        }
        Some(other) => format!(
            "; the engine's challenge says error \"{}\"",
            value(other, HEADER_LIMIT)
        ),
        None => String::new(),
    };
    if let Some(description) = challenge.description.as_deref() {
        let description = value(description, DESCRIPTION_LIMIT);
        if !description.is_empty() {
            said.push_str(&format!(": \"{description}\""));
        }
    }
    said
}

/// `15 s`, `1.500 s`, `15 min`, `2 h 5 min`: a delay as a reason or remedy
/// states it when there is no header value "as sent" to echo.
fn seconds_phrase(delay: Duration) -> String {
    let secs = delay.as_secs();
    match secs {
        0..60 if delay.subsec_millis() != 0 => format!("{:.3} s", delay.as_secs_f64()),
        0..60 => format!("{secs} s"),
        60..3600 if secs.is_multiple_of(60) => format!("{} min", secs / 60),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

/// A `location` as a reason shows it: the host (and port) of an absolute
/// URL, or "a path on the same host".
fn redirect_target(location: &[u8], concealer: &Concealer) -> String {
    let text = String::from_utf8_lossy(location);
    match url::Url::parse(text.trim()) {
        Ok(url) => match url.host_str() {
            Some(host) => {
                let host = match url.port() {
                    Some(port) => format!("{host}:{port}"),
                    None => host.to_owned(),
                };
                engine_value(host.as_bytes(), concealer, HEADER_LIMIT)
            }
            None => "an address with no host".to_owned(),
        },
        Err(_) => "a path on the same host".to_owned(),
    }
}

/// How a request failed without an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// Nothing listens at the address's port.
    ConnectionRefused,
    /// The host name does not resolve.
    HostNotFound,
    /// The TLS handshake failed; the text says why in the crate's own
    /// words (for example "the engine's certificate is not signed by a
    /// trusted authority").
    Tls(String),
    /// The connection was reset or closed before the answer was complete.
    ConnectionReset,
    /// No complete answer within the deadline.
    Deadline {
        /// The deadline, in milliseconds.
        ms: u64,
    },
    /// The connection could not be made for another reason.
    Connect,
    /// The answer is larger than the cap.
    AnswerTooLarge {
        /// The cap, in bytes.
        cap: u64,
        /// The length the engine declared, when it declared one.
        declared: Option<u64>,
    },
    /// The answer is not UTF-8 text.
    AnswerNotUtf8,
    /// The request failed in a way none of the above names.
    Other,
}

/// What a failed request becomes: always `engine-unreachable`, with a reason
/// naming what failed.
///
/// ```
/// use meterwire::{Address, Cause, Failure, Site, refusal_for_failure};
///
/// let address = Address::parse("http://127.0.0.1:9/", "CHANT_BEHAVIOUR_ENGINE")?;
/// let site = Site::new("acme", address, "CHANT_BEHAVIOUR_TOKEN");
/// let refusal = refusal_for_failure(&site, &Failure::Deadline { ms: 250 });
/// assert_eq!(refusal.cause(), Cause::EngineUnreachable);
/// assert!(refusal.reason().contains("no answer within 250 ms"));
/// # Ok::<(), meterwire::AddressError>(())
/// ```
pub fn refusal_for_failure(site: &Site, failure: &Failure) -> Refusal {
    let what = match failure {
        Failure::ConnectionRefused => "connection refused: nothing listens at that port".to_owned(),
        Failure::HostNotFound => "host not found: the name does not resolve".to_owned(),
        Failure::Tls(why) => format!("TLS failed: {why}"),
        Failure::ConnectionReset => {
            "connection reset: it closed before the answer was complete".to_owned()
        }
        Failure::Deadline { ms } => format!("no answer within {ms} ms"),
        Failure::Connect => "the connection could not be made".to_owned(),
        Failure::AnswerTooLarge { cap, declared } => match declared {
            Some(declared) => format!(
                "the answer declares {declared} bytes, over the cap of {cap} bytes, so it was not read"
            ),
            None => format!("the answer is larger than the cap of {cap} bytes, so it was not kept"),
        },
        Failure::AnswerNotUtf8 => "the answer is not UTF-8 text".to_owned(),
        Failure::Other => "the request failed before an answer arrived".to_owned(),
    };
    let lead = match failure {
        Failure::AnswerTooLarge { .. } | Failure::AnswerNotUtf8 => "answered, but",
        _ => "did not answer:",
    };
    let remedy = match failure {
        Failure::Tls(_) => format!(
            "{}; if it presents a certificate from a private authority, trust that authority's certificate",
            site.check_address_remedy()
        ),
        Failure::AnswerTooLarge { .. } => format!(
            "raise the answer cap if answers this large are expected, or set {} to an engine that answers within it",
            site.address.source()
        ),
        Failure::AnswerNotUtf8 => format!(
            "set {} to an engine that answers JSON as UTF-8 text",
            site.address.source()
        ),
        _ => site.check_address_remedy(),
    };
    site.seal(Refusal::new(
        Cause::EngineUnreachable,
        format!("{} {lead} {what}", site.at()),
        remedy,
        Some(site.address.source().to_owned()),
    ))
}

/// No variable of the address chain holds a value.
pub(crate) fn no_address(naming: &Naming, scope: &str, concealer: &Concealer) -> Refusal {
    let chain = naming.address_chain(scope).variables().join(", ");
    seal(
        concealer,
        Refusal::new(
            Cause::NoEngine,
            format!(
                "{}: no engine address is set; every variable of the address chain is unset or blank: {chain}",
                scope_phrase(scope)
            ),
            format!(
                "set {} to the engine's address (an https URL), or {} for this scope alone",
                naming.engine_variable(),
                first(naming.address_chain(scope).variables())
            ),
            None,
        ),
    )
}

/// The address chain holds a value that is not an engine's address.
pub(crate) fn bad_address(
    scope: &str,
    error: &crate::AddressError,
    concealer: &Concealer,
) -> Refusal {
    let source = error.source_variable();
    let shown = shown_address(error.shown(), concealer);
    let (what, fix) = match error {
        crate::AddressError::Malformed { why, .. } => (
            format!("is not a URL ({why})"),
            "an https URL such as https://engine.example/v1/predict",
        ),
        crate::AddressError::Scheme { scheme, .. } => (
            format!("uses the scheme {scheme:?}; only http and https reach an engine"),
            "the engine's https address",
        ),
        crate::AddressError::UserInfo { .. } => (
            "carries userinfo (user:password@), which would put a second credential on the wire next to the token".to_owned(),
            "the engine's address without the user:password@ part",
        ),
        // A variant added later still refuses, in general words.
        #[allow(unreachable_patterns)]
        _ => ("is not an engine's address".to_owned(), "the engine's https address"),
    };
    seal(
        concealer,
        Refusal::new(
            Cause::EngineUnreachable,
            format!(
                "{}: the address {shown} (from {source}) {what}; nothing was sent",
                scope_phrase(scope)
            ),
            format!("set {source} to {fix}"),
            Some(source.to_owned()),
        ),
    )
}

/// Plain `http` to a host that is not loopback, without the opt-in.
pub(crate) fn plaintext(scope: &str, address: &Address, concealer: &Concealer) -> Refusal {
    let shown = shown_address(&address.to_string(), concealer);
    let source = address.source();
    seal(
        concealer,
        Refusal::new(
            Cause::EngineUnreachable,
            format!(
                "{}: the address {shown} (from {source}) is plain http to {}, which is not a loopback host; a bearer token is sent only over TLS (RFC 6750 §5.3), so nothing was sent",
                scope_phrase(scope),
                address.host()
            ),
            format!("set {source} to the engine's https address"),
            Some(source.to_owned()),
        ),
    )
}

/// An address, but no variable of the token chain holds a value.
pub(crate) fn no_token(
    naming: &Naming,
    scope: &str,
    address: &Address,
    concealer: &Concealer,
) -> Refusal {
    let chain = naming.token_chain(scope).variables().join(", ");
    let shown = shown_address(&address.to_string(), concealer);
    seal(
        concealer,
        Refusal::new(
            Cause::NoEngine,
            format!(
                "{}: engine at {shown} (from {}) has no bearer token; every variable of the token chain is unset or blank: {chain}; nothing was sent",
                scope_phrase(scope),
                address.source()
            ),
            format!(
                "set {} to the bearer token the engine at {} issued, or {} for this scope alone",
                naming.token_variable(),
                address.host(),
                first(naming.token_chain(scope).variables())
            ),
            None,
        ),
    )
}

/// The token chain's winner cannot be a header value.
pub(crate) fn unusable_token(
    scope: &str,
    address: &Address,
    error: &crate::UnusableToken,
    concealer: &Concealer,
) -> Refusal {
    let shown = shown_address(&address.to_string(), concealer);
    let source = error.source_variable();
    seal(
        concealer,
        Refusal::new(
            Cause::NoEngine,
            format!(
                "{}: engine at {shown} (from {}): the token in {source} {}, so it cannot be sent as a header value; nothing was sent",
                scope_phrase(scope),
                address.source(),
                error.problem()
            ),
            format!(
                "set {source} to the token exactly as the engine issued it: visible ASCII, with no spaces, quotes or line breaks"
            ),
            Some(source.to_owned()),
        ),
    )
}

fn first(variables: &[String]) -> &str {
    variables.first().map_or("", String::as_str)
}
