//! The escape decoders: the escape that starts at a trigger byte (`\`, `%`,
//! `&`), as its length in the source and what it decodes to, or `None` when
//! the trigger starts no escape and stays literal.

use crate::text::syntax::{Form, Lexed, lex};
use memchr::memchr;

/// What one escape decodes to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Decoded {
    Byte(u8),
    Char(char),
}

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

/// A JSON or JavaScript escape at `p` (a backslash): its length and value.
pub(super) fn json_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let lexed = lex(src, p)?;
    let byte = |b| Some((2, Decoded::Byte(b)));
    match lexed.form {
        Form::Pair(c @ (b'/' | b'"' | b'\\' | b'\'')) => byte(c),
        Form::Pair(b'n') => byte(b'\n'),
        Form::Pair(b't') => byte(b'\t'),
        Form::Pair(b'r') => byte(b'\r'),
        Form::Pair(b'b') => byte(0x08),
        Form::Pair(b'f') => byte(0x0C),
        Form::Pair(b'v') => byte(0x0B),
        // JavaScript's `\xHH` is a code point below 256, not a byte.
        Form::Latin(cp) | Form::Braced(cp) => Some((lexed.len, Decoded::Char(char::from_u32(cp)?))),
        Form::Unit(unit) => utf16(src, p, unit),
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
    let lexed = lex(src, p)?;
    let byte = |b| Some((2, Decoded::Byte(b)));
    match lexed.form {
        Form::Pair(b'n') => byte(b'\n'),
        Form::Pair(b't') => byte(b'\t'),
        Form::Pair(b'r') => byte(b'\r'),
        Form::Pair(b'b') => byte(0x08),
        Form::Pair(b'f') => byte(0x0C),
        Form::Pair(c) => byte(c),
        Form::Latin(_) => byte(b'x'),
        Form::Braced(_) => byte(b'u'),
        Form::Unit(unit) => utf16(src, p, unit).or(byte(b'u')),
        _ => None,
    }
}

/// JSON's `\uXXXX`, or a surrogate pair of them.
pub(super) fn json_unicode_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    match lex(src, p)?.form {
        Form::Unit(unit) => utf16(src, p, unit),
        _ => None,
    }
}

/// The `\uXXXX` at `p`, whose unit is `first`: its char, or with the
/// `\uXXXX` after it, the char of the surrogate pair.
fn utf16(src: &[u8], p: usize, first: u32) -> Option<(usize, Decoded)> {
    if (0xD800..=0xDBFF).contains(&first) {
        // A high surrogate means nothing without its low half; a lone one
        // stays literal (no secret, being a `&str`, can contain one).
        let Some(Lexed {
            form: Form::Unit(second),
            ..
        }) = lex(src, p + 6)
        else {
            return None;
        };
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
    match lex(src, p)?.form {
        Form::Percent(b) => Some((3, Decoded::Byte(b))),
        _ => None,
    }
}

/// An HTML / XML character reference at `p` (an ampersand): `&#DDD;` or
/// `&#xHHH;` (either case of `x` and the digits, the `;` optional, as HTML
/// tolerates), or a name the table knows, with its `;`; or, without one,
/// one of the few names HTML still reads so.
pub(super) fn char_ref(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let lexed = lex(src, p)?;
    let (len, semicolon) = match lexed.form {
        Form::Number(cp) => return Some((lexed.len, Decoded::Char(char::from_u32(cp)?))),
        Form::Name { len, semicolon } => (len, semicolon),
        _ => return None,
    };
    let name = src.get(p + 1..p + 1 + len)?;
    if semicolon && let Some(c) = named_char(name) {
        return Some((len + 2, Decoded::Char(c)));
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
