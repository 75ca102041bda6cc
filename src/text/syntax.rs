//! The lexical syntax of the escapes the crate reads: where an escape that
//! starts at a trigger byte (`\`, `%`, `&`) ends, and what shape it has,
//! by its form alone, before anything says what it means.
//!
//! Two readers need it and must agree: the concealer's decoders, which give
//! each escape its meaning (`conceal/escapes.rs`), and the escape-aware
//! bound (`text/mod.rs`), which must never cut an escape in two, since a cut
//! `\u00`, `%4` or `&#65` reads as another character than the whole one.
//! Written twice, the two drifted; so the shapes are read here once, in a
//! leaf of the bound's module that imports nothing from the crate.
//!
//! Each family's grammar is read once, as [`lex`], and answers both
//! questions: the escape at a position, if its bytes make a whole one
//! ([`Lexed`]), and whether the bytes end inside one that more bytes could
//! still complete or extend ([`cut_at_end`]).

/// The longest escape a cut can fall inside, and so how far back from a
/// cut or a span's edge one can start: an HTML reference of a name of
/// [`MAX_REF_NAME`] characters, with its `&` and `;`.
pub(crate) const LONGEST_ESCAPE: usize = MAX_REF_NAME + 2;

/// Longer than any name a reference is decoded for: a bounded lookahead
/// per `&`.
pub(crate) const MAX_REF_NAME: usize = 32;

/// The most digits a numeric reference is read with (`&#x` and 14 digits
/// and `;` is 18 bytes, as long as `&DiacriticalGrave;`, the longest name
/// decoded). Leading zeros are legal, so a browser reads on; but a form
/// of a secret must be bounded for the concealer to be local (whether a
/// byte is concealed depends only on the bytes near it, so that a text in
/// pieces is concealed as whole), and no writer pads a number to more.
pub(crate) const MAX_REF_DIGITS: usize = 14;

/// The value of each byte as a hex digit, either case; 0xFF for the rest.
/// A table: the survey reads the four digits of every `\uXXXX`.
const HEX: [u8; 256] = {
    let mut table = [0xFF; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            d @ b'0'..=b'9' => d - b'0',
            d @ b'a'..=b'f' => d - b'a' + 10,
            d @ b'A'..=b'F' => d - b'A' + 10,
            _ => 0xFF,
        };
        b += 1;
    }
    table
};

/// `b` as a hex digit, either case.
pub(crate) fn hex_digit(b: u8) -> Option<u32> {
    HEX.get(usize::from(b))
        .filter(|&&v| v <= 0xF)
        .map(|&v| u32::from(v))
}

/// `n` hex digits at `at`, either case.
pub(crate) fn hex_at(src: &[u8], at: usize, n: usize) -> Option<u32> {
    let digits = src.get(at..at + n)?;
    digits
        .iter()
        .try_fold(0u32, |v, &b| Some(v * 16 + hex_digit(b)?))
}

/// An escape read by its shape: how many bytes it takes, and what form it
/// has. Its meaning (which character, whether a name is known) is the
/// decoders'.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Lexed {
    pub(crate) len: usize,
    pub(crate) form: Form,
}

/// The shapes of escapes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Form {
    /// A backslash and the byte after it (`\n`, `\"`, `\w`), including
    /// `\x` and `\u` not followed by the digits of a longer form.
    Pair(u8),
    /// `\xHH`: a code point below 256.
    Latin(u32),
    /// `\uXXXX`: one UTF-16 unit (a surrogate is the decoders' to pair).
    Unit(u32),
    /// `\u{X…}`, one to six digits: a code point.
    Braced(u32),
    /// `%HH`: a byte.
    Percent(u8),
    /// `&#D…` or `&#xH…`, `;` after it or not: a number, saturated.
    Number(u32),
    /// `&` and a name of this many letters and digits, `;` after it or not.
    Name { len: usize, semicolon: bool },
}

/// The escape that starts at `p`, by its shape, or `None` when the byte
/// there starts none (and stays literal).
pub(crate) fn lex(src: &[u8], p: usize) -> Option<Lexed> {
    read(src, p).0
}

/// Whether `src` ends inside an escape that starts at `p`: one whose bytes
/// so far are the start of an escape, or a whole one that a byte more
/// could extend (`&#65`, which `&#655` reads otherwise, or a name without
/// its `;`). Digits are not held to [`MAX_REF_DIGITS`] here: a cut is
/// judged as a reader that reads every digit would judge it.
pub(crate) fn cut_at_end(src: &[u8], p: usize) -> bool {
    read(src, p).1
}

/// Where the escape-aware bound must cut instead of at the end of `bytes`:
/// the start of the escape that the end cuts in two, if one is.
/// Backslashes pair up from the left (`\\` is one escape), so a run of
/// them is read from its start, even where that lies before the
/// [`LONGEST_ESCAPE`] bytes looked at; so is a numeric reference, whose
/// leading zeros make it as long as it likes.
pub(crate) fn broken_escape(bytes: &[u8]) -> Option<usize> {
    let mut at = bytes.len().saturating_sub(LONGEST_ESCAPE);
    while at > 0
        && bytes.get(at - 1).is_some_and(|&b| {
            matches!(b, b'\\' | b'&' | b'#' | b'x' | b'X') || b.is_ascii_hexdigit()
        })
    {
        at -= 1;
    }
    while at < bytes.len() {
        if cut_at_end(bytes, at) {
            return Some(at);
        }
        // An escaped backslash, whole: its second half starts nothing.
        at += if bytes.get(at..at + 2) == Some(br"\\") {
            2
        } else {
            1
        };
    }
    None
}

/// The most bytes an escape's opening and its digits take before a byte
/// that would continue the digits: `&#x` and [`MAX_REF_DIGITS`] of them.
pub(crate) const LONGEST_OPENED: usize = 3 + MAX_REF_DIGITS;

/// Where the escape starts whose digits the byte at `at` would go on
/// with, when one is open right before it: `&#` and decimal digits before
/// a decimal digit, `&#x` and hex digits, `\u` and up to three, `\u{` and
/// up to six, or `\x` or `%` and up to one, before a hex digit. Text cut
/// at `at` (a marker put there) leaves that escape to be read with the
/// digits it has, whether or not the text read them as a character:
/// `&#5669…`, a number too long to be one, is `&#56` cut there, and HTML
/// reads `&#56` as `8`. A backslash's own escaping is not looked at: a
/// `\\u0` is taken as if it opened a `\u` escape, which costs a few bytes
/// at most.
#[inline(always)]
pub(crate) fn opened_before(src: &[u8], at: usize) -> Option<usize> {
    // Most hits start with no hex digit: one look, where they are read.
    match src.get(at) {
        Some(&next) if at > 0 && next.is_ascii_hexdigit() => opened_before_digit(src, at, next),
        _ => None,
    }
}

/// [`opened_before`] where the byte at `at` is `next`, a hex digit.
#[inline(never)]
fn opened_before_digit(src: &[u8], at: usize, next: u8) -> Option<usize> {
    let from = at.saturating_sub(MAX_REF_DIGITS + 1);
    let digits = src
        .get(from..at)?
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_hexdigit())
        .count();
    if digits > MAX_REF_DIGITS {
        return None;
    }
    let start = at - digits;
    let opening = |opening: &[u8]| {
        start
            .checked_sub(opening.len())
            .filter(|&open| src.get(open..start) == Some(opening))
    };
    let decimal = || {
        next.is_ascii_digit()
            && src
                .get(start..at)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    // The byte before the digits says which opening it can be: most hits
    // stand after none, and are told so by this one look.
    let (open, most) = match src.get(start.checked_sub(1)?)? {
        b'#' if decimal() => (opening(b"&#")?, MAX_REF_DIGITS),
        b'x' | b'X' => match opening(b"&#x").or_else(|| opening(b"&#X")) {
            Some(open) => (open, MAX_REF_DIGITS),
            None => (opening(br"\x")?, 1),
        },
        b'u' => (opening(br"\u")?, 3),
        b'{' => (opening(br"\u{")?, 6),
        b'%' => (start - 1, 1),
        _ => return None,
    };
    (digits <= most).then_some(open)
}

/// The escape at `p` and whether the end of `src` cuts one there.
fn read(src: &[u8], p: usize) -> (Option<Lexed>, bool) {
    match src.get(p) {
        Some(b'\\') => backslash(src, p),
        Some(b'%') => {
            let (value, digits) = hex_run(src, p + 1, 2);
            let lexed = (digits == 2).then(|| Lexed {
                len: 3,
                form: Form::Percent(u8::try_from(value).unwrap_or(u8::MAX)),
            });
            (lexed, digits < 2 && p + 1 + digits == src.len())
        }
        Some(b'&') if src.get(p + 1) == Some(&b'#') => number(src, p),
        Some(b'&') => {
            let start = p + 1;
            let len = src
                .get(start..)
                .unwrap_or_default()
                .iter()
                .take(MAX_REF_NAME)
                .take_while(|b| b.is_ascii_alphanumeric())
                .count();
            let end = start + len;
            let lexed = (len > 0).then(|| {
                let semicolon = src.get(end) == Some(&b';');
                Lexed {
                    len: 1 + len + usize::from(semicolon),
                    form: Form::Name { len, semicolon },
                }
            });
            (lexed, end == src.len() && len < MAX_REF_NAME)
        }
        _ => (None, false),
    }
}

/// A backslash escape: the longest form its bytes make, else a pair.
fn backslash(src: &[u8], p: usize) -> (Option<Lexed>, bool) {
    let Some(&next) = src.get(p + 1) else {
        return (None, p < src.len());
    };
    let pair = Lexed {
        len: 2,
        form: Form::Pair(next),
    };
    // `\xHH` and `\uXXXX`: a fixed number of digits, or only the pair.
    let fixed = |digits: usize, form: fn(u32) -> Form| {
        let (value, found) = hex_run(src, p + 2, digits);
        if found == digits {
            let form = form(value);
            return (
                Some(Lexed {
                    len: 2 + digits,
                    form,
                }),
                false,
            );
        }
        (Some(pair), p + 2 + found == src.len())
    };
    match next {
        b'x' => fixed(2, Form::Latin),
        b'u' if src.get(p + 2) == Some(&b'{') => {
            // At most six digits: the lookahead stays bounded and the value
            // cannot overflow.
            let (value, digits) = hex_run(src, p + 3, 6);
            let close = p + 3 + digits;
            if digits > 0 && src.get(close) == Some(&b'}') {
                let len = close + 1 - p;
                let form = Form::Braced(value);
                return (Some(Lexed { len, form }), false);
            }
            (Some(pair), close == src.len())
        }
        b'u' => fixed(4, Form::Unit),
        _ => (Some(pair), false),
    }
}

/// `&#DDD;` or `&#xHHH;` (either case of `x` and the digits), the `;`
/// optional, as HTML reads them.
fn number(src: &[u8], p: usize) -> (Option<Lexed>, bool) {
    let (radix, digits_at) = match src.get(p + 2) {
        Some(b'x' | b'X') => (16, p + 3),
        _ => (10, p + 2),
    };
    let mut k = digits_at;
    let mut value = 0u32;
    // Saturating keeps a huge number a non-char instead of wrapping into a
    // real one.
    while let Some(d) = src.get(k).and_then(|&b| char::from(b).to_digit(radix)) {
        value = value.saturating_mul(radix).saturating_add(d);
        k += 1;
    }
    let cut = k >= src.len();
    let digits = k - digits_at;
    if digits == 0 || digits > MAX_REF_DIGITS {
        return (None, cut);
    }
    let len = k + usize::from(src.get(k) == Some(&b';')) - p;
    let lexed = Lexed {
        len,
        form: Form::Number(value),
    };
    (Some(lexed), cut)
}

/// Up to `max` hex digits at `at`: their value and how many there are.
fn hex_run(src: &[u8], at: usize, max: usize) -> (u32, usize) {
    let mut value = 0;
    let mut count = 0;
    while count < max
        && let Some(d) = src.get(at + count).copied().and_then(hex_digit)
    {
        value = value * 16 + d;
        count += 1;
    }
    (value, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_is_lexed_to_its_length_and_form() {
        let lexed = |src: &[u8]| lex(src, 0).map(|l| (l.len, l.form));
        assert_eq!(lexed(br"\n"), Some((2, Form::Pair(b'n'))));
        assert_eq!(lexed(br"\x41"), Some((4, Form::Latin(0x41))));
        assert_eq!(lexed(br"\x4z"), Some((2, Form::Pair(b'x'))));
        assert_eq!(lexed(br"\u002B"), Some((6, Form::Unit(0x2B))));
        assert_eq!(lexed(br"\u{1F980}"), Some((9, Form::Braced(0x1F980))));
        assert_eq!(lexed(br"\u{}"), Some((2, Form::Pair(b'u'))));
        assert_eq!(lexed(b"%2f"), Some((3, Form::Percent(0x2F))));
        assert_eq!(lexed(b"%2"), None);
        assert_eq!(lexed(b"&#x2B;"), Some((6, Form::Number(0x2B))));
        assert_eq!(lexed(b"&#43 "), Some((4, Form::Number(43))));
        let name = |len, semicolon| Form::Name { len, semicolon };
        assert_eq!(lexed(b"&amp;"), Some((5, name(3, true))));
        assert_eq!(lexed(b"&ampx"), Some((5, name(4, false))));
        assert_eq!(lexed(b"& b"), None);
        assert_eq!(lexed(b"a"), None);
    }

    #[test]
    fn an_escape_opened_before_a_byte_that_goes_on_with_its_digits_is_found() {
        let opened = |text: &str| {
            let at = text.find('|').unwrap_or(text.len());
            let src = text.replace('|', "");
            opened_before(src.as_bytes(), at)
        };
        for (text, start) in [
            ("ivXwBlS&#56|69", 7),
            ("x&#|5", 1),
            ("x&#99999999999999|9", 1),
            ("x&#x3|F", 1),
            ("x&#X|a", 1),
            (r"x\u00|4", 1),
            (r"x\u|0", 1),
            (r"x\u{1F9|8", 1),
            (r"x\x4|1", 1),
            ("x%|4", 1),
            ("x%4|1", 1),
        ] {
            assert_eq!(opened(text), Some(start), "{text}");
        }
        for text in [
            // The byte after is no digit of the escape: the escape reads
            // the same whatever follows.
            "x&#56|a",
            "x&#56|;",
            "x&#x3|g",
            "x%4|z",
            // The escape is whole already: what follows is text.
            r"x\u0041|4",
            "x%41|4",
            r"x\x41|4",
            // More digits than a reference is read with, or no opening.
            "x&#999999999999999|9",
            "x56|6",
            "x&56|6",
            "|6",
        ] {
            assert_eq!(opened(text), None, "{text}");
        }
    }

    #[test]
    fn an_escape_the_end_could_still_complete_is_cut() {
        for cut in [
            &br"\"[..],
            br"\x",
            br"\x4",
            br"\u",
            br"\u00",
            br"\u{1F9",
            b"%",
            b"%4",
            b"&",
            b"&#",
            b"&#x",
            b"&#65",
            b"&am",
            b"&amp",
        ] {
            assert!(cut_at_end(cut, 0), "{:?}", String::from_utf8_lossy(cut));
        }
        for whole in [
            &br"\n"[..],
            br"\x41",
            br"\u0041",
            br"\u{41}",
            b"%41",
            b"&#65;",
            b"&amp;",
            b"& ",
            b"%g",
            br"\u0z",
        ] {
            assert!(
                !cut_at_end(whole, 0),
                "{:?}",
                String::from_utf8_lossy(whole)
            );
        }
    }
}
