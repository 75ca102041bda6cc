//! What a failed request becomes, and how a failure is read from reqwest's
//! errors.
//!
//! A failure is always `engine-unreachable`: the engine did not answer the
//! question. Its reason names what failed in the crate's own words, never in
//! reqwest's: a reqwest error's `Display` carries the full URL, query and
//! all. Its remedy points where the failure does: a refused connection, an
//! unknown host or a failed handshake at the address; a reset or the
//! deadline at the engine's health; a body that could not be serialized or a
//! header that cannot be sent at the request. Both are written by `render`
//! from the [`Failure`] and how far the answer got.

use std::io;

use super::kind::Kind;
pub(crate) use super::kind::{Answered, Failure, ProxyFailure};
use super::render;
use crate::conceal::Shown;
use crate::config::site::Site;
use crate::refusal::Refusal;

impl Failure {
    /// A few words for the list of attempts in a reason.
    pub(crate) fn short(&self) -> Shown {
        render::short(&Kind::Failed {
            failure: self.clone(),
            answered: None,
        })
    }
}

/// What a failed request becomes: always `engine-unreachable`, with a reason
/// naming what failed.
pub(crate) fn refusal_for_failure(site: &Site, failure: &Failure) -> Refusal {
    render::sent(
        site,
        Kind::Failed {
            failure: failure.clone(),
            answered: None,
        },
    )
}

/// What a failure after a `2xx` head becomes: `engine-unreachable` still,
/// keeping the status and saying how much of the answer arrived.
pub(crate) fn refusal_after_head(site: &Site, failure: &Failure, answered: Answered) -> Refusal {
    render::sent(
        site,
        Kind::Failed {
            failure: failure.clone(),
            answered: Some(answered),
        },
    )
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

/// The refusal of a body that could not be serialized, for a transport
/// that has no address to name: the default `Transport::execute`.
pub(crate) fn unserializable_unaddressed(category: &'static str) -> Refusal {
    render::unaddressed_unserializable(category)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conceal::Concealer;
    use crate::refusal::Cause;
    use crate::refusal::kind::Fix;
    use crate::refusal::site::test_site;
    use crate::retry::Outcome;

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
                Failure::Unsendable(Shown::from("the header \"te\" is one")),
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
                Fix::Request => {
                    assert!(!remedy.contains("reachable"), "{remedy}");
                    assert!(remedy.contains("fix"), "{remedy}");
                }
                _ => assert!(
                    ["reachable", "proxy", "cap", "UTF-8"]
                        .iter()
                        .any(|word| remedy.contains(word)),
                    "{failure:?}: {remedy}"
                ),
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
