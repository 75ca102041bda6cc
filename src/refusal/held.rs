//! The refusals of a send that was not sent because of what the engine
//! said before: held by its window (a `429` or `503` with a hint, or
//! rate-limit fields that said nothing was left), or latched after a
//! `402`, `401` or `403`.
//!
//! Each says when and why the engine asked, and how long is left, so an
//! operator can tell a spent window from a network that is down. What the limits
//! keep of each window (`Hold`, `Latched`, `Spent`) is theirs, in
//! `limits/hold.rs`.

use std::time::Duration;

use tokio::time::Instant;

use super::site::Site;
use super::status::{Window, over_quota_remedy};
use crate::clock::http_date;
use crate::limits::Refused;
use crate::limits::hold::{Hold, Latched, Spent};
use crate::refusal::{Cause, Refusal};
use crate::text::seconds_phrase;

/// A send before the engine's window ends: held, not sent.
pub(crate) fn holding(site: &Site, hold: &Hold, now: Instant) -> Refusal {
    let left = hold.until.saturating_duration_since(now);
    let token = site.token();
    let window = match hold.ceiling {
        Some(ceiling) => format!(
            "; that is longer than the longest hold this transport keeps, so the hold was cut to {}, of which {} is left",
            seconds_phrase(ceiling),
            seconds_phrase(left)
        ),
        None => format!(", and {} of that window is left", seconds_phrase(left)),
    };
    // A hold an answer's fields started quotes the field, and is checked.
    let why = match &hold.field {
        Some(field) => format!("{} ({field}), which a send checks once a minute", hold.why),
        None => hold.why.clone(),
    };
    let asked = match &hold.fleet {
        None => "the engine asked".to_owned(),
        Some(shared) => format!(
            "the engine asked another process that shares the account (as the shared hold on {shared} records it)"
        ),
    };
    site.seal(
        Refusal::new(
            Cause::EngineOverQuota,
            format!(
                "{}: the send was held, not sent: at {} {asked}, by {}, to wait {} before sending again{window}; the account billed through {} is held until then",
                site.subject(),
                http_date(hold.asked_at),
                why,
                seconds_phrase(hold.asked),
                token.holding("the token")
            ),
            over_quota_remedy(site, Window::Left(left)),
            site.address_variable(),
        )
        .with_retry_after(left),
    )
}

/// A send within the latch after a `402`, `401` or `403`: the same cause,
/// nothing sent.
pub(crate) fn latched(site: &Site, latched: &Latched<Refusal>, now: Instant) -> Refusal {
    let left = latched.until.saturating_duration_since(now);
    let original = &latched.refusal;
    // The original reason opens with the same subject; it is said once.
    let subject = site.subject();
    let said = match original.reason().strip_prefix(&format!("{subject} ")) {
        Some(rest) => format!("the engine {rest}"),
        None => format!("the engine said: {}", original.reason()),
    };
    let mut refusal = Refusal::new(
        original.cause(),
        format!(
            "{subject}: the send was latched, not sent, for {} more: at {} {said}",
            seconds_phrase(left),
            http_date(latched.at),
        ),
        original.remedy(),
        original.variable().map(str::to_owned),
    );
    if let Some(status) = original.status() {
        refusal = refusal.with_status(status);
    }
    if let Some(id) = original.request_id() {
        refusal = refusal.with_request_id(id);
    }
    site.seal(refusal)
}

/// A send while the requests window the engine's answers described is
/// spent: held, not sent.
pub(crate) fn spent(site: &Site, spent: &Spent, now: Instant) -> Refusal {
    let left = spent.until.saturating_duration_since(now);
    let token = site.token();
    let limit = match spent.limit {
        Some(limit) => format!(" (of a limit of {limit})"),
        None => String::new(),
    };
    let field = match &spent.field {
        Some(field) => format!(" ({field})"),
        None => String::new(),
    };
    let said = match &spent.fleet {
        None => format!(
            "at {} the engine's answer{field} said {} {} were left{limit} until the window resets, and this transport has started {} since",
            http_date(spent.said_at),
            spent.remaining,
            spent.what,
            spent.started
        ),
        Some(shared) => format!(
            "the processes that share the account have started every send the engine's answers{field} said was left of its {} window, as the shared budget on {shared} records it",
            spent.what
        ),
    };
    site.seal(
        Refusal::new(
            Cause::EngineOverQuota,
            format!(
                "{}: the send was held, not sent: {said}; none is left for {}, until the window resets; the account billed through {} is held until then",
                site.subject(),
                seconds_phrase(left),
                token.holding("the token")
            ),
            format!(
                "wait for the engine's limit window to reset ({} left) before sending again, or give the transport a retry policy whose max_wait covers it; or {}",
                seconds_phrase(left),
                token.set_phrase("a token with a limit of its own")
            ),
            site.address_variable(),
        )
        .with_retry_after(left),
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
}
