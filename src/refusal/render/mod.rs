//! Every reason and remedy, written from the value: the one place a
//! refusal becomes words.
//!
//! A refusal is decided as a [`Kind`] wherever the transport meets it; its
//! words are written here, from the value and the [`Site`] the send was
//! going to, so every reason names the same things the same way and a
//! remedy reworded is one file changed: [`reason`] says what happened,
//! [`remedy`] what to do about it, [`origin`] how either names where a
//! value came from. Every word is written with `shown!`, from the crate's
//! own words and what the concealer has shown (`conceal/shown.rs`), and
//! each refusal is sealed as it leaves: every string concealed once more,
//! then bounded, so no bound can cut a token the concealer has not seen.

pub(crate) mod origin;
mod reason;
mod remedy;

use std::time::{Duration, SystemTime};

use super::kind::Kind;
use super::{Cause, Refusal};
use crate::conceal::{Concealer, Shown, Unshown, shown};
use crate::config::Unsent;
use crate::config::naming::Naming;
use crate::config::site::Site;

/// Every reason stays under this many characters, whatever the engine sends.
pub(crate) const REASON_LIMIT: usize = 999;
/// How much of a scope a reason quotes.
const SCOPE_LIMIT: usize = 64;

/// The refusal of a send to `site`.
pub(crate) fn sent(site: &Site, kind: Kind) -> Refusal {
    let reason = shown!(
        "{}: {}",
        scope_phrase(site.scope(), site.concealer()),
        reason::at_site(site, &kind)
    );
    let (remedy, source) = remedy::remedy(site, &kind);
    let refusal = fields(
        Refusal::written(kind.cause(), reason, remedy, source),
        &kind,
    );
    seal(
        site.concealer(),
        refusal.with_engine(site.host()).with_kind(kind),
    )
}

/// The refusal a send ends in: after more than one attempt, or with an
/// idempotency key, its reason says so after the scope ("after 3 attempts
/// (HTTP 503, HTTP 503, connection reset), with idempotency key …"), and
/// it carries the key.
pub(crate) fn after_attempts(
    site: &Site,
    refusal: Refusal,
    history: &[Shown],
    key: Option<&Shown>,
) -> Refusal {
    let mut said = Vec::new();
    if history.len() > 1 {
        said.push(shown!(
            "after {} attempts ({})",
            history.len(),
            Shown::join(history, ", ")
        ));
    }
    let refusal = match key {
        Some(key) => {
            said.push(shown!("with idempotency key \"{}\"", key));
            refusal.with_idempotency_key(key)
        }
        None => refusal,
    };
    let Some(kind) = refusal.kind() else {
        return refusal;
    };
    if said.is_empty() {
        return refusal;
    }
    let reason = shown!(
        "{}: {}: {}",
        scope_phrase(site.scope(), site.concealer()),
        Shown::join(&said, ", "),
        reason::at_site(site, kind)
    );
    seal(site.concealer(), refusal.with_reason(reason))
}

/// The refusal of a stream a fake scripted, which names no engine.
pub(crate) fn scripted(kind: Kind) -> Refusal {
    let refusal = Refusal::written(
        kind.cause(),
        reason::scripted(&kind),
        remedy::scripted(),
        None,
    );
    fields(refusal, &kind).with_kind(kind)
}

/// A send within the latch after `original`, which the engine answered at
/// `at`: the same cause, nothing sent, for `left` more.
pub(crate) fn latched(site: &Site, original: &Refusal, at: SystemTime, left: Duration) -> Refusal {
    match original.kind() {
        Some(kind) => sent(
            site,
            Kind::Latched {
                original: Box::new(kind.clone()),
                at,
                left,
            },
        ),
        // A refusal the crate did not write cannot be latched; it is
        // repeated as it was.
        None => original.clone(),
    }
}

/// A configuration that cannot send, with what its words are written
/// with: the chains' naming, the scope and the concealer.
#[derive(Clone, Copy)]
pub(super) struct Unsending<'a> {
    pub(super) unsent: &'a Unsent,
    pub(super) naming: &'a Naming,
    pub(super) scope: &'a Unshown,
    pub(super) concealer: &'a Concealer,
}

/// The refusal every send of a configuration that cannot send returns.
pub(crate) fn unsent(
    unsent: Box<Unsent>,
    naming: &Naming,
    scope: &Unshown,
    concealer: &Concealer,
) -> Refusal {
    let at = Unsending {
        unsent: &unsent,
        naming,
        scope,
        concealer,
    };
    let (reason, host) = reason::unsent(at);
    let (remedy, source) = remedy::unsent(at);
    let kind = Kind::Unsent {
        unsent,
        naming: Box::new(naming.clone()),
    };
    let refusal = Refusal::written(kind.cause(), reason, remedy, source);
    let refusal = match host {
        Some(host) => refusal.with_engine(host),
        None => refusal,
    };
    seal(concealer, refusal.with_kind(kind))
}

/// The refusal of a body that could not be serialized, for a transport
/// that has no address to name: the default `Transport::execute`.
pub(crate) fn unaddressed_unserializable(category: &'static str) -> Refusal {
    Refusal::written(
        Cause::EngineUnreachable,
        reason::unaddressed_unserializable(category),
        remedy::unaddressed_unserializable(),
        None,
    )
}

/// A few words for the list of attempts in a reason: `HTTP 503`,
/// `connection reset`.
pub(crate) fn short(kind: &Kind) -> Shown {
    reason::short(kind)
}

/// The fields a refusal's value carries besides its words.
fn fields(refusal: Refusal, kind: &Kind) -> Refusal {
    let refusal = match kind.status() {
        Some(status) => refusal.with_status(status),
        None => refusal,
    };
    let refusal = match kind.retry_after() {
        Some(delay) => refusal.with_retry_after(delay),
        None => refusal,
    };
    match kind.request_id() {
        Some(id) => refusal.with_shown_request_id(id.clone()),
        None => refusal,
    }
}

/// The last pass over a refusal: every string sealed (`Shown::seal`).
pub(crate) fn seal(concealer: &Concealer, refusal: Refusal) -> Refusal {
    refusal.map_text(|text| text.seal(concealer, REASON_LIMIT))
}

/// `scope "acme"`: concealed, then bounded (a caller may build a scope from
/// a secret, and a cut inside it would leave a part no concealer knows).
pub(crate) fn scope_phrase(scope: &Unshown, concealer: &Concealer) -> Shown {
    shown!("scope {}", concealer.show(scope, SCOPE_LIMIT).quoted())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_built_from_a_secret_is_concealed_before_it_is_cut() {
        let token = "mw-site-Q7vX2kP9zR4tL8wN";
        let concealer = Concealer::new([token]);
        // The cut at 64 characters would fall inside the token.
        let scope = Unshown::new(format!("{}{token}", "s".repeat(50)));
        let phrase = scope_phrase(&scope, &concealer);
        assert!(!phrase.contains(&token[..8]), "{phrase}");
        assert!(phrase.contains("[redacted]"), "{phrase}");
    }
}
