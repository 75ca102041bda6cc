//! How a refusal words where a value came from: "from
//! CHANT_BEHAVIOUR_ENGINE" or "given in code", "the token held in …", and
//! a remedy that names the variable to set, or, for a value given in code,
//! the builder method *and* the variable, so an operator who cannot change
//! the code can still act from the environment. Every refusal phrases an
//! origin in these words.

use crate::config::origin::Origin;

/// The words of an origin.
pub(crate) trait OriginWords {
    /// `from CHANT_BEHAVIOUR_ENGINE`, or `given in code`.
    fn provenance(&self) -> String;
    /// `the token held in CHANT_BEHAVIOUR_TOKEN`, or `the token given in
    /// code`, for `noun` = `the token`.
    fn holding(&self, noun: &str) -> String;
    /// Where an operator looks: the variable, or the builder method with
    /// the variable it stands in for.
    fn named(&self) -> String;
    /// The remedy's instruction to put `what` where this value comes from.
    fn set_phrase(&self, what: &str) -> String;
}

impl OriginWords for Origin {
    /// `from CHANT_BEHAVIOUR_ENGINE`, or `given in code`.
    fn provenance(&self) -> String {
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
    fn holding(&self, noun: &str) -> String {
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
    fn named(&self) -> String {
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
    fn set_phrase(&self, what: &str) -> String {
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
