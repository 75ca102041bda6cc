//! Where a call was going: the scope, the address and where the token came
//! from, with the concealer for everything that came from outside. Every
//! reason is written from one, so every reason names the same things the
//! same way.

use crate::conceal::Concealer;
use crate::config::address::Address;
use crate::config::origin::Origin;
use crate::refusal::Refusal;
use crate::text::bound_whole;

/// Every reason stays under this many characters, whatever the engine sends.
pub(crate) const REASON_LIMIT: usize = 999;
/// How much of a scope a reason quotes.
const SCOPE_LIMIT: usize = 64;
/// How much of an address a reason quotes.
const ADDRESS_LIMIT: usize = 200;

#[derive(Clone, Debug)]
pub(crate) struct Site {
    scope: String,
    address: Address,
    token: Origin,
    /// The proxy the caller configured, as reasons show it: redacted,
    /// concealed and bounded.
    proxy: Option<String>,
    concealer: Concealer,
}

impl Site {
    pub(crate) fn new(scope: &str, address: Address, token: Origin, concealer: Concealer) -> Site {
        Site {
            scope: scope.to_owned(),
            address,
            token,
            proxy: None,
            concealer,
        }
    }

    /// The same site, reached through `proxy` (a URL as the caller gave
    /// it: shown redacted).
    pub(crate) fn through(mut self, proxy: Option<&str>) -> Site {
        self.proxy = proxy.map(|proxy| {
            shown_address(
                &crate::config::address::redact_address(proxy),
                &self.concealer,
            )
        });
        self
    }

    /// The proxy, as reasons show it, when one is configured.
    pub(crate) fn proxy(&self) -> Option<&str> {
        self.proxy.as_deref()
    }

    /// The scope, as the caller gave it.
    pub(crate) fn scope(&self) -> &str {
        &self.scope
    }

    pub(crate) fn address(&self) -> &Address {
        &self.address
    }

    /// Where the token came from.
    pub(crate) fn token(&self) -> &Origin {
        &self.token
    }

    pub(crate) fn concealer(&self) -> &Concealer {
        &self.concealer
    }

    /// `scope "acme": engine at https://host/path (from VARIABLE)`: the
    /// subject every reason about a send opens with.
    pub(crate) fn subject(&self) -> String {
        format!(
            "{}: engine at {} ({})",
            scope_phrase(&self.scope, &self.concealer),
            self.shown_address(),
            self.address.origin().provenance()
        )
    }

    /// The address as a reason shows it: redacted, concealed, bounded.
    pub(crate) fn shown_address(&self) -> String {
        shown_address(&self.address.to_string(), &self.concealer)
    }

    /// The host (and port) as a remedy names it, concealed.
    pub(crate) fn host(&self) -> String {
        shown_host(&self.address.host(), &self.concealer)
    }

    /// The report's `source` for a refusal about the address.
    pub(crate) fn address_variable(&self) -> Option<String> {
        self.address.origin().variable().map(str::to_owned)
    }

    /// The report's `source` for a refusal about the token.
    pub(crate) fn token_variable(&self) -> Option<String> {
        self.token.variable().map(str::to_owned)
    }

    /// The last pass over every refusal this site writes, which names the
    /// engine's host in the report.
    pub(crate) fn seal(&self, refusal: Refusal) -> Refusal {
        seal(&self.concealer, refusal.with_engine(self.host()))
    }
}

/// The last pass over a refusal: conceal every string once more, then
/// bound it, so no bound can cut a token the concealer has not seen.
pub(crate) fn seal(concealer: &Concealer, refusal: Refusal) -> Refusal {
    refusal.map_text(|text| bound_whole(&concealer.conceal(text), REASON_LIMIT).to_owned())
}

/// An address, already redacted, as a reason quotes it: concealed first
/// (a token can sit in its path), then bounded.
pub(crate) fn shown_address(redacted: &str, concealer: &Concealer) -> String {
    bound_whole(&concealer.conceal(redacted), ADDRESS_LIMIT).to_owned()
}

/// A host (and port) as a reason or remedy names it: concealed, then
/// bounded.
pub(crate) fn shown_host(host: &str, concealer: &Concealer) -> String {
    bound_whole(&concealer.conceal(host), ADDRESS_LIMIT).to_owned()
}

/// `scope "acme"`: concealed, then bounded (a caller may build a scope from
/// a secret, and a cut inside it would leave a part no concealer knows).
pub(crate) fn scope_phrase(scope: &str, concealer: &Concealer) -> String {
    format!(
        "scope {:?}",
        bound_whole(&concealer.conceal(scope), SCOPE_LIMIT)
    )
}

/// The site the unit tests of the refusals write from: scope `acme`, the
/// engine at `https://engine.example/v1/predict` from
/// `CHANT_BEHAVIOUR_ENGINE`, the token from `CHANT_BEHAVIOUR_TOKEN`.
#[cfg(test)]
pub(crate) fn test_site(concealer: Concealer) -> Site {
    let address = Address::parse(
        "https://engine.example/v1/predict",
        Origin::variable_named("CHANT_BEHAVIOUR_ENGINE"),
    )
    .expect("an address");
    Site::new(
        "acme",
        address,
        Origin::variable_named("CHANT_BEHAVIOUR_TOKEN"),
        concealer,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_built_from_a_secret_is_concealed_before_it_is_cut() {
        let token = "mw-site-Q7vX2kP9zR4tL8wN";
        let concealer = Concealer::new([token]);
        // The cut at 64 characters would fall inside the token.
        let scope = format!("{}{token}", "s".repeat(50));
        let phrase = scope_phrase(&scope, &concealer);
        assert!(!phrase.contains(&token[..8]), "{phrase}");
        assert!(phrase.contains("[redacted]"), "{phrase}");
    }
}
