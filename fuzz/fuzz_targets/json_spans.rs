//! The JSON reader of a stream's channels, held to serde_json, and the
//! channels themselves. The oracle: no panic; the reader takes a text for a
//! JSON object exactly when serde_json does once the text is made strict
//! (the space a lenient reader drops around it as spaces, a lone surrogate
//! as `\ufffd`, both of which the reader reads; and but for numbers
//! serde_json cannot hold, and its own recursion limit); each string's bytes are a
//! literal serde_json decodes to the value the reader gave; the strings it
//! keeps (not dropped for a repeated key), by their position paths, are the
//! strings of serde_json's value within the reader's depth, and nested
//! deeper (the text wrapped in containers around the bound) the strings
//! above still are; writing every value back in its place (re-escaped), or
//! emptying every string, leaves the same JSON, or JSON; and lines through
//! the channels come out as many as went in, each still JSON if it was,
//! the token's raw form in none.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::Concealer;
use meterwire::fuzzing::{JSON_MAX_DEPTH, JsonStringRead, join_lines, json_strings};
use serde_json::Value;

const TOKEN: &str = "sk-fz-7Qx9Lm2Pz4Vb";

/// `text` with each literal replaced by what `with` writes for its value.
fn replaced(text: &str, found: &[JsonStringRead], with: impl Fn(&str) -> String) -> String {
    let mut out = text.to_owned();
    for string in found.iter().rev() {
        out.replace_range(string.raw.clone(), &with(&string.value));
    }
    out
}

/// A key as a path writes it.
fn escaped(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1").replace('#', "~2")
}

/// The strings of `value` within `depth` containers (itself counted), each
/// with its path of keys and positions: what serde_json's reader keeps.
fn serde_strings(value: &Value, path: &str, depth: usize, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(string) if depth <= JSON_MAX_DEPTH => {
            out.push((path.to_owned(), string.clone()));
        }
        Value::Object(map) if depth < JSON_MAX_DEPTH => {
            for (key, value) in map {
                serde_strings(value, &format!("{path}/{}", escaped(key)), depth + 1, out);
            }
        }
        Value::Array(items) if depth < JSON_MAX_DEPTH => {
            for (position, value) in items.iter().enumerate() {
                serde_strings(value, &format!("{path}/{position}"), depth + 1, out);
            }
        }
        _ => {}
    }
}

/// The strings the reader keeps as serde_json does, sorted as the two
/// orders differ (serde_json's map sorts its keys).
fn kept(found: &[JsonStringRead]) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = found
        .iter()
        .filter(|string| !string.shadowed)
        .map(|string| (string.position.clone(), string.value.clone()))
        .collect();
    kept.sort();
    kept
}

fn serde_kept(value: &Value) -> Vec<(String, String)> {
    let mut theirs = Vec::new();
    serde_strings(value, "", 0, &mut theirs);
    theirs.sort();
    theirs
}

/// Whether a character around a whole text is space to a lenient reader
/// (Rust's `trim`, Python's `strip`), as the reader takes it.
fn outer_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `text` as serde_json's `Value` reads what the reader reads leniently,
/// byte for byte the same length so that every range still points where
/// it did: the space around it as plain spaces, and each surrogate
/// escape without its pair as `\ufffd`, which the reader decodes it to.
fn strict(text: &str) -> String {
    let lead = text.len() - text.trim_start_matches(outer_space).len();
    let trail = text.len() - text.trim_end_matches(outer_space).len();
    let mut out = text.as_bytes().to_vec();
    if lead == text.len() {
        out.fill(b' ');
    } else {
        out[..lead].fill(b' ');
        let end = out.len();
        out[end - trail..].fill(b' ');
    }
    let unit = |at: usize| -> Option<u32> {
        let digits = out.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let mut at = 0;
    let mut lone = Vec::new();
    while at + 1 < out.len() {
        if out[at] != b'\\' {
            at += 1;
            continue;
        }
        if out[at + 1] != b'u' {
            at += 2;
            continue;
        }
        match unit(at + 2) {
            Some(0xD800..=0xDBFF) => {
                let paired = out.get(at + 6) == Some(&b'\\')
                    && out.get(at + 7) == Some(&b'u')
                    && matches!(unit(at + 8), Some(0xDC00..=0xDFFF));
                if paired {
                    at += 12;
                } else {
                    lone.push(at);
                    at += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                lone.push(at);
                at += 6;
            }
            _ => at += 2,
        }
    }
    for at in lone {
        out[at..at + 6].copy_from_slice(b"\\ufffd");
    }
    String::from_utf8(out).expect("ASCII written over whole characters")
}

fuzz_target!(|text: &str| {
    let ours = json_strings(text);
    // The reader reads leniently what serde_json refuses: the space a
    // lenient reader drops around the text, and a lone surrogate.
    let text = &strict(text);
    let theirs = serde_json::from_str::<Value>(text);
    match (&ours, &theirs) {
        (Ok(found), Ok(value)) => {
            assert!(value.is_object(), "{text:?}");
            for string in found {
                let literal: String =
                    serde_json::from_str(&text[string.raw.clone()]).expect("a literal");
                assert_eq!(literal, string.value, "{text:?}");
                for path in [&string.path, &string.position, &string.keys] {
                    assert!(path.starts_with('/'), "{path:?}");
                }
            }
            assert_eq!(kept(found), serde_kept(value), "{text:?}");
            let same = replaced(text, found, |v| serde_json::to_string(v).expect("a string"));
            assert_eq!(serde_json::from_str::<Value>(&same).ok().as_ref(), Some(value));
            let emptied = replaced(text, found, |_| "\"\"".to_owned());
            assert!(serde_json::from_str::<Value>(&emptied).is_ok(), "{emptied:?}");
            // Nested around the bound: the strings above it are still read,
            // as serde_json reads them.
            let levels = JSON_MAX_DEPTH - 3 + text.len() % 6;
            let wrapped = format!(
                "{{\"w\":\"above\",\"n\":{}{text}{},\"z\":\"after\"}}",
                "[".repeat(levels),
                "]".repeat(levels)
            );
            let deep = json_strings(&wrapped).expect("an object, however deep");
            // Unless the wrapping took it past serde_json's own limit.
            if let Ok(value) = serde_json::from_str::<Value>(&wrapped) {
                assert_eq!(kept(&deep), serde_kept(&value), "{wrapped:?}");
            }
        }
        (Ok(_), Err(error)) => {
            // serde_json refuses numbers it cannot hold as f64, which JSON
            // allows; and its own recursion limit.
            let said = error.to_string();
            assert!(
                said.contains("number out of range") || said.contains("recursion limit"),
                "{text:?}: {said}"
            );
        }
        (Err(why), Ok(value)) => {
            assert!(!value.is_object(), "{text:?}: {why}");
        }
        (Err(_), Err(_)) => {}
    }

    // The same text as NDJSON lines, the token spliced in where `@` is.
    let with_token = text.replace('@', TOKEN);
    let lines: Vec<&str> = with_token.split('\n').take(64).collect();
    static CONCEALER: std::sync::OnceLock<Concealer> = std::sync::OnceLock::new();
    let concealer = CONCEALER.get_or_init(|| Concealer::new([TOKEN]));
    if let Ok(out) = join_lines(concealer, &lines) {
        assert_eq!(out.len(), lines.len());
        for (line, sent) in out.iter().zip(&lines) {
            assert!(!line.contains(TOKEN), "{line:?}");
            if serde_json::from_str::<Value>(sent).is_ok_and(|v| v.is_object()) {
                assert!(
                    serde_json::from_str::<Value>(line).is_ok(),
                    "{sent:?} became {line:?}"
                );
            }
        }
    }
});
