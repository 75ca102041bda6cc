//! How a stream's text is cut into frames: server-sent events
//! (`sse.rs`), NDJSON lines (`ndjson.rs`), or raw chunks (`chunks.rs`).
//!
//! Every reader of a stream is the same loop (`flow.rs`): released text in,
//! frames out, and at the end of the body, how it ended. Only the cutting
//! differs, so each format is a small [`Framing`] fed text and asked for
//! frames and an ending, and everything else a frame goes through (the
//! engine's `[DONE]`, its errors, what it billed, the channels, the
//! deltas) is written once, for any of them. A new format is one more
//! file here.

mod chunks;
mod lines;
mod ndjson;
mod sse;

pub(crate) use chunks::Chunks;
pub(crate) use ndjson::Ndjson;
pub(crate) use sse::Sse;

use super::Ending;
use super::channels::Carrier;
use crate::conceal::Concealer;

/// One format's cutting of released text into frames.
pub(crate) trait Framing: Default + Send {
    /// What the format yields: an event, a line, a chunk.
    type Frame: Carrier + Send;

    /// Whether a frame is read as the engine's words: `[DONE]` ends the
    /// stream, an error in it is a refusal, its usage is read, and a call
    /// that asked for `[DONE]` is refused without it. Raw chunks are not.
    const PARSED: bool;

    /// Whether frames are counted as events, which a refusal then names
    /// (else it counts bytes).
    const EVENTS: bool;

    /// The next complete frame of `text[*at..]`, moving `at` past the text
    /// it took (a blank line or a comment is taken and yields nothing);
    /// `Ok(None)` once more text is needed. `Err` names what grew past
    /// `cap` (a line, an event).
    fn next(
        &mut self,
        text: &str,
        at: &mut usize,
        cap: usize,
    ) -> Result<Option<Self::Frame>, &'static str>;

    /// The body ended cleanly with `rest` not taken: the last frame the
    /// format completes there, if any, and how the stream ended (asked
    /// again after that frame, with nothing left).
    fn end(&mut self, rest: &str) -> (Option<Self::Frame>, Ending);

    /// The frame's type as the engine named it (`None`: the default one),
    /// as errors and usage are read by it.
    fn named(_frame: &Self::Frame) -> Option<&str> {
        None
    }

    /// Conceals again what the format joined inside the frame: a form
    /// split over the lines it joined is a form broken by a line break.
    fn conceal_joined(_frame: &mut Self::Frame, _concealer: &Concealer) {}
}

/// What a `content-type` says a stream is, as a reader that does not
/// choose picks its framing: `text/event-stream` is events,
/// `application/x-ndjson` or `application/jsonl` lines, anything else
/// chunks of text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Events,
    Lines,
    Chunks,
}

impl Format {
    pub(crate) fn of(content_type: Option<&str>) -> Format {
        let media = content_type
            .and_then(|value| value.split(';').next())
            .unwrap_or_default()
            .trim();
        // Compared without case, not folded: a folded copy would be made
        // for every answer.
        let is = |name: &str| media.eq_ignore_ascii_case(name);
        if is("text/event-stream") {
            Format::Events
        } else if is("application/x-ndjson") || is("application/jsonl") {
            Format::Lines
        } else {
            Format::Chunks
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_type_picks_the_format_whatever_its_case_and_parameters() {
        for (content_type, format) in [
            (Some("text/event-stream"), Format::Events),
            (Some("Text/Event-Stream; charset=utf-8"), Format::Events),
            (Some("application/x-ndjson"), Format::Lines),
            (Some(" application/jsonl ;x=y"), Format::Lines),
            (Some("application/json"), Format::Chunks),
            (Some(""), Format::Chunks),
            (None, Format::Chunks),
        ] {
            assert_eq!(Format::of(content_type), format, "{content_type:?}");
        }
    }
}
