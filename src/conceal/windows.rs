//! Where views are decoded: only in windows of the text around the escapes
//! (and line breaks) that can matter, instead of over the whole text.
//!
//! A generating engine's answer escapes a newline or a quote every few
//! dozen bytes, and now and then echoes the token JSON-escaped. Once one
//! escape decodes to a byte some secret holds, every view used to be
//! decoded and searched over the whole text, several copies of it, for the
//! sake of a few spans. A view can only add a hit that holds such an escape
//! (or a line break a view joins), so the views are decoded only in the
//! stretch of text around each one that a hit holding it could reach.
//!
//! That stretch is bounded by separators: two bytes side by side that are
//! both [`separator`](super::patterns::Search::separator)s, ASCII in no
//! pattern, in no escape's body and in no base64 run, and no line break
//! (`", "`, `": "`, `. ` in JSON and prose). No hit can span such a pair:
//! its bytes are pattern bytes, escapes (each holds at most one separator,
//! the character after a backslash, last) and line breaks. No escape spans
//! one either, in the text or in a view (a view holds the pair as two
//! separators too: an escape that ends in a separator decodes to it), so
//! decoding from a separator pair on reads exactly the escapes decoding the
//! whole text reads there, and a base64 run stops at one in every view.
//! A window therefore runs from the separator pair before its seed to the
//! one after it; windows that meet are merged. Generated text then costs
//! one visit per escape and a few short windows; text with no separator
//! pair (a long base64 run, adversarial runs of triggers) is one window,
//! the whole text, as before.
//!
//! `Concealer::conceal_whole` keeps the whole-text decoding, and the
//! `conceal` and `conceal_differential` fuzz targets hold the two to the
//! same output.

/// The windows, as sorted, disjoint source spans, that cover `seeds`
/// (source spans sorted by start), each widened out to the separator pairs
/// around it (or the ends of the text).
///
/// Linear in the text: each window's edges are searched for once, forward
/// from its last seed and back no further than the previous window.
pub(super) fn windows(
    text: &[u8],
    seeds: &[(usize, usize)],
    separator: &[bool; 256],
) -> Vec<(usize, usize)> {
    let is_separator = |k: usize| text.get(k).is_some_and(|&b| separator[usize::from(b)]);
    // A window may start or end at `k` when `k - 1` and `k` are separators.
    let edge = |k: usize| k == 0 || k >= text.len() || (is_separator(k - 1) && is_separator(k));
    let forward = |mut k: usize| {
        while !edge(k) {
            k += 1;
        }
        k.min(text.len())
    };
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for &(start, end) in seeds {
        let end = end.max(start + 1).min(text.len());
        if let Some(last) = windows.last_mut()
            && start < last.1
        {
            if end > last.1 {
                last.1 = forward(end);
            }
            continue;
        }
        let floor = windows.last().map_or(0, |last| last.1);
        let mut from = start.min(text.len());
        while from > floor && !edge(from) {
            from -= 1;
        }
        windows.push((from, forward(end)));
    }
    windows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn separators(bytes: &[u8]) -> [bool; 256] {
        std::array::from_fn(|b| bytes.iter().any(|&s| usize::from(s) == b))
    }

    #[test]
    fn a_window_runs_between_the_separator_pairs_around_its_seed() {
        let text = br#"{"a":"x\u002By","b":"zz"}"#;
        let sep = separators(br#"":,{} "#);
        let at = text.iter().position(|&b| b == b'\\').unwrap_or_default();
        let windows = windows(text, &[(at, at + 6)], &sep);
        // From the `"` after `":` to the `"` before `,`.
        assert_eq!(windows, [(5, 15)]);
        assert_eq!(&text[5..15], br#""x\u002By""#);
    }

    #[test]
    fn seeds_in_one_stretch_share_a_window_and_distant_ones_do_not() {
        let text = b"aa  bb\\cc  dd\\ee\\ff  gg";
        let sep = separators(b" ");
        let windows = windows(text, &[(6, 7), (13, 14), (16, 17)], &sep);
        assert_eq!(windows, [(3, 10), (10, 20)]);
    }

    #[test]
    fn text_without_separator_pairs_is_one_window() {
        let text = b"a b c\\d e f";
        let sep = separators(b" ");
        assert_eq!(windows(text, &[(5, 7)], &sep), [(0, text.len())]);
        assert_eq!(windows(b"", &[], &sep), []);
        // A seed at the very end.
        assert_eq!(windows(b"ab  \\", &[(4, 5)], &sep), [(3, 5)]);
    }
}
