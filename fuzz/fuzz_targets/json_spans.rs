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

#[path = "common/strict.rs"]
mod strict;
use strict::strict;

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
