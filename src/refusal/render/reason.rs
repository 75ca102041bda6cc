//! What happened, in words: every reason, from the value.
//!
//! A reason about a send opens with the scope and the engine it was going
//! to (`scope "acme": engine at https://… (from CHANT_BEHAVIOUR_ENGINE)`),
//! then says what the engine did, or what kept the send from it, with the
//! evidence that decided the cause: the status, and the code, words or
//! protocol that named a better one. The crate's own words come first, so
//! no bound ever cuts them.

use super::origin::{OriginWords, address_origin, token_origin};
use super::{Unsending, scope_phrase};
use crate::conceal::{Shown, shown};
use crate::config::Unsent;
use crate::config::address::{Address, AddressError};
use crate::config::site::{Site, shown_address, shown_host};
use crate::refusal::Cause;
use crate::refusal::evidence::dialect::Names;
use crate::refusal::evidence::protocol::Relay;
use crate::refusal::kind::{Answered, Failure, ProxyFailure};
use crate::refusal::kind::{By, Kind, Said, StreamError, Timer};

/// How much of a scheme a reason quotes: the whole of any the reason's
/// own bound keeps.
const SCHEME_LIMIT: usize = super::REASON_LIMIT;

/// The reason of a refusal about a send to `site`, after its scope.
pub(super) fn at_site(site: &Site, kind: &Kind) -> Shown {
    let subject = subject(site);
    match kind {
        Kind::Held { hold, left } => {
            let window = match hold.ceiling {
                Some(ceiling) => shown!(
                    "; that is longer than the longest hold this transport keeps, so the hold was cut to {}, of which {} is left",
                    Shown::seconds(ceiling),
                    Shown::seconds(*left)
                ),
                None => shown!(", and {} of that window is left", Shown::seconds(*left)),
            };
            let asked = match &hold.fleet {
                None => Shown::from("the engine asked"),
                Some(shared) => shown!(
                    "the engine asked another process that shares the account (as the shared hold on {} records it)",
                    shared
                ),
            };
            // A hold an answer's fields started quotes the field, and is checked.
            let why = match &hold.field {
                Some(field) => shown!(
                    "{} ({}), which a send checks once a minute",
                    hold.why,
                    field
                ),
                None => hold.why.clone(),
            };
            shown!(
                "{}: the send was held, not sent: at {} {}, by {}, to wait {} before sending again{}; the account billed through {} is held until then",
                subject,
                Shown::date(hold.asked_at),
                asked,
                why,
                Shown::seconds(hold.asked),
                window,
                token_origin(site).holding("the token")
            )
        }
        Kind::Spent { spent, left } => {
            let limit = match spent.limit {
                Some(limit) => shown!(" (of a limit of {})", limit),
                None => Shown::default(),
            };
            let field = match &spent.field {
                Some(field) => shown!(" ({})", field),
                None => Shown::default(),
            };
            let said = match &spent.fleet {
                None => shown!(
                    "at {} the engine's answer{} said {} {} were left{} until the window resets, and this transport has started {} since",
                    Shown::date(spent.said_at),
                    field,
                    spent.remaining,
                    spent.what,
                    limit,
                    spent.started
                ),
                Some(shared) => shown!(
                    "the processes that share the account have started every send the engine's answers{} said was left of its {} window, as the shared budget on {} records it",
                    field,
                    spent.what,
                    shared
                ),
            };
            shown!(
                "{}: the send was held, not sent: {}; none is left for {}, until the window resets; the account billed through {} is held until then",
                subject,
                said,
                Shown::seconds(*left),
                token_origin(site).holding("the token")
            )
        }
        Kind::Latched { original, at, left } => shown!(
            "{}: the send was latched, not sent, for {} more: at {} the engine {}",
            subject,
            Shown::seconds(*left),
            Shown::date(*at),
            engine_did(Some(site), original)
        ),
        Kind::TokenFile { path, problem } => shown!(
            "{}: the token file {} {}, and no token was read from it before; nothing was sent",
            subject,
            path,
            problem.describe()
        ),
        // What a configuration refuses names its own subject.
        Kind::Unsent { unsent, naming } => {
            let (reason, _) = self::unsent(Unsending {
                unsent,
                naming,
                scope: site.scope(),
                concealer: site.concealer(),
            });
            let scope = shown!("{}: ", scope_phrase(site.scope(), site.concealer()));
            reason.after(&scope).unwrap_or(reason)
        }
        kind => shown!("{} {}", subject, engine_did(Some(site), kind)),
    }
}

/// The reason of a refusal in a stream a fake scripted.
pub(super) fn scripted(kind: &Kind) -> Shown {
    shown!("the stream {}", engine_did(None, kind))
}

/// `engine at https://host/path (from VARIABLE)`: whom every reason about
/// a send names, after the scope.
fn subject(site: &Site) -> Shown {
    shown!(
        "engine at {} ({})",
        site.shown_address(),
        address_origin(site).provenance()
    )
}

/// What the engine did (or what became of the send), after the subject:
/// `answered HTTP 429: …`, `did not answer: connection refused: …`.
fn engine_did(site: Option<&Site>, kind: &Kind) -> Shown {
    match kind {
        Kind::Status(said) => answered(site, said),
        Kind::Failed { failure, answered } => {
            let (lead, what) = failed(failure, answered.as_ref());
            let proxy = match (failure, site.and_then(Site::proxy)) {
                (Failure::Proxy(_), Some(proxy)) => shown!(" (the proxy at {})", proxy),
                _ => Shown::default(),
            };
            shown!("{} {}{}", lead, what, proxy)
        }
        Kind::Timer { timer, answered } => timed_out(*timer, answered),
        Kind::InStream { answered, error } => in_stream(answered, error),
        Kind::Undone {
            answered,
            unfinished,
        } => undone(answered, *unfinished),
        Kind::Unjoined { answered, why } => shown!(
            "answered HTTP {}, then streamed {} whose joined text could not be concealed: {}",
            answered.status,
            answered.so_far(),
            why
        ),
        Kind::Latched { original, .. } => engine_did(site, original),
        Kind::Held { .. } | Kind::Spent { .. } | Kind::TokenFile { .. } | Kind::Unsent { .. } => {
            Shown::from("was not asked")
        }
    }
}

/// `answered HTTP 402: the account billed through … is out of credit`,
/// with the evidence that decided it, the wait asked, the request id and
/// the engine's words.
fn answered(site: Option<&Site>, said: &Said) -> Shown {
    let status = said.status;
    let holder = site.map_or_else(
        || Shown::from("the token"),
        |site| token_origin(site).holding("the token"),
    );
    let request = match &said.request_id {
        Some(id) => shown!("; request id {}", id),
        None => Shown::default(),
    };
    let words = match &said.words {
        Some(words) => shown!("; the engine said: \"{}\"", words),
        None => Shown::default(),
    };
    let retry = match &said.wait {
        Some(wait) if wait.header == "retry-after" || wait.delay.is_none() => {
            shown!("; retry after {}", wait.value)
        }
        Some(wait) => shown!(
            "; retry after {} ({}: {})",
            wait.delay.map(Shown::seconds).unwrap_or_default(),
            wait.header,
            wait.value
        ),
        None => Shown::default(),
    };
    let evidence = match &said.by {
        By::Code { code, names } => {
            shown!(" with the code \"{}\", which names {}", code, named(*names))
        }
        By::Words { phrase, names } => {
            shown!(
                "; the engine's words name {}: \"{}\"",
                named(*names),
                *phrase
            )
        }
        _ => Shown::default(),
    };
    // A phrase quoted last is followed by a new clause, not a colon.
    let then = match &said.by {
        By::Words { .. } => ";",
        _ => ":",
    };
    let after = shown!("{}{}", request, words);
    match (&said.by, said.cause) {
        (By::X402 { header }, _) => {
            let marked = if *header {
                "with a PAYMENT-REQUIRED header"
            } else {
                "with an x402Version body"
            };
            shown!(
                "answered HTTP {} {}: the engine speaks x402 and asks for a payment with each request, which no bearer token makes, so the send is out of credit whatever the account billed through {} holds{}",
                status,
                marked,
                holder,
                after
            )
        }
        (By::Ban, _) => {
            let (header, value, delay) = match &said.wait {
                Some(wait) => (
                    wait.header,
                    wait.value.clone(),
                    wait.delay.map(Shown::seconds).unwrap_or_default(),
                ),
                None => ("retry-after", Shown::default(), Shown::default()),
            };
            shown!(
                "answered HTTP {} with {}: {}, a ban that ends rather than a rejected token: the engine holds back this address or the account billed through {} for {}{}",
                status,
                header,
                value,
                holder,
                delay,
                after
            )
        }
        (By::Relayed(relay), _) => {
            let marked = match relay {
                Relay::Headers => Shown::from("its llm_provider- headers say so"),
                Relay::Exception(name) => shown!("its words name the upstream's {}", name),
            };
            shown!(
                "answered HTTP {} relayed by a gateway from its own upstream engine ({}): the upstream rejected the gateway's credentials, not {}, which the gateway accepted{}",
                status,
                marked,
                holder,
                after
            )
        }
        (_, Cause::EngineOutOfCredit) => {
            let evidence = match &said.by {
                By::Code { code, .. } => shown!(
                    " with the code \"{}\", which names the account's credit rather than a limit window",
                    code
                ),
                _ => evidence,
            };
            shown!(
                "answered HTTP {}{}{} the account billed through {} is out of credit{}",
                status,
                evidence,
                then,
                holder,
                after
            )
        }
        (_, Cause::NoEngine) => shown!(
            "answered HTTP {}{}{} the engine rejected {}{}{}",
            status,
            evidence,
            then,
            holder,
            diagnosis(said),
            after
        ),
        (_, Cause::EngineOverQuota) => shown!(
            "answered HTTP {}{}{} the account billed through {} is over a quota or rate limit{}{}",
            status,
            evidence,
            then,
            holder,
            retry,
            after
        ),
        (_, Cause::EngineUnreachable) => match status {
            407 => {
                let who = match site.and_then(Site::proxy) {
                    Some(proxy) => shown!("the proxy at {}", proxy),
                    None => Shown::from("a proxy between here and the engine"),
                };
                shown!(
                    "answered HTTP 407 instead of an answer: {} asks for credentials before it passes the request on{}",
                    who,
                    after
                )
            }
            300..=399 => {
                let to = match &said.location {
                    Some(location) => shown!(" to {}", location),
                    None => Shown::default(),
                };
                shown!(
                    "answered HTTP {}, a redirect{}, instead of an answer; redirects are not followed, so the token never reaches a host the engine names{}",
                    status,
                    to,
                    after
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
                shown!(
                    "answered HTTP {} instead of an answer: {}, so it did not answer the question{}{}",
                    status,
                    kind,
                    retry,
                    after
                )
            }
            _ => shown!(
                "answered HTTP {}{}{} waiting may clear it and another token cannot, and the engine did not answer the question{}{}",
                status,
                evidence,
                then,
                retry,
                after
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
fn diagnosis(said: &Said) -> Shown {
    let Some(challenge) = &said.challenge else {
        return Shown::default();
    };
    let mut words = match challenge.error.as_ref().map(Shown::as_str) {
        Some("invalid_token") => Shown::from(
            "; the engine says the token is invalid, expired or revoked (invalid_token)",
        ),
        Some("insufficient_scope") => match &challenge.scope {
            Some(scope) => shown!(
                "; the engine says the token lacks the scope \"{}\" (insufficient_scope)",
                scope
            ),
            None => Shown::from(
                "; the engine says the token lacks a scope it needs (insufficient_scope)",
            ),
        },
        Some("invalid_request") => Shown::from(
            "; the engine says the request's credentials are malformed (invalid_request)",
        ),
        Some(_) => match &challenge.error {
            Some(other) => shown!("; the engine's challenge says error \"{}\"", other),
            None => Shown::default(),
        },
        None => Shown::default(),
    };
    if let Some(description) = &challenge.description {
        words.push(shown!(": \"{}\"", description));
    }
    words
}

/// How a failed request is told: how the engine fared (`did not answer:`,
/// `answered, but`, `answered HTTP 200, but`, `was not asked:`), and what
/// failed.
fn failed(failure: &Failure, answered: Option<&Answered>) -> (Shown, Shown) {
    const NO_ANSWER: &str = "did not answer:";
    const NOT_ASKED: &str = "was not asked:";
    const ANSWERED: &str = "answered, but";
    let so_far = answered.map(Answered::so_far);
    let (lead, what) = match failure {
        Failure::ConnectionRefused => (
            NO_ANSWER,
            Shown::from("connection refused: nothing listens at that port"),
        ),
        Failure::HostNotFound => (
            NO_ANSWER,
            Shown::from("host not found: the name does not resolve"),
        ),
        Failure::Connect => (NO_ANSWER, Shown::from("the connection could not be made")),
        Failure::Tls(why) => (NO_ANSWER, shown!("TLS failed: {}", *why)),
        Failure::ConnectionReset => (
            NO_ANSWER,
            match so_far {
                Some(so_far) => shown!(
                    "the connection was reset after {} of the answer, before it was complete",
                    so_far
                ),
                None => Shown::from("connection reset: it closed before the answer was complete"),
            },
        ),
        Failure::Deadline { ms } => (
            NO_ANSWER,
            match so_far {
                Some(so_far) => shown!(
                    "its body stopped after {}: no answer within {} ms",
                    so_far,
                    *ms
                ),
                None => shown!("no answer within {} ms", *ms),
            },
        ),
        Failure::Other => (
            NO_ANSWER,
            match so_far {
                Some(so_far) => shown!(
                    "the answer stopped after {}, before it was complete",
                    so_far
                ),
                None => Shown::from("the request failed before an answer arrived"),
            },
        ),
        Failure::AnswerTooLarge { cap, declared } => (
            ANSWERED,
            match declared {
                Some(declared) => shown!(
                    "the answer declares {} bytes, over the cap of {} bytes, so it was not read",
                    *declared,
                    *cap
                ),
                None => shown!(
                    "the answer is larger than the cap of {} bytes, so it was not kept",
                    *cap
                ),
            },
        ),
        Failure::PieceTooLarge { what, cap } => (
            ANSWERED,
            shown!(
                "one {} of the stream is larger than the cap of {} bytes, so it was not kept",
                *what,
                *cap
            ),
        ),
        Failure::AnswerNotUtf8 => (
            ANSWERED,
            match so_far {
                Some(so_far) => shown!("the answer is not UTF-8 text ({} arrived)", so_far),
                None => Shown::from("the answer is not UTF-8 text"),
            },
        ),
        Failure::Proxy(how) => (NO_ANSWER, Shown::from(proxy_failed(*how))),
        Failure::BlockingInRuntime => (
            NOT_ASKED,
            Shown::from(
                "meterwire::blocking::HttpTransport was called from a thread of an async runtime, where waiting for the answer would stall the runtime, so nothing was sent",
            ),
        ),
        Failure::Unserializable(category) => (NOT_ASKED, unserializable(category)),
        Failure::Unsendable(problem) => (NOT_ASKED, shown!("{}, so nothing was sent", problem)),
    };
    let lead = match answered {
        Some(answered) => shown!("answered HTTP {}, but", answered.status),
        None => Shown::from(lead),
    };
    (lead, what)
}

/// What a failed request's failure was, for a remedy that says it.
pub(super) fn failed_what(failure: &Failure, answered: Option<&Answered>) -> Shown {
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
fn unserializable(category: &'static str) -> Shown {
    shown!(
        "the request body could not be serialized as JSON ({}), so nothing was sent",
        category
    )
}

/// What a timer that ended a stream says.
fn timed_out(timer: Timer, answered: &Answered) -> Shown {
    let so_far = answered.so_far();
    let status = answered.status;
    match timer {
        Timer::FirstByte { ms } => shown!(
            "answered HTTP {}, but no byte of its body arrived within the deadline of {} ms (no answer within {} ms)",
            status,
            ms,
            ms
        ),
        Timer::Idle { ms } => shown!(
            "answered HTTP {}, then went silent: no byte for the idle timer of {} ms, after {}",
            status,
            ms,
            so_far
        ),
        Timer::Whole { ms } => shown!(
            "answered HTTP {}, and the stream ran past its deadline of {} ms, after {}",
            status,
            ms,
            so_far
        ),
    }
}

/// What an error inside a stream says: its type and code, the words that
/// named its cause when they did, and the engine's words.
fn in_stream(answered: &Answered, error: &StreamError) -> Shown {
    let named = match (&error.kind, &error.code) {
        (Some(kind), Some(code)) if kind != code => {
            shown!(" of type \"{}\" (code \"{}\")", kind, code)
        }
        (Some(kind), _) => shown!(" of type \"{}\"", kind),
        (None, Some(code)) => shown!(" with the code \"{}\"", code),
        (None, None) => Shown::default(),
    };
    let phrase = match &error.by {
        By::Words { phrase, names } => {
            shown!(" whose words name {}: \"{}\"", self::named(*names), *phrase)
        }
        _ => Shown::default(),
    };
    let said = match &error.words {
        Some(words) => shown!("; the engine said: \"{}\"", words),
        None => Shown::default(),
    };
    shown!(
        "answered HTTP {}, streamed {}, then sent an error{}{}{}",
        answered.status,
        answered.so_far(),
        named,
        phrase,
        said
    )
}

/// What a stream that ended without `[DONE]` says.
fn undone(answered: &Answered, unfinished: Option<u64>) -> Shown {
    let events = match answered.events {
        Some(1) => Shown::from("1 event"),
        Some(n) => shown!("{} events", n),
        None => answered.so_far(),
    };
    let inside = match unfinished {
        Some(1) => Shown::from(", inside an event (1 byte of it not read)"),
        Some(bytes) => shown!(", inside an event ({} bytes of it not read)", bytes),
        None => Shown::default(),
    };
    shown!(
        "answered HTTP {}, then its stream ended without [DONE] after {}{}, so the answer may be cut short",
        answered.status,
        events,
        inside
    )
}

/// A few words for the list of attempts in a reason.
pub(super) fn short(kind: &Kind) -> Shown {
    match kind {
        Kind::Status(said) => shown!("HTTP {}", said.status),
        Kind::Failed { failure, .. } => match failure {
            Failure::ConnectionRefused => Shown::from("connection refused"),
            Failure::HostNotFound => Shown::from("host not found"),
            Failure::Connect => Shown::from("no connection"),
            Failure::Tls(_) => Shown::from("TLS failed"),
            Failure::ConnectionReset => Shown::from("connection reset"),
            Failure::Deadline { ms } => shown!("no answer within {} ms", *ms),
            Failure::Other => Shown::from("no answer"),
            Failure::AnswerTooLarge { .. } => Shown::from("an answer over the cap"),
            Failure::PieceTooLarge { .. } => Shown::from("a piece over the cap"),
            Failure::AnswerNotUtf8 => Shown::from("an answer not UTF-8"),
            Failure::Proxy(how) => Shown::from(match how {
                ProxyFailure::Refused => "proxy refused",
                ProxyFailure::NotFound => "proxy not found",
                ProxyFailure::Unreachable => "proxy unreachable",
                ProxyFailure::Connect => "no connection through the proxy",
                ProxyFailure::AuthRequired => "proxy asked for credentials",
                ProxyFailure::Tunnel => "proxy refused the tunnel",
            }),
            Failure::BlockingInRuntime | Failure::Unserializable(_) | Failure::Unsendable(_) => {
                Shown::from("not sent")
            }
        },
        Kind::Timer { timer, .. } => match timer {
            Timer::FirstByte { ms } => shown!("no body within {} ms", *ms),
            Timer::Idle { ms } => shown!("silent for {} ms", *ms),
            Timer::Whole { ms } => shown!("a stream past {} ms", *ms),
        },
        Kind::InStream { .. } => Shown::from("an error in the stream"),
        Kind::Undone { .. } => Shown::from("no [DONE]"),
        Kind::Unjoined { .. } => Shown::from("a stream whose joined text could not be concealed"),
        Kind::Latched { original, .. } => short(original),
        Kind::Held { .. } | Kind::Spent { .. } | Kind::TokenFile { .. } | Kind::Unsent { .. } => {
            Shown::from("not sent")
        }
    }
}

/// The reason of a configuration that cannot send, and the engine's host
/// when it has an address to name.
pub(super) fn unsent(at: Unsending<'_>) -> (Shown, Option<Shown>) {
    let Unsending {
        unsent,
        naming,
        scope,
        concealer,
    } = at;
    let scoped_name = scope_phrase(scope, concealer);
    // `scope "acme": engine at https://… (from …)`, with `noun` for
    // `engine at`.
    let subject = |noun: &'static str, address: &Address| {
        shown!(
            "{}: {} {} ({})",
            scoped_name,
            noun,
            shown_address(&address.to_string(), concealer),
            OriginWords::new(address.origin(), concealer).provenance()
        )
    };
    let host = |address: &Address| shown_host(&address.host(), concealer);
    let variables = |names: &[String]| {
        let names: Vec<Shown> = names.iter().map(|name| concealer.show_all(name)).collect();
        Shown::join(&names, ", ")
    };
    match unsent {
        Unsent::NoAddress => (
            shown!(
                "{}: no engine address is set; none was given in code and every variable of the address chain is unset or blank: {}",
                scoped_name,
                variables(naming.address_chain(scope.unshown()).variables())
            ),
            None,
        ),
        Unsent::BadAddress(error) => {
            let shown = shown_address(error.shown(), concealer);
            let what = match error {
                AddressError::Malformed { why, .. } => {
                    shown!("is not a URL ({})", concealer.show_all(why))
                }
                AddressError::Scheme { scheme, .. } => shown!(
                    "uses the scheme {}; only http and https reach an engine",
                    concealer.show(scheme, SCHEME_LIMIT).quoted()
                ),
                AddressError::UserInfo { .. } => Shown::from(
                    "carries userinfo (user:password@), which would put a second credential on the wire next to the token",
                ),
            };
            let shown = if shown.is_empty() {
                Shown::default()
            } else {
                shown!(" {}", shown)
            };
            (
                shown!(
                    "{}: the address{} ({}) {}; nothing was sent",
                    scoped_name,
                    shown,
                    OriginWords::new(error.origin(), concealer).provenance(),
                    what
                ),
                None,
            )
        }
        Unsent::Plaintext(address) => (
            shown!(
                "{} is plain http to {}, which is not a loopback host; a bearer token is sent only over TLS (RFC 6750 §5.3), so nothing was sent",
                subject("the address", address),
                host(address)
            ),
            Some(host(address)),
        ),
        Unsent::NoToken(address) => (
            shown!(
                "{} has no bearer token; none was given in code and every variable of the token chain is unset or blank: {}; nothing was sent",
                subject("engine at", address),
                variables(naming.token_chain(scope.unshown()).variables())
            ),
            Some(host(address)),
        ),
        Unsent::Unusable(address, error) => (
            shown!(
                "{}: {} {}, so it cannot be sent as a header value; nothing was sent",
                subject("engine at", address),
                OriginWords::new(error.origin(), concealer).holding("the token"),
                error.problem()
            ),
            Some(host(address)),
        ),
        Unsent::Both {
            address,
            variable,
            twin,
        } => (
            shown!(
                "{}: both {} and {} are set, so which one holds the token is unknown; nothing was sent",
                subject("engine at", address),
                concealer.show_all(variable),
                concealer.show_all(twin)
            ),
            Some(host(address)),
        ),
    }
}

/// The reason of a body that could not be serialized, for a transport
/// that has no address to name.
pub(super) fn unaddressed_unserializable(category: &'static str) -> Shown {
    unserializable(category)
}
