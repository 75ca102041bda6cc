//! The kernels with SSE2 compares, which every x86_64 has, through
//! `safe_arch`'s safe wrappers.

use safe_arch::{
    bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, m128i, move_mask_i8_m128i,
    pack_i16_to_i8_m128i, set_splat_i8_m128i, zeroed_m128i,
};

use super::{Cut, Kernels, MOST, ONE, SPACE_QUOTE, needles};

/// SSE2: sixteen bytes a compare.
pub(in crate::conceal) struct Sse2;

/// `byte` in each of sixteen lanes.
#[inline(always)]
fn splat(byte: u8) -> m128i {
    set_splat_i8_m128i(i8::from_ne_bytes([byte]))
}

/// One bit per lane whose high bit is set, in the low 16 bits.
#[inline(always)]
fn bits(lanes: m128i) -> u32 {
    move_mask_i8_m128i(lanes).cast_unsigned() & 0xFFFF
}

/// The lanes of `bytes` equal to one of the first `N` of `set`, all ones.
#[inline(always)]
fn any<const N: usize>(set: &[m128i; MOST], bytes: m128i) -> m128i {
    let mut equal = zeroed_m128i();
    if let Some(set) = set.first_chunk::<N>() {
        for splat in set {
            equal = bitor_m128i(equal, cmp_eq_mask_i8_m128i(bytes, *splat));
        }
    }
    equal
}

/// The lanes of `bytes` cut at, all ones, for a cut of shape `SHAPE`.
#[inline(always)]
fn cuts<const SHAPE: u8>(cut: &[m128i; 2], bytes: m128i) -> m128i {
    let [a, b] = *cut;
    match SHAPE {
        // `a` is the bit a space and a quote differ in, `b` the quote.
        SPACE_QUOTE => cmp_eq_mask_i8_m128i(bitor_m128i(bytes, a), b),
        ONE => cmp_eq_mask_i8_m128i(bytes, a),
        _ => bitor_m128i(
            cmp_eq_mask_i8_m128i(bytes, a),
            cmp_eq_mask_i8_m128i(bytes, b),
        ),
    }
}

/// The `k`th sixteen bytes of `block`.
#[inline(always)]
fn part<const L: usize>(block: &[u8; L], k: usize) -> m128i {
    block
        .get(16 * k..)
        .and_then(<[u8]>::first_chunk::<16>)
        .map_or_else(zeroed_m128i, load_unaligned_m128i)
}

impl Kernels for Sse2 {
    type Set = [m128i; MOST];
    type Cut = [m128i; 2];

    #[inline(always)]
    fn set(bytes: &[u8]) -> [m128i; MOST] {
        needles(bytes).map(splat)
    }

    #[inline(always)]
    fn mask64<const N: usize>(set: &[m128i; MOST], block: &[u8; 64]) -> u64 {
        let mask = |k: usize| u64::from(bits(any::<N>(set, part(block, k))));
        mask(0) | mask(1) << 16 | mask(2) << 32 | mask(3) << 48
    }

    #[inline(always)]
    fn mask16<const N: usize>(set: &[m128i; MOST], chunk: &[u8; 16]) -> u32 {
        bits(any::<N>(set, load_unaligned_m128i(chunk)))
    }

    #[inline(always)]
    fn cut(cut: Cut) -> [m128i; 2] {
        cut.operands().map(splat)
    }

    #[inline(always)]
    fn cut16<const SHAPE: u8>(cut: &[m128i; 2], chunk: &[u8; 16]) -> u32 {
        bits(cuts::<SHAPE>(cut, load_unaligned_m128i(chunk)))
    }

    #[inline(always)]
    fn clean<const SHAPE: u8, const CHUNK: usize>(cut: &[m128i; 2], block: &[u8; 128]) -> u32 {
        let part = |k: usize| cuts::<SHAPE>(cut, part(block, k));
        // Each pack folds two bytes into one, and what is not zero stays
        // so (saturation never makes zero): after two, a byte stands for 4
        // bytes of the block; after three, for 8; after four, for 16.
        let pack = pack_i16_to_i8_m128i;
        let quarters = [
            pack(pack(part(0), part(1)), pack(part(2), part(3))),
            pack(pack(part(4), part(5)), pack(part(6), part(7))),
        ];
        let zero = zeroed_m128i();
        let clean = |folded: m128i| bits(cmp_eq_mask_i8_m128i(folded, zero));
        if CHUNK == 4 {
            return clean(quarters[0]) | clean(quarters[1]) << 16;
        }
        let eighths = pack(quarters[0], quarters[1]);
        if CHUNK == 16 {
            return clean(pack(eighths, eighths)) & 0xFF;
        }
        clean(eighths)
    }
}
