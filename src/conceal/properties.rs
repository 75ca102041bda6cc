//! Properties of the concealer over random tokens broken across lines:
//! base64 wrapped at random widths, tokens hard-wrapped at random places,
//! embedded at random offsets in random text; and a slow reference that
//! joins lines, decodes and searches plainly, against which the concealer
//! is compared.

use super::{Concealer, REDACTED};
use base64::Engine as _;
use base64::engine::general_purpose::{
    GeneralPurpose, STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
};
use proptest::prelude::*;

/// Visible ASCII, every trigger and quote included; or digits only, whose
/// base64 is all letters and digits.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[!-~]{4,24}", 1 => "[0-9]{4,16}"]
}

/// Text that shares no character with any token and holds no line break:
/// the expected output is then known exactly.
fn foreign_text() -> impl Strategy<Value = String> {
    "[ \té日😀ßΩ\u{a0}]{0,8}"
}

/// Any text, ASCII-heavy, line breaks included.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[ -~\n\r é日😀]{0,24}"]
}

fn engine() -> impl Strategy<Value = GeneralPurpose> {
    prop_oneof![
        Just(STANDARD),
        Just(STANDARD_NO_PAD),
        Just(URL_SAFE),
        Just(URL_SAFE_NO_PAD)
    ]
}

const BREAKS: [&str; 4] = ["\n", "\r\n", r"\n", r"\r\n"];

/// What precedes the token inside the encoded data.
fn prefix() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("Bearer ".to_owned()),
        Just("user:".to_owned()),
        "[ -~]{0,3}",
    ]
}

fn wrap(encoded: &str, width: usize, line_break: &str) -> String {
    let lines: Vec<&str> = encoded
        .as_bytes()
        .chunks(width.max(1))
        .map(|line| std::str::from_utf8(line).unwrap_or_default())
        .collect();
    lines.join(line_break)
}

/// The JSON string body of `text`.
fn json(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
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
    fn wrapped_base64_is_concealed_whole(
        token in token(),
        prefix in prefix(),
        engine in engine(),
        width in 1usize..=100,
        line_break in prop::sample::select(&BREAKS[..]),
        before in foreign_text(),
        after in foreign_text(),
    ) {
        let concealer = Concealer::new([token.as_str()]);
        let wrapped = wrap(&engine.encode(format!("{prefix}{token}")), width, line_break);
        let text = format!("{before} {wrapped} {after}");
        let output = concealer.conceal(&text);
        prop_assert_eq!(output, format!("{before} {REDACTED} {after}"));
    }

    #[test]
    fn a_token_hard_wrapped_anywhere_is_concealed_whole(
        token in token(),
        at in any::<prop::sample::Index>(),
        line_break in prop::sample::select(&BREAKS[..]),
        escaped in any::<bool>(),
        before in foreign_text(),
        after in foreign_text(),
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
        token in token(),
        prefix in prefix(),
        engine in engine(),
        width in 1usize..=100,
        at in any::<prop::sample::Index>(),
        line_break in prop::sample::select(&BREAKS[..]),
        base64 in any::<bool>(),
        before in any_text(),
        after in any_text(),
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
        token in token(),
        prefix in prefix(),
        engine in engine(),
        width in 1usize..=100,
        at in any::<prop::sample::Index>(),
        line_break in prop::sample::select(&BREAKS[..]),
        form in 0u8..3,
        before in foreign_text(),
        after in foreign_text(),
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
