//! A short text's triggers and line breaks, read once and handed down:
//! each view of a stretch is decoded from the stretch's list, and each
//! view of a view from the list its view kept while it was decoded.
//!
//! A stretch around an escaped echo is a few dozen bytes, and it gets a
//! view per family present, the combined one, and a view of each of those
//! that still holds a trigger. Each used to find its triggers afresh (a
//! mask of the set over a block copied into a buffer of 64 bytes) and each
//! view to be read once more for what it holds ([`Holds::of`]). A view's
//! bytes are its source's, less the escapes it decoded, plus what those
//! decoded to, so its list is the source's, less the entries inside a
//! decoded escape, moved to where they land, plus the decoded bytes that
//! are listed: exact, with no look at the view's bytes.

use super::arch::{holds_none, view_mask16};
use super::escapes::{char_ref, json_escape, lenient_escape, percent_escape};
use super::views::{AMPERSAND, BACKSLASH, Families, HOLDS_CLASS, Holds, Mark, PERCENT, View};

/// Lists in `listed` where `text`'s bytes of [`HOLDS_CLASS`] are, with
/// their classes, and says what `text` holds, as [`Holds::of`] does.
pub(super) fn list(text: &[u8], listed: &mut Vec<(usize, u8)>) -> Holds {
    listed.clear();
    // Most stretches are around a raw echo, with none of the bytes: the
    // one look [`Holds::of`] gives them, and nothing more.
    if holds_none(text) {
        return Holds::default();
    }
    let mut found = |p: usize| {
        if let Some(&b) = text.get(p) {
            listed.push((p, HOLDS_CLASS[usize::from(b)]));
        }
    };
    if let Some(last) = text.len().checked_sub(16) {
        // Sixteen bytes at a time into a mask, the last sixteen
        // overlapping the ones before, whose bits are dropped: most
        // stretches hold none of the bytes (a raw echo), or a few.
        let mut k = 0;
        while k < text.len() {
            let at = k.min(last);
            let Some(chunk) = text.get(at..).and_then(<[u8]>::first_chunk::<16>) else {
                break;
            };
            let mut mask = view_mask16(chunk) & (u32::MAX << (k - at));
            while mask != 0 {
                found(at + mask.trailing_zeros() as usize);
                mask &= mask - 1;
            }
            k = at + 16;
        }
        return holds(text, listed);
    }
    for (p, &b) in text.iter().enumerate() {
        if HOLDS_CLASS[usize::from(b)] != 0 {
            found(p);
        }
    }
    holds(text, listed)
}

/// What `text` holds, from the list of its bytes of [`HOLDS_CLASS`].
pub(super) fn holds(text: &[u8], listed: &[(usize, u8)]) -> Holds {
    Holds::of_classes(text, listed.iter().copied())
}

impl View {
    /// [`View::decode_into`] for a text with no backslash run long enough
    /// to be read two ways, from `listed`, the list of its bytes of
    /// [`HOLDS_CLASS`] ([`list`]), keeping the view's own list.
    pub(super) fn decode_listed(&mut self, src: &[u8], listed: &[(usize, u8)], families: Families) {
        self.bytes.clear();
        self.marks.clear();
        self.widths.clear();
        self.listed.clear();
        self.is_listed = true;
        self.start_hint.set(0);
        self.end_hint.set(0);
        self.bytes.reserve(src.len());
        let (decodes, javascript) = families.classes();
        let mut literal_from = 0;
        for &(p, class) in listed {
            // Inside an escape decoded.
            if p < literal_from {
                continue;
            }
            if class & decodes != 0 {
                let decoded = match class {
                    BACKSLASH if javascript => json_escape(src, p),
                    BACKSLASH => lenient_escape(src, p),
                    PERCENT => percent_escape(src, p),
                    AMPERSAND => char_ref(src, p),
                    _ => None,
                };
                // Not an escape after all: the trigger stays literal.
                if let Some((len, decoded)) = decoded {
                    self.bytes
                        .extend_from_slice(src.get(literal_from..p).unwrap_or_default());
                    let out = self.bytes.len();
                    self.escape(p, decoded);
                    for (k, &b) in self.bytes.get(out..).unwrap_or_default().iter().enumerate() {
                        let class = HOLDS_CLASS[usize::from(b)];
                        if class != 0 {
                            self.listed.push((out + k, class));
                        }
                    }
                    literal_from = p + len;
                    continue;
                }
            }
            // A byte the view copies, where it lands once the literal run
            // before it is copied.
            let at = self.bytes.len() + (p - literal_from);
            self.listed.push((at, class));
        }
        self.bytes
            .extend_from_slice(src.get(literal_from..).unwrap_or_default());
        self.marks.push(Mark {
            out: self.bytes.len(),
            src: src.len(),
        });
    }

    /// What the view holds: from its list when it kept one.
    pub(super) fn holds(&self) -> Holds {
        if self.is_listed {
            holds(&self.bytes, &self.listed)
        } else {
            Holds::of(&self.bytes)
        }
    }
}

/// [`super::views::lenient_differs`], for a text with its list.
pub(super) fn lenient_differs_listed(text: &[u8], listed: &[(usize, u8)]) -> bool {
    let mut from = 0;
    for &(p, class) in listed {
        if class != BACKSLASH || p < from {
            continue;
        }
        // JSON's own two-byte escapes, which both read alike: one look.
        if let Some(b'"' | b'\\' | b'/' | b'n' | b't' | b'r' | b'b' | b'f' | b'\'') =
            text.get(p + 1)
        {
            from = p + 2;
            continue;
        }
        match (json_escape(text, p), lenient_escape(text, p)) {
            (Some(js), Some(lenient)) if js == lenient => from = p + js.0,
            (None, None) => {}
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conceal::views::{Runs, lenient_differs};
    use proptest::prelude::*;

    fn marks(view: &View) -> Vec<(usize, usize)> {
        view.marks.iter().map(|m| (m.out, m.src)).collect()
    }

    /// The list of `text`'s bytes of [`HOLDS_CLASS`], read one by one.
    fn listed_by_hand(text: &[u8]) -> Vec<(usize, u8)> {
        (0..text.len())
            .filter_map(|p| {
                let class = HOLDS_CLASS[usize::from(*text.get(p)?)];
                (class != 0).then_some((p, class))
            })
            .collect()
    }

    /// Every view of `text` and every view of those, decoded from the
    /// lists, is the view decoded from the bytes, and each list is its
    /// view's, with what it holds.
    fn check(text: &[u8]) {
        let mut listed = Vec::new();
        let holds = list(text, &mut listed);
        assert_eq!(holds, Holds::of(text));
        assert_eq!(listed, listed_by_hand(text));
        assert_eq!(lenient_differs_listed(text, &listed), lenient_differs(text));
        let mut view = View::empty();
        let mut nested = View::empty();
        for families in holds.families.views(true) {
            view.decode_listed(text, &listed, families);
            let plain = View::decode(text, families, Runs::NONE);
            assert_eq!(view.bytes, plain.bytes);
            assert_eq!(marks(&view), marks(&plain));
            assert_eq!(view.widths, plain.widths);
            assert_eq!(view.listed, listed_by_hand(&view.bytes));
            assert_eq!(view.holds(), Holds::of(&view.bytes));
            for inner in view.holds().families.views(true) {
                nested.decode_listed(&view.bytes, &view.listed, inner);
                let plain = View::decode(&view.bytes, inner, Runs::NONE);
                assert_eq!(nested.bytes, plain.bytes);
                assert_eq!(marks(&nested), marks(&plain));
                assert_eq!(nested.widths, plain.widths);
                assert_eq!(nested.holds(), Holds::of(&nested.bytes));
            }
        }
    }

    #[test]
    fn a_view_decoded_from_its_sources_list_is_the_view_decoded_from_its_bytes() {
        for text in [
            &br"mw_4f%2BAb\/9z"[..],
            br"\\u002B%252F&amp;#43;",
            br"%5Cn\%0A&#10;\r\n%%&&\\\",
            br"\u0025\u005C\u0026\x5c\x25&bsol;&percnt;&amp;",
            "\\\u{e9}%C3%A9\\u00e9&eacute;\r\n".as_bytes(),
            br"&#x5C;n%5C%6E\\n",
            b"",
            br"\",
        ] {
            check(text);
        }
    }

    proptest! {
        #[test]
        fn any_short_text_of_escapes_decodes_alike_from_its_list(
            text in r#"[\\%&;#xXuU{}0-9a-fA-F\r\nnr/"ampltsolbqé+]{0,80}"#
        ) {
            check(text.as_bytes());
        }
    }
}
