//! Where the address and the token come from, and what is decided before
//! anything is sent.
//!
//! A value given in code ([`HttpTransportBuilder::address`],
//! [`HttpTransportBuilder::token`]) wins over its chain and is checked
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
//!
//! [`HttpTransportBuilder::address`]: crate::HttpTransportBuilder::address
//! [`HttpTransportBuilder::token`]: crate::HttpTransportBuilder::token

use reqwest::header::{HeaderName, HeaderValue};
use secrecy::SecretString;

use crate::address::Address;
use crate::refusal::Site;
use crate::refusal::before_send;
use crate::token::{Token, UnusableToken};
use crate::{Concealer, Env, Naming, Refusal};

/// Where a value came from: a variable of its chain, or a builder method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Read from this variable.
    Variable(String),
    /// Given in code to `HttpTransportBuilder::<method>`; `variable` is the
    /// chain's variable an operator would set instead.
    Code {
        method: &'static str,
        variable: String,
    },
}

impl Origin {
    /// The variable a refusal traces back to (the report's `source`): none
    /// for a value given in code.
    pub(crate) fn variable(&self) -> Option<&str> {
        match self {
            Origin::Variable(name) => Some(name),
            Origin::Code { .. } => None,
        }
    }

    /// `from CHANT_BEHAVIOUR_ENGINE`, or `given in code`.
    pub(crate) fn provenance(&self) -> String {
        match self {
            Origin::Variable(name) => format!("from {name}"),
            Origin::Code { .. } => "given in code".to_owned(),
        }
    }

    /// `the token held in CHANT_BEHAVIOUR_TOKEN`, or `the token given in
    /// code`, for `noun` = `the token`.
    pub(crate) fn holding(&self, noun: &str) -> String {
        match self {
            Origin::Variable(name) => format!("{noun} held in {name}"),
            Origin::Code { .. } => format!("{noun} given in code"),
        }
    }

    /// Where an operator looks: the variable, or the builder method with the
    /// variable it stands in for.
    pub(crate) fn named(&self) -> String {
        match self {
            Origin::Variable(name) => name.clone(),
            Origin::Code { method, variable } => {
                format!("HttpTransportBuilder::{method} (given in code, in place of {variable})")
            }
        }
    }

    /// The remedy's instruction to put `what` where this value comes from.
    pub(crate) fn set(&self, what: &str) -> String {
        match self {
            Origin::Variable(name) => format!("set {name} to {what}"),
            Origin::Code { method, variable } => format!(
                "pass {what} to HttpTransportBuilder::{method} (or set {variable} to it and pass none in code)"
            ),
        }
    }
}

/// What the builder was given for the address and the token.
pub(crate) struct Given {
    pub(crate) address: Option<String>,
    pub(crate) token: Option<SecretString>,
}

/// A transport's settled configuration: where every send goes and with
/// which header, or the refusal every send returns.
pub(crate) struct Plan {
    pub(crate) armed: Result<Armed, Refusal>,
    pub(crate) concealer: Concealer,
}

/// Everything a send needs that the environment decided.
pub(crate) struct Armed {
    pub(crate) site: Site,
    pub(crate) authorization: HeaderValue,
}

enum TokenOutcome {
    Armed(Origin, HeaderValue),
    Missing,
    Unusable(UnusableToken),
}

/// Resolves the address and the token (code first, then the chains),
/// arms the token, and decides whether a send can happen at all. Address
/// problems come first, since a token refusal names the address.
pub(crate) fn plan(
    naming: &Naming,
    scope: &str,
    env: &Env,
    given: Given,
    allow_plaintext: bool,
) -> Plan {
    let (token, concealer) = arm(naming, scope, env, given.token);
    let armed = decide(
        naming,
        scope,
        env,
        given.address,
        allow_plaintext,
        token,
        &concealer,
    );
    Plan { armed, concealer }
}

/// The token's outcome, with the token armed (its header and the concealer
/// built from it) when there is one; the concealer conceals the snapshot's
/// credential-named values either way.
fn arm(
    naming: &Naming,
    scope: &str,
    env: &Env,
    given: Option<SecretString>,
) -> (TokenOutcome, Concealer) {
    let token = match given {
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
                TokenOutcome::Armed(token.origin().clone(), authorization),
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

// A refusal is as large as what it says; it is built once per transport.
#[allow(clippy::result_large_err)]
fn decide(
    naming: &Naming,
    scope: &str,
    env: &Env,
    given: Option<String>,
    allow_plaintext: bool,
    token: TokenOutcome,
    concealer: &Concealer,
) -> Result<Armed, Refusal> {
    let (value, origin) = match given {
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
    match token {
        TokenOutcome::Armed(origin, authorization) => Ok(Armed {
            site: Site::new(scope, address, origin, concealer.clone()),
            authorization,
        }),
        TokenOutcome::Missing => Err(before_send::no_token(naming, scope, &address, concealer)),
        TokenOutcome::Unusable(unusable) => Err(before_send::unusable_token(
            scope, &address, &unusable, concealer,
        )),
    }
}

/// Names a caller may not set with `header()`: the credential and framing
/// headers the transport owns, and the idempotency key, which has a method
/// of its own.
const RESERVED_HEADERS: [&str; 11] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "idempotency-key",
    "keep-alive",
];

/// Why a header given with `header()` cannot be sent. The text names the
/// header (concealed), never its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderProblem {
    pub(crate) name: String,
    pub(crate) why: &'static str,
}

impl HeaderProblem {
    /// `the header "x-trace" holds a secret …`.
    pub(crate) fn describe(&self) -> String {
        format!("the header {:?} {}", self.name, self.why)
    }
}

/// Checks one caller header: a token name, a header-safe value, not one the
/// transport owns, and no secret the concealer knows in its value.
pub(crate) fn check_header(
    name: &str,
    value: &str,
    concealer: &Concealer,
) -> Result<(HeaderName, HeaderValue), HeaderProblem> {
    let shown = crate::text::bound(&crate::text::tame(&concealer.conceal(name)), 64).to_owned();
    let problem = |why| HeaderProblem {
        name: shown.clone(),
        why,
    };
    let header_name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| problem("is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"))?;
    if RESERVED_HEADERS.contains(&header_name.as_str()) {
        return Err(problem(
            "is one the transport sets itself (authorization, cookie, host, framing, idempotency-key): use the transport's own option for it",
        ));
    }
    if concealer.conceal(name) != name {
        return Err(problem("names a secret"));
    }
    let header_value = HeaderValue::from_str(value).map_err(|_| {
        problem("has a value that is not header-safe (visible ASCII, spaces and tabs only, no line breaks)")
    })?;
    if concealer.conceal(value) != value {
        return Err(problem(
            "has a value in which the concealer finds a secret (the token or a credential variable's value); secrets go only in the token",
        ));
    }
    Ok((header_name, header_value))
}

/// The `Idempotency-Key` header for `key`, written as the IETF draft's
/// quoted string: `"order-7"`.
pub(crate) fn idempotency_header(
    key: &str,
    concealer: &Concealer,
) -> Result<HeaderValue, HeaderProblem> {
    let problem = |why| HeaderProblem {
        name: "idempotency-key".to_owned(),
        why,
    };
    let safe = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
    if !safe {
        return Err(problem(
            "has a key that is empty or not visible ASCII without quotes and backslashes",
        ));
    }
    if concealer.conceal(key) != key {
        return Err(problem("has a key in which the concealer finds a secret"));
    }
    HeaderValue::from_str(&format!("\"{key}\""))
        .map_err(|_| problem("has a key that is not header-safe"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concealer() -> Concealer {
        Concealer::new(["mw-secret-0123456789"])
    }

    #[test]
    fn a_plain_header_is_accepted() {
        let (name, value) = check_header("Engine-Version", "2025-01-01", &concealer()).unwrap();
        assert_eq!(name.as_str(), "engine-version");
        assert_eq!(value, "2025-01-01");
    }

    #[test]
    fn reserved_names_are_refused_whatever_their_case() {
        for name in RESERVED_HEADERS {
            let upper = name.to_ascii_uppercase();
            let problem = check_header(&upper, "x", &concealer()).unwrap_err();
            assert!(
                problem.describe().contains("transport sets itself"),
                "{name}"
            );
        }
    }

    #[test]
    fn bad_names_and_values_are_refused_without_the_value() {
        let problem = check_header("x trace", "v", &concealer()).unwrap_err();
        assert!(problem.describe().contains("is not a header name"));
        let problem = check_header("x-trace", "a\r\nx-evil: 1", &concealer()).unwrap_err();
        assert!(problem.describe().contains("not header-safe"));
        assert!(!problem.describe().contains("evil"));
    }

    #[test]
    fn a_value_holding_a_secret_is_refused_and_not_shown() {
        for value in [
            "mw-secret-0123456789",
            "Bearer bXctc2VjcmV0LTAxMjM0NTY3ODk=",
        ] {
            let problem = check_header("x-debug", value, &concealer()).unwrap_err();
            assert!(problem.describe().contains("finds a secret"), "{value}");
            assert!(!problem.describe().contains("mw-secret"));
        }
        let problem = check_header("mw-secret-0123456789", "v", &concealer()).unwrap_err();
        assert!(!problem.describe().contains("mw-secret"));
    }

    #[test]
    fn an_idempotency_key_is_a_quoted_string() {
        let value = idempotency_header("order-7", &concealer()).unwrap();
        assert_eq!(value, "\"order-7\"");
        assert!(idempotency_header("", &concealer()).is_err());
        assert!(idempotency_header("a\"b", &concealer()).is_err());
        assert!(idempotency_header("mw-secret-0123456789", &concealer()).is_err());
    }

    #[test]
    fn a_code_origin_names_the_method_and_the_variable() {
        let origin = Origin::Code {
            method: "token",
            variable: "CHANT_BEHAVIOUR_TOKEN".to_owned(),
        };
        assert_eq!(origin.variable(), None);
        assert_eq!(origin.holding("the token"), "the token given in code");
        let set = origin.set("a token the engine accepts");
        assert!(set.contains("HttpTransportBuilder::token"));
        assert!(set.contains("CHANT_BEHAVIOUR_TOKEN"));
    }
}
