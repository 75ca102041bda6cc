//! Where the bytes of a small set are in a text, in order.
//!
//! Generated text escapes a newline or a quote every few dozen bytes, and
//! the concealer visits every one of those backslashes. memchr finds a
//! byte at the speed of memory, but each hit costs a new search, about
//! 8 ns: at one hit per 25 bytes that is more than the whole automaton
//! pass. So the text is read 64 bytes at a time into a mask with one bit
//! per byte of the set (SSE2 compares, which every x86_64 has, through
//! `safe_arch`'s safe wrappers), and hits are taken off the mask, a
//! nanosecond or so each. Elsewhere a byte table does the same, slower.

#[cfg(target_arch = "x86_64")]
use safe_arch::{
    bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, m128i, move_mask_i8_m128i,
    set_splat_i8_m128i, zeroed_m128i,
};

/// How many bytes one mask covers.
const BLOCK: usize = 64;

/// The most bytes a set may hold.
const MOST: usize = 5;

/// The positions of up to five bytes in a text, in increasing order.
pub(super) struct Positions<'h> {
    hay: &'h [u8],
    /// How many bytes the set holds, and the set: as bytes, or each
    /// repeated across a vector.
    count: usize,
    #[cfg(not(target_arch = "x86_64"))]
    needles: [u8; MOST],
    #[cfg(target_arch = "x86_64")]
    splats: [m128i; MOST],
    /// Where the block in `mask` starts, and where the next one does.
    base: usize,
    next_block: usize,
    /// The hits of the block at `base` not yet taken, one bit per byte.
    mask: u64,
    /// A byte of the set left out where this other byte follows it.
    pair: Option<(u8, u8)>,
}

impl<'h> Positions<'h> {
    /// Every position in `hay` of any byte in `bytes` (only the first five
    /// are looked for).
    pub(super) fn of(hay: &'h [u8], bytes: &[u8]) -> Positions<'h> {
        let mut needles = [0u8; MOST];
        let count = bytes.len().min(MOST);
        for (slot, &b) in needles.iter_mut().zip(bytes) {
            *slot = b;
        }
        Positions {
            hay,
            count,
            #[cfg(not(target_arch = "x86_64"))]
            needles,
            #[cfg(target_arch = "x86_64")]
            splats: needles.map(|b| set_splat_i8_m128i(i8::from_ne_bytes([b]))),
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
        self.pair = Some((first, second));
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
        let mask = self.block_of_set(at);
        match self.pair {
            Some((first, second)) if mask != 0 => {
                let paired = self.block_of_byte(at, first) & (self.block_of_byte(at, second) >> 1);
                mask & !paired
            }
            _ => mask,
        }
    }

    /// The mask of one byte in the up to 64 bytes from `at`.
    #[inline(always)]
    fn block_of_byte(&self, at: usize, byte: u8) -> u64 {
        let rest = self.hay.get(at..).unwrap_or_default();
        #[cfg(target_arch = "x86_64")]
        if let Some(block) = rest.first_chunk::<BLOCK>() {
            let splats = [set_splat_i8_m128i(i8::from_ne_bytes([byte])); MOST];
            return sse2_mask::<1>(block, &splats);
        }
        rest.iter()
            .take(BLOCK)
            .enumerate()
            .filter(|(_, b)| **b == byte)
            .fold(0, |mask, (i, _)| mask | 1 << i)
    }

    /// The mask of the set in the up to 64 bytes from `at`.
    #[inline(always)]
    fn block_of_set(&self, at: usize) -> u64 {
        let rest = self.hay.get(at..).unwrap_or_default();
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(block) = rest.first_chunk::<BLOCK>() {
                return self.block_sse2(block);
            }
            // The last, short block: copied into a full one, and the bits
            // past the text dropped.
            let mut block = [0u8; BLOCK];
            let len = rest.len().min(BLOCK);
            if let (Some(to), Some(from)) = (block.get_mut(..len), rest.get(..len)) {
                to.copy_from_slice(from);
            }
            self.block_sse2(&block) & ((1u64 << len) - 1)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let needles = self.needles.get(..self.count).unwrap_or_default();
            rest.iter()
                .take(BLOCK)
                .enumerate()
                .filter(|(_, b)| needles.contains(b))
                .fold(0, |mask, (i, _)| mask | 1 << i)
        }
    }

    /// The set's size is a constant in each instance, so that the
    /// compares unroll: a loop over the set costs several times as much.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn block_sse2(&self, block: &[u8; BLOCK]) -> u64 {
        match self.count {
            1 => sse2_mask::<1>(block, &self.splats),
            2 => sse2_mask::<2>(block, &self.splats),
            3 => sse2_mask::<3>(block, &self.splats),
            4 => sse2_mask::<4>(block, &self.splats),
            _ => sse2_mask::<5>(block, &self.splats),
        }
    }
}

/// The mask of `block` for the first `N` bytes of the set.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn sse2_mask<const N: usize>(block: &[u8; BLOCK], splats: &[m128i; MOST]) -> u64 {
    let Some(splats) = splats.first_chunk::<N>() else {
        return 0;
    };
    let part = |k: usize| {
        let Some(part) = block.get(16 * k..).and_then(<[u8]>::first_chunk::<16>) else {
            return 0;
        };
        let bytes = load_unaligned_m128i(part);
        let mut equal = zeroed_m128i();
        for splat in splats {
            equal = bitor_m128i(equal, cmp_eq_mask_i8_m128i(bytes, *splat));
        }
        // One bit per byte, in the low 16 bits.
        u64::from(move_mask_i8_m128i(equal).cast_unsigned() & 0xFFFF)
    };
    part(0) | part(1) << 16 | part(2) << 32 | part(3) << 48
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
