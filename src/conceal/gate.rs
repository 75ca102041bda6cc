//! Where a hit can be at all: the stretches of text with none of one or two
//! cut bytes (the first separators among space, `"`, `,` and `:`) that are
//! at least as long as the shortest pattern.
//!
//! Every byte of a hit's source is a pattern byte, a byte of an escape
//! that decodes to one (a trigger, hex digits, a name, `#`, `;`, `{`,
//! `}`), or a line break a joined view drops, in every view and two layers
//! deep. None of those is a
//! [`separator`](super::patterns::Search::separator), so a hit's source
//! is a run of non-separators at least as long as its pattern, whatever it
//! decodes to. Generated text has a space every few bytes and JSON a quote
//! every few more: a run of 32 bytes with neither is a token, a hash, a
//! base64 blob or a long URL, and everything else (the escaped newlines,
//! quotes and accented letters of every sentence) can hold no hit and is
//! never read one escape at a time.
//!
//! Finding such runs costs one pass at about the speed of memory: a run of
//! at least `2c - 1` bytes holds a whole aligned chunk of `c` bytes, so
//! 128 bytes at a time are compared with the two cut bytes and folded into
//! a bit per chunk (a kernel of `arch/`: SSE2 compares folded by
//! saturating packs on x86_64), and only a chunk with none of them is
//! looked at further: its run's ends are found sixteen bytes each way,
//! then a word at a time nearby, then with memchr, and it is kept when it
//! is long enough.
//!
//! A stretch is the run and the cut byte that ends it: decoding a stretch
//! reads exactly the escapes decoding the whole text reads in it, since no
//! escape holds a separator but as its last byte (`\"`), and the byte
//! before the stretch is one.

use super::arch::words::{WORD, splat, word_at, zero_bytes};
use super::arch::{Cut, Kernels, Native, ONE, SPACE_QUOTE, TWO};
/// How many bytes one pass of the compares covers: eight vectors, folded
/// into one.
const BLOCK: usize = 128;

/// The separators stretches are cut at, in the order they are wanted:
/// those generated text and JSON hold most often.
const CUTS: [u8; 4] = [b' ', b'"', b',', b':'];

/// Where hits can be: runs of bytes with none of one or two separators.
#[derive(Clone, Debug)]
pub(super) struct Gate {
    /// The separators runs are cut at (the second the same as the first
    /// when there is only one).
    cut: [u8; 2],
    /// The shortest run a hit fits in: the shortest pattern.
    shortest: usize,
    /// Every run of `shortest` bytes holds a whole aligned chunk of this
    /// many (8 or 16), or two side by side (of 4).
    chunk: usize,
}

impl Gate {
    /// The gate for patterns of at least `shortest` bytes, given which bytes
    /// are separators; `None` when runs that short are too common to be
    /// worth finding (a pattern under 11 bytes: plain JSON is mostly runs
    /// of 7 to 10 between its quotes, which the gate would look at one by
    /// one where the automaton reads them all in one pass) or no byte it
    /// could cut at is a separator.
    pub(super) fn new(shortest: usize, separator: &[bool; 256]) -> Option<Gate> {
        // A run of at least `(k + 1) c - 1` bytes holds `k` whole aligned
        // chunks of `c` side by side.
        let chunk = match shortest {
            31.. => 16,
            15..=30 => 8,
            11..=14 => 4,
            _ => return None,
        };
        let mut cuts = CUTS.iter().copied().filter(|&b| separator[usize::from(b)]);
        let first = cuts.next()?;
        let second = cuts.next().unwrap_or(first);
        Some(Gate {
            cut: [first, second],
            shortest,
            chunk,
        })
    }

    /// The stretches of `text` a hit can be in, in order and disjoint: each
    /// run of at least the shortest pattern's length with no cut byte, and
    /// the cut byte after it (none at the end of the text).
    #[cfg(test)]
    pub(super) fn stretches(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut stretches = Vec::new();
        self.each_stretch(text, |start, end| stretches.push((start, end)));
        stretches
    }

    /// Calls `stretch(start, end)` for each of [`Gate::stretches`], in
    /// order, as it is found: nothing is gathered first.
    pub(super) fn each_stretch(&self, text: &[u8], stretch: impl FnMut(usize, usize)) {
        let cut = Cut::of(self.cut[0], self.cut[1]);
        // One loop per shape of cut and size of chunk, so that a block's
        // compares and folds are constants.
        match cut.shape() {
            SPACE_QUOTE => self.by_chunk::<SPACE_QUOTE>(text, cut, stretch),
            ONE => self.by_chunk::<ONE>(text, cut, stretch),
            _ => self.by_chunk::<TWO>(text, cut, stretch),
        }
    }

    /// [`Gate::each_stretch`], for a cut of shape `SHAPE`.
    fn by_chunk<const SHAPE: u8>(&self, text: &[u8], cut: Cut, stretch: impl FnMut(usize, usize)) {
        match self.chunk {
            16 => self.stretches_by::<SHAPE, 16>(text, cut, stretch),
            8 => self.stretches_by::<SHAPE, 8>(text, cut, stretch),
            _ => self.stretches_by::<SHAPE, 4>(text, cut, stretch),
        }
    }

    /// [`Gate::each_stretch`], for a cut of shape `SHAPE` and chunks of
    /// `CHUNK` bytes.
    fn stretches_by<const SHAPE: u8, const CHUNK: usize>(
        &self,
        text: &[u8],
        cut: Cut,
        mut stretch: impl FnMut(usize, usize),
    ) {
        let cut = Native::cut(cut);
        // No run starts before `from`: the byte before it ended the last.
        let mut from = 0;
        let mut base = 0;
        while base < text.len() {
            let mut clean = self.clean_chunks::<SHAPE, CHUNK>(text, base, &cut);
            if CHUNK == 4 {
                // Two clean chunks side by side, or the block's last, whose
                // neighbour is the next block's first: most runs of four
                // bytes between separators are shorter than eleven.
                clean &= (clean >> 1) | 1 << 31;
            }
            while clean != 0 {
                let at = base + CHUNK * clean.trailing_zeros() as usize;
                clean &= clean - 1;
                if at < from {
                    continue;
                }
                let near = self.near_ends::<SHAPE, CHUNK>(text, at, &cut);
                let (start, end) = self.run_around(text, from, at, CHUNK, near);
                if end - start >= self.shortest {
                    stretch(start, (end + 1).min(text.len()));
                }
                from = end + 1;
                // The chunks of this block that start inside the run are
                // clean too, and done with.
                let past = (from - base).div_ceil(CHUNK);
                clean &= u32::MAX
                    .checked_shl(u32::try_from(past).unwrap_or(u32::MAX))
                    .unwrap_or(0);
            }
            // A run that went on past this block: go on after it, at the
            // block the run's end is in.
            base = (base + BLOCK).max(from - from % BLOCK);
        }
    }

    /// The run with no cut byte around the chunk of `chunk` bytes at `at`,
    /// which has none: from after the last cut byte before it (not before
    /// `from`) to the first one after it (or the end of the text).
    ///
    /// Most runs end within a few words of the chunk: the caller's `near`
    /// ends, found by [`Gate::near_ends`], when it has them; otherwise
    /// eight bytes at a time are read as a number for a while, then memchr,
    /// whose set-up costs more than a short run does.
    fn run_around(
        &self,
        text: &[u8],
        from: usize,
        at: usize,
        chunk: usize,
        near: (Option<usize>, Option<usize>),
    ) -> (usize, usize) {
        let [a, b] = self.cut;
        let cut = |word: u64| zero_bytes(word ^ splat(a)) | zero_bytes(word ^ splat(b));
        let mut start = at;
        let found_start = loop {
            if let Some(near) = near.0 {
                break Some(near.max(from));
            }
            if start < from + WORD || at - start >= NEAR {
                break None;
            }
            let word = word_at(text, start - WORD);
            let cuts = cut(word);
            if cuts != 0 {
                // The highest byte that is a cut byte: the run starts after it.
                break Some(start - (cuts.leading_zeros() as usize) / 8);
            }
            start -= WORD;
        };
        let start = found_start.unwrap_or_else(|| {
            let before = text.get(from..start).unwrap_or_default();
            memchr::memrchr2(a, b, before).map_or(from, |k| from + k + 1)
        });
        let mut end = (at + chunk).min(text.len());
        let found_end = loop {
            if near.1.is_some() {
                break near.1;
            }
            if end + WORD > text.len() || end - at >= NEAR {
                break None;
            }
            let cuts = cut(word_at(text, end));
            if cuts != 0 {
                break Some(end + (cuts.trailing_zeros() as usize) / 8);
            }
            end += WORD;
        };
        let end = found_end.unwrap_or_else(|| {
            let after = text.get(end..).unwrap_or_default();
            memchr::memchr2(a, b, after).map_or(text.len(), |k| end + k)
        });
        (start, end)
    }

    /// Where the run around the clean chunk at `at` starts, when a cut
    /// byte stands in the 16 bytes before the chunk, and where it ends,
    /// when one stands in the 16 after it: one compare each, where words
    /// read one by one take as many steps as the run's ends are far, a
    /// branch that each echo of a token mispredicts anew. The byte before
    /// `from` (the caller's) is the cut byte that ended the last run, so a
    /// start found this way is never before `from`.
    #[inline(always)]
    fn near_ends<const SHAPE: u8, const CHUNK: usize>(
        &self,
        text: &[u8],
        at: usize,
        cut: &<Native as Kernels>::Cut,
    ) -> (Option<usize>, Option<usize>) {
        let cuts = |k: usize| {
            let bytes = text.get(k..).and_then(<[u8]>::first_chunk::<16>)?;
            let mask = Native::cut16::<SHAPE>(cut, bytes);
            u16::try_from(mask & 0xFFFF).ok().filter(|&mask| mask != 0)
        };
        let start = at
            .checked_sub(16)
            .and_then(cuts)
            .map(|mask| at - mask.leading_zeros() as usize);
        let after = at + CHUNK;
        let end = cuts(after).map(|mask| after + mask.trailing_zeros() as usize);
        (start, end)
    }

    /// One bit per chunk of the block at `base` (the block padded past the
    /// end of the text with cut bytes) that holds no cut byte.
    #[inline(always)]
    fn clean_chunks<const SHAPE: u8, const CHUNK: usize>(
        &self,
        text: &[u8],
        base: usize,
        cut: &<Native as Kernels>::Cut,
    ) -> u32 {
        let rest = text.get(base..).unwrap_or_default();
        match rest.first_chunk::<BLOCK>() {
            Some(block) => Native::clean::<SHAPE, CHUNK>(cut, block),
            None => {
                let mut padded = [self.cut[0]; BLOCK];
                if let Some(to) = padded.get_mut(..rest.len()) {
                    to.copy_from_slice(rest);
                }
                Native::clean::<SHAPE, CHUNK>(cut, &padded)
            }
        }
    }
}

/// How far from its chunk a run's end is looked for a word at a time.
const NEAR: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(shortest: usize) -> Gate {
        let separator: [bool; 256] = std::array::from_fn(|b| {
            matches!(u8::try_from(b), Ok(b' ' | b'"' | b',' | b':' | b'.'))
        });
        Gate::new(shortest, &separator).unwrap_or_else(|| panic!("a gate for {shortest}"))
    }

    /// Every run of the cut bytes' complement at least `shortest` long,
    /// found byte by byte.
    fn plain_runs(text: &[u8], shortest: usize) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        let mut start = 0;
        for end in 0..=text.len() {
            if end == text.len() || matches!(text[end], b' ' | b'"') {
                if end - start >= shortest {
                    runs.push((start, (end + 1).min(text.len())));
                }
                start = end + 1;
            }
        }
        runs
    }

    #[test]
    fn stretches_are_the_runs_long_enough_to_hold_a_hit() {
        let text =
            br#"{"a":"short words here","token":"mw_live_4f\u002BAb\/9zQ7vX2kP9zR4tL8wN"} x"#;
        let stretches = gate(32).stretches(text);
        assert_eq!(stretches.len(), 1);
        let (start, end) = stretches[0];
        assert_eq!(
            &text[start..end],
            br#"mw_live_4f\u002BAb\/9zQ7vX2kP9zR4tL8wN""#
        );
    }

    #[test]
    fn stretches_agree_with_a_plain_search_at_every_length_and_place() {
        // Runs of every length near the thresholds, at every alignment,
        // between cut bytes and at both ends of the text.
        for shortest in [11, 12, 13, 14, 15, 16, 24, 30, 31, 32, 40, 64] {
            for lead in 0..40 {
                for len in [6, 7, 8, 13, 14, 15, 16, 29, 30, 31, 32, 33, 63, 64, 65, 130] {
                    let mut text = vec![b'x'; lead];
                    text.push(b' ');
                    text.extend(std::iter::repeat_n(b'a', len));
                    text.extend_from_slice(b"\" b ");
                    text.extend(std::iter::repeat_n(b'c', len + 3));
                    for text in [text.clone(), text[lead + 1..].to_vec()] {
                        assert_eq!(
                            gate(shortest).stretches(&text),
                            plain_runs(&text, shortest),
                            "shortest {shortest}, lead {lead}, len {len}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn no_gate_for_short_patterns_or_without_a_separator_to_cut_at() {
        assert!(Gate::new(10, &[true; 256]).is_none());
        assert!(Gate::new(32, &[false; 256]).is_none());
        let only_colon: [bool; 256] = std::array::from_fn(|b| b == usize::from(b':'));
        let gate = Gate::new(16, &only_colon).map(|g| g.cut);
        assert_eq!(gate, Some([b':', b':']));
    }
}
