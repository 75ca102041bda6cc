//! A streamed answer read whole: a body sent with `"stream": true` through
//! a whole-answer send still arrives as server-sent events or NDJSON
//! lines, and an error the engine sent inside it is a refusal, as it is
//! from a stream, not an answer whose text happens to hold the error.

use super::channels::Carrier;
use super::ending::error_refusal;
use super::framing::{Format, Framing, Ndjson, Sse};
use crate::conceal::{Concealer, Shown};
use crate::refusal::failure::Answered;
use crate::refusal::site::Site;
use crate::refusal::{Refusal, history};

/// A whole answer as the transport read it: enough to find an error in it.
pub(crate) struct WholeAnswer<'a> {
    pub(crate) status: u16,
    /// Its text, concealed.
    pub(crate) text: &'a str,
    pub(crate) content_type: Option<&'a str>,
    pub(crate) request_id: Option<&'a Shown>,
}

/// The refusal of a whole answer whose `content-type` says it is a stream
/// (a body sent with `"stream": true`) and one of whose events or lines is
/// an error: the engine failed inside its `200`, as a stream would have
/// said. It carries what any refusal of a send does: the engine's id for
/// the request, the attempts, what each came to, the key.
pub(crate) fn error_in_answer(
    answer: WholeAnswer<'_>,
    site: &Site,
    attempts: u32,
    mut history: Vec<Shown>,
    key: Option<&Shown>,
) -> Option<Refusal> {
    let refusal = error_in_text(
        answer.text,
        answer.content_type,
        site,
        site.concealer(),
        answer.status,
    )?;
    let refusal = match answer.request_id {
        Some(id) => refusal.with_shown_request_id(id.clone()),
        None => refusal,
    };
    history.push(Shown::from("an error in the stream"));
    Some(history::after_attempts(
        site,
        refusal.with_attempts(attempts),
        &history,
        key,
    ))
}

/// The refusal an error inside a whole answer's text makes, when its
/// `content-type` says it is a stream (`text/event-stream`, NDJSON) and
/// one of its events or lines is an error. `text` is the answer's text,
/// already concealed.
fn error_in_text(
    text: &str,
    content_type: Option<&str>,
    site: &Site,
    concealer: &Concealer,
    status: u16,
) -> Option<Refusal> {
    let answered = Answered {
        status,
        bytes: u64::try_from(text.len()).unwrap_or(u64::MAX),
        events: None,
    };
    match Format::of(content_type) {
        Format::Events => first_error::<Sse>(text, site, concealer, answered),
        Format::Lines => first_error::<Ndjson>(text, site, concealer, answered),
        Format::Chunks => None,
    }
}

/// The refusal of the first frame of `text` that is an error, read by
/// framing `F` as a stream would read it, up to `[DONE]`.
fn first_error<F: Framing>(
    text: &str,
    site: &Site,
    concealer: &Concealer,
    mut answered: Answered,
) -> Option<Refusal> {
    let mut framing = F::default();
    let mut at = 0;
    if F::EVENTS {
        answered.events = Some(0);
    }
    loop {
        let mut frame = match framing.next(text, &mut at, usize::MAX) {
            Ok(Some(frame)) => frame,
            Ok(None) | Err(_) => match framing.end(&text[at..]) {
                (Some(frame), _) => {
                    at = text.len();
                    frame
                }
                (None, _) => return None,
            },
        };
        F::conceal_joined(&mut frame, concealer);
        if frame.data().trim() == "[DONE]" {
            return None;
        }
        let refusal = error_refusal(
            Some(site),
            concealer,
            answered,
            F::named(&frame),
            frame.data(),
        );
        if refusal.is_some() {
            return refusal;
        }
        answered.events = answered.events.map(|events| events.saturating_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::Cause;
    use crate::refusal::site::test_site;

    #[test]
    fn an_error_event_in_a_whole_answer_that_is_a_stream_is_its_refusal() {
        let concealer = Concealer::new([]);
        let site = test_site(concealer.clone());
        let refusal = |text: &str, media: &str| {
            error_in_text(text, Some(media), &site, &concealer, 200).map(|r| r.cause())
        };
        let sse = "data: {\"delta\":1}\n\nevent: error\ndata: {\"error\":{\"type\":\"insufficient_quota\"}}\n\n";
        assert_eq!(
            refusal(sse, "text/event-stream; charset=utf-8"),
            Some(Cause::EngineOutOfCredit)
        );
        // After [DONE] nothing is read, and JSON is not a stream.
        assert_eq!(
            refusal(&format!("data: [DONE]\n\n{sse}"), "text/event-stream"),
            None
        );
        assert_eq!(refusal(sse, "application/json"), None);
        let ndjson = "{\"a\":1}\n{\"error\":{\"type\":\"rate_limit_error\"}}";
        assert_eq!(
            refusal(ndjson, "application/x-ndjson"),
            Some(Cause::EngineOverQuota)
        );
        assert_eq!(refusal("{\"a\":1}\n", "application/jsonl"), None);
    }
}
