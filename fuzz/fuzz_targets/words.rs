//! Arbitrary error bodies into the readers of the engine's words and
//! codes, and `bound_whole` at arbitrary limits.
//!
//! The first two bytes are a limit for `bound_whole`; the rest is the body.
//! The readers must not panic; `bound_whole` must return a prefix of at most
//! `limit` characters that cuts no escape of the whole text in two.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::Concealer;
use meterwire::fuzzing::{
    bound_whole, engine_codes, engine_value, engine_words, html_text, json_message,
};

fuzz_target!(|data: &[u8]| {
    let Some((limit, body)) = data.split_first_chunk::<2>() else {
        return;
    };
    let limit = usize::from(u16::from_le_bytes(*limit)) % 512;
    let text = String::from_utf8_lossy(body);
    let concealer = Concealer::new(["sk-test-0123456789abcdef"]);

    let _ = engine_words(&text, &concealer);
    assert!(engine_codes(&text).len() <= 16, "a bounded list of codes");
    let _ = json_message(&text);
    let _ = html_text(&text);
    let value = engine_value(body, &concealer, limit);
    assert!(value.chars().count() <= limit);

    let kept = bound_whole(&text, limit);
    assert!(text.starts_with(kept), "a prefix");
    assert!(kept.chars().count() <= limit, "at most the limit");
    if text.chars().count() <= limit {
        assert_eq!(kept, &*text, "short text is kept whole");
    }
    for (start, len) in escapes(text.as_bytes()) {
        assert!(
            start + len <= kept.len() || start >= kept.len(),
            "cut inside the escape {:?} at {start}: kept {kept:?}",
            String::from_utf8_lossy(&text.as_bytes()[start..start + len]),
        );
    }
});

/// Every escape of the text, read left to right as a decoder would:
/// `(start, length)`.
fn escapes(text: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let len = match text[at] {
            b'\\' => backslash(&text[at..]),
            b'%' => (hex_run(&text[at + 1..], 2) == 2).then_some(3),
            b'&' => reference(&text[at..]),
            _ => None,
        };
        match len {
            Some(len) => {
                found.push((at, len));
                at += len;
            }
            None => at += 1,
        }
    }
    found
}

fn hex_run(text: &[u8], max: usize) -> usize {
    text.iter()
        .take(max)
        .take_while(|b| b.is_ascii_hexdigit())
        .count()
}

/// `\uXXXX`, `\u{X…}`, `\xHH`, or a backslash and the byte after it.
fn backslash(text: &[u8]) -> Option<usize> {
    match text.get(1)? {
        b'u' if text.get(2) == Some(&b'{') => {
            let digits = hex_run(&text[3..], 6);
            (digits > 0 && text.get(3 + digits) == Some(&b'}')).then_some(4 + digits)
        }
        b'u' => (hex_run(&text[2..], 4) == 4).then_some(6),
        b'x' => (hex_run(&text[2..], 2) == 2).then_some(4),
        _ => Some(2),
    }
}

/// `&#D…;`, `&#xH…;` (the `;` optional, as HTML reads them), `&name;`, and
/// the legacy names HTML reads without their `;`.
fn reference(text: &[u8]) -> Option<usize> {
    if text.get(1) == Some(&b'#') {
        let hex = matches!(text.get(2), Some(b'x' | b'X'));
        let from = if hex { 3 } else { 2 };
        let digits = text[from.min(text.len())..]
            .iter()
            .take_while(|b| {
                if hex {
                    b.is_ascii_hexdigit()
                } else {
                    b.is_ascii_digit()
                }
            })
            .count();
        if digits == 0 {
            return None;
        }
        let end = from + digits;
        return Some(if text.get(end) == Some(&b';') {
            end + 1
        } else {
            end
        });
    }
    let name = text[1..]
        .iter()
        .take(32)
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    if name > 0 && text.get(1 + name) == Some(&b';') {
        return Some(name + 2);
    }
    ["amp", "AMP", "lt", "LT", "gt", "GT", "quot", "QUOT", "nbsp"]
        .iter()
        .find(|legacy| text[1..].starts_with(legacy.as_bytes()))
        .map(|legacy| legacy.len() + 1)
}
