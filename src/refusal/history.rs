//! What a refusal says about the attempts of its send: how many went to the
//! wire and what each came to, and the idempotency key they carried.
//!
//! "After 3 attempts (HTTP 503, HTTP 503, connection reset)" tells an
//! operator the engine was asked three times and billed for whatever it
//! billed; the key lets its support desk find them.

use super::site::{Site, scope_phrase};
use crate::refusal::Refusal;

/// The refusal a send ends in: after more than one attempt, or with an
/// idempotency key, its reason says so after the scope, and it is sealed
/// again.
pub(crate) fn after_attempts(
    site: &Site,
    refusal: Refusal,
    history: &[String],
    key: Option<&str>,
) -> Refusal {
    let mut said = Vec::new();
    if history.len() > 1 {
        said.push(format!(
            "after {} attempts ({})",
            history.len(),
            history.join(", ")
        ));
    }
    let refusal = match key {
        Some(key) => {
            said.push(format!("with idempotency key \"{key}\""));
            refusal.with_idempotency_key(key)
        }
        None => refusal,
    };
    if said.is_empty() {
        return refusal;
    }
    let scope = scope_phrase(site.scope(), site.concealer());
    refusal.insert_after(
        &format!("{scope}: "),
        &format!("{}: ", said.join(", ")),
        site.concealer(),
    )
}
