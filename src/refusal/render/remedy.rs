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

use super::Unsending;
use super::origin::{OriginWords, address_origin, token_origin};
use crate::conceal::{Concealer, Shown, shown};
use crate::config::Unsent;
use crate::config::address::{Address, AddressError};
use crate::config::naming::Naming;
use crate::config::site::{Site, shown_host};
use crate::refusal::Cause;
use crate::refusal::kind::{By, Fix, Kind, Said, Timer};
use crate::refusal::kind::{Failure, ProxyFailure};

/// How much of a path a remedy quotes.
const PATH_LIMIT: usize = 100;

/// The variable a real transport reads the address from by default, for a
/// remedy that has no address of its own to point at.
fn default_engine_variable() -> Shown {
    Concealer::new([]).show_all(&Naming::default().engine_variable())
}

/// The remedy of a stream a fake scripted: it names no engine, so it names
/// the variable a real transport reads the address from by default.
pub(super) fn scripted() -> Shown {
    shown!(
        "a scripted stream refused; the engine's address is read from {} by default",
        default_engine_variable()
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
pub(super) fn remedy(site: &Site, kind: &Kind) -> (Shown, Option<Shown>) {
    let address = address_origin(site).variable();
    match kind {
        Kind::Status(said) => status(site, said),
        Kind::Failed { failure, answered } => {
            let fix = failure_fix(failure);
            let what = match fix {
                Fix::Health => shown!(
                    "did not answer: {}",
                    super::reason::failed_what(failure, answered.as_ref())
                ),
                _ => Shown::default(),
            };
            let mut remedy = unreachable(site, fix, &what, None);
            if let (Failure::Deadline { ms }, Some(_)) = (failure, answered) {
                remedy.push(raise(TimerSetting::Deadline, *ms));
            }
            (remedy, address)
        }
        Kind::Timer { timer, .. } => {
            let (setting, ms) = match *timer {
                Timer::FirstByte { ms } => (TimerSetting::Deadline, ms),
                Timer::Idle { ms } => (TimerSetting::Idle, ms),
                Timer::Whole { ms } => (TimerSetting::Stream, ms),
            };
            let remedy = unreachable(
                site,
                Fix::Health,
                &Shown::from("stopped in the middle of a stream"),
                None,
            );
            (shown!("{}{}", remedy, raise(setting, ms)), address)
        }
        Kind::InStream { error, .. } => by_cause(
            site,
            error.cause(),
            &Shown::default(),
            WaitAsked::Unsaid,
            &Shown::from("sent an error in the middle of a stream"),
        ),
        Kind::Undone { .. } => (
            unreachable(
                site,
                Fix::Health,
                &Shown::from("ended a stream before its [DONE]"),
                None,
            ),
            address,
        ),
        Kind::Unjoined { .. } => (
            unreachable(
                site,
                Fix::Health,
                &Shown::from(
                    "streamed more than a stream holds back to conceal what a predictor joins",
                ),
                None,
            ),
            address,
        ),
        Kind::Held { left, .. } | Kind::Spent { left, .. } => {
            (over_quota(site, WaitAsked::Left(*left)), address)
        }
        Kind::Latched { original, .. } => remedy(site, original),
        Kind::TokenFile { .. } => {
            let token = token_origin(site);
            (
                token.set_phrase(shown!(
                    "the bearer token the engine at {} issued",
                    site.host()
                )),
                token.variable(),
            )
        }
        Kind::Unsent { unsent, naming } => self::unsent(Unsending {
            unsent,
            naming,
            scope: site.scope(),
            concealer: site.concealer(),
        }),
    }
}

/// The remedy of an engine's answer, as its evidence says.
fn status(site: &Site, said: &Said) -> (Shown, Option<Shown>) {
    let address = address_origin(site).variable();
    let delay = said.wait.as_ref().and_then(|wait| wait.delay);
    match (&said.by, said.cause) {
        (By::X402 { .. }, _) => (x402(site), address),
        (By::Ban, _) => (ban(site, delay), address),
        (_, Cause::EngineUnreachable) => (
            unreachable(
                site,
                said.fix(),
                &shown!("answered HTTP {}", said.status),
                delay,
            ),
            address,
        ),
        (_, cause) => {
            let with_scope = match said.challenge.as_ref().and_then(|c| c.scope.as_ref()) {
                Some(scope) => shown!(" (one with the scope \"{}\")", scope),
                None => Shown::default(),
            };
            let window = delay.map_or(WaitAsked::Unsaid, WaitAsked::Asked);
            by_cause(site, cause, &with_scope, window, &Shown::default())
        }
    }
}

/// The remedy of each cause, for an answer or an error in a stream.
fn by_cause(
    site: &Site,
    cause: Cause,
    with_scope: &Shown,
    window: WaitAsked,
    what: &Shown,
) -> (Shown, Option<Shown>) {
    let address = address_origin(site).variable();
    match cause {
        Cause::NoEngine => (
            rejected_token(site, with_scope),
            token_origin(site).variable(),
        ),
        Cause::EngineOutOfCredit => (out_of_credit(site), address),
        Cause::EngineOverQuota => (over_quota(site, window), address),
        Cause::EngineUnreachable => (unreachable(site, Fix::Health, what, None), address),
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
pub(super) fn unreachable(site: &Site, fix: Fix, what: &Shown, delay: Option<Duration>) -> Shown {
    let host = site.host();
    let address = address_origin(site);
    match fix {
        Fix::Request => shown!(
            "fix the request the predictor sends so that it matches the API of the engine at {}: the engine {}, so the address ({}) reaches it and it is the request that was refused",
            host,
            what,
            address.named()
        ),
        Fix::Path => {
            let path = site
                .concealer()
                .show_engine(site.address().path().as_bytes(), PATH_LIMIT);
            shown!(
                "{}: the engine at {} {} for the path {}",
                address.set_phrase("the address of an endpoint the engine serves"),
                host,
                what,
                path
            )
        }
        Fix::Health => {
            let wait = match delay {
                Some(delay) => shown!(" (the engine asks to wait {})", Shown::seconds(delay)),
                None => Shown::default(),
            };
            shown!(
                "try again later{}: the engine at {} {}; if it keeps failing, check the engine's health with whoever runs it, or {}",
                wait,
                host,
                what,
                address.set_phrase("another engine's address")
            )
        }
        Fix::Reach => shown!(
            "check that the engine at {} is up and reachable from here, or {}",
            site.shown_address(),
            address.set_phrase("the engine's address")
        ),
        Fix::Redirect => {
            address.set_phrase("the address the engine answers at itself, without a redirect")
        }
        Fix::Trust => shown!(
            "{}; if it presents a certificate from a private authority, trust that authority's certificate",
            unreachable(site, Fix::Reach, &Shown::default(), None)
        ),
        Fix::Cap => shown!(
            "raise the answer cap if answers this large are expected, or {}",
            address.set_phrase("an engine that answers within it")
        ),
        Fix::Utf8 => address.set_phrase("an engine that answers JSON as UTF-8 text"),
        Fix::Serializer => shown!(
            "{SERIALIZER_FIX} for the engine at {} (the address, {}, was not contacted)",
            host,
            address.named()
        ),
        Fix::Option => shown!(
            "drop or fix that option where the predictor builds the call, so that the engine at {} can be asked (the address, {}, was not contacted)",
            host,
            address.named()
        ),
        Fix::Async => shown!(
            "in async code use meterwire::HttpTransport and .await its send, or call the blocking transport from a thread that is not the runtime's; the engine at {} was not contacted (its address: {})",
            host,
            address.named()
        ),
        Fix::Proxy => {
            let proxy = proxy(site);
            shown!(
                "check that the proxy {} (given to HttpTransportBuilder::proxy) is up, reachable from here and lets this host through to the engine at {}, or drop the proxy if the engine is reachable without it (the engine's address: {})",
                proxy,
                host,
                address.named()
            )
        }
        Fix::ProxyCredentials => {
            let proxy = proxy(site);
            shown!(
                "give the proxy {} the credentials it asks for, in the URL given to HttpTransportBuilder::proxy (http://user:password@host:port), or use a proxy that lets this host through to the engine at {} (the engine's address: {})",
                proxy,
                host,
                address.named()
            )
        }
        Fix::Gateway => shown!(
            "ask whoever runs the gateway at {} to fix the credentials it sends to its upstream engine: the upstream rejected them, and {} (which the gateway accepted) is not the one to change; or {}",
            host,
            token_origin(site).holding("the token"),
            address.set_phrase("an engine that answers itself")
        ),
    }
}

/// The proxy as a remedy names it: `the proxy <address>`, or `the proxy the
/// transport was given`.
fn proxy(site: &Site) -> Shown {
    site.proxy()
        .cloned()
        .unwrap_or_else(|| Shown::from("the transport was given"))
}

/// The remedy of an empty account: fund it, or use a token whose account
/// has credit.
fn out_of_credit(site: &Site) -> Shown {
    let token = token_origin(site);
    shown!(
        "fund the account billed through {} (add credit to it), or {}",
        token.holding("the token"),
        token.set_phrase("a token whose account has credit")
    )
}

/// The remedy of an engine that asks for an x402 payment with each
/// request: a client that pays, or an engine that bills an account.
fn x402(site: &Site) -> Shown {
    shown!(
        "send through an x402 client that funds each request with a payment (in the PAYMENT-SIGNATURE header, which this transport does not write): funding the account billed through {} does not pay an x402 engine; or {}",
        token_origin(site).holding("the token"),
        address_origin(site).set_phrase("an engine that bills the account behind the token")
    )
}

/// The remedy of a rejected token: one the engine accepts (`with_scope`
/// says which scope it needs, when the engine said).
fn rejected_token(site: &Site, with_scope: &Shown) -> Shown {
    token_origin(site).set_phrase(shown!(
        "a token the engine at {} accepts{}",
        site.host(),
        with_scope
    ))
}

/// The remedy of a ban that ends: wait it out; the token is not what is
/// wrong.
fn ban(site: &Site, delay: Option<Duration>) -> Shown {
    let how_long = match delay {
        Some(delay) => shown!(" ({})", Shown::seconds(delay)),
        None => Shown::default(),
    };
    shown!(
        "wait for the ban to end{} before sending again (a send before then may lengthen it), and slow the sends from this host if it recurs; {} is not what was refused, so keep it, or {}",
        how_long,
        token_origin(site).holding("the token"),
        address_origin(site).set_phrase("another engine's address meanwhile")
    )
}

/// How long a spent window asks to be waited out, as its remedy says it.
#[derive(Clone, Copy, Debug)]
enum WaitAsked {
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
fn over_quota(site: &Site, window: WaitAsked) -> Shown {
    let (how_long, or_wait) = match window {
        WaitAsked::Unsaid => (Shown::default(), ""),
        WaitAsked::Asked(delay) => (shown!(" (it asks for {})", Shown::seconds(delay)), ""),
        WaitAsked::Left(left) => (
            shown!(" ({} left)", Shown::seconds(left)),
            "or give the transport a retry policy whose max_wait covers it; ",
        ),
    };
    shown!(
        "wait for the engine's limit window to pass{} before sending again, {}or {}",
        how_long,
        or_wait,
        token_origin(site).set_phrase("a token with a limit of its own")
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
fn raise(setting: TimerSetting, ms: u64) -> Shown {
    let (timer, method) = match setting {
        TimerSetting::Deadline => ("the deadline", "deadline"),
        TimerSetting::Idle => ("the idle timer", "idle_timeout"),
        TimerSetting::Stream => ("the stream deadline", "stream_deadline"),
    };
    shown!(
        "; the engine had begun to answer, so if it is slow rather than stuck, raise {} (now {} ms) with HttpTransportBuilder::{} or Call::{}",
        timer,
        ms,
        method,
        method
    )
}

/// The remedy of a configuration that cannot send, and the variable it
/// names.
pub(super) fn unsent(at: Unsending<'_>) -> (Shown, Option<Shown>) {
    let (unsent, naming, scope, concealer) = (at.unsent, at.naming, at.scope, at.concealer);
    let host = |address: &Address| shown_host(&address.host(), concealer);
    let name = |name: &str| concealer.show_all(name);
    match unsent {
        Unsent::NoAddress => {
            let chain = naming.address_chain(scope.unshown());
            let variable = name(&naming.engine_variable());
            (
                shown!(
                    "set {} to the engine's address (an https URL){}",
                    variable,
                    scoped(chain.variables(), &variable, concealer)
                ),
                None,
            )
        }
        Unsent::BadAddress(error) => {
            let origin = OriginWords::new(error.origin(), concealer);
            let fix = match error {
                AddressError::Malformed { .. } => {
                    Shown::from("an https URL such as https://engine.example/v1/predict")
                }
                AddressError::Scheme { .. } => Shown::from("the engine's https address"),
                AddressError::UserInfo { host, .. } => shown!(
                    "the address of the engine at {} without the user:password@ part",
                    shown_host(host, concealer)
                ),
            };
            (origin.set_phrase(fix), origin.variable())
        }
        Unsent::Plaintext(address) => {
            let origin = OriginWords::new(address.origin(), concealer);
            (
                origin.set_phrase("the engine's https address"),
                origin.variable(),
            )
        }
        Unsent::NoToken(address) => {
            let chain = naming.token_chain(scope.unshown());
            let variable = name(&naming.token_variable());
            (
                shown!(
                    "set {} to the bearer token the engine at {} issued{}",
                    variable,
                    host(address),
                    scoped(chain.variables(), &variable, concealer)
                ),
                None,
            )
        }
        Unsent::Unusable(_, error) => {
            let origin = OriginWords::new(error.origin(), concealer);
            (
                origin.set_phrase(
                    "the token exactly as the engine issued it: visible ASCII, with no spaces, quotes or line breaks",
                ),
                origin.variable(),
            )
        }
        Unsent::Both { variable, twin, .. } => {
            let variable = name(variable);
            (
                shown!(
                    "set one of the two: {} to the token itself, or {} to the path of a file that holds it, and unset the other",
                    variable,
                    name(twin)
                ),
                Some(variable),
            )
        }
    }
}

/// `, or CHANT_BEHAVIOUR_ENGINE_ACME for this scope alone`, when the
/// chain's first variable is a scope's own, not the one the remedy names.
fn scoped(variables: &[String], named: &Shown, concealer: &Concealer) -> Shown {
    match variables.first().map(|first| concealer.show_all(first)) {
        Some(first) if first != *named => shown!(", or {} for this scope alone", first),
        _ => Shown::default(),
    }
}

/// The remedy of a body that could not be serialized, for a transport
/// that has no address to name.
pub(super) fn unaddressed_unserializable() -> Shown {
    shown!(
        "{SERIALIZER_FIX}; nothing was sent to the engine (its address is read from {} by default)",
        default_engine_variable()
    )
}
