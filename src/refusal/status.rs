//! What a status becomes: the wire table (the README's "What the wire
//! becomes") as one pure function.
//!
//! The statuses are read the way HTTP defines them: `401`/`403` reject the
//! token (set a variable), `402` says the account is empty (fund it), `429`
//! says a limit is spent (wait). Anything else that is not `2xx`, including
//! a `4xx` outside those three, is `engine-unreachable`: "malformed request"
//! has no remedy an operator can apply, and the reason names the status so a
//! reader can tell which side of the wire is wrong. Within it, the remedy
//! points where the status does ([`Fix`]): the request, the address's path,
//! the engine's health, or the address's reachability. A wrong remedy sends
//! an operator to debug a network that is fine.
//!
//! The engine's own words can name the remedy better than its status: a
//! `429` whose error code names the account's credit (OpenAI's
//! `insufficient_quota`) is out of credit, since waiting would not help.
//!
//! Every string that came from outside is concealed before anything reads
//! it, scrubbed before it is placed, and the finished refusal is sealed
//! (concealed once more, then bounded).

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, LOCATION, RETRY_AFTER};

use super::evidence::challenge::{self, BearerChallenge};
use super::evidence::words::{credit_code, engine_value, engine_words};
use super::evidence::{request_id, retry};
use super::site::Site;
use crate::conceal::Concealer;
use crate::refusal::{Cause, Refusal};
use crate::text::seconds_phrase;

/// How much of an echoed header a reason quotes.
const HEADER_LIMIT: usize = 64;
/// How much of an `error_description` a reason quotes.
const DESCRIPTION_LIMIT: usize = 200;
/// How much of a path a remedy quotes.
const PATH_LIMIT: usize = 100;

/// Where an `engine-unreachable` remedy points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fix {
    /// The request the predictor sends: the engine answered, and refused it.
    Request,
    /// The address's path: the engine does not serve it.
    Path,
    /// The engine's health: it failed, or did not finish in time.
    Health,
    /// The address and whether it can be reached from here.
    Reach,
}

/// Where the remedy for a status outside `2xx`, `401`, `402`, `403` and
/// `429` points. The wire table names `400`, `413`, `415`, `422` (the
/// request), `404`, `405`, `410` (the path), `408`, `500`, `502`, `503`,
/// `504` (health) and `3xx` (reachability); the rest of each class follows
/// its class: a `4xx` is the request's, a `5xx` the engine's health, except
/// `501` (the method is not served at that path) and `421` (the request
/// reached a server that is not the engine).
pub(crate) fn fix_for_status(status: u16) -> Fix {
    match status {
        404 | 405 | 410 | 501 => Fix::Path,
        408 | 425 | 500..=599 => Fix::Health,
        421 => Fix::Reach,
        400..=499 => Fix::Request,
        _ => Fix::Reach,
    }
}

/// The remedy of an `engine-unreachable` refusal. `what` says what the
/// engine did (`answered HTTP 503`, `did not answer within 250 ms`).
pub(crate) fn unreachable_remedy(
    site: &Site,
    fix: Fix,
    what: &str,
    delay: Option<Duration>,
) -> String {
    let host = site.host();
    let address = site.address().origin();
    match fix {
        Fix::Request => format!(
            "fix the request the predictor sends so that it matches the API of the engine at {host}: the engine {what}, so the address ({}) reaches it and it is the request that was refused",
            address.named()
        ),
        Fix::Path => {
            let path = engine_value(
                site.address().path().as_bytes(),
                site.concealer(),
                PATH_LIMIT,
            );
            format!(
                "{}: the engine at {host} {what} for the path {path}",
                address.set_phrase("the address of an endpoint the engine serves")
            )
        }
        Fix::Health => {
            let wait = match delay {
                Some(delay) => format!(" (the engine asks to wait {})", seconds_phrase(delay)),
                None => String::new(),
            };
            format!(
                "try again later{wait}: the engine at {host} {what}; if it keeps failing, check the engine's health with whoever runs it, or {}",
                address.set_phrase("another engine's address")
            )
        }
        Fix::Reach => format!(
            "check that the engine at {} is up and reachable from here, or {}",
            site.shown_address(),
            address.set_phrase("the engine's address")
        ),
    }
}

/// The remedy of an empty account: fund it, or use a token whose account
/// has credit.
pub(crate) fn out_of_credit_remedy(site: &Site) -> String {
    let token = site.token();
    format!(
        "fund the account billed through {} (add credit to it), or {}",
        token.holding("the token"),
        token.set_phrase("a token whose account has credit")
    )
}

/// The remedy of a rejected token: one the engine accepts (`with_scope`
/// says which scope it needs, when the engine said).
pub(crate) fn rejected_token_remedy(site: &Site, with_scope: &str) -> String {
    site.token().set_phrase(&format!(
        "a token the engine at {} accepts{with_scope}",
        site.host()
    ))
}

/// How long a spent window asks to be waited out, as its remedy says it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum Window {
    /// The engine gave no hint.
    #[default]
    Unsaid,
    /// The engine asked for this long.
    Asked(Duration),
    /// A hold has this long left, which a retry policy could wait out.
    Left(Duration),
}

/// The remedy of a spent limit: wait for the window (as long as the
/// engine asked, or as is left of it), or use a token with a limit of its
/// own.
pub(crate) fn over_quota_remedy(site: &Site, window: Window) -> String {
    let (how_long, or_wait) = match window {
        Window::Unsaid => (String::new(), ""),
        Window::Asked(delay) => (format!(" (it asks for {})", seconds_phrase(delay)), ""),
        Window::Left(left) => (
            format!(" ({} left)", seconds_phrase(left)),
            "or give the transport a retry policy whose max_wait covers it; ",
        ),
    };
    format!(
        "wait for the engine's limit window to pass{how_long} before sending again, {or_wait}or {}",
        site.token().set_phrase("a token with a limit of its own")
    )
}

/// What the engine said beyond its refusal's cause, for the remedy: each
/// cause reads the part that is its own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Particulars<'a> {
    /// A rejected token: the scope a token needs, when the engine said
    /// (` (one with the scope "…")`), else empty.
    pub(crate) with_scope: &'a str,
    /// A spent limit: how long its window asks to be waited out.
    pub(crate) window: Window,
    /// The engine unreachable: where the remedy points, what the engine
    /// did, and how long it asked to wait.
    pub(crate) fix: Fix,
    pub(crate) what: &'a str,
    pub(crate) delay: Option<Duration>,
}

impl Default for Particulars<'_> {
    fn default() -> Self {
        Particulars {
            with_scope: "",
            window: Window::Unsaid,
            fix: Fix::Health,
            what: "",
            delay: None,
        }
    }
}

/// The remedy of a refusal the engine's answer caused, and the variable it
/// names: the one place a cause becomes what to do. A rejected token names
/// the token's variable; every other cause the address's, where the engine
/// that answered was found.
pub(crate) fn remedy_for(
    site: &Site,
    cause: Cause,
    particulars: Particulars<'_>,
) -> (String, Option<String>) {
    match cause {
        Cause::EngineOutOfCredit => (out_of_credit_remedy(site), site.address_variable()),
        Cause::NoEngine => (
            rejected_token_remedy(site, particulars.with_scope),
            site.token_variable(),
        ),
        Cause::EngineOverQuota => (
            over_quota_remedy(site, particulars.window),
            site.address_variable(),
        ),
        Cause::EngineUnreachable => (
            unreachable_remedy(site, particulars.fix, particulars.what, particulars.delay),
            site.address_variable(),
        ),
    }
}

/// The remedy of a refusal the configured proxy caused: check the proxy
/// (or, when it asked for credentials, give it some), named as the caller
/// gave it, redacted.
pub(crate) fn proxy_remedy(site: &Site, credentials: bool) -> String {
    let proxy = site.proxy().unwrap_or("the transport was given");
    let host = site.host();
    let address = site.address().origin().named();
    if credentials {
        format!(
            "give the proxy {proxy} the credentials it asks for, in the URL given to HttpTransportBuilder::proxy (http://user:password@host:port), or use a proxy that lets this host through to the engine at {host} (the engine's address: {address})"
        )
    } else {
        format!(
            "check that the proxy {proxy} (given to HttpTransportBuilder::proxy) is up, reachable from here and lets this host through to the engine at {host}, or drop the proxy if the engine is reachable without it (the engine's address: {address})"
        )
    }
}

/// What the engine's answer becomes: `None` for a `2xx` (the body is the
/// answer), otherwise the refusal of the wire table.
///
/// `body` is the head of the body as read (the transport reads at most
/// 64 KiB of an error body); it is concealed before anything reads it, and
/// the engine's words are taken from what is left. `now` is what an
/// HTTP-date in `retry-after` is measured from when the response has no
/// `date` header. The transport conceals the head as it reads it and calls
/// [`refusal_for_concealed_status`]; this is the same from raw bytes.
#[cfg(test)]
pub(crate) fn refusal_for_status(
    site: &Site,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now: SystemTime,
) -> Option<Refusal> {
    if (200..300).contains(&status) {
        return None;
    }
    // Concealed as it enters, and kept borrowed when nothing was found: a
    // 64 KiB head is not copied for every refusal.
    let lossy = String::from_utf8_lossy(body);
    let head = site.concealer().conceal(&lossy);
    refusal_for_concealed_status(site, status, headers, &head, now)
}

/// What the engine's answer becomes, from the head of its body already
/// concealed (as the transport reads it, once): `None` for a `2xx`,
/// otherwise the refusal of the wire table, with the engine's words taken
/// from the head. `now` is what an HTTP-date in `retry-after` is measured
/// from when the response has no `date` header.
pub(crate) fn refusal_for_concealed_status(
    site: &Site,
    status: u16,
    headers: &HeaderMap,
    head: &str,
    now: SystemTime,
) -> Option<Refusal> {
    if (200..300).contains(&status) {
        return None;
    }
    let concealer = site.concealer();
    let said = match engine_words(head, concealer) {
        Some(words) => format!("; the engine said: \"{words}\""),
        None => String::new(),
    };
    let request_id = request_id::shown_request_id(headers, concealer);
    let request = match &request_id {
        Some(id) => format!("; request id {id}"),
        None => String::new(),
    };
    let hint = retry::retry_hint(headers, now);
    let delay = hint.as_ref().map(|hint| hint.delay);
    // The header whose value was used, quoted as sent; a `retry-after` that
    // gave no delay is still quoted, as the engine's words.
    let shown = |value: &str| engine_value(value.as_bytes(), concealer, HEADER_LIMIT);
    let retry = match (&hint, headers.get(RETRY_AFTER)) {
        (Some(hint), _) if hint.header == "retry-after" => {
            format!("; retry after {}", shown(hint.value))
        }
        (Some(hint), _) => format!(
            "; retry after {} ({}: {})",
            seconds_phrase(hint.delay),
            hint.header,
            shown(hint.value)
        ),
        (None, Some(value)) => format!(
            "; retry after {}",
            engine_value(value.as_bytes(), concealer, HEADER_LIMIT)
        ),
        (None, None) => String::new(),
    };
    let subject = site.subject();
    let token = site.token();
    let holder = token.holding("the token");
    let credit = match status {
        402 => Some(None),
        429 => credit_code(head, concealer).map(Some),
        _ => None,
    };
    let mut delay = delay;
    let refusal = match (status, credit) {
        (_, Some(code)) => {
            // Waiting would not help an empty account.
            delay = None;
            let answered = match code {
                Some(code) => format!(
                    "answered HTTP {status} with the code \"{code}\", which names the account's credit rather than a limit window"
                ),
                None => format!("answered HTTP {status}"),
            };
            let (remedy, source) =
                remedy_for(site, Cause::EngineOutOfCredit, Particulars::default());
            Refusal::new(
                Cause::EngineOutOfCredit,
                format!(
                    "{subject} {answered}: the account billed through {holder} is out of credit{request}{said}"
                ),
                remedy,
                source,
            )
        }
        (401 | 403, None) => {
            let challenge = challenge::bearer_challenge(headers);
            let diagnosis = challenge
                .as_ref()
                .map(|challenge| diagnose(challenge, concealer))
                .unwrap_or_default();
            let with_scope = match challenge.as_ref().and_then(|c| c.scope.as_deref()) {
                Some(scope) => format!(
                    " (one with the scope \"{}\")",
                    engine_value(scope.as_bytes(), concealer, HEADER_LIMIT)
                ),
                None => String::new(),
            };
            let particulars = Particulars {
                with_scope: &with_scope,
                ..Particulars::default()
            };
            let (remedy, source) = remedy_for(site, Cause::NoEngine, particulars);
            Refusal::new(
                Cause::NoEngine,
                format!(
                    "{subject} answered HTTP {status}: the engine rejected {holder}{diagnosis}{request}{said}"
                ),
                remedy,
                source,
            )
        }
        (429, None) => {
            let particulars = Particulars {
                window: delay.map_or(Window::Unsaid, Window::Asked),
                ..Particulars::default()
            };
            let (remedy, source) = remedy_for(site, Cause::EngineOverQuota, particulars);
            Refusal::new(
                Cause::EngineOverQuota,
                format!(
                    "{subject} answered HTTP 429: the account billed through {holder} is over a quota or rate limit{retry}{request}{said}"
                ),
                remedy,
                source,
            )
        }
        (407, None) => {
            let who = match site.proxy() {
                Some(proxy) => format!("the proxy at {proxy}"),
                None => "a proxy between here and the engine".to_owned(),
            };
            Refusal::new(
                Cause::EngineUnreachable,
                format!(
                    "{subject} answered HTTP 407 instead of an answer: {who} asks for credentials before it passes the request on{request}{said}"
                ),
                proxy_remedy(site, true),
                site.address_variable(),
            )
        }
        (300..=399, None) => {
            let to = match headers.get(LOCATION) {
                Some(location) => {
                    format!(" to {}", redirect_target(location.as_bytes(), concealer))
                }
                None => String::new(),
            };
            Refusal::new(
                Cause::EngineUnreachable,
                format!(
                    "{subject} answered HTTP {status}, a redirect{to}, instead of an answer; redirects are not followed, so the token never reaches a host the engine names{request}{said}"
                ),
                site.address()
                    .origin()
                    .set_phrase("the address the engine answers at itself, without a redirect"),
                site.address_variable(),
            )
        }
        (_, None) => {
            let kind = match status {
                // Both ask to try again, and the remedy says so: neither is
                // a request the engine refused for what it holds.
                408 => "the engine timed out waiting for the request to arrive",
                425 => "the engine would not risk processing a request sent this early (too early)",
                404 | 405 | 410 => "the engine does not serve that path (or that method at it)",
                400..=499 => "the engine refused the request itself",
                500..=599 => "the engine failed while answering",
                _ => "that is not an answer",
            };
            let what = format!("answered HTTP {status}");
            let particulars = Particulars {
                fix: fix_for_status(status),
                what: &what,
                delay,
                ..Particulars::default()
            };
            let (remedy, source) = remedy_for(site, Cause::EngineUnreachable, particulars);
            Refusal::new(
                Cause::EngineUnreachable,
                format!(
                    "{subject} answered HTTP {status} instead of an answer: {kind}, so it did not answer the question{retry}{request}{said}"
                ),
                remedy,
                source,
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
fn diagnose(challenge: &BearerChallenge, concealer: &Concealer) -> String {
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

/// A `location` as a reason shows it: the host (and port) of an absolute
/// URL, or "a path on the same host". Concealed before it is parsed: a URL
/// parser lower-cases and percent-decodes a host, which would turn a token
/// in it into text the concealer no longer knows.
fn redirect_target(location: &[u8], concealer: &Concealer) -> String {
    let text = concealer
        .conceal(&String::from_utf8_lossy(location))
        .into_owned();
    let parsed = url::Url::parse(text.trim());
    if parsed.is_err() && text.contains(crate::conceal::REDACTED) {
        return format!(
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
                engine_value(host.as_bytes(), concealer, HEADER_LIMIT)
            }
            None => "an address with no host".to_owned(),
        },
        Err(_) => "a path on the same host".to_owned(),
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
            (&[301, 302, 307, 308][..], Fix::Reach, "without a redirect"),
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
    fn credit_codes_turn_a_429_into_out_of_credit_and_nothing_else() {
        let body = r#"{"error": {"type": "insufficient_quota"}}"#;
        let found = refusal(429, body).expect("a refusal");
        assert_eq!(found.cause(), Cause::EngineOutOfCredit);
        assert!(
            found
                .reason()
                .contains("HTTP 429 with the code \"insufficient_quota\"")
        );
        for status in [400, 403, 503] {
            let found = refusal(status, body).expect("a refusal");
            assert_ne!(found.cause(), Cause::EngineOutOfCredit, "{status}");
        }
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
