//! Where a value came from: a variable of its chain, or a builder method.
//!
//! Every refusal names where the address or the token it is about came from,
//! because "set this variable" is the remedy an operator can apply. A value
//! given in code has no variable of its own, so it remembers the chain's
//! variable an operator would set instead. Every refusal phrases
//! an origin in the same words, written here: "from CHANT_BEHAVIOUR_ENGINE"
//! or "given in code", "the token held in …", and a remedy that names the
//! variable to set, or, for a value given in code, the builder method *and*
//! the variable, so an operator who cannot change the code can still act
//! from the environment.

/// Where a value came from.
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
    /// Read from the file at `path` (a token that rotates), which the
    /// variable `variable` named (the `_FILE` twin of a token variable), or
    /// which was given in code to `HttpTransportBuilder::token_file` when
    /// `variable` is `None`; `twin` is the `_FILE` variable an operator
    /// would set instead.
    File {
        path: String,
        variable: Option<String>,
        twin: String,
    },
}

impl Origin {
    /// The variable a refusal traces back to (the report's `source`): none
    /// for a value given in code.
    pub(crate) fn variable(&self) -> Option<&str> {
        match self {
            Origin::Variable(name) => Some(name),
            Origin::File {
                variable: Some(name),
                ..
            } => Some(name),
            Origin::Code { .. } | Origin::File { variable: None, .. } => None,
        }
    }
}

impl Origin {
    /// `from CHANT_BEHAVIOUR_ENGINE`, or `given in code`.
    pub(crate) fn provenance(&self) -> String {
        match self {
            Origin::Variable(name) => format!("from {name}"),
            Origin::Code { .. } => "given in code".to_owned(),
            Origin::File { path, variable, .. } => match variable {
                Some(name) => format!("from the file {path}, named by {name}"),
                None => format!("from the file {path}, given in code"),
            },
        }
    }

    /// `the token held in CHANT_BEHAVIOUR_TOKEN`, or `the token given in
    /// code`, for `noun` = `the token`.
    pub(crate) fn holding(&self, noun: &str) -> String {
        match self {
            Origin::Variable(name) => format!("{noun} held in {name}"),
            Origin::Code { .. } => format!("{noun} given in code"),
            Origin::File { path, variable, .. } => match variable {
                Some(name) => format!("{noun} in the file {path} (named by {name})"),
                None => format!("{noun} in the file {path} (given in code)"),
            },
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
            Origin::File {
                path,
                variable,
                twin,
            } => match variable {
                Some(name) => format!("the file {path} (named by {name})"),
                None => format!(
                    "the file {path} (given to HttpTransportBuilder::token_file, in place of {twin})"
                ),
            },
        }
    }

    /// The remedy's instruction to put `what` where this value comes from:
    /// `set VARIABLE to <what>`, or, for a value given in code, to pass it
    /// to the builder method (or set the variable and pass none).
    pub(crate) fn set_phrase(&self, what: &str) -> String {
        match self {
            Origin::Variable(name) => format!("set {name} to {what}"),
            Origin::Code { method, variable } => format!(
                "pass {what} to HttpTransportBuilder::{method} (or set {variable} to it and pass none in code)"
            ),
            Origin::File {
                path,
                variable,
                twin,
            } => match variable {
                Some(name) => format!(
                    "put {what} in the file {path} (which {name} names), or set {name} to a file that holds it"
                ),
                None => format!(
                    "put {what} in the file {path} given to HttpTransportBuilder::token_file (or set {twin} to a file that holds it and pass none in code)"
                ),
            },
        }
    }
}

#[cfg(test)]
impl Origin {
    /// The origin of a value read from `name`.
    pub(crate) fn variable_named(name: &str) -> Origin {
        Origin::Variable(name.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_origin_names_the_path_and_its_variable() {
        let origin = Origin::File {
            path: "/run/secrets/engine".to_owned(),
            variable: Some("CHANT_BEHAVIOUR_TOKEN_FILE".to_owned()),
            twin: "CHANT_BEHAVIOUR_TOKEN_FILE".to_owned(),
        };
        assert_eq!(origin.variable(), Some("CHANT_BEHAVIOUR_TOKEN_FILE"));
        let held = origin.holding("the token");
        assert!(held.contains("/run/secrets/engine"), "{held}");
        assert!(held.contains("CHANT_BEHAVIOUR_TOKEN_FILE"), "{held}");
        let set = origin.set_phrase("a token the engine accepts");
        assert!(
            set.starts_with("put a token the engine accepts in the file /run/secrets/engine"),
            "{set}"
        );
    }

    #[test]
    fn a_code_origin_names_the_method_and_the_variable() {
        let origin = Origin::Code {
            method: "token",
            variable: "CHANT_BEHAVIOUR_TOKEN".to_owned(),
        };
        assert_eq!(origin.variable(), None);
        assert_eq!(origin.holding("the token"), "the token given in code");
        let set = origin.set_phrase("a token the engine accepts");
        assert!(set.contains("HttpTransportBuilder::token"));
        assert!(set.contains("CHANT_BEHAVIOUR_TOKEN"));
    }
}
