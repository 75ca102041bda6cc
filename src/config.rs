//! Where the address and the token come from, and what is decided before
//! anything is sent.
//!
//! A value given in code (`HttpTransportBuilder::address`,
//! `HttpTransportBuilder::token`) wins over its chain and is checked
//! exactly like a chain's value. Refusals then say "given in code" where
//! they would name a variable, and their remedies name the builder method
//! *and* the chain's variable, so an operator who cannot change the code can
//! still act from the environment.
//!
//! Everything that can be decided without the network is decided here, when
//! the transport is built: a configuration that cannot send becomes the
//! stored refusal every send returns without opening a connection, because a
//! missing token must never cost a request and a token with a line break
//! must never reach a socket.

use reqwest::header::HeaderValue;
use secrecy::SecretString;

use crate::address::Address;
use crate::conceal::Concealer;
use crate::env::Env;
use crate::naming::Naming;
use crate::origin::Origin;
use crate::refusal::Refusal;
use crate::refusal::Site;
use crate::refusal::before_send;
use crate::token::{Token, UnusableToken};

/// What the builder was given in code: the address, the token, and the
/// proxy every request goes through.
pub(crate) struct InCode {
    pub(crate) address: Option<String>,
    pub(crate) token: Option<SecretString>,
    pub(crate) proxy: Option<String>,
}

/// A transport's settled configuration: where every send goes and with
/// which header, or the refusal every send returns; and the concealer built
/// from the token and the snapshot.
pub(crate) struct Settled {
    pub(crate) target: Result<Target, Refusal>,
    pub(crate) concealer: Concealer,
}

/// Everything a send needs that the configuration decided: where it goes,
/// and the header that carries the token.
pub(crate) struct Target {
    pub(crate) site: Site,
    pub(crate) authorization: HeaderValue,
}

/// What the token chain (or the code) came to.
enum TokenOutcome {
    Found(Origin, HeaderValue),
    Missing,
    Unusable(UnusableToken),
}

/// Resolves the address and the token (code first, then the chains) and
/// decides whether a send can happen at all. Address problems come first,
/// since a token refusal names the address.
// A refusal is as large as what it says; it is built once per transport.
#[allow(clippy::result_large_err)]
pub(crate) fn settle(
    naming: &Naming,
    scope: &str,
    env: &Env,
    in_code: InCode,
    allow_plaintext: bool,
) -> Settled {
    let (token, concealer) = token_and_concealer(naming, scope, env, in_code.token);
    let target = address(
        naming,
        scope,
        env,
        in_code.address,
        allow_plaintext,
        &concealer,
    )
    .and_then(|address| match token {
        TokenOutcome::Found(origin, authorization) => Ok(Target {
            site: Site::new(scope, address, origin, concealer.clone())
                .through(in_code.proxy.as_deref()),
            authorization,
        }),
        TokenOutcome::Missing => Err(before_send::no_token(naming, scope, &address, &concealer)),
        TokenOutcome::Unusable(unusable) => Err(before_send::unusable_token(
            scope, &address, &unusable, &concealer,
        )),
    });
    Settled { target, concealer }
}

/// The token's outcome, with its header and the concealer built from it
/// when there is one; the concealer conceals the snapshot's
/// credential-named values either way.
fn token_and_concealer(
    naming: &Naming,
    scope: &str,
    env: &Env,
    in_code: Option<SecretString>,
) -> (TokenOutcome, Concealer) {
    let token = match in_code {
        Some(secret) => Token::from_secret(
            &secret,
            Origin::Code {
                method: "token",
                variable: naming.token_variable(),
            },
        )
        .map(Some),
        None => naming.token_chain(scope).resolve(env),
    };
    match token {
        Ok(Some(token)) => {
            let (authorization, concealer) = token.arm(env);
            (
                TokenOutcome::Found(token.origin().clone(), authorization),
                concealer,
            )
        }
        Ok(None) => (TokenOutcome::Missing, Concealer::with_env([], env)),
        Err(unusable) => (
            TokenOutcome::Unusable(unusable),
            Concealer::with_env([], env),
        ),
    }
}

/// The engine's address, from code or its chain, or the refusal that says
/// why there is none a token may be sent to.
// A refusal is as large as what it says; it is built once per transport.
#[allow(clippy::result_large_err)]
fn address(
    naming: &Naming,
    scope: &str,
    env: &Env,
    in_code: Option<String>,
    allow_plaintext: bool,
    concealer: &Concealer,
) -> Result<Address, Refusal> {
    let (value, origin) = match in_code {
        Some(value) => (
            value,
            Origin::Code {
                method: "address",
                variable: naming.engine_variable(),
            },
        ),
        None => {
            let resolved = naming
                .address_chain(scope)
                .resolve(env)
                .ok_or_else(|| before_send::no_address(naming, scope, concealer))?;
            let origin = Origin::Variable(resolved.source().to_owned());
            (resolved.value().to_owned(), origin)
        }
    };
    let address = Address::parse(&value, origin)
        .map_err(|error| before_send::bad_address(scope, &error, concealer))?;
    if !address.is_https() && !address.is_loopback() && !allow_plaintext {
        return Err(before_send::plaintext(scope, &address, concealer));
    }
    Ok(address)
}

/// The concealer a builder's configuration would have: the token given in
/// code, and the snapshot's credential-named values; for showing what the
/// caller gave (a scope, a header name) before the transport is built.
pub(crate) fn concealer_for(in_code: Option<&SecretString>, env: &Env) -> Concealer {
    let token = in_code.and_then(|secret| {
        let origin = Origin::Code {
            method: "token",
            variable: String::new(),
        };
        Token::from_secret(secret, origin).ok()
    });
    match token {
        Some(token) => token.arm(env).1,
        None => Concealer::with_env([], env),
    }
}
