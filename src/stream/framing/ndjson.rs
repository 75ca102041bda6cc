//! NDJSON (and JSON Lines): one frame a line, blank lines skipped, and a
//! last line with no line break after it complete at the end of the body.
//! A line `[DONE]` ends the stream as SSE's does.

use super::Framing;
use super::lines::Lines;
use crate::stream::Ending;

/// The line reader between two pieces.
#[derive(Debug, Default)]
pub(crate) struct Ndjson {
    lines: Lines,
}

impl Framing for Ndjson {
    type Frame = String;
    const PARSED: bool = true;
    const EVENTS: bool = false;

    fn next(
        &mut self,
        text: &str,
        at: &mut usize,
        cap: usize,
    ) -> Result<Option<String>, &'static str> {
        while let Some((line, _)) = self.lines.next(text, at) {
            if line.len() > cap {
                return Err("line");
            }
            if !line.trim().is_empty() {
                return Ok(Some(line.to_owned()));
            }
        }
        Ok(None)
    }

    fn end(&mut self, rest: &str) -> (Option<String>, Ending) {
        let last = (!rest.trim().is_empty()).then(|| rest.to_owned());
        (last, Ending::Body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_are_skipped_and_the_last_line_needs_no_break() {
        let mut ndjson = Ndjson::default();
        let text = "{\"a\":1}\r\n  \n\n{\"b\":2}\n{\"c\"";
        let mut at = 0;
        let mut lines = Vec::new();
        while let Some(line) = ndjson
            .next(text, &mut at, usize::MAX)
            .expect("within the cap")
        {
            lines.push(line);
        }
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(
            ndjson.end(&text[at..]),
            (Some("{\"c\"".to_owned()), Ending::Body)
        );
        assert_eq!(ndjson.end(" \n"), (None, Ending::Body));
    }
}
