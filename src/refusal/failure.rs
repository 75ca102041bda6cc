//! What a failed request becomes, and how a failure is read from reqwest's
//! errors.
//!
//! A failure is always `engine-unreachable`: the engine did not answer the
//! question. The reason names what failed in the crate's own words, never in
//! reqwest's: a reqwest error's `Display` carries the full URL, query and
//! all. The remedy points where the failure does: a refused connection, an
//! unknown host or a failed handshake at the address; a reset or the
//! deadline at the engine's health; a body that could not be serialized or a
//! header that cannot be sent at the request.

use std::io;

use super::site::Site;
use super::status::{Fix, proxy_remedy, unreachable_remedy};
use crate::config::naming::Naming;
use crate::refusal::{Cause, Refusal};
use crate::retry::Outcome;

/// How a request failed without an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Nothing listens at the address's port.
    ConnectionRefused,
    /// The host name does not resolve.
    HostNotFound,
    /// The TLS handshake failed; the text says why in the crate's own
    /// words (for example "the engine's certificate is not signed by a
    /// trusted authority").
    Tls(&'static str),
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
    /// One piece, event or line of a stream is larger than the cap.
    PieceTooLarge {
        /// `piece`, `event` or `line`.
        what: &'static str,
        /// The cap, in bytes.
        cap: u64,
    },
    /// The request failed in a way none of the above names.
    Other,
    /// The proxy the caller configured could not be reached or passed: the
    /// request never reached the engine.
    Proxy(ProxyFailure),
    /// The blocking transport was called from a thread of an async runtime,
    /// where waiting would stall the runtime; nothing was sent.
    #[cfg_attr(not(feature = "blocking"), allow(dead_code))]
    BlockingInRuntime,
    /// The body could not be serialized as JSON; nothing was sent. The text
    /// is the serializer's category of error, never its message (which a
    /// `Serialize` implementation may fill with data).
    Unserializable(&'static str),
    /// A per-call option (a header, the idempotency key, the deadline)
    /// cannot be used; nothing was sent. The text names the option, never a
    /// header's value.
    Unsendable(String),
}

/// How the configured proxy failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProxyFailure {
    /// Nothing listens at the proxy's port.
    Refused,
    /// The proxy's host name does not resolve.
    NotFound,
    /// The connection to the proxy could not be made, for a reason its
    /// connector does not tell (a SOCKS connector keeps the socket's error
    /// to itself).
    Unreachable,
    /// The connection through the proxy to the engine could not be made.
    Connect,
    /// The proxy asked for credentials (`407`).
    AuthRequired,
    /// The proxy refused to open a tunnel (`CONNECT`) to the engine.
    Tunnel,
}

/// What a failure comes to, every column of it in one place: adding a kind
/// of failure is adding one arm to [`Failure::row`].
struct Row {
    /// Whether the request can have reached the engine, for a retry (the
    /// retry table's `decide` reads it).
    outcome: Outcome,
    /// A few words for the list of attempts in a reason.
    short: String,
    /// What failed, for the reason.
    what: String,
    /// How the reason says the engine fared: `did not answer:`,
    /// `answered, but`, `answered HTTP 200, but`, `was not asked:`.
    lead: String,
    /// Where the remedy points.
    remedy: Remedy,
}

/// How far an answer got before it failed: the engine answered this
/// status, and this much of its body (and of a stream, these events)
/// arrived. A refusal after a `2xx` head keeps its status and says so, so
/// it never reads as an engine that did not answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Answered {
    pub(crate) status: u16,
    pub(crate) bytes: u64,
    pub(crate) events: Option<u64>,
}

impl Answered {
    /// `11 bytes`, or `11 bytes and 3 events`.
    pub(crate) fn so_far(&self) -> String {
        let bytes = match self.bytes {
            1 => "1 byte".to_owned(),
            n => format!("{n} bytes"),
        };
        match self.events {
            Some(1) => format!("{bytes} and 1 event"),
            Some(events) => format!("{bytes} and {events} events"),
            None => bytes,
        }
    }
}

/// Where a failure's remedy points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Remedy {
    /// Where the status table's remedies point (`Fix`), with what the
    /// engine did named in the remedy when it was reached.
    Fix(Fix),
    /// The address, and trusting a private authority's certificate.
    Trust,
    /// Raising the cap, or an engine that answers within it.
    Cap,
    /// An engine that answers JSON as UTF-8 text.
    Utf8,
    /// The request type the predictor serializes.
    Serializer,
    /// The per-call option that cannot be used.
    Option,
    /// The proxy: up, reachable, and letting this host through.
    Proxy,
    /// The async transport, in async code.
    Async,
    /// The proxy's credentials.
    ProxyCredentials,
}

impl Failure {
    /// Every column of the failure: one match over the kinds.
    ///
    /// The outcome is read from reqwest's and hyper's errors, as `classify`
    /// sorts them: a refused connection, an unknown host and any error of
    /// the connect phase (reqwest's `is_connect`) come before a byte of the
    /// request is written, so the engine never saw it. A reset, a closed
    /// connection or an incomplete answer cannot be told apart from an
    /// engine that read the request and then failed (a pooled connection
    /// the engine closed may or may not have taken the request), so they
    /// count as sent. TLS, the deadline, an answer over the cap or not
    /// UTF-8 and anything refused before sending are final.
    fn row(&self, answered: Option<&Answered>) -> Row {
        let row = |outcome, short: &str, what: String, lead: &str, remedy| Row {
            outcome,
            short: short.to_owned(),
            what,
            lead: match answered {
                Some(answered) => format!("answered HTTP {}, but", answered.status),
                None => lead.to_owned(),
            },
            remedy,
        };
        let so_far = answered.map(Answered::so_far);
        const NO_ANSWER: &str = "did not answer:";
        match self {
            Failure::ConnectionRefused => row(
                Outcome::NotSent,
                "connection refused",
                "connection refused: nothing listens at that port".to_owned(),
                NO_ANSWER,
                Remedy::Fix(Fix::Reach),
            ),
            Failure::HostNotFound => row(
                Outcome::NotSent,
                "host not found",
                "host not found: the name does not resolve".to_owned(),
                NO_ANSWER,
                Remedy::Fix(Fix::Reach),
            ),
            Failure::Connect => row(
                Outcome::NotSent,
                "no connection",
                "the connection could not be made".to_owned(),
                NO_ANSWER,
                Remedy::Fix(Fix::Reach),
            ),
            Failure::Tls(why) => row(
                Outcome::Final,
                "TLS failed",
                format!("TLS failed: {why}"),
                NO_ANSWER,
                Remedy::Trust,
            ),
            Failure::ConnectionReset => row(
                Outcome::Lost,
                "connection reset",
                match so_far {
                    Some(so_far) => format!(
                        "the connection was reset after {so_far} of the answer, before it was complete"
                    ),
                    None => "connection reset: it closed before the answer was complete".to_owned(),
                },
                NO_ANSWER,
                Remedy::Fix(Fix::Health),
            ),
            Failure::Deadline { ms } => row(
                Outcome::Final,
                &format!("no answer within {ms} ms"),
                match so_far {
                    Some(so_far) => {
                        format!("its body stopped after {so_far}: no answer within {ms} ms")
                    }
                    None => format!("no answer within {ms} ms"),
                },
                NO_ANSWER,
                Remedy::Fix(Fix::Health),
            ),
            Failure::Other => row(
                Outcome::Lost,
                "no answer",
                match so_far {
                    Some(so_far) => {
                        format!("the answer stopped after {so_far}, before it was complete")
                    }
                    None => "the request failed before an answer arrived".to_owned(),
                },
                NO_ANSWER,
                Remedy::Fix(Fix::Health),
            ),
            Failure::AnswerTooLarge { cap, declared } => row(
                Outcome::Final,
                "an answer over the cap",
                match declared {
                    Some(declared) => format!(
                        "the answer declares {declared} bytes, over the cap of {cap} bytes, so it was not read"
                    ),
                    None => format!(
                        "the answer is larger than the cap of {cap} bytes, so it was not kept"
                    ),
                },
                "answered, but",
                Remedy::Cap,
            ),
            Failure::PieceTooLarge { what, cap } => row(
                Outcome::Final,
                "a piece over the cap",
                format!(
                    "one {what} of the stream is larger than the cap of {cap} bytes, so it was not kept"
                ),
                "answered, but",
                Remedy::Cap,
            ),
            Failure::AnswerNotUtf8 => row(
                Outcome::Final,
                "an answer not UTF-8",
                match so_far {
                    Some(so_far) => format!("the answer is not UTF-8 text ({so_far} arrived)"),
                    None => "the answer is not UTF-8 text".to_owned(),
                },
                "answered, but",
                Remedy::Utf8,
            ),
            Failure::Proxy(how) => {
                let (short, what, remedy) = match how {
                    ProxyFailure::Refused => (
                        "proxy refused",
                        "the proxy refused the connection: nothing listens at its port",
                        Remedy::Proxy,
                    ),
                    ProxyFailure::NotFound => (
                        "proxy not found",
                        "the proxy's host name does not resolve",
                        Remedy::Proxy,
                    ),
                    ProxyFailure::Unreachable => (
                        "proxy unreachable",
                        "the connection to the proxy could not be made",
                        Remedy::Proxy,
                    ),
                    ProxyFailure::Connect => (
                        "no connection through the proxy",
                        "the connection to the engine through the proxy could not be made",
                        Remedy::Proxy,
                    ),
                    ProxyFailure::AuthRequired => (
                        "proxy asked for credentials",
                        "the proxy asked for credentials (HTTP 407) before it would pass the request on",
                        Remedy::ProxyCredentials,
                    ),
                    ProxyFailure::Tunnel => (
                        "proxy refused the tunnel",
                        "the proxy refused to open a tunnel (CONNECT) to the engine",
                        Remedy::Proxy,
                    ),
                };
                row(Outcome::NotSent, short, what.to_owned(), NO_ANSWER, remedy)
            }
            Failure::BlockingInRuntime => row(
                Outcome::Final,
                "not sent",
                "meterwire::blocking::HttpTransport was called from a thread of an async runtime, where waiting for the answer would stall the runtime, so nothing was sent".to_owned(),
                "was not asked:",
                Remedy::Async,
            ),
            Failure::Unserializable(category) => row(
                Outcome::Final,
                "not sent",
                unserializable_phrase(category),
                "was not asked:",
                Remedy::Serializer,
            ),
            Failure::Unsendable(problem) => row(
                Outcome::Final,
                "not sent",
                format!("{problem}, so nothing was sent"),
                "was not asked:",
                Remedy::Option,
            ),
        }
    }

    /// What the failure means for a retry: whether the request can have
    /// reached the engine.
    pub(crate) fn outcome(&self) -> Outcome {
        self.row(None).outcome
    }

    /// A few words for the list of attempts in a reason.
    pub(crate) fn short(&self) -> String {
        self.row(None).short
    }
}

/// What a failed request becomes: always `engine-unreachable`, with a reason
/// naming what failed.
pub(crate) fn refusal_for_failure(site: &Site, failure: &Failure) -> Refusal {
    refusal(site, failure, None)
}

/// What a failure after a `2xx` head becomes: `engine-unreachable` still,
/// keeping the status and saying how much of the answer arrived.
pub(crate) fn refusal_after_head(site: &Site, failure: &Failure, answered: Answered) -> Refusal {
    refusal(site, failure, Some(&answered)).with_status(answered.status)
}

fn refusal(site: &Site, failure: &Failure, answered: Option<&Answered>) -> Refusal {
    let Row {
        what, lead, remedy, ..
    } = failure.row(answered);
    let what = match (failure, site.proxy()) {
        (Failure::Proxy(_), Some(proxy)) => format!("{what} (the proxy at {proxy})"),
        _ => what,
    };
    let address = site.address().origin();
    let remedy = match remedy {
        Remedy::Fix(fix @ Fix::Health) => {
            unreachable_remedy(site, fix, &format!("did not answer: {what}"), None)
        }
        Remedy::Fix(fix) => unreachable_remedy(site, fix, "", None),
        Remedy::Trust => format!(
            "{}; if it presents a certificate from a private authority, trust that authority's certificate",
            unreachable_remedy(site, Fix::Reach, "", None)
        ),
        Remedy::Cap => format!(
            "raise the answer cap if answers this large are expected, or {}",
            address.set_phrase("an engine that answers within it")
        ),
        Remedy::Utf8 => address.set_phrase("an engine that answers JSON as UTF-8 text"),
        Remedy::Serializer => format!(
            "{SERIALIZER_FIX} for the engine at {} (the address, {}, was not contacted)",
            site.host(),
            address.named()
        ),
        Remedy::Proxy => proxy_remedy(site, false),
        Remedy::Async => format!(
            "in async code use meterwire::HttpTransport and .await its send, or call the blocking transport from a thread that is not the runtime's; the engine at {} was not contacted (its address: {})",
            site.host(),
            address.named()
        ),
        Remedy::ProxyCredentials => proxy_remedy(site, true),
        Remedy::Option => format!(
            "drop or fix that option where the predictor builds the call, so that the engine at {} can be asked (the address, {}, was not contacted)",
            site.host(),
            address.named()
        ),
    };
    site.seal(Refusal::new(
        Cause::EngineUnreachable,
        format!("{} {lead} {what}", site.subject()),
        remedy,
        site.address_variable(),
    ))
}

/// The category of a serde_json error, in words that quote no data.
pub(crate) fn serialize_category(error: &serde_json::Error) -> &'static str {
    match error.classify() {
        serde_json::error::Category::Io => "the writer failed",
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            "the serializer produced invalid JSON"
        }
        serde_json::error::Category::Data => {
            "its Serialize implementation refused it, for example a map whose keys are not strings"
        }
    }
}

/// Names what failed from the error's causes, never from its `Display`
/// (which carries the full URL, query and all). With a proxy configured,
/// the connection is made to the proxy, so a connection that could not be
/// made (refused, no such host) is the proxy's; and a tunnel the proxy
/// would not open is the proxy's whatever it answered.
pub(crate) fn classify(error: &reqwest::Error, ms: u64, via_proxy: bool) -> Failure {
    let failure = classify_cause(error, ms);
    if !via_proxy {
        return failure;
    }
    match failure {
        Failure::ConnectionRefused => Failure::Proxy(ProxyFailure::Refused),
        Failure::HostNotFound => Failure::Proxy(ProxyFailure::NotFound),
        Failure::Connect => Failure::Proxy(ProxyFailure::Connect),
        other => other,
    }
}

fn classify_cause(error: &reqwest::Error, ms: u64) -> Failure {
    if error.is_timeout() {
        return Failure::Deadline { ms };
    }
    // Walk every cause. `io::Error::source` skips the error it wraps, and
    // reqwest wraps a TLS error in two of them, so look inside those too.
    // The depth bound keeps a pathological chain from looping.
    let mut pending: Vec<&(dyn std::error::Error + 'static)> =
        std::error::Error::source(error).into_iter().collect();
    let mut visited = 0;
    while let Some(current) = pending.pop() {
        visited += 1;
        if visited > 32 {
            break;
        }
        if let Some(failure) = classify_one(current) {
            return failure;
        }
        if let Some(next) = current.source() {
            pending.push(next);
        }
        if let Some(inner) = current
            .downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
        {
            pending.push(inner);
        }
    }
    if error.is_dns() {
        Failure::HostNotFound
    } else if error.is_connect() {
        Failure::Connect
    } else if error.is_body() || error.is_decode() {
        Failure::ConnectionReset
    } else {
        Failure::Other
    }
}

fn classify_one(error: &(dyn std::error::Error + 'static)) -> Option<Failure> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(Failure::Tls(describe_tls(tls)));
    }
    if let Some(io) = error.downcast_ref::<io::Error>() {
        return match io.kind() {
            io::ErrorKind::ConnectionRefused => Some(Failure::ConnectionRefused),
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof => Some(Failure::ConnectionReset),
            _ => None,
        };
    }
    if let Some(hyper) = error.downcast_ref::<hyper::Error>()
        && (hyper.is_incomplete_message() || hyper.is_closed() || hyper.is_canceled())
    {
        return Some(Failure::ConnectionReset);
    }
    // Matched by their text: hyper-util does not export its tunnel error.
    // The text is read, never shown.
    let text = error.to_string();
    if text.starts_with("dns error") {
        return Some(Failure::HostNotFound);
    }
    if let Some(tunnel) = text.strip_prefix("tunnel error: ") {
        return Some(Failure::Proxy(match tunnel {
            "proxy authorization required" => ProxyFailure::AuthRequired,
            "unsuccessful" | "unexpected end of file" | "proxy response headers too long" => {
                ProxyFailure::Tunnel
            }
            "failed to create underlying connection" => ProxyFailure::Unreachable,
            _ => ProxyFailure::Connect,
        }));
    }
    if text == "SOCKS error: failed to create underlying connection" {
        return Some(Failure::Proxy(ProxyFailure::Unreachable));
    }
    None
}

fn describe_tls(error: &rustls::Error) -> &'static str {
    use rustls::CertificateError as C;
    match error {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => {
            "the engine's certificate is not signed by an authority this client trusts"
        }
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => "the engine's certificate does not name this host",
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "the engine's certificate has expired"
        }
        rustls::Error::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            "the engine's certificate is not valid yet"
        }
        rustls::Error::InvalidCertificate(C::Revoked) => "the engine's certificate is revoked",
        rustls::Error::InvalidCertificate(_) => "the engine's certificate was rejected",
        rustls::Error::AlertReceived(_) => "the engine ended the handshake with an alert",
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the engine did not speak TLS at that address (is it plain http?)"
        }
        _ => "the handshake with the engine failed",
    }
}

/// What a body that could not be serialized says, with or without an
/// address to name: `category` is serde_json's word for what went wrong.
fn unserializable_phrase(category: &str) -> String {
    format!("the request body could not be serialized as JSON ({category}), so nothing was sent")
}

/// How a body that could not be serialized is mended, before what the
/// remedy says of the engine.
const SERIALIZER_FIX: &str =
    "fix the request type the predictor serializes, so that serde_json can write it as JSON";

/// The refusal of a body that could not be serialized, for a transport
/// that has no address to name: the default `Transport::execute`.
pub(crate) fn unserializable_unaddressed(category: &str) -> Refusal {
    Refusal::new(
        Cause::EngineUnreachable,
        unserializable_phrase(category),
        format!(
            "{SERIALIZER_FIX}; nothing was sent to the engine (its address is read from {} by default)",
            Naming::default().engine_variable()
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conceal::Concealer;
    use crate::refusal::site::test_site;

    const ADDRESS_VAR: &str = "CHANT_BEHAVIOUR_ENGINE";

    fn site() -> Site {
        test_site(Concealer::new([]))
    }

    #[test]
    fn every_failure_is_engine_unreachable_naming_what_failed() {
        let cases = [
            (Failure::ConnectionRefused, "connection refused", Fix::Reach),
            (Failure::HostNotFound, "host not found", Fix::Reach),
            (
                Failure::Tls("the engine's certificate has expired"),
                "has expired",
                Fix::Reach,
            ),
            (Failure::ConnectionReset, "reset", Fix::Health),
            (
                Failure::Deadline { ms: 250 },
                "no answer within 250 ms",
                Fix::Health,
            ),
            (Failure::Connect, "connection", Fix::Reach),
            (
                Failure::AnswerTooLarge {
                    cap: 1024,
                    declared: Some(4096),
                },
                "1024",
                Fix::Reach,
            ),
            (
                Failure::AnswerTooLarge {
                    cap: 2048,
                    declared: None,
                },
                "2048",
                Fix::Reach,
            ),
            (Failure::AnswerNotUtf8, "not utf-8", Fix::Reach),
            (Failure::Other, "failed", Fix::Health),
            (
                Failure::Unserializable("its Serialize implementation refused it"),
                "could not be serialized",
                Fix::Request,
            ),
            (
                Failure::Unsendable("the header \"te\" is one".to_owned()),
                "nothing was sent",
                Fix::Request,
            ),
            (
                Failure::Proxy(ProxyFailure::Refused),
                "the proxy refused the connection",
                Fix::Reach,
            ),
            (
                Failure::Proxy(ProxyFailure::AuthRequired),
                "asked for credentials",
                Fix::Reach,
            ),
        ];
        for (failure, says, fix) in cases {
            let remedy = failure.row(None).remedy;
            match remedy {
                Remedy::Fix(actual) => assert_eq!(actual, fix, "{failure:?}"),
                Remedy::Trust
                | Remedy::Cap
                | Remedy::Utf8
                | Remedy::Proxy
                | Remedy::ProxyCredentials => assert_eq!(fix, Fix::Reach, "{failure:?}"),
                Remedy::Serializer | Remedy::Option | Remedy::Async => {
                    assert_eq!(fix, Fix::Request, "{failure:?}")
                }
            }
            let refusal = refusal_for_failure(&site(), &failure);
            assert_eq!(refusal.cause(), Cause::EngineUnreachable, "{failure:?}");
            assert_eq!(refusal.variable(), Some(ADDRESS_VAR), "{failure:?}");
            assert_eq!(refusal.status(), None, "{failure:?}");
            let reason = refusal.reason();
            assert!(
                reason.to_lowercase().contains(says),
                "{failure:?}: {reason:?}"
            );
            assert!(reason.contains("scope \"acme\""), "{reason:?}");
            assert!(
                reason.contains("https://engine.example/v1/predict"),
                "{reason:?}"
            );
            let remedy = refusal.remedy();
            assert!(remedy.contains(ADDRESS_VAR), "{failure:?}: {remedy:?}");
            match fix {
                Fix::Health => assert!(remedy.starts_with("try again later"), "{remedy}"),
                Fix::Request => assert!(!remedy.contains("reachable"), "{remedy}"),
                Fix::Reach | Fix::Path => {}
            }
        }
    }

    #[test]
    fn only_a_failure_before_the_request_left_is_not_sent() {
        assert_eq!(Failure::ConnectionRefused.outcome(), Outcome::NotSent);
        assert_eq!(Failure::HostNotFound.outcome(), Outcome::NotSent);
        assert_eq!(Failure::Connect.outcome(), Outcome::NotSent);
        assert_eq!(Failure::ConnectionReset.outcome(), Outcome::Lost);
        assert_eq!(Failure::Other.outcome(), Outcome::Lost);
        assert_eq!(Failure::Tls("x").outcome(), Outcome::Final);
        assert_eq!(Failure::Deadline { ms: 1 }.outcome(), Outcome::Final);
    }
}
