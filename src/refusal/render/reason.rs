//! What happened, in words: every reason, from the value.
//!
//! A reason about a send opens with the scope and the engine it was going
//! to (`scope "acme": engine at https://… (from CHANT_BEHAVIOUR_ENGINE)`),
//! then says what the engine did, or what kept the send from it, with the
//! evidence that decided the cause: the status, and the code, words or
//! protocol that named a better one. The crate's own words come first, so
//! no bound ever cuts them.

use super::origin::OriginWords;
use super::scope_phrase;
use crate::clock::http_date;
use crate::conceal::Concealer;
use crate::config::Unsent;
use crate::config::address::{Address, AddressError};
use crate::config::naming::Naming;
use crate::config::site::{Site, shown_address, shown_host};
use crate::refusal::Cause;
use crate::refusal::evidence::dialect::Names;
use crate::refusal::evidence::protocol::Relay;
use crate::refusal::kind::{Answered, Failure, ProxyFailure};
use crate::refusal::kind::{By, Kind, Said, StreamError, Timer};
use crate::text::seconds_phrase;

/// The reason of a refusal about a send to `site`, after its scope.
pub(super) fn at_site(site: &Site, kind: &Kind) -> String {
    let subject = subject(site);
    match kind {
        Kind::Held { hold, left } => {
            let window = match hold.ceiling {
                Some(ceiling) => format!(
                    "; that is longer than the longest hold this transport keeps, so the hold was cut to {}, of which {} is left",
                    seconds_phrase(ceiling),
                    seconds_phrase(*left)
                ),
                None => format!(", and {} of that window is left", seconds_phrase(*left)),
            };
            let asked = match &hold.fleet {
                None => "the engine asked".to_owned(),
                Some(shared) => format!(
                    "the engine asked another process that shares the account (as the shared hold on {shared} records it)"
                ),
            };
            // A hold an answer's fields started quotes the field, and is checked.
            let why = match &hold.field {
                Some(field) => format!("{} ({field}), which a send checks once a minute", hold.why),
                None => hold.why.clone(),
            };
            format!(
                "{subject}: the send was held, not sent: at {} {asked}, by {why}, to wait {} before sending again{window}; the account billed through {} is held until then",
                http_date(hold.asked_at),
                seconds_phrase(hold.asked),
                site.token().holding("the token")
            )
        }
        Kind::Spent { spent, left } => {
            let limit = match spent.limit {
                Some(limit) => format!(" (of a limit of {limit})"),
                None => String::new(),
            };
            let field = match &spent.field {
                Some(field) => format!(" ({field})"),
                None => String::new(),
            };
            let said = match &spent.fleet {
                None => format!(
                    "at {} the engine's answer{field} said {} {} were left{limit} until the window resets, and this transport has started {} since",
                    http_date(spent.said_at),
                    spent.remaining,
                    spent.what,
                    spent.started
                ),
                Some(shared) => format!(
                    "the processes that share the account have started every send the engine's answers{field} said was left of its {} window, as the shared budget on {shared} records it",
                    spent.what
                ),
            };
            format!(
                "{subject}: the send was held, not sent: {said}; none is left for {}, until the window resets; the account billed through {} is held until then",
                seconds_phrase(*left),
                site.token().holding("the token")
            )
        }
        Kind::Latched { original, at, left } => format!(
            "{subject}: the send was latched, not sent, for {} more: at {} the engine {}",
            seconds_phrase(*left),
            http_date(*at),
            engine_did(Some(site), original)
        ),
        Kind::TokenFile { path, problem } => format!(
            "{subject}: the token file {path} {}, and no token was read from it before; nothing was sent",
            problem.describe()
        ),
        // What a configuration refuses names its own subject.
        Kind::Unsent { unsent, naming } => {
            let (reason, _) = self::unsent(unsent, naming, site.scope(), site.concealer());
            let scope = scope_phrase(site.scope(), site.concealer());
            reason
                .strip_prefix(&format!("{scope}: "))
                .unwrap_or(&reason)
                .to_owned()
        }
        kind => format!("{subject} {}", engine_did(Some(site), kind)),
    }
}

/// The reason of a refusal in a stream a fake scripted.
pub(super) fn scripted(kind: &Kind) -> String {
    format!("the stream {}", engine_did(None, kind))
}

/// `engine at https://host/path (from VARIABLE)`: whom every reason about
/// a send names, after the scope.
fn subject(site: &Site) -> String {
    format!(
        "engine at {} ({})",
        site.shown_address(),
        site.address().origin().provenance()
    )
}

/// What the engine did (or what became of the send), after the subject:
/// `answered HTTP 429: …`, `did not answer: connection refused: …`.
fn engine_did(site: Option<&Site>, kind: &Kind) -> String {
    match kind {
        Kind::Status(said) => answered(site, said),
        Kind::Failed { failure, answered } => {
            let (lead, what) = failed(failure, answered.as_ref());
            let proxy = match (failure, site.and_then(Site::proxy)) {
                (Failure::Proxy(_), Some(proxy)) => format!(" (the proxy at {proxy})"),
                _ => String::new(),
            };
            format!("{lead} {what}{proxy}")
        }
        Kind::Timer { timer, answered } => timed_out(*timer, answered),
        Kind::InStream { answered, error } => in_stream(answered, error),
        Kind::Undone {
            answered,
            unfinished,
        } => undone(answered, *unfinished),
        Kind::Unjoined { answered, why } => format!(
            "answered HTTP {}, then streamed {} whose joined text could not be concealed: {why}",
            answered.status,
            answered.so_far()
        ),
        Kind::Latched { original, .. } => engine_did(site, original),
        Kind::Held { .. } | Kind::Spent { .. } | Kind::TokenFile { .. } | Kind::Unsent { .. } => {
            "was not asked".to_owned()
        }
    }
}

/// `answered HTTP 402: the account billed through … is out of credit`,
/// with the evidence that decided it, the wait asked, the request id and
/// the engine's words.
fn answered(site: Option<&Site>, said: &Said) -> String {
    let status = said.status;
    let holder = site.map_or_else(
        || "the token".to_owned(),
        |site| site.token().holding("the token"),
    );
    let request = match &said.request_id {
        Some(id) => format!("; request id {id}"),
        None => String::new(),
    };
    let words = match &said.words {
        Some(words) => format!("; the engine said: \"{words}\""),
        None => String::new(),
    };
    let retry = match &said.wait {
        Some(wait) if wait.header == "retry-after" || wait.delay.is_none() => {
            format!("; retry after {}", wait.value)
        }
        Some(wait) => format!(
            "; retry after {} ({}: {})",
            wait.delay.map(seconds_phrase).unwrap_or_default(),
            wait.header,
            wait.value
        ),
        None => String::new(),
    };
    let evidence = match &said.by {
        By::Code { code, names } => {
            format!(" with the code \"{code}\", which names {}", named(*names))
        }
        By::Words { phrase, names } => {
            format!("; the engine's words name {}: \"{phrase}\"", named(*names))
        }
        _ => String::new(),
    };
    // A phrase quoted last is followed by a new clause, not a colon.
    let then = match &said.by {
        By::Words { .. } => ";",
        _ => ":",
    };
    let after = format!("{request}{words}");
    match (&said.by, said.cause) {
        (By::X402 { header }, _) => {
            let marked = if *header {
                "with a PAYMENT-REQUIRED header"
            } else {
                "with an x402Version body"
            };
            format!(
                "answered HTTP {status} {marked}: the engine speaks x402 and asks for a payment with each request, which no bearer token makes, so the send is out of credit whatever the account billed through {holder} holds{after}"
            )
        }
        (By::Ban, _) => {
            let (header, value, delay) = match &said.wait {
                Some(wait) => (
                    wait.header,
                    wait.value.as_str(),
                    wait.delay.map(seconds_phrase).unwrap_or_default(),
                ),
                None => ("retry-after", "", String::new()),
            };
            format!(
                "answered HTTP {status} with {header}: {value}, a ban that ends rather than a rejected token: the engine holds back this address or the account billed through {holder} for {delay}{after}"
            )
        }
        (By::Relayed(relay), _) => {
            let marked = match relay {
                Relay::Headers => "its llm_provider- headers say so".to_owned(),
                Relay::Exception(name) => format!("its words name the upstream's {name}"),
            };
            format!(
                "answered HTTP {status} relayed by a gateway from its own upstream engine ({marked}): the upstream rejected the gateway's credentials, not {holder}, which the gateway accepted{after}"
            )
        }
        (_, Cause::EngineOutOfCredit) => {
            let evidence = match &said.by {
                By::Code { code, .. } => format!(
                    " with the code \"{code}\", which names the account's credit rather than a limit window"
                ),
                _ => evidence,
            };
            format!(
                "answered HTTP {status}{evidence}{then} the account billed through {holder} is out of credit{after}"
            )
        }
        (_, Cause::NoEngine) => format!(
            "answered HTTP {status}{evidence}{then} the engine rejected {holder}{}{after}",
            diagnosis(said)
        ),
        (_, Cause::EngineOverQuota) => format!(
            "answered HTTP {status}{evidence}{then} the account billed through {holder} is over a quota or rate limit{retry}{after}"
        ),
        (_, Cause::EngineUnreachable) => match status {
            407 => {
                let who = match site.and_then(Site::proxy) {
                    Some(proxy) => format!("the proxy at {proxy}"),
                    None => "a proxy between here and the engine".to_owned(),
                };
                format!(
                    "answered HTTP 407 instead of an answer: {who} asks for credentials before it passes the request on{after}"
                )
            }
            300..=399 => {
                let to = match &said.location {
                    Some(location) => format!(" to {location}"),
                    None => String::new(),
                };
                format!(
                    "answered HTTP {status}, a redirect{to}, instead of an answer; redirects are not followed, so the token never reaches a host the engine names{after}"
                )
            }
            _ if evidence.is_empty() => {
                let kind = match status {
                    // Both ask to try again, and the remedy says so:
                    // neither is a request the engine refused for what it
                    // holds.
                    408 => "the engine timed out waiting for the request to arrive",
                    425 => {
                        "the engine would not risk processing a request sent this early (too early)"
                    }
                    404 | 405 | 410 => "the engine does not serve that path (or that method at it)",
                    400..=499 => "the engine refused the request itself",
                    500..=599 => "the engine failed while answering",
                    _ => "that is not an answer",
                };
                format!(
                    "answered HTTP {status} instead of an answer: {kind}, so it did not answer the question{retry}{after}"
                )
            }
            _ => format!(
                "answered HTTP {status}{evidence}{then} waiting may clear it and another token cannot, and the engine did not answer the question{retry}{after}"
            ),
        },
    }
}

/// What a code or phrase names, as a reason says it.
fn named(names: Names) -> &'static str {
    match names {
        Names::Token => "the token",
        Names::Credit => "the account's credit",
        Names::Limit => "a rate or usage limit",
        Names::Trouble => "the engine's own trouble",
    }
}

/// What a `Bearer` challenge says about the rejected token, in words an
/// operator can tell apart: expired or revoked, missing a scope, malformed.
fn diagnosis(said: &Said) -> String {
    let Some(challenge) = &said.challenge else {
        return String::new();
    };
    let mut words = match challenge.error.as_deref() {
        Some("invalid_token") => {
            "; the engine says the token is invalid, expired or revoked (invalid_token)".to_owned()
        }
        Some("insufficient_scope") => match challenge.scope.as_deref() {
            Some(scope) => format!(
                "; the engine says the token lacks the scope \"{scope}\" (insufficient_scope)"
            ),
            None => {
                "; the engine says the token lacks a scope it needs (insufficient_scope)".to_owned()
            }
        },
        Some("invalid_request") => {
            "; the engine says the request's credentials are malformed (invalid_request)".to_owned()
        }
        Some(other) => format!("; the engine's challenge says error \"{other}\""),
        None => String::new(),
    };
    if let Some(description) = &challenge.description {
        words.push_str(&format!(": \"{description}\""));
    }
    words
}

/// How a failed request is told: how the engine fared (`did not answer:`,
/// `answered, but`, `answered HTTP 200, but`, `was not asked:`), and what
/// failed.
fn failed(failure: &Failure, answered: Option<&Answered>) -> (String, String) {
    const NO_ANSWER: &str = "did not answer:";
    const NOT_ASKED: &str = "was not asked:";
    const ANSWERED: &str = "answered, but";
    let so_far = answered.map(Answered::so_far);
    let (lead, what) = match failure {
        Failure::ConnectionRefused => (
            NO_ANSWER,
            "connection refused: nothing listens at that port".to_owned(),
        ),
        Failure::HostNotFound => (
            NO_ANSWER,
            "host not found: the name does not resolve".to_owned(),
        ),
        Failure::Connect => (NO_ANSWER, "the connection could not be made".to_owned()),
        Failure::Tls(why) => (NO_ANSWER, format!("TLS failed: {why}")),
        Failure::ConnectionReset => (
            NO_ANSWER,
            match so_far {
                Some(so_far) => format!(
                    "the connection was reset after {so_far} of the answer, before it was complete"
                ),
                None => "connection reset: it closed before the answer was complete".to_owned(),
            },
        ),
        Failure::Deadline { ms } => (
            NO_ANSWER,
            match so_far {
                Some(so_far) => format!("its body stopped after {so_far}: no answer within {ms} ms"),
                None => format!("no answer within {ms} ms"),
            },
        ),
        Failure::Other => (
            NO_ANSWER,
            match so_far {
                Some(so_far) => format!("the answer stopped after {so_far}, before it was complete"),
                None => "the request failed before an answer arrived".to_owned(),
            },
        ),
        Failure::AnswerTooLarge { cap, declared } => (
            ANSWERED,
            match declared {
                Some(declared) => format!(
                    "the answer declares {declared} bytes, over the cap of {cap} bytes, so it was not read"
                ),
                None => {
                    format!("the answer is larger than the cap of {cap} bytes, so it was not kept")
                }
            },
        ),
        Failure::PieceTooLarge { what, cap } => (
            ANSWERED,
            format!(
                "one {what} of the stream is larger than the cap of {cap} bytes, so it was not kept"
            ),
        ),
        Failure::AnswerNotUtf8 => (
            ANSWERED,
            match so_far {
                Some(so_far) => format!("the answer is not UTF-8 text ({so_far} arrived)"),
                None => "the answer is not UTF-8 text".to_owned(),
            },
        ),
        Failure::Proxy(how) => (NO_ANSWER, proxy_failed(*how).to_owned()),
        Failure::BlockingInRuntime => (
            NOT_ASKED,
            "meterwire::blocking::HttpTransport was called from a thread of an async runtime, where waiting for the answer would stall the runtime, so nothing was sent".to_owned(),
        ),
        Failure::Unserializable(category) => (NOT_ASKED, unserializable(category)),
        Failure::Unsendable(problem) => (NOT_ASKED, format!("{problem}, so nothing was sent")),
    };
    let lead = match answered {
        Some(answered) => format!("answered HTTP {}, but", answered.status),
        None => lead.to_owned(),
    };
    (lead, what)
}

/// What a failed request's failure was, for a remedy that says it.
pub(super) fn failed_what(failure: &Failure, answered: Option<&Answered>) -> String {
    failed(failure, answered).1
}

/// What a proxy's failure was.
fn proxy_failed(how: ProxyFailure) -> &'static str {
    match how {
        ProxyFailure::Refused => "the proxy refused the connection: nothing listens at its port",
        ProxyFailure::NotFound => "the proxy's host name does not resolve",
        ProxyFailure::Unreachable => "the connection to the proxy could not be made",
        ProxyFailure::Connect => "the connection to the engine through the proxy could not be made",
        ProxyFailure::AuthRequired => {
            "the proxy asked for credentials (HTTP 407) before it would pass the request on"
        }
        ProxyFailure::Tunnel => "the proxy refused to open a tunnel (CONNECT) to the engine",
    }
}

/// What a body that could not be serialized says: `category` is
/// serde_json's word for what went wrong.
fn unserializable(category: &str) -> String {
    format!("the request body could not be serialized as JSON ({category}), so nothing was sent")
}

/// What a timer that ended a stream says.
fn timed_out(timer: Timer, answered: &Answered) -> String {
    let so_far = answered.so_far();
    let status = answered.status;
    match timer {
        Timer::FirstByte { ms } => format!(
            "answered HTTP {status}, but no byte of its body arrived within the deadline of {ms} ms (no answer within {ms} ms)"
        ),
        Timer::Idle { ms } => format!(
            "answered HTTP {status}, then went silent: no byte for the idle timer of {ms} ms, after {so_far}"
        ),
        Timer::Whole { ms } => format!(
            "answered HTTP {status}, and the stream ran past its deadline of {ms} ms, after {so_far}"
        ),
    }
}

/// What an error inside a stream says: its type and code, the words that
/// named its cause when they did, and the engine's words.
fn in_stream(answered: &Answered, error: &StreamError) -> String {
    let named = match (&error.kind, &error.code) {
        (Some(kind), Some(code)) if kind != code => {
            format!(" of type \"{kind}\" (code \"{code}\")")
        }
        (Some(kind), _) => format!(" of type \"{kind}\""),
        (None, Some(code)) => format!(" with the code \"{code}\""),
        (None, None) => String::new(),
    };
    let phrase = match &error.by {
        By::Words { phrase, names } => {
            format!(" whose words name {}: \"{phrase}\"", self::named(*names))
        }
        _ => String::new(),
    };
    let said = match &error.words {
        Some(words) => format!("; the engine said: \"{words}\""),
        None => String::new(),
    };
    format!(
        "answered HTTP {}, streamed {}, then sent an error{named}{phrase}{said}",
        answered.status,
        answered.so_far()
    )
}

/// What a stream that ended without `[DONE]` says.
fn undone(answered: &Answered, unfinished: Option<u64>) -> String {
    let events = match answered.events {
        Some(1) => "1 event".to_owned(),
        Some(n) => format!("{n} events"),
        None => answered.so_far(),
    };
    let inside = match unfinished {
        Some(1) => ", inside an event (1 byte of it not read)".to_owned(),
        Some(bytes) => format!(", inside an event ({bytes} bytes of it not read)"),
        None => String::new(),
    };
    format!(
        "answered HTTP {}, then its stream ended without [DONE] after {events}{inside}, so the answer may be cut short",
        answered.status
    )
}

/// A few words for the list of attempts in a reason.
pub(super) fn short(kind: &Kind) -> String {
    match kind {
        Kind::Status(said) => format!("HTTP {}", said.status),
        Kind::Failed { failure, .. } => match failure {
            Failure::ConnectionRefused => "connection refused".to_owned(),
            Failure::HostNotFound => "host not found".to_owned(),
            Failure::Connect => "no connection".to_owned(),
            Failure::Tls(_) => "TLS failed".to_owned(),
            Failure::ConnectionReset => "connection reset".to_owned(),
            Failure::Deadline { ms } => format!("no answer within {ms} ms"),
            Failure::Other => "no answer".to_owned(),
            Failure::AnswerTooLarge { .. } => "an answer over the cap".to_owned(),
            Failure::PieceTooLarge { .. } => "a piece over the cap".to_owned(),
            Failure::AnswerNotUtf8 => "an answer not UTF-8".to_owned(),
            Failure::Proxy(how) => match how {
                ProxyFailure::Refused => "proxy refused",
                ProxyFailure::NotFound => "proxy not found",
                ProxyFailure::Unreachable => "proxy unreachable",
                ProxyFailure::Connect => "no connection through the proxy",
                ProxyFailure::AuthRequired => "proxy asked for credentials",
                ProxyFailure::Tunnel => "proxy refused the tunnel",
            }
            .to_owned(),
            Failure::BlockingInRuntime | Failure::Unserializable(_) | Failure::Unsendable(_) => {
                "not sent".to_owned()
            }
        },
        Kind::Timer { timer, .. } => match timer {
            Timer::FirstByte { ms } => format!("no body within {ms} ms"),
            Timer::Idle { ms } => format!("silent for {ms} ms"),
            Timer::Whole { ms } => format!("a stream past {ms} ms"),
        },
        Kind::InStream { .. } => "an error in the stream".to_owned(),
        Kind::Undone { .. } => "no [DONE]".to_owned(),
        Kind::Unjoined { .. } => "a stream whose joined text could not be concealed".to_owned(),
        Kind::Latched { original, .. } => short(original),
        Kind::Held { .. } | Kind::Spent { .. } | Kind::TokenFile { .. } | Kind::Unsent { .. } => {
            "not sent".to_owned()
        }
    }
}

/// The reason of a configuration that cannot send, and the engine's host
/// when it has an address to name.
pub(super) fn unsent(
    unsent: &Unsent,
    naming: &Naming,
    scope: &str,
    concealer: &Concealer,
) -> (String, Option<String>) {
    let scoped_name = scope_phrase(scope, concealer);
    // `scope "acme": engine at https://… (from …)`, with `noun` for
    // `engine at`.
    let subject = |noun: &str, address: &Address| {
        format!(
            "{scoped_name}: {noun} {} ({})",
            shown_address(&address.to_string(), concealer),
            address.origin().provenance()
        )
    };
    let host = |address: &Address| shown_host(&address.host(), concealer);
    match unsent {
        Unsent::NoAddress => (
            format!(
                "{scoped_name}: no engine address is set; none was given in code and every variable of the address chain is unset or blank: {}",
                naming.address_chain(scope).variables().join(", ")
            ),
            None,
        ),
        Unsent::BadAddress(error) => {
            let shown = shown_address(error.shown(), concealer);
            let what = match error {
                AddressError::Malformed { why, .. } => format!("is not a URL ({why})"),
                AddressError::Scheme { scheme, .. } => {
                    format!("uses the scheme {scheme:?}; only http and https reach an engine")
                }
                AddressError::UserInfo { .. } => "carries userinfo (user:password@), which would put a second credential on the wire next to the token".to_owned(),
            };
            let shown = if shown.is_empty() {
                String::new()
            } else {
                format!(" {shown}")
            };
            (
                format!(
                    "{scoped_name}: the address{shown} ({}) {what}; nothing was sent",
                    error.origin().provenance()
                ),
                None,
            )
        }
        Unsent::Plaintext(address) => (
            format!(
                "{} is plain http to {}, which is not a loopback host; a bearer token is sent only over TLS (RFC 6750 §5.3), so nothing was sent",
                subject("the address", address),
                host(address)
            ),
            Some(host(address)),
        ),
        Unsent::NoToken(address) => (
            format!(
                "{} has no bearer token; none was given in code and every variable of the token chain is unset or blank: {}; nothing was sent",
                subject("engine at", address),
                naming.token_chain(scope).variables().join(", ")
            ),
            Some(host(address)),
        ),
        Unsent::Unusable(address, error) => (
            format!(
                "{}: {} {}, so it cannot be sent as a header value; nothing was sent",
                subject("engine at", address),
                error.origin().holding("the token"),
                error.problem()
            ),
            Some(host(address)),
        ),
        Unsent::Both {
            address,
            variable,
            twin,
        } => (
            format!(
                "{}: both {variable} and {twin} are set, so which one holds the token is unknown; nothing was sent",
                subject("engine at", address),
            ),
            Some(host(address)),
        ),
    }
}

/// The reason of a body that could not be serialized, for a transport
/// that has no address to name.
pub(super) fn unaddressed_unserializable(category: &str) -> String {
    unserializable(category)
}
