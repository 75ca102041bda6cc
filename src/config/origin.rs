//! Where a value came from: a variable of its chain, a builder method, or a
//! file.
//!
//! Every refusal names where the address or the token it is about came from,
//! because "set this variable" is the remedy an operator can apply. A value
//! given in code has no variable of its own, so it remembers the chain's
//! variable an operator would set instead. How a refusal words an origin is
//! the refusal's (`refusal/render/origin.rs`).

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

#[cfg(test)]
impl Origin {
    /// The origin of a value read from `name`.
    pub(crate) fn variable_named(name: &str) -> Origin {
        Origin::Variable(name.to_owned())
    }
}
