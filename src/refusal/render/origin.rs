//! How a refusal words where a value came from: "from
//! CHANT_BEHAVIOUR_ENGINE" or "given in code", "the token held in …", and
//! a remedy that names the variable to set, or, for a value given in code,
//! the builder method *and* the variable, so an operator who cannot change
//! the code can still act from the environment. Every refusal phrases an
//! origin in these words.

use crate::conceal::shown::Show;
use crate::conceal::{Concealer, Shown, shown};
use crate::config::origin::Origin;
use crate::config::site::Site;

/// An origin in words: the variable names and paths it holds shown by
/// the concealer (a scope folds into a variable's name, and a path is the
/// environment's).
pub(crate) struct OriginWords<'a> {
    origin: &'a Origin,
    concealer: &'a Concealer,
}

/// The words of where `site`'s token came from.
pub(crate) fn token_origin(site: &Site) -> OriginWords<'_> {
    OriginWords::new(site.token(), site.concealer())
}

/// The words of where `site`'s address came from.
pub(crate) fn address_origin(site: &Site) -> OriginWords<'_> {
    OriginWords::new(site.address().origin(), site.concealer())
}

impl<'a> OriginWords<'a> {
    pub(crate) fn new(origin: &'a Origin, concealer: &'a Concealer) -> OriginWords<'a> {
        OriginWords { origin, concealer }
    }

    fn show(&self, name: &str) -> Shown {
        self.concealer.show_all(name)
    }

    /// The report's `source`: the variable a refusal traces back to, none
    /// for a value given in code.
    pub(crate) fn variable(&self) -> Option<Shown> {
        self.origin.variable().map(|name| self.show(name))
    }

    /// `from CHANT_BEHAVIOUR_ENGINE`, or `given in code`.
    pub(crate) fn provenance(&self) -> Shown {
        match self.origin {
            Origin::Variable(name) => shown!("from {}", self.show(name)),
            Origin::Code { .. } => Shown::from("given in code"),
            Origin::File { path, variable, .. } => match variable {
                Some(name) => shown!(
                    "from the file {}, named by {}",
                    self.show(path),
                    self.show(name)
                ),
                None => shown!("from the file {}, given in code", self.show(path)),
            },
        }
    }

    /// `the token held in CHANT_BEHAVIOUR_TOKEN`, or `the token given in
    /// code`, for `noun` = `the token`.
    pub(crate) fn holding(&self, noun: &'static str) -> Shown {
        match self.origin {
            Origin::Variable(name) => shown!("{} held in {}", noun, self.show(name)),
            Origin::Code { .. } => shown!("{} given in code", noun),
            Origin::File { path, variable, .. } => match variable {
                Some(name) => shown!(
                    "{} in the file {} (named by {})",
                    noun,
                    self.show(path),
                    self.show(name)
                ),
                None => shown!("{} in the file {} (given in code)", noun, self.show(path)),
            },
        }
    }

    /// Where an operator looks: the variable, or the builder method with the
    /// variable it stands in for.
    pub(crate) fn named(&self) -> Shown {
        match self.origin {
            Origin::Variable(name) => self.show(name),
            Origin::Code { method, variable } => shown!(
                "HttpTransportBuilder::{} (given in code, in place of {})",
                *method,
                self.show(variable)
            ),
            Origin::File {
                path,
                variable,
                twin,
            } => match variable {
                Some(name) => shown!(
                    "the file {} (named by {})",
                    self.show(path),
                    self.show(name)
                ),
                None => shown!(
                    "the file {} (given to HttpTransportBuilder::token_file, in place of {})",
                    self.show(path),
                    self.show(twin)
                ),
            },
        }
    }

    /// The remedy's instruction to put `what` where this value comes from:
    /// `set VARIABLE to <what>`, or, for a value given in code, to pass it
    /// to the builder method (or set the variable and pass none).
    pub(crate) fn set_phrase(&self, what: impl Show) -> Shown {
        match self.origin {
            Origin::Variable(name) => shown!("set {} to {}", self.show(name), what),
            Origin::Code { method, variable } => shown!(
                "pass {} to HttpTransportBuilder::{} (or set {} to it and pass none in code)",
                what,
                *method,
                self.show(variable)
            ),
            Origin::File {
                path,
                variable,
                twin,
            } => match variable {
                Some(name) => shown!(
                    "put {} in the file {} (which {} names), or set {} to a file that holds it",
                    what,
                    self.show(path),
                    self.show(name),
                    self.show(name)
                ),
                None => shown!(
                    "put {} in the file {} given to HttpTransportBuilder::token_file (or set {} to a file that holds it and pass none in code)",
                    what,
                    self.show(path),
                    self.show(twin)
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
        let concealer = Concealer::new([]);
        let origin = OriginWords::new(&origin, &concealer);
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
        let concealer = Concealer::new([]);
        let origin = OriginWords::new(&origin, &concealer);
        assert_eq!(origin.holding("the token"), "the token given in code");
        let set = origin.set_phrase("a token the engine accepts");
        assert!(set.contains("HttpTransportBuilder::token"));
        assert!(set.contains("CHANT_BEHAVIOUR_TOKEN"));
    }
}
