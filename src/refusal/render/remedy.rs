//! What to do about a refusal, in words: every remedy, from the value.
//!
//! The four causes are four remedies: set a variable, check an address (or
//! the request, the path, the engine's health), fund an account, wait for
//! a window. Each is written once here, and names the variable an operator
//! can act on. A wrong remedy sends an operator to debug a network that is
//! fine, so within each cause the remedy fits what the evidence says: an
//! x402 engine wants a payment with each request rather than a funded
//! account, a ban wants waiting out rather than a new token, a gateway's
//! upstream wants whoever runs the gateway, and a slow engine wants a
//! longer timer rather than a new address.

use std::time::Duration;

use super::origin::OriginWords;
use crate::conceal::Concealer;
use crate::config::Unsent;
use crate::config::address::{Address, AddressError};
use crate::config::naming::Naming;
use crate::config::site::{Site, shown_host};
use crate::refusal::Cause;
use crate::refusal::evidence::words::engine_value;
use crate::refusal::kind::{By, Fix, Kind, Said, Timer};
use crate::refusal::kind::{Failure, ProxyFailure};
use crate::text::seconds_phrase;

/// How much of a path a remedy quotes.
const PATH_LIMIT: usize = 100;

/// The remedy of a refusal in a stream a fake scripted, which has no
/// address of its own to point at.
/// The remedy of a stream a fake scripted: it names no engine, so it names
/// the variable a real transport reads the address from by default.
pub(super) fn scripted() -> String {
    format!(
        "a scripted stream refused; the engine's address is read from {} by default",
        Naming::default().engine_variable()
    )
}

/// How a body that could not be serialized is mended, before what the
/// remedy says of the engine.
pub(super) const SERIALIZER_FIX: &str =
    "fix the request type the predictor serializes, so that serde_json can write it as JSON";

/// The remedy of a refusal about a send to `site`, and the variable it
/// names (the report's `source`): a rejected token names the token's
/// variable; every other cause the address's, where the engine that
/// answered was found.
pub(super) fn remedy(site: &Site, kind: &Kind) -> (String, Option<String>) {
    let address = site.address_variable();
    match kind {
        Kind::Status(said) => status(site, said),
        Kind::Failed { failure, answered } => {
            let fix = failure_fix(failure);
            let what = match fix {
                Fix::Health => format!(
                    "did not answer: {}",
                    super::reason::failed_what(failure, answered.as_ref())
                ),
                _ => String::new(),
            };
            let mut remedy = unreachable(site, fix, &what, None);
            if let (Failure::Deadline { ms }, Some(_)) = (failure, answered) {
                remedy.push_str(&raise(TimerSetting::Deadline, *ms));
            }
            (remedy, address)
        }
        Kind::Timer { timer, .. } => {
            let (setting, ms) = match *timer {
                Timer::FirstByte { ms } => (TimerSetting::Deadline, ms),
                Timer::Idle { ms } => (TimerSetting::Idle, ms),
                Timer::Whole { ms } => (TimerSetting::Stream, ms),
            };
            let remedy = unreachable(site, Fix::Health, "stopped in the middle of a stream", None);
            (format!("{remedy}{}", raise(setting, ms)), address)
        }
        Kind::InStream { error, .. } => by_cause(
            site,
            error.cause(),
            "",
            Window::Unsaid,
            "sent an error in the middle of a stream",
        ),
        Kind::Undone { .. } => (
            unreachable(site, Fix::Health, "ended a stream before its [DONE]", None),
            address,
        ),
        Kind::Unjoined { .. } => (
            unreachable(
                site,
                Fix::Health,
                "streamed more than a stream holds back to conceal what a predictor joins",
                None,
            ),
            address,
        ),
        Kind::Held { left, .. } | Kind::Spent { left, .. } => {
            (over_quota(site, Window::Left(*left)), address)
        }
        Kind::Latched { original, .. } => remedy(site, original),
        Kind::TokenFile { .. } => (
            site.token().set_phrase(&format!(
                "the bearer token the engine at {} issued",
                site.host()
            )),
            site.token_variable(),
        ),
        Kind::Unsent { unsent, naming } => {
            self::unsent(unsent, naming, site.scope(), site.concealer())
        }
    }
}

/// The remedy of an engine's answer, as its evidence says.
fn status(site: &Site, said: &Said) -> (String, Option<String>) {
    let address = site.address_variable();
    let delay = said.wait.as_ref().and_then(|wait| wait.delay);
    match (&said.by, said.cause) {
        (By::X402 { .. }, _) => (x402(site), address),
        (By::Ban, _) => (ban(site, delay), address),
        (_, Cause::EngineUnreachable) => (
            unreachable(
                site,
                said.fix(),
                &format!("answered HTTP {}", said.status),
                delay,
            ),
            address,
        ),
        (_, cause) => {
            let with_scope = match said.challenge.as_ref().and_then(|c| c.scope.as_deref()) {
                Some(scope) => format!(" (one with the scope \"{scope}\")"),
                None => String::new(),
            };
            let window = delay.map_or(Window::Unsaid, Window::Asked);
            by_cause(site, cause, &with_scope, window, "")
        }
    }
}

/// The remedy of each cause, for an answer or an error in a stream.
fn by_cause(
    site: &Site,
    cause: Cause,
    with_scope: &str,
    window: Window,
    what: &str,
) -> (String, Option<String>) {
    match cause {
        Cause::NoEngine => (rejected_token(site, with_scope), site.token_variable()),
        Cause::EngineOutOfCredit => (out_of_credit(site), site.address_variable()),
        Cause::EngineOverQuota => (over_quota(site, window), site.address_variable()),
        Cause::EngineUnreachable => (
            unreachable(site, Fix::Health, what, None),
            site.address_variable(),
        ),
    }
}

/// Where a failed request's remedy points.
fn failure_fix(failure: &Failure) -> Fix {
    match failure {
        Failure::ConnectionRefused | Failure::HostNotFound | Failure::Connect => Fix::Reach,
        Failure::Tls(_) => Fix::Trust,
        Failure::ConnectionReset | Failure::Deadline { .. } | Failure::Other => Fix::Health,
        Failure::AnswerTooLarge { .. } | Failure::PieceTooLarge { .. } => Fix::Cap,
        Failure::AnswerNotUtf8 => Fix::Utf8,
        Failure::Proxy(ProxyFailure::AuthRequired) => Fix::ProxyCredentials,
        Failure::Proxy(_) => Fix::Proxy,
        Failure::BlockingInRuntime => Fix::Async,
        Failure::Unserializable(_) => Fix::Serializer,
        Failure::Unsendable(_) => Fix::Option,
    }
}

/// The remedy of an `engine-unreachable` refusal. `what` says what the
/// engine did (`answered HTTP 503`, `did not answer: …`); `delay` how long
/// it asked to wait.
pub(super) fn unreachable(site: &Site, fix: Fix, what: &str, delay: Option<Duration>) -> String {
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
        Fix::Redirect => {
            address.set_phrase("the address the engine answers at itself, without a redirect")
        }
        Fix::Trust => format!(
            "{}; if it presents a certificate from a private authority, trust that authority's certificate",
            unreachable(site, Fix::Reach, "", None)
        ),
        Fix::Cap => format!(
            "raise the answer cap if answers this large are expected, or {}",
            address.set_phrase("an engine that answers within it")
        ),
        Fix::Utf8 => address.set_phrase("an engine that answers JSON as UTF-8 text"),
        Fix::Serializer => format!(
            "{SERIALIZER_FIX} for the engine at {host} (the address, {}, was not contacted)",
            address.named()
        ),
        Fix::Option => format!(
            "drop or fix that option where the predictor builds the call, so that the engine at {host} can be asked (the address, {}, was not contacted)",
            address.named()
        ),
        Fix::Async => format!(
            "in async code use meterwire::HttpTransport and .await its send, or call the blocking transport from a thread that is not the runtime's; the engine at {host} was not contacted (its address: {})",
            address.named()
        ),
        Fix::Proxy => {
            let proxy = site.proxy().unwrap_or("the transport was given");
            format!(
                "check that the proxy {proxy} (given to HttpTransportBuilder::proxy) is up, reachable from here and lets this host through to the engine at {host}, or drop the proxy if the engine is reachable without it (the engine's address: {})",
                address.named()
            )
        }
        Fix::ProxyCredentials => {
            let proxy = site.proxy().unwrap_or("the transport was given");
            format!(
                "give the proxy {proxy} the credentials it asks for, in the URL given to HttpTransportBuilder::proxy (http://user:password@host:port), or use a proxy that lets this host through to the engine at {host} (the engine's address: {})",
                address.named()
            )
        }
        Fix::Gateway => format!(
            "ask whoever runs the gateway at {host} to fix the credentials it sends to its upstream engine: the upstream rejected them, and {} (which the gateway accepted) is not the one to change; or {}",
            site.token().holding("the token"),
            address.set_phrase("an engine that answers itself")
        ),
    }
}

/// The remedy of an empty account: fund it, or use a token whose account
/// has credit.
fn out_of_credit(site: &Site) -> String {
    let token = site.token();
    format!(
        "fund the account billed through {} (add credit to it), or {}",
        token.holding("the token"),
        token.set_phrase("a token whose account has credit")
    )
}

/// The remedy of an engine that asks for an x402 payment with each
/// request: a client that pays, or an engine that bills an account.
fn x402(site: &Site) -> String {
    format!(
        "send through an x402 client that funds each request with a payment (in the PAYMENT-SIGNATURE header, which this transport does not write): funding the account billed through {} does not pay an x402 engine; or {}",
        site.token().holding("the token"),
        site.address()
            .origin()
            .set_phrase("an engine that bills the account behind the token")
    )
}

/// The remedy of a rejected token: one the engine accepts (`with_scope`
/// says which scope it needs, when the engine said).
fn rejected_token(site: &Site, with_scope: &str) -> String {
    site.token().set_phrase(&format!(
        "a token the engine at {} accepts{with_scope}",
        site.host()
    ))
}

/// The remedy of a ban that ends: wait it out; the token is not what is
/// wrong.
fn ban(site: &Site, delay: Option<Duration>) -> String {
    let how_long = match delay {
        Some(delay) => format!(" ({})", seconds_phrase(delay)),
        None => String::new(),
    };
    format!(
        "wait for the ban to end{how_long} before sending again (a send before then may lengthen it), and slow the sends from this host if it recurs; {} is not what was refused, so keep it, or {}",
        site.token().holding("the token"),
        site.address()
            .origin()
            .set_phrase("another engine's address meanwhile")
    )
}

/// How long a spent window asks to be waited out, as its remedy says it.
#[derive(Clone, Copy, Debug)]
enum Window {
    /// The engine gave no hint.
    Unsaid,
    /// The engine asked for this long.
    Asked(Duration),
    /// A hold has this long left, which a retry policy could wait out.
    Left(Duration),
}

/// The remedy of a spent limit: wait for the window (as long as the
/// engine asked, or as is left of it), or use a token with a limit of its
/// own.
fn over_quota(site: &Site, window: Window) -> String {
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

/// A timer an operator can raise, by the builder method (and the call's)
/// that sets it.
#[derive(Clone, Copy, Debug)]
enum TimerSetting {
    Deadline,
    Idle,
    Stream,
}

/// What a remedy adds when a timer ran out after the engine began to
/// answer: a slow engine is not a dead one, so the timer may be raised,
/// named by its setting.
fn raise(setting: TimerSetting, ms: u64) -> String {
    let (timer, method) = match setting {
        TimerSetting::Deadline => ("the deadline", "deadline"),
        TimerSetting::Idle => ("the idle timer", "idle_timeout"),
        TimerSetting::Stream => ("the stream deadline", "stream_deadline"),
    };
    format!(
        "; the engine had begun to answer, so if it is slow rather than stuck, raise {timer} (now {ms} ms) with HttpTransportBuilder::{method} or Call::{method}"
    )
}

/// The remedy of a configuration that cannot send, and the variable it
/// names.
pub(super) fn unsent(
    unsent: &Unsent,
    naming: &Naming,
    scope: &str,
    concealer: &Concealer,
) -> (String, Option<String>) {
    let host = |address: &Address| shown_host(&address.host(), concealer);
    match unsent {
        Unsent::NoAddress => {
            let chain = naming.address_chain(scope);
            (
                format!(
                    "set {} to the engine's address (an https URL){}",
                    naming.engine_variable(),
                    scoped(chain.variables(), &naming.engine_variable())
                ),
                None,
            )
        }
        Unsent::BadAddress(error) => {
            let origin = error.origin();
            let fix = match error {
                AddressError::Malformed { .. } => {
                    "an https URL such as https://engine.example/v1/predict".to_owned()
                }
                AddressError::Scheme { .. } => "the engine's https address".to_owned(),
                AddressError::UserInfo { host, .. } => format!(
                    "the address of the engine at {} without the user:password@ part",
                    shown_host(host, concealer)
                ),
            };
            (
                origin.set_phrase(&fix),
                origin.variable().map(str::to_owned),
            )
        }
        Unsent::Plaintext(address) => {
            let origin = address.origin();
            (
                origin.set_phrase("the engine's https address"),
                origin.variable().map(str::to_owned),
            )
        }
        Unsent::NoToken(address) => {
            let chain = naming.token_chain(scope);
            (
                format!(
                    "set {} to the bearer token the engine at {} issued{}",
                    naming.token_variable(),
                    host(address),
                    scoped(chain.variables(), &naming.token_variable())
                ),
                None,
            )
        }
        Unsent::Unusable(_, error) => {
            let origin = error.origin();
            (
                origin.set_phrase(
                    "the token exactly as the engine issued it: visible ASCII, with no spaces, quotes or line breaks",
                ),
                origin.variable().map(str::to_owned),
            )
        }
        Unsent::Both { variable, twin, .. } => (
            format!(
                "set one of the two: {variable} to the token itself, or {twin} to the path of a file that holds it, and unset the other"
            ),
            Some(variable.clone()),
        ),
    }
}

/// `, or CHANT_BEHAVIOUR_ENGINE_ACME for this scope alone`, when the
/// chain's first variable is a scope's own, not the one the remedy names.
fn scoped(variables: &[String], named: &str) -> String {
    match variables.first() {
        Some(first) if first != named => format!(", or {first} for this scope alone"),
        _ => String::new(),
    }
}

/// The remedy of a body that could not be serialized, for a transport
/// that has no address to name.
pub(super) fn unaddressed_unserializable() -> String {
    format!(
        "{SERIALIZER_FIX}; nothing was sent to the engine (its address is read from {} by default)",
        Naming::default().engine_variable()
    )
}
