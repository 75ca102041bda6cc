//! The kernels with plain `u64` words, eight bytes at a time (SWAR): what
//! any target runs, and the twin the SSE2 kernels are held to.

use super::{Cut, Kernels, MOST, ONE, SPACE_QUOTE, needles};

/// Eight bytes a word.
pub(in crate::conceal) struct Words;

/// How many bytes a word holds.
pub(in crate::conceal) const WORD: usize = 8;

/// `byte` in every byte of a word.
#[inline(always)]
pub(in crate::conceal) fn splat(byte: u8) -> u64 {
    0x0101_0101_0101_0101 * u64::from(byte)
}

/// The high bit of every byte of `word` that is zero, and no other bit:
/// exact, since no byte's sum carries into the next (each is at most
/// `0x7F + 0x7F`).
#[inline(always)]
pub(in crate::conceal) fn zero_bytes(word: u64) -> u64 {
    const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    !(((word & LOW) + LOW) | word) & !LOW
}

/// The eight bytes of `text` from `at`, the first the lowest; 0 past its
/// end.
#[inline(always)]
pub(in crate::conceal) fn word_at(text: &[u8], at: usize) -> u64 {
    text.get(at..)
        .and_then(<[u8]>::first_chunk::<WORD>)
        .map_or(0, |bytes| u64::from_le_bytes(*bytes))
}

/// One bit per byte of a word of high bits ([`zero_bytes`]), in the low 8
/// bits: the multiply moves the bit of byte `i` to bit `56 + i`, and no
/// two of its terms meet, so nothing carries.
#[inline(always)]
fn gather(high: u64) -> u64 {
    ((high >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// The high bit of each byte of `word` that is one of the first `N` of
/// `set`.
#[inline(always)]
fn any<const N: usize>(set: &[u64; MOST], word: u64) -> u64 {
    set.iter()
        .take(N)
        .fold(0, |found, &splat| found | zero_bytes(word ^ splat))
}

/// The high bit of each byte of `word` cut at, for a cut of shape `SHAPE`.
#[inline(always)]
fn cuts<const SHAPE: u8>(cut: &[u64; 2], word: u64) -> u64 {
    let [a, b] = *cut;
    match SHAPE {
        SPACE_QUOTE => zero_bytes((word | a) ^ b),
        ONE => zero_bytes(word ^ a),
        _ => zero_bytes(word ^ a) | zero_bytes(word ^ b),
    }
}

impl Kernels for Words {
    type Set = [u64; MOST];
    type Cut = [u64; 2];

    #[inline(always)]
    fn set(bytes: &[u8]) -> [u64; MOST] {
        needles(bytes).map(splat)
    }

    #[inline(always)]
    fn mask64<const N: usize>(set: &[u64; MOST], block: &[u8; 64]) -> u64 {
        (0..64 / WORD).fold(0, |mask, k| {
            mask | gather(any::<N>(set, word_at(block, k * WORD))) << (k * WORD)
        })
    }

    #[inline(always)]
    fn mask16<const N: usize>(set: &[u64; MOST], chunk: &[u8; 16]) -> u32 {
        let low = gather(any::<N>(set, word_at(chunk, 0)));
        let high = gather(any::<N>(set, word_at(chunk, WORD)));
        u32::try_from(low | high << WORD).unwrap_or(u32::MAX)
    }

    #[inline(always)]
    fn cut(cut: Cut) -> [u64; 2] {
        cut.operands().map(splat)
    }

    #[inline(always)]
    fn cut16<const SHAPE: u8>(cut: &[u64; 2], chunk: &[u8; 16]) -> u32 {
        let low = gather(cuts::<SHAPE>(cut, word_at(chunk, 0)));
        let high = gather(cuts::<SHAPE>(cut, word_at(chunk, WORD)));
        u32::try_from(low | high << WORD).unwrap_or(u32::MAX)
    }

    #[inline(always)]
    fn clean<const SHAPE: u8, const CHUNK: usize>(cut: &[u64; 2], block: &[u8; 128]) -> u32 {
        let dirty = |k: usize| cuts::<SHAPE>(cut, word_at(block, k * WORD)) != 0;
        match CHUNK {
            // Two chunks a word: its low four bytes, then its high four.
            4 => (0..128 / WORD).fold(0, |clean, k| {
                let cuts = cuts::<SHAPE>(cut, word_at(block, k * WORD));
                let low = u32::from(cuts & 0x0000_0000_8080_8080 == 0);
                let high = u32::from(cuts & 0x8080_8080_0000_0000 == 0);
                clean | (low | high << 1) << (2 * k)
            }),
            16 => (0..128 / 16).fold(0, |clean, k| {
                if dirty(2 * k) || dirty(2 * k + 1) {
                    clean
                } else {
                    clean | 1 << k
                }
            }),
            _ => (0..128 / WORD).fold(0, |clean, k| if dirty(k) { clean } else { clean | 1 << k }),
        }
    }
}
