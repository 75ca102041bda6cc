//! How a stream ends: cleanly (and then [`Ending`] says how), or in one
//! refusal that carries what any refusal of a send carries.
//!
//! A generation the engine cut short, by a clean end of its body without
//! `[DONE]` or inside an event, reads exactly like a finished one to a
//! client that only looks for the end; many accept it as a full answer. So
//! the stream says which end it met, and a caller that asks for `[DONE]`
//! gets a refusal without it.

use super::AnswerStream;
use crate::conceal::Concealer;
use crate::refusal::Refusal;
use crate::refusal::failure::{Answered, Failure};
use crate::refusal::history;
use crate::refusal::kind::Kind;
use crate::refusal::stream::{without_done, written};

/// How a stream ended cleanly, from [`AnswerStream::ending`].
///
/// ```
/// use meterwire::{AnswerStream, Ending};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // The body ends inside its second event: that event is not yielded,
/// // and its 8 bytes (`data: tw`) are counted.
/// let mut stream = AnswerStream::from_chunks(200, ["data: one\n\ndata: tw"]);
/// let first = stream.next_event().await.expect("an event").expect("not a refusal");
/// assert_eq!(first.data(), "one");
/// assert!(stream.next_event().await.is_none());
/// assert_eq!(stream.ending(), Some(Ending::Unfinished { bytes: 8 }));
/// # }
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ending {
    /// An SSE `data: [DONE]` (or an NDJSON line `[DONE]`) arrived: the
    /// engine said it had finished.
    Done,
    /// The body ended at an event or line boundary, without `[DONE]`; the
    /// chunk reader, which parses nothing, always ends so.
    Body,
    /// The body ended cleanly inside an event: that event's bytes (`bytes`
    /// of released text) were not yielded, as the event-stream standard
    /// says, and are counted here.
    Unfinished {
        /// The bytes of the unfinished event.
        bytes: u64,
    },
}

impl Ending {
    /// A body that ended cleanly after `bytes` of an unfinished event
    /// (none: at a boundary).
    pub(super) fn at_end(bytes: u64) -> Ending {
        if bytes == 0 {
            Ending::Body
        } else {
            Ending::Unfinished { bytes }
        }
    }
}

impl AnswerStream {
    /// The stream met the clean end `how`: nothing more is yielded, and
    /// the send is metered as an answer, unless the caller asked for
    /// `[DONE]` and this end is not it, which is a refusal (returned).
    pub(super) fn end(&mut self, how: Ending) -> Option<Refusal> {
        if self.expect_done && how != Ending::Done {
            let unfinished = match how {
                Ending::Unfinished { bytes } => Some(bytes),
                _ => None,
            };
            let site = self.sent.as_ref().map(|sent| &sent.site);
            let refusal = without_done(site, self.answered(), unfinished);
            let refusal = self.carried(refusal, "no [DONE]");
            self.finish(Some(&refusal));
            return Some(refusal);
        }
        self.how = Some(how);
        self.finish(None);
        None
    }

    /// How far the stream got, for a refusal.
    pub(super) fn answered(&self) -> Answered {
        Answered {
            status: self.status,
            bytes: self.bytes,
            events: self.events,
        }
    }

    /// `refusal` with what a refusal of the send carries: the engine's id
    /// for the request, the attempts, what each came to (this one, the
    /// stream's, as `short`), and the idempotency key.
    pub(super) fn carried(&self, refusal: Refusal, short: &str) -> Refusal {
        let refusal = match &self.request_id {
            Some(id) => refusal.with_request_id(id.clone()),
            None => refusal,
        };
        let Some(sent) = &self.sent else {
            return refusal;
        };
        let mut history = sent.history.clone();
        history.push(short.to_owned());
        history::after_attempts(
            &sent.site,
            refusal.with_attempts(sent.attempts),
            &history,
            sent.key.as_deref(),
        )
    }

    /// The refusal of a failure after the head, not yet finished.
    pub(super) fn refusal_of(&self, failure: Failure) -> Refusal {
        let short = failure.short();
        let kind = Kind::Failed {
            failure,
            answered: Some(self.answered()),
        };
        let refusal = written(self.sent.as_ref().map(|sent| &sent.site), kind);
        self.carried(refusal, &short)
    }

    /// The refusal of a failure after the head, and the stream finished.
    pub(super) fn refuse_failure(&mut self, failure: Failure) -> Refusal {
        let refusal = self.refusal_of(failure);
        self.finish(Some(&refusal));
        refusal
    }

    /// A piece, event or line over the cap, refused.
    pub(super) fn over_cap(&mut self, what: &'static str) -> Refusal {
        let cap = u64::try_from(self.cap).unwrap_or(u64::MAX);
        self.refuse_failure(Failure::PieceTooLarge { what, cap })
    }

    /// The refusal an error inside the stream makes: an event named
    /// `error`, or a payload that is a JSON object with an `error` member.
    pub(super) fn error_in(&mut self, event: Option<&str>, payload: &str) -> Option<Refusal> {
        // Every event and line comes here, so usage is read here too.
        self.usage.read(event, payload, self.sent.as_mut());
        let empty = Concealer::new([]);
        let concealer = self.concealer().unwrap_or(&empty);
        let site = self.sent.as_ref().map(|sent| &sent.site);
        let refusal = error_refusal(site, concealer, self.answered(), event, payload)?;
        let refusal = self.carried(refusal, "an error in the stream");
        self.finish(Some(&refusal));
        Some(refusal)
    }

    /// Nothing more is yielded; the send is metered and traced once: an
    /// answer, or the refusal it ended in.
    pub(super) fn finish(&mut self, refusal: Option<&Refusal>) {
        self.done = true;
        self.text = String::new();
        self.taken = 0;
        if let Some(sent) = self.sent.take() {
            sent.record(
                refusal,
                self.status,
                self.request_id.as_deref(),
                self.bytes,
                self.events,
            );
        }
    }
}

/// The refusal of an error an engine sent inside a `2xx` answer, if the
/// payload is one.
pub(super) use crate::refusal::stream::error_in as error_refusal;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::site::test_site;

    #[test]
    fn a_clean_end_inside_an_event_is_unfinished_and_at_a_boundary_the_body() {
        assert_eq!(Ending::at_end(0), Ending::Body);
        assert_eq!(Ending::at_end(9), Ending::Unfinished { bytes: 9 });
    }

    #[test]
    fn a_stream_without_done_says_after_how_many_events_and_what_was_cut() {
        let site = test_site(Concealer::new([]));
        let answered = |events| Answered {
            status: 200,
            bytes: 40,
            events,
        };
        let refusal = without_done(Some(&site), answered(Some(3)), Some(12));
        assert_eq!(refusal.cause(), crate::refusal::Cause::EngineUnreachable);
        assert_eq!(refusal.status(), Some(200));
        assert!(
            refusal.reason().contains(
                "ended without [DONE] after 3 events, inside an event (12 bytes of it not read)"
            ),
            "{}",
            refusal.reason()
        );
        assert!(
            refusal.remedy().starts_with("try again later"),
            "{}",
            refusal.remedy()
        );
        let lines = without_done(None, answered(None), None);
        assert!(
            lines
                .reason()
                .contains("ended without [DONE] after 40 bytes, so"),
            "{}",
            lines.reason()
        );
    }
}
