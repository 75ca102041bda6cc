//! Where the bytes of a small set are in a text, in order.
//!
//! Generated text escapes a newline or a quote every few dozen bytes, and
//! the concealer visits every one of those backslashes. memchr finds a
//! byte at the speed of memory, but each hit costs a new search, about
//! 8 ns: at one hit per 25 bytes that is more than the whole automaton
//! pass. So the text is read 64 bytes at a time into a mask with one bit
//! per byte of the set (a kernel of `arch/`: SSE2 compares on x86_64),
//! and hits are taken off the mask, a nanosecond or so each.

use super::arch::{Kernels, MOST, Native};

/// How many bytes one mask covers.
const BLOCK: usize = 64;

/// A set of bytes, ready for the kernels.
type Set = <Native as Kernels>::Set;

/// The positions of up to five bytes in a text, in increasing order.
pub(super) struct Positions<'h> {
    hay: &'h [u8],
    /// How many bytes the set holds, and the set.
    count: usize,
    set: Set,
    /// Where the block in `mask` starts, and where the next one does.
    base: usize,
    next_block: usize,
    /// The hits of the block at `base` not yet taken, one bit per byte.
    mask: u64,
    /// A byte of the set left out where this other byte follows it, each
    /// as a set of its own.
    pair: Option<(Set, Set)>,
}

impl<'h> Positions<'h> {
    /// Every position in `hay` of any byte in `bytes` (only the first five
    /// are looked for).
    pub(super) fn of(hay: &'h [u8], bytes: &[u8]) -> Positions<'h> {
        Positions {
            hay,
            count: bytes.len().min(MOST),
            set: Native::set(bytes),
            base: 0,
            next_block: 0,
            mask: 0,
            pair: None,
        }
    }

    /// The same, but for `first` where `second` follows it (`\"`, which
    /// generated text writes every few dozen bytes and which means nothing
    /// to the concealer): taken off the masks 64 at a time instead of one
    /// by one. Only within a block: at a block's last byte, a `first` is
    /// kept whatever follows it.
    pub(super) fn without_pair(mut self, first: u8, second: u8) -> Positions<'h> {
        self.pair = Some((Native::set(&[first]), Native::set(&[second])));
        self
    }

    /// Moves on to the first position at or after `at`.
    pub(super) fn skip_to(&mut self, at: usize) {
        if at >= self.next_block {
            self.base = at;
            self.next_block = at;
            self.mask = 0;
        } else if at > self.base {
            let below = at - self.base;
            self.mask &= !((1u64 << below) - 1);
        }
    }

    /// The mask of the up to 64 bytes from `at`, pairs left out.
    #[inline(always)]
    fn block(&self, at: usize) -> u64 {
        let mask = self.block_of(at, &self.set, self.count);
        match &self.pair {
            Some((first, second)) if mask != 0 => {
                let paired = self.block_of(at, first, 1) & (self.block_of(at, second, 1) >> 1);
                mask & !paired
            }
            _ => mask,
        }
    }

    /// The mask of the first `count` bytes of `set` in the up to 64 bytes
    /// from `at`. The last, short block is copied into a full one, and the
    /// bits past the text dropped.
    #[inline(always)]
    fn block_of(&self, at: usize, set: &Set, count: usize) -> u64 {
        let rest = self.hay.get(at..).unwrap_or_default();
        if let Some(block) = rest.first_chunk::<BLOCK>() {
            return mask(block, set, count);
        }
        let mut block = [0u8; BLOCK];
        let len = rest.len().min(BLOCK);
        if let (Some(to), Some(from)) = (block.get_mut(..len), rest.get(..len)) {
            to.copy_from_slice(from);
        }
        mask(&block, set, count) & ((1u64 << len) - 1)
    }
}

/// The kernel's mask of `block` for the first `count` bytes of `set`. The
/// count is a constant in each arm, so that the compares unroll.
#[inline(always)]
fn mask(block: &[u8; BLOCK], set: &Set, count: usize) -> u64 {
    match count {
        0 => 0,
        1 => Native::mask64::<1>(set, block),
        2 => Native::mask64::<2>(set, block),
        3 => Native::mask64::<3>(set, block),
        4 => Native::mask64::<4>(set, block),
        _ => Native::mask64::<5>(set, block),
    }
}

impl Iterator for Positions<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            if self.next_block >= self.hay.len() {
                return None;
            }
            self.base = self.next_block;
            self.mask = self.block(self.base);
            self.next_block += BLOCK;
        }
        let bit = self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(self.base + bit)
    }

    /// Block by block, each block's hits in an inner loop: `for_each` and
    /// `count` then cost a nanosecond or two a hit, where `next` pays for
    /// leaving and re-entering the block loop at every hit.
    fn fold<B, F: FnMut(B, usize) -> B>(mut self, init: B, mut f: F) -> B {
        let mut acc = init;
        loop {
            while self.mask != 0 {
                let bit = self.mask.trailing_zeros() as usize;
                self.mask &= self.mask - 1;
                acc = f(acc, self.base + bit);
            }
            if self.next_block >= self.hay.len() {
                return acc;
            }
            self.base = self.next_block;
            self.mask = self.block(self.base);
            self.next_block += BLOCK;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_of_several_bytes_come_in_order() {
        let hay = b"a\\b%c&d\\%&";
        let all: Vec<usize> = Positions::of(hay, b"\\%&").collect();
        assert_eq!(all, [1, 3, 5, 7, 8, 9]);
        let mut some = Positions::of(hay, b"&\\");
        some.skip_to(6);
        assert_eq!(some.collect::<Vec<_>>(), [7, 9]);
        assert_eq!(Positions::of(hay, b"").count(), 0);
        assert_eq!(Positions::of(b"", b"\\").count(), 0);
    }

    #[test]
    fn a_pair_is_left_out_within_a_block_and_kept_at_its_edge() {
        let hay = br#"a\"b\nc\"\\"#;
        let kept: Vec<usize> = Positions::of(hay, b"\\")
            .without_pair(b'\\', b'"')
            .collect();
        assert_eq!(kept, [4, 9, 10]);
        let mut edge = vec![b'a'; 63];
        edge.extend_from_slice(br#"\"\"x"#);
        let kept: Vec<usize> = Positions::of(&edge, b"\\%")
            .without_pair(b'\\', b'"')
            .collect();
        assert_eq!(kept, [63]);
    }

    #[test]
    fn positions_agree_with_a_plain_search_across_blocks_and_skips() {
        // Long enough for whole blocks and a tail, with hits on block
        // edges and runs of them.
        let hay: Vec<u8> = (0..1000u32)
            .map(|i| match i % 97 {
                0 | 63 | 64 => b'\\',
                5..=9 => b'%',
                _ if i % 13 == 0 => b'\n',
                _ => b'a' + u8::try_from(i % 23).unwrap_or(0),
            })
            .collect();
        let wanted = b"\\%\n";
        let plain: Vec<usize> = (0..hay.len())
            .filter(|&i| hay.get(i).is_some_and(|b| wanted.contains(b)))
            .collect();
        assert_eq!(Positions::of(&hay, wanted).collect::<Vec<_>>(), plain);
        for at in [0, 1, 63, 64, 65, 127, 128, 500, 999, 1000, 2000] {
            let mut skipped = Positions::of(&hay, wanted);
            // A position taken first, then a skip, as the decoders do.
            let first = skipped.next();
            skipped.skip_to(at);
            let rest: Vec<usize> = skipped.collect();
            let expected: Vec<usize> = plain
                .iter()
                .copied()
                .filter(|&p| p >= at && Some(p) != first)
                .collect();
            assert_eq!(rest, expected, "skip to {at}");
        }
    }
}
