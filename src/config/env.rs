//! The environment snapshot every lookup reads.
//!
//! Configuration is read from a snapshot the caller hands in, never from the
//! live process environment behind its back: a test passes a plain map, a
//! predictor passes [`Env::from_process`], and both go through the same code.
//! The snapshot's `Debug` prints variable names only, because the values
//! include the bearer token.

use std::collections::BTreeMap;
use std::fmt;

use crate::conceal::Concealer;

/// A snapshot of environment variables, by name.
///
/// ```
/// use meterwire::Env;
///
/// let env = Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", "https://engine.example/v1")]);
/// assert_eq!(env.get("CHANT_BEHAVIOUR_ENGINE"), Some("https://engine.example/v1"));
/// assert_eq!(env.get("CHANT_BEHAVIOUR_TOKEN"), None);
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// An empty snapshot.
    pub fn new() -> Env {
        Env::default()
    }

    /// The current process's environment.
    ///
    /// A value that is not valid UTF-8 is kept with its invalid bytes replaced
    /// by U+FFFD rather than dropped, so a garbled token is refused as
    /// unusable (naming its variable) instead of being reported as missing.
    pub fn from_process() -> Env {
        std::env::vars_os()
            .map(|(name, value)| {
                (
                    name.to_string_lossy().into_owned(),
                    value.to_string_lossy().into_owned(),
                )
            })
            .collect()
    }

    /// A snapshot holding exactly these pairs; a later pair wins over an
    /// earlier one with the same name.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Env
    where
        K: Into<String>,
        V: Into<String>,
    {
        pairs.into_iter().collect()
    }

    /// Sets one variable, replacing any earlier value.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Env {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// Removes one variable.
    pub fn remove(&mut self, name: &str) -> &mut Env {
        self.vars.remove(name);
        self
    }

    /// The raw value of one variable, untrimmed.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Every variable, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl Concealer {
    /// As [`Concealer::new`], plus the value of every variable in `env` whose
    /// name is credential-shaped (contains `TOKEN`, `SECRET`, `PASSWORD`,
    /// `PASSWD`, `CREDENTIAL`, `PRIVATE_KEY`, `API_KEY`, `APIKEY`,
    /// `ACCESS_KEY`, `SESSION_KEY`, or the word `AUTH`, in any case) and whose value,
    /// trimmed, is at least 8 characters long. The trimmed value is what gets
    /// concealed; a value that holds line breaks (a key in PEM) is concealed
    /// line by line, each line trimmed and at least 8 characters long.
    ///
    /// ```
    /// use meterwire::{Concealer, Env};
    ///
    /// let env = Env::from_pairs([
    ///     ("GITHUB_TOKEN", "ghp_0123456789abcdefghij"),
    ///     ("HOME", "/home/predictor"),
    /// ]);
    /// let concealer = Concealer::with_env([], &env);
    /// assert_eq!(
    ///     concealer.conceal("ghp_0123456789abcdefghij in /home/predictor"),
    ///     "[redacted] in /home/predictor",
    /// );
    /// ```
    pub fn with_env<'a>(secrets: impl IntoIterator<Item = &'a str>, env: &Env) -> Concealer {
        Concealer::with_variables(secrets, env.iter())
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Env {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Env {
        Env {
            vars: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

/// Names only: the values hold secrets.
impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}
