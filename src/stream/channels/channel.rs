//! One channel of a stream (`mod.rs`): its text, the released context kept
//! before the pieces of held items, what of it was found to be a form, and
//! where its end could still begin or be inside one.

use std::collections::VecDeque;
use std::ops::Range;

use crate::conceal::joined::{Beginnings, Walk, back_over};

use super::MIN_HELD;

/// One channel's text: released context, then the pieces of held items,
/// as they came (a form found in them is recorded as cuts, never written
/// into the text, so that each reading of a string cuts it on its own).
#[derive(Clone, Default)]
pub(super) struct Channel {
    text: String,
    /// Where the held pieces start in `text`.
    pending: usize,
    pieces: VecDeque<Piece>,
    /// Up to where the text is concealed for good.
    pub(super) settled: usize,
    /// Where the last form found ends: no beginning lies before it.
    cut_end: usize,
    /// Before it, the text is settled whatever follows: the most a channel
    /// holds at its end was passed, and the concealer is local.
    floor: usize,
    /// How much released text is kept before what is held, and read again
    /// with new text: the context, or a radius once the end was capped.
    pub(super) back: usize,
    /// Where the run of bytes since the last separator starts, and whether
    /// it holds an escape's trigger.
    run_start: usize,
    trigger: bool,
    /// The prefix automaton, walked over the text up to `walked`.
    walk: Option<Walk>,
    walked: usize,
    /// Whether the end could begin or be inside a form at the last settle,
    /// so that the next text is concealed with the context before it.
    pub(super) open: bool,
    /// The first item this channel holds back, if any.
    pub(super) blocking: Option<u64>,
    /// The last item that added to it.
    pub(super) continued: u64,
    /// Where its last string stood, by `index`: what an engine's close
    /// names.
    pub(super) scope: String,
    /// How many names (a reading, a type, a path) share this channel.
    pub(super) names: usize,
}

/// One string of a held item: where it stands in the text, and what of it
/// a form took.
#[derive(Clone)]
struct Piece {
    seq: u64,
    slot: usize,
    range: Range<usize>,
    cuts: Vec<Cut>,
}

/// A part of a string that a form took: its bytes in the string's value,
/// and whether the marker goes there (the first string a form took holds
/// it, the others lose their part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cut {
    pub(super) range: Range<usize>,
    pub(super) marker: bool,
}

impl Channel {
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// Adds string `slot` of item `seq`.
    pub(super) fn append(
        &mut self,
        seq: u64,
        slot: usize,
        value: &str,
        scope: &str,
        beginnings: &Beginnings,
    ) {
        let start = self.text.len();
        self.text.push_str(value);
        self.pieces.push_back(Piece {
            seq,
            slot,
            range: start..self.text.len(),
            cuts: Vec::new(),
        });
        self.continued = seq;
        self.scope.clear();
        self.scope.push_str(scope);
        let bytes = value.as_bytes();
        let after = match bytes.iter().rposition(|&b| beginnings.is_separator(b)) {
            Some(last) => {
                self.run_start = start + last + 1;
                self.trigger = false;
                &bytes[last + 1..]
            }
            None => bytes,
        };
        self.trigger |= after.iter().any(|&b| Beginnings::is_trigger(b));
        self.walk_on(beginnings);
    }

    /// Walks the prefix automaton over the text not walked yet: a walk
    /// started a window before the end ends where one over all of it does.
    fn walk_on(&mut self, beginnings: &Beginnings) {
        let len = self.text.len();
        let window = len.saturating_sub(beginnings.window());
        let from = self.walked.max(self.cut_end);
        let walk = match self.walk {
            Some(walk) if from >= window && from == self.walked => walk,
            _ => {
                self.walked = from.max(window);
                beginnings.walk()
            }
        };
        let mut walk = walk;
        beginnings.step(
            &mut walk,
            self.text.as_bytes().get(self.walked..).unwrap_or_default(),
        );
        self.walk = Some(walk);
        self.walked = len;
    }

    /// Walks anew (the secrets changed, or a form was found), and reads the
    /// run since the last separator again.
    pub(super) fn rewalk(&mut self, beginnings: &Beginnings) {
        self.walk = None;
        self.walked = self.cut_end;
        self.walk_on(beginnings);
        let bytes = self.text.as_bytes();
        self.run_start = bytes
            .iter()
            .rposition(|&b| beginnings.is_separator(b))
            .map_or(0, |last| last + 1)
            .max(self.cut_end);
        self.trigger = bytes
            .get(self.run_start..)
            .unwrap_or_default()
            .iter()
            .any(|&b| Beginnings::is_trigger(b));
    }

    /// Whether the end could begin or be inside a form, however short.
    pub(super) fn could_continue(&self, beginnings: &Beginnings) -> bool {
        self.trigger || self.walk.is_some_and(|walk| beginnings.depth(&walk) > 0)
    }

    /// Where the text's end could be the start of a form: from the start of
    /// the run when an escape is at work in it (its form may start
    /// anywhere in the run), else where the end is a prefix of a pattern
    /// of at least [`MIN_HELD`] bytes, or of one byte after a separator or
    /// at the channel's start. Never more than `limit` bytes before the
    /// end: past it the text is settled, a radius at a time.
    pub(super) fn hold_point(&mut self, beginnings: &Beginnings, limit: usize) -> Option<usize> {
        let len = self.text.len();
        let at = if self.trigger {
            self.run_start
        } else {
            let depth = beginnings.depth(&self.walk?);
            if depth == 0 {
                return None;
            }
            let bytes = self.text.as_bytes();
            let at = back_over(bytes, self.cut_end, depth);
            if depth < MIN_HELD {
                // At the start of what is kept (of the channel, or of its
                // context), what stood before is not known: held.
                let leads = match at.checked_sub(1) {
                    Some(before) => Beginnings::leads(bytes[before]),
                    None => true,
                };
                if !leads {
                    return None;
                }
            }
            at
        };
        let mut at = at.max(self.floor).max(self.cut_end);
        if len - at.min(len) > limit {
            self.floor = ceil_boundary(&self.text, len - limit / 2);
            self.back = self.back.max(limit / 2);
            at = self.floor;
        }
        Some(at)
    }

    /// Where the text concealed next starts: the context before what is
    /// settled when the end could continue a form, else what is settled.
    pub(super) fn window_start(&self) -> usize {
        let back = if self.open { self.back } else { 0 };
        floor_boundary(&self.text, self.settled.saturating_sub(back))
    }

    /// The first item that holds text at or after `at`.
    pub(super) fn first_from(&self, at: usize) -> Option<u64> {
        self.pieces
            .iter()
            .find(|piece| piece.range.end > at)
            .map(|piece| piece.seq)
    }

    /// Records each form found (sorted, disjoint spans of the text) in the
    /// held pieces it took: the first of them holds the marker, and a
    /// later piece loses any marker it held for the same form (so that a
    /// form found again, longer, is still one marker). Released text is
    /// kept as it went.
    pub(super) fn record(&mut self, spans: &[(usize, usize)], beginnings: &Beginnings) {
        for &(start, end) in spans {
            let start = start.max(self.pending);
            if start >= end {
                continue;
            }
            let mut first = true;
            for piece in &mut self.pieces {
                let from = start.max(piece.range.start);
                let to = end.min(piece.range.end);
                if from >= to {
                    continue;
                }
                let cut = from - piece.range.start..to - piece.range.start;
                if !first {
                    for earlier in &mut piece.cuts {
                        if earlier.range.start < cut.end && cut.start < earlier.range.end {
                            earlier.marker = false;
                        }
                    }
                }
                piece.cuts.push(Cut {
                    range: cut,
                    marker: first,
                });
                first = false;
            }
            self.cut_end = self.cut_end.max(end.min(self.text.len()));
        }
        self.rewalk(beginnings);
    }

    /// String `slot` of item `seq` leaves the channel: what forms took of
    /// it. Released text beyond what is read again is forgotten.
    pub(super) fn release(&mut self, seq: u64, slot: usize) -> Vec<Cut> {
        let Some(front) = self.pieces.front() else {
            return Vec::new();
        };
        if front.seq != seq || front.slot != slot {
            return Vec::new();
        }
        let Some(piece) = self.pieces.pop_front() else {
            return Vec::new();
        };
        self.pending = piece.range.end;
        // Forget what no concealment reads again, a context's worth at a
        // time so that the drain stays linear.
        let keep = floor_boundary(
            &self.text,
            self.pending.min(self.settled).saturating_sub(self.back),
        );
        if keep > self.back {
            self.text.drain(..keep);
            self.pending -= keep;
            self.settled -= keep;
            self.walked -= keep;
            for at in [&mut self.cut_end, &mut self.floor, &mut self.run_start] {
                *at = at.saturating_sub(keep);
            }
            for piece in &mut self.pieces {
                piece.range = piece.range.start - keep..piece.range.end - keep;
            }
        }
        piece.cuts
    }

    /// Whether it holds pieces of items not yet released.
    pub(super) fn has_pieces(&self) -> bool {
        !self.pieces.is_empty()
    }
}

/// The smallest character boundary of `text` at or after `at`.
fn ceil_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The largest character boundary of `text` at or before `at`.
pub(super) fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
