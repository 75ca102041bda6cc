//! The readings of a stream: the ways predictors join what an engine
//! streams, each a way to name the channel a string joins.
//!
//! Tried against the readers people write (SDKs, the crate's own doc
//! example), a token split across events reached a predictor whole in more
//! ways than one path names: a choice read by position (`choices[0]`)
//! while its `index` alternated; Gemini's `parts` or Anthropic's content
//! blocks joined as one message's text; a repeated key, of which
//! serde_json keeps the last; data that is one JSON string; an event type
//! that changed between events. So each string joins one channel per
//! reading, each with and without the event's type (`mod.rs` names both),
//! and a form that any of them spells is concealed.
//!
//! A reading is one variant of [`Reading`], its place in [`READINGS`]
//! (which names it) and one arm of [`Reading::each`], which is given the
//! item's type and data besides its parsed strings. One reading names its
//! strings otherwise than by their paths: the crate's own join of
//! generated text, as `next_delta` yields it ([`Reading::Deltas`]), reads
//! the pieces the engines' shapes name (`stream/delta/shapes.rs`) and joins
//! each by its choice and part, so that what `next_delta` yields, joined,
//! is concealed exactly, not by a reading that happens to meet it.

use std::ops::Range;

use super::json_spans::{JsonString, strings, whole_string};
use crate::stream::delta::Part;
use crate::stream::delta::shapes::delta_spans_of;

/// One string of an item that a reading can join.
pub(super) struct Slot {
    /// Its bytes in the item's data: a literal's quotes included.
    pub(super) raw: Range<usize>,
    pub(super) form: Form,
}

/// What a slot is.
pub(super) enum Form {
    /// A string of a JSON object, with where it stands.
    Member(JsonString),
    /// Data that is one JSON string: its decoded value.
    Whole(String),
    /// Data that is not a JSON object, as text; `within` the literal it
    /// is when it is one JSON string.
    Text { within: Option<Range<usize>> },
}

impl Slot {
    /// What the slot joins to its channels.
    pub(super) fn value<'a>(&'a self, data: &'a str) -> &'a str {
        match &self.form {
            Form::Member(string) => &string.value,
            Form::Whole(value) => value,
            Form::Text { .. } => data.get(self.raw.clone()).unwrap_or_default(),
        }
    }

    /// Where it stands by `index` (the scope an engine's close names), for
    /// a string of an object.
    pub(super) fn scope(&self) -> &str {
        match &self.form {
            Form::Member(string) => &string.path,
            Form::Whole(_) | Form::Text { .. } => "",
        }
    }
}

/// An item's data, read once for every reading.
pub(super) struct Parsed {
    pub(super) slots: Vec<Slot>,
    /// Whether the data is a JSON object (its slots are its strings).
    pub(super) object: bool,
}

impl Parsed {
    pub(super) fn of(data: &str) -> Parsed {
        let found = strings(data);
        let object = found.is_ok();
        let slots = match found {
            Ok(found) => found
                .into_iter()
                .map(|string| Slot {
                    raw: string.raw.clone(),
                    form: Form::Member(string),
                })
                .collect(),
            Err(_) => {
                let whole = whole_string(data);
                let within = whole.as_ref().map(|(raw, _)| raw.clone());
                let mut slots = vec![Slot {
                    raw: 0..data.len(),
                    form: Form::Text { within },
                }];
                if let Some((raw, value)) = whole {
                    slots.push(Slot {
                        raw,
                        form: Form::Whole(value),
                    });
                }
                slots
            }
        };
        Parsed { slots, object }
    }
}

/// One way a predictor joins a stream's strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reading {
    /// By the path, an object with an integer `index` member named by it:
    /// OpenAI's choices and tool calls, Anthropic's content blocks.
    Indexed,
    /// By keys and array positions, as `data["choices"][0]` reads it.
    Positions,
    /// By keys alone, every array position dropped: every `text` of a
    /// message's parts or blocks, every `content` of every choice.
    Keys,
    /// [`Reading::Indexed`] as serde_json reads an object: of a repeated
    /// key, the last alone.
    LastIndexed,
    /// [`Reading::Positions`], of a repeated key the last alone.
    LastPositions,
    /// [`Reading::Keys`], of a repeated key the last alone.
    LastKeys,
    /// Data that is not a JSON object, as text, joined with nothing
    /// between.
    Text,
    /// Data that is one JSON string, as its decoded text.
    Decoded,
    /// The crate's own join of generated text, as `next_delta` yields it:
    /// by choice and part, read from the five engines' stream shapes.
    Deltas,
}

/// Every reading a stream's strings are joined by.
pub(super) const READINGS: [Reading; 9] = [
    Reading::Indexed,
    Reading::Positions,
    Reading::Keys,
    Reading::LastIndexed,
    Reading::LastPositions,
    Reading::LastKeys,
    Reading::Text,
    Reading::Decoded,
    Reading::Deltas,
];

impl Reading {
    /// Calls `join` with each slot this reading joins, in the order they
    /// stand, and the path that names its channel, for an item of `kind`
    /// whose data is `data`. An empty string joins nothing: it neither adds
    /// to a channel nor continues it.
    pub(super) fn each(
        self,
        parsed: &Parsed,
        kind: &str,
        data: &str,
        mut join: impl FnMut(usize, &str),
    ) {
        if self == Reading::Deltas {
            return deltas(parsed, kind, data, join);
        }
        for (at, slot) in parsed.slots.iter().enumerate() {
            if slot.value(data).is_empty() {
                continue;
            }
            let path = match (self, &slot.form) {
                (Reading::Indexed, Form::Member(string)) => &string.path,
                (Reading::Positions, Form::Member(string)) => &string.position,
                (Reading::Keys, Form::Member(string)) => &string.keys,
                (Reading::LastIndexed, Form::Member(string)) if !string.shadowed => &string.path,
                (Reading::LastPositions, Form::Member(string)) if !string.shadowed => {
                    &string.position
                }
                (Reading::LastKeys, Form::Member(string)) if !string.shadowed => &string.keys,
                (Reading::Text, Form::Text { .. }) | (Reading::Decoded, Form::Whole(_)) => "",
                _ => continue,
            };
            join(at, path);
        }
    }
}

/// The join `next_delta` yields: each piece of generated text the
/// engines' shapes name (`delta::shapes`), joined by its choice and part.
/// A piece is one of the item's slots, the one whose bytes it is (the
/// slots stand in the order of the data, so a binary search finds it); a
/// piece that is no string (a Gemini function call's `args` object)
/// spells no form across items that its own strings do not, and those are
/// joined by every other reading.
fn deltas(parsed: &Parsed, kind: &str, data: &str, mut join: impl FnMut(usize, &str)) {
    for span in delta_spans_of(kind, data, parsed.object) {
        let Ok(at) = parsed
            .slots
            .binary_search_by_key(&span.raw.start, |slot| slot.raw.start)
        else {
            continue;
        };
        let Some(slot) = parsed.slots.get(at) else {
            continue;
        };
        if slot.raw != span.raw || slot.value(data).is_empty() {
            continue;
        }
        let part = match span.part {
            Part::Text => "text".to_owned(),
            Part::Reasoning => "reasoning".to_owned(),
            Part::ToolArguments { call } => format!("arguments/{call}"),
        };
        join(at, &format!("/{}/{part}", span.choice));
    }
}

/// What an item says the engine closed, each by the scope of its strings
/// (a path by `index`): Anthropic's `content_block_stop` closes its block
/// (`/#2`), a choice's `finish_reason` (Gemini's `finishReason`) closes
/// that choice (`/choices/#0`). A channel whose last string stood in a
/// closed scope holds nothing more.
pub(super) fn closed(parsed: &Parsed) -> Vec<&str> {
    let mut scopes = Vec::new();
    for slot in &parsed.slots {
        let Form::Member(string) = &slot.form else {
            continue;
        };
        if string.keys == "/type"
            && string.value == "content_block_stop"
            && let Some(scope) = string.path.strip_suffix("/type")
            && scope.starts_with("/#")
        {
            scopes.push(scope);
        }
        for key in ["/finish_reason", "/finishReason"] {
            if string.keys.ends_with(key)
                && !string.value.is_empty()
                && let Some(scope) = string.path.strip_suffix(key)
            {
                scopes.push(scope);
            }
        }
    }
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paths each reading joins `data`'s strings by.
    fn joined(reading: Reading, data: &str) -> Vec<(usize, String)> {
        let parsed = Parsed::of(data);
        let mut out = Vec::new();
        reading.each(&parsed, "message", data, |at, path| {
            out.push((at, path.to_owned()));
        });
        out
    }

    #[test]
    fn each_reading_names_a_string_its_own_way() {
        let data = r#"{"choices":[{"index":1,"delta":{"content":"a","content":"b"}}],"e":""}"#;
        let all = |reading| joined(reading, data);
        assert_eq!(
            all(Reading::Indexed),
            [
                (0, "/choices/#1/delta/content".to_owned()),
                (1, "/choices/#1/delta/content".to_owned())
            ]
        );
        assert_eq!(all(Reading::Positions)[0].1, "/choices/0/delta/content");
        assert_eq!(all(Reading::Keys)[0].1, "/choices/delta/content");
        // serde_json keeps the last of a repeated key.
        assert_eq!(
            all(Reading::LastPositions),
            [(1, "/choices/0/delta/content".to_owned())]
        );
        assert!(all(Reading::Text).is_empty());
        assert!(all(Reading::Decoded).is_empty());
    }

    #[test]
    fn the_delta_join_names_a_piece_by_its_choice_and_part() {
        let chat = r#"{"choices":[{"index":1,"delta":{"content":"a","tool_calls":[{"index":2,"function":{"arguments":"{"}}]}}]}"#;
        assert_eq!(
            joined(Reading::Deltas, chat),
            [(0, "/1/text".to_owned()), (1, "/1/arguments/2".to_owned())]
        );
        let thought = r#"{"candidates":[{"content":{"parts":[{"text":"hm","thought":true}]}}]}"#;
        assert_eq!(
            joined(Reading::Deltas, thought),
            [(0, "/0/reasoning".to_owned())]
        );
        // What carries no text, and text that is empty, join nothing.
        assert!(joined(Reading::Deltas, r#"{"type":"message_stop"}"#).is_empty());
        assert!(joined(Reading::Deltas, r#"{"choices":[{"delta":{"content":""}}]}"#).is_empty());
        assert_eq!(
            joined(Reading::Deltas, "plain"),
            [(0, "/0/text".to_owned())]
        );
    }

    #[test]
    fn data_that_is_no_object_is_text_and_a_json_string_its_value_too() {
        assert_eq!(joined(Reading::Text, "sk-"), [(0, String::new())]);
        assert!(joined(Reading::Decoded, "sk-").is_empty());
        let parsed = Parsed::of(" \"s\\u006b-\"");
        assert_eq!(parsed.slots.len(), 2);
        assert_eq!(parsed.slots[1].value(" \"s\\u006b-\""), "sk-");
        assert_eq!(
            joined(Reading::Decoded, " \"s\\u006b-\""),
            [(1, String::new())]
        );
    }

    #[test]
    fn a_block_stop_and_a_finish_reason_close_their_scope() {
        let stop = Parsed::of(r#"{"type":"content_block_stop","index":2}"#);
        assert_eq!(closed(&stop), ["/#2"]);
        let finish = Parsed::of(
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"candidates":[{"finishReason":"STOP"}]}"#,
        );
        assert_eq!(closed(&finish), ["/choices/#0", "/candidates/0"]);
        let open = Parsed::of(r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#);
        assert!(closed(&open).is_empty());
    }
}
