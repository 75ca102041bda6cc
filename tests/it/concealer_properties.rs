//! Properties of the concealer over random tokens, random text and random
//! encodings chosen character by character; and over random tokens broken
//! across lines (base64 wrapped at random widths, tokens hard-wrapped at
//! random places), held to a slow reference that joins lines, decodes and
//! searches plainly.

use base64::Engine as _;
use base64::engine::general_purpose::{
    GeneralPurpose, STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
};
use meterwire::{Concealer, REDACTED};
use proptest::prelude::*;

use crate::support::forms::{BREAKS, concealed, json, unicode_escape, wrap};

/// How the whole text, token included, was written.
#[derive(Clone, Copy, Debug)]
enum Encoding {
    Raw,
    Json,
    Percent,
    Html,
    /// Each character in any of the three families, or as itself.
    Mixed,
}

fn encoding() -> impl Strategy<Value = Encoding> {
    prop_oneof![
        Just(Encoding::Raw),
        Just(Encoding::Json),
        Just(Encoding::Percent),
        Just(Encoding::Html),
        Just(Encoding::Mixed),
    ]
}

/// A token of visible ASCII, as bearer tokens are, three times in four;
/// else one from `rare`.
fn token_or(rare: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![3 => "[!-~]{4,24}", 1 => rare]
}

/// Sometimes from a small alphabet full of escape triggers, so that tokens
/// collide with escapes.
fn token() -> impl Strategy<Value = String> {
    token_or("[a-f0-9%&#;x\\\\u/]{4,10}")
}

/// Sometimes digits only, whose base64 is all letters and digits.
fn wrappable_token() -> impl Strategy<Value = String> {
    token_or("[0-9]{4,16}")
}

/// Text that shares no character with any token: the expected output is then
/// known exactly.
fn foreign_text() -> impl Strategy<Value = String> {
    "[ \t\né日😀ßΩ\u{a0}]{0,8}"
}

/// [`foreign_text`] without line breaks, which would join it to a broken
/// token.
fn foreign_line() -> impl Strategy<Value = String> {
    "[ \té日😀ßΩ\u{a0}]{0,8}"
}

/// Any text at all, ASCII-heavy half the time (from `ascii`) so it can
/// collide with tokens.
fn any_text_or(ascii: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), ascii]
}

fn any_text() -> impl Strategy<Value = String> {
    any_text_or("[!-~ é日😀]{0,16}")
}

/// With line breaks.
fn any_lines() -> impl Strategy<Value = String> {
    any_text_or("[ -~\n\r é日😀]{0,24}")
}

/// A per-character source of choices, cycled.
struct Choices<'a>(&'a [u8], usize);

impl Choices<'_> {
    fn next(&mut self) -> u8 {
        let choice = self
            .0
            .get(self.1 % self.0.len().max(1))
            .copied()
            .unwrap_or(0);
        self.1 += 1;
        choice
    }
}

/// One encoded character; `open` marks a numeric reference whose `;` may be
/// dropped if what follows cannot extend its digits.
struct Piece {
    text: String,
    open: bool,
}

fn piece(text: String) -> Piece {
    Piece { text, open: false }
}

/// What a JSON encoder may write for `c`: `"`, `\` and control characters
/// are always escaped, anything else may be.
fn json_piece(c: char, choice: u8, literal_ok: bool) -> Piece {
    let short = match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '/' => Some("\\/"),
        '\n' => Some("\\n"),
        '\t' => Some("\\t"),
        '\r' => Some("\\r"),
        '\u{8}' => Some("\\b"),
        '\u{c}' => Some("\\f"),
        _ => None,
    };
    let must = !literal_ok || matches!(c, '"' | '\\') || c.is_control();
    piece(match (choice % 4, short) {
        (0, _) if !must => c.to_string(),
        (1, Some(short)) => short.to_owned(),
        (2, _) => unicode_escape(c, true),
        _ => unicode_escape(c, false),
    })
}

/// `%` is always encoded; anything else may be, byte by byte, in either case.
fn percent_piece(c: char, choice: u8, literal_ok: bool) -> Piece {
    if literal_ok && choice.is_multiple_of(3) && c != '%' {
        return piece(c.to_string());
    }
    let mut buf = [0u8; 4];
    piece(
        c.encode_utf8(&mut buf)
            .bytes()
            .enumerate()
            .map(|(i, b)| {
                if (choice >> i) & 1 == 0 {
                    format!("%{b:02X}")
                } else {
                    format!("%{b:02x}")
                }
            })
            .collect(),
    )
}

fn named(c: char) -> Option<&'static str> {
    Some(match c {
        '&' => "amp",
        '<' => "lt",
        '>' => "gt",
        '"' => "quot",
        '\'' => "apos",
        '/' => "sol",
        '+' => "plus",
        '=' => "equals",
        ':' => "colon",
        ';' => "semi",
        '.' => "period",
        ',' => "comma",
        '_' => "lowbar",
        '-' => "hyphen",
        '#' => "num",
        '!' => "excl",
        '?' => "quest",
        '%' => "percnt",
        '$' => "dollar",
        '(' => "lpar",
        ')' => "rpar",
        '*' => "ast",
        '@' => "commat",
        '[' => "lsqb",
        ']' => "rsqb",
        '{' => "lcub",
        '}' => "rcub",
        '|' => "verbar",
        '^' => "Hat",
        '`' => "grave",
        '~' => "tilde",
        '\\' => "bsol",
        '\u{a0}' => "nbsp",
        'é' => "eacute",
        'ß' => "szlig",
        _ => return None,
    })
}

/// `&` is always encoded; anything else may be, by number (either base,
/// either case) or by name.
fn html_piece(c: char, choice: u8, literal_ok: bool) -> Piece {
    let n = u32::from(c);
    let open = choice & 0x80 != 0;
    match choice % 5 {
        0 if literal_ok && c != '&' => piece(c.to_string()),
        1 => Piece {
            text: format!("&#{n}"),
            open,
        },
        2 => Piece {
            text: format!("&#x{n:x}"),
            open,
        },
        3 => Piece {
            text: format!("&#X{n:X}"),
            open,
        },
        _ => match named(c) {
            Some(name) => piece(format!("&{name};")),
            None => piece(format!("&#{n}")),
        },
    }
}

/// Trigger characters never stay literal: a real encoder of any family
/// escapes them, and a literal one would start an escape of its own.
fn mixed_piece(c: char, choice: u8) -> Piece {
    let literal_ok = !matches!(c, '\\' | '%' | '&');
    match (choice >> 4) % 4 {
        0 if literal_ok => piece(c.to_string()),
        1 => json_piece(c, choice, false),
        2 => percent_piece(c, choice, false),
        _ => html_piece(c, choice, false),
    }
}

fn encode_char(c: char, encoding: Encoding, choice: u8) -> Piece {
    match encoding {
        Encoding::Raw => piece(c.to_string()),
        Encoding::Json => json_piece(c, choice, true),
        Encoding::Percent => percent_piece(c, choice, true),
        Encoding::Html => html_piece(c, choice, true),
        Encoding::Mixed => mixed_piece(c, choice),
    }
}

/// `before`, the token and `after`, encoded as one text: the three parts.
fn encode(
    before: &str,
    token: &str,
    after: &str,
    encoding: Encoding,
    choices: &[u8],
) -> (String, String, String) {
    let mut choices = Choices(choices, 0);
    let mut pieces: Vec<Piece> = Vec::new();
    let mut bounds = [0; 2];
    for (part, text) in [before, token, after].into_iter().enumerate() {
        if part > 0 {
            bounds[part - 1] = pieces.len();
        }
        for c in text.chars() {
            pieces.push(encode_char(c, encoding, choices.next()));
        }
    }
    // Close every numeric reference that the next character could extend.
    let starts: Vec<Option<char>> = pieces.iter().map(|p| p.text.chars().next()).collect();
    for (i, p) in pieces.iter_mut().enumerate() {
        let next = starts.get(i + 1).copied().flatten();
        let extends = next.is_some_and(|c| c.is_ascii_alphanumeric() || c == ';');
        if p.text.starts_with("&#") && (!p.open || extends) {
            p.text.push(';');
        }
    }
    let join = |range: std::ops::Range<usize>| -> String {
        pieces[range].iter().map(|p| p.text.as_str()).collect()
    };
    (
        join(0..bounds[0]),
        join(bounds[0]..bounds[1]),
        join(bounds[1]..pieces.len()),
    )
}

/// A lenient JSON string decoder, independent of the crate's: escapes it
/// does not know stay literal.
fn json_decode(text: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let hex4 = |at: usize| -> Option<u32> {
        let digits: String = chars.get(at..at + 4)?.iter().collect();
        u32::from_str_radix(&digits, 16).ok()
    };
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        let simple = match (c, next) {
            ('\\', Some('"')) => Some('"'),
            ('\\', Some('\\')) => Some('\\'),
            ('\\', Some('/')) => Some('/'),
            ('\\', Some('n')) => Some('\n'),
            ('\\', Some('t')) => Some('\t'),
            ('\\', Some('r')) => Some('\r'),
            ('\\', Some('b')) => Some('\u{8}'),
            ('\\', Some('f')) => Some('\u{c}'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            i += 2;
            continue;
        }
        let escaped = |at: usize| (c == '\\' && next == Some('u')).then(|| hex4(at)).flatten();
        if let Some(hi) = escaped(i + 2) {
            let lo = (chars.get(i + 6..i + 8) == Some(&['\\', 'u'][..]))
                .then(|| hex4(i + 8))
                .flatten();
            let pair = match lo {
                Some(lo) if (0xD800..0xDC00).contains(&hi) && (0xDC00..0xE000).contains(&lo) => {
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                }
                _ => None,
            };
            if let Some(c) = pair {
                out.push(c);
                i += 12;
                continue;
            }
            if let Some(c) = char::from_u32(hi) {
                out.push(c);
                i += 6;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A lenient percent decoder: bytes, since the result need not be UTF-8.
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(v)) if bytes[i + 1].is_ascii_hexdigit() => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// A lenient decoder for the references `html_piece` writes.
fn html_decode(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let body = &rest[1..];
        let (radix, digits) = if let Some(d) = body.strip_prefix("#x").or(body.strip_prefix("#X")) {
            (16, d)
        } else if let Some(d) = body.strip_prefix('#') {
            (10, d)
        } else {
            (0, body)
        };
        if radix > 0 {
            let len = digits.chars().take_while(|c| c.is_digit(radix)).count();
            if let Ok(n) = u32::from_str_radix(&digits[..len], radix)
                && let Some(c) = char::from_u32(n)
                && len > 0
            {
                out.push(c);
                let used = rest.len() - digits.len() + len;
                rest = &rest[used..];
                rest = rest.strip_prefix(';').unwrap_or(rest);
                continue;
            }
        } else if let Some(end) = body.find(';')
            && let Some(c) = (0..=0x10FFFFu32)
                .filter_map(char::from_u32)
                .find(|&c| named(c) == Some(&body[..end]))
        {
            out.push(c);
            rest = &body[end + 1..];
            continue;
        }
        out.push('&');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out
}

/// A marker can join no two halves of a token.
fn without_markers(text: &str) -> String {
    text.replace(REDACTED, "\u{1}")
}

fn contains_bytes(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Base64 of `prefix` + token + `suffix`, in one of the four variants.
fn base64_of(prefix: &[u8], token: &str, suffix: &[u8], variant: u8) -> String {
    let mut data = prefix.to_vec();
    data.extend_from_slice(token.as_bytes());
    data.extend_from_slice(suffix);
    match variant % 4 {
        0 => STANDARD.encode(data),
        1 => STANDARD_NO_PAD.encode(data),
        2 => URL_SAFE.encode(data),
        _ => URL_SAFE_NO_PAD.encode(data),
    }
}

/// Whether `taken`, the end of the text before the token that the marker
/// took with it, is one escape's opening with the digits it has so far
/// (`&#26085`, `&#x`, `\u26`, `%`): what the token's first characters would
/// go on with as digits of that escape, which a marker never completes.
fn an_opening(taken: &str) -> bool {
    let digits = |rest: &str, hex: bool, most: usize| {
        rest.len() <= most
            && rest.chars().all(|c| {
                if hex {
                    c.is_ascii_hexdigit()
                } else {
                    c.is_ascii_digit()
                }
            })
    };
    if let Some(rest) = taken
        .strip_prefix("&#x")
        .or_else(|| taken.strip_prefix("&#X"))
    {
        return digits(rest, true, usize::MAX);
    }
    if let Some(rest) = taken.strip_prefix("&#") {
        return digits(rest, false, usize::MAX);
    }
    if let Some(rest) = taken.strip_prefix("\\u") {
        return digits(rest, true, 3);
    }
    if let Some(rest) = taken.strip_prefix("\\x") {
        return digits(rest, true, 1);
    }
    taken
        .strip_prefix('%')
        .is_some_and(|rest| digits(rest, true, 1))
}

/// The output is the text around the token with one marker between; the
/// marker may also take the opening of an escape just before it whose
/// digits the token's first characters go on with (`&#26085` before a
/// `0`); when the token holds a trigger byte, it may also take a piece of
/// an escape next to it, which a second-layer view read as continuing the
/// token's last escape (over-concealing, never leaking).
fn assert_one_marker(
    token: &str,
    before: &str,
    after: &str,
    output: &str,
) -> Result<(), TestCaseError> {
    if !token.contains(['\\', '%', '&']) {
        prop_assert_eq!(output.matches(REDACTED).count(), 1, "{}", output);
        let (left, right) = output.split_once(REDACTED).unwrap_or_default();
        prop_assert_eq!(right, after);
        let taken = before.strip_prefix(left);
        prop_assert!(
            taken.is_some_and(|taken| taken.is_empty() || an_opening(taken)),
            "{:?} is not {:?}, nor it less an escape's opening",
            left,
            before
        );
        return Ok(());
    }
    prop_assert_eq!(output.matches(REDACTED).count(), 1, "{}", output);
    let (left, right) = output.split_once(REDACTED).unwrap_or_default();
    prop_assert!(
        before.starts_with(left),
        "{:?} is not the start of {:?}",
        left,
        before
    );
    prop_assert!(
        after.ends_with(right),
        "{:?} is not the end of {:?}",
        right,
        after
    );
    Ok(())
}

proptest! {
    #[test]
    fn an_encoded_token_in_foreign_text_is_exactly_one_marker(
        token in token(),
        before in foreign_text(),
        after in foreign_text(),
        encoding in encoding(),
        choices in prop::collection::vec(any::<u8>(), 1..48),
    ) {
        let (before, encoded, after) = encode(&before, &token, &after, encoding, &choices);
        let input = format!("{before}{encoded}{after}");
        let output = Concealer::new([token.as_str()]).conceal(&input).into_owned();
        prop_assert!(!output.contains(&token));
        prop_assert!(!output.contains(&encoded));
        assert_one_marker(&token, &before, &after, &output)?;
    }

    #[test]
    fn a_token_encoded_twice_in_foreign_text_is_exactly_one_marker(
        token in token(),
        before in foreign_text(),
        after in foreign_text(),
        inner in encoding(),
        outer in encoding(),
        inner_choices in prop::collection::vec(any::<u8>(), 1..48),
        outer_choices in prop::collection::vec(any::<u8>(), 1..48),
    ) {
        let (before, encoded, after) = encode(&before, &token, &after, inner, &inner_choices);
        let (before, encoded, after) = encode(&before, &encoded, &after, outer, &outer_choices);
        let input = format!("{before}{encoded}{after}");
        let output = Concealer::new([token.as_str()]).conceal(&input).into_owned();
        prop_assert!(!output.contains(&token));
        prop_assert!(!output.contains(&encoded));
        assert_one_marker(&token, &before, &after, &output)?;
    }

    #[test]
    fn base64_of_a_token_at_any_alignment_is_concealed_from_its_first_to_its_last_character(
        token in token(),
        before in foreign_text(),
        after in foreign_text(),
        prefix in prop::collection::vec(any::<u8>(), 0..8),
        suffix in prop::collection::vec(any::<u8>(), 0..8),
        variant in any::<u8>(),
    ) {
        let encoded = base64_of(&prefix, &token, &suffix, variant);
        let input = format!("{before} {encoded} {after}");
        let output = Concealer::new([token.as_str()]).conceal(&input).into_owned();
        prop_assert!(!output.contains(&token));
        prop_assert!(!output.contains(&encoded));
        let echo = concealed(&encoded, &token);
        prop_assert_eq!(output, format!("{before} {echo} {after}"));
    }

    #[test]
    fn base64_of_a_token_in_any_text_does_not_survive(
        token in token(),
        before in any_text(),
        after in any_text(),
        prefix in prop::collection::vec(any::<u8>(), 0..8),
        variant in any::<u8>(),
    ) {
        let encoded = base64_of(&prefix, &token, b"", variant);
        let input = format!("{before} {encoded} {after}");
        let output = Concealer::new([token.as_str()]).conceal(&input).into_owned();
        prop_assert!(!output.contains(&token));
        prop_assert!(!output.contains(&encoded));
    }

    #[test]
    fn no_decoding_of_the_output_shows_the_token(
        token in token(),
        before in any_text(),
        after in any_text(),
        encoding in encoding(),
        choices in prop::collection::vec(any::<u8>(), 1..48),
    ) {
        let (before, encoded, after) = encode(&before, &token, &after, encoding, &choices);
        let input = format!("{before}{encoded}{after}");
        let output = Concealer::new([token.as_str()]).conceal(&input).into_owned();
        prop_assert!(!output.contains(&token));
        prop_assert!(!output.contains(&encoded));
        let output = without_markers(&output);
        match encoding {
            Encoding::Json => prop_assert!(!json_decode(&output).contains(&token)),
            Encoding::Percent => prop_assert!(
                !contains_bytes(&percent_decode(&output), token.as_bytes())
            ),
            Encoding::Html => prop_assert!(!html_decode(&output).contains(&token)),
            Encoding::Raw | Encoding::Mixed => {}
        }
    }

    #[test]
    fn conceal_and_scrub_never_panic_and_leave_whole_markers(
        tokens in prop::collection::vec(any::<String>(), 0..3),
        text in "[^\\[]{0,64}",
        at in any::<prop::sample::Index>(),
    ) {
        let concealer = Concealer::new(tokens.iter().map(String::as_str));
        // Put a token in, on a char boundary, so there is something to find.
        let cut = text.char_indices().map(|(i, _)| i).nth(at.index(text.chars().count() + 1)).unwrap_or(text.len());
        let token = tokens.first().map(String::as_str).unwrap_or_default();
        let input = format!("{}{token}{}", &text[..cut], &text[cut..]);
        let markers_only = !input.contains('[');
        for output in [concealer.conceal(&input).into_owned(), concealer.scrub(&input)] {
            if markers_only {
                prop_assert_eq!(output.matches('[').count(), output.matches(REDACTED).count());
            }
            if token.chars().count() >= 4 && !token.contains(REDACTED) {
                prop_assert!(!output.contains(token), "{:?} in {:?}", token, output);
            }
        }
    }

    #[test]
    fn foreign_text_comes_back_borrowed(
        token in token(),
        text in foreign_text(),
    ) {
        let concealer = Concealer::new([token.as_str()]);
        prop_assert!(matches!(concealer.conceal(&text), std::borrow::Cow::Borrowed(_)));
    }
}

fn engine() -> impl Strategy<Value = GeneralPurpose> {
    prop_oneof![
        Just(STANDARD),
        Just(STANDARD_NO_PAD),
        Just(URL_SAFE),
        Just(URL_SAFE_NO_PAD)
    ]
}

/// What precedes the token inside the encoded data.
fn prefix() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("Bearer ".to_owned()),
        Just("user:".to_owned()),
        "[ -~]{0,3}",
    ]
}

/// The output with every marker taken out holds no trace of the token.
fn free_of(output: &str, token: &str) -> bool {
    !output.replace(REDACTED, "\u{0}").contains(token)
}

/// The slow reference: whether a plain reader finds the token in `text`,
/// with every line break (raw, or JSON-escaped) removed, as itself, as a
/// JSON string body decoded, or in the base64 of any base64 run at any of
/// the four offsets.
fn reference_finds(text: &str, token: &str) -> bool {
    let joined = text
        .replace("\r\n", "")
        .replace(['\n', '\r'], "")
        .replace(r"\r\n", "")
        .replace(r"\n", "")
        .replace(r"\r", "");
    let mut readings = vec![joined.clone()];
    if let Ok(decoded) = serde_json::from_str::<String>(&format!("\"{joined}\"")) {
        readings.push(decoded);
    }
    readings.iter().any(|reading| {
        reading.contains(token)
            || base64_runs(reading).any(|run| {
                (0..4).any(|skip| {
                    let run = run.get(skip..).unwrap_or_default();
                    let run = &run[..run.len() - run.len() % 4];
                    [STANDARD_NO_PAD, URL_SAFE_NO_PAD].iter().any(|engine| {
                        engine.decode(run).is_ok_and(|bytes| {
                            bytes.windows(token.len()).any(|w| w == token.as_bytes())
                        })
                    })
                })
            })
    })
}

fn base64_runs(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "+/-_".contains(c)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn wrapped_base64_is_concealed_from_its_first_to_its_last_character(
        token in wrappable_token(),
        prefix in prefix(),
        engine in engine(),
        width in 1usize..=100,
        line_break in prop::sample::select(&BREAKS[..]),
        before in foreign_line(),
        after in foreign_line(),
    ) {
        let concealer = Concealer::new([token.as_str()]);
        let wrapped = wrap(&engine.encode(format!("{prefix}{token}")), width, line_break);
        let text = format!("{before} {wrapped} {after}");
        let output = concealer.conceal(&text);
        let echo = concealed(&wrapped, &token);
        prop_assert_eq!(output, format!("{before} {echo} {after}"));
    }

    #[test]
    fn a_token_hard_wrapped_anywhere_is_concealed_whole(
        token in wrappable_token(),
        at in any::<prop::sample::Index>(),
        line_break in prop::sample::select(&BREAKS[..]),
        escaped in any::<bool>(),
        before in foreign_line(),
        after in foreign_line(),
    ) {
        let concealer = Concealer::new([token.as_str()]);
        let at = 1 + at.index(token.len() - 1);
        let (head, tail) = token.split_at(at);
        // A JSON-escaped break stands in JSON text, where the token is
        // JSON-escaped too.
        let escaped = escaped || line_break.starts_with('\\');
        let (head, tail) = if escaped { (json(head), json(tail)) } else { (head.to_owned(), tail.to_owned()) };
        let text = format!("{before}{head}{line_break}{tail}{after}");
        let output = concealer.conceal(&text);
        prop_assert_eq!(output, format!("{before}{REDACTED}{after}"));
    }

    #[test]
    fn broken_forms_in_random_text_leave_no_trace(
        token in wrappable_token(),
        prefix in prefix(),
        engine in engine(),
        width in 1usize..=100,
        at in any::<prop::sample::Index>(),
        line_break in prop::sample::select(&BREAKS[..]),
        base64 in any::<bool>(),
        before in any_lines(),
        after in any_lines(),
    ) {
        let concealer = Concealer::new([token.as_str()]);
        let form = if base64 {
            wrap(&engine.encode(format!("{prefix}{token}")), width, line_break)
        } else {
            let (head, tail) = token.split_at(1 + at.index(token.len() - 1));
            if line_break.starts_with('\\') {
                format!("{}{line_break}{}", json(head), json(tail))
            } else {
                format!("{head}{line_break}{tail}")
            }
        };
        // A trigger just before the form would read with its first
        // character (`\` and `r\n\"a0` make `\r\n\"a0`, a JSON `\r`):
        // that text holds no form of the token for any reader.
        let before = if before.ends_with(['\\', '%', '&']) {
            format!("{before} ")
        } else {
            before
        };
        let text = format!("{before}{form}{after}");
        let output = concealer.conceal(&text);
        prop_assert!(output != text);
        prop_assert!(output.contains(REDACTED));
        prop_assert!(free_of(&output, &token), "{:?}", output);
        // Nothing the concealer knows is left.
        prop_assert_eq!(concealer.conceal(&output), output.clone());
    }

    #[test]
    fn what_a_plain_reader_finds_is_concealed(
        token in wrappable_token(),
        prefix in prefix(),
        engine in engine(),
        width in 1usize..=100,
        at in any::<prop::sample::Index>(),
        line_break in prop::sample::select(&BREAKS[..]),
        form in 0u8..3,
        before in foreign_line(),
        after in foreign_line(),
    ) {
        let concealer = Concealer::new([token.as_str()]);
        let (head, tail) = token.split_at(1 + at.index(token.len() - 1));
        let form = match form {
            0 => wrap(&engine.encode(format!("{prefix}{token}")), width, line_break),
            1 if !line_break.starts_with('\\') => format!("{head}{line_break}{tail}"),
            _ => format!("{}{line_break}{}", json(head), json(tail)),
        };
        let text = format!("{before}{form}{after}");
        let output = concealer.conceal(&text);
        if reference_finds(&text, &token) {
            prop_assert!(output != text, "{:?}", text);
        }
        prop_assert!(!reference_finds(&output, &token), "{:?} -> {:?}", text, output);
    }
}
