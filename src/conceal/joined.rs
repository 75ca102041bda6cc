//! What a reader of *joined* text needs of the concealer besides
//! [`Concealer::conceal`]: the spans it replaces, so that a text built from
//! many pieces (a stream's channel, `src/stream/channels/`) can be
//! rewritten piece by piece; and whether a text ends in what could still
//! begin, or be inside, a form of a secret, so that the pieces are held
//! only while a later one can still complete a form.
//!
//! The second is a prefix test against the concealer's own patterns (the
//! automaton's: each secret it holds, a token file's among them, its hex in
//! either case, its base64 cores), one automaton over them walked along the
//! end of the text: where no escape can be at work
//! (no `\`, `%` or `&` since the last separator, which the caller checks,
//! see [`Beginnings::is_trigger`]), a form is a pattern as itself with line
//! breaks inside it, so the text can end inside one only if its end, line
//! breaks dropped, is a prefix of a pattern.

use std::collections::HashMap;

use super::Concealer;
use super::patterns::Matcher;
use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{Anchored, MatchKind};

impl Concealer {
    /// What [`Concealer::conceal`] replaces in `text`: sorted, disjoint
    /// spans, each one marker.
    pub(crate) fn spans_of(&self, text: &str) -> Vec<(usize, usize)> {
        self.spans(text)
    }

    /// The prefix test against this concealer's patterns; `None` when it
    /// conceals nothing (no secret), or everything (it failed closed: each
    /// text is one marker already).
    ///
    /// The patterns are the automaton's own, so they come from every secret
    /// the concealer holds: those it was built with or learned (a Redis or
    /// proxy password) and the tokens a file that rotates held last alike.
    pub(crate) fn beginnings(&self) -> Option<Beginnings> {
        let state = self.state();
        let Matcher::Automaton(search) = &state.matcher else {
            return None;
        };
        let patterns = &search.patterns;
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
        // The contiguous NFA builds in time linear in the patterns, whatever
        // they repeat; it is walked over a few dozen bytes per text.
        let automaton = NFA::builder()
            .match_kind(MatchKind::Standard)
            .build(patterns)
            .ok()
            .and_then(|nfa| {
                let start = nfa.start_state(Anchored::No).ok()?;
                // Each state of the trie is one prefix of a pattern: its
                // length is how far into a form the text may be.
                let mut depth = HashMap::new();
                for pattern in patterns {
                    let mut sid = start;
                    for (at, &byte) in pattern.iter().enumerate() {
                        sid = nfa.next_state(Anchored::No, sid, byte);
                        depth.insert(sid, at + 1);
                    }
                }
                Some((nfa, start, depth))
            });
        Some(Beginnings {
            automaton,
            separator: search.separator,
            longest,
        })
    }
}

/// Whether a text ends in what could still begin or be inside a form of a
/// secret; see the module docs.
pub(crate) struct Beginnings {
    /// The automaton, its start, and the depth of each of its states;
    /// `None` if it could not be built, when every text could begin a form.
    automaton: Option<(NFA, StateID, HashMap<StateID, usize>)>,
    separator: [bool; 256],
    longest: usize,
}

impl Beginnings {
    /// Whether no form can hold `byte`, nor an escape that decodes to a
    /// byte of one: a form lies between two separators.
    pub(crate) fn is_separator(&self, byte: u8) -> bool {
        self.separator[usize::from(byte)]
    }

    /// Whether `byte` can start an escape the concealer decodes (JSON or
    /// JavaScript, percent, HTML): past one, a form is no longer a pattern
    /// as itself.
    pub(crate) fn is_trigger(byte: u8) -> bool {
        matches!(byte, b'\\' | b'%' | b'&')
    }

    /// The length of the longest pattern.
    #[cfg(test)]
    pub(crate) fn longest(&self) -> usize {
        self.longest
    }

    /// How many bytes at the end of a text can be inside a prefix of a
    /// pattern: the longest pattern, with a line break (`CRLF` at most)
    /// after each of its bytes. A walk started this far back from the end
    /// ends where a walk over the whole text does.
    pub(crate) fn window(&self) -> usize {
        3 * self.longest + 8
    }

    /// A walk at the start of a text.
    pub(crate) fn walk(&self) -> Walk {
        Walk {
            sid: self.automaton.as_ref().map_or(StateID::ZERO, |a| a.1),
            breaks: 0,
            last: 0,
        }
    }

    /// Walks on over `bytes`, line breaks dropped, a blank line ending any
    /// form.
    pub(crate) fn step(&self, walk: &mut Walk, bytes: &[u8]) {
        let Some((nfa, start, _)) = &self.automaton else {
            return;
        };
        for &byte in bytes {
            match byte {
                b'\n' if walk.last == b'\r' => {}
                b'\n' | b'\r' => {
                    walk.breaks = walk.breaks.saturating_add(1);
                    if walk.breaks > 1 {
                        // No form spans a blank line.
                        walk.sid = *start;
                    }
                }
                _ => {
                    walk.breaks = 0;
                    walk.sid = nfa.next_state(Anchored::No, walk.sid, byte);
                }
            }
            walk.last = byte;
        }
    }

    /// How many bytes of a pattern (line breaks not counted) the text a
    /// walk went over ends in: 0 when no end of it begins a pattern, and
    /// `usize::MAX` when the automaton could not be built, when any end
    /// could.
    pub(crate) fn depth(&self, walk: &Walk) -> usize {
        match &self.automaton {
            Some((_, _, depths)) => depths.get(&walk.sid).copied().unwrap_or(0),
            None => usize::MAX,
        }
    }

    /// Whether a one-byte beginning after `byte` is held: after a
    /// separator as a key is quoted or set (`"`, `'`, a space, a tab, `=`,
    /// `:`, `,`, `(`, `[`, `{`, a backtick, a line break). Inside a word
    /// it is not: holding every text that ends in a pattern's first letter
    /// would hold one English word in nine.
    pub(crate) fn leads(byte: u8) -> bool {
        matches!(
            byte,
            b'"' | b'\''
                | b' '
                | b'\t'
                | b'='
                | b':'
                | b','
                | b'('
                | b'['
                | b'{'
                | b'`'
                | b'\n'
                | b'\r'
        )
    }

    /// Where the end of `text` could be the start of a form, as its own
    /// pattern (line breaks inside it dropped, a blank line ending it), and
    /// how many bytes of the pattern it would be: `None` when no end of it
    /// is a prefix of any pattern.
    #[cfg(test)]
    pub(crate) fn open_tail(&self, text: &str) -> Option<(usize, usize)> {
        let bytes = text.as_bytes();
        let mut walk = self.walk();
        let from = bytes.len().saturating_sub(self.window());
        self.step(&mut walk, bytes.get(from..).unwrap_or_default());
        let depth = self.depth(&walk);
        if depth == 0 || bytes.is_empty() {
            return None;
        }
        Some((back_over(bytes, 0, depth), depth.min(bytes.len())))
    }
}

/// Where a walk over a text stands: the automaton's state, and the line
/// breaks just read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Walk {
    sid: StateID,
    breaks: u8,
    last: u8,
}

/// Where `depth` bytes that are not line breaks end `bytes`, going back no
/// further than `from`.
pub(crate) fn back_over(bytes: &[u8], from: usize, depth: usize) -> usize {
    let mut left = depth;
    let mut at = bytes.len();
    while left > 0 && at > from {
        at -= 1;
        if !matches!(bytes[at], b'\n' | b'\r') {
            left -= 1;
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "sk-repro-7Qx9Lm2Pz4Vb8Nc6Rt1Yw3";

    #[test]
    fn an_end_that_begins_the_token_or_its_encodings_is_open() {
        let concealer = Concealer::new([TOKEN]);
        let beginnings = concealer.beginnings().expect("a secret");
        assert_eq!(beginnings.open_tail("the key is sk-re"), Some((11, 5)));
        assert_eq!(beginnings.open_tail("the key is sk-re\n"), Some((11, 5)));
        assert_eq!(beginnings.open_tail("sk-re\npro-7"), Some((0, 10)));
        // Hex, and a base64 core (of the token at the first alignment).
        assert_eq!(beginnings.open_tail("x 736b2d72"), Some((2, 8)));
        assert_eq!(beginnings.open_tail("x c2stcmVw"), Some((2, 8)));
        // A blank line ends any form; what no pattern begins with is shut.
        assert_eq!(beginnings.open_tail("sk-re\n\n"), None);
        assert_eq!(beginnings.open_tail("nothing here"), None);
        assert_eq!(beginnings.open_tail(""), None);
    }

    /// A token a file holds is a secret like a token given in code: the
    /// beginnings (their patterns, the longest, the separators they stop
    /// at) and the reach a stream derives from the concealer all change
    /// when the concealer adopts it, and a concealer that holds nothing
    /// but a file's token has them too.
    #[test]
    fn every_structure_a_reader_derives_changes_when_a_held_token_is_adopted() {
        let held = "zz~held~QqXxYyWw~token~that~is~long";
        let concealer = Concealer::new(["mw-given-0123456789"]);
        let before = concealer.beginnings().expect("a secret");
        let reach = concealer.reach();
        assert_eq!(before.open_tail("x zz~hel"), None);
        assert!(before.is_separator(b'~'));
        concealer.hold([held]);
        let after = concealer.beginnings().expect("secrets");
        assert_eq!(after.open_tail("x zz~hel"), Some((2, 6)));
        assert!(!after.is_separator(b'~'), "a byte of a held token");
        assert!(after.longest() > before.longest());
        assert!(concealer.reach() > reach);

        let only_held = Concealer::new([]);
        assert!(only_held.beginnings().is_none());
        assert_eq!(only_held.reach(), 0);
        only_held.hold([TOKEN]);
        let beginnings = only_held.beginnings().expect("the held token");
        assert_eq!(beginnings.open_tail("the key is sk-re"), Some((11, 5)));
        assert_eq!(beginnings.longest(), 2 * TOKEN.len(), "its hex");
        assert!(only_held.reach() > 0);
    }

    #[test]
    fn a_concealer_with_nothing_to_conceal_has_no_beginnings() {
        assert!(Concealer::new([]).beginnings().is_none());
    }
}
