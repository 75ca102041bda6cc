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
//! the transport is built: a configuration that cannot send is an
//! [`Unsent`], which the transport turns into the stored refusal every send
//! returns without opening a connection, because a missing token must never
//! cost a request and a token with a line break must never reach a socket.
//! The configuration says what is wrong; the words are the refusal's.
//!
//! The pieces of a configuration live beside it: [`env`] (the environment
//! a chain is read from), [`naming`] (which variables a chain reads),
//! [`origin`] (where a value came from), [`address`] (the engine's address,
//! checked and shown without its userinfo), [`token`] (the bearer token,
//! given or kept from a file) and [`site`] (where a send goes, settled).

pub(crate) mod address;
pub(crate) mod env;
pub(crate) mod naming;
pub(crate) mod origin;
pub(crate) mod site;
pub(crate) mod token;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderValue;
use secrecy::SecretString;

use crate::conceal::Concealer;
use crate::config::address::{Address, AddressError};
use crate::config::env::Env;
use crate::config::naming::Naming;
use crate::config::naming::{TokenChainError, TokenSpec};
use crate::config::origin::Origin;
use crate::config::site::Site;
use crate::config::token::file::TokenFile;
use crate::config::token::{Token, UnusableToken};

/// What the builder was given in code: the address, the token (or a file
/// that holds it), and the proxy every request goes through.
pub(crate) struct InCode {
    pub(crate) address: Option<String>,
    pub(crate) token: Option<InCodeToken>,
    pub(crate) proxy: Option<String>,
    /// How often a token file is read again.
    pub(crate) file_interval: Duration,
}

/// A token given in code: its value, or a file that holds it.
pub(crate) enum InCodeToken {
    Value(SecretString),
    File(PathBuf),
}

/// A transport's settled configuration: where every send goes and with
/// which header, or what keeps it from sending; and the concealer built
/// from the token and the snapshot.
pub(crate) struct Settled {
    pub(crate) target: Result<Target, Box<Unsent>>,
    pub(crate) concealer: Concealer,
}

/// What keeps a configuration from sending anything, found before any
/// connection. Address problems come first, since a token's problem names
/// the address.
#[derive(Clone, Debug)]
pub(crate) enum Unsent {
    /// No address in code, and every variable of the address chain unset
    /// or blank.
    NoAddress,
    /// The address (from code or its chain) is not an engine's address.
    BadAddress(AddressError),
    /// Plain `http` to a host that is not loopback, without the opt-in.
    Plaintext(Address),
    /// An address, but no token in code and none in the token chain.
    NoToken(Address),
    /// The token (from code or its chain) cannot be a header value.
    Unusable(Address, UnusableToken),
    /// A token variable and its `_FILE` twin are both set.
    Both {
        address: Address,
        variable: String,
        twin: String,
    },
}

/// Everything a send needs that the configuration decided: where it goes,
/// and the token it carries.
pub(crate) struct Target {
    pub(crate) site: Site,
    pub(crate) token: TokenSource,
}

/// Where a send's `authorization` header comes from.
pub(crate) enum TokenSource {
    /// A token given once: in code, or by a variable.
    Fixed(HeaderValue),
    /// A file that rotates, read again as it may have changed.
    File(Arc<TokenFile>),
}

impl TokenSource {
    /// The file's path, for a token from one.
    pub(crate) fn file(&self) -> Option<&TokenFile> {
        match self {
            TokenSource::Fixed(_) => None,
            TokenSource::File(file) => Some(file),
        }
    }
}

/// What the token chain (or the code) came to.
enum TokenOutcome {
    Found(Origin, TokenSource),
    Missing,
    Unusable(UnusableToken),
    Both { variable: String, twin: String },
}

/// Resolves the address and the token (code first, then the chains) and
/// decides whether a send can happen at all. Address problems come first,
/// since a token refusal names the address.
pub(crate) fn settle(
    naming: &Naming,
    scope: &str,
    env: &Env,
    in_code: InCode,
    allow_plaintext: bool,
) -> Settled {
    let (token, concealer) =
        token_and_concealer(naming, scope, env, in_code.token, in_code.file_interval);
    let target = address(naming, scope, env, in_code.address, allow_plaintext).and_then(
        |address| match token {
            TokenOutcome::Found(origin, token) => Ok(Target {
                site: Site::new(scope, address, origin, concealer.clone())
                    .through(in_code.proxy.as_deref()),
                token,
            }),
            TokenOutcome::Missing => Err(Box::new(Unsent::NoToken(address))),
            TokenOutcome::Unusable(unusable) => Err(Box::new(Unsent::Unusable(address, unusable))),
            TokenOutcome::Both { variable, twin } => Err(Box::new(Unsent::Both {
                address,
                variable,
                twin,
            })),
        },
    );
    Settled { target, concealer }
}

/// The token's outcome, with its source and the concealer that knows it
/// when there is one; the concealer conceals the snapshot's
/// credential-named values either way (a token file's content joins it
/// when it is read).
fn token_and_concealer(
    naming: &Naming,
    scope: &str,
    env: &Env,
    in_code: Option<InCodeToken>,
    file_interval: Duration,
) -> (TokenOutcome, Concealer) {
    let twin = format!("{}_FILE", naming.token_variable());
    let spec = match in_code {
        Some(InCodeToken::Value(secret)) => Token::from_secret(
            &secret,
            Origin::Code {
                method: "token",
                variable: naming.token_variable(),
            },
        )
        .map(|token| Some(TokenSpec::Value(token)))
        .map_err(TokenChainError::Unusable),
        Some(InCodeToken::File(path)) => {
            let shown = path.display().to_string();
            Ok(Some(TokenSpec::File {
                path: shown.clone(),
                origin: Origin::File {
                    path: shown,
                    variable: None,
                    twin,
                },
            }))
        }
        None => naming.token_chain(scope).resolve(env),
    };
    let without_token = || Concealer::with_env([], env);
    match spec {
        Ok(Some(TokenSpec::Value(token))) => {
            let (authorization, concealer) = token.arm(env);
            let origin = token.origin().clone();
            (
                TokenOutcome::Found(origin, TokenSource::Fixed(authorization)),
                concealer,
            )
        }
        Ok(Some(TokenSpec::File { path, origin })) => {
            let file = TokenFile::new(PathBuf::from(path), origin.clone(), file_interval);
            (
                TokenOutcome::Found(origin, TokenSource::File(Arc::new(file))),
                without_token(),
            )
        }
        Ok(None) => (TokenOutcome::Missing, without_token()),
        Err(TokenChainError::Unusable(unusable)) => {
            (TokenOutcome::Unusable(unusable), without_token())
        }
        Err(TokenChainError::Both { variable, twin }) => {
            (TokenOutcome::Both { variable, twin }, without_token())
        }
    }
}

/// The engine's address, from code or its chain, or why there is none a
/// token may be sent to.
fn address(
    naming: &Naming,
    scope: &str,
    env: &Env,
    in_code: Option<String>,
    allow_plaintext: bool,
) -> Result<Address, Box<Unsent>> {
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
                .ok_or_else(|| Box::new(Unsent::NoAddress))?;
            let origin = Origin::Variable(resolved.source().to_owned());
            (resolved.value().to_owned(), origin)
        }
    };
    let address =
        Address::parse(&value, origin).map_err(|error| Box::new(Unsent::BadAddress(error)))?;
    if !address.is_https() && !address.is_loopback() && !allow_plaintext {
        return Err(Box::new(Unsent::Plaintext(address)));
    }
    Ok(address)
}

/// The concealer a builder's configuration would have: the token given in
/// code, and the snapshot's credential-named values; for showing what the
/// caller gave (a scope, a header name) before the transport is built.
pub(crate) fn concealer_for(in_code: Option<&InCodeToken>, env: &Env) -> Concealer {
    let in_code = match in_code {
        Some(InCodeToken::Value(secret)) => Some(secret),
        _ => None,
    };
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
