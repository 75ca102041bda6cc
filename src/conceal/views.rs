//! The decoded views: the text with one or more escaping families decoded,
//! each decoded byte remembering the span of source text it came from.

use super::arch::holds_none;
use super::breaks::joins;
use super::escapes::{Decoded, char_ref, json_escape, lenient_escape, percent_escape};
use super::maps::SourceMap;
use super::positions::Positions;
use memchr::{memchr, memchr2, memchr3};
use std::cell::Cell;

/// Which escaping families a view decodes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(super) struct Families {
    /// JSON / JavaScript backslash escapes, read as JavaScript reads them.
    escapes: bool,
    /// Backslash escapes read as a lenient reader of strict JSON reads
    /// them: a backslash before a character JSON does not escape is dropped
    /// (`\x41` is `x41`, `\w` is `w`). Never with `escapes` in one view.
    lenient: bool,
    /// `%XX`.
    percent: bool,
    /// HTML / XML character references.
    refs: bool,
}

impl Families {
    pub(super) const ESCAPES: Families = Families {
        escapes: true,
        lenient: false,
        percent: false,
        refs: false,
    };
    pub(super) const LENIENT: Families = Families {
        escapes: false,
        lenient: true,
        percent: false,
        refs: false,
    };
    pub(super) const PERCENT: Families = Families {
        escapes: false,
        lenient: false,
        percent: true,
        refs: false,
    };
    const REFS: Families = Families {
        escapes: false,
        lenient: false,
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
                lenient: false,
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
    /// from each of those (two or more families present). Backslashes get
    /// a second reading, a lenient JSON reader's, alone and combined, when
    /// `lenient` says it differs from JavaScript's somewhere
    /// ([`lenient_differs`]).
    #[cfg(test)]
    pub(super) fn views(self, lenient: bool) -> Vec<Families> {
        self.each_view(lenient).collect()
    }

    /// [`Families::views`], one at a time.
    pub(super) fn each_view(self, lenient: bool) -> impl Iterator<Item = Families> {
        let lenient = lenient && self.escapes;
        let combined =
            usize::from(self.escapes) + usize::from(self.percent) + usize::from(self.refs) >= 2;
        let together = Families {
            lenient: false,
            ..self
        };
        [
            (self.escapes, Families::ESCAPES),
            (lenient, Families::LENIENT),
            (self.percent, Families::PERCENT),
            (self.refs, Families::REFS),
            (combined, together),
            (
                combined && lenient,
                Families {
                    escapes: false,
                    lenient: true,
                    ..together
                },
            ),
        ]
        .into_iter()
        .filter_map(|(wanted, families)| wanted.then_some(families))
    }

    /// The view that decodes every present family at once, when two or
    /// more are present: the one [`Families::each_view`] yields after the
    /// single ones.
    pub(super) fn combined(self) -> Option<Families> {
        let count = usize::from(self.escapes) + usize::from(self.percent) + usize::from(self.refs);
        (count >= 2).then_some(Families {
            lenient: false,
            ..self
        })
    }

    /// The families whose triggers are among `classes` ([`HOLDS_CLASS`]).
    pub(super) fn of_classes(classes: u8) -> Families {
        Families {
            escapes: classes & BACKSLASH != 0,
            lenient: false,
            percent: classes & PERCENT != 0,
            refs: classes & AMPERSAND != 0,
        }
    }

    /// The classes ([`HOLDS_CLASS`]) of the triggers these families
    /// decode, and whether a backslash is read as JavaScript reads it.
    pub(super) fn classes(self) -> (u8, bool) {
        let mut classes = 0;
        for (read, class) in [
            (self.escapes || self.lenient, BACKSLASH),
            (self.percent, PERCENT),
            (self.refs, AMPERSAND),
        ] {
            if read {
                classes |= class;
            }
        }
        (classes, self.escapes)
    }

    /// Whether backslashes are present (or read) at all.
    pub(super) fn has_escapes(self) -> bool {
        self.escapes || self.lenient
    }

    fn triggered_by(self, b: u8) -> bool {
        match b {
            b'\\' => self.escapes || self.lenient,
            b'%' => self.percent,
            b'&' => self.refs,
            _ => false,
        }
    }

    /// Every trigger of these families in `hay`, in order.
    pub(super) fn triggers(self, hay: &[u8]) -> Positions<'_> {
        let mut bytes = [0u8; 3];
        let mut count = 0;
        for (present, trigger) in [
            (self.escapes || self.lenient, b'\\'),
            (self.percent, b'%'),
            (self.refs, b'&'),
        ] {
            if present && let Some(slot) = bytes.get_mut(count) {
                *slot = trigger;
                count += 1;
            }
        }
        Positions::of(hay, bytes.get(..count).unwrap_or_default())
    }

    pub(super) fn next_trigger(self, hay: &[u8], from: usize) -> Option<usize> {
        // A failed escape leaves the scan right after its trigger, which in
        // a run of triggers is the next one: skip the search set-up.
        if hay.get(from).is_some_and(|&b| self.triggered_by(b)) {
            return Some(from);
        }
        let rest = hay.get(from..)?;
        let found = match (self.escapes || self.lenient, self.percent, self.refs) {
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

/// What a text holds that decides which views it gets: the families whose
/// triggers it holds, and the kinds of line break a joined view drops.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(super) struct Holds {
    pub(super) families: Families,
    pub(super) raw_break: bool,
    pub(super) escaped_break: bool,
}

/// Up to this long, a text's triggers and breaks are read in one pass over
/// its bytes; a longer one is asked each question with a search of its
/// own, which stops at the first answer.
pub(super) const READ_IN_ONE_PASS: usize = 512;

/// The classes of bytes [`Holds::of`] looks for, as bits.
pub(super) const BACKSLASH: u8 = 1;
pub(super) const PERCENT: u8 = 2;
pub(super) const AMPERSAND: u8 = 4;
pub(super) const RAW_BREAK: u8 = 8;

/// Each byte's class for [`Holds::of`], zero for most.
pub(super) const HOLDS_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'\\' as usize] = BACKSLASH;
    table[b'%' as usize] = PERCENT;
    table[b'&' as usize] = AMPERSAND;
    table[b'\r' as usize] = RAW_BREAK;
    table[b'\n' as usize] = RAW_BREAK;
    table
};

impl Holds {
    pub(super) fn of(text: &[u8]) -> Holds {
        if text.len() > READ_IN_ONE_PASS {
            return Holds {
                families: Families::present_in(text),
                raw_break: holds_break(text, false),
                escaped_break: holds_break(text, true),
            };
        }
        // Most short texts are a stretch around a raw echo, with none of
        // the bytes looked for: sixteen bytes at a time say so.
        if holds_none(text) {
            return Holds::default();
        }
        // One look at each byte through a table: a stretch is a few dozen
        // bytes, fewer than the masks' set-up costs.
        Holds::of_classes(
            text,
            text.iter().enumerate().filter_map(|(p, &b)| {
                let class = HOLDS_CLASS[usize::from(b)];
                (class != 0).then_some((p, class))
            }),
        )
    }

    /// What `text` holds, from where its bytes of [`HOLDS_CLASS`] are and
    /// their classes: read from the text itself, or from a view's list.
    pub(super) fn of_classes(text: &[u8], classes: impl Iterator<Item = (usize, u8)>) -> Holds {
        let mut holds = Holds::default();
        let mut seen = 0u8;
        for (p, class) in classes {
            seen |= class;
            if class == BACKSLASH && matches!(text.get(p + 1), Some(b'n' | b'r')) {
                holds.escaped_break = true;
            }
        }
        holds.families = Families::of_classes(seen);
        holds.raw_break = seen & RAW_BREAK != 0;
        holds
    }

    /// Whether every view of the text is the text itself.
    pub(super) fn nothing(self) -> bool {
        self == Holds::default()
    }
}

/// How a view reads a run of backslashes too long to read from its start.
///
/// Backslashes pair up from the left (`\\` is one escape), so whether the
/// byte after a run is escaped depends on the parity of the whole run,
/// however long: a reader sees `\u002B` after 1,001 backslashes and not
/// after 1,000. That is the one reading of the decoders that is not local
/// (whether a byte is concealed must depend only on the bytes near it, see
/// `reach.rs`), so a run of at least `2 * reach + 2`
/// backslashes is read in two views, one for each parity: its first
/// `reach` as from its start, its last `reach` (`odd`: and one more, which
/// escapes the byte after the run) paired from there, and the rest
/// literal. `reach` is even and at least twice as long as the longest
/// secret, so every hit that holds backslashes of the run holds only ones
/// read as a reader reads them (or, at the end, in both ways, which can
/// only add hits); a secret that is all backslashes is found raw all along
/// the run anyway.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Runs {
    pub(super) reach: usize,
    pub(super) odd: bool,
}

impl Runs {
    /// No run is long: for tests of short texts.
    #[cfg(test)]
    pub(super) const NONE: Runs = Runs {
        reach: usize::MAX / 4,
        odd: false,
    };

    /// The backslashes of `run` read as literal, if it is long.
    fn middle(self, run: std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
        if run.len() < 2 * self.reach + 2 {
            return None;
        }
        let tail = self.reach + usize::from(self.odd);
        Some(run.start + self.reach..run.end - tail)
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
    pub(super) marks: Vec<Mark>,
    /// How many view bytes each escape decoded to: 1 to 4, or 0 for a line
    /// break a joined view drops.
    pub(super) widths: Vec<u8>,
    /// Where its bytes of [`HOLDS_CLASS`] are, with their classes, when
    /// `is_listed` (decoded by [`View::decode_listed`]).
    pub(super) listed: Vec<(usize, u8)>,
    pub(super) is_listed: bool,
    /// Where the last lookup of a hit's start, and of its end, landed.
    pub(super) start_hint: Cell<usize>,
    pub(super) end_hint: Cell<usize>,
}

/// Where one escape starts, in the view (`out`) and in the source (`src`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Mark {
    pub(super) out: usize,
    pub(super) src: usize,
}

/// Where a view byte lies: in a literal run, which ends at the mark with
/// this index, or in the escape with this index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    Literal(usize),
    Escape(usize),
}

impl View {
    /// A view of nothing yet, to decode into ([`View::decode_into`]).
    pub(super) fn empty() -> View {
        View {
            bytes: Vec::new(),
            marks: Vec::new(),
            widths: Vec::new(),
            listed: Vec::new(),
            is_listed: false,
            start_hint: Cell::new(0),
            end_hint: Cell::new(0),
        }
    }

    #[cfg(test)]
    pub(super) fn decode(src: &[u8], families: Families, runs: Runs) -> View {
        let mut view = View::empty();
        view.decode_into(src, families, runs);
        view
    }

    /// Decodes `src` into this view, in place of what it held: the views of
    /// many short stretches are decoded one after the other into the same
    /// few buffers.
    pub(super) fn decode_into(&mut self, src: &[u8], families: Families, runs: Runs) {
        let view = self;
        view.bytes.clear();
        view.marks.clear();
        view.widths.clear();
        view.is_listed = false;
        view.start_hint.set(0);
        view.end_hint.set(0);
        view.bytes.reserve(src.len());
        let mut literal_from = 0;
        let mut triggers = families.triggers(src);
        // The run of backslashes last met, as `start..end`.
        let mut run = 0..0;
        while let Some(p) = triggers.next() {
            if families.has_escapes() && src.get(p) == Some(&b'\\') {
                if !run.contains(&p) {
                    let len = src.get(p..).unwrap_or_default();
                    run = p..p + len.iter().take_while(|&&b| b == b'\\').count();
                }
                // The middle of a long run stays literal; its tail is read
                // from where `runs` says.
                if let Some(middle) = runs.middle(run.clone())
                    && middle.contains(&p)
                {
                    triggers.skip_to(middle.end);
                    continue;
                }
            }
            let decoded = match src.get(p) {
                Some(b'\\') if families.escapes => json_escape(src, p),
                Some(b'\\') => lenient_escape(src, p),
                Some(b'%') => percent_escape(src, p),
                _ => char_ref(src, p),
            };
            // Not an escape after all: the trigger stays literal, and what
            // follows it is scanned again as ordinary text.
            if let Some((len, decoded)) = decoded {
                view.bytes
                    .extend_from_slice(src.get(literal_from..p).unwrap_or_default());
                view.escape(p, decoded);
                literal_from = p + len;
                triggers.skip_to(literal_from);
            }
        }
        view.bytes
            .extend_from_slice(src.get(literal_from..).unwrap_or_default());
        view.marks.push(Mark {
            out: view.bytes.len(),
            src: src.len(),
        });
    }

    /// A joined view of `src`: `src` without the line breaks that stand
    /// alone between two bytes some pattern holds next to each other, so
    /// that an occurrence an engine broke across lines (base64 wrapped at
    /// any width, a token hard-wrapped) reads whole. `escaped` chooses the
    /// breaks: JSON-escaped ones (`\n`, `\r`, `\r\n`) or raw ones, never
    /// both, so that a token holding a backslash and an `n` is not cut by a
    /// reading of raw lines. `adjacent` says whether two bytes are
    /// neighbours in some pattern. `None` when no break is between such
    /// neighbours: then no hit can span a break, and the view would find
    /// nothing the text's own scan does not.
    pub(super) fn join(
        src: &[u8],
        escaped: bool,
        adjacent: impl Fn(u8, u8) -> bool,
    ) -> Option<View> {
        if !holds_break(src, escaped) {
            return None;
        }
        let joins = joins(src, escaped, adjacent);
        if joins.is_empty() {
            return None;
        }
        let mut view = View {
            bytes: Vec::with_capacity(src.len()),
            marks: Vec::with_capacity(joins.len() + 1),
            widths: Vec::with_capacity(joins.len()),
            listed: Vec::new(),
            is_listed: false,
            start_hint: Cell::new(0),
            end_hint: Cell::new(0),
        };
        let mut literal_from = 0;
        for (at, end) in joins {
            view.bytes
                .extend_from_slice(src.get(literal_from..at).unwrap_or_default());
            view.marks.push(Mark {
                out: view.bytes.len(),
                src: at,
            });
            view.widths.push(0);
            literal_from = end;
        }
        view.bytes
            .extend_from_slice(src.get(literal_from..).unwrap_or_default());
        view.marks.push(Mark {
            out: view.bytes.len(),
            src: src.len(),
        });
        Some(view)
    }

    pub(super) fn escape(&mut self, src: usize, decoded: Decoded) {
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

    /// How many escapes were decoded (or line breaks dropped); none means
    /// the view is its source.
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

/// Whether `src` holds a line break of the kind a joined view drops (raw,
/// or JSON-escaped): most views hold none, and are turned down before any
/// break is read.
pub(super) fn holds_break(src: &[u8], escaped: bool) -> bool {
    if !escaped {
        return memchr2(b'\n', b'\r', src).is_some();
    }
    let mut at = 0;
    while let Some(k) = src.get(at..).and_then(|rest| memchr(b'\\', rest)) {
        if matches!(src.get(at + k + 1), Some(b'n' | b'r')) {
            return true;
        }
        at += k + 1;
    }
    false
}

/// Whether a lenient JSON reader ([`lenient_escape`]) reads some backslash
/// of `text` otherwise than JavaScript does (`\x41`, `\w`, `\v`, `\u{2B}`):
/// only then is its view worth building. Where both read an escape, they
/// agree on where it ends, so one pass reads them side by side.
pub(super) fn lenient_differs(text: &[u8]) -> bool {
    let mut backslashes = Families::ESCAPES.triggers(text);
    while let Some(p) = backslashes.next() {
        // JSON's own two-byte escapes, which both read alike: one look.
        if let Some(b'"' | b'\\' | b'/' | b'n' | b't' | b'r' | b'b' | b'f' | b'\'') =
            text.get(p + 1)
        {
            backslashes.skip_to(p + 2);
            continue;
        }
        match (json_escape(text, p), lenient_escape(text, p)) {
            (Some(js), Some(lenient)) if js == lenient => backslashes.skip_to(p + js.0),
            (None, None) => {}
            _ => return true,
        }
    }
    false
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
            lenient: false,
            percent: true,
            refs: true,
        };
        let view = View::decode(text, all, Runs::NONE);
        assert_eq!(view.bytes, "aéA&b".as_bytes());
        assert_eq!(view.source(1, 3), Some((1, 7)));
        assert_eq!(view.source(3, 4), Some((7, 10)));
        assert_eq!(view.source(4, 5), Some((10, 15)));
        assert_eq!(view.source(5, 6), Some((15, 16)));
    }

    #[test]
    fn only_present_families_get_views() {
        assert!(Families::present_in(b"plain").views(false).is_empty());
        assert_eq!(
            Families::present_in(b"a%b").views(true),
            [Families::PERCENT]
        );
        assert_eq!(Families::present_in(br"a\b&c").views(false).len(), 3);
        // Each backslash reading alone, and each combined with `&`.
        assert_eq!(Families::present_in(br"a\b&c").views(true).len(), 5);
    }

    #[test]
    fn the_lenient_reading_is_wanted_only_where_it_differs() {
        assert!(!lenient_differs(br#"a\n\"b\\c\/\u002B"#));
        assert!(lenient_differs(br"a\x41"));
        assert!(lenient_differs(br"m\w-te\st"));
        assert!(lenient_differs(br"\v"));
        // `\\` is one escape: the `x` after it is plain text.
        assert!(!lenient_differs(br"\\x41"));
    }

    #[test]
    fn a_joined_view_drops_lone_breaks_between_neighbours() {
        let adjacent = |a: u8, b: u8| (a, b) == (b'c', b'd');
        let text = b"abc\r\ndef";
        let view = View::join(text, false, adjacent).map(|v| v.bytes);
        assert_eq!(view.as_deref(), Some(&b"abcdef"[..]));
        let escaped = br"abc\r\ndef";
        assert!(View::join(escaped, false, adjacent).is_none());
        let view = View::join(escaped, true, adjacent);
        assert_eq!(view.as_ref().map(|v| &v.bytes[..]), Some(&b"abcdef"[..]));
        // The break maps back with the occurrence around it.
        assert_eq!(view.and_then(|v| v.source(1, 5)), Some((1, 9)));
        // No neighbours across any break: no view.
        assert!(View::join(b"ab\ncd", false, adjacent).is_none());
        // A blank line is no wrap.
        assert!(View::join(b"abc\n\ndef", false, adjacent).is_none());
        assert!(View::join(br"abc\n\ndef", true, adjacent).is_none());
        // A break after a backslash joins the backslash to what follows.
        assert!(View::join(br"abc\\ndef", true, adjacent).is_none());
        let after_backslash = |a: u8, b: u8| (a, b) == (b'\\', b'd');
        let view = View::join(br"abc\\ndef", true, after_backslash).map(|v| v.bytes);
        assert_eq!(view.as_deref(), Some(&br"abc\def"[..]));
    }
}
