//! Text from bytes that arrive in pieces: a character split across two
//! pieces is one character, not an error, and a byte that starts no
//! character is.
//!
//! Hand-written over `simdutf8`'s `std`-compatible check, which tells an
//! incomplete last character (`error_len() == None`) from an invalid one
//! as `std::str::from_utf8` does, at several times its speed on the
//! megabytes of an answer (its SIMD and its `unsafe` are its own); all
//! that is added is keeping those few bytes for the next piece.

use simdutf8::compat::from_utf8;

/// What is left of a character cut at the end of the last piece.
#[derive(Debug, Default)]
pub(crate) struct Utf8Pieces {
    pending: Vec<u8>,
}

/// Bytes that are not UTF-8 text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NotUtf8;

impl Utf8Pieces {
    /// Hands the text of `bytes` (the character cut before them completed
    /// first) to `emit`, keeping a character cut at their end for the next
    /// piece.
    pub(crate) fn push(&mut self, bytes: &[u8], mut emit: impl FnMut(&str)) -> Result<(), NotUtf8> {
        let mut rest = bytes;
        if !self.pending.is_empty() {
            let width = width(self.pending[0]).ok_or(NotUtf8)?;
            let needed = width - self.pending.len();
            if rest.len() < needed {
                self.pending.extend_from_slice(rest);
                return match from_utf8(&self.pending) {
                    Err(error) if error.error_len().is_some() => Err(NotUtf8),
                    _ => Ok(()),
                };
            }
            self.pending.extend_from_slice(&rest[..needed]);
            rest = &rest[needed..];
            let character = from_utf8(&self.pending).map_err(|_| NotUtf8)?;
            emit(character);
            self.pending.clear();
        }
        match from_utf8(rest) {
            Ok(text) => {
                emit(text);
                Ok(())
            }
            Err(error) => {
                let (valid, tail) = rest.split_at(error.valid_up_to());
                // `valid_up_to` is where valid UTF-8 ends.
                emit(from_utf8(valid).map_err(|_| NotUtf8)?);
                match error.error_len() {
                    Some(_) => Err(NotUtf8),
                    None => {
                        self.pending.extend_from_slice(tail);
                        Ok(())
                    }
                }
            }
        }
    }

    /// The end of the bytes: a character still cut is an error.
    pub(crate) fn finish(&self) -> Result<(), NotUtf8> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(NotUtf8)
        }
    }
}

/// How many bytes the character that `first` starts takes.
fn width(first: u8) -> Option<usize> {
    match first {
        0x00..=0x7F => Some(1),
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(pieces: &[&[u8]]) -> Result<String, NotUtf8> {
        let mut pieces_in = Utf8Pieces::default();
        let mut out = String::new();
        for piece in pieces {
            pieces_in.push(piece, |text| out.push_str(text))?;
        }
        pieces_in.finish()?;
        Ok(out)
    }

    #[test]
    fn a_character_cut_anywhere_is_one_character() {
        let text = "a é 日 😀 z";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            for second in cut..=bytes.len() {
                let pieces = [&bytes[..cut], &bytes[cut..second], &bytes[second..]];
                assert_eq!(decode(&pieces), Ok(text.to_owned()), "{cut} {second}");
            }
        }
        let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode(&one_by_one), Ok(text.to_owned()));
    }

    #[test]
    fn bytes_that_are_not_text_are_an_error_wherever_they_fall() {
        assert_eq!(decode(&[b"ok \xff"]), Err(NotUtf8));
        assert_eq!(decode(&[b"\xe6", b"\x97"]), Err(NotUtf8), "cut at the end");
        assert_eq!(
            decode(&[b"\xe6", b"x"]),
            Err(NotUtf8),
            "a cut one not completed"
        );
        assert_eq!(decode(&[b"\xe6\x97", b"\xa5\xff"]), Err(NotUtf8));
        assert_eq!(decode(&[b"\xc0\x80"]), Err(NotUtf8), "an overlong form");
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// However bytes are cut into pieces, what they decode to is what
        /// `std` says of them whole: the same text, or an error.
        #[test]
        fn pieces_agree_with_std_on_the_whole(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[a-z é日😀\\\"]{0,40}")
                        .expect("a regex")
                        .prop_map(String::into_bytes),
                    proptest::collection::vec(proptest::num::u8::ANY, 0..4),
                ],
                0..6,
            ),
            cuts in proptest::collection::vec(0usize..200, 0..5),
        ) {
            let bytes: Vec<u8> = parts.concat();
            let mut at: Vec<usize> = cuts.into_iter().map(|cut| cut % (bytes.len() + 1)).collect();
            at.sort_unstable();
            let mut pieces = Vec::new();
            let mut start = 0;
            for cut in at {
                pieces.push(&bytes[start..cut]);
                start = cut;
            }
            pieces.push(&bytes[start..]);
            let whole = std::str::from_utf8(&bytes).map(str::to_owned).map_err(|_| NotUtf8);
            proptest::prop_assert_eq!(decode(&pieces), whole);
        }
    }
}
