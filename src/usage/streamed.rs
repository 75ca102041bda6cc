//! What a stream's events said was billed: the figures of every event that
//! can carry usage, the last ones winning field by field.

use super::Usage;
use super::read::{self, Raw};

/// The usage a stream has read so far.
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    /// The figures of every event read so far, merged.
    raw: Option<Raw>,
    /// What a fake's stream was given, until an event says otherwise.
    given: Option<Usage>,
}

impl Streamed {
    /// What a fake's whole answer said was billed, until an event says
    /// otherwise.
    pub(crate) fn given(usage: Option<Usage>) -> Streamed {
        Streamed {
            raw: None,
            given: usage,
        }
    }

    /// Reads one event's data (or one NDJSON line, `event` none), already
    /// concealed, when it can carry usage.
    pub(crate) fn read(&mut self, event: Option<&str>, data: &str) {
        if !carries(event) {
            return;
        }
        let Some(raw) = read::read(data.as_bytes()) else {
            return;
        };
        let merged = self.raw.unwrap_or_default().merged(raw);
        self.raw = Some(merged);
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
        );
        streamed.read(
            Some("message_delta"),
            r#"{"usage":{"input_tokens":null,"output_tokens":40}}"#,
        );
        let usage = streamed.usage().expect("a usage");
        assert_eq!(usage.input(), Some(15));
        assert_eq!(usage.cached(), Some(5));
        assert_eq!(usage.output(), Some(40));
    }

    #[test]
    fn a_fakes_usage_stands_until_an_event_says_otherwise() {
        let given = Usage::new().with_input(1);
        let mut streamed = Streamed::given(Some(given));
        streamed.read(None, r#"{"choices":[]}"#);
        assert_eq!(streamed.usage(), Some(given));
        streamed.read(None, r#"{"usage":{"prompt_tokens":7}}"#);
        assert_eq!(streamed.usage().and_then(|u| u.input()), Some(7));
    }
}
