//! The decoded views: the text with one or more escaping families decoded,
//! each decoded byte remembering the span of source text it came from.

use super::escapes::{char_ref, json_escape, percent_escape};
use super::scan::SourceMap;
use memchr::{memchr, memchr2, memchr3};
use std::cell::Cell;

/// Which escaping families a view decodes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(super) struct Families {
    /// JSON / JavaScript backslash escapes.
    escapes: bool,
    /// `%XX`.
    percent: bool,
    /// HTML / XML character references.
    refs: bool,
}

impl Families {
    pub(super) const ESCAPES: Families = Families {
        escapes: true,
        percent: false,
        refs: false,
    };
    pub(super) const PERCENT: Families = Families {
        escapes: false,
        percent: true,
        refs: false,
    };
    const REFS: Families = Families {
        escapes: false,
        percent: false,
        refs: true,
    };

    /// The families whose trigger byte occurs, in at most one pass: each
    /// search looks only for the triggers not yet seen, from where the last
    /// new one was found, so text dense with one trigger (`%%%%…`) costs a
    /// vectorized scan rather than a step per trigger.
    pub(super) fn present_in(text: &[u8]) -> Families {
        let mut present = Families::default();
        let mut at = 0;
        // Each round finds a family not yet present, or ends: at most four.
        for _ in 0..4 {
            let missing = Families {
                escapes: !present.escapes,
                percent: !present.percent,
                refs: !present.refs,
            };
            let Some(p) = missing.next_trigger(text, at) else {
                break;
            };
            match text.get(p) {
                Some(b'\\') => present.escapes = true,
                Some(b'%') => present.percent = true,
                _ => present.refs = true,
            }
            at = p + 1;
        }
        present
    }

    /// One view per present family, plus the combined one when it differs
    /// from each of those (two or more families present).
    pub(super) fn views(self) -> Vec<Families> {
        let singles = [
            (self.escapes, Families::ESCAPES),
            (self.percent, Families::PERCENT),
            (self.refs, Families::REFS),
        ];
        let mut views: Vec<Families> = singles
            .iter()
            .filter(|(present, _)| *present)
            .map(|(_, f)| *f)
            .collect();
        if views.len() >= 2 {
            views.push(self);
        }
        views
    }

    fn triggered_by(self, b: u8) -> bool {
        match b {
            b'\\' => self.escapes,
            b'%' => self.percent,
            b'&' => self.refs,
            _ => false,
        }
    }

    pub(super) fn next_trigger(self, hay: &[u8], from: usize) -> Option<usize> {
        // A failed escape leaves the scan right after its trigger, which in
        // a run of triggers is the next one: skip the search set-up.
        if hay.get(from).is_some_and(|&b| self.triggered_by(b)) {
            return Some(from);
        }
        let rest = hay.get(from..)?;
        let found = match (self.escapes, self.percent, self.refs) {
            (true, true, true) => memchr3(b'\\', b'%', b'&', rest),
            (true, true, false) => memchr2(b'\\', b'%', rest),
            (true, false, true) => memchr2(b'\\', b'&', rest),
            (false, true, true) => memchr2(b'%', b'&', rest),
            (true, false, false) => memchr(b'\\', rest),
            (false, true, false) => memchr(b'%', rest),
            (false, false, true) => memchr(b'&', rest),
            (false, false, false) => None,
        };
        found.map(|k| from + k)
    }
}

/// A decoded view of the text.
///
/// Hand-written: no decoding crate reports which source bytes each decoded
/// byte came from, and that is the whole point here.
///
/// The map back to the text records only the escapes, 17 bytes each: a
/// literal run between two escapes is a plain copy, so where it came from
/// follows from the escape after it. Text dense with escapes still costs a
/// few bytes of map per byte of text, not dozens.
pub(super) struct View {
    pub(super) bytes: Vec<u8>,
    /// Where each decoded escape starts, in the view and in the source, in
    /// order, then one more mark at the ends of both.
    marks: Vec<Mark>,
    /// How many view bytes each escape decoded to (1 to 4).
    widths: Vec<u8>,
    /// Where the last lookup of a hit's start, and of its end, landed.
    start_hint: Cell<usize>,
    end_hint: Cell<usize>,
}

/// Where one escape starts, in the view (`out`) and in the source (`src`).
#[derive(Clone, Copy, Debug)]
struct Mark {
    out: usize,
    src: usize,
}

/// Where a view byte lies: in a literal run, which ends at the mark with
/// this index, or in the escape with this index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    Literal(usize),
    Escape(usize),
}

/// What one escape decodes to.
pub(super) enum Decoded {
    Byte(u8),
    Char(char),
}

impl View {
    pub(super) fn decode(src: &[u8], families: Families) -> View {
        let mut view = View {
            bytes: Vec::with_capacity(src.len()),
            marks: Vec::new(),
            widths: Vec::new(),
            start_hint: Cell::new(0),
            end_hint: Cell::new(0),
        };
        let mut literal_from = 0;
        let mut at = 0;
        while let Some(p) = families.next_trigger(src, at) {
            let decoded = match src.get(p) {
                Some(b'\\') => json_escape(src, p),
                Some(b'%') => percent_escape(src, p),
                _ => char_ref(src, p),
            };
            match decoded {
                Some((len, decoded)) => {
                    view.bytes
                        .extend_from_slice(src.get(literal_from..p).unwrap_or_default());
                    view.escape(p, decoded);
                    at = p + len;
                    literal_from = at;
                }
                // Not an escape after all: the trigger stays literal, and
                // what follows it is scanned again as ordinary text.
                None => at = p + 1,
            }
        }
        view.bytes
            .extend_from_slice(src.get(literal_from..).unwrap_or_default());
        view.marks.push(Mark {
            out: view.bytes.len(),
            src: src.len(),
        });
        view
    }

    fn escape(&mut self, src: usize, decoded: Decoded) {
        let out = self.bytes.len();
        match decoded {
            Decoded::Byte(b) => self.bytes.push(b),
            Decoded::Char(c) => {
                let mut buf = [0u8; 4];
                self.bytes
                    .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        self.marks.push(Mark { out, src });
        // At most 4: one char.
        self.widths
            .push(u8::try_from(self.bytes.len() - out).unwrap_or(u8::MAX));
    }

    /// How many escapes were decoded; none means the view is its source.
    pub(super) fn decoded(&self) -> usize {
        self.widths.len()
    }

    /// Where view byte `k` lies, starting the search at `hint`, where the
    /// previous lookup ended.
    fn place(&self, k: usize, hint: &Cell<usize>) -> Option<Place> {
        let marks = &self.marks;
        let after = |i: usize| marks.get(i).is_some_and(|m| m.out > k);
        let before = |i: usize| i == 0 || marks.get(i - 1).is_some_and(|m| m.out <= k);
        // The first mark past `k`. Hits come in order, so it is usually the
        // hinted one or a few after it: step forward a little, and only
        // then search.
        let mut next = hint.get();
        let mut steps = 0;
        while !(before(next) && after(next)) {
            steps += 1;
            if !before(next) || steps > 8 {
                next = marks.partition_point(|m| m.out <= k);
                break;
            }
            next += 1;
        }
        if !after(next) {
            return None;
        }
        hint.set(next);
        if let Some(e) = next.checked_sub(1)
            && let (Some(mark), Some(&width)) = (marks.get(e), self.widths.get(e))
            && k < mark.out + usize::from(width)
        {
            return Some(Place::Escape(e));
        }
        Some(Place::Literal(next))
    }

    /// The source span of view byte `k`.
    fn source_of(&self, k: usize, hint: &Cell<usize>) -> Option<(usize, usize)> {
        match self.place(k, hint)? {
            Place::Literal(next) => {
                let mark = self.marks.get(next)?;
                let at = mark.src.checked_sub(mark.out.checked_sub(k)?)?;
                Some((at, at + 1))
            }
            Place::Escape(e) => {
                let (mark, next) = (self.marks.get(e)?, self.marks.get(e + 1)?);
                let width = usize::from(*self.widths.get(e)?);
                // The literal run after the escape is as long in the source
                // as in the view.
                let run = next.out.checked_sub(mark.out + width)?;
                Some((mark.src, next.src.checked_sub(run)?))
            }
        }
    }
}

impl SourceMap for View {
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let (a, _) = self.source_of(start, &self.start_hint)?;
        let (_, b) = self.source_of(end.checked_sub(1)?, &self.end_hint)?;
        Some((a, b))
    }

    fn copied(&self, start: usize, end: usize) -> bool {
        let Some(last) = end.checked_sub(1) else {
            return false;
        };
        match self.place(start, &self.start_hint) {
            Some(Place::Literal(next)) => {
                self.place(last, &self.end_hint) == Some(Place::Literal(next))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_maps_an_escape_back_to_its_whole_source() {
        let text = br"a\u00e9%41&amp;b";
        let all = Families {
            escapes: true,
            percent: true,
            refs: true,
        };
        let view = View::decode(text, all);
        assert_eq!(view.bytes, "aéA&b".as_bytes());
        assert_eq!(view.source(1, 3), Some((1, 7)));
        assert_eq!(view.source(3, 4), Some((7, 10)));
        assert_eq!(view.source(4, 5), Some((10, 15)));
        assert_eq!(view.source(5, 6), Some((15, 16)));
    }

    #[test]
    fn only_present_families_get_views() {
        assert!(Families::present_in(b"plain").views().is_empty());
        assert_eq!(Families::present_in(b"a%b").views(), [Families::PERCENT]);
        assert_eq!(Families::present_in(br"a\b&c").views().len(), 3);
    }
}
