//! Where a call was going: the scope, the address, where the token came
//! from, and the proxy, with the concealer for everything that came from
//! outside. The configuration settles one for every transport that can
//! send; every refusal about a send is worded from one, so every reason
//! names the same things the same way.

use crate::conceal::Concealer;
use crate::config::address::{Address, redact_address};
use crate::config::origin::Origin;
use crate::text::bound_whole;

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
        self.proxy = proxy.map(|proxy| shown_address(&redact_address(proxy), &self.concealer));
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
