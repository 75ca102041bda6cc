//! The two chains of variables: where the address comes from, and where the
//! token comes from.
//!
//! An address and a token are different kinds of value with different
//! exposure rules: an address is printed in every refusal, a token never is.
//! If one variable could feed both, a token set in the wrong place would be
//! printed as an address. So the chains are two types that share no variable,
//! a naming that would make them overlap is rejected when it is built, and
//! [`AddressChain`] can only ever yield an address while [`TokenChain`] can
//! only ever yield a [`Token`].
//!
//! Each chain is read most specific first (the scope's own variable, then the
//! prefix's, then the stem's); the first non-blank value wins, and the name of
//! the variable that held it is kept as its `source` so that every refusal can
//! say which variable to fix.

use std::fmt;

use crate::config::env::Env;
use crate::config::origin::Origin;
use crate::config::token::{Token, UnusableToken};

/// How the variables are named: a prefix and a stem.
///
/// With prefix `CHANT_BEHAVIOUR`, stem `BEHAVIOUR` and scope `acme`, the
/// address chain is `CHANT_BEHAVIOUR_ENGINE_ACME`, `CHANT_BEHAVIOUR_ENGINE`,
/// `BEHAVIOUR_ENGINE`, and the token chain is `CHANT_BEHAVIOUR_TOKEN_ACME`,
/// `CHANT_BEHAVIOUR_TOKEN`, `BEHAVIOUR_TOKEN`.
///
/// ```
/// use meterwire::Naming;
///
/// let naming = Naming::new("ACME_ENGINES", "ENGINES")?;
/// assert_eq!(naming.engine_variable(), "ACME_ENGINES_ENGINE");
/// assert_eq!(naming.token_variable(), "ACME_ENGINES_TOKEN");
/// // A stem that starts with the prefix's engine variable would let a scope
/// // named `TOKEN` read one variable as both an address and a token.
/// assert!(Naming::new("ACME", "ACME_ENGINE").is_err());
/// # Ok::<(), meterwire::NamingError>(())
/// ```
///
/// Or two explicit lists, for an engine whose vendor named the variables
/// already:
///
/// ```
/// use meterwire::{Env, HttpTransport, Naming};
///
/// let naming = Naming::from_variables(["OPENAI_BASE_URL"], ["OPENAI_API_KEY"])?;
/// let transport = HttpTransport::builder("acme")
///     .naming(naming)
///     .env(Env::from_pairs([
///         ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/chat/completions"),
///         ("OPENAI_API_KEY", "sk-test-0123456789abcdef"),
///     ]))
///     .build()
///     .expect("builds");
/// assert!(transport.refusal().is_none());
/// // One variable read as both an address and a token is refused.
/// assert!(Naming::from_variables(["SHARED_VALUE"], ["SHARED_VALUE"]).is_err());
/// # Ok::<(), meterwire::NamingError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Naming {
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// `PREFIX_ENGINE_SCOPE`, `PREFIX_ENGINE`, `STEM_ENGINE`, and the same
    /// with `TOKEN`.
    Pattern { prefix: String, stem: String },
    /// Two lists, most specific first, read whatever the scope.
    Lists {
        address: Vec<String>,
        token: Vec<String>,
    },
}

/// A prefix or stem that cannot name variables, or a naming whose two chains
/// could share a variable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NamingError {
    /// The prefix or stem is not an upper-case variable name.
    #[error(
        "the {part} {value:?} is not a variable name: use upper-case letters, digits and single underscores, starting with a letter (for example CHANT_BEHAVIOUR)"
    )]
    NotAName {
        /// `"prefix"`, `"stem"`, or which list given to
        /// [`Naming::from_variables`] held it.
        part: &'static str,
        /// The rejected text, bounded to 64 characters; for a list given
        /// to [`Naming::from_variables`], which entry of it was rejected
        /// (`entry 2 of 3`), never its text, which may be a value read by
        /// mistake: an address with its credentials, or a key.
        value: String,
    },
    /// The two chains could share a variable.
    #[error(
        "the naming prefix {prefix} with stem {stem} would let one variable be read as both an address and a token: choose a stem that does not start with {prefix}_ENGINE or {prefix}_TOKEN and differs from the prefix"
    )]
    Overlap {
        /// The prefix.
        prefix: String,
        /// The stem.
        stem: String,
    },
    /// A list given to [`Naming::from_variables`] is empty.
    #[error(
        "the {chain} chain names no variable: give at least one, most specific first (for example OPENAI_BASE_URL for the address, OPENAI_API_KEY for the token)"
    )]
    EmptyChain {
        /// `"address"` or `"token"`.
        chain: &'static str,
    },
    /// A variable is in both lists given to [`Naming::from_variables`].
    #[error(
        "the variable {variable} is in both the address chain and the token chain, so a token set there would be printed as an address: give each chain variables of its own"
    )]
    SharedVariable {
        /// The variable in both.
        variable: String,
    },
    /// The scope folds to nothing (it has no letter or digit).
    #[error(
        "the scope {scope:?} has no letter or digit, so it cannot name a variable: name the predictor, for example \"acme\""
    )]
    EmptyScope {
        /// The rejected scope, bounded to 64 characters.
        scope: String,
    },
}

impl Default for Naming {
    /// The naming of the deployment this crate was first written for:
    /// prefix `CHANT_BEHAVIOUR`, stem `BEHAVIOUR`.
    fn default() -> Naming {
        Naming {
            kind: Kind::Pattern {
                prefix: "CHANT_BEHAVIOUR".to_owned(),
                stem: "BEHAVIOUR".to_owned(),
            },
        }
    }
}

impl Naming {
    /// A naming from a prefix and a stem, both upper-case variable names.
    ///
    /// Rejects a naming whose chains could share a variable for some scope:
    /// that happens exactly when the stem equals the prefix, or starts with
    /// `PREFIX_ENGINE` or `PREFIX_TOKEN` (then a scope can complete the
    /// prefix's scoped variable of one chain into the stem's variable of the
    /// other).
    pub fn new(prefix: &str, stem: &str) -> Result<Naming, NamingError> {
        for (part, value) in [("prefix", prefix), ("stem", stem)] {
            if !is_variable_name(value) {
                return Err(NamingError::NotAName {
                    part,
                    value: crate::text::bound(value, 64).to_owned(),
                });
            }
        }
        let stem_ = format!("{stem}_");
        let overlaps = prefix == stem
            || stem_.starts_with(&format!("{prefix}_ENGINE_"))
            || stem_.starts_with(&format!("{prefix}_TOKEN_"));
        if overlaps {
            return Err(NamingError::Overlap {
                prefix: prefix.to_owned(),
                stem: stem.to_owned(),
            });
        }
        Ok(Naming {
            kind: Kind::Pattern {
                prefix: prefix.to_owned(),
                stem: stem.to_owned(),
            },
        })
    }

    /// A naming from two explicit lists of variables, each most specific
    /// first, read whatever the scope: for an engine whose vendor named them
    /// (`OPENAI_BASE_URL`, `OPENAI_API_KEY`). Each list must name at least
    /// one variable, every name must be an upper-case variable name, and no
    /// variable may be in both, since a token set there would be printed as
    /// an address.
    pub fn from_variables<A, T>(address_chain: A, token_chain: T) -> Result<Naming, NamingError>
    where
        A: IntoIterator,
        A::Item: Into<String>,
        T: IntoIterator,
        T::Item: Into<String>,
    {
        let address: Vec<String> = address_chain.into_iter().map(Into::into).collect();
        let token: Vec<String> = token_chain.into_iter().map(Into::into).collect();
        for (chain, names) in [("address", &address), ("token", &token)] {
            if names.is_empty() {
                return Err(NamingError::EmptyChain { chain });
            }
            if let Some(bad) = names.iter().position(|name| !is_variable_name(name)) {
                return Err(NamingError::NotAName {
                    part: if chain == "address" {
                        "address chain's variable"
                    } else {
                        "token chain's variable"
                    },
                    value: format!("entry {} of {}", bad + 1, names.len()),
                });
            }
        }
        // A token variable's `_FILE` twin names the token's file: it is the
        // token chain's too.
        let twins: Vec<String> = token.iter().map(|name| format!("{name}_FILE")).collect();
        if let Some(shared) = address
            .iter()
            .find(|name| token.contains(name) || twins.contains(name))
        {
            return Err(NamingError::SharedVariable {
                variable: shared.clone(),
            });
        }
        Ok(Naming {
            kind: Kind::Lists { address, token },
        })
    }

    /// The prefix, for example `CHANT_BEHAVIOUR`; empty for a naming made
    /// by [`Naming::from_variables`].
    pub fn prefix(&self) -> &str {
        match &self.kind {
            Kind::Pattern { prefix, .. } => prefix,
            Kind::Lists { .. } => "",
        }
    }

    /// The stem, for example `BEHAVIOUR`; empty for a naming made by
    /// [`Naming::from_variables`].
    pub fn stem(&self) -> &str {
        match &self.kind {
            Kind::Pattern { stem, .. } => stem,
            Kind::Lists { .. } => "",
        }
    }

    /// The variable a remedy tells an operator to set for the address:
    /// `PREFIX_ENGINE`, or the first of the address list.
    pub fn engine_variable(&self) -> String {
        match &self.kind {
            Kind::Pattern { prefix, .. } => format!("{prefix}_ENGINE"),
            Kind::Lists { address, .. } => address.first().cloned().unwrap_or_default(),
        }
    }

    /// The variable a remedy tells an operator to set for the token:
    /// `PREFIX_TOKEN`, or the first of the token list.
    pub fn token_variable(&self) -> String {
        match &self.kind {
            Kind::Pattern { prefix, .. } => format!("{prefix}_TOKEN"),
            Kind::Lists { token, .. } => token.first().cloned().unwrap_or_default(),
        }
    }

    /// The address chain for a scope. A scope with no letter or digit has no
    /// scoped variable; [`fold_scope`] says how a scope becomes a name.
    pub(crate) fn address_chain(&self, scope: &str) -> AddressChain {
        AddressChain(self.chain("ENGINE", scope))
    }

    /// The token chain for a scope.
    pub(crate) fn token_chain(&self, scope: &str) -> TokenChain {
        TokenChain(self.chain("TOKEN", scope))
    }

    fn chain(&self, kind: &str, scope: &str) -> Chain {
        let (prefix, stem) = match &self.kind {
            Kind::Pattern { prefix, stem } => (prefix, stem),
            Kind::Lists { address, token } => {
                let variables = if kind == "ENGINE" { address } else { token };
                return Chain {
                    variables: variables.clone(),
                };
            }
        };
        let folded = fold_scope(scope);
        let mut variables = Vec::with_capacity(3);
        if !folded.is_empty() {
            variables.push(format!("{prefix}_{kind}_{folded}"));
        }
        variables.push(format!("{prefix}_{kind}"));
        variables.push(format!("{stem}_{kind}"));
        Chain { variables }
    }
}

/// A scope as it appears in a variable name: upper-cased, every run of
/// characters outside `A-Z0-9` turned into one `_`, with none left at either
/// end.
///
pub(crate) fn fold_scope(scope: &str) -> String {
    let mut folded = String::with_capacity(scope.len());
    let mut pending_gap = false;
    for c in scope.chars() {
        let c = c.to_ascii_uppercase();
        if c.is_ascii_uppercase() || c.is_ascii_digit() {
            if pending_gap && !folded.is_empty() {
                folded.push('_');
            }
            pending_gap = false;
            folded.push(c);
        } else {
            pending_gap = true;
        }
    }
    folded
}

/// `[A-Z][A-Z0-9]*(_[A-Z0-9]+)*`: what a remedy can tell someone to set.
fn is_variable_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_uppercase)
        && bytes.last().is_some_and(|b| *b != b'_')
        && !name.contains("__")
        && bytes
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Chain {
    variables: Vec<String>,
}

impl Chain {
    /// The first variable whose trimmed value is non-blank, and that value.
    fn first<'e>(&self, env: &'e Env) -> Option<(&str, &'e str)> {
        self.variables.iter().find_map(|name| {
            let value = env.get(name)?.trim();
            (!value.is_empty()).then_some((name.as_str(), value))
        })
    }
}

/// A value read from a chain, with the name of the variable that held it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    value: String,
    source: String,
}

impl Resolved {
    /// The trimmed value.
    pub(crate) fn value(&self) -> &str {
        &self.value
    }

    /// The variable that held it.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }
}

/// Prints the variable and the address as redacted text: an address can
/// carry userinfo or a query string that is as secret as the token.
impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolved")
            .field(
                "value",
                &crate::config::address::redact_address(&self.value),
            )
            .field("source", &self.source)
            .finish()
    }
}

/// The variables an engine's address is read from, most specific first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AddressChain(Chain);

impl AddressChain {
    /// The variable names, most specific first.
    pub(crate) fn variables(&self) -> &[String] {
        &self.0.variables
    }

    /// The first non-blank value in the chain, trimmed, with its variable.
    pub(crate) fn resolve(&self, env: &Env) -> Option<Resolved> {
        self.0.first(env).map(|(source, value)| Resolved {
            value: value.to_owned(),
            source: source.to_owned(),
        })
    }
}

/// The variables a bearer token is read from, most specific first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TokenChain(Chain);

impl TokenChain {
    /// The variable names, most specific first.
    pub(crate) fn variables(&self) -> &[String] {
        &self.0.variables
    }

    /// The token of the first variable in the chain that holds one: the
    /// variable itself, or its `_FILE` twin, which names a file holding
    /// it (as Docker secrets and Kubernetes projected tokens are handed
    /// out).
    ///
    /// `Ok(None)` when every variable and twin is unset or blank; an error,
    /// naming the variable but never the value, when the winning value
    /// cannot be sent as a header value, or when a variable and its twin
    /// are both set.
    pub(crate) fn resolve(&self, env: &Env) -> Result<Option<TokenSpec>, TokenChainError> {
        let value_of = |name: &str| {
            env.get(name)
                .map(str::trim)
                .filter(|value| !value.is_empty())
        };
        for name in &self.0.variables {
            let twin = format!("{name}_FILE");
            match (value_of(name), value_of(&twin)) {
                (Some(_), Some(_)) => {
                    return Err(TokenChainError::Both {
                        variable: name.clone(),
                        twin,
                    });
                }
                (Some(value), None) => {
                    return Token::new(value, Origin::Variable(name.clone()))
                        .map(|token| Some(TokenSpec::Value(token)))
                        .map_err(TokenChainError::Unusable);
                }
                (None, Some(path)) => {
                    return Ok(Some(TokenSpec::File {
                        path: path.to_owned(),
                        origin: Origin::File {
                            path: path.to_owned(),
                            variable: Some(twin.clone()),
                            twin,
                        },
                    }));
                }
                (None, None) => {}
            }
        }
        Ok(None)
    }
}

/// Where a token chain found its token: a value, or a file that holds it.
#[derive(Debug)]
pub(crate) enum TokenSpec {
    Value(Token),
    File { path: String, origin: Origin },
}

/// Why a token chain has no token a send can use.
#[derive(Debug)]
pub(crate) enum TokenChainError {
    /// The winning value cannot be a header value.
    Unusable(UnusableToken),
    /// A variable and its `_FILE` twin are both set.
    Both { variable: String, twin: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_chain_reads_the_scope_then_the_prefix_then_the_stem() {
        let naming = Naming::default();
        assert_eq!(
            naming.address_chain("acme").variables(),
            [
                "CHANT_BEHAVIOUR_ENGINE_ACME",
                "CHANT_BEHAVIOUR_ENGINE",
                "BEHAVIOUR_ENGINE"
            ],
        );
        assert_eq!(
            naming.token_chain("acme").variables(),
            [
                "CHANT_BEHAVIOUR_TOKEN_ACME",
                "CHANT_BEHAVIOUR_TOKEN",
                "BEHAVIOUR_TOKEN"
            ],
        );
    }

    #[test]
    fn a_scope_folds_to_upper_case_words_joined_by_one_underscore() {
        assert_eq!(fold_scope("my-lexicon.v2"), "MY_LEXICON_V2");
        assert_eq!(fold_scope("  Acme  "), "ACME");
        assert_eq!(fold_scope("__a__b__"), "A_B");
        assert_eq!(fold_scope("--"), "");
        assert_eq!(fold_scope("café"), "CAF");
    }

    #[test]
    fn the_first_non_blank_value_wins_trimmed() {
        let env = Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE_ACME", "   "),
            ("BEHAVIOUR_ENGINE", " https://engine.example/v1 "),
        ]);
        let found = Naming::default()
            .address_chain("acme")
            .resolve(&env)
            .expect("an address");
        assert_eq!(found.value(), "https://engine.example/v1");
        assert_eq!(found.source(), "BEHAVIOUR_ENGINE");
        assert!(!format!("{found:?}").contains("CHANT_BEHAVIOUR_ENGINE_ACME"));
    }

    #[test]
    fn a_token_chain_yields_a_token_or_says_which_variable_is_unusable() {
        let chain = Naming::default().token_chain("acme");
        let env = Env::from_pairs([("CHANT_BEHAVIOUR_TOKEN", "mw-0123456789")]);
        let Some(TokenSpec::Value(token)) = chain.resolve(&env).expect("usable") else {
            panic!("a token's value");
        };
        assert_eq!(
            token.origin(),
            &Origin::Variable("CHANT_BEHAVIOUR_TOKEN".to_owned())
        );
        let broken = Env::from_pairs([("CHANT_BEHAVIOUR_TOKEN_ACME", "mw-01\n23")]);
        let Err(TokenChainError::Unusable(err)) = chain.resolve(&broken) else {
            panic!("unusable");
        };
        assert_eq!(err.origin().variable(), Some("CHANT_BEHAVIOUR_TOKEN_ACME"));
        assert!(chain.resolve(&Env::new()).expect("no error").is_none());
    }

    #[test]
    fn each_token_variable_has_a_file_twin_and_both_set_is_refused() {
        let chain = Naming::default().token_chain("acme");
        // The scope's own twin wins over the prefix's value: most specific
        // first, a variable and its twin side by side.
        let env = Env::from_pairs([
            ("CHANT_BEHAVIOUR_TOKEN_ACME_FILE", " /run/secrets/engine \n"),
            ("CHANT_BEHAVIOUR_TOKEN", "mw-0123456789"),
        ]);
        let Some(TokenSpec::File { path, origin }) = chain.resolve(&env).expect("usable") else {
            panic!("a file");
        };
        assert_eq!(path, "/run/secrets/engine");
        assert_eq!(origin.variable(), Some("CHANT_BEHAVIOUR_TOKEN_ACME_FILE"));
        let both = Env::from_pairs([
            ("CHANT_BEHAVIOUR_TOKEN", "mw-0123456789"),
            ("CHANT_BEHAVIOUR_TOKEN_FILE", "/run/secrets/engine"),
        ]);
        let Err(TokenChainError::Both { variable, twin }) = chain.resolve(&both) else {
            panic!("both set");
        };
        assert_eq!(
            (variable.as_str(), twin.as_str()),
            ("CHANT_BEHAVIOUR_TOKEN", "CHANT_BEHAVIOUR_TOKEN_FILE")
        );
    }

    #[test]
    fn namings_whose_chains_could_overlap_are_refused() {
        assert!(Naming::new("ACME", "ACME").is_err());
        assert!(Naming::new("ACME", "ACME_ENGINE").is_err());
        assert!(Naming::new("ACME", "ACME_TOKEN_X").is_err());
        assert!(Naming::new("ACME", "ACME_ENGINEX").is_ok());
        assert!(Naming::new("acme", "STEM").is_err());
        assert!(Naming::new("A__B", "STEM").is_err());
    }

    use proptest::prelude::*;

    const TOKEN: &str = "mw-live-4f9c2a7e1b3d5f60";

    #[test]
    fn a_value_set_only_in_engine_variables_is_never_a_token() {
        let env = Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE_ACME", TOKEN),
            ("CHANT_BEHAVIOUR_ENGINE", TOKEN),
            ("BEHAVIOUR_ENGINE", TOKEN),
        ]);
        assert!(matches!(
            Naming::default().token_chain("acme").resolve(&env),
            Ok(None)
        ));
    }

    /// Names built from a few segments, weighted towards the words that make
    /// chains collide, so the property meets the dangerous namings often.
    fn name() -> impl Strategy<Value = String> {
        let segment = prop_oneof![
            Just("ENGINE".to_owned()),
            Just("TOKEN".to_owned()),
            Just("ACME".to_owned()),
            Just("A".to_owned()),
            "[A-Z][A-Z0-9]{0,3}",
            "[0-9][A-Z0-9]{0,2}",
        ];
        proptest::collection::vec(segment, 1..=4).prop_map(|parts| parts.join("_"))
    }

    fn scope() -> impl Strategy<Value = String> {
        prop_oneof![
            name().prop_map(|s| s.to_lowercase()),
            name(),
            "[a-zA-Z0-9 ._-]{0,12}",
            any::<String>(),
        ]
    }

    proptest! {
        #[test]
        fn an_accepted_naming_never_shares_a_variable_between_its_chains(
            prefix in name(),
            stem in name(),
            scope in scope(),
        ) {
            if let Ok(naming) = Naming::new(&prefix, &stem) {
                let addresses = naming.address_chain(&scope);
                let tokens = naming.token_chain(&scope);
                let twins: Vec<String> =
                    tokens.variables().iter().map(|name| format!("{name}_FILE")).collect();
                for variable in addresses.variables() {
                    prop_assert!(
                        !tokens.variables().contains(variable) && !twins.contains(variable),
                        "{variable} is in both chains of ({prefix}, {stem}) for scope {scope:?}"
                    );
                }
            }
        }
    }
}
