//! Line breaks: where one starts or ends, raw or JSON-escaped, and which
//! of them stand alone between two bytes some pattern holds side by side.
//!
//! Engines break long lines (base64 wrapped at 64 or 76, a token
//! hard-wrapped where the line ran out), and the break can fall anywhere,
//! so no pattern holds it: a joined view drops it instead. Only a break
//! that stands alone (a blank line is two breaks, and joins nothing)
//! between two bytes that are neighbours in some pattern can be inside a
//! hit, which keeps joined views rare and exact.

use super::positions::Positions;

/// The line break that starts at `p`, as its length: `\r\n`, `\n` or `\r`,
/// raw or JSON-escaped (a backslash and `n`, `r`, or both pairs).
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
pub(super) fn break_ending_at(hay: &[u8], p: usize) -> Option<usize> {
    let ends = |s: &[u8]| p >= s.len() && hay.get(p - s.len()..p) == Some(s);
    [&b"\r\n"[..], b"\n", b"\r", br"\r\n", br"\n", br"\r"]
        .into_iter()
        .find(|s| ends(s))
        .map(<[u8]>::len)
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
    Positions::of(src, if escaped { b"\\" } else { b"\n\r" })
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
