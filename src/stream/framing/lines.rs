//! The lines of a text that arrives in pieces, as both line formats read
//! them: lines end with CRLF, LF or CR (a CRLF cut between its two bytes is
//! one end), and a byte-order mark that starts the stream is dropped, as
//! the event-stream standard says.

/// Where a text's lines stand between two pieces.
#[derive(Debug, Default)]
pub(super) struct Lines {
    /// The last line ended with a CR, so an LF right after it ends nothing.
    skip_lf: bool,
    /// Whether the start of the text was looked at for a byte-order mark.
    bom_checked: bool,
}

impl Lines {
    /// The next complete line at `text[*at..]`, without its end, moving
    /// `at` past it, and how many bytes it took with its end; `None` when
    /// no line end has arrived yet. (The LF of a CRLF that pieces cut
    /// between its two bytes is skipped, not counted: the CR ended the
    /// line.)
    pub(super) fn next<'t>(&mut self, text: &'t str, at: &mut usize) -> Option<(&'t str, usize)> {
        if !self.bom_checked && *at < text.len() {
            self.bom_checked = true;
            if text[*at..].starts_with('\u{feff}') {
                *at += '\u{feff}'.len_utf8();
            }
        }
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
    fn a_line_says_how_many_bytes_it_took() {
        let mut lines = Lines::default();
        let text = "ab\r\ncd\nef\r";
        let mut at = 0;
        assert_eq!(lines.next(text, &mut at), Some(("ab", 4)));
        assert_eq!(lines.next(text, &mut at), Some(("cd", 3)));
        assert_eq!(lines.next(text, &mut at), Some(("ef", 3)));
        assert_eq!(lines.next(text, &mut at), None);
    }

    #[test]
    fn a_byte_order_mark_is_dropped_only_at_the_start() {
        assert_eq!(lines(&["", "\u{feff}a\n\u{feff}b\n"]), ["a", "\u{feff}b"]);
    }
}
