//! Line breaks: where one starts or ends, raw or JSON-escaped, and which
//! of them stand alone between two bytes some pattern holds side by side.
//!
//! Engines break long lines (base64 wrapped at 64 or 76, a token
//! hard-wrapped where the line ran out), and the break can fall anywhere,
//! so no pattern holds it: a joined view drops it instead. Only a break
//! that stands alone (a blank line is two breaks, and joins nothing)
//! between two bytes that are neighbours in some pattern can be inside a
//! hit, which keeps joined views rare and exact.

use super::arch::BREAKS;
use super::escapes::{Decoded, char_ref, json_escape, lenient_escape, percent_escape};
use super::positions::Positions;
use crate::text::syntax::LONGEST_ESCAPE;

/// The line break that starts at `p`, as its length: `\r\n`, `\n` or `\r`,
/// raw or JSON-escaped (a backslash and `n`, `r`, or both pairs).
#[inline]
pub(super) fn line_break(hay: &[u8], p: usize) -> Option<usize> {
    match (hay.get(p)?, hay.get(p + 1)) {
        (b'\r', Some(b'\n')) => Some(2),
        (b'\r' | b'\n', _) => Some(1),
        (b'\\', Some(b'r')) if hay.get(p + 2..p + 4) == Some(br"\n") => Some(4),
        (b'\\', Some(b'r' | b'n')) => Some(2),
        _ => None,
    }
}

/// The line break that ends at `p`, as its length, read as [`line_break`]
/// reads it from its start.
#[inline]
pub(super) fn break_ending_at(hay: &[u8], p: usize) -> Option<usize> {
    let ends = |s: &[u8]| p >= s.len() && hay.get(p - s.len()..p) == Some(s);
    [&b"\r\n"[..], b"\n", b"\r", br"\r\n", br"\n", br"\r"]
        .into_iter()
        .find(|s| ends(s))
        .map(<[u8]>::len)
}

/// One line break written two ways, raw and escaped: a raw `\r` before an
/// escape of `\n` (`\r\\n`, `\r%0A`), or an escape of `\r` before a raw
/// `\n` (`\\r\n`, `&#13;\n`), as the source span of both. Neither the
/// text's joined views (which read one kind of break each) nor a seed
/// (which an escape of `\n` or `\r` alone is not) sees it as one break,
/// so the survey seeds it: a decoded view reads it as `\r\n`, and its
/// joined view joins the lines around it.
pub(super) fn mixed_break(text: &[u8], p: usize) -> Option<(usize, usize)> {
    match *text.get(p)? {
        b'\r' if text.get(p + 1) != Some(&b'\n') => {
            escape_of(text, p + 1, b'\n').map(|len| (p, p + 1 + len))
        }
        b'\n' if p > 0 && text.get(p - 1) != Some(&b'\r') => {
            // An escape of `\r` ends in one of these (`\r`, `%0D`,
            // `\u000d`, `&#13`, `&#xD;`, `\u{d}`): most bytes before a
            // break rule one out at once.
            if !text
                .get(p - 1)
                .is_some_and(|b| matches!(b, b'r' | b'd' | b'D' | b'3' | b';' | b'}'))
            {
                return None;
            }
            (p.saturating_sub(LONGEST_ESCAPE)..p)
                .find(|&q| escape_of(text, q, b'\r') == Some(p - q))
                .map(|q| (q, p + 1))
        }
        _ => None,
    }
}

/// The length of the escape at `p` that some reading decodes to the byte
/// `want`, if one does.
fn escape_of(text: &[u8], p: usize, want: u8) -> Option<usize> {
    if !matches!(text.get(p), Some(b'\\' | b'%' | b'&')) {
        return None;
    }
    [json_escape, lenient_escape, percent_escape, char_ref]
        .into_iter()
        .filter_map(|decode| decode(text, p))
        .find(|&(_, decoded)| match decoded {
            Decoded::Byte(b) => b == want,
            Decoded::Char(c) => u32::from(c) == u32::from(want),
        })
        .map(|(len, _)| len)
}

/// The line breaks a joined view of `src` drops ([`View::join`]), as
/// source spans in order: those of the chosen kind that stand alone
/// between two bytes `adjacent` pairs.
pub(super) fn joins(
    src: &[u8],
    escaped: bool,
    adjacent: impl Fn(u8, u8) -> bool,
) -> Vec<(usize, usize)> {
    let mut breaks = LoneBreaks::new(escaped);
    Positions::of(src, if escaped { b"\\" } else { &BREAKS })
        .filter_map(|p| breaks.visit(src, p, &adjacent))
        .collect()
}

/// The line breaks of one kind (JSON-escaped, or raw) that stand alone
/// between two bytes some pattern holds side by side (a blank line is two
/// breaks, and joins nothing), read from the positions of the kind's first
/// bytes in order. A backslash and `n` is read as a break even after
/// another backslash (`\\n`): a token may end in a backslash written raw
/// before an escaped break, and reading too many breaks only adds views.
pub(super) struct LoneBreaks {
    escaped: bool,
    /// Where the last break ended: a break starting there is not alone.
    last_end: Option<usize>,
    /// Positions before this lie inside the last break.
    next: usize,
}

impl LoneBreaks {
    pub(super) fn new(escaped: bool) -> LoneBreaks {
        LoneBreaks {
            escaped,
            last_end: None,
            next: 0,
        }
    }

    /// The break at `p` as a source span, if it is a lone one between two
    /// bytes `adjacent` pairs; `p` holds the kind's first byte (`\\`, or
    /// `\r` / `\n`), and positions come in increasing order.
    #[inline]
    pub(super) fn visit(
        &mut self,
        hay: &[u8],
        p: usize,
        adjacent: impl Fn(u8, u8) -> bool,
    ) -> Option<(usize, usize)> {
        if p < self.next {
            return None;
        }
        let len = self.break_at(hay, p)?;
        let end = p + len;
        let alone = self.last_end != Some(p) && self.break_at(hay, end).is_none();
        self.last_end = Some(end);
        self.next = end;
        let before = *p.checked_sub(1).and_then(|b| hay.get(b))?;
        let after = *hay.get(end)?;
        (alone && adjacent(before, after)).then_some((p, end))
    }

    /// Only breaks of this kind: a raw line may end in a token's own
    /// backslash and `n`.
    #[inline]
    fn break_at(&self, hay: &[u8], p: usize) -> Option<usize> {
        line_break(hay, p).filter(|_| (hay.get(p) == Some(&b'\\')) == self.escaped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_break_written_half_raw_and_half_escaped_is_one_break() {
        for (text, span) in [
            (&b"ab\r\\ncd"[..], (2, 5)),
            (b"ab\r%0Acd", (2, 6)),
            (b"ab\r&#10;cd", (2, 8)),
            (b"ab\\r\ncd", (2, 5)),
            (b"ab%0d\ncd", (2, 6)),
            (b"ab&#13;\ncd", (2, 8)),
            (b"ab\\u000D\ncd", (2, 9)),
        ] {
            let p = text.iter().position(|&b| b == b'\r' || b == b'\n');
            let p = p.unwrap_or_default();
            assert_eq!(mixed_break(text, p), Some(span), "{text:?}");
        }
        // A raw CRLF, a break beside nothing escaped, and LF then CR (two
        // breaks: a blank line) are not.
        assert_eq!(mixed_break(b"ab\r\ncd", 2), None);
        assert_eq!(mixed_break(b"ab\r\ncd", 3), None);
        assert_eq!(mixed_break(b"and\nso", 3), None);
        assert_eq!(mixed_break(b"ab\n\\rcd", 2), None);
        assert_eq!(mixed_break(b"ab\r\\tcd", 2), None);
    }
}
