//! Every vector operation of the concealer, in one place, with its
//! portable twin.
//!
//! Three searches read text many bytes at a time, because they run over
//! every byte the concealer is given: where the bytes of a small set are
//! (`positions.rs`: 64 bytes at a time into a mask with a bit per byte),
//! whether and where sixteen bytes hold a trigger or a raw line break
//! (`listed.rs`, `views.rs`), and where the runs with no cut byte are
//! (`gate.rs`: 128 bytes at a time folded into a bit per chunk). Each is a
//! kernel of [`Kernels`], written twice, as memchr writes its own: with
//! SSE2 compares (`sse2.rs`), which every x86_64 has, through `safe_arch`'s
//! safe wrappers, since the crate forbids `unsafe`; and with plain `u64`
//! words (`words.rs`), which every target runs. [`Native`] is the one the
//! crate uses, chosen here and nowhere else.
//!
//! The twin is built and tested on x86_64 too: the tests below hold both to
//! a byte-by-byte reading of the same blocks, as memchr holds each of its
//! kernels to `naive.rs`; and a build with `--cfg meterwire_portable`
//! makes the twin [`Native`], so that every test of the concealer runs
//! through it (`RUSTFLAGS="--cfg meterwire_portable" cargo test --lib
//! conceal`, in a target directory of its own).

#[cfg(all(target_arch = "x86_64", not(meterwire_portable)))]
mod sse2;
// Built on every target, so that a change that breaks the twin fails the
// build where its tests are not run; where SSE2 runs, only the tests use
// its kernels.
#[cfg_attr(
    all(target_arch = "x86_64", not(meterwire_portable), not(test)),
    allow(dead_code)
)]
pub(super) mod words;

/// The kernels the crate runs.
#[cfg(all(target_arch = "x86_64", not(meterwire_portable)))]
pub(super) type Native = sse2::Sse2;
/// The kernels the crate runs.
#[cfg(any(not(target_arch = "x86_64"), meterwire_portable))]
pub(super) type Native = words::Words;

/// The bytes that start an escape a view decodes: a JSON or JavaScript
/// backslash, a percent escape, an HTML reference.
pub(super) const TRIGGERS: [u8; 3] = [b'\\', b'%', b'&'];

/// The raw line breaks a joined view may drop.
pub(super) const BREAKS: [u8; 2] = [b'\r', b'\n'];

/// What a view cares about: a trigger, or a raw line break (an escaped one
/// starts with a trigger).
pub(super) const VIEW_BYTES: [u8; 5] =
    [TRIGGERS[0], TRIGGERS[1], TRIGGERS[2], BREAKS[0], BREAKS[1]];

/// The first trigger in `hay`: memchr's search, at the speed of memory.
#[inline]
pub(super) fn find_trigger(hay: &[u8]) -> Option<usize> {
    let [a, b, c] = TRIGGERS;
    memchr::memchr3(a, b, c, hay)
}

/// The last trigger in `hay`.
#[inline]
pub(super) fn rfind_trigger(hay: &[u8]) -> Option<usize> {
    let [a, b, c] = TRIGGERS;
    memchr::memrchr3(a, b, c, hay)
}

/// The first raw line break in `hay`.
#[inline]
pub(super) fn find_break(hay: &[u8]) -> Option<usize> {
    let [a, b] = BREAKS;
    memchr::memchr2(a, b, hay)
}

/// The most bytes a set may hold.
pub(super) const MOST: usize = 5;

/// The one or two separators the gate cuts text at, as compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cut {
    /// One byte.
    One(u8),
    /// Two bytes.
    Two(u8, u8),
    /// A space and a quote, which differ in one bit (`0x20`, `0x22`): one
    /// compare finds both.
    SpaceQuote,
}

impl Cut {
    /// The cut at `a` and `b` (the same byte twice when there is one).
    pub(super) fn of(a: u8, b: u8) -> Cut {
        match (a, b) {
            (b' ', b'"') | (b'"', b' ') => Cut::SpaceQuote,
            (a, b) if a == b => Cut::One(a),
            (a, b) => Cut::Two(a, b),
        }
    }

    /// Its shape, for the kernels' `SHAPE` parameter.
    pub(super) fn shape(self) -> u8 {
        match self {
            Cut::One(_) => ONE,
            Cut::Two(..) => TWO,
            Cut::SpaceQuote => SPACE_QUOTE,
        }
    }

    /// Whether `byte` is cut at.
    #[cfg(test)]
    fn cuts(self, byte: u8) -> bool {
        match self {
            Cut::One(a) => byte == a,
            Cut::Two(a, b) => byte == a || byte == b,
            Cut::SpaceQuote => byte == b' ' || byte == b'"',
        }
    }
}

/// The first [`MOST`] of `bytes`, zeros after them: what a kernel's set
/// repeats across its lanes.
#[inline(always)]
pub(super) fn needles(bytes: &[u8]) -> [u8; MOST] {
    let mut needles = [0u8; MOST];
    for (slot, &b) in needles.iter_mut().zip(bytes) {
        *slot = b;
    }
    needles
}

impl Cut {
    /// The two bytes a kernel compares with, for its shape: the byte
    /// twice, the two bytes, or the bit a space and a quote differ in and
    /// the quote (a byte `or` the bit is a quote).
    #[inline(always)]
    pub(super) fn operands(self) -> [u8; 2] {
        match self {
            Cut::One(a) => [a, a],
            Cut::Two(a, b) => [a, b],
            Cut::SpaceQuote => [0x02, b'"'],
        }
    }
}

/// A [`Cut`] of one byte, as a kernel's `SHAPE`: one compare.
pub(super) const ONE: u8 = 0;
/// A [`Cut`] of two bytes: two compares.
pub(super) const TWO: u8 = 1;
/// [`Cut::SpaceQuote`]: an `or` and one compare.
pub(super) const SPACE_QUOTE: u8 = 2;

/// The kernels, one implementation per way of reading many bytes at once.
/// Each is a pure function of the bytes it is given, and gives exactly
/// what reading them one at a time gives (the tests below).
pub(super) trait Kernels {
    /// A set of up to [`MOST`] bytes, ready to compare with.
    type Set: Copy;
    /// A [`Cut`], ready to compare with.
    type Cut: Copy;

    /// The set of `bytes` (the first [`MOST`] of them).
    fn set(bytes: &[u8]) -> Self::Set;

    /// One bit per byte of `block` that is one of the set's first `N`
    /// bytes, the first byte the lowest bit. `N` is a constant in each
    /// caller, so that the compares unroll: a loop over the set costs
    /// several times as much.
    fn mask64<const N: usize>(set: &Self::Set, block: &[u8; 64]) -> u64;

    /// [`Kernels::mask64`] of sixteen bytes, in the low 16 bits.
    fn mask16<const N: usize>(set: &Self::Set, chunk: &[u8; 16]) -> u32;

    /// `cut`, ready to compare with.
    fn cut(cut: Cut) -> Self::Cut;

    /// One bit per byte of `chunk` that is cut at, in the low 16 bits, for
    /// a cut of shape `SHAPE` ([`Cut::shape`]).
    fn cut16<const SHAPE: u8>(cut: &Self::Cut, chunk: &[u8; 16]) -> u32;

    /// One bit per chunk of `CHUNK` bytes of `block` (4, 8 or 16, the
    /// first chunk the lowest bit) that holds no byte cut at, for a cut of
    /// shape `SHAPE`. Both are constants in each caller, so that a block's
    /// kernel has no branch.
    fn clean<const SHAPE: u8, const CHUNK: usize>(cut: &Self::Cut, block: &[u8; 128]) -> u32;
}

/// The set a view cares about ([`VIEW_BYTES`]), in the kernels the crate
/// runs.
#[inline(always)]
fn view_set() -> <Native as Kernels>::Set {
    Native::set(&VIEW_BYTES)
}

/// A bit for each of sixteen bytes that is a trigger or a raw break.
#[inline(always)]
pub(super) fn view_mask16(chunk: &[u8; 16]) -> u32 {
    Native::mask16::<5>(&view_set(), chunk)
}

/// Whether `text` holds none of [`VIEW_BYTES`], read sixteen bytes at a
/// time, the last sixteen overlapping the ones before; `false` for a text
/// shorter than that, which the caller reads with its table.
pub(super) fn holds_none(text: &[u8]) -> bool {
    let Some(last) = text.len().checked_sub(16) else {
        return false;
    };
    let set = view_set();
    let clear = |k: usize| {
        text.get(k..)
            .and_then(<[u8]>::first_chunk::<16>)
            .is_some_and(|chunk| Native::mask16::<5>(&set, chunk) == 0)
    };
    let mut k = 0;
    while k < last {
        if !clear(k) {
            return false;
        }
        k += 16;
    }
    clear(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small generator (xorshift), so that every run tries the same
    /// blocks.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// A block of bytes drawn from `alphabet`, some runs of one byte.
        fn block<const L: usize>(&mut self, alphabet: &[u8]) -> [u8; L] {
            let mut block = [0u8; L];
            let mut k = 0;
            while k < L {
                let byte = alphabet[(self.next() % alphabet.len() as u64) as usize];
                let run = 1 + (self.next() % 4) as usize;
                for slot in block.iter_mut().skip(k).take(run) {
                    *slot = byte;
                }
                k += run;
            }
            block
        }
    }

    /// Bytes of every kind the kernels see: the sets', letters, the cut
    /// bytes and those one bit away from them, and bytes with the high bit
    /// set (a word's carries must not reach the next byte).
    const ALPHABET: &[u8] = b"\\%&\r\n\"  ,:!#$(\x00\x01\x7F\x80\xA2\xFF\xDCazAZ09";

    /// The naive reading: one byte at a time.
    fn naive_mask(bytes: &[u8], wanted: impl Fn(u8) -> bool) -> u64 {
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| wanted(**b))
            .fold(0, |mask, (i, _)| mask | 1 << i)
    }

    fn naive_clean(block: &[u8; 128], cut: Cut, chunk: usize) -> u32 {
        block
            .chunks(chunk)
            .enumerate()
            .filter(|(_, part)| !part.iter().any(|&b| cut.cuts(b)))
            .fold(0, |mask, (i, _)| mask | 1 << i)
    }

    const SETS: [&[u8]; 6] = [
        b"\\",
        b"\n\r",
        b"\\%&",
        b"\\%&\r",
        b"\\%&\r\n",
        b"\"\x80\xFF\x00 ",
    ];

    const CUTS: [Cut; 5] = [
        Cut::SpaceQuote,
        Cut::One(b':'),
        Cut::One(b'\x80'),
        Cut::Two(b',', b':'),
        Cut::Two(b'"', b'\xFF'),
    ];

    /// Holds one implementation to the naive reading, on blocks drawn at
    /// random and on every single byte at every place.
    fn agrees_with_the_naive_reading<K: Kernels>() {
        let mut rng = Rng(0x6d65_7465_7277_6972);
        for set_bytes in SETS {
            let set = K::set(set_bytes);
            let wanted = |n: usize| move |b: u8| set_bytes.iter().take(n).any(|&s| s == b);
            for _ in 0..500 {
                let block: [u8; 64] = rng.block(ALPHABET);
                let chunk: [u8; 16] = rng.block(ALPHABET);
                for (n, got64, got16) in [
                    (
                        1,
                        K::mask64::<1>(&set, &block),
                        K::mask16::<1>(&set, &chunk),
                    ),
                    (
                        2,
                        K::mask64::<2>(&set, &block),
                        K::mask16::<2>(&set, &chunk),
                    ),
                    (
                        3,
                        K::mask64::<3>(&set, &block),
                        K::mask16::<3>(&set, &chunk),
                    ),
                    (
                        4,
                        K::mask64::<4>(&set, &block),
                        K::mask16::<4>(&set, &chunk),
                    ),
                    (
                        5,
                        K::mask64::<5>(&set, &block),
                        K::mask16::<5>(&set, &chunk),
                    ),
                ] {
                    // A set is asked only for the bytes it holds.
                    if n > set_bytes.len() {
                        continue;
                    }
                    assert_eq!(
                        got64,
                        naive_mask(&block, wanted(n)),
                        "{set_bytes:?} {block:?}"
                    );
                    assert_eq!(u64::from(got16), naive_mask(&chunk, wanted(n)), "{chunk:?}");
                }
            }
        }
        for cut in CUTS {
            match cut.shape() {
                ONE => cut_agrees::<K, ONE>(cut, &mut rng),
                TWO => cut_agrees::<K, TWO>(cut, &mut rng),
                _ => cut_agrees::<K, SPACE_QUOTE>(cut, &mut rng),
            }
        }
        // Every byte value, at every place of a block.
        for byte in 0..=u8::MAX {
            for at in 0..64 {
                let mut block = [b'a'; 64];
                block[at] = byte;
                let set = K::set(&VIEW_BYTES);
                assert_eq!(
                    K::mask64::<5>(&set, &block),
                    naive_mask(&block, |b| VIEW_BYTES.contains(&b)),
                    "{byte} at {at}"
                );
            }
        }
    }

    /// Holds one implementation's cut kernels to the naive reading, for a
    /// cut of shape `SHAPE`.
    fn cut_agrees<K: Kernels, const SHAPE: u8>(cut: Cut, rng: &mut Rng) {
        let prepared = K::cut(cut);
        for _ in 0..500 {
            let chunk: [u8; 16] = rng.block(ALPHABET);
            assert_eq!(
                u64::from(K::cut16::<SHAPE>(&prepared, &chunk)),
                naive_mask(&chunk, |b| cut.cuts(b)),
                "{cut:?} {chunk:?}"
            );
            // Mostly clean, so that clean chunks are common.
            let sparse = [
                b'a', b'b', b'\x80', b'!', b'a', b'a', b'#', b'a', b' ', b',',
            ];
            for block in [rng.block::<128>(ALPHABET), rng.block::<128>(&sparse)] {
                for (chunk, clean) in [
                    (4, K::clean::<SHAPE, 4>(&prepared, &block)),
                    (8, K::clean::<SHAPE, 8>(&prepared, &block)),
                    (16, K::clean::<SHAPE, 16>(&prepared, &block)),
                ] {
                    assert_eq!(
                        clean,
                        naive_clean(&block, cut, chunk),
                        "{cut:?} {chunk} {block:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_portable_twin_agrees_with_the_naive_reading() {
        agrees_with_the_naive_reading::<words::Words>();
    }

    #[cfg(all(target_arch = "x86_64", not(meterwire_portable)))]
    #[test]
    fn the_sse2_kernels_agree_with_the_naive_reading() {
        agrees_with_the_naive_reading::<sse2::Sse2>();
    }

    /// The build CI runs the concealer's tests with to cover the twin does
    /// run it.
    #[cfg(meterwire_portable)]
    #[test]
    fn the_portable_build_runs_the_twin() {
        assert!(std::any::type_name::<Native>().ends_with("Words"));
    }

    #[test]
    fn a_text_with_none_of_the_view_bytes_is_told_apart_at_any_length() {
        for len in 0..80 {
            let plain = vec![b'a'; len];
            assert_eq!(holds_none(&plain), len >= 16, "{len}");
            for at in 0..len {
                for byte in VIEW_BYTES {
                    let mut text = plain.clone();
                    text[at] = byte;
                    assert!(!holds_none(&text), "{len} {at} {byte}");
                }
            }
        }
    }
}
