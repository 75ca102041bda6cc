//! The refusals of a stream the engine had answered `2xx`: an error it
//! sent inside the stream, an end without `[DONE]`, and the timers that
//! end one.
//!
//! An engine that has answered `200` may still fail: Anthropic sends
//! `event: error` with an `overloaded_error`, OpenAI a `data:` payload with
//! an `error` member. A client that reads those as a short answer, or as
//! "status 200", sends an operator the wrong way; so the error's codes and
//! words name its cause by the same tables as an error body's (a rate
//! limit, the account's credit, the token, else the engine's health), and
//! the reason counts what came before it.

use super::evidence::words::{codes, engine_code, engine_words, stream_error};
use super::failure::Answered;
use super::kind::{By, Kind, StreamError};
use super::render;
use super::status::code_or_words;
use crate::conceal::{Concealer, Shown};
use crate::config::site::Site;
use crate::refusal::Refusal;

pub(crate) use super::kind::Timer;

impl Timer {
    /// A few words for the list of attempts in a reason.
    pub(crate) fn short(self) -> Shown {
        render::short(&Kind::Timer {
            timer: self,
            answered: Answered::default(),
        })
    }
}

/// The refusal of an error an engine sent inside a `2xx` answer (an event
/// named `error`, or a payload with a top-level `error` member), if
/// `payload` (concealed) is one; `site` is `None` for a fake's stream.
pub(crate) fn error_in(
    site: Option<&Site>,
    concealer: &Concealer,
    answered: Answered,
    event: Option<&str>,
    payload: &str,
) -> Option<Refusal> {
    let named = stream_error(payload);
    if event != Some("error") && named.is_none() {
        return None;
    }
    let shown = |value: Option<String>| {
        value
            .map(|value| engine_code(&value, concealer))
            .filter(|value| !value.is_empty())
    };
    let (kind, code) = named.unwrap_or_default();
    let words = engine_words(payload, concealer);
    let error = StreamError {
        kind: shown(kind),
        code: shown(code),
        by: code_or_words(&codes(payload), words.as_deref(), concealer).unwrap_or(By::Status),
        words,
    };
    Some(in_stream_error(site, answered, error))
}

/// The refusal of an error the engine sent inside a stream it had
/// answered; `site` is `None` for a stream a fake scripted.
pub(crate) fn in_stream_error(
    site: Option<&Site>,
    answered: Answered,
    error: StreamError,
) -> Refusal {
    written(
        site,
        Kind::InStream {
            answered,
            error: Box::new(error),
        },
    )
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
    written(
        site,
        Kind::Undone {
            answered,
            unfinished,
        },
    )
}

/// The refusal of a stream a timer ended: the engine's health, each timer
/// named, with how to raise it.
pub(crate) fn timed_out(site: Option<&Site>, timer: Timer, answered: Answered) -> Refusal {
    written(site, Kind::Timer { timer, answered })
}

/// A stream's refusal, written for its site, or for a fake's stream.
pub(crate) fn written(site: Option<&Site>, kind: Kind) -> Refusal {
    match site {
        Some(site) => render::sent(site, kind),
        None => render::scripted(kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::Cause;
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

    /// The cause of an in-stream error with this `type` and `code`.
    fn error_cause(kind: Option<&str>, code: Option<&str>) -> Cause {
        let mut error = serde_json::Map::new();
        if let Some(kind) = kind {
            error.insert("type".into(), kind.into());
        }
        if let Some(code) = code {
            error.insert("code".into(), code.into());
        }
        let payload = serde_json::json!({ "error": error }).to_string();
        let answered = Answered {
            status: 200,
            bytes: 10,
            events: Some(1),
        };
        error_in(None, &Concealer::new([]), answered, None, &payload)
            .expect("an error")
            .cause()
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

    #[test]
    fn an_in_stream_error_whose_words_name_the_credit_is_out_of_credit() {
        let payload = r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "Your credit balance is too low to access the Anthropic API."}}"#;
        let answered = Answered {
            status: 200,
            bytes: 40,
            events: Some(2),
        };
        let site = test_site(Concealer::new([]));
        let refusal = error_in(
            Some(&site),
            site.concealer(),
            answered,
            Some("error"),
            payload,
        )
        .expect("an error");
        assert_eq!(refusal.cause(), Cause::EngineOutOfCredit);
        assert!(
            refusal
                .reason()
                .contains("whose words name the account's credit: \"credit balance is too low\""),
            "{}",
            refusal.reason()
        );
    }
}
