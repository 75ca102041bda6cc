//! How a stream ends: cleanly (and then [`Ending`] says how), or in one
//! refusal that carries what any refusal of a send carries.
//!
//! A generation the engine cut short, by a clean end of its body without
//! `[DONE]` or inside an event, reads exactly like a finished one to a
//! client that only looks for the end; many accept it as a full answer. So
//! the stream says which end it met, and a caller that asks for `[DONE]`
//! gets a refusal without it.

use std::fmt;

use serde::Serialize;
use serde::ser::SerializeMap;

/// How a stream ended cleanly, from
/// [`AnswerStream::ending`](crate::AnswerStream::ending).
///
/// It reads as `done`, `body` or `unfinished (N bytes)`, and serializes as
/// the probe's end record writes it: `{"ended": "done"}`, `{"ended":
/// "body"}`, or `{"ended": "unfinished", "unfinishedBytes": N}`.
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

/// `done`, `body`, or `unfinished (N bytes)`.
///
/// ```
/// use meterwire::Ending;
///
/// assert_eq!(Ending::Done.to_string(), "done");
/// assert_eq!(Ending::Unfinished { bytes: 8 }.to_string(), "unfinished (8 bytes)");
/// ```
impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Done => f.write_str("done"),
            Ending::Body => f.write_str("body"),
            Ending::Unfinished { bytes: 1 } => f.write_str("unfinished (1 byte)"),
            Ending::Unfinished { bytes } => write!(f, "unfinished ({bytes} bytes)"),
        }
    }
}

/// An object: `{"ended": "done" | "body" | "unfinished"}`, with
/// `"unfinishedBytes": N` for `unfinished` only.
///
/// ```
/// use meterwire::Ending;
///
/// let json = serde_json::to_string(&Ending::Unfinished { bytes: 8 })?;
/// assert_eq!(json, r#"{"ended":"unfinished","unfinishedBytes":8}"#);
/// assert_eq!(serde_json::to_string(&Ending::Done)?, r#"{"ended":"done"}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
impl Serialize for Ending {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (ended, unfinished) = match self {
            Ending::Done => ("done", None),
            Ending::Body => ("body", None),
            Ending::Unfinished { bytes } => ("unfinished", Some(*bytes)),
        };
        let mut map = serializer.serialize_map(Some(1 + usize::from(unfinished.is_some())))?;
        map.serialize_entry("ended", ended)?;
        if let Some(bytes) = unfinished {
            map.serialize_entry("unfinishedBytes", &bytes)?;
        }
        map.end()
    }
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

/// The refusal of an error an engine sent inside a `2xx` answer, if the
/// payload is one.
pub(super) use crate::refusal::stream::error_in as error_refusal;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conceal::Concealer;
    use crate::refusal::failure::Answered;
    use crate::refusal::site::test_site;
    use crate::refusal::stream::without_done;

    #[test]
    fn a_clean_end_inside_an_event_is_unfinished_and_at_a_boundary_the_body() {
        assert_eq!(Ending::at_end(0), Ending::Body);
        assert_eq!(Ending::at_end(9), Ending::Unfinished { bytes: 9 });
    }

    #[test]
    fn an_ending_reads_and_serializes_as_the_end_record_writes_it() {
        for (ending, shown, json) in [
            (Ending::Done, "done", r#"{"ended":"done"}"#),
            (Ending::Body, "body", r#"{"ended":"body"}"#),
            (
                Ending::Unfinished { bytes: 1 },
                "unfinished (1 byte)",
                r#"{"ended":"unfinished","unfinishedBytes":1}"#,
            ),
            (
                Ending::Unfinished { bytes: u64::MAX },
                "unfinished (18446744073709551615 bytes)",
                r#"{"ended":"unfinished","unfinishedBytes":18446744073709551615}"#,
            ),
        ] {
            assert_eq!(ending.to_string(), shown);
            assert_eq!(serde_json::to_string(&ending).ok().as_deref(), Some(json));
        }
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
