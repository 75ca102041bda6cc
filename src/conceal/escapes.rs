//! The escape decoders: the escape that starts at a trigger byte (`\`, `%`,
//! `&`), as its length in the source and what it decodes to, or `None` when
//! the trigger starts no escape and stays literal.

use super::views::Decoded;
use memchr::memchr;

/// `text` with every complete HTML / XML character reference decoded: a
/// named one (`&amp;`, `&nbsp;`, `&plus;`), a decimal one (`&#39;`) or a
/// hex one (`&#x2B;`), each ended by its `;`, decoded by the same
/// [`char_ref`] the concealer's views use. Anything else stays as it is: a
/// stray `&`, an unknown name, a reference without its `;` (`&#65`, `&amp`),
/// a number that is no char (`&#xD800;`). One layer only: `&amp;lt;` is
/// `&lt;`.
pub(crate) fn decode_char_refs(text: &str) -> String {
    let src = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut literal_from = 0;
    let mut at = 0;
    while let Some(p) = src.get(at..).and_then(|rest| memchr(b'&', rest)) {
        let p = at + p;
        // A reference is all ASCII, so it starts and ends on char
        // boundaries of `text`.
        let complete = char_ref(src, p)
            .filter(|&(len, _)| src.get(..p + len).is_some_and(|r| r.ends_with(b";")));
        match complete {
            Some((len, Decoded::Char(c))) => {
                out.push_str(text.get(literal_from..p).unwrap_or_default());
                out.push(c);
                at = p + len;
                literal_from = at;
            }
            // `char_ref` decodes to chars only; anything else, like no
            // reference at all, leaves the `&` literal.
            Some((_, Decoded::Byte(_))) | None => at = p + 1,
        }
    }
    out.push_str(text.get(literal_from..).unwrap_or_default());
    out
}

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

fn hex_digit(b: u8) -> Option<u32> {
    HEX.get(usize::from(b))
        .filter(|&&v| v <= 0xF)
        .map(|&v| u32::from(v))
}

/// `n` hex digits at `at`, either case.
pub(super) fn hex_at(src: &[u8], at: usize, n: usize) -> Option<u32> {
    let digits = src.get(at..at + n)?;
    digits
        .iter()
        .try_fold(0u32, |v, &b| Some(v * 16 + hex_digit(b)?))
}

/// A JSON or JavaScript escape at `p` (a backslash): its length and value.
pub(super) fn json_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let byte = |b| Some((2, Decoded::Byte(b)));
    match *src.get(p + 1)? {
        c @ (b'/' | b'"' | b'\\' | b'\'') => byte(c),
        b'n' => byte(b'\n'),
        b't' => byte(b'\t'),
        b'r' => byte(b'\r'),
        b'b' => byte(0x08),
        b'f' => byte(0x0C),
        b'v' => byte(0x0B),
        // JavaScript's `\xHH` is a code point below 256, not a byte.
        b'x' => {
            let cp = hex_at(src, p + 2, 2)?;
            Some((4, Decoded::Char(char::from_u32(cp)?)))
        }
        b'u' => unicode_escape(src, p),
        _ => None,
    }
}

/// A backslash at `p` as a lenient reader of strict JSON reads it: JSON's
/// own escapes (`\" \\ \/ \b \f \n \r \t \uXXXX`) as JSON does, and a
/// backslash before any other character (`\x`, `\v`, `\'`, `\w`, `\q`,
/// `\u` without four hex digits) dropped, the character kept. So `\x41`
/// reads `x41` here and `A` to [`json_escape`]: each reading gets its own
/// view. A character after the backslash that is not ASCII is kept by
/// keeping its first byte here and the rest as the text's own.
pub(super) fn lenient_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let byte = |b| Some((2, Decoded::Byte(b)));
    match *src.get(p + 1)? {
        b'n' => byte(b'\n'),
        b't' => byte(b'\t'),
        b'r' => byte(b'\r'),
        b'b' => byte(0x08),
        b'f' => byte(0x0C),
        b'u' => json_unicode_escape(src, p).or(byte(b'u')),
        c => byte(c),
    }
}

/// `\uXXXX`, a surrogate pair of them, or JavaScript's `\u{X…}`.
fn unicode_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    if src.get(p + 2) == Some(&b'{') {
        let digits_at = p + 3;
        let mut k = digits_at;
        let mut cp = 0u32;
        // At most 6 digits: the lookahead stays bounded and `cp` cannot
        // overflow.
        while k < digits_at + 6 {
            match src.get(k).copied().and_then(hex_digit) {
                Some(d) => cp = cp * 16 + d,
                None => break,
            }
            k += 1;
        }
        if k == digits_at || src.get(k) != Some(&b'}') {
            return None;
        }
        return Some((k + 1 - p, Decoded::Char(char::from_u32(cp)?)));
    }
    json_unicode_escape(src, p)
}

/// JSON's `\uXXXX`, or a surrogate pair of them.
pub(super) fn json_unicode_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let first = hex_at(src, p + 2, 4)?;
    if (0xD800..=0xDBFF).contains(&first) {
        // A high surrogate means nothing without its low half; a lone one
        // stays literal (no secret, being a `&str`, can contain one).
        if src.get(p + 6..p + 8) != Some(b"\\u") {
            return None;
        }
        let second = hex_at(src, p + 8, 4)?;
        if !(0xDC00..=0xDFFF).contains(&second) {
            return None;
        }
        let cp = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return Some((12, Decoded::Char(char::from_u32(cp)?)));
    }
    // A lone low surrogate is not a char either: `from_u32` refuses it.
    Some((6, Decoded::Char(char::from_u32(first)?)))
}

/// `%XX`, either case.
pub(super) fn percent_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let b = hex_at(src, p + 1, 2)?;
    Some((3, Decoded::Byte(u8::try_from(b).ok()?)))
}

/// Longer than any name in the table: a bounded lookahead per `&`.
const MAX_REF_NAME: usize = 32;

/// An HTML / XML character reference at `p` (an ampersand).
pub(super) fn char_ref(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    if src.get(p + 1) == Some(&b'#') {
        return numeric_ref(src, p);
    }
    let start = p + 1;
    let mut end = start;
    while end < start + MAX_REF_NAME && src.get(end).is_some_and(u8::is_ascii_alphanumeric) {
        end += 1;
    }
    let name = src.get(start..end)?;
    if name.is_empty() {
        return None;
    }
    if src.get(end) == Some(&b';')
        && let Some(c) = named_char(name)
    {
        return Some((end + 1 - p, Decoded::Char(c)));
    }
    // HTML still decodes these few without their `;`, even when letters
    // follow (`&ampx` is `&x`), because old pages relied on it.
    const LEGACY: [(&[u8], char); 9] = [
        (b"amp", '&'),
        (b"AMP", '&'),
        (b"lt", '<'),
        (b"LT", '<'),
        (b"gt", '>'),
        (b"GT", '>'),
        (b"quot", '"'),
        (b"QUOT", '"'),
        (b"nbsp", '\u{a0}'),
    ];
    LEGACY
        .iter()
        .find(|(legacy, _)| name.starts_with(legacy))
        .map(|(legacy, c)| (1 + legacy.len(), Decoded::Char(*c)))
}

/// `&#DDD;` or `&#xHHH;` (either case of `x` and the digits); the `;` may be
/// missing, as HTML tolerates.
fn numeric_ref(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let (radix, digits_at) = match src.get(p + 2) {
        Some(b'x' | b'X') => (16, p + 3),
        _ => (10, p + 2),
    };
    let mut k = digits_at;
    let mut cp = 0u32;
    // Leading zeros are legal, so the digits are unbounded; saturating keeps
    // a huge number a non-char instead of wrapping into a real one.
    while let Some(d) = src.get(k).and_then(|&b| char::from(b).to_digit(radix)) {
        cp = cp.saturating_mul(radix).saturating_add(d);
        k += 1;
    }
    if k == digits_at {
        return None;
    }
    if src.get(k) == Some(&b';') {
        k += 1;
    }
    Some((k - p, Decoded::Char(char::from_u32(cp)?)))
}

/// The HTML5 names of printable ASCII punctuation (the list of ASCII punctuation, with
/// `&tilde;` as `~`), tab, newline, and the Latin-1 names of HTML 4.
fn named_char(name: &[u8]) -> Option<char> {
    Some(match name {
        b"excl" => '!',
        b"quot" | b"QUOT" => '"',
        b"num" => '#',
        b"dollar" => '$',
        b"percnt" => '%',
        b"amp" | b"AMP" => '&',
        b"apos" => '\'',
        b"lpar" => '(',
        b"rpar" => ')',
        b"ast" | b"midast" => '*',
        b"plus" => '+',
        b"comma" => ',',
        b"hyphen" => '-',
        b"period" => '.',
        b"sol" => '/',
        b"colon" => ':',
        b"semi" => ';',
        b"lt" | b"LT" => '<',
        b"equals" => '=',
        b"gt" | b"GT" => '>',
        b"quest" => '?',
        b"commat" => '@',
        b"lsqb" | b"lbrack" => '[',
        b"bsol" => '\\',
        b"rsqb" | b"rbrack" => ']',
        b"Hat" => '^',
        b"lowbar" | b"UnderBar" => '_',
        b"grave" | b"DiacriticalGrave" => '`',
        b"lcub" | b"lbrace" => '{',
        b"verbar" | b"vert" | b"VerticalLine" => '|',
        b"rcub" | b"rbrace" => '}',
        b"tilde" => '~',
        b"Tab" => '\t',
        b"NewLine" => '\n',
        _ => {
            let at = LATIN1.iter().position(|n| n.as_bytes() == name)?;
            char::from_u32(0xA0 + u32::try_from(at).ok()?)?
        }
    })
}

/// U+00A0 to U+00FF, in order.
const LATIN1: [&str; 96] = [
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro",
    "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
    "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute",
    "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute",
    "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute",
    "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
    "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde",
    "ograve", "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc",
    "uuml", "yacute", "thorn", "yuml",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_decimal_and_hex_references_decode() {
        assert_eq!(decode_char_refs("a &lt;b&gt; &amp; c"), "a <b> & c");
        assert_eq!(decode_char_refs("it&#39;s"), "it's");
        assert_eq!(decode_char_refs("a&#x2B;b&#X2b;c&#43;d"), "a+b+c+d");
        assert_eq!(decode_char_refs("x&nbsp;y"), "x\u{a0}y");
        assert_eq!(decode_char_refs("&quot;&apos;&sol;&plus;"), "\"'/+");
        assert_eq!(decode_char_refs("&eacute;t&eacute;"), "été");
    }

    #[test]
    fn what_is_not_a_complete_reference_stays() {
        for text in [
            "&#65",
            "&#65 and more",
            "&amp",
            "&ampx;",
            "a & b",
            "&&;",
            "&;",
            "&#;",
            "&#x;",
            "&nosuchname;",
            "&#xD800;",
            "&#99999999999999999999;",
            "trailing &",
        ] {
            assert_eq!(decode_char_refs(text), text);
        }
        assert_eq!(decode_char_refs("&#65&#66;"), "&#65B");
    }

    #[test]
    fn one_layer_is_decoded() {
        assert_eq!(decode_char_refs("&amp;lt;"), "&lt;");
        assert_eq!(decode_char_refs("&amp;#39;"), "&#39;");
    }

    #[test]
    fn text_around_the_references_is_kept_whole() {
        assert_eq!(decode_char_refs(""), "");
        assert_eq!(decode_char_refs("日本語 no refs"), "日本語 no refs");
        assert_eq!(
            decode_char_refs("日本&lt;語&#x1F980;é&amp"),
            "日本<語🦀é&amp"
        );
        assert_eq!(decode_char_refs("é&é;&#233;"), "é&é;é");
    }

    #[test]
    fn the_escape_decoders_report_length_and_value() {
        let char_of = |decoded: Option<(usize, Decoded)>| match decoded {
            Some((len, Decoded::Char(c))) => Some((len, c)),
            _ => None,
        };
        assert_eq!(char_of(json_escape(br"\u002B", 0)), Some((6, '+')));
        assert_eq!(char_of(json_escape(br"\ud83e\udd80", 0)), Some((12, '🦀')));
        assert_eq!(char_of(json_escape(br"\u{1F980}", 0)), Some((9, '🦀')));
        assert_eq!(char_of(char_ref(b"&#x2B", 0)), Some((5, '+')));
        assert_eq!(char_of(char_ref(b"&ampx", 0)), Some((4, '&')));
        assert!(matches!(
            percent_escape(b"%2f", 0),
            Some((3, Decoded::Byte(b'/')))
        ));
        assert!(percent_escape(b"%2", 0).is_none());
        assert!(json_escape(br"\ud83e", 0).is_none());
    }

    #[test]
    fn a_lenient_json_reader_drops_the_backslash_of_an_unknown_escape() {
        let byte_of = |decoded: Option<(usize, Decoded)>| match decoded {
            Some((len, Decoded::Byte(b))) => Some((len, char::from(b))),
            _ => None,
        };
        let char_of = |decoded: Option<(usize, Decoded)>| match decoded {
            Some((len, Decoded::Char(c))) => Some((len, c)),
            _ => None,
        };
        // Read both ways: JavaScript's code point, and a strict JSON
        // reader's `x`.
        assert_eq!(char_of(json_escape(br"\x41", 0)), Some((4, 'A')));
        assert_eq!(byte_of(lenient_escape(br"\x41", 0)), Some((2, 'x')));
        for (text, kept) in [
            (br"\w", 'w'),
            (br"\q", 'q'),
            (br"\v", 'v'),
            (br"\'", '\''),
            (br"\0", '0'),
            (br"\%", '%'),
            (br"\/", '/'),
            (br"\\", '\\'),
            (br#"\""#, '"'),
        ] {
            assert_eq!(byte_of(lenient_escape(text, 0)), Some((2, kept)));
        }
        assert_eq!(byte_of(lenient_escape(br"\n", 0)), Some((2, '\n')));
        assert_eq!(char_of(lenient_escape(br"\u002B", 0)), Some((6, '+')));
        assert_eq!(byte_of(lenient_escape(br"\u{2B}", 0)), Some((2, 'u')));
        assert!(lenient_escape(br"\", 0).is_none());
    }
}
