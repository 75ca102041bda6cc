//! Whether a view of a view is a view already scanned: the same bytes,
//! each mapped back to the same span of the text.
//!
//! Text that mixes two families (`%2B` and `\/` in one echo) gets a view
//! of each, and each of those a view of the other family, which decodes
//! both escapes: the bytes and the spans of the combined view, scanned
//! again. A scan records, for each hit, only its range's span in the text
//! and whether the range is a copy of the text, both read from the spans
//! of its bytes, so a view whose every byte maps where the combined
//! view's does finds exactly the hits the combined view found, joined
//! views included, and is skipped. Compared escape by escape, not byte by
//! byte: a byte-wise look costs more than the scan it would save.

use super::views::View;

/// An escape of a view: where it starts in the view, the span of the text
/// it came from, and how many view bytes it decoded to.
type Escape = (usize, usize, usize, u8);

/// Escape `i` of `view`, its span read from the mark after it (the
/// literal run after an escape is as long in the source as in the view).
fn escape(view: &View, i: usize) -> Option<Escape> {
    let mark = view.marks.get(i)?;
    let next = view.marks.get(i + 1)?;
    let width = *view.widths.get(i)?;
    let run = next.out.checked_sub(mark.out + usize::from(width))?;
    Some((mark.out, mark.src, next.src.checked_sub(run)?, width))
}

/// Whether `inner`, decoded from `outer`'s bytes, which were decoded from
/// the text `whole` was decoded from, maps every byte to the span `whole`
/// maps it to, and holds the same bytes.
///
/// Both are then the same list of escapes (where each starts in the view,
/// its span in the text, its width) over literal bytes that map one to
/// one, each counted back from the next escape (or the text's end): the
/// escapes of `inner`, each spanning what its bytes of `outer` span, and
/// those of `outer` that `inner` copied. Where an escape of `outer` lies
/// across an edge of one of `inner` (a lenient `\` before the first byte
/// of a decoded `é`), the two are not alike, whatever they map to: the
/// answer may be a false "no", never a false "yes".
pub(super) fn alike(whole: &View, outer: &View, inner: &View) -> bool {
    whole.bytes == inner.bytes && composed_alike(whole, outer, inner).unwrap_or(false)
}

fn composed_alike(whole: &View, outer: &View, inner: &View) -> Option<bool> {
    let mut wanted = (0..whole.decoded()).map(|i| escape(whole, i));
    // Each escape of the composition in turn must be `whole`'s next one.
    let mut same = |found: Escape| wanted.next() == Some(Some(found));
    let escapes = outer.decoded();
    // The next escape of `outer` not yet met.
    let mut next = 0;
    // Where the literal run of `inner` being read starts, in `inner` and in
    // `outer`.
    let (mut from, mut from_src) = (0, 0);
    for j in 0..=inner.decoded() {
        // The literal run up to mark `j` (the final one after the last
        // escape): the escapes of `outer` it copied, each whole.
        let mark = inner.marks.get(j)?;
        while next < escapes {
            let (out, src, end, width) = escape(outer, next)?;
            if out >= mark.src {
                break;
            }
            if out + usize::from(width) > mark.src || out < from_src {
                return Some(false);
            }
            if !same((out - from_src + from, src, end, width)) {
                return Some(false);
            }
            next += 1;
        }
        if j == inner.decoded() {
            break;
        }
        // Escape `j` of `inner`, over `s..t` of `outer`: its span in the
        // text runs from where byte `s` of `outer` starts to where byte
        // `t - 1` ends.
        let (out, s, t, width) = escape(inner, j)?;
        // The mark of `outer` after a literal byte, which it is counted
        // back from.
        let after = |k: usize| outer.marks.get(k);
        let start = match escape(outer, next) {
            Some((o_out, o_src, ..)) if o_out == s => o_src,
            _ => {
                let mark = after(next)?;
                mark.src.checked_sub(mark.out.checked_sub(s)?)?
            }
        };
        let mut end = None;
        while next < escapes {
            let (o_out, _, o_end, o_width) = escape(outer, next)?;
            if o_out >= t {
                break;
            }
            let o_last = o_out + usize::from(o_width);
            if o_last > t {
                return Some(false);
            }
            end = (o_last == t).then_some(o_end);
            next += 1;
        }
        let end = match end {
            Some(end) => end,
            None => {
                let mark = after(next)?;
                mark.src.checked_sub(mark.out.checked_sub(t)?)?
            }
        };
        if !same((out, start, end, width)) {
            return Some(false);
        }
        (from, from_src) = (out + usize::from(width), t);
    }
    Some(wanted.next().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conceal::maps::{Nested, SourceMap, Window};
    use crate::conceal::views::{Families, Holds, Runs};

    /// Every view of every view of `text` that [`alike`] calls alike to a
    /// view of it, checked byte by byte: every range maps to the same span
    /// of the text, and is a copy of it in both or in neither.
    fn check_alike(text: &[u8]) -> usize {
        let mut found = 0;
        let present = Holds::of(text).families;
        for whole_families in present.views(true) {
            let whole = View::decode(text, whole_families, Runs::NONE);
            for families in present.views(true) {
                let outer = View::decode(text, families, Runs::NONE);
                for inner_families in Holds::of(&outer.bytes).families.views(true) {
                    let inner = View::decode(&outer.bytes, inner_families, Runs::NONE);
                    if !alike(&whole, &outer, &inner) {
                        continue;
                    }
                    found += 1;
                    let composed = Nested {
                        outer: &Nested {
                            outer: &Window(0),
                            inner: &outer,
                        },
                        inner: &inner,
                    };
                    let direct = Nested {
                        outer: &Window(0),
                        inner: &whole,
                    };
                    let len = inner.bytes.len();
                    for start in 0..len {
                        for end in start + 1..=len {
                            assert_eq!(
                                composed.source(start, end),
                                direct.source(start, end),
                                "{:?} {start}..{end}",
                                String::from_utf8_lossy(text)
                            );
                            assert_eq!(
                                composed.copied(start, end),
                                direct.copied(start, end),
                                "{:?} {start}..{end}",
                                String::from_utf8_lossy(text)
                            );
                        }
                    }
                }
            }
        }
        found
    }

    #[test]
    fn a_view_of_a_view_is_alike_only_where_every_byte_maps_the_same() {
        let alike_somewhere = [
            &br"mw_4f%2BAb\/9z"[..],
            br"a%2Fb\u002Bc&amp;d",
            br"x\u00e9%41y",
            br"%5C%2F\u0025\x41",
        ];
        for text in alike_somewhere {
            assert!(check_alike(text) > 0, "{:?}", String::from_utf8_lossy(text));
        }
        // Escapes of one layer that a second reads again, or that straddle
        // one another, map otherwise: whatever alike says, it is checked.
        for text in [
            &br"\\u002B%2F"[..],
            br"%5Cu002B\/",
            br"&amp;#43;\/%2B",
            br"\%41\&amp;%5C\xe9",
            br"\\\%2525&#x5C;n",
            "\\\u{e9}%C3%A9\\u00e9&eacute;".as_bytes(),
        ] {
            check_alike(text);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_view_of_a_view_called_alike_maps_every_range_the_same(
            text in r#"[\\%&;#xu{}0-9a-fA-F/+nampltsolé]{0,40}"#
        ) {
            check_alike(text.as_bytes());
        }
    }

    #[test]
    fn views_of_different_bytes_or_spans_are_not_alike() {
        let text = br"ab%2Bcd\/ef";
        let percent = View::decode(text, Families::PERCENT, Runs::NONE);
        let nested = View::decode(&percent.bytes, Families::ESCAPES, Runs::NONE);
        // Different bytes.
        assert!(!alike(&percent, &percent, &nested));
        // The same bytes from other escapes: `%2F` against `\/`.
        let other = br"ab%2Bcd%2Fef";
        let whole = View::decode(other, Families::PERCENT, Runs::NONE);
        assert_eq!(whole.bytes, nested.bytes);
        assert!(!alike(&whole, &percent, &nested));
    }
}
