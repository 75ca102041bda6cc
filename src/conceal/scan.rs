//! The scan: one search of one view, each hit mapped back to the span of
//! source text it came from, and the spans merged and replaced at the end.

use super::REDACTED;
use super::arch::find_trigger;
use super::breaks::{break_ending_at, line_break};
use super::escapes::{char_ref, json_escape, percent_escape};
use super::maps::SourceMap;
use super::patterns::{Kind, Outer, Search};
use crate::text::syntax::{LONGEST_ESCAPE, opened_before};
use aho_corasick::Input;
use std::borrow::Cow;

/// Views up to this long are searched by their pieces ([`Grams`]), when
/// the patterns allow it: the automaton's set-up costs more than reading
/// them that way, and most views are a stretch around one echo.
const SHORT_VIEW: usize = 1024;

/// Searches one view and records the source span of every hit.
pub(super) fn scan<M: SourceMap + ?Sized>(search: &Search, hay: &[u8], map: &M, spans: &mut Spans) {
    #[cfg(test)]
    SCANNED.with(|scanned| scanned.set(scanned.get() + hay.len()));
    if hay.len() <= SHORT_VIEW
        && let Some(grams) = &search.grams
    {
        grams.find(hay, |id, start, end| {
            record(search, hay, map, spans, id, start, end);
        });
        return;
    }
    // The leftmost-longest hit from `at` (skipping fast over text with
    // none), then every hit, overlapping ones included, in a window from
    // its start: every hit that starts at least one longest pattern before
    // the window's end lies inside it, so the next leftmost search starts
    // there. A window reaches past the first hit's end, and at least three
    // longest patterns (so that a text made of one repeated secret is read
    // about twice over, not once per hit).
    let longest = search.longest.max(1);
    let mut at = 0;
    while at < hay.len() {
        let first = match search.leftmost.try_find(Input::new(hay).range(at..)) {
            Ok(Some(hit)) => hit,
            Ok(None) => return,
            Err(_) => return spans.everything(),
        };
        let end = first.end().max(first.start() + 2 * longest) + longest;
        let window = first.start()..end.min(hay.len());
        #[cfg(test)]
        SEARCHED.with(|searched| {
            searched.set(searched.get() + (first.end() - at) + window.len());
        });
        at = if end < hay.len() {
            end - longest + 1
        } else {
            hay.len()
        };
        let input = Input::new(hay).range(window);
        let hits = match search.overlapping.try_find_overlapping_iter(input) {
            Ok(hits) => hits,
            Err(_) => return spans.everything(),
        };
        for hit in hits {
            record(
                search,
                hay,
                map,
                spans,
                hit.pattern().as_usize(),
                hit.start(),
                hit.end(),
            );
        }
    }
}

/// Records what the hit of pattern `id` at `start..end` of `hay` conceals:
/// the source span it maps back to, unless it is a copy of text the scan
/// of the text itself searches.
#[inline]
fn record<M: SourceMap + ?Sized>(
    search: &Search,
    hay: &[u8],
    map: &M,
    spans: &mut Spans,
    id: usize,
    start: usize,
    end: usize,
) {
    let kind = search.kinds.get(id).copied().unwrap_or(Kind::Exact);
    let (start, end) = match kind {
        Kind::Exact => (start, end),
        Kind::Base64Core {
            before,
            after,
            outer,
        } => {
            let outer = usize::try_from(outer)
                .ok()
                .and_then(|outer| search.outers.get(outer));
            base64_shared(hay, start, end, before, after, outer)
        }
    };
    // A hit that goes on with the digits of an escape opened before it
    // (`&#56` before a hex hit's `69…`) takes the opening: the marker
    // would leave it to be read with the digits it has, a character the
    // view did not hold (`&#56` is `8`, the token's last character). Done
    // in the view, so that an opening encoded itself (`\u0026#56`, the
    // `&` JSON-escaped) goes too.
    let start = opened_before(hay, start).unwrap_or(start);
    if map.copied(start, end) {
        return;
    }
    match map.source(start, end) {
        Some((a, b)) => spans.push(a, b),
        None => spans.everything(),
    }
}

// How many bytes the automata were set to read, on this thread, and how
// many bytes of views were scanned: the one a small multiple of the other,
// however many hits a view holds, or the search is not linear.
#[cfg(test)]
thread_local! {
    pub(super) static SEARCHED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    pub(super) static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Either alphabet, since a run may be either.
pub(super) fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// A base64 core's hit `start..end` with the characters beside it that
/// share its secret's bits: `before` characters before it and `after`
/// after it (0 or 1 each: a group of three bytes is four characters, and
/// only the one at each end of the secret mixes in the bytes around it),
/// then the padding that follows, up to two `=`. Not the whole base64 run
/// around the hit: the rest of it carries none of the secret's bits, and a
/// run can go on as far as it likes, which no concealer that settles a
/// stream piece by piece can wait for. Each step goes over a line break
/// that stands alone between two base64 characters, raw or JSON-escaped,
/// as in base64 wrapped at any width (MIME, PEM), but not over one next to
/// two dashes, which ends or starts a boundary line (`-----BEGIN …-----`,
/// `--boundary`), not a line of base64.
///
/// A core of a piece of a secret (what an echo cut short holds) first
/// takes, each way, the characters that spell the rest of the whole
/// secret's core (`outer`, either alphabet), as far as they go: all of
/// them, then `before`/`after` more as for the whole core; or up to the
/// first that differs, which then shares the secret's bits with what the
/// echo was cut to, and is taken too.
pub(super) fn base64_shared(
    hay: &[u8],
    start: usize,
    end: usize,
    before: u8,
    after: u8,
    outer: Option<&Outer>,
) -> (usize, usize) {
    let at = |k: usize| hay.get(k).copied();
    let crosses = |from: usize, len: usize, before: Option<u8>, after: Option<u8>| {
        before.is_some_and(is_base64) && after.is_some_and(is_base64) && !boundary(hay, from, len)
    };
    // A break is looked for before a character: the `n` of an escaped
    // `\n` is a base64 character too.
    let back = |mut a: usize| {
        if let Some(len) = break_ending_at(hay, a) {
            let before = a.checked_sub(len + 1).and_then(at);
            if !crosses(a - len, len, before, at(a)) {
                return a;
            }
            a -= len;
        }
        if a > 0 && at(a - 1).is_some_and(is_base64) {
            a - 1
        } else {
            a
        }
    };
    let forward = |mut b: usize| {
        if let Some(len) = line_break(hay, b) {
            let before = b.checked_sub(1).and_then(at);
            if !crosses(b, len, before, at(b + len)) {
                return b;
            }
            b += len;
        }
        if at(b).is_some_and(is_base64) {
            b + 1
        } else {
            b
        }
    };
    // Either alphabet: a cut core without `+/-_` is both alphabets'.
    let same = |k: usize, want: u8| {
        let fold = |c: u8| match c {
            b'-' => b'+',
            b'_' => b'/',
            c => c,
        };
        at(k).is_some_and(|c| fold(c) == fold(want))
    };
    let (head, tail) = outer.map_or((&[][..], &[][..]), |o| (&o.head[..], &o.tail[..]));
    let mut a = start;
    let mut before = before;
    for &want in head.iter().rev() {
        let next = back(a);
        if next == a || !same(next, want) {
            before = 1;
            break;
        }
        a = next;
    }
    for _ in 0..before {
        a = back(a);
    }
    let mut b = end;
    let mut after = after;
    for &want in tail {
        let next = forward(b);
        if next == b || !same(next - 1, want) {
            after = 1;
            break;
        }
        b = next;
    }
    for _ in 0..after {
        b = forward(b);
    }
    for _ in 0..2 {
        if at(b) == Some(b'=') {
            b += 1;
        } else if let Some(len) = line_break(hay, b)
            && at(b + len) == Some(b'=')
        {
            b += len + 1;
        }
    }
    (a, b)
}

/// Whether the break at `at..at + len` touches two dashes on either side.
fn boundary(hay: &[u8], at: usize, len: usize) -> bool {
    let dashes = |from: usize| hay.get(from..from + 2) == Some(b"--");
    at.checked_sub(2).is_some_and(dashes) || dashes(at + len)
}

/// The source spans to conceal, widened to char boundaries.
pub(super) struct Spans<'t> {
    text: &'t str,
    /// Each span, and whether an escape may straddle its start and its
    /// end ([`may_straddle`]), read when it is pushed: the text's bytes at
    /// its edges are in the cache then, and no longer when the spans are
    /// finished, after the whole text was read; most edges (a raw echo's)
    /// need no second look at all.
    spans: Vec<(usize, usize, bool, bool)>,
}

impl<'t> Spans<'t> {
    pub(super) fn new(text: &'t str) -> Spans<'t> {
        Spans {
            text,
            spans: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, start: usize, end: usize) {
        let (start, end) = (self.floor(start), self.ceil(end));
        let text = self.text.as_bytes();
        // Hits within one view come nearly in order, so folding into the
        // last span keeps a text made of one repeated secret from growing a
        // span per byte.
        if let Some(last) = self.spans.last_mut()
            && start <= last.1
            && end >= last.0
        {
            if start < last.0 {
                *last = (start, last.1, may_straddle(text, start), last.3);
            }
            if end > last.1 {
                *last = (last.0, end, last.2, may_straddle(text, end));
            }
            return;
        }
        let edges = (may_straddle(text, start), may_straddle(text, end));
        self.spans.push((start, end, edges.0, edges.1));
    }

    pub(super) fn everything(&mut self) {
        let end = self.text.len();
        self.spans
            .push((0, end, false, may_straddle(self.text.as_bytes(), end)));
    }

    /// A view may map into the middle of a multi-byte char (a percent
    /// escape of one of its bytes next to a literal one): widen to the
    /// whole char, so that no part of it survives and slicing stays valid.
    fn floor(&self, mut at: usize) -> usize {
        at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn ceil(&self, mut at: usize) -> usize {
        at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at += 1;
        }
        at
    }

    /// The spans to conceal, sorted and disjoint: overlapping and touching
    /// ones merged, each widened so that no escape straddles its edges,
    /// and merged again.
    pub(super) fn finish(mut self) -> Vec<(usize, usize)> {
        let text = self.text;
        if self.spans.is_empty() {
            return Vec::new();
        }
        // Merged before they are widened, and again after: what is
        // concealed then depends only on which bytes the hits covered, not
        // on the order or the pieces in which they were found.
        self.spans.sort_unstable();
        let mut merged = merge_edges(self.spans);
        let mut widened = false;
        for span in &mut merged {
            // An edge no escape may straddle stays where it is: the text
            // is read again only at the others.
            let (start, end, may_start, may_end) = *span;
            if !may_start && !may_end {
                continue;
            }
            let whole = whole_escapes(text.as_bytes(), (start, end));
            widened |= whole != (start, end);
            *span = (whole.0, whole.1, may_start, may_end);
        }
        let mut merged: Vec<(usize, usize)> = merged
            .into_iter()
            .map(|(start, end, ..)| (start, end))
            .collect();
        if !widened {
            return merged;
        }
        merged.sort_unstable();
        merge(merged)
    }
}

/// `text` with each of `spans` (sorted, disjoint) replaced by one marker.
/// Built left to right into a fresh string, which gives the same result as
/// replacing right to left in place, in linear time; borrowed when there
/// is nothing to replace.
pub(super) fn replace<'t>(text: &'t str, spans: &[(usize, usize)]) -> Cow<'t, str> {
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(start, end) in spans {
        out.push_str(text.get(at..start).unwrap_or_default());
        out.push_str(REDACTED);
        at = end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    Cow::Owned(out)
}

/// Sorted spans with their edges' flags, with the overlapping and
/// touching ones merged, each keeping the flags of the edges it keeps.
fn merge_edges(mut spans: Vec<(usize, usize, bool, bool)>) -> Vec<(usize, usize, bool, bool)> {
    let mut kept: usize = 0;
    for at in 0..spans.len() {
        let Some(&span) = spans.get(at) else {
            break;
        };
        match kept.checked_sub(1).and_then(|last| spans.get_mut(last)) {
            Some(last) if span.0 <= last.1 => {
                if span.1 > last.1 {
                    (last.1, last.3) = (span.1, span.3);
                }
            }
            _ => {
                if let Some(slot) = spans.get_mut(kept) {
                    *slot = span;
                }
                kept += 1;
            }
        }
    }
    spans.truncate(kept);
    spans
}

/// Sorted spans, with the overlapping and touching ones merged.
fn merge(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let mut kept: usize = 0;
    for at in 0..spans.len() {
        let Some(&(start, end)) = spans.get(at) else {
            break;
        };
        match kept.checked_sub(1).and_then(|last| spans.get_mut(last)) {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => {
                if let Some(slot) = spans.get_mut(kept) {
                    *slot = (start, end);
                }
                kept += 1;
            }
        }
    }
    spans.truncate(kept);
    spans
}

/// How many escapes a span's edge may take in, one after the other.
pub(super) const MOST_WIDENINGS: usize = 4;

/// The length of the escape (JSON/JavaScript, percent, character
/// reference) that starts at `p`, if one does.
fn escape_len(text: &[u8], p: usize) -> Option<usize> {
    let found = match text.get(p)? {
        b'\\' => json_escape(text, p),
        b'%' => percent_escape(text, p),
        b'&' => char_ref(text, p),
        _ => None,
    };
    found.map(|(len, _)| len)
}

/// A span widened so that no escape straddles its edges. A marker that
/// replaced the second half of an escape leaves the first half to be read
/// on its own (`%c` beside the marker reads as a literal `%`), which can
/// complete a token from what precedes it; an escape straddling either edge
/// is taken into the span whole.
fn whole_escapes(text: &[u8], (mut start, mut end): (usize, usize)) -> (usize, usize) {
    for _ in 0..MOST_WIDENINGS {
        let straddling = straddling(text, start).find(|&(_, escape_end)| escape_end > start);
        match straddling {
            Some((p, _)) => start = p,
            None => break,
        }
    }
    for _ in 0..MOST_WIDENINGS {
        let straddling = straddling(text, end)
            .map(|(_, escape_end)| escape_end)
            .filter(|&escape_end| escape_end > end)
            .max();
        match straddling {
            Some(escape_end) => end = escape_end.min(text.len()),
            None => break,
        }
    }
    (start, end)
}

/// The escapes that start before `edge` and may reach past it, as where
/// each starts and ends, in order. Most edges have no trigger before them
/// at all (one vectorized look), and of those that do, only a trigger close
/// enough for its longest escape to reach the edge is read.
fn straddling(text: &[u8], edge: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let from = edge.saturating_sub(LONGEST_ESCAPE);
    let first = match text.get(from..edge) {
        Some(before) if may_straddle(text, edge) => find_trigger(before).map_or(edge, |k| from + k),
        _ => edge,
    };
    (first..edge).filter_map(move |p| {
        let reach = match text.get(p) {
            Some(b'\\') => LONGEST_BACKSLASH,
            Some(b'%') => 3,
            Some(b'&') => LONGEST_ESCAPE,
            _ => return None,
        };
        if p + reach <= edge {
            return None;
        }
        escape_len(text, p).map(|len| (p, p + len))
    })
}

/// Whether an escape may straddle `edge`, by the two bytes beside it: an
/// escape across the edge holds the bytes on both sides of it, a trigger
/// or what follows one on the left (a letter or digit, `#`, `;`, `{`, `}`,
/// or the backslash of a surrogate's second half), and the same but a
/// trigger on the right, or anything after a backslash. Where it says no,
/// [`straddling`] finds nothing.
fn may_straddle(text: &[u8], edge: usize) -> bool {
    let inside =
        |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'#' | b';' | b'{' | b'}' | b'\\');
    match (
        edge.checked_sub(1).and_then(|k| text.get(k)),
        text.get(edge),
    ) {
        (Some(b'\\'), Some(_)) => true,
        (Some(&left), Some(&right)) => {
            (inside(left) || matches!(left, b'%' | b'&')) && inside(right)
        }
        _ => false,
    }
}

/// The longest backslash escape: a surrogate pair, `\ud83d\ude00`.
const LONGEST_BACKSLASH: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conceal::maps::Nested;
    use crate::conceal::views::{Families, Runs, View};

    #[test]
    fn a_span_inside_a_multibyte_char_widens_to_the_whole_char() {
        let text = "aé日b";
        let mut spans = Spans::new(text);
        // Into the middle of `é` and of `日`.
        spans.push(2, 5);
        assert_eq!(replace(text, &spans.finish()), "a[redacted]b");
    }

    #[test]
    fn a_nested_view_maps_through_both_layers() {
        let text = br"x%5Cu0041y";
        let outer = View::decode(text, Families::PERCENT, Runs::NONE);
        assert_eq!(outer.bytes, br"x\u0041y");
        let inner = View::decode(&outer.bytes, Families::ESCAPES, Runs::NONE);
        assert_eq!(inner.bytes, b"xAy");
        let nested = Nested {
            outer: &outer,
            inner: &inner,
        };
        assert_eq!(nested.source(1, 2), Some((1, 9)));
        assert_eq!(nested.source(0, 3), Some((0, 10)));
    }

    #[test]
    fn a_core_takes_the_characters_that_share_its_bits_over_lone_line_breaks() {
        let shared = |hay: &[u8], start: usize, end: usize, before: u8, after: u8| {
            let (a, b) = base64_shared(hay, start, end, before, after, None);
            hay.get(a..b).map(<[u8]>::to_vec).unwrap_or_default()
        };
        let wrapped = b"x QUJD\nRUZH\r\nSA\n=\n= y";
        assert_eq!(shared(wrapped, 7, 11, 1, 1), b"D\nRUZH\r\nS");
        assert_eq!(shared(wrapped, 7, 11, 0, 0), b"RUZH");
        assert_eq!(
            shared(br"x QUJD\nRUZH\r\nSA== y", 8, 12, 1, 1),
            br"D\nRUZH\r\nS"
        );
        // The padding after the last character goes too.
        assert_eq!(
            shared(b"QUJDRUZ\nI\n=\n= y", 0, 7, 0, 1),
            b"QUJDRUZ\nI\n=\n="
        );
        // Not over a blank line, nor into a boundary line.
        assert_eq!(shared(b"QUJD\n\nRUZH", 6, 10, 1, 0), b"RUZH");
        let pem = b"-----BEGIN X-----\nQUJD\nRUZH\n-----END X-----";
        assert_eq!(shared(pem, 18, 22, 1, 0), b"QUJD");
        assert_eq!(shared(pem, 23, 27, 1, 1), b"D\nRUZH");
    }
}
