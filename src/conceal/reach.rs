//! How far the concealer reads: whether a byte of a text is concealed
//! depends only on the bytes within a radius of it (the concealer is
//! local: every escape, base64 neighbour and span edge it reads is
//! bounded), and a stream holds back at most twice that.

use super::Concealer;
use super::patterns::{Matcher, Search};
use super::scan::MOST_WIDENINGS;
use crate::text::syntax::{LONGEST_ESCAPE, LONGEST_OPENED};

/// The most bytes one decoded escape takes: `&DiacriticalGrave;`, the
/// longest name decoded, and `&#x` with fourteen digits and `;`
/// (`MAX_REF_DIGITS`); every other escape is shorter.
const LONGEST_DECODED: usize = 18;

/// The most bytes of text one byte of a view comes from, two layers deep:
/// an escape of the second layer, each of whose bytes is an escape of the
/// first.
const PER_VIEW_BYTE: usize = LONGEST_DECODED * LONGEST_DECODED;

/// The most bytes of text one byte of a hit comes from, with the line
/// break a joined view may drop after it (a JSON-escaped `\r\n`, four
/// bytes of a view two layers deep).
const PER_HIT_BYTE: usize = 5 * PER_VIEW_BYTE;

/// How far, each way, whether a byte is concealed can depend on the bytes
/// around it: the source span of the longest hit (its longest pattern, and
/// the opening of an escape whose digits it goes on with, each byte two
/// layers deep with a line break after it), the characters a base64 core
/// takes beside it with their padding and breaks, how far back the
/// decoding of a hit's first escape can start (an escape, two layers deep,
/// and the ends of a long backslash run), how far a span's edges widen
/// over straddling escapes, and a margin.
pub(super) fn radius(search: &Search) -> usize {
    let hit = (search.longest + LONGEST_OPENED) * PER_HIT_BYTE;
    let shared = 4 * PER_HIT_BYTE;
    let start = PER_VIEW_BYTE + (2 * search.run_reach + 2) * LONGEST_DECODED;
    let edges = MOST_WIDENINGS * LONGEST_ESCAPE + 4;
    hit + shared + start + edges + 64
}

/// How far back a `;`, `{`, `}` or `#` can be the end of an escape: the
/// longest escape two layers deep. With no trigger that far back, none is.
pub(super) const CLOSING_REACH: usize = PER_VIEW_BYTE;

/// How far an escape reaches from its trigger, two layers deep: a byte
/// with no trigger this far before it is raw in every view.
pub(super) const ESCAPE_REACH: usize = PER_VIEW_BYTE;

/// How far from its trigger a byte can be that a hit's start takes in
/// with an escape opened before it ([`opened_before`]): the opening and
/// its digits are at most [`LONGEST_OPENED`] bytes of a view, and after
/// the last of them that an escape of the text gave (within
/// [`ESCAPE_REACH`] of its trigger) come only the text's own bytes, each
/// with a raw line break (two bytes) a joined view may drop after it. A
/// byte with no trigger this far before it is never inside one.
///
/// [`opened_before`]: crate::text::syntax::opened_before
pub(super) const OPENED_REACH: usize = ESCAPE_REACH + 3 * LONGEST_OPENED;

impl Concealer {
    /// How far the concealer reads: whether a byte of a text is concealed
    /// depends only on the bytes within this many of it, and a
    /// [`ConcealStream`](super::stream::ConcealStream) holds back at most this many. Twice the
    /// [`radius`] the concealment of a byte can depend on, so that a
    /// stream settles a stretch with no barrier a radius at a time.
    pub(crate) fn reach(&self) -> usize {
        match &self.state().matcher {
            Matcher::Automaton(search) => 2 * radius(search),
            Matcher::Nothing | Matcher::FailClosed => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN";

    #[test]
    fn the_reach_of_a_32_character_token_is_the_one_design_states() {
        let concealer = Concealer::new([TOKEN]);
        assert_eq!(concealer.reach(), 2 * 140_640);
        assert_eq!(Concealer::new([]).reach(), 0);
    }
}
