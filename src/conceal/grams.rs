//! Every hit in a short view, found from a few of its eight-byte pieces.
//!
//! The automaton's prefilter is the fastest search over a long text, but
//! each call costs as much as reading a few hundred bytes, and most views
//! the concealer scans are short: a stretch around one echo of a token
//! (`gate.rs`), or what it decodes to. A hit of a pattern of `L` bytes
//! holds a whole eight-byte piece starting at every `L - 7`th byte of the
//! view, whatever its alignment; so looking up the piece at each of those
//! places in a table of the patterns' pieces (which pattern, and where in
//! it) and comparing the pattern there finds every hit, overlapping ones
//! included, for a few lookups per view.
//!
//! Built only when every pattern is at least 11 bytes long (so a lookup
//! every 4 bytes or more, still fewer than the automaton's set-up costs
//! in a short view) and no piece is in the patterns more than a few
//! times (a secret that repeats itself, `abab…`, would make each lookup
//! compare it at every place it repeats): otherwise the automaton scans
//! every view.

/// How many bytes one piece holds.
const PIECE: usize = 8;

/// The most places one piece may stand in the patterns.
const MOST_PLACES: usize = 4;

/// The shortest pattern the table is built for.
const SHORTEST: usize = 11;

/// Where the pieces of the patterns stand.
pub(super) struct Grams {
    /// How far apart the pieces a view is looked up at are.
    stride: usize,
    /// Open addressing: each slot is a piece and the range of `places`
    /// where it stands, empty when the range is.
    slots: Vec<(u64, u32, u32)>,
    /// Where every piece stands, grouped by piece.
    places: Vec<Place>,
    /// The patterns' bytes, one after the other.
    bytes: Vec<u8>,
}

/// Where one piece stands: in which pattern, how far into it, and where
/// that pattern's bytes are in [`Grams::bytes`], so that a piece found
/// leads to the bytes to compare with one read.
#[derive(Clone, Copy)]
struct Place {
    id: u32,
    offset: u32,
    at: u32,
    len: u32,
}

impl Grams {
    /// The table for `patterns` (by id), if they allow one.
    pub(super) fn new<'p>(patterns: impl IntoIterator<Item = &'p [u8]>) -> Option<Grams> {
        let patterns: Vec<Vec<u8>> = patterns.into_iter().map(<[u8]>::to_vec).collect();
        let shortest = patterns.iter().map(Vec::len).min()?;
        if shortest < SHORTEST {
            return None;
        }
        let mut all: Vec<(u64, u32, u32)> = Vec::new();
        let mut bounds: Vec<(u32, u32)> = Vec::with_capacity(patterns.len());
        let mut bytes = Vec::new();
        for (id, pattern) in patterns.iter().enumerate() {
            bounds.push((
                u32::try_from(bytes.len()).ok()?,
                u32::try_from(pattern.len()).ok()?,
            ));
            bytes.extend_from_slice(pattern);
            for (offset, piece) in pattern.windows(PIECE).enumerate() {
                all.push((
                    key(piece)?,
                    u32::try_from(id).ok()?,
                    u32::try_from(offset).ok()?,
                ));
            }
        }
        all.sort_unstable();
        let size = (2 * all.len()).next_power_of_two().max(16);
        let mut slots = vec![(0u64, 0u32, 0u32); size];
        let mut places = Vec::with_capacity(all.len());
        let mut at = 0;
        while let Some(&(piece, ..)) = all.get(at) {
            let same = all
                .get(at..)
                .unwrap_or_default()
                .iter()
                .take_while(|(p, ..)| *p == piece)
                .count();
            if same > MOST_PLACES {
                return None;
            }
            let from = u32::try_from(places.len()).ok()?;
            for &(_, id, offset) in all.get(at..at + same)? {
                let &(at, len) = bounds.get(id as usize)?;
                places.push(Place {
                    id,
                    offset,
                    at,
                    len,
                });
            }
            let to = u32::try_from(places.len()).ok()?;
            let mut slot = hash(piece, size);
            while slots.get(slot).is_some_and(|&(_, a, b)| a != b) {
                slot = (slot + 1) & (size - 1);
            }
            *slots.get_mut(slot)? = (piece, from, to);
            at += same;
        }
        Some(Grams {
            stride: shortest - PIECE + 1,
            slots,
            places,
            bytes,
        })
    }

    /// Calls `hit(pattern, start, end)` for every occurrence of every
    /// pattern in `hay`: each one found from every looked-up piece it
    /// holds (once to a few times), in about the order they start.
    #[inline]
    pub(super) fn find(&self, hay: &[u8], mut hit: impl FnMut(usize, usize, usize)) {
        let size = self.slots.len();
        let mut p = 0;
        while let Some(piece) = hay.get(p..p + PIECE).and_then(key) {
            let mut slot = hash(piece, size);
            while let Some(&(found, from, to)) = self.slots.get(slot) {
                if from == to {
                    break;
                }
                if found == piece {
                    let places = self.places.get(from as usize..to as usize);
                    for place in places.unwrap_or_default() {
                        let Some(start) = p.checked_sub(place.offset as usize) else {
                            continue;
                        };
                        let end = start + place.len as usize;
                        let at = place.at as usize;
                        let pattern = self.bytes.get(at..at + place.len as usize);
                        if let (Some(found), Some(pattern)) = (hay.get(start..end), pattern)
                            && same(found, pattern)
                        {
                            hit(place.id as usize, start, end);
                        }
                    }
                    break;
                }
                slot = (slot + 1) & (size - 1);
            }
            p += self.stride;
        }
    }
}

/// Whether two slices of the same length are equal, eight bytes at a time
/// inline: a pattern is a few dozen bytes, and a call to `memcmp` for
/// each piece found costs more than comparing them.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (a_words, a_rest) = a.as_chunks::<PIECE>();
    let (b_words, b_rest) = b.as_chunks::<PIECE>();
    a_words
        .iter()
        .zip(b_words)
        .all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
        && a_rest.iter().zip(b_rest).all(|(x, y)| x == y)
}

/// A piece as a number.
#[inline]
fn key(piece: &[u8]) -> Option<u64> {
    piece
        .first_chunk::<PIECE>()
        .map(|bytes| u64::from_le_bytes(*bytes))
}

/// The slot a piece's search starts at, in a table of `size` (a power of
/// two) slots.
#[inline]
fn hash(piece: u64, size: usize) -> usize {
    let mixed = piece.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 40) as usize & (size - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every occurrence, found by comparing at every place.
    fn plain(patterns: &[&[u8]], hay: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut found = Vec::new();
        for (id, pattern) in patterns.iter().enumerate() {
            for start in 0..hay.len() {
                if hay.get(start..start + pattern.len()) == Some(*pattern) {
                    found.push((id, start, start + pattern.len()));
                }
            }
        }
        found.sort_unstable();
        found
    }

    #[test]
    fn every_occurrence_is_found_at_every_alignment() {
        let patterns: [&[u8]; 3] = [
            b"mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN",
            b"4f+Ab/9zQ7vX2kP9",
            b"bXdfbGl2ZV80ZitBYi85elE3dlgya1A5elI0dEw4d04",
        ];
        let grams = Grams::new(patterns).unwrap_or_else(|| panic!("a table"));
        for lead in 0..40 {
            for overlap in [false, true] {
                let mut hay = b"x".repeat(lead);
                hay.extend_from_slice(patterns[0]);
                if !overlap {
                    hay.push(b' ');
                }
                hay.extend_from_slice(patterns[2]);
                hay.extend_from_slice(patterns[0]);
                hay.extend_from_slice(b"tail");
                let mut found = Vec::new();
                grams.find(&hay, |id, start, end| found.push((id, start, end)));
                found.sort_unstable();
                found.dedup();
                assert_eq!(found, plain(&patterns, &hay), "lead {lead}");
            }
        }
    }

    #[test]
    fn no_table_for_short_or_self_repeating_patterns() {
        assert!(Grams::new([&b"short-token-1234"[..10]]).is_none());
        assert!(Grams::new([&b"short-token-1234"[..11]]).is_some());
        assert!(Grams::new([&b"abababababababababababab"[..]]).is_none());
        assert!(Grams::new([&b"0123456789abcdef"[..]]).is_some());
    }
}
