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
//! (`reach.rs`): whether a byte is concealed depends only on
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
//!   `=`, and no trigger within the longest escape before them (nor within
//!   the opening of an escape a hit's start takes in, and its digits). No
//!   form can hold either byte beside the cut, in any view, so each hit
//!   lies on one side of it, and a base64 core's neighbours reach the cut
//!   at most. This is the prefix test: text after the last gap is what could
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
use super::arch::{find_trigger, rfind_trigger};
use super::patterns::{Matcher, Search};
use super::reach::{CLOSING_REACH, OPENED_REACH};

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
        // No escape reaches the four bytes from before them, nor does the
        // opening of one whose digits a hit goes on with: with no trigger
        // within the longest escape two layers deep and such an opening's
        // bytes after it, or none since a barrier the text before `buf`
        // cannot read past.
        let from = cut.checked_sub(OPENED_REACH);
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
                find_trigger(bytes).is_none() && (from > 0 || self.clean_start)
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
            floor: first.saturating_sub(OPENED_REACH),
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
        let found = rfind_trigger(hay).map(|k| self.floor + k);
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
mod tests;
