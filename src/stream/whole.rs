//! A streamed answer read whole: a body sent with `"stream": true` through
//! a whole-answer send still arrives as server-sent events or NDJSON
//! lines, and an error the engine sent inside it is a refusal, as it is
//! from a stream, not an answer whose text happens to hold the error.

use super::ending::error_refusal;
use super::sse::{Gathered, Lines};
use crate::conceal::Concealer;
use crate::refusal::failure::Answered;
use crate::refusal::site::Site;
use crate::refusal::{Refusal, history};
use crate::transport::reply::Received;

/// The refusal of a whole answer whose `content-type` says it is a stream
/// (a body sent with `"stream": true`) and one of whose events or lines is
/// an error: the engine failed inside its `200`, as a stream would have
/// said. It carries what any refusal of a send does: the engine's id for
/// the request, the attempts, what each came to, the key.
pub(crate) fn error_in_answer(
    received: &Received,
    site: &Site,
    attempts: u32,
    mut history: Vec<String>,
    key: Option<&str>,
) -> Option<Refusal> {
    // The door kept every value as UTF-8 text.
    let content_type = received
        .headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| std::str::from_utf8(value.as_bytes()).ok());
    let refusal = error_in_text(
        &received.text,
        content_type,
        site,
        site.concealer(),
        received.status,
    )?;
    let refusal = match &received.request_id {
        Some(id) => refusal.with_request_id(id.clone()),
        None => refusal,
    };
    history.push("an error in the stream".to_owned());
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
    let media = content_type?.split(';').next().unwrap_or_default().trim();
    let answered = |events: Option<u64>| Answered {
        status,
        bytes: u64::try_from(text.len()).unwrap_or(u64::MAX),
        events,
    };
    let mut lines = Lines::default();
    let mut at = 0;
    // Compared without case, not folded: most answers are JSON, and a
    // folded copy would be made for every one of them.
    let is = |name: &str| media.eq_ignore_ascii_case(name);
    if is("text/event-stream") {
        let mut event = Gathered::default();
        let mut events = 0u64;
        while let Some((line, _)) = lines.next(text, &mut at) {
            if !line.is_empty() {
                event.field(line);
                continue;
            }
            let Some(gathered) = event.dispatch() else {
                continue;
            };
            let data = concealer.conceal(&gathered.data);
            if data.trim() == "[DONE]" {
                return None;
            }
            let refusal = error_refusal(
                Some(site),
                concealer,
                answered(Some(events)),
                gathered.event.as_deref(),
                &data,
            );
            if refusal.is_some() {
                return refusal;
            }
            events = events.saturating_add(1);
        }
        None
    } else if is("application/x-ndjson") || is("application/jsonl") {
        let read = |line: &str| {
            (!line.trim().is_empty())
                .then(|| error_refusal(Some(site), concealer, answered(None), None, line))
                .flatten()
        };
        while let Some((line, _)) = lines.next(text, &mut at) {
            if let Some(refusal) = read(line) {
                return Some(refusal);
            }
        }
        // The last line may end without a line break.
        read(&text[at..])
    } else {
        None
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
