//! What a status becomes: the engine's answer read for the strongest
//! evidence of its cause, into the value a refusal is written from.
//!
//! The statuses are read the way HTTP defines them: `401`/`403` reject the
//! token (set a variable), `402` says the account is empty (fund it), `429`
//! says a limit is spent (wait). Anything else that is not `2xx`, including
//! a `4xx` outside those three, is `engine-unreachable`: "malformed request"
//! has no remedy an operator can apply, and the reason names the status so a
//! reader can tell which side of the wire is wrong. Within it, the remedy
//! points where the status does: the request, the address's path, the
//! engine's health, or the address's reachability.
//!
//! But real engines state their cause in the body and headers, not always
//! in the status, so the status comes last. From `400` up, the cause is
//! read from the strongest evidence, in this order: the engine's code, then
//! its words (both in `evidence::dialect`'s tables), then the protocol on
//! the wire (an x402 payment asked per request, a `401`/`403` with a
//! `Retry-After` that is a ban, a gateway relaying its upstream's
//! rejection), then the status. Evidence that only agrees with the status
//! is not named; evidence that changes the cause or the remedy is, so the
//! reason says what decided.
//!
//! Every string that came from outside is read from what the door
//! concealed, and scrubbed before it is kept.

use std::time::SystemTime;

use reqwest::header::{HeaderMap, LOCATION, RETRY_AFTER};

use super::evidence::dialect::{Names, code_names, phrase_in};
use super::evidence::protocol::{self, Relay};
use super::evidence::words::{codes, engine_code, engine_words, last_segment, speaks_x402};
use super::evidence::{challenge, request_id, retry};
use super::kind::{By, Challenge, Fix, Kind, Said, Wait, fix_for_status};
use crate::conceal::{Concealed, Concealer, Shown, shown};
use crate::config::site::Site;
use crate::refusal::{Cause, Refusal};

/// How much of an echoed header a reason quotes.
const HEADER_LIMIT: usize = 64;
/// How much of an `error_description` a reason quotes.
const DESCRIPTION_LIMIT: usize = 200;

/// What the engine's answer becomes: `None` for a `2xx` (the body is the
/// answer), otherwise the refusal of the wire table.
///
/// `body` is the head of the body as read (the transport reads at most
/// 64 KiB of an error body); it is concealed before anything reads it.
/// The transport conceals the head as it reads it and calls
/// [`refusal_for_concealed_status`]; this is the same from raw bytes.
#[cfg(test)]
pub(crate) fn refusal_for_status(
    site: &Site,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now: SystemTime,
) -> Option<Refusal> {
    let head = site
        .concealer()
        .admit(String::from_utf8_lossy(body).into_owned());
    refusal_for_concealed_status(site, status, headers, &head, now)
}

/// What the engine's answer becomes, from the head of its body already
/// concealed (as the transport reads it, once): `None` for a `2xx`,
/// otherwise the refusal its evidence names. `now` is what an HTTP-date in
/// `retry-after` is measured from when the response has no `date` header.
pub(crate) fn refusal_for_concealed_status(
    site: &Site,
    status: u16,
    headers: &HeaderMap,
    head: &Concealed,
    now: SystemTime,
) -> Option<Refusal> {
    let said = said(site.concealer(), status, headers, head.as_str(), now)?;
    Some(super::render::sent(site, Kind::Status(Box::new(said))))
}

/// What the engine's answer said, read: `None` for a `2xx`.
fn said(
    concealer: &Concealer,
    status: u16,
    headers: &HeaderMap,
    head: &str,
    now: SystemTime,
) -> Option<Said> {
    if (200..300).contains(&status) {
        return None;
    }
    let words = engine_words(head, concealer);
    let shown = |value: &str, limit| concealer.show_engine(value.as_bytes(), limit);
    let wait = match (retry::retry_hint(headers, now), headers.get(RETRY_AFTER)) {
        (Some(hint), _) => Some(Wait {
            delay: Some(hint.delay),
            header: hint.header,
            value: shown(hint.value, HEADER_LIMIT),
        }),
        // A `retry-after` that gave no delay is still quoted, as the
        // engine's words.
        (None, Some(value)) => Some(Wait {
            delay: None,
            header: "retry-after",
            value: concealer.show_engine(value.as_bytes(), HEADER_LIMIT),
        }),
        (None, None) => None,
    };
    let evidence = Evidence {
        codes: amzn_error_type(headers)
            .into_iter()
            .chain(codes(head))
            .collect(),
        words: words.as_deref(),
        x402: protocol::x402(headers, speaks_x402(head)),
        // A ban names its end in `Retry-After` (or its milliseconds), not
        // in rate-limit fields an engine may send on every answer.
        banned: wait.as_ref().is_some_and(|wait| {
            wait.delay.is_some() && matches!(wait.header, "retry-after" | "retry-after-ms")
        }),
        relay: protocol::relayed(headers, words.as_deref(), concealer),
    };
    let (cause, by) = decide(status, evidence, concealer);
    let challenge = matches!(status, 401 | 403)
        .then(|| challenge::bearer_challenge(headers))
        .flatten()
        .map(|found| Challenge {
            error: found.error.map(|error| shown(&error, HEADER_LIMIT)),
            description: found
                .description
                .map(|description| shown(&description, DESCRIPTION_LIMIT))
                .filter(|description| !description.is_empty()),
            scope: found.scope.map(|scope| shown(&scope, HEADER_LIMIT)),
        });
    let location = (300..400).contains(&status).then(|| {
        headers
            .get(LOCATION)
            .map(|location| redirect_target(location.as_bytes(), concealer))
    });
    Some(Said {
        status,
        cause,
        by,
        words,
        wait,
        request_id: request_id::shown_request_id(headers, concealer),
        challenge,
        location: location.flatten(),
    })
}

/// What an answer holds that can decide its cause, read.
struct Evidence<'a> {
    /// The engine's codes, most specific first, as sent.
    codes: Vec<String>,
    /// The engine's words, concealed.
    words: Option<&'a str>,
    /// x402: a `PAYMENT-REQUIRED` header (`true`) or an x402 body.
    x402: Option<bool>,
    /// A retry hint that gives a delay.
    banned: bool,
    /// A gateway's relay of its upstream's answer.
    relay: Option<Relay>,
}

/// The cause of an answer, and the evidence that decided it: the engine's
/// code, then its words, then the protocol on the wire, then the status.
fn decide(status: u16, evidence: Evidence<'_>, concealer: &Concealer) -> (Cause, By) {
    let by_status = status_cause(status);
    // A proxy's 407 is not the engine's answer, and below 400 nothing the
    // body says is a refusal's cause.
    let said = (status >= 400 && status != 407)
        .then(|| code_or_words(&evidence.codes, evidence.words, concealer))
        .flatten();
    let named = match &said {
        Some(By::Code { names, .. } | By::Words { names, .. }) => Some(*names),
        _ => None,
    };
    let (mut cause, mut by) = match (said, named) {
        (Some(by), Some(names)) => {
            let agrees = names.cause() == by_status
                && (by_status != Cause::EngineUnreachable
                    || (names == Names::Trouble) == (fix_for_status(status) == Fix::Health));
            if agrees {
                (by_status, By::Status)
            } else {
                (names.cause(), by)
            }
        }
        _ => (by_status, By::Status),
    };
    // The protocol speaks where the engine's code and words did not name
    // another cause: x402 where they name none or the credit, a ban where
    // they name none.
    if status == 402
        && cause == Cause::EngineOutOfCredit
        && let Some(header) = evidence.x402
    {
        by = By::X402 { header };
    } else if matches!(status, 401 | 403) && named.is_none() && evidence.banned {
        (cause, by) = (Cause::EngineOverQuota, By::Ban);
    }
    if cause == Cause::NoEngine
        && let Some(relay) = evidence.relay
    {
        (cause, by) = (Cause::EngineUnreachable, By::Relayed(relay));
    }
    (cause, by)
}

/// The first of the engine's codes (most specific first) that names a
/// cause (the code shown as a reason quotes it), else the first phrase of
/// its words that does.
pub(crate) fn code_or_words(
    codes: &[String],
    words: Option<&str>,
    concealer: &Concealer,
) -> Option<By> {
    codes
        .iter()
        .find_map(|code| {
            code_names(last_segment(code)).map(|names| By::Code {
                code: engine_code(code, concealer),
                names,
            })
        })
        .or_else(|| {
            words.and_then(phrase_in).map(|found| By::Words {
                phrase: found.phrase,
                names: found.names,
            })
        })
}

/// The cause the status alone names.
fn status_cause(status: u16) -> Cause {
    match status {
        401 | 403 => Cause::NoEngine,
        402 => Cause::EngineOutOfCredit,
        429 => Cause::EngineOverQuota,
        _ => Cause::EngineUnreachable,
    }
}

/// Bedrock's `x-amzn-ErrorType` (`ThrottlingException:http://…`): the
/// exception's name, before its namespace.
fn amzn_error_type(headers: &HeaderMap) -> Option<String> {
    let value = std::str::from_utf8(headers.get("x-amzn-errortype")?.as_bytes()).ok()?;
    let name = value.split(':').next()?.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// A `location` as a reason shows it: the host (and port) of an absolute
/// URL, or "a path on the same host". Concealed before it is parsed: a URL
/// parser lower-cases and percent-decodes a host, which would turn a token
/// in it into text the concealer no longer knows.
fn redirect_target(location: &[u8], concealer: &Concealer) -> Shown {
    let text = concealer.admit(String::from_utf8_lossy(location).into_owned());
    let parsed = url::Url::parse(text.as_str().trim());
    if parsed.is_err() && text.as_str().contains(crate::conceal::REDACTED) {
        return shown!(
            "an address that held a secret ({})",
            crate::conceal::REDACTED
        );
    }
    match parsed {
        Ok(url) => match url.host_str() {
            Some(host) => {
                let host = match url.port() {
                    Some(port) => format!("{host}:{port}"),
                    None => host.to_owned(),
                };
                concealer.show_engine(host.as_bytes(), HEADER_LIMIT)
            }
            None => Shown::from("an address with no host"),
        },
        Err(_) => Shown::from("a path on the same host"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::site::test_site;

    const TOKEN: &str = "mw-unit-Q7vX2kP9zR4tL8wN";

    fn site() -> Site {
        test_site(Concealer::new([TOKEN]))
    }

    fn refusal(status: u16, body: &str) -> Option<Refusal> {
        refusal_for_status(
            &site(),
            status,
            &HeaderMap::new(),
            body.as_bytes(),
            SystemTime::now(),
        )
    }

    #[test]
    fn every_status_becomes_what_the_table_says() {
        for status in 100..=599u16 {
            let found = refusal(status, "the engine's words");
            let Some(found) = found else {
                assert!((200..300).contains(&status), "{status} gave no refusal");
                continue;
            };
            let expected = match status {
                401 | 403 => Cause::NoEngine,
                402 => Cause::EngineOutOfCredit,
                429 => Cause::EngineOverQuota,
                _ => Cause::EngineUnreachable,
            };
            assert_eq!(found.cause(), expected, "{status}");
            assert_eq!(found.status(), Some(status));
            let variable = match status {
                401 | 403 => "CHANT_BEHAVIOUR_TOKEN",
                _ => "CHANT_BEHAVIOUR_ENGINE",
            };
            assert_eq!(found.variable(), Some(variable), "{status}");
            assert!(
                found.reason().contains(&format!("HTTP {status}")),
                "{status}"
            );
            assert!(found.reason().contains("scope \"acme\""), "{status}");
            assert!(found.remedy().contains("CHANT_BEHAVIOUR_"), "{status}");
            let reason = found.reason();
            assert!(
                reason.contains("https://engine.example/v1/predict"),
                "{reason}"
            );
            assert!(reason.contains("CHANT_BEHAVIOUR_ENGINE"), "{reason}");
            assert!(reason.contains("the engine's words"), "{reason}");
            assert!(reason.chars().count() < 1000);
        }
    }

    #[test]
    fn each_unreachable_status_points_its_remedy_where_the_contract_says() {
        for (statuses, fix, phrase) in [
            (&[400, 413, 415, 422][..], Fix::Request, "fix the request"),
            (
                &[404, 405, 410][..],
                Fix::Path,
                "an endpoint the engine serves",
            ),
            (
                &[408, 500, 502, 503, 504][..],
                Fix::Health,
                "try again later",
            ),
            (
                &[301, 302, 307, 308][..],
                Fix::Redirect,
                "without a redirect",
            ),
        ] {
            for &status in statuses {
                assert_eq!(fix_for_status(status), fix, "{status}");
                let remedy = refusal(status, "").expect("a refusal").remedy().to_owned();
                assert!(remedy.contains(phrase), "{status}: {remedy}");
                if fix != Fix::Reach {
                    assert!(!remedy.contains("reachable"), "{status}: {remedy}");
                }
            }
        }
    }

    #[test]
    fn a_token_in_a_redirects_host_is_concealed_before_the_host_is_read() {
        let mut headers = HeaderMap::new();
        let location = format!("https://{TOKEN}.example/next");
        headers.insert(LOCATION, location.parse().expect("a header value"));
        let found =
            refusal_for_status(&site(), 302, &headers, b"", SystemTime::now()).expect("a refusal");
        let shown = found.report().to_json();
        assert!(!shown.contains(TOKEN), "{shown}");
        assert!(!shown.contains(&TOKEN.to_lowercase()), "{shown}");
        assert!(
            found
                .reason()
                .contains("a redirect to an address that held a secret ([redacted])")
        );
    }

    #[test]
    fn a_credit_code_names_the_cause_on_any_status_from_400_and_not_below() {
        let body = r#"{"error": {"type": "insufficient_quota"}}"#;
        let found = refusal(429, body).expect("a refusal");
        assert_eq!(found.cause(), Cause::EngineOutOfCredit);
        assert!(
            found
                .reason()
                .contains("HTTP 429 with the code \"insufficient_quota\"")
        );
        assert_eq!(found.retry_after(), None, "no wait refills an account");
        for status in [400, 403, 503] {
            let found = refusal(status, body).expect("a refusal");
            assert_eq!(found.cause(), Cause::EngineOutOfCredit, "{status}");
            assert!(
                found.reason().contains(&format!(
                    "HTTP {status} with the code \"insufficient_quota\", which names the account's credit"
                )),
                "{}",
                found.reason()
            );
        }
        let redirect = refusal(302, body).expect("a refusal");
        assert_eq!(redirect.cause(), Cause::EngineUnreachable);
    }

    /// What `decide` makes of `status` with these codes and words, and no
    /// protocol on the wire.
    fn decided(status: u16, codes: &[&str], words: Option<&str>) -> (Cause, By) {
        decide(
            status,
            Evidence {
                codes: codes.iter().map(|code| (*code).to_owned()).collect(),
                words,
                x402: None,
                banned: false,
                relay: None,
            },
            &Concealer::new([]),
        )
    }

    #[test]
    fn the_code_comes_before_the_words_and_both_before_the_status() {
        let (cause, by) = decided(400, &["API_KEY_INVALID", "INVALID_ARGUMENT"], None);
        assert_eq!(cause, Cause::NoEngine);
        assert!(
            matches!(
                by,
                By::Code {
                    names: Names::Token,
                    ..
                }
            ),
            "{by:?}"
        );
        // Google's 429 says "check your plan and billing details" in its
        // words, but its status code names a window.
        let (cause, _) = decided(
            429,
            &["RESOURCE_EXHAUSTED"],
            Some("You exceeded your current quota, please check your plan and billing details."),
        );
        assert_eq!(cause, Cause::EngineOverQuota);
        let (cause, by) = decided(
            400,
            &["invalid_request_error", "error"],
            Some("Your credit balance is too low to access the Anthropic API."),
        );
        assert_eq!(cause, Cause::EngineOutOfCredit);
        assert_eq!(
            by,
            By::Words {
                phrase: "credit balance is too low",
                names: Names::Credit
            }
        );
        let (cause, by) = decided(400, &["invalid_request_error"], Some("'model' is required"));
        assert_eq!((cause, by), (Cause::EngineUnreachable, By::Status));
    }

    #[test]
    fn evidence_that_agrees_with_the_status_is_not_named() {
        for (status, code) in [
            (401, "invalid_api_key"),
            (429, "rate_limit_error"),
            (402, "insufficient_quota"),
            (503, "overloaded_error"),
            (500, "api_error"),
        ] {
            assert_eq!(
                decided(status, &[code], None).1,
                By::Status,
                "{status} {code}"
            );
        }
        // The engine's trouble on a 400 moves the remedy from the request
        // to the engine's health: that is named.
        assert!(matches!(
            decided(400, &["server_error"], None).1,
            By::Code { .. }
        ));
    }

    #[test]
    fn the_protocol_decides_only_where_code_and_words_said_nothing() {
        let with = |status, codes: &[&str], x402, banned, relay| {
            decide(
                status,
                Evidence {
                    codes: codes.iter().map(|code| (*code).to_owned()).collect(),
                    words: None,
                    x402,
                    banned,
                    relay,
                },
                &Concealer::new([]),
            )
        };
        assert_eq!(
            with(402, &[], Some(true), false, None),
            (Cause::EngineOutOfCredit, By::X402 { header: true })
        );
        assert_eq!(
            with(403, &[], None, true, None),
            (Cause::EngineOverQuota, By::Ban)
        );
        assert_eq!(
            with(403, &["invalid_api_key"], None, true, None).0,
            Cause::NoEngine,
            "a code names the token before the ban is read"
        );
        let relay = Relay::Headers;
        assert_eq!(
            with(401, &["invalid_api_key"], None, false, Some(relay.clone())),
            (Cause::EngineUnreachable, By::Relayed(relay.clone()))
        );
        assert_eq!(
            with(429, &[], None, false, Some(relay)).0,
            Cause::EngineOverQuota,
            "only a rejection is the gateway's own"
        );
    }

    #[test]
    fn a_token_in_a_credit_code_is_concealed_and_never_a_code() {
        let body = format!(r#"{{"error": {{"code": "insufficient_quota_{TOKEN}"}}}}"#);
        let found = refusal(429, &body).expect("a refusal");
        assert_eq!(found.cause(), Cause::EngineOutOfCredit);
        assert!(!found.report().to_json().contains(TOKEN));
        assert!(
            found.reason().contains("insufficient_quota_[redacted]"),
            "{}",
            found.reason()
        );
    }
}
