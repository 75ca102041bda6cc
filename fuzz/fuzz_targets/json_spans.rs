//! The JSON reader of a stream's channels, held to serde_json, and the
//! channels themselves. The oracle: no panic; the reader takes a text for a
//! JSON object exactly when serde_json does (but for nesting past its
//! bound, and numbers serde_json cannot hold); each string's bytes are a
//! literal serde_json decodes to the value the reader gave; writing every
//! value back in its place (re-escaped), or emptying every string, leaves
//! the same JSON, or JSON; and lines through the channels come out as many
//! as went in, each still JSON if it was, the token's raw form in none.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::Concealer;
use meterwire::fuzzing::{join_lines, json_strings};
use serde_json::Value;

const TOKEN: &str = "sk-fz-7Qx9Lm2Pz4Vb";

/// `text` with each literal replaced by what `with` writes for its value.
fn replaced(
    text: &str,
    found: &[(std::ops::Range<usize>, String, String)],
    with: impl Fn(&str) -> String,
) -> String {
    let mut out = text.to_owned();
    for (raw, value, _) in found.iter().rev() {
        out.replace_range(raw.clone(), &with(value));
    }
    out
}

fuzz_target!(|text: &str| {
    let ours = json_strings(text);
    let theirs = serde_json::from_str::<Value>(text);
    match (&ours, &theirs) {
        (Ok(found), Ok(value)) => {
            assert!(value.is_object(), "{text:?}");
            for (raw, decoded, path) in found {
                let literal: String = serde_json::from_str(&text[raw.clone()]).expect("a literal");
                assert_eq!(&literal, decoded, "{text:?}");
                assert!(path.starts_with('/'), "{path:?}");
            }
            let same = replaced(text, found, |v| serde_json::to_string(v).expect("a string"));
            assert_eq!(serde_json::from_str::<Value>(&same).ok().as_ref(), Some(value));
            let emptied = replaced(text, found, |_| "\"\"".to_owned());
            assert!(serde_json::from_str::<Value>(&emptied).is_ok(), "{emptied:?}");
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
            assert!(!value.is_object() || *why == "deep", "{text:?}: {why}");
        }
        (Err(_), Err(_)) => {}
    }

    // The same text as NDJSON lines, the token spliced in where `@` is.
    let with_token = text.replace('@', TOKEN);
    let lines: Vec<&str> = with_token.split('\n').take(64).collect();
    let concealer = Concealer::new([TOKEN]);
    if let Ok(out) = join_lines(&concealer, &lines) {
        assert_eq!(out.len(), lines.len());
        for (line, sent) in out.iter().zip(&lines) {
            assert!(!line.contains(TOKEN), "{line:?}");
            if serde_json::from_str::<Value>(sent).is_ok_and(|v| v.is_object()) {
                assert!(serde_json::from_str::<Value>(line).is_ok(), "{sent:?} became {line:?}");
            }
        }
    }
});
