//! Where a call was going: the scope, the address, where the token came
//! from, and the proxy, with the concealer for everything that came from
//! outside. The configuration settles one for every transport that can
//! send; every refusal about a send is worded from one, so every reason
//! names the same things the same way.

use crate::conceal::{Concealer, Shown, Unshown};
use crate::config::address::{Address, redact_address};
use crate::config::origin::Origin;

/// How much of an address a reason quotes.
const ADDRESS_LIMIT: usize = 200;

#[derive(Clone, Debug)]
pub(crate) struct Site {
    scope: Unshown,
    address: Address,
    token: Origin,
    /// The proxy the caller configured, as reasons show it: redacted,
    /// concealed and bounded.
    proxy: Option<Shown>,
    concealer: Concealer,
}

impl Site {
    pub(crate) fn new(scope: &str, address: Address, token: Origin, concealer: Concealer) -> Site {
        Site {
            scope: Unshown::new(scope),
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
    pub(crate) fn proxy(&self) -> Option<&Shown> {
        self.proxy.as_ref()
    }

    /// The scope, as the caller gave it.
    pub(crate) fn scope(&self) -> &Unshown {
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
    pub(crate) fn shown_address(&self) -> Shown {
        shown_address(&self.address.to_string(), &self.concealer)
    }

    /// The host (and port) as a remedy names it, concealed.
    pub(crate) fn host(&self) -> Shown {
        shown_host(&self.address.host(), &self.concealer)
    }
}

/// An address, already redacted, as a reason quotes it: concealed first
/// (a token can sit in its path), then bounded.
pub(crate) fn shown_address(redacted: &str, concealer: &Concealer) -> Shown {
    concealer.show(redacted, ADDRESS_LIMIT)
}

/// A host (and port) as a reason or remedy names it: concealed, then
/// bounded.
pub(crate) fn shown_host(host: &str, concealer: &Concealer) -> Shown {
    concealer.show(host, ADDRESS_LIMIT)
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
