//! The refusals of a stream the engine had answered `2xx`: an error it
//! sent inside the stream, and the timers that end one.
//!
//! An engine that has answered `200` may still fail: Anthropic sends
//! `event: error` with an `overloaded_error`, OpenAI a `data:` payload with
//! an `error` member. A client that reads those as a short answer, or as
//! "status 200", sends an operator the wrong way; so the error's `type` and
//! `code` name its cause by the same table as an error body's words (a
//! rate limit, the account's credit, the token, else the engine's health),
//! and the reason counts what came before it.

use super::failure::Answered;
use super::site::Site;
use super::status::{Fix, Particulars, remedy_for, unreachable_remedy};
use crate::refusal::evidence::words::names_credit;
use crate::refusal::{Cause, Refusal};

/// Error names that mean a rate or request limit.
const RATE_LIMITS: [&str; 3] = [
    "rate_limit_error",
    "rate_limit_exceeded",
    "too_many_requests",
];

/// Error names that mean the token.
const TOKEN_ERRORS: [&str; 4] = [
    "authentication_error",
    "invalid_api_key",
    "permission_error",
    "invalid_token",
];

/// The cause an in-stream error names by its `type` and `code`: the
/// account's credit, the token, a limit, else the engine's health. Both
/// are read (OpenAI's `invalid_api_key` arrives with the type
/// `invalid_request_error`), and the most specific wins.
pub(crate) fn error_cause(kind: Option<&str>, code: Option<&str>) -> Cause {
    let names: Vec<String> = [kind, code]
        .into_iter()
        .flatten()
        .map(|name| name.to_ascii_lowercase().replace('-', "_"))
        .collect();
    if names.iter().any(|name| names_credit(name)) {
        Cause::EngineOutOfCredit
    } else if names
        .iter()
        .any(|name| TOKEN_ERRORS.contains(&name.as_str()))
    {
        Cause::NoEngine
    } else if names
        .iter()
        .any(|name| RATE_LIMITS.contains(&name.as_str()))
    {
        Cause::EngineOverQuota
    } else {
        Cause::EngineUnreachable
    }
}

/// What an in-stream error said: its `type`, its `code`, and the engine's
/// words, each concealed and bounded.
pub(crate) struct StreamError {
    pub(crate) kind: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) words: Option<String>,
}

/// The refusal of an error the engine sent inside a stream it had
/// answered; `site` is `None` for a stream a fake scripted.
pub(crate) fn in_stream_error(
    site: Option<&Site>,
    answered: Answered,
    error: &StreamError,
) -> Refusal {
    let cause = error_cause(error.kind.as_deref(), error.code.as_deref());
    let named = match (&error.kind, &error.code) {
        (Some(kind), Some(code)) if kind != code => {
            format!(" of type \"{kind}\" (code \"{code}\")")
        }
        (Some(kind), _) => format!(" of type \"{kind}\""),
        (None, Some(code)) => format!(" with the code \"{code}\""),
        (None, None) => String::new(),
    };
    let said = match &error.words {
        Some(words) => format!("; the engine said: \"{words}\""),
        None => String::new(),
    };
    let what = format!(
        "answered HTTP {}, streamed {}, then sent an error{named}{said}",
        answered.status,
        answered.so_far()
    );
    let Some(site) = site else {
        return Refusal::new(cause, format!("the stream {what}"), FAKE_REMEDY, None)
            .with_status(answered.status);
    };
    let particulars = Particulars {
        fix: Fix::Health,
        what: "sent an error in the middle of a stream",
        ..Particulars::default()
    };
    let (remedy, source) = remedy_for(site, cause, particulars);
    site.seal(
        Refusal::new(cause, format!("{} {what}", site.subject()), remedy, source)
            .with_status(answered.status),
    )
}

/// Which of a stream's timers ended it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// No first byte of the body by the send's deadline, which covers
    /// connect, the head and the first byte.
    FirstByte { ms: u64 },
    /// A gap between bytes longer than the idle timer.
    Idle { ms: u64 },
    /// The stream ran past its own deadline.
    Whole { ms: u64 },
}

impl Timer {
    /// A few words for the list of attempts in a reason.
    pub(crate) fn short(self) -> String {
        match self {
            Timer::FirstByte { ms } => format!("no body within {ms} ms"),
            Timer::Idle { ms } => format!("silent for {ms} ms"),
            Timer::Whole { ms } => format!("a stream past {ms} ms"),
        }
    }
}

/// The refusal of a stream whose body ended cleanly but without `[DONE]`,
/// when the caller asked for it: a generation the engine cut short reads
/// like a finished one otherwise. `unfinished` counts the bytes of an
/// event the end cut off, if it cut one.
pub(crate) fn without_done(
    site: Option<&Site>,
    answered: Answered,
    unfinished: Option<u64>,
) -> Refusal {
    let events = match answered.events {
        Some(1) => "1 event".to_owned(),
        Some(n) => format!("{n} events"),
        None => answered.so_far(),
    };
    let inside = match unfinished {
        Some(1) => ", inside an event (1 byte of it not read)".to_owned(),
        Some(bytes) => format!(", inside an event ({bytes} bytes of it not read)"),
        None => String::new(),
    };
    let what = format!(
        "answered HTTP {}, then its stream ended without [DONE] after {events}{inside}, so the answer may be cut short",
        answered.status
    );
    health_refusal(
        site,
        &what,
        "ended a stream before its [DONE]",
        answered.status,
    )
}

/// The refusal of a stream a timer ended: the engine's health, each timer
/// named.
pub(crate) fn timed_out(site: Option<&Site>, timer: Timer, answered: Answered) -> Refusal {
    let so_far = answered.so_far();
    let what = match timer {
        Timer::FirstByte { ms } => format!(
            "answered HTTP {}, but no byte of its body arrived within the deadline of {ms} ms (no answer within {ms} ms)",
            answered.status
        ),
        Timer::Idle { ms } => format!(
            "answered HTTP {}, then went silent: no byte for the idle timer of {ms} ms, after {so_far}",
            answered.status
        ),
        Timer::Whole { ms } => format!(
            "answered HTTP {}, and the stream ran past its deadline of {ms} ms, after {so_far}",
            answered.status
        ),
    };
    health_refusal(
        site,
        &what,
        "stopped in the middle of a stream",
        answered.status,
    )
}

/// A stream's refusal for the engine's health: `what` the engine (or a
/// fake's stream, `site` none) did after its `status`, with the remedy for
/// what it was `doing`.
fn health_refusal(site: Option<&Site>, what: &str, doing: &str, status: u16) -> Refusal {
    let Some(site) = site else {
        return Refusal::new(
            Cause::EngineUnreachable,
            format!("the stream {what}"),
            FAKE_REMEDY,
            None,
        )
        .with_status(status);
    };
    let remedy = unreachable_remedy(site, Fix::Health, doing, None);
    site.seal(
        Refusal::new(
            Cause::EngineUnreachable,
            format!("{} {what}", site.subject()),
            remedy,
            site.address_variable(),
        )
        .with_status(status),
    )
}

/// The remedy of a refusal in a stream a fake scripted, which has no
/// address of its own to point at.
const FAKE_REMEDY: &str = "a scripted stream refused; the engine's address is read from CHANT_BEHAVIOUR_ENGINE by default";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conceal::Concealer;
    use crate::refusal::site::test_site;

    /// What a `429` with `body` becomes, by the status table.
    fn on_a_429(body: &str) -> Refusal {
        super::super::status::refusal_for_status(
            &test_site(Concealer::new([])),
            429,
            &reqwest::header::HeaderMap::new(),
            body.as_bytes(),
            std::time::SystemTime::now(),
        )
        .expect("a refusal")
    }

    /// Each name of the account's credit, as an engine may spell it: alone,
    /// inside a longer code, kebab- or upper-case.
    const CREDIT_NAMES: [&str; 8] = [
        "insufficient_quota",
        "billing_hard_limit_reached",
        "insufficient_credit",
        "account_insufficient_funds",
        "OUT-OF-CREDIT",
        "credit_balance_too_low",
        "insufficient-credits",
        "Insufficient_Funds",
    ];

    /// Codes that mention credit or funds without naming an empty account.
    const NOT_CREDIT: [&str; 3] = ["no_credit", "credit_window", "funds_rate_limit"];

    #[test]
    fn a_credit_name_is_out_of_credit_on_a_429_and_inside_a_stream() {
        for name in CREDIT_NAMES {
            let body = format!(r#"{{"error": {{"code": "{name}"}}}}"#);
            let found = on_a_429(&body);
            assert_eq!(found.cause(), Cause::EngineOutOfCredit, "429 {name}");
            assert_eq!(
                error_cause(None, Some(name)),
                Cause::EngineOutOfCredit,
                "stream {name}"
            );
        }
    }

    #[test]
    fn a_code_that_only_mentions_credit_is_read_the_same_on_a_429_and_inside_a_stream() {
        for name in NOT_CREDIT {
            let body = format!(r#"{{"error": {{"code": "{name}"}}}}"#);
            let found = on_a_429(&body);
            assert_eq!(found.cause(), Cause::EngineOverQuota, "429 {name}");
            assert_ne!(
                error_cause(None, Some(name)),
                Cause::EngineOutOfCredit,
                "stream {name}"
            );
        }
    }

    #[test]
    fn an_errors_type_and_code_name_its_cause() {
        for (kind, code, cause) in [
            (Some("rate_limit_error"), None, Cause::EngineOverQuota),
            (None, Some("rate_limit_exceeded"), Cause::EngineOverQuota),
            (
                Some("tokens"),
                Some("too_many_requests"),
                Cause::EngineOverQuota,
            ),
            (Some("insufficient_quota"), None, Cause::EngineOutOfCredit),
            (
                None,
                Some("billing_hard_limit_reached"),
                Cause::EngineOutOfCredit,
            ),
            (Some("low-credit-balance"), None, Cause::EngineOutOfCredit),
            (Some("Insufficient-Funds"), None, Cause::EngineOutOfCredit),
            (Some("authentication_error"), None, Cause::NoEngine),
            (
                Some("invalid_request_error"),
                Some("invalid_api_key"),
                Cause::NoEngine,
            ),
            (Some("permission_error"), None, Cause::NoEngine),
            (Some("overloaded_error"), None, Cause::EngineUnreachable),
            (Some("server_error"), None, Cause::EngineUnreachable),
            (Some("api_error"), None, Cause::EngineUnreachable),
            (None, None, Cause::EngineUnreachable),
        ] {
            assert_eq!(error_cause(kind, code), cause, "{kind:?} {code:?}");
        }
    }
}
