//! Server-sent events, read as the WHATWG HTML standard's event-stream
//! parser reads them, from text already concealed.
//!
//! Lines end with CRLF, LF or CR; a line that starts with `:` is a comment,
//! read and dropped (engines send them to keep a connection alive); `field:
//! value` (one space after the colon dropped) sets `event`, appends to
//! `data`, or sets `id`; a blank line dispatches the event, its data lines
//! joined with `\n`, unless no data came. `retry` is read and ignored: a
//! stream is never sent again. Hand-written rather than a dependency: the
//! parser is a few lines of a standard, and it must read from the
//! concealer's released text at the pace the concealer releases it, with a
//! cap on every line and event.

/// The lines of a text that arrives in pieces.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    /// The last line ended with a CR, so an LF right after it ends nothing.
    skip_lf: bool,
}

impl Lines {
    /// The next complete line at `text[*at..]`, without its end, moving
    /// `at` past it, and how many bytes it took with its end; `None` when
    /// no line end has arrived yet. (The LF of a CRLF that pieces cut
    /// between its two bytes is skipped, not counted: the CR ended the
    /// line.)
    pub(crate) fn next<'t>(&mut self, text: &'t str, at: &mut usize) -> Option<(&'t str, usize)> {
        if self.skip_lf && text.as_bytes().get(*at) == Some(&b'\n') {
            *at += 1;
        }
        if *at < text.len() {
            self.skip_lf = false;
        }
        let start = *at;
        let rest = &text[*at..];
        let end = memchr::memchr2(b'\n', b'\r', rest.as_bytes())?;
        let line = &rest[..end];
        // The line end is ASCII, so `end + 1` is a character boundary.
        *at += end + 1;
        if rest.as_bytes()[end] == b'\r' {
            self.skip_lf = true;
            if text.as_bytes().get(*at) == Some(&b'\n') {
                *at += 1;
                self.skip_lf = false;
            }
        }
        Some((line, *at - start))
    }
}

/// One event as the parser gathered it.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    pub(crate) event: Option<String>,
    pub(crate) data: String,
    pub(crate) id: Option<String>,
    /// Whether any `data` field came (an empty one counts).
    pub(crate) has_data: bool,
}

impl Gathered {
    /// Reads one non-blank line into the event; a comment changes nothing.
    pub(crate) fn field(&mut self, line: &str) {
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
    pub(crate) fn size(&self) -> usize {
        let field = |value: &Option<String>| value.as_ref().map_or(0, String::len);
        self.data
            .len()
            .saturating_add(field(&self.event))
            .saturating_add(field(&self.id))
    }

    /// The event a blank line dispatches, if any data came; the parser is
    /// ready for the next one either way.
    pub(crate) fn dispatch(&mut self) -> Option<Gathered> {
        let gathered = std::mem::take(self);
        gathered.has_data.then_some(gathered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(pieces: &[&str]) -> Vec<String> {
        let mut lines = Lines::default();
        let mut text = String::new();
        let mut at = 0;
        let mut out = Vec::new();
        for piece in pieces {
            text.push_str(piece);
            while let Some((line, _)) = lines.next(&text, &mut at) {
                out.push(line.to_owned());
            }
        }
        out
    }

    #[test]
    fn every_line_end_ends_a_line_wherever_the_pieces_cut() {
        let text = "a\r\nb\nc\rd\r\n\r\ne\n";
        let whole = lines(&[text]);
        assert_eq!(whole, ["a", "b", "c", "d", "", "e"]);
        for cut in 0..=text.len() {
            assert_eq!(lines(&[&text[..cut], &text[cut..]]), whole, "{cut}");
        }
    }

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
    fn a_line_says_how_many_bytes_it_took() {
        let mut lines = Lines::default();
        let text = "ab\r\ncd\nef\r";
        let mut at = 0;
        assert_eq!(lines.next(text, &mut at), Some(("ab", 4)));
        assert_eq!(lines.next(text, &mut at), Some(("cd", 3)));
        assert_eq!(lines.next(text, &mut at), Some(("ef", 3)));
        assert_eq!(lines.next(text, &mut at), None);
    }
}
