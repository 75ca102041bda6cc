//! What the engine billed: the token counts a metered engine writes in its
//! answer, read from the concealed text in every engine's shape, summed by
//! the meter and recorded on the send's span.
//!
//! | engine | where | read |
//! |---|---|---|
//! | OpenAI chat / completions | `usage` (a stream's last chunk, with `stream_options.include_usage`) | `prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens` |
//! | OpenAI Responses | `usage` (a stream's `response.completed`) | `input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`, `output_tokens_details.reasoning_tokens` |
//! | Anthropic | `usage` (a stream's `message_start`, then each `message_delta`, cumulative) | `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`, `output_tokens`, `cache_read_input_tokens` |
//! | Gemini | `usageMetadata` | `promptTokenCount`, `candidatesTokenCount` + `thoughtsTokenCount`, `cachedContentTokenCount`, `thoughtsTokenCount` |
//! | Ollama | top level (a stream's `done: true` line) | `prompt_eval_count`, `eval_count` |
//!
//! Reading never fails a send and never slows one: `read` says how little
//! of a text it looks at.

mod read;
mod streamed;
mod totals;

pub(crate) use streamed::Streamed;
pub(crate) use totals::{Sums, Totals};

use serde::Serialize;
use serde::ser::SerializeMap;

/// What the engine billed for one answer, as it said in the answer: token
/// counts in one meaning across engines. Each count stands alone: one the
/// engine left out, or wrote as anything but a whole number from 0 to
/// 2^53, is `None`, and the others are kept.
///
/// - `input`: every input token the request was billed for (OpenAI's
///   `prompt_tokens`; Anthropic's `input_tokens` with its cache reads and
///   writes; Gemini's `promptTokenCount`; Ollama's `prompt_eval_count`);
/// - `cached`: the part of `input` read from a cache;
/// - `output`: every output token (Gemini's candidates and thoughts
///   together; Ollama's `eval_count`);
/// - `reasoning`: the part of `output` spent thinking.
///
/// It serializes as the probe prints it, in camelCase, the counts it lacks
/// left out and its total added: `{"input": 12, "output": 30, "total": 42}`.
///
/// ```
/// use meterwire::{Answer, Usage};
///
/// // A fake's answer, billed 12 tokens in and 30 out.
/// let answer = Answer::new(200, "{}").with_usage(Usage::new().with_input(12).with_output(30));
/// let usage = answer.usage().expect("a usage");
/// assert_eq!((usage.input(), usage.output(), usage.cached()), (Some(12), Some(30), None));
/// assert_eq!(usage.total(), Some(42));
/// assert_eq!(serde_json::to_string(&usage)?, r#"{"input":12,"output":30,"total":42}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    input: Option<u64>,
    output: Option<u64>,
    cached: Option<u64>,
    reasoning: Option<u64>,
}

impl Usage {
    /// A usage with no count yet, for a fake to fill with the `with_`
    /// methods. A usage with none is no usage:
    /// [`Answer::with_usage`](crate::Answer::with_usage) takes it as none.
    pub fn new() -> Usage {
        Usage::default()
    }

    /// The same usage, with `input` tokens in.
    pub fn with_input(mut self, input: u64) -> Usage {
        self.input = Some(input);
        self
    }

    /// The same usage, with `output` tokens out.
    pub fn with_output(mut self, output: u64) -> Usage {
        self.output = Some(output);
        self
    }

    /// The same usage, `cached` of its input tokens read from a cache.
    pub fn with_cached(mut self, cached: u64) -> Usage {
        self.cached = Some(cached);
        self
    }

    /// The same usage, `reasoning` of its output tokens spent thinking.
    pub fn with_reasoning(mut self, reasoning: u64) -> Usage {
        self.reasoning = Some(reasoning);
        self
    }

    /// Every input token the request was billed for, cached ones included.
    pub fn input(&self) -> Option<u64> {
        self.input
    }

    /// Every output token, reasoning ones included.
    pub fn output(&self) -> Option<u64> {
        self.output
    }

    /// The part of the input read from a cache.
    pub fn cached(&self) -> Option<u64> {
        self.cached
    }

    /// The part of the output spent thinking.
    pub fn reasoning(&self) -> Option<u64> {
        self.reasoning
    }

    /// `input + output`; `None` when either is unknown (a total missing a
    /// part would be a smaller bill than the engine's), or past `u64`.
    pub fn total(&self) -> Option<u64> {
        self.input?.checked_add(self.output?)
    }

    /// `Some` only when it holds a count.
    pub(crate) fn some(self) -> Option<Usage> {
        (self != Usage::default()).then_some(self)
    }
}

impl From<read::Figures> for Usage {
    fn from(figures: read::Figures) -> Usage {
        Usage {
            input: figures.input,
            output: figures.output,
            cached: figures.cached,
            reasoning: figures.reasoning,
        }
    }
}

/// The counts it has, in camelCase, and `total` when it has one.
impl Serialize for Usage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = [
            ("input", self.input),
            ("output", self.output),
            ("cached", self.cached),
            ("reasoning", self.reasoning),
            ("total", self.total()),
        ];
        let mut map = serializer.serialize_map(Some(fields.iter().flat_map(|f| f.1).count()))?;
        for (name, value) in fields {
            if let Some(value) = value {
                map.serialize_entry(name, &value)?;
            }
        }
        map.end()
    }
}

/// What a whole answer's concealed text says was billed.
pub(crate) fn whole(text: &str) -> Option<Usage> {
    read::read(text.as_bytes())?.figures().map(Usage::from)
}

#[cfg(test)]
mod tests;
