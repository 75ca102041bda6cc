//! The refusals of a send that was not sent because of what the engine
//! said before: held by its window (a `429` or `503` with a hint, or
//! rate-limit fields that said nothing was left), or latched after a
//! `402`, `401` or `403`.
//!
//! Each says when and why the engine asked, and how long is left, so an
//! operator can tell a spent window from a network that is down; `render`
//! words them. What the limits kept as text (why a hold began, the field
//! it quotes, the fleet's key, some of it read back from Redis) is shown
//! by the site's concealer as it becomes part of the refusal. What the limits keep of each window (`Hold`, `Latched`,
//! `Spent`) is theirs, in `limits/hold.rs`.

use tokio::time::Instant;

use std::time::Duration;

use super::kind::{Asked, Counted, Kind};
use super::render;
use crate::config::site::Site;
use crate::limits::Refused;
use crate::limits::hold::{Hold, Latched, Spent};
use crate::refusal::{Cause, Refusal};

/// A send before the engine's window ends: held, not sent.
pub(crate) fn holding(site: &Site, hold: &Hold, now: Instant) -> Refusal {
    let left = hold.until.saturating_duration_since(now);
    let show = |text: &str| site.concealer().show_all(text);
    render::sent(
        site,
        Kind::Held {
            hold: Box::new(Asked {
                asked_at: hold.asked_at,
                asked: hold.asked,
                ceiling: hold.ceiling,
                why: show(&hold.why),
                field: hold.field.as_ref().map(|field| show(&field.to_string())),
                fleet: hold.fleet.as_deref().map(show),
            }),
            left,
        },
    )
}

/// A send within the latch after a `402`, `401` or `403`: the same cause,
/// nothing sent.
pub(crate) fn latched(site: &Site, latched: &Latched<Refusal>, now: Instant) -> Refusal {
    let left = latched.until.saturating_duration_since(now);
    render::latched(site, &latched.refusal, latched.at, left)
}

/// A send while the requests window the engine's answers described is
/// spent: held, not sent.
pub(crate) fn spent(site: &Site, spent: &Spent, now: Instant) -> Refusal {
    let left = spent.until.saturating_duration_since(now);
    let show = |text: &str| site.concealer().show_all(text);
    render::sent(
        site,
        Kind::Spent {
            spent: Box::new(Counted {
                said_at: spent.said_at,
                what: spent.what,
                remaining: spent.remaining,
                limit: spent.limit,
                field: spent.field.as_ref().map(|field| show(&field.to_string())),
                started: spent.started,
                fleet: spent.fleet.as_deref().map(show),
            }),
            left,
        },
    )
}

/// What the limits read of a refusal: whether a wait mends it (not an
/// empty account, whatever its status), and whether a latch repeats it
/// (the engine judged the token or the account).
impl Refused for Refusal {
    fn status(&self) -> Option<u16> {
        Refusal::status(self)
    }

    fn wait_asked(&self) -> Option<Duration> {
        self.retry_after()
    }

    fn mended_by_waiting(&self) -> bool {
        self.cause() != Cause::EngineOutOfCredit
    }

    fn judged_the_account(&self) -> bool {
        matches!(self.cause(), Cause::NoEngine | Cause::EngineOutOfCredit)
    }

    fn banned(&self) -> bool {
        self.cause() == Cause::EngineOverQuota && matches!(self.status(), Some(401 | 403))
    }
}
