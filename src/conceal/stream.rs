//! Concealment of a text that arrives in pieces: each piece released as
//! soon as what follows can no longer change how it is concealed, and the
//! pieces joined exactly what [`Concealer::conceal`] gives the whole text.
//!
//! A streamed answer must be concealed piece by piece (a predictor shows
//! each token as it comes), yet a form of a secret can be cut anywhere by
//! the network. Concealing each piece alone leaks a secret split across
//! two (buildbot's masker, still open); holding whole lines misses a token
//! hard-wrapped across two; flushing a hold-back on a timer leaks whatever
//! was held. This type relies on the concealer being *local* instead
//! (`DESIGN.md`, "Locality"): whether a byte is concealed depends only on
//! the bytes within [`Concealer::reach`] of it, and on none at all across
//! a *barrier*, a byte that no form can hold or reach over:
//!
//! - a separator (ASCII in no pattern, no escape's body and no base64
//!   run, and no line break: the `"`, `,`, `:` and spaces of JSON);
//! - a line break after a separator, or after a `;`, `{`, `}` or `#` in no
//!   pattern when no escape can end at it (`{"a":1}\n`);
//! - a blank line (`\n\n`, `\r\n\r\n`, `\r\r`): an SSE event's end, which
//!   no form spans, since each line of a secret is a secret of its own;
//! - a *gap*: a cut with two bytes on each side, no two neighbours among
//!   the four standing side by side in any pattern (the secrets, their
//!   hex, their base64 cores), none of them a trigger, a line break or
//!   `=`, and no trigger within the longest escape before them. No form
//!   can hold either byte beside the cut, in any view, so each hit lies
//!   on one side of it, and a base64 core's neighbours reach the cut at
//!   most. This is the prefix test: text after the last gap is what could
//!   still begin, or be inside, a form of a held secret (a word that runs
//!   on, a wrapped line, a base64 run); text before it is released, though
//!   it holds no separator (`maintenance\nzzz…`, where `zz` is in no
//!   pattern).
//!
//! So a piece is concealed up to its last barrier and released at once
//! (a complete event, a JSON line), and what follows the barrier is held
//! until a later one arrives, or, in a stretch with none (a long base64
//! run), until more than the reach has arrived past it: then all but the
//! last radius of bytes (half the reach) are settled, concealed with a radius of released
//! text before them. Nothing is released on a timer; there is none.
//!
//! The work is linear: each push looks back from its end only over the
//! bytes it brought, a barrier's text is concealed once, and a stretch
//! with no barrier is concealed in windows that advance by at least the
//! radius, a few times over at most. A merged span that runs on (a secret
//! repeated back to back) is one marker released once, and what continues
//! it is swallowed, not held.

use super::Concealer;
use super::REDACTED;
use super::patterns::{Matcher, Search};
use super::reach::{CLOSING_REACH, ESCAPE_REACH};
use memchr::{memchr3, memrchr3};

impl Concealer {
    /// A stream that conceals a text arriving in pieces exactly as
    /// [`Concealer::conceal`] conceals it whole.
    pub(crate) fn stream(&self) -> ConcealStream {
        // The concealer itself, not the secrets it knows now: a token that
        // rotates while the stream is open is concealed from the next piece.
        ConcealStream::new(self.clone())
    }
}

/// Conceals a text pushed in pieces; see the module docs.
pub(crate) struct ConcealStream {
    concealer: Concealer,
    /// The concealer's state the reach and the barriers were read with.
    state: std::sync::Arc<super::Inner>,
    /// [`Concealer::reach`], and the radius it is twice.
    reach: usize,
    radius: usize,
    /// Released text the rest is still read with, then the text held back.
    buf: String,
    /// Where in `buf` the held text starts.
    held_from: usize,
    /// How far into `buf` barriers have been looked for.
    looked: usize,
    /// Whether `buf` starts at a barrier (or the text's start), so that
    /// nothing released before it matters to what follows.
    clean_start: bool,
    /// The last three bytes released before `buf` starts, for a blank
    /// line that spans the two.
    before: [Option<u8>; 3],
    /// Whether the last byte released was concealed: a concealed stretch
    /// that goes on is the same marker.
    in_marker: bool,
    /// Whether a concealer that fails closed has released its one marker.
    failed_closed: bool,
}

impl ConcealStream {
    fn new(concealer: Concealer) -> ConcealStream {
        let state = concealer.inner.load_full();
        let reach = concealer.reach();
        ConcealStream {
            concealer,
            state,
            reach,
            radius: reach / 2,
            buf: String::new(),
            held_from: 0,
            looked: 0,
            clean_start: true,
            before: [None; 3],
            in_marker: false,
            failed_closed: false,
        }
    }

    /// Takes the next piece of the text (already valid UTF-8; the caller
    /// joins characters split across network pieces) and appends to `out`
    /// the concealed text that can be released now.
    pub(crate) fn push(&mut self, piece: &str, out: &mut String) {
        let state = self.concealer.inner.load_full();
        if !std::sync::Arc::ptr_eq(&state, &self.state) {
            // The concealer learned or dropped a secret (a token file that
            // rotated): what is held is concealed with the new state, held
            // to its reach, and looked at again for barriers, which a new
            // secret's characters can remove. What was released is gone.
            self.reach = self.concealer.reach();
            self.radius = self.reach / 2;
            self.looked = self.held_from;
            self.state = std::sync::Arc::clone(&state);
        }
        let search = match &state.matcher {
            Matcher::Nothing => return out.push_str(piece),
            Matcher::FailClosed => return self.fail_closed(piece, out),
            Matcher::Automaton(search) => search,
        };
        // The piece from after its first separator to after its last is
        // concealed where it lies, not copied: what comes before the first
        // is concealed with what is held, and what follows the last is
        // held in its turn. Separators are barriers, whatever is around
        // them, so the pieces concealed apart are concealed as whole.
        if let Some((first, last)) = separators_at_ends(search, piece)
            && let (Some(head), Some(middle), Some(tail)) = (
                piece.get(..first),
                piece.get(first..last),
                piece.get(last..),
            )
        {
            self.buf.push_str(head);
            let end = self.buf.len();
            self.settle(end, end, out);
            self.drop_before(end, true);
            self.release(middle, out);
            self.buf.push_str(tail);
            self.looked = 0;
        } else {
            self.buf.push_str(piece);
        }
        if let Some(barrier) = self.last_barrier(search) {
            self.settle(barrier, barrier, out);
            self.drop_before(barrier, true);
        }
        self.looked = self.buf.len();
        if self.held() > self.reach {
            let settled = floor_boundary(&self.buf, self.buf.len() - self.radius);
            self.settle(self.buf.len(), settled, out);
            let context = floor_boundary(&self.buf, settled.saturating_sub(self.radius));
            self.drop_before(context, false);
        }
    }

    /// The text has ended: appends everything still held.
    pub(crate) fn finish(&mut self, out: &mut String) {
        if matches!(self.concealer.state().matcher, Matcher::Automaton(_)) {
            self.settle(self.buf.len(), self.buf.len(), out);
        }
        *self = ConcealStream::new(self.concealer.clone());
    }

    /// The most a push of `piece` bytes can append to its output: what is
    /// held and the piece, and what markers add where they are longer than
    /// what they replace (each replaces a hit's source, at least the
    /// shortest pattern, but the one a release's end cuts short). A reader
    /// that reserves this before each push never grows its output by
    /// doubling past what the text needs.
    pub(crate) fn most_released(&self, piece: usize) -> usize {
        let input = self.held().saturating_add(piece);
        match &self.concealer.state().matcher {
            Matcher::Nothing => piece,
            Matcher::FailClosed => REDACTED.len(),
            Matcher::Automaton(search) => {
                let shortest = search.shortest.max(1);
                let markers = input / shortest + 1;
                let growth = REDACTED.len().saturating_sub(shortest);
                input
                    .saturating_add(REDACTED.len())
                    .saturating_add(markers.saturating_mul(growth))
            }
        }
    }

    /// How many bytes of input are held back, not yet released.
    pub(crate) fn held(&self) -> usize {
        self.buf.len() - self.held_from
    }

    /// Conceals `buf[..window]` and releases the held text up to `to`.
    fn settle(&mut self, window: usize, to: usize, out: &mut String) {
        let from = self.held_from;
        if to <= from {
            return;
        }
        let text = self.buf.get(..window).unwrap_or_default();
        release(&self.concealer, text, from, to, &mut self.in_marker, out);
        self.held_from = to;
    }

    /// Conceals and releases `text`, which follows a barrier and ends with
    /// one, and nothing is held before it: `buf` then starts after it.
    fn release(&mut self, text: &str, out: &mut String) {
        release(
            &self.concealer,
            text,
            0,
            text.len(),
            &mut self.in_marker,
            out,
        );
        for &byte in text.as_bytes().iter().skip(text.len().saturating_sub(3)) {
            self.before = [self.before[1], self.before[2], Some(byte)];
        }
        self.clean_start = true;
    }

    /// Forgets `buf` before `at` (released text no longer read), which is
    /// a barrier when `barrier` says so.
    fn drop_before(&mut self, at: usize, barrier: bool) {
        let dropped = self.buf.as_bytes().get(..at).unwrap_or_default();
        for &byte in dropped.iter().skip(at.saturating_sub(3)) {
            self.before = [self.before[1], self.before[2], Some(byte)];
        }
        self.buf.drain(..at);
        self.held_from -= at;
        self.looked = self.looked.saturating_sub(at);
        self.clean_start = barrier || (self.clean_start && at == 0);
    }

    /// The end of the last barrier in the bytes not yet looked at, if any.
    /// A gap ([`ConcealStream::ends_gap`]) is known only once the two bytes
    /// after it have come, so the last two bytes looked at are looked at
    /// again.
    fn last_barrier(&self, search: &Search) -> Option<usize> {
        let first = self.looked.saturating_sub(GAP_AHEAD).max(self.held_from);
        let mut triggers = Triggers::new(self.buf.as_bytes(), first);
        (first..self.buf.len())
            .rev()
            .find(|&k| self.ends_barrier(search, k) || self.ends_gap(search, k, &mut triggers))
            .map(|k| k + 1)
    }

    /// Whether a *gap* ends with the byte at `k`: the two bytes before the
    /// cut after it and the two after it are ones no form can hold side by
    /// side, so no form can hold either of the two beside the cut (see the
    /// module docs). The bytes are raw in every view: none is a trigger,
    /// none is in an escape (no trigger within the longest escape two
    /// layers deep before them), none is a line break a joined view could
    /// drop or padding a base64 core takes. A hit then lies wholly on one
    /// side of the cut, and what a base64 core takes beside it reaches the
    /// cut at most, from either side: the text before it is concealed
    /// alone exactly as whole, and so is the text after it.
    fn ends_gap(&self, search: &Search, k: usize, triggers: &mut Triggers) -> bool {
        let cut = k + 1;
        let (Some(a), Some(b), Some(c), Some(d)) = (
            self.back(k, 1),
            self.byte(k),
            self.byte(cut),
            self.byte(cut + 1),
        ) else {
            return false;
        };
        let plain = |x: u8| !matches!(x, b'\\' | b'%' | b'&' | b'\n' | b'\r' | b'=');
        if !(plain(a) && plain(b) && plain(c) && plain(d))
            || search.adjacent(a, b)
            || search.adjacent(b, c)
            || search.adjacent(c, d)
            || !self.buf.is_char_boundary(cut)
        {
            return false;
        }
        // No escape reaches the four bytes from before them: with none
        // within the longest escape two layers deep, or none since a
        // barrier the text before `buf` cannot read past.
        let from = cut.checked_sub(ESCAPE_REACH);
        match triggers.last_before(cut + GAP_AHEAD) {
            Some(t) => from.is_some_and(|from| t < from),
            None => from.is_some() || self.clean_start,
        }
    }

    /// Whether a barrier ends with the byte at `k` (see the module docs).
    fn ends_barrier(&self, search: &Search, k: usize) -> bool {
        let Some(byte) = self.byte(k) else {
            return false;
        };
        let line_end = |b: Option<u8>| matches!(b, Some(b'\n' | b'\r'));
        if search.separator[usize::from(byte)] {
            return true;
        }
        if !line_end(Some(byte)) {
            return false;
        }
        let mut prev = self.back(k, 1);
        let mut last = k.checked_sub(1);
        if line_end(prev) {
            // A blank line: two line ends in a row, `\r\n` being one.
            let crlf = byte == b'\n' && prev == Some(b'\r');
            let before_crlf = self.back(k, 2);
            if !crlf || line_end(before_crlf) {
                return true;
            }
            prev = before_crlf;
            last = k.checked_sub(2);
        }
        match prev {
            Some(b) if search.separator[usize::from(b)] => true,
            Some(b) if search.closes[usize::from(b)] => {
                // A `;` or `}` ends no escape when no trigger comes before
                // it within the longest escape, or since a barrier.
                let Some(last) = last else {
                    return false;
                };
                let from = last.saturating_sub(CLOSING_REACH);
                let bytes = self.buf.as_bytes().get(from..last).unwrap_or_default();
                memchr3(b'\\', b'%', b'&', bytes).is_none() && (from > 0 || self.clean_start)
            }
            _ => false,
        }
    }

    /// The byte `back` positions before `k`, reading on into the bytes
    /// released before `buf` starts.
    fn back(&self, k: usize, back: usize) -> Option<u8> {
        match k.checked_sub(back) {
            Some(p) => self.byte(p),
            None => self.before.get(3 + k - back).copied().flatten(),
        }
    }

    fn byte(&self, k: usize) -> Option<u8> {
        self.buf.as_bytes().get(k).copied()
    }

    /// A concealer that could not be built conceals a whole text as one
    /// marker: the stream releases it with the first byte, then nothing.
    fn fail_closed(&mut self, piece: &str, out: &mut String) {
        if !piece.is_empty() && !self.failed_closed {
            out.push_str(REDACTED);
            self.failed_closed = true;
        }
    }
}

/// Appends `text[from..to]` to `out`, concealed as `text` is concealed
/// whole; a marker that goes on from what was released before (`in_marker`)
/// is the same marker.
fn release(
    concealer: &Concealer,
    text: &str,
    from: usize,
    to: usize,
    in_marker: &mut bool,
    out: &mut String,
) {
    let spans = concealer.spans(text);
    #[cfg(test)]
    CONCEALED.with(|concealed| concealed.set(concealed.get() + text.len()));
    let mut at = from;
    for &(start, end) in spans.iter().filter(|&&(_, end)| end > from) {
        if start >= to {
            break;
        }
        let (start, end) = (start.max(from), end.min(to));
        if start > at {
            out.push_str(text.get(at..start).unwrap_or_default());
            *in_marker = false;
        }
        if !*in_marker {
            out.push_str(REDACTED);
            *in_marker = true;
        }
        at = end;
    }
    if at < to {
        out.push_str(text.get(at..to).unwrap_or_default());
        *in_marker = false;
    }
}

/// How many bytes after a gap's cut decide whether it is one.
const GAP_AHEAD: usize = 2;

/// The last escape trigger before a place, for places looked at from the
/// end of a text back: each found once, by one backward search from where
/// the last was, so the bytes are read once however many places ask.
struct Triggers<'b> {
    bytes: &'b [u8],
    /// No place before this is asked about.
    floor: usize,
    /// The last trigger found, and the place it was searched before.
    found: Option<(Option<usize>, usize)>,
}

impl<'b> Triggers<'b> {
    fn new(bytes: &'b [u8], first: usize) -> Triggers<'b> {
        Triggers {
            bytes,
            floor: first.saturating_sub(ESCAPE_REACH),
            found: None,
        }
    }

    /// The last trigger before `end`, if one lies at or after the floor.
    fn last_before(&mut self, end: usize) -> Option<usize> {
        if let Some((found, before)) = self.found
            && end <= before
            && found.is_none_or(|t| t < end)
        {
            return found;
        }
        let end = end.min(self.bytes.len());
        let hay = self.bytes.get(self.floor..end).unwrap_or_default();
        let found = memrchr3(b'\\', b'%', b'&', hay).map(|k| self.floor + k);
        self.found = Some((found, end));
        found
    }
}

/// How far from each end of a piece a separator is looked for.
const SEPARATOR_REACH: usize = 256;

/// Where a piece's first separator ends, and its last, when the two are
/// apart and each is near its end of the piece.
fn separators_at_ends(search: &Search, piece: &str) -> Option<(usize, usize)> {
    let bytes = piece.as_bytes();
    let separator = |b: &u8| search.separator[usize::from(*b)];
    let first = bytes.iter().take(SEPARATOR_REACH).position(separator)? + 1;
    let from_end = bytes
        .iter()
        .rev()
        .take(SEPARATOR_REACH)
        .position(separator)?;
    let last = bytes.len() - from_end;
    (first < last).then_some((first, last))
}

/// The largest character boundary of `text` at or before `at`.
fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

// How many bytes the stream has handed the concealer, on this thread: a
// few times the text's length at most, however it was cut.
#[cfg(test)]
thread_local! {
    static CONCEALED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use proptest::prelude::*;

    /// Has `+`, `/`, `_` and `-`: its JSON, percent, HTML and two base64
    /// forms all differ from it.
    const TOKEN: &str = "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN";

    /// Every form the concealer promises to find (raw, escaped, encoded,
    /// base64, and wrapped across lines), of `TOKEN`.
    fn forms() -> Vec<String> {
        let each = |f: &dyn Fn(char) -> String| TOKEN.chars().map(f).collect::<String>();
        let mut forms = vec![
            TOKEN.to_owned(),
            TOKEN.replace('+', r"\u002B").replace('/', r"\/"),
            each(&|c| format!(r"\u{:04x}", u32::from(c))),
            TOKEN.replace('+', r"\u002b").replace('_', "%5F"),
            TOKEN.replace('+', "%2B").replace('/', "%2f"),
            each(&|c| format!("%{:02X}", u32::from(c))),
            each(&|c| format!("&#{};", u32::from(c))),
            TOKEN
                .replace('+', "&#x2B;")
                .replace('/', "&sol;")
                .replace('_', "&lowbar;"),
            TOKEN
                .replace('+', "&#43")
                .replace('/', r"\u002F")
                .replace('4', "%34"),
            TOKEN.replace('+', r"\\u002B").replace('/', r"\\/"),
            TOKEN.replace('+', "%252B"),
            TOKEN.bytes().map(|b| format!("{b:02x}")).collect(),
        ];
        for prefix in ["", "x", "xy", "Bearer ", "user:"] {
            let data = format!("{prefix}{TOKEN}");
            forms.push(STANDARD.encode(&data));
            forms.push(URL_SAFE_NO_PAD.encode(&data));
            forms.push(format!(
                "QUJD{}",
                URL_SAFE_NO_PAD.encode(format!("{data}!!"))
            ));
        }
        let encoded = STANDARD.encode(format!("user:{TOKEN}"));
        for (width, line_break) in [(76, "\n"), (8, "\r\n"), (5, r"\n"), (3, r"\r\n")] {
            let lines: Vec<&str> = encoded
                .as_bytes()
                .chunks(width)
                .map(|line| std::str::from_utf8(line).unwrap_or_default())
                .collect();
            forms.push(lines.join(line_break));
        }
        for line_break in [
            "\n",
            "\r\n",
            r"\n",
            r"\r\n",
            r"\u000a",
            "%0A",
            "&#10;",
            "&#13;&#10;",
            "\r\\n",
        ] {
            let (head, tail) = TOKEN.split_at(13);
            forms.push(format!("{head}{line_break}{tail}"));
        }
        forms
    }

    /// `text` cut at `cuts` (moved back to character boundaries), streamed
    /// piece by piece, joined.
    fn streamed(concealer: &Concealer, text: &str, cuts: &[usize]) -> String {
        let mut stream = concealer.stream();
        let mut out = String::new();
        let mut at = 0;
        let mut cuts = cuts.to_vec();
        cuts.sort_unstable();
        for cut in cuts.into_iter().chain([text.len()]) {
            let cut = floor_boundary(text, cut.max(at));
            let (before, most) = (out.len(), stream.most_released(cut - at));
            stream.push(text.get(at..cut).unwrap_or_default(), &mut out);
            assert!(stream.held() <= concealer.reach().max(cut - at));
            assert!(out.len() - before <= most, "released past most_released");
            at = cut;
        }
        let (before, most) = (out.len(), stream.most_released(0));
        stream.finish(&mut out);
        assert!(out.len() - before <= most, "released past most_released");
        out
    }

    /// The texts the forms are streamed in: an SSE stream, NDJSON, and a
    /// JSON body with no line breaks at all.
    fn texts(form: &str) -> [String; 3] {
        [
            format!("event: e\ndata: said {form} here\n\ndata: {{\"k\":\"{form}\"}}\n\n"),
            format!("{{\"a\":1}}\n{{\"token\":\"{form}\",\"n\":2}}\n{{\"b\":\"{form}x\"}}\n"),
            format!("{{\"error\":\"key {form} rejected\",\"echo\":\"{form}\"}}"),
        ]
    }

    #[test]
    fn every_form_cut_at_every_position_streams_as_it_conceals_whole() {
        let concealer = Concealer::new([TOKEN]);
        for form in forms() {
            for text in texts(&form) {
                let whole = concealer.conceal(&text);
                assert!(!whole.contains(TOKEN) && !whole.contains(&form), "{whole}");
                assert!(whole.contains(REDACTED), "{text:?}");
                for cut in 0..=text.len() {
                    let out = streamed(&concealer, &text, &[cut]);
                    assert_eq!(out, whole, "{text:?} cut at {cut}");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn every_form_cut_anywhere_into_many_pieces_streams_as_it_conceals_whole(
            form in prop::sample::select(forms()),
            shape in 0usize..3,
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
            filler in "[ -~\n]{0,40}",
        ) {
            let concealer = Concealer::new([TOKEN]);
            let text = format!("{filler}{}{filler}", texts(&form)[shape]);
            let cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(text.len() + 1)).collect();
            let whole = concealer.conceal(&text);
            prop_assert!(!whole.contains(TOKEN));
            prop_assert_eq!(streamed(&concealer, &text, &cuts), whole);
        }

        #[test]
        fn any_text_streams_as_it_conceals_whole(
            secret in "[!-~]{4,12}",
            text in "([!-~ \n\r]|\\\\u00|%2|&#|\\\\\\\\){0,120}",
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let concealer = Concealer::new([secret.as_str()]);
            let text = text.replace("@", &secret);
            let cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(text.len() + 1)).collect();
            prop_assert_eq!(streamed(&concealer, &text, &cuts), concealer.conceal(&text));
        }
    }

    proptest! {
        // Each case builds a concealer, whose automata cost most of its
        // time in a debug build: fewer cases, and the fuzz targets for more.
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Runs with no separator, where only gaps settle the text: base64
        /// characters, padding, line breaks, triggers and forms of the
        /// secret, cut anywhere.
        #[test]
        fn a_run_with_no_separator_streams_as_it_conceals_whole(
            secret in "[A-Za-z0-9+/=_-]{4,20}",
            prefix in "[a-z]{0,2}",
            text in r"([A-Za-z0-9+/_-]|=|\n|\r\n|%2B|\\u00|&#|@|#){0,160}",
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
        ) {
            let concealer = Concealer::new([secret.as_str()]);
            let text = text
                .replace('@', &STANDARD.encode(format!("{prefix}{secret}")))
                .replace('#', &secret);
            let cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(text.len() + 1)).collect();
            prop_assert_eq!(streamed(&concealer, &text, &cuts), concealer.conceal(&text));
        }
    }

    /// The figure `DESIGN.md` derives for a 32-character token: hex of 64
    /// bytes, each up to 1,620 bytes of text, and the rest.
    #[test]
    fn a_complete_event_is_released_before_the_next_byte_arrives() {
        let concealer = Concealer::new([TOKEN]);
        for blank in ["\n\n", "\r\n\r\n", "\r\r", "\n\r\n"] {
            for event in [
                format!("data: {TOKEN}{blank}"),
                format!("data: mw_live_4f+Ab{blank}"),
                format!("data: {{\"k\":\"{}\"}}{blank}", STANDARD.encode(TOKEN)),
            ] {
                let mut stream = concealer.stream();
                let mut out = String::new();
                stream.push(&event, &mut out);
                assert_eq!(out, concealer.conceal(&event), "{event:?}");
                assert_eq!(stream.held(), 0, "{event:?}");
            }
        }
    }

    #[test]
    fn a_line_whose_end_cannot_begin_a_form_is_released_at_once() {
        let concealer = Concealer::new([TOKEN]);
        for line in [
            "{\"a\":1}\n",
            "{\"a\":\"x\"}\n",
            "[1, 2, \"three\"]\r\n",
            "ok.\n",
        ] {
            let mut stream = concealer.stream();
            let mut out = String::new();
            stream.push(line, &mut out);
            assert_eq!(out, line);
            assert_eq!(stream.held(), 0, "{line:?}");
        }
    }

    #[test]
    fn a_line_whose_end_could_begin_a_form_is_held_until_the_next_bytes_settle_it() {
        let concealer = Concealer::new([TOKEN]);
        let (head, tail) = TOKEN.split_at(13);
        let mut stream = concealer.stream();
        let mut out = String::new();
        stream.push(&format!("data: {head}\n"), &mut out);
        // The line may be a hard-wrapped token's first half.
        assert_eq!(out, "data: ");
        assert_eq!(stream.held(), head.len() + 1);
        stream.push(&format!("{tail} rest"), &mut out);
        // `re` goes at once: no two of `r`, `e`, `s`, `t` stand side by
        // side in any pattern, so no form can hold the `e` or the `s`;
        // only the two bytes that decide that gap are held.
        assert_eq!(out, format!("data: {REDACTED} re"));
        assert_eq!(stream.held(), 2);
        stream.push("\n\n", &mut out);
        assert_eq!(out, format!("data: {REDACTED} rest\n\n"));
        assert_eq!(stream.held(), 0);
        // Settled by bytes that turn out to hold no form.
        let mut stream = concealer.stream();
        let mut out = String::new();
        stream.push("data: mw_live\n", &mut out);
        assert!(stream.held() > 0);
        stream.push("and more, ", &mut out);
        assert_eq!(out, "data: mw_live\nand more, ");
        assert_eq!(stream.held(), 0);
    }

    /// A run with no separator is released up to its last gap, and what a
    /// gap cuts is concealed on each side as whole: base64 cores touching
    /// it from either side, padding and line breaks beside it, escapes
    /// near it, cut at every place.
    #[test]
    fn a_run_with_no_separator_is_released_up_to_its_last_gap() {
        let concealer = Concealer::new([TOKEN]);
        let mut stream = concealer.stream();
        let mut out = String::new();
        stream.push(
            &format!("<html>down for maintenance\n{}", "z".repeat(70_000)),
            &mut out,
        );
        assert!(
            out.starts_with("<html>down for maintenance\nzzz"),
            "{out:.40}"
        );
        assert_eq!(stream.held(), GAP_AHEAD);
        let cores = [
            STANDARD.encode(format!("x{TOKEN}")),
            URL_SAFE_NO_PAD.encode(format!("xy{TOKEN}!")),
            STANDARD.encode(TOKEN),
        ];
        for core in &cores {
            for text in [
                format!("zz{core}zzzz{core}qq{core}"),
                format!("qqqq{core}{core}zzzz=zz{core}\nzz"),
                format!("qq%2Bqq{}{core}zzzz", "q".repeat(300)),
                format!("qq{TOKEN}zzzz{}zz{TOKEN}", &core[3..]),
            ] {
                let whole = concealer.conceal(&text);
                assert!(whole.contains(REDACTED), "{text}");
                for cut in 0..=text.len() {
                    assert_eq!(
                        streamed(&concealer, &text, &[cut]),
                        whole,
                        "{text} at {cut}"
                    );
                }
                let cuts: Vec<usize> = (0..text.len()).collect();
                assert_eq!(streamed(&concealer, &text, &cuts), whole, "{text} bytewise");
            }
        }
    }

    /// A stretch with no barrier (one base64 run, the token repeated back to
    /// back) is settled a radius at a time: never more than the reach is
    /// held, however it is cut, and what is held does not grow with it.
    #[test]
    fn hold_back_never_exceeds_the_reach() {
        let concealer = Concealer::new(["mw-Q7vX2"]);
        let reach = concealer.reach();
        let run: String = STANDARD
            .encode("x".repeat(3 * reach / 4) + "mw-Q7vX2" + &"y".repeat(3 * reach / 4))
            .repeat(2);
        for piece in [1, 7, 4096, 100_000] {
            let mut stream = concealer.stream();
            let mut out = String::new();
            for chunk in run.as_bytes().chunks(piece) {
                stream.push(std::str::from_utf8(chunk).unwrap_or_default(), &mut out);
                assert!(stream.held() <= reach, "{} held of {reach}", stream.held());
                assert!(stream.buf.capacity() <= 2 * (reach + piece));
            }
            stream.finish(&mut out);
            assert_eq!(out, concealer.conceal(&run), "pieces of {piece}");
        }
    }

    #[test]
    fn a_secret_repeated_for_megabytes_is_one_marker_in_bounded_memory() {
        let concealer = Concealer::new([TOKEN]);
        let piece = TOKEN.repeat(2048);
        let mut stream = concealer.stream();
        let mut out = String::new();
        stream.push("key ", &mut out);
        for _ in 0..256 {
            stream.push(&piece, &mut out);
            assert!(stream.held() <= concealer.reach());
            assert!(out.len() <= "key ".len() + REDACTED.len());
        }
        stream.push(" end", &mut out);
        stream.finish(&mut out);
        assert_eq!(out, format!("key {REDACTED} end"));
        assert!(stream.buf.capacity() <= 2 * (concealer.reach() + piece.len()));
    }

    /// One byte at a time, a text is concealed a few times over at most:
    /// a barrier's text once, a stretch with none in windows that advance
    /// by a radius.
    #[test]
    fn one_byte_pieces_are_concealed_a_few_times_over_not_once_per_byte() {
        let concealer = Concealer::new([TOKEN]);
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!(
                "{{\"i\":{i},\"text\":\"line\\none \\\"two\\\" caf\\u00e9\",\"key\":\"{}\"}}\n",
                if i % 7 == 0 { TOKEN } else { "none" }
            ));
        }
        text.push_str(&STANDARD.encode(TOKEN.repeat(4000)));
        CONCEALED.with(|concealed| concealed.set(0));
        let cuts: Vec<usize> = (0..text.len()).collect();
        assert_eq!(streamed(&concealer, &text, &cuts), concealer.conceal(&text));
        let concealed = CONCEALED.with(std::cell::Cell::get);
        assert!(
            concealed <= 4 * text.len(),
            "{concealed} for {}",
            text.len()
        );
    }

    /// A run of backslashes longer than a reader's parity can be read
    /// locally: the escape after it is read both ways, in a stream as whole.
    #[test]
    fn the_escape_after_a_long_run_of_backslashes_is_read_either_way() {
        let concealer = Concealer::new([TOKEN]);
        for run in [301, 302, 1001, 1002] {
            let text = format!(
                "x{}u006Dw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN y",
                "\\".repeat(run)
            );
            let whole = concealer.conceal(&text);
            assert!(whole.contains(REDACTED), "{run}");
            assert!(!whole.contains("u006D"), "{run}");
            for cut in [1, 150, run, run + 1, run + 3, text.len() - 2] {
                assert_eq!(streamed(&concealer, &text, &[cut]), whole, "{run} at {cut}");
            }
        }
    }
}
