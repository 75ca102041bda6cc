//! Where the generated text stands in one event of each engine's stream:
//! a pure reading of an event's type and its data (already concealed),
//! naming each piece of text by its byte range in the data, its choice
//! and its part.
//!
//! | engine | the text | choice | part |
//! |---|---|---|---|
//! | OpenAI chat | `choices[i].delta`: `content`, `reasoning_content`, `tool_calls[j].function.arguments` | the choice's `index` | text, reasoning, the tool call's `index` |
//! | OpenAI Responses | `delta` of `response.output_text.delta`, `response.reasoning_text.delta`, `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta` | 0 | text, reasoning, reasoning, the item's `output_index` |
//! | Anthropic | `content_block_delta`'s `delta`: `text_delta`'s `text`, `thinking_delta`'s `thinking`, `input_json_delta`'s `partial_json` | 0 | text, reasoning, the block's `index` |
//! | Gemini | `candidates[i].content.parts[j]`: `text` (`thought: true` for reasoning), `functionCall.args` | the candidate's `index` | text or reasoning, the part's place |
//! | Ollama | `message.content`, `message.thinking`; `/api/generate`'s `response`, `thinking` | 0 | text, reasoning |
//!
//! An index that is missing or not a whole number that fits is the
//! element's place in its array. The type is the data's `type` member when
//! it has one, else the event's. The Responses API's other events (its
//! `.done` events repeat the whole text) and Anthropic's other events
//! carry none; neither does JSON of no known shape, nor an object of a
//! known one that repeats a member it is read by (no one reading of it is
//! the engine's). Data that the channels do not read as a JSON object (the
//! space a lenient reader drops around it aside) is text of choice 0,
//! whole, as they read it: a plain text stream's piece that happens to be
//! JSON (`42`, `true`) is text too.
//!
//! Read with serde_json's borrowed raw values, which point into the data,
//! so that each string's literal is found where it stands: what a reading
//! joined by choice and part is concealed in, and rewritten in.

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::Part;
use crate::stream::channels::json_spans::{outer_space, strings};

/// One piece of generated text in an event's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeltaSpan {
    /// Its bytes in the data: a JSON string literal, quotes included, when
    /// `json`; else the text as it stands (data that is not a JSON object, or a
    /// Gemini function call's `args` object).
    pub(crate) raw: Range<usize>,
    pub(crate) json: bool,
    pub(crate) choice: u32,
    pub(crate) part: Part,
}

/// The pieces of generated text in one event (`kind` its type as the
/// channels name it: `message` for an SSE event with none, empty for an
/// NDJSON line; `data` its data, concealed), in the order they stand.
pub(crate) fn delta_spans(kind: &str, data: &str) -> Vec<DeltaSpan> {
    delta_spans_of(kind, data, strings(data).is_ok())
}

/// [`delta_spans`], told whether the channels read `data` as a JSON
/// object (`is_object`). Their reading decides, not serde_json's: data they
/// read as text is one piece of text, whole, so that what `next_delta`
/// yields is always what a reading of the channels joined and concealed,
/// wherever the two parsers could differ.
pub(crate) fn delta_spans_of(kind: &str, data: &str, is_object: bool) -> Vec<DeltaSpan> {
    let mut found = Found {
        data,
        spans: Vec::new(),
    };
    if !is_object {
        found.spans.push(DeltaSpan {
            raw: 0..data.len(),
            json: false,
            choice: 0,
            part: Part::Text,
        });
        return found.spans;
    }
    // Read as the channels read it: the space around the JSON that a
    // lenient reader drops is none of it, whatever kind.
    let json = data.trim_matches(outer_space);
    let Some(top) = object::<Top<'_>>(json) else {
        return found.spans;
    };
    let named = top.kind.and_then(text_of);
    match named.as_deref().unwrap_or(kind) {
        "response.output_text.delta" => found.string(top.delta, 0, Part::Text),
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            found.string(top.delta, 0, Part::Reasoning);
        }
        "response.function_call_arguments.delta" => {
            let call = whole(top.output_index).unwrap_or(0);
            found.string(top.delta, 0, Part::ToolArguments { call });
        }
        "content_block_delta" => found.anthropic(&top),
        named if named.starts_with("response.") || ANTHROPIC.contains(&named) => {}
        _ => {
            found.chat(top.choices);
            found.gemini(top.candidates);
            found.ollama(&top);
        }
    }
    found.spans.sort_by_key(|span| span.raw.start);
    found.spans
}

/// Anthropic's events that carry no text.
const ANTHROPIC: [&str; 7] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_stop",
    "ping",
    "error",
];

/// A member read for where it stands, not what it is, until it is.
type Raw<'a> = Option<&'a RawValue>;

/// The members of an event's data that any shape is read by.
#[derive(Deserialize)]
struct Top<'a> {
    #[serde(borrow, rename = "type")]
    kind: Raw<'a>,
    #[serde(borrow)]
    delta: Raw<'a>,
    #[serde(borrow)]
    index: Raw<'a>,
    #[serde(borrow)]
    output_index: Raw<'a>,
    #[serde(borrow)]
    choices: Raw<'a>,
    #[serde(borrow)]
    candidates: Raw<'a>,
    #[serde(borrow)]
    message: Raw<'a>,
    #[serde(borrow)]
    response: Raw<'a>,
    #[serde(borrow)]
    thinking: Raw<'a>,
}

#[derive(Deserialize)]
struct AnthropicDelta<'a> {
    #[serde(borrow, rename = "type")]
    kind: Raw<'a>,
    #[serde(borrow)]
    text: Raw<'a>,
    #[serde(borrow)]
    thinking: Raw<'a>,
    #[serde(borrow)]
    partial_json: Raw<'a>,
}

#[derive(Deserialize)]
struct ChatChoice<'a> {
    #[serde(borrow)]
    index: Raw<'a>,
    #[serde(borrow)]
    delta: Raw<'a>,
}

#[derive(Deserialize)]
struct ChatDelta<'a> {
    #[serde(borrow)]
    content: Raw<'a>,
    #[serde(borrow)]
    reasoning_content: Raw<'a>,
    #[serde(borrow)]
    tool_calls: Raw<'a>,
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(borrow)]
    index: Raw<'a>,
    #[serde(borrow)]
    function: Raw<'a>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow)]
    arguments: Raw<'a>,
}

#[derive(Deserialize)]
struct Candidate<'a> {
    #[serde(borrow)]
    index: Raw<'a>,
    #[serde(borrow)]
    content: Raw<'a>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow)]
    parts: Raw<'a>,
}

#[derive(Deserialize)]
struct GeminiPart<'a> {
    #[serde(borrow)]
    text: Raw<'a>,
    #[serde(borrow)]
    thought: Raw<'a>,
    #[serde(borrow, rename = "functionCall")]
    function_call: Raw<'a>,
}

#[derive(Deserialize)]
struct FunctionCall<'a> {
    #[serde(borrow)]
    args: Raw<'a>,
}

#[derive(Deserialize)]
struct OllamaMessage<'a> {
    #[serde(borrow)]
    content: Raw<'a>,
    #[serde(borrow)]
    thinking: Raw<'a>,
}

/// The spans found so far in `data`.
struct Found<'a> {
    data: &'a str,
    spans: Vec<DeltaSpan>,
}

impl Found<'_> {
    /// `value`, when it is a string, as a piece of `part` of `choice`.
    fn string(&mut self, value: Raw<'_>, choice: u32, part: Part) {
        let Some(value) = value.filter(|value| value.get().starts_with('"')) else {
            return;
        };
        if let Some(raw) = range_in(self.data, value.get()) {
            self.spans.push(DeltaSpan {
                raw,
                json: true,
                choice,
                part,
            });
        }
    }

    fn anthropic(&mut self, top: &Top<'_>) {
        let Some(delta) = top
            .delta
            .and_then(|raw| object::<AnthropicDelta<'_>>(raw.get()))
        else {
            return;
        };
        let call = whole(top.index).unwrap_or(0);
        match delta.kind.and_then(text_of).as_deref() {
            Some("text_delta") => self.string(delta.text, 0, Part::Text),
            Some("thinking_delta") => self.string(delta.thinking, 0, Part::Reasoning),
            Some("input_json_delta") => {
                self.string(delta.partial_json, 0, Part::ToolArguments { call });
            }
            _ => {}
        }
    }

    fn chat(&mut self, choices: Raw<'_>) {
        for (place, choice) in array(choices) {
            let Some(choice) = object::<ChatChoice<'_>>(choice.get()) else {
                continue;
            };
            let index = whole(choice.index).unwrap_or(place);
            let Some(delta) = choice
                .delta
                .and_then(|raw| object::<ChatDelta<'_>>(raw.get()))
            else {
                continue;
            };
            self.string(delta.content, index, Part::Text);
            self.string(delta.reasoning_content, index, Part::Reasoning);
            for (place, call) in array(delta.tool_calls) {
                let Some(call) = object::<ToolCall<'_>>(call.get()) else {
                    continue;
                };
                let part = Part::ToolArguments {
                    call: whole(call.index).unwrap_or(place),
                };
                let function = call
                    .function
                    .and_then(|raw| object::<Function<'_>>(raw.get()));
                if let Some(function) = function {
                    self.string(function.arguments, index, part);
                }
            }
        }
    }

    fn gemini(&mut self, candidates: Raw<'_>) {
        for (place, candidate) in array(candidates) {
            let Some(candidate) = object::<Candidate<'_>>(candidate.get()) else {
                continue;
            };
            let index = whole(candidate.index).unwrap_or(place);
            let content = candidate
                .content
                .and_then(|raw| object::<Content<'_>>(raw.get()));
            let Some(content) = content else {
                continue;
            };
            for (place, part) in array(content.parts) {
                let Some(part) = object::<GeminiPart<'_>>(part.get()) else {
                    continue;
                };
                let thought = part.thought.is_some_and(|raw| raw.get() == "true");
                let text = if thought { Part::Reasoning } else { Part::Text };
                self.string(part.text, index, text);
                let call = part
                    .function_call
                    .and_then(|raw| object::<FunctionCall<'_>>(raw.get()));
                if let Some(args) = call.and_then(|call| call.args)
                    && args.get().starts_with('{')
                    && let Some(raw) = range_in(self.data, args.get())
                {
                    self.spans.push(DeltaSpan {
                        raw,
                        json: false,
                        choice: index,
                        part: Part::ToolArguments { call: place },
                    });
                }
            }
        }
    }

    fn ollama(&mut self, top: &Top<'_>) {
        if let Some(message) = top
            .message
            .and_then(|raw| object::<OllamaMessage<'_>>(raw.get()))
        {
            self.string(message.content, 0, Part::Text);
            self.string(message.thinking, 0, Part::Reasoning);
        }
        self.string(top.response, 0, Part::Text);
        self.string(top.thinking, 0, Part::Reasoning);
    }
}

/// `text` read as a JSON object of shape `T`, if it is one (an array is
/// not, though serde would read a struct from one).
fn object<'a, T: Deserialize<'a>>(text: &'a str) -> Option<T> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// The elements of `value`, when it is an array, each with its place.
fn array(value: Raw<'_>) -> impl Iterator<Item = (u32, &RawValue)> {
    let elements: Vec<&RawValue> = value
        .filter(|value| value.get().starts_with('['))
        .and_then(|value| serde_json::from_str(value.get()).ok())
        .unwrap_or_default();
    let place = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
    elements
        .into_iter()
        .enumerate()
        .map(move |(at, element)| (place(at), element))
}

/// `value`'s decoded text, when it is a string.
fn text_of(value: &RawValue) -> Option<String> {
    serde_json::from_str(value.get()).ok()
}

/// `value` as a whole number that fits, when it is one.
fn whole(value: Raw<'_>) -> Option<u32> {
    serde_json::from_str(value?.get()).ok()
}

/// Where `part`, a slice of `data`, stands in it.
fn range_in(data: &str, part: &str) -> Option<Range<usize>> {
    // Addresses compared, not dereferenced: `part` was borrowed from
    // `data` by the parser, and the bytes at the range are checked.
    let start = (part.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
    let range = start..start.checked_add(part.len())?;
    (data.get(range.clone()) == Some(part)).then_some(range)
}
