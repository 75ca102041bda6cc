//! The delta reader: the shapes of engines' stream events, read by the
//! crate's own pure reader, held to a reading of serde_json's `Value` and
//! to the public `next_delta`. The oracle: no panic; every span is a
//! range of the data on character boundaries, in order, none overlapping;
//! data the channels' reader does not take for a JSON object is one text
//! span of choice 0, whole (the space a lenient reader drops around JSON is
//! none of it); in JSON, a span is a string literal serde_json decodes once
//! made strict, a lone surrogate as U+FFFD (or a
//! Gemini call's `args`, an object); where no object repeats a key, the
//! texts, choices and parts are those a reading of the `Value` finds; and
//! a stream of the data as an NDJSON line yields each non-empty text in
//! order (a byte-order mark that starts it dropped), or refuses only an
//! object that names an `error`.

#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use meterwire::AnswerStream;
use meterwire::fuzzing::{delta_spans, json_strings};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

#[path = "common/strict.rs"]
mod strict;
use strict::{outer_space, strict};

/// The types an event can carry, the last one none of an engine's.
const KINDS: [&str; 8] = [
    "message",
    "",
    "content_block_delta",
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
    "response.output_text.done",
    "an-engine-of-its-own",
];

/// JSON in which no object repeats a key (and the recursion limit holds).
struct Unrepeated;

impl<'de> Deserialize<'de> for Unrepeated {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UnrepeatedVisitor)
    }
}

struct UnrepeatedVisitor;

impl<'de> Visitor<'de> for UnrepeatedVisitor {
    type Value = Unrepeated;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Unrepeated, E> {
        Ok(Unrepeated)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Unrepeated, E> {
        Ok(Unrepeated)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Unrepeated, E> {
        Ok(Unrepeated)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Unrepeated, E> {
        Ok(Unrepeated)
    }
    fn visit_str<E>(self, _: &str) -> Result<Unrepeated, E> {
        Ok(Unrepeated)
    }
    fn visit_unit<E>(self) -> Result<Unrepeated, E> {
        Ok(Unrepeated)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unrepeated, A::Error> {
        while seq.next_element::<Unrepeated>()?.is_some() {}
        Ok(Unrepeated)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unrepeated, A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key) {
                return Err(serde::de::Error::custom("a repeated key"));
            }
            map.next_value::<Unrepeated>()?;
        }
        Ok(Unrepeated)
    }
}

/// A whole number that fits, or the place.
fn index(value: &Value, place: usize) -> u32 {
    value
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|index| u32::try_from(index).ok())
        .unwrap_or_else(|| u32::try_from(place).unwrap_or(u32::MAX))
}

fn elements(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `value`, when it is a string, as a piece of `part` of `choice`.
fn string(found: &mut Vec<(u32, String, String)>, value: Option<&Value>, choice: u32, part: &str) {
    if let Some(text) = value.and_then(Value::as_str) {
        found.push((choice, part.to_owned(), text.to_owned()));
    }
}

/// What a reading of the shapes over serde_json's `Value` finds: each
/// string's choice, part and text (a call's `args` as its `Value`, shown).
fn reference(kind: &str, value: &Value) -> Vec<(u32, String, String)> {
    let mut found = Vec::new();
    let Some(object) = value.as_object() else {
        return found;
    };
    let named = object.get("type").and_then(Value::as_str).unwrap_or(kind);
    let output_index = object
        .get("output_index")
        .and_then(Value::as_u64)
        .and_then(|index| u32::try_from(index).ok())
        .unwrap_or(0);
    match named {
        "response.output_text.delta" => string(&mut found, object.get("delta"), 0, "text"),
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            string(&mut found, object.get("delta"), 0, "reasoning");
        }
        "response.function_call_arguments.delta" => {
            string(
                &mut found,
                object.get("delta"),
                0,
                &format!("call {output_index}"),
            );
        }
        "content_block_delta" => {
            let Some(delta) = object.get("delta").filter(|delta| delta.is_object()) else {
                return found;
            };
            let call = object
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|index| u32::try_from(index).ok())
                .unwrap_or(0);
            match delta.get("type").and_then(Value::as_str) {
                Some("text_delta") => string(&mut found, delta.get("text"), 0, "text"),
                Some("thinking_delta") => string(&mut found, delta.get("thinking"), 0, "reasoning"),
                Some("input_json_delta") => {
                    string(
                        &mut found,
                        delta.get("partial_json"),
                        0,
                        &format!("call {call}"),
                    );
                }
                _ => {}
            }
        }
        named
            if named.starts_with("response.")
                || [
                    "message_start",
                    "message_delta",
                    "message_stop",
                    "content_block_start",
                    "content_block_stop",
                    "ping",
                    "error",
                ]
                .contains(&named) => {}
        _ => {
            for (place, choice) in elements(object.get("choices")).iter().enumerate() {
                let Some(delta) = choice.get("delta").filter(|delta| delta.is_object()) else {
                    continue;
                };
                if !choice.is_object() {
                    continue;
                }
                let at = index(choice, place);
                string(&mut found, delta.get("content"), at, "text");
                string(&mut found, delta.get("reasoning_content"), at, "reasoning");
                for (place, call) in elements(delta.get("tool_calls")).iter().enumerate() {
                    if !call.is_object() {
                        continue;
                    }
                    let part = format!("call {}", index(call, place));
                    let function = call.get("function").filter(|f| f.is_object());
                    string(
                        &mut found,
                        function.and_then(|f| f.get("arguments")),
                        at,
                        &part,
                    );
                }
            }
            for (place, candidate) in elements(object.get("candidates")).iter().enumerate() {
                if !candidate.is_object() {
                    continue;
                }
                let at = index(candidate, place);
                let content = candidate.get("content").filter(|c| c.is_object());
                for (place, part) in elements(content.and_then(|c| c.get("parts")))
                    .iter()
                    .enumerate()
                {
                    if !part.is_object() {
                        continue;
                    }
                    let thought = part.get("thought") == Some(&Value::Bool(true));
                    string(
                        &mut found,
                        part.get("text"),
                        at,
                        if thought { "reasoning" } else { "text" },
                    );
                    let args = part
                        .get("functionCall")
                        .filter(|call| call.is_object())
                        .and_then(|call| call.get("args"))
                        .filter(|args| args.is_object());
                    if let Some(args) = args {
                        found.push((at, format!("call {place}"), args.to_string()));
                    }
                }
            }
            if let Some(message) = object.get("message").filter(|m| m.is_object()) {
                string(&mut found, message.get("content"), 0, "text");
                string(&mut found, message.get("thinking"), 0, "reasoning");
            }
            string(&mut found, object.get("response"), 0, "text");
            string(&mut found, object.get("thinking"), 0, "reasoning");
        }
    }
    found
}

fuzz_target!(|input: (u8, String)| {
    let (kind, data) = input;
    let kind = KINDS[usize::from(kind) % KINDS.len()];
    let spans = delta_spans(kind, &data);

    let mut end = 0;
    for (range, _, _, _) in &spans {
        assert!(data.get(range.clone()).is_some(), "{range:?} of {data:?}");
        assert!(range.start >= end, "in order, none overlapping: {spans:?}");
        end = range.end;
    }

    // Whether data is a JSON object is the channels' reader's word (the
    // `json_spans` target holds it to serde_json); what it reads as text is
    // one piece of text, whole. The space a lenient reader drops around
    // the JSON is none of it, and serde_json reads it once made strict.
    let is_json = json_strings(&data).is_ok();
    let strict_data = strict(&data);
    let json = strict_data.trim_matches(outer_space);
    if !is_json {
        assert_eq!(spans, [(0..data.len(), false, 0, "text".to_owned())]);
    }
    let mut ours = Vec::new();
    for (range, json, choice, part) in &spans {
        let raw = &data[range.clone()];
        if !is_json {
            ours.push((*choice, part.clone(), raw.to_owned()));
        } else if *json {
            let text: String = serde_json::from_str(&strict(raw)).expect("a string literal");
            ours.push((*choice, part.clone(), text));
        } else {
            let args: Value = serde_json::from_str(raw).expect("a call's arguments");
            assert!(args.is_object(), "{raw:?}");
            ours.push((*choice, part.clone(), args.to_string()));
        }
    }
    if is_json && serde_json::from_str::<Unrepeated>(json).is_ok() {
        let value: Value = serde_json::from_str(json).expect("JSON");
        let mut theirs = reference(kind, &value);
        let mut sorted = ours.clone();
        sorted.sort();
        theirs.sort();
        assert_eq!(sorted, theirs, "{kind:?} {data:?}");
    }

    // The data as one NDJSON line, through the public reader.
    if data.contains(['\n', '\r']) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    runtime.block_on(async {
        let mut stream = AnswerStream::from_chunks(200, [data.clone()])
            .with_content_type("application/x-ndjson");
        let mut read = Vec::new();
        let mut refused = false;
        while let Some(delta) = stream.next_delta().await {
            match delta {
                Ok(delta) => {
                    assert!(!delta.text().is_empty());
                    read.push(delta.text().to_owned());
                }
                Err(_) => refused = true,
            }
        }
        // A byte-order mark that starts a stream is dropped.
        let line = data.strip_prefix('\u{feff}').unwrap_or(&data);
        let skipped = line.trim().is_empty() || line.trim() == "[DONE]";
        // The error reader skips what it need not decode (a key with a
        // lone surrogate escape), so its verdict is only bounded here.
        let error =
            line.trim_start().starts_with('{') && (line.contains("error") || line.contains("\\u"));
        if refused {
            assert!(error, "refused without an error: {data:?}");
            return;
        }
        let expected: Vec<String> = if skipped {
            Vec::new()
        } else {
            delta_spans("", line)
                .into_iter()
                .map(|(range, json, _, _)| {
                    let raw = &line[range];
                    if json {
                        serde_json::from_str(&strict(raw)).expect("a string literal")
                    } else {
                        raw.to_owned()
                    }
                })
                .filter(|text: &String| !text.is_empty())
                .collect()
        };
        assert_eq!(read, expected, "{line:?}");
    });
});
