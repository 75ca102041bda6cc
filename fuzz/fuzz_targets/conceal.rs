//! The concealer against a slow reference: after concealing, no way an echo
//! can be read gives the token back.
//!
//! The input's first byte sets the token's length (4 to 32), the next bytes
//! are the token (each mapped to visible ASCII), and the rest is the text.
//! In the text, a `0xFF` byte (never part of UTF-8) and the byte after it
//! stand for the token encoded one of the ways an engine echoes it (see
//! [`encode`]), so the fuzzer reaches encoded echoes without having to
//! guess base64, and a `0xFE` cuts the text into the pieces a stream is
//! given; the remaining bytes are read as UTF-8, lossily. The stream's
//! pieces, joined, must be exactly what concealing the whole text gives.
//!
//! The reference decodes the output as it is; JSON/JavaScript-unescaped,
//! percent-decoded, HTML-reference-decoded, all three at once (the mixtures
//! an engine's echoes mix); each of those composed with each (two layers, as the
//! concealer promises); and every maximal base64 or base64url run of each
//! of those, at each of the four offsets. None may hold the token, nor any
//! base64 the token cut short by up to three bytes at either end with five
//! of them kept. So a marker that left an escape's opening beside it, to be
//! read with fewer digits (`&#56` before the marker reads `8`), is found in
//! the reading that decodes it.

#![no_main]

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use libfuzzer_sys::fuzz_target;
use meterwire::{Concealer, REDACTED};

fuzz_target!(|data: &[u8]| {
    let Some((&len, rest)) = data.split_first() else {
        return;
    };
    let len = 4 + usize::from(len) % 29;
    if rest.len() < len {
        return;
    }
    let (token, rest) = rest.split_at(len);
    let token: String = token
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() {
                char::from(b)
            } else {
                char::from(b'!' + b % 94)
            }
        })
        .collect();
    // A `0xFE` (never part of UTF-8 either) cuts the text into the pieces
    // a stream receives.
    let pieces: Vec<String> = rest
        .split(|&b| b == 0xFE)
        .map(|part| String::from_utf8_lossy(&expand(part, token.as_bytes())).into_owned())
        .collect();
    let text = pieces.concat();

    let concealer = Concealer::new([token.as_str()]);
    let out = concealer.conceal(&text);

    // The text in pieces, through a stream, is concealed exactly as whole,
    // and the stream never holds more than its reach.
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let (streamed, held, reach) = meterwire::fuzzing::conceal_in_pieces(&concealer, &pieces);
    assert_eq!(
        streamed, out,
        "the stream and the whole text differ:\n token {token:?}\n pieces {pieces:?}"
    );
    assert!(held <= reach, "the stream held {held} bytes, past its reach {reach}");

    // Views decoded only in windows find what views of the whole text find.
    let whole = meterwire::fuzzing::conceal_whole(&concealer, &text);
    assert_eq!(
        out, whole,
        "windows and the whole text differ:\n token {token:?}\n text {text:?}"
    );

    if let Some(reading) = holds(&out, token.as_bytes()) {
        panic!(
            "the token is in the output, read as {reading}:\n token {token:?}\n text {text:?}\n out  {out:?}"
        );
    }

    // Concealing again finds nothing more: whatever the first pass left
    // holds no form of the token the concealer knows.
    let again = concealer.conceal(&out);
    if again != out {
        // The marker itself, or the marker and the text beside it, can
        // spell the token or a base64 core of it (a token `acte`, or `d]ab`
        // beside `ab`); that is not the token coming back from the text.
        // And a token ending in an unfinished escape reads whole beside a
        // marker where the text read it with what the marker replaced (see
        // `reading_of`): concealing again then takes that echo too.
        let marker_spells_it = concealer.conceal(REDACTED) != REDACTED
            || reading_of(out.as_bytes(), token.as_bytes(), false, false).is_some()
            || reading_of(out.as_bytes(), token.as_bytes(), true, false).is_some();
        assert!(
            marker_spells_it,
            "concealing again changed the output:\n token {token:?}\n text {text:?}\n out  {out:?}\n again {again:?}"
        );
    }
});

/// The text with each `0xFF op` replaced by the token encoded as `op` says.
fn expand(rest: &[u8], token: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(rest.len() * 2);
    let mut bytes = rest.iter();
    while let Some(&b) = bytes.next() {
        if b == 0xFF {
            match bytes.next() {
                Some(&op) => text.extend(encode(token, op)),
                None => text.extend(token),
            }
        } else {
            text.push(b);
        }
    }
    text
}

/// The token as an engine might echo it: the low three bits of `op` pick
/// the form, the high five vary it (the token as itself, when they are not
/// zero, is hard-wrapped by a break of [`BREAKS`]; base64, when the highest
/// is set, is of the token cut short).
fn encode(token: &[u8], op: u8) -> Vec<u8> {
    let seed = op >> 3;
    match op & 7 {
        0 if seed == 0 || token.len() < 2 => token.to_vec(),
        // Hard-wrapped by one line break, raw or written in any escaping.
        0 => {
            let at = 1 + usize::from(seed) % (token.len() - 1);
            let mut broken = token[..at].to_vec();
            broken.extend_from_slice(BREAKS[usize::from(seed) % BREAKS.len()]);
            broken.extend_from_slice(&token[at..]);
            broken
        }
        // Each character in its own form: a mixture.
        1 => mixed(token, seed),
        // Two layers: a mixture, JSON-quoted again or percent-encoded again.
        2 => mixed(&mixed(token, seed), 0b10101),
        3 => percent_all(&mixed(token, seed)),
        // HTML-escaped again: every `&` as `&amp;`.
        4 => mixed(token, seed)
            .iter()
            .flat_map(|&b| {
                if b == b'&' {
                    b"&amp;".to_vec()
                } else {
                    vec![b]
                }
            })
            .collect(),
        // base64 or base64url of the token behind a prefix, at any
        // alignment, padded or not.
        5 | 6 => {
            let prefixes: [&[u8]; 8] = [
                b"",
                b"Bearer ",
                b"user:",
                b"x",
                b"xy",
                b"{\"k\":\"",
                b"\0",
                b"ab\n",
            ];
            let mut plain = prefixes[usize::from(seed % 8)].to_vec();
            // An echo cut short: up to three bytes less at either end,
            // five kept.
            let cut = if seed & 16 != 0 && token.len() > 5 {
                let front = usize::from(seed % 4).min(token.len() - 5);
                let back = usize::from((seed >> 1) % 4).min(token.len() - 5 - front);
                &token[front..token.len() - back]
            } else {
                token
            };
            plain.extend(cut);
            if seed & 8 != 0 {
                plain.extend(b"\"}");
            }
            let encoded = if op & 7 == 5 {
                STANDARD.encode(&plain)
            } else {
                URL_SAFE_NO_PAD.encode(&plain)
            };
            encoded.into_bytes()
        }
        // The token less its last character, that character's reference
        // cut short of its `;` (the reference's `&` written as itself, or
        // escaped once more), then the token's hex: the hex's digits go on
        // with the reference's.
        7 if seed != 0 && token.len() >= 2 => {
            let (head, last) = token.split_at(token.len() - 1);
            let last = last[0];
            let mut out = head.to_vec();
            let reference = match seed % 4 {
                0 => format!("&#{last}"),
                1 => format!("&#x{last:x}"),
                2 => format!("&amp;#{last}"),
                _ => format!("%26%23{last}"),
            };
            out.extend(reference.bytes());
            let hex: String = token.iter().map(|b| format!("{b:02x}")).collect();
            if seed & 4 != 0 {
                out.extend(hex.to_ascii_uppercase().bytes());
            } else {
                out.extend(hex.bytes());
            }
            out
        }
        // base64 in a percent-encoded query: `+`, `/` and `=` escaped.
        _ => {
            let encoded = STANDARD.encode(token);
            let mut out = Vec::new();
            for b in encoded.bytes() {
                match b {
                    b'+' | b'/' | b'=' => out.extend(format!("%{b:02X}").bytes()),
                    _ => out.push(b),
                }
            }
            out
        }
    }
}

/// One line break, as each escaping writes it, and half raw, half escaped.
const BREAKS: [&[u8]; 12] = [
    b"\n",
    b"\r\n",
    br"\n",
    br"\r\n",
    br"\u000a",
    b"%0D%0A",
    b"&#10;",
    b"&#13;&#10;",
    b"\r\\n",
    b"\\r\n",
    b"%0a",
    br"\u000D\u000A",
];

/// Each byte of `text` escaped one way or another, chosen by a cheap
/// generator from `seed`.
fn mixed(text: &[u8], seed: u8) -> Vec<u8> {
    let mut state = u32::from(seed).wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut out = Vec::new();
    for &b in text {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let form = (state >> 16) % 9;
        let escaped = match form {
            0 => format!("\\u{:04x}", b),
            1 => format!("\\u{:04X}", b),
            2 => format!("%{:02x}", b),
            3 => format!("%{:02X}", b),
            4 => format!("&#{};", b),
            5 => format!("&#x{:x};", b),
            6 => match b {
                b'/' | b'"' | b'\\' => format!("\\{}", char::from(b)),
                b'&' => "&amp;".into(),
                b'<' => "&lt;".into(),
                b'>' => "&gt;".into(),
                b'\'' => "&apos;".into(),
                _ => String::from(char::from(b)),
            },
            _ => String::from(char::from(b)),
        };
        out.extend(escaped.bytes());
    }
    out
}

fn percent_all(text: &[u8]) -> Vec<u8> {
    text.iter()
        .flat_map(|b| {
            if b.is_ascii_alphanumeric() {
                vec![*b]
            } else {
                format!("%{b:02X}").into_bytes()
            }
        })
        .collect()
}

/// How the token can be read in the concealed text, if it can: the name of
/// the reading. Each `[redacted]` is read as a byte no token holds, so that
/// what the marker spells with its neighbours is not taken for the token
/// (the concealer's own words are not an echo).
fn holds(out: &str, token: &[u8]) -> Option<String> {
    reading_of(out.as_bytes(), token, true, true)
}

/// `skip_open_end`: whether to skip what a token ending in an unfinished
/// escape spells beside a marker (see below).
fn reading_of(out: &[u8], token: &[u8], mask_marker: bool, skip_open_end: bool) -> Option<String> {
    let text = if mask_marker { mask(out) } else { out.to_vec() };
    let decoders: [(&str, fn(&[u8]) -> Vec<u8>); 4] = [
        ("json", json),
        ("percent", percent),
        ("html", html),
        ("all three", all_three),
    ];
    let mut readings = vec![("as is".to_owned(), text.clone())];
    for (outer, first) in decoders {
        let once = first(&text);
        for (inner, second) in decoders {
            readings.push((format!("{outer}, then {inner}"), second(&once)));
        }
        readings.push((outer.to_owned(), once));
    }
    let open_end = skip_open_end && ends_in_open_escape(token);
    for (name, reading) in &readings {
        // A token that ends in an unfinished escape (`…%2`, `…\u00`,
        // `…&#6`) is read together with the character after it. Where the
        // token and an echo of it touch, one reads into the other: `%252`
        // then `d` is `%2d` two layers down, `%d` then `bXUh…` is `%db`
        // then `XUh…`, and the echo is not there to be read. When the
        // concealer replaces the one, the marker stands beside the other,
        // and it reads whole: token `d/%2`, text `%26%23x64%3B%5C%2F%252d/%2`,
        // out `%26%23x64%3B%5C%2F%252[redacted]` (percent-decoded, then all
        // three decoded); token `mu!/<p<?>A%d`, text
        // `bXUhLzxwPD8%2BQSVkmu!/<p<?>A%dbXUhLzxwPD8%2BQSVk`, out
        // `[redacted]bXUhLzxwPD8%2BQSVk` (percent-decoded, then base64).
        // The text never held that echo in a form the concealer promises, so for such a
        // token an occurrence, or a base64 run, that touches a marker is
        // skipped; any other occurrence still counts.
        let touches_marker = |start: usize, end: usize| {
            start > 0 && reading[start - 1] == 0 || reading.get(end) == Some(&0)
        };
        let counts = |at: usize| !(open_end && touches_marker(at, at + token.len()));
        if occurrences(reading, token).any(counts) {
            return Some(name.clone());
        }
        for (alphabet, value) in [
            ("base64", b64_std as fn(u8) -> Option<u8>),
            ("base64url", b64_url),
        ] {
            for (start, end) in runs(reading, value) {
                if open_end && touches_marker(start, end) {
                    continue;
                }
                let run = &reading[start..end];
                for offset in 0..4 {
                    let decoded = base64(&run[offset.min(run.len())..], value);
                    if let Some(cut) = cuts(token).find(|cut| contains(&decoded, cut)) {
                        let kept = cut.len();
                        return Some(format!(
                            "{name}, {alphabet} at offset {offset} ({kept} bytes of the token)"
                        ));
                    }
                }
            }
        }
    }
    None
}

fn mask(out: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(out.len());
    let mut at = 0;
    while at < out.len() {
        if out[at..].starts_with(REDACTED.as_bytes()) {
            text.push(0);
            at += REDACTED.len();
        } else {
            text.push(out[at]);
            at += 1;
        }
    }
    text
}

fn occurrences<'a>(hay: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    hay.windows(needle.len())
        .enumerate()
        .filter(move |(_, w)| *w == needle)
        .map(|(at, _)| at)
}

/// Whether the token ends in the start of an escape that more characters
/// would finish: `%`, `%H`, `\`, `\u`…`\uHHH`, `\u{H…`, `\x`, `\xH`, `&`
/// and a name or number after it.
fn ends_in_open_escape(token: &[u8]) -> bool {
    (0..token.len()).any(|at| {
        let tail = &token[at..];
        let hex = |t: &[u8]| t.iter().all(u8::is_ascii_hexdigit);
        match tail {
            [b'%', rest @ ..] => rest.len() <= 1 && hex(rest),
            [b'\\'] => true,
            [b'\\', b'u', b'{', rest @ ..] => hex(rest),
            [b'\\', b'u', rest @ ..] => rest.len() <= 3 && hex(rest),
            [b'\\', b'x', rest @ ..] => rest.len() <= 1 && hex(rest),
            [b'&', b'#', b'x' | b'X', rest @ ..] => hex(rest),
            [b'&', b'#', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
            [b'&', rest @ ..] => rest.iter().all(u8::is_ascii_alphanumeric),
            _ => false,
        }
    })
}

/// The token cut short by up to three bytes at either end, keeping at
/// least five of them (or the token itself, when it is too short to be
/// cut so): what its base64 may not hold.
fn cuts(token: &[u8]) -> impl Iterator<Item = &[u8]> {
    (0..=3)
        .flat_map(move |front| (0..=3).map(move |back| (front, back)))
        .filter_map(move |(front, back)| token.get(front..token.len().checked_sub(back)?))
        .filter(move |cut| cut.len() >= 5 || cut.len() == token.len())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn hex(b: u8) -> Option<u32> {
    char::from(b).to_digit(16)
}

fn hex_n(text: &[u8], n: usize) -> Option<u32> {
    if text.len() < n {
        return None;
    }
    text[..n]
        .iter()
        .try_fold(0u32, |v, &b| Some(v * 16 + hex(b)?))
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend(c.encode_utf8(&mut buf).bytes());
}

/// One JSON / JavaScript escape at the start of `text`: its length and what
/// it reads as.
fn json_one(text: &[u8]) -> Option<(usize, Vec<u8>)> {
    let simple = |b: u8| Some((2, vec![b]));
    match *text.get(1)? {
        b'"' => simple(b'"'),
        b'\\' => simple(b'\\'),
        b'/' => simple(b'/'),
        b'\'' => simple(b'\''),
        b'b' => simple(8),
        b'f' => simple(12),
        b'n' => simple(b'\n'),
        b'r' => simple(b'\r'),
        b't' => simple(b'\t'),
        b'v' => simple(11),
        b'x' => {
            let c = char::from_u32(hex_n(&text[2..], 2)?)?;
            let mut out = Vec::new();
            push_char(&mut out, c);
            Some((4, out))
        }
        b'u' if text.get(2) == Some(&b'{') => {
            let digits = text[3..]
                .iter()
                .take(6)
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
            if digits == 0 || text.get(3 + digits) != Some(&b'}') {
                return None;
            }
            let c = char::from_u32(hex_n(&text[3..], digits)?)?;
            let mut out = Vec::new();
            push_char(&mut out, c);
            Some((4 + digits, out))
        }
        b'u' => {
            let unit = hex_n(&text[2..], 4)?;
            let (len, cp) = if (0xD800..0xDC00).contains(&unit) {
                if text.get(6..8) != Some(b"\\u") {
                    return None;
                }
                let low = hex_n(&text[8..], 4)?;
                if !(0xDC00..0xE000).contains(&low) {
                    return None;
                }
                (12, 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
            } else {
                (6, unit)
            };
            let mut out = Vec::new();
            push_char(&mut out, char::from_u32(cp)?);
            Some((len, out))
        }
        _ => None,
    }
}

fn percent_one(text: &[u8]) -> Option<(usize, Vec<u8>)> {
    Some((3, vec![u8::try_from(hex_n(&text[1..], 2)?).ok()?]))
}

/// One HTML reference at the start of `text`, as HTML reads it: numeric
/// ones with or without their `;`, the named ones the concealer decodes, and the legacy
/// names HTML reads without `;`. Any other `&name;` is some character this
/// reference does not know: it reads as a byte no token holds, rather than
/// as its letters, which no reader would see.
fn html_one(text: &[u8]) -> Option<(usize, Vec<u8>)> {
    if text.get(1) == Some(&b'#') {
        let hex_ref = matches!(text.get(2), Some(b'x' | b'X'));
        let from = if hex_ref { 3 } else { 2 };
        let radix = if hex_ref { 16 } else { 10 };
        let mut k = from;
        let mut cp = 0u32;
        while let Some(d) = text.get(k).and_then(|&b| char::from(b).to_digit(radix)) {
            cp = cp.saturating_mul(radix).saturating_add(d);
            k += 1;
        }
        if k == from {
            return None;
        }
        if text.get(k) == Some(&b';') {
            k += 1;
        }
        let mut out = Vec::new();
        push_char(&mut out, char::from_u32(cp)?);
        return Some((k, out));
    }
    let name_len = text[1..]
        .iter()
        .take(32)
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    let name = &text[1..1 + name_len];
    if name_len > 0 && text.get(1 + name_len) == Some(&b';') {
        let c = match name {
            b"amp" | b"AMP" => b'&',
            b"lt" | b"LT" => b'<',
            b"gt" | b"GT" => b'>',
            b"quot" | b"QUOT" => b'"',
            b"apos" => b'\'',
            _ => 0,
        };
        return Some((name_len + 2, vec![c]));
    }
    for (legacy, c) in [
        ("amp", b'&'),
        ("AMP", b'&'),
        ("lt", b'<'),
        ("LT", b'<'),
        ("gt", b'>'),
        ("GT", b'>'),
        ("quot", b'"'),
        ("QUOT", b'"'),
    ] {
        if name.starts_with(legacy.as_bytes()) {
            return Some((legacy.len() + 1, vec![c]));
        }
    }
    None
}

fn decode_with(text: &[u8], json_on: bool, percent_on: bool, html_on: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let decoded = match rest[0] {
            b'\\' if json_on => json_one(rest),
            b'%' if percent_on => percent_one(rest),
            b'&' if html_on => html_one(rest),
            _ => None,
        };
        match decoded {
            Some((len, bytes)) => {
                out.extend(bytes);
                at += len;
            }
            None => {
                out.push(rest[0]);
                at += 1;
            }
        }
    }
    out
}

fn json(text: &[u8]) -> Vec<u8> {
    decode_with(text, true, false, false)
}

fn percent(text: &[u8]) -> Vec<u8> {
    decode_with(text, false, true, false)
}

fn html(text: &[u8]) -> Vec<u8> {
    decode_with(text, false, false, true)
}

fn all_three(text: &[u8]) -> Vec<u8> {
    decode_with(text, true, true, true)
}

fn b64_std(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn b64_url(b: u8) -> Option<u8> {
    match b {
        b'-' => Some(62),
        b'_' => Some(63),
        b'+' | b'/' => None,
        _ => b64_std(b),
    }
}

/// The maximal runs of one alphabet's characters, as `(start, end)`.
fn runs(text: &[u8], value: fn(u8) -> Option<u8>) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut start = 0;
    for (at, &b) in text.iter().enumerate().chain([(text.len(), &b'.')]) {
        if value(b).is_none() || at == text.len() {
            if at - start >= 2 {
                found.push((start, at));
            }
            start = at + 1;
        }
    }
    found
}

/// Every whole byte the characters spell, from the first.
fn base64(run: &[u8], value: fn(u8) -> Option<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(run.len() * 3 / 4);
    let mut bits = 0u32;
    let mut held = 0;
    for &c in run {
        let Some(v) = value(c) else { break };
        bits = (bits << 6) | u32::from(v);
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
            bits &= (1 << held) - 1;
        }
    }
    out
}
