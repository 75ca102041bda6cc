//! What a stream's events said was billed: the figures of every event that
//! can carry usage, the last ones winning field by field.

use super::Usage;
use super::read::{self, Raw};
use crate::stream::{AnswerStream, Sent};

/// The usage a stream has read so far.
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    /// The figures of every event read so far, merged.
    raw: Option<Raw>,
    /// What a fake's stream was given, until an event says otherwise.
    given: Option<Usage>,
}

impl Streamed {
    /// Reads one event's data (or one NDJSON line, `event` none), already
    /// concealed, when it can carry usage, and keeps the stream's ending
    /// (which meters and traces it) up to date.
    pub(crate) fn read(&mut self, event: Option<&str>, data: &str, ending: Option<&mut Sent>) {
        if !carries(event) {
            return;
        }
        let Some(raw) = read::read(data.as_bytes()) else {
            return;
        };
        let merged = self.raw.unwrap_or_default().merged(raw);
        self.raw = Some(merged);
        if let Some(ending) = ending {
            ending.usage = self.usage();
        }
    }

    /// What the events said, or else what a fake was given.
    pub(crate) fn usage(&self) -> Option<Usage> {
        match self.raw.and_then(|raw| raw.figures()) {
            Some(figures) => Some(Usage::from(figures)),
            None => self.given,
        }
    }
}

/// Whether an event of this type can carry usage: every type but those an
/// engine is known to send without it (Anthropic's content blocks and
/// pings, the Responses API's deltas), so that the text of a long answer
/// is never searched for it.
fn carries(event: Option<&str>) -> bool {
    match event {
        None | Some("message" | "message_start" | "message_delta") => true,
        Some(
            "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_stop"
            | "ping",
        ) => false,
        Some(kind) => match kind.strip_prefix("response.") {
            Some(rest) => matches!(rest, "completed" | "incomplete" | "failed" | "done"),
            None => true,
        },
    }
}

impl AnswerStream {
    /// What the engine billed, as the stream's events and lines said it:
    /// OpenAI's last chunk (with `stream_options.include_usage`), the
    /// Responses API's `response.completed`, Anthropic's `message_start`
    /// then each `message_delta` (cumulative), Gemini's `usageMetadata`,
    /// Ollama's `done: true` line. The last figures win, count by count;
    /// read it after the end. `None` when no event said, and for a stream
    /// read with [`next_chunk`](Self::next_chunk), whose text is not read
    /// as events.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut stream = meterwire::AnswerStream::from_chunks(200, [
    ///     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
    ///     "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n",
    /// ]);
    /// while let Some(event) = stream.next_event().await {
    ///     event.expect("not a refusal");
    /// }
    /// let usage = stream.usage().expect("a usage");
    /// assert_eq!((usage.input(), usage.output()), (Some(25), Some(15)));
    /// # }
    /// ```
    pub fn usage(&self) -> Option<Usage> {
        self.usage.usage()
    }

    /// The same stream, with what a fake's whole answer said it billed.
    pub(crate) fn with_usage(mut self, usage: Option<Usage>) -> AnswerStream {
        self.usage.given = usage;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_events_that_can_carry_usage_are_read() {
        for kind in [
            None,
            Some("message"),
            Some("message_start"),
            Some("message_delta"),
            Some("response.completed"),
            Some("response.incomplete"),
            Some("an-engine-of-its-own"),
        ] {
            assert!(carries(kind), "{kind:?}");
        }
        for kind in [
            "content_block_delta",
            "ping",
            "message_stop",
            "response.output_text.delta",
            "response.created",
        ] {
            assert!(!carries(Some(kind)), "{kind}");
        }
    }

    #[test]
    fn a_later_event_overrides_only_the_counts_it_carries() {
        let mut streamed = Streamed::default();
        streamed.read(
            Some("message_start"),
            r#"{"message":{"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}"#,
            None,
        );
        streamed.read(
            Some("message_delta"),
            r#"{"usage":{"input_tokens":null,"output_tokens":40}}"#,
            None,
        );
        let usage = streamed.usage().expect("a usage");
        assert_eq!(usage.input(), Some(15));
        assert_eq!(usage.cached(), Some(5));
        assert_eq!(usage.output(), Some(40));
    }

    #[test]
    fn a_fakes_usage_stands_until_an_event_says_otherwise() {
        let given = Usage::new().with_input(1);
        let mut streamed = Streamed {
            given: Some(given),
            ..Streamed::default()
        };
        streamed.read(None, r#"{"choices":[]}"#, None);
        assert_eq!(streamed.usage(), Some(given));
        streamed.read(None, r#"{"usage":{"prompt_tokens":7}}"#, None);
        assert_eq!(streamed.usage().and_then(|u| u.input()), Some(7));
    }
}
