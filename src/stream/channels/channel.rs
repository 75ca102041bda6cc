//! One channel of a stream (`mod.rs`): its text, the released context
//! kept before the pieces of held items, and where its end could still
//! begin or be inside a form.

use std::collections::VecDeque;
use std::ops::Range;

use crate::conceal::REDACTED;
use crate::conceal::joined::Beginnings;

use super::MIN_HELD;

/// One channel's text: released context, then the pieces of held items.
#[derive(Default)]
pub(super) struct Channel {
    pub(super) text: String,
    /// Where the held pieces start in `text`.
    pub(super) pending: usize,
    pub(super) pieces: VecDeque<Piece>,
    /// Up to where the text is concealed for good.
    pub(super) settled: usize,
    /// Where the run of bytes since the last separator starts, and whether
    /// it holds an escape's trigger.
    pub(super) run_start: usize,
    pub(super) trigger: bool,
    /// The first item this channel holds back, if any.
    pub(super) blocking: Option<u64>,
}

/// One string of a held item: where it stands in the text, and whether a
/// form passed through it.
pub(super) struct Piece {
    pub(super) seq: u64,
    pub(super) slot: usize,
    pub(super) range: Range<usize>,
    pub(super) dirty: bool,
}

impl Channel {
    pub(super) fn append(&mut self, seq: u64, slot: usize, value: &str, beginnings: &Beginnings) {
        let start = self.text.len();
        self.text.push_str(value);
        self.pieces.push_back(Piece {
            seq,
            slot,
            range: start..self.text.len(),
            dirty: false,
        });
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
    }

    /// The run since the last separator, read again after a rewrite.
    pub(super) fn rescan_run(&mut self, beginnings: &Beginnings) {
        let bytes = self.text.as_bytes();
        self.run_start = bytes
            .iter()
            .rposition(|&b| beginnings.is_separator(b))
            .map_or(0, |last| last + 1);
        self.trigger = bytes[self.run_start..]
            .iter()
            .any(|&b| Beginnings::is_trigger(b));
    }

    /// Where the text's end could be the start of a form: from the start of
    /// the run when an escape is at work in it (its form may start
    /// anywhere in the run), else where the end is a prefix of a pattern;
    /// never more than `limit` bytes before the end, what lies further
    /// back being settled whatever follows.
    pub(super) fn hold_point(&self, beginnings: &Beginnings, limit: usize) -> Option<usize> {
        let at = if self.trigger {
            self.run_start
        } else {
            let (at, depth) = beginnings.open_tail(&self.text)?;
            if depth < MIN_HELD {
                return None;
            }
            at
        };
        let floor = self.text.len().saturating_sub(limit);
        Some(at.max(ceil_boundary(&self.text, floor)))
    }

    /// Replaces each span (sorted, disjoint) by one marker, in the pieces
    /// it passed through: the first piece holds the marker, the others
    /// lose their part of it. Released text before the pieces is kept.
    pub(super) fn rewrite(&mut self, spans: &[(usize, usize)]) {
        for &(start, end) in spans.iter().rev() {
            let start = start.max(self.pending);
            if start >= end || end > self.text.len() {
                continue;
            }
            let marked = start + REDACTED.len();
            let shift = |at: usize| at - (end - start) + REDACTED.len();
            for piece in &mut self.pieces {
                let Range {
                    start: from,
                    end: to,
                } = piece.range.clone();
                if to <= start {
                    continue;
                }
                if from >= end {
                    piece.range = shift(from)..shift(to);
                    continue;
                }
                // The piece the span starts in keeps its head and takes the
                // marker; a later one starts after it.
                let new_from = if from <= start { from } else { marked };
                let new_to = if to <= end { marked } else { shift(to) };
                piece.range = new_from..new_to;
                piece.dirty = true;
            }
            // A piece that lay wholly inside a span after the first is now
            // empty, at the marker's end.
            self.text.replace_range(start..end, REDACTED);
            if self.settled >= end {
                self.settled = shift(self.settled);
            } else if self.settled > start {
                self.settled = marked;
            }
        }
    }

    /// The piece `slot` of item `seq` leaves the channel: its final value if
    /// a form passed through it. Released text beyond the context is
    /// forgotten.
    pub(super) fn release(&mut self, seq: u64, slot: usize, context: usize) -> Option<String> {
        let front = self.pieces.front()?;
        if front.seq != seq || front.slot != slot {
            return None;
        }
        let piece = self.pieces.pop_front()?;
        self.pending = piece.range.end;
        let value = piece.dirty.then(|| {
            self.text
                .get(piece.range.clone())
                .unwrap_or_default()
                .to_owned()
        });
        // Forget what no concealment reads again, a context's worth at a
        // time so that the drain stays linear.
        let keep = floor_boundary(
            &self.text,
            self.pending.min(self.settled).saturating_sub(context),
        );
        if keep > context {
            self.text.drain(..keep);
            self.pending -= keep;
            self.settled -= keep;
            self.run_start = self.run_start.saturating_sub(keep);
            for piece in &mut self.pieces {
                piece.range = piece.range.start - keep..piece.range.end - keep;
            }
        }
        value
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
