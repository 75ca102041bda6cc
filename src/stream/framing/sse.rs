//! Server-sent events, read as the WHATWG HTML standard's event-stream
//! parser reads them, from text already concealed.
//!
//! A line that starts with `:` is a comment, read and dropped (engines
//! send them to keep a connection alive); `field: value` (one space after
//! the colon dropped) sets `event`, appends to `data`, or sets `id`; a
//! blank line dispatches the event, its data lines joined with `\n`,
//! unless no data came. `retry` is read and ignored: a stream is never
//! sent again. The body ending inside an event drops that event, as the
//! standard says, and the ending counts its bytes. Hand-written rather
//! than a dependency: the parser is a few lines of a standard, and it must
//! read from the concealer's released text at the pace the concealer
//! releases it, with a cap on every line and event.

use std::borrow::Cow;

use super::Framing;
use super::lines::Lines;
use crate::conceal::Concealer;
use crate::stream::{Ending, Event};

/// The event-stream parser between two pieces.
#[derive(Debug, Default)]
pub(crate) struct Sse {
    lines: Lines,
    event: Gathered,
    /// The bytes of the event being read, since the parser was last
    /// between events: what an end of the body there cuts off.
    pending: u64,
}

impl Framing for Sse {
    type Frame = Event;
    const PARSED: bool = true;
    const EVENTS: bool = true;

    fn next(
        &mut self,
        text: &str,
        at: &mut usize,
        cap: usize,
    ) -> Result<Option<Event>, &'static str> {
        while let Some((line, used)) = self.lines.next(text, at) {
            if line.len() > cap {
                return Err("line");
            }
            if line.is_empty() {
                self.pending = 0;
                if let Some(gathered) = self.event.dispatch() {
                    return Ok(Some(Event {
                        event: gathered.event,
                        data: gathered.data,
                        id: gathered.id,
                    }));
                }
                continue;
            }
            // A comment between events is no part of one.
            if !(line.starts_with(':') && self.pending == 0) {
                self.pending = self.pending.saturating_add(used as u64);
            }
            self.event.field(line);
            if self.event.size() > cap {
                return Err("event");
            }
        }
        Ok(None)
    }

    fn end(&mut self, rest: &str) -> (Option<Event>, Ending) {
        let cut = self.pending.saturating_add(rest.len() as u64);
        (None, Ending::at_end(cut))
    }

    fn named(frame: &Event) -> Option<&str> {
        frame.event.as_deref()
    }

    fn conceal_joined(frame: &mut Event, concealer: &Concealer) {
        if let Cow::Owned(data) = concealer.conceal(&frame.data) {
            frame.data = data;
        }
    }
}

/// One event as the parser gathers it.
#[derive(Debug, Default)]
struct Gathered {
    event: Option<String>,
    data: String,
    id: Option<String>,
    /// Whether any `data` field came (an empty one counts).
    has_data: bool,
}

impl Gathered {
    /// Reads one non-blank line into the event; a comment changes nothing.
    fn field(&mut self, line: &str) {
        if line.starts_with(':') {
            return;
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            // An empty type is the default one, `message`, as the standard
            // says: none, as for an event that named no type.
            "event" => self.event = (!value.is_empty()).then(|| value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // An id with a NUL is ignored, as the standard says.
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            _ => {}
        }
    }

    /// How many bytes the event holds so far, for the cap.
    fn size(&self) -> usize {
        let field = |value: &Option<String>| value.as_ref().map_or(0, String::len);
        self.data
            .len()
            .saturating_add(field(&self.event))
            .saturating_add(field(&self.id))
    }

    /// The event a blank line dispatches, if any data came; the parser is
    /// ready for the next one either way.
    fn dispatch(&mut self) -> Option<Gathered> {
        let gathered = std::mem::take(self);
        gathered.has_data.then_some(gathered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_gather_into_an_event_and_a_blank_line_dispatches_it() {
        let mut event = Gathered::default();
        for line in [
            ": keep-alive",
            "event: delta",
            "data: one",
            "data:two",
            "id: 7",
            "retry: 10",
        ] {
            event.field(line);
        }
        let dispatched = event.dispatch().expect("data came");
        assert_eq!(dispatched.event.as_deref(), Some("delta"));
        assert_eq!(dispatched.data, "one\ntwo");
        assert_eq!(dispatched.id.as_deref(), Some("7"));
        // Nothing carries over, and no data is no event.
        event.field("event: ping");
        assert!(event.dispatch().is_none());
        event.field("data");
        assert_eq!(event.dispatch().map(|e| e.data), Some(String::new()));
    }

    #[test]
    fn an_empty_event_field_is_the_default_type_and_every_field_counts_toward_the_cap() {
        let mut event = Gathered::default();
        for line in ["event: delta", "event:", "id: 12", "data: abc"] {
            event.field(line);
        }
        assert_eq!(event.size(), 2 + 3);
        let dispatched = event.dispatch().expect("data came");
        assert_eq!(dispatched.event, None, "message");
        event.field("event: x");
        assert_eq!(event.size(), 1);
    }

    #[test]
    fn the_end_of_the_body_inside_an_event_counts_its_bytes_and_comments_between_events_do_not() {
        let mut sse = Sse::default();
        let text = ": ping\n\ndata: one\n\nevent: x\ndata: tw";
        let mut at = 0;
        let first = sse.next(text, &mut at, usize::MAX).expect("within the cap");
        assert_eq!(first.map(|e| e.data), Some("one".to_owned()));
        assert_eq!(sse.next(text, &mut at, usize::MAX), Ok(None));
        let (last, ending) = sse.end(&text[at..]);
        assert!(last.is_none());
        assert_eq!(ending, Ending::Unfinished { bytes: 9 + 8 });
        assert_eq!(Sse::default().end("").1, Ending::Body);
    }

    #[test]
    fn a_line_or_an_event_over_the_cap_is_named() {
        let mut at = 0;
        assert_eq!(
            Sse::default().next("data: abcdef\n", &mut at, 8),
            Err("line")
        );
        let mut at = 0;
        let text = "data: abcd\ndata: efgh\ndata: ijkl\n";
        assert_eq!(Sse::default().next(text, &mut at, 12), Err("event"));
    }
}
