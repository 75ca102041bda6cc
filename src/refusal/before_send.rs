//! The refusals decided when the transport is built, from the configuration
//! alone: no address, a forbidden address, plain `http` to a remote host,
//! no token, a token that cannot be a header value.
//!
//! Each costs no request: a missing token must never reach the engine, and
//! a token with a line break must never reach a socket.

use super::site::{Site, scope_phrase, seal, shown_address, shown_host};
use crate::conceal::Concealer;
use crate::config::address::{Address, AddressError};
use crate::config::naming::Naming;
use crate::config::token::UnusableToken;
use crate::config::token::content::FileProblem;
use crate::refusal::{Cause, Refusal};

/// No address given in code, and no variable of the address chain holds
/// one.
pub(crate) fn no_address(naming: &Naming, scope: &str, concealer: &Concealer) -> Refusal {
    let chain = naming.address_chain(scope);
    seal(
        concealer,
        Refusal::new(
            Cause::NoEngine,
            format!(
                "{}: no engine address is set; none was given in code and every variable of the address chain is unset or blank: {}",
                scope_phrase(scope, concealer),
                chain.variables().join(", ")
            ),
            format!(
                "set {} to the engine's address (an https URL){}",
                naming.engine_variable(),
                scoped(chain.variables(), &naming.engine_variable())
            ),
            None,
        ),
    )
}

/// The address (from code or its chain) is not an engine's address.
pub(crate) fn bad_address(scope: &str, error: &AddressError, concealer: &Concealer) -> Refusal {
    let origin = error.origin();
    let shown = shown_address(error.shown(), concealer);
    let (what, fix) = match error {
        AddressError::Malformed { why, .. } => (
            format!("is not a URL ({why})"),
            "an https URL such as https://engine.example/v1/predict".to_owned(),
        ),
        AddressError::Scheme { scheme, .. } => (
            format!("uses the scheme {scheme:?}; only http and https reach an engine"),
            "the engine's https address".to_owned(),
        ),
        AddressError::UserInfo { host, .. } => (
            "carries userinfo (user:password@), which would put a second credential on the wire next to the token".to_owned(),
            format!(
                "the address of the engine at {} without the user:password@ part",
                shown_host(host, concealer)
            ),
        ),
    };
    let shown = if shown.is_empty() {
        String::new()
    } else {
        format!(" {shown}")
    };
    seal(
        concealer,
        Refusal::new(
            Cause::EngineUnreachable,
            format!(
                "{}: the address{shown} ({}) {what}; nothing was sent",
                scope_phrase(scope, concealer),
                origin.provenance()
            ),
            origin.set_phrase(&fix),
            origin.variable().map(str::to_owned),
        ),
    )
}

/// The engine at an address that parsed, as a refusal of it before any
/// send names it: the scope, the address shown and where it came from, and
/// the engine's host.
struct AtEngine<'a> {
    scope: &'a str,
    address: &'a Address,
    concealer: &'a Concealer,
}

impl<'a> AtEngine<'a> {
    fn new(scope: &'a str, address: &'a Address, concealer: &'a Concealer) -> AtEngine<'a> {
        AtEngine {
            scope,
            address,
            concealer,
        }
    }

    /// `scope "acme": engine at https://engine.example/v1/predict (from
    /// CHANT_BEHAVIOUR_ENGINE)`, with `noun` for `engine at`.
    fn subject(&self, noun: &str) -> String {
        format!(
            "{}: {noun} {} ({})",
            scope_phrase(self.scope, self.concealer),
            shown_address(&self.address.to_string(), self.concealer),
            self.address.origin().provenance()
        )
    }

    /// The engine's host, shown.
    fn host(&self) -> String {
        shown_host(&self.address.host(), self.concealer)
    }

    /// The refusal, naming the engine, sealed.
    fn refusal(
        &self,
        cause: Cause,
        reason: String,
        remedy: String,
        variable: Option<String>,
    ) -> Refusal {
        let refusal = Refusal::new(cause, reason, remedy, variable).with_engine(self.host());
        seal(self.concealer, refusal)
    }
}

/// Plain `http` to a host that is not loopback, without the opt-in.
pub(crate) fn plaintext(scope: &str, address: &Address, concealer: &Concealer) -> Refusal {
    let engine = AtEngine::new(scope, address, concealer);
    let origin = address.origin();
    engine.refusal(
        Cause::EngineUnreachable,
        format!(
            "{} is plain http to {}, which is not a loopback host; a bearer token is sent only over TLS (RFC 6750 §5.3), so nothing was sent",
            engine.subject("the address"),
            engine.host()
        ),
        origin.set_phrase("the engine's https address"),
        origin.variable().map(str::to_owned),
    )
}

/// An address, but no token given in code and no variable of the token
/// chain holds one.
pub(crate) fn no_token(
    naming: &Naming,
    scope: &str,
    address: &Address,
    concealer: &Concealer,
) -> Refusal {
    let chain = naming.token_chain(scope);
    let engine = AtEngine::new(scope, address, concealer);
    engine.refusal(
        Cause::NoEngine,
        format!(
            "{} has no bearer token; none was given in code and every variable of the token chain is unset or blank: {}; nothing was sent",
            engine.subject("engine at"),
            chain.variables().join(", ")
        ),
        format!(
            "set {} to the bearer token the engine at {} issued{}",
            naming.token_variable(),
            engine.host(),
            scoped(chain.variables(), &naming.token_variable())
        ),
        None,
    )
}

/// The token (from code or its chain) cannot be a header value.
pub(crate) fn unusable_token(
    scope: &str,
    address: &Address,
    error: &UnusableToken,
    concealer: &Concealer,
) -> Refusal {
    let engine = AtEngine::new(scope, address, concealer);
    let origin = error.origin();
    engine.refusal(
        Cause::NoEngine,
        format!(
            "{}: {} {}, so it cannot be sent as a header value; nothing was sent",
            engine.subject("engine at"),
            origin.holding("the token"),
            error.problem()
        ),
        origin.set_phrase(
            "the token exactly as the engine issued it: visible ASCII, with no spaces, quotes or line breaks",
        ),
        origin.variable().map(str::to_owned),
    )
}

/// `, or CHANT_BEHAVIOUR_ENGINE_ACME for this scope alone`, when the
/// chain's first variable is a scope's own, not the one the remedy names.
fn scoped(variables: &[String], named: &str) -> String {
    match variables.first() {
        Some(first) if first != named => format!(", or {first} for this scope alone"),
        _ => String::new(),
    }
}

/// A token variable and its `_FILE` twin are both set: which one holds the
/// token is a guess the transport does not make.
pub(crate) fn both_token_and_file(
    scope: &str,
    address: &Address,
    variable: &str,
    twin: &str,
    concealer: &Concealer,
) -> Refusal {
    let engine = AtEngine::new(scope, address, concealer);
    engine.refusal(
        Cause::NoEngine,
        format!(
            "{}: both {variable} and {twin} are set, so which one holds the token is unknown; nothing was sent",
            engine.subject("engine at"),
        ),
        format!(
            "set one of the two: {variable} to the token itself, or {twin} to the path of a file that holds it, and unset the other"
        ),
        Some(variable.to_owned()),
    )
}

/// No good token was ever read from the token file: what was wrong with it
/// (never its content), and which file to fix.
pub(crate) fn unreadable_token_file(site: &Site, path: &str, problem: &FileProblem) -> Refusal {
    let origin = site.token();
    site.seal(Refusal::new(
        Cause::NoEngine,
        format!(
            "{}: the token file {path} {}, and no token was read from it before; nothing was sent",
            site.subject(),
            problem.describe()
        ),
        origin.set_phrase(&format!(
            "the bearer token the engine at {} issued",
            site.host()
        )),
        site.token_variable(),
    ))
}
