//! [`Delta`]: each piece of generated text, as a predictor joins it.
//!
//! Every engine streams its text in a shape of its own, and a predictor
//! written against one joins `choices[0].delta.content` by hand and misses
//! the rest: the reasoning, the tool calls' arguments, a second choice, or
//! the whole text of another engine. [`AnswerStream::next_delta`]
//! reads the five shapes metered engines use (`shapes.rs`) and yields each
//! piece named by its choice and its part, from the events or lines the
//! parsed readers yield, so concealed as they conceal them.
//!
//! [`AnswerStream::next_delta`]: crate::AnswerStream::next_delta

pub(crate) mod shapes;

use std::collections::VecDeque;

use crate::stream::channels::json_spans::literal_value;
use shapes::delta_spans;

/// One piece of generated text, from
/// [`AnswerStream::next_delta`](crate::AnswerStream::next_delta): its
/// text, concealed, the choice it belongs to, and which part of that
/// choice it is.
///
/// ```
/// use meterwire::{AnswerStream, Part};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut stream = AnswerStream::from_chunks(200, [
///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Sum.\"}}]}\n\n",
///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"4\"}}]}\n\n",
/// ])
/// .with_content_type("text/event-stream");
/// let first = stream.next_delta().await.expect("a delta").expect("not a refusal");
/// assert_eq!((first.choice(), first.part(), first.text()), (0, Part::Reasoning, "Sum."));
/// let second = stream.next_delta().await.expect("a delta").expect("not a refusal");
/// assert_eq!((second.part(), second.text()), (Part::Text, "4"));
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    choice: u32,
    part: Part,
    text: String,
}

/// Which part of a choice a [`Delta`]'s text is.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// The answer's text.
    Text,
    /// The model's reasoning (OpenAI-style `reasoning_content`, the
    /// Responses API's reasoning text and summaries, Anthropic's thinking,
    /// Gemini's thoughts, Ollama's `thinking`).
    Reasoning,
    /// The arguments of a tool call, as JSON text in pieces.
    ToolArguments {
        /// Which call: the tool call's `index` for OpenAI chat, the
        /// content block's `index` for Anthropic, the output item's
        /// `output_index` for the Responses API, the part's place among
        /// the candidate's parts for Gemini.
        call: u32,
    },
}

impl Delta {
    /// The choice (Gemini: the candidate) the text belongs to; 0 where
    /// the engine has one.
    pub fn choice(&self) -> u32 {
        self.choice
    }

    /// Which part of the choice it is.
    pub fn part(&self) -> Part {
        self.part
    }

    /// The text, concealed; never empty.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Text as it arrived, not parsed: a chunk's.
    pub(crate) fn raw(text: String) -> Delta {
        Delta {
            choice: 0,
            part: Part::Text,
            text,
        }
    }

    /// The pieces of text in one event (or line) of type `kind` and data
    /// `data`, concealed, appended to `out`; empty ones left out.
    pub(crate) fn read(kind: &str, data: &str, out: &mut VecDeque<Delta>) {
        for span in delta_spans(kind, data) {
            let Some(raw) = data.get(span.raw) else {
                continue;
            };
            let text = if span.json {
                // Decoded as the channels decoded what they concealed.
                match literal_value(raw) {
                    Some(text) => text,
                    None => continue,
                }
            } else {
                raw.to_owned()
            };
            if !text.is_empty() {
                out.push_back(Delta {
                    choice: span.choice,
                    part: span.part,
                    text,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
