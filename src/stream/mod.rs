//! Streamed answers: every piece as it arrives, concealed across pieces,
//! never billed twice.
//!
//! Engines that generate text stream it (`text/event-stream`, NDJSON), and
//! a predictor wants each piece as it comes. An [`AnswerStream`] keeps
//! every promise a whole answer keeps:
//!
//! - **The same refusals.** Every status of the wire table applies to the
//!   head, and retries apply only until a `2xx` head arrives; from then on
//!   the request is never sent again, whatever happens, because the engine
//!   has begun to bill.
//! - **The same concealment.** The body goes through the concealer piece by
//!   piece; joined, what the stream yields is exactly the concealment of the
//!   whole body, however the network cut it. Only what could still begin
//!   or be inside a form of a secret is held back, never on a timer, and a
//!   complete event is released at once. What a parser joins (an event's
//!   `data` lines) is concealed again, so a form split over two `data:`
//!   lines is caught too; what a predictor joins across events' JSON is
//!   concealed as joined by the parsed readers (`channels/`).
//! - **The same bounds, and three timers.** The send's deadline covers
//!   connect, the head and the first byte; an idle timer (30 s) every gap
//!   between bytes after that (a comment counts as a byte); a stream
//!   deadline (10 min) the whole stream. Each is named in the refusal it
//!   causes. A piece, an event, or a line (a field, a comment) larger than
//!   the answer cap is refused, however the pieces fall.
//! - **Errors inside a `200`.** An SSE event named `error`, or a payload
//!   that is a JSON object with a top-level `error` member, ends the stream
//!   with a refusal whose cause its `type` and `code` name.
//! - **How it ended.** A generation cut short reads like a finished one to
//!   a client that only sees the end, so [`AnswerStream::ending`] says
//!   which end came: `[DONE]`, the body at a boundary, or the body inside
//!   an event (not yielded, counted); a call that asks for `[DONE]` is
//!   refused without it. A refusal after the head carries what any refusal
//!   of a send does: the request id, the attempts and what each came to,
//!   the idempotency key.
//!
//! The caller pulls: nothing is read ahead into a buffer that can grow.

mod body;
pub(crate) mod channels;
pub(crate) mod delta;
mod ending;
mod event;
mod flow;
mod framing;
mod upstream;
mod whole;

use std::collections::VecDeque;
use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::conceal::Shown;
use crate::refusal::Refusal;
use crate::usage::{Streamed, Usage};
use body::EngineBody;
pub(crate) use body::Pieces;
use channels::Carrier;
pub use delta::{Delta, Part};
pub use ending::Ending;
pub use event::Event;
use flow::{Flow, Reader, Source};
use framing::{Chunks, Format, Ndjson, Sse};
pub(crate) use upstream::{Ended, SendRecord, Timers, Upstream};
pub(crate) use whole::{WholeAnswer, error_in_answer};

/// An answer read as it arrives, from [`HttpTransport::stream`](crate::HttpTransport::stream),
/// [`Call::stream`](crate::Call::stream) or [`Transport::stream`](crate::Transport::stream).
///
/// Read the generated text with [`next_delta`](Self::next_delta), which
/// knows the stream shapes of the engines a predictor meets; or read the
/// stream as it is, as its `content_type()` suggests: server-sent events
/// ([`next_event`](Self::next_event)), NDJSON lines
/// ([`next_line`](Self::next_line)), or text as it arrives
/// ([`next_chunk`](Self::next_chunk), also through
/// `futures_core::Stream`). Each yields concealed text, or one refusal,
/// and after a refusal or the end, nothing more.
///
/// ```
/// use meterwire::AnswerStream;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // A fake's stream, cut anywhere: the events are read from the pieces.
/// let mut stream = AnswerStream::from_chunks(200, ["data: hel", "lo\n\nevent: done\nda", "ta: {}\n\n"]);
/// let first = stream.next_event().await.expect("an event").expect("not a refusal");
/// assert_eq!(first.data(), "hello");
/// let second = stream.next_event().await.expect("an event").expect("not a refusal");
/// assert_eq!(second.event(), Some("done"));
/// assert!(stream.next_event().await.is_none());
/// # }
/// ```
pub struct AnswerStream {
    /// The text, its frames and its end, below the readers.
    flow: Flow,
    readers: Readers,
}

/// The parsed readers' state, each made when its reader is first called,
/// and the deltas read and not yet taken.
#[derive(Default)]
struct Readers {
    events: Option<Box<Reader<Sse>>>,
    lines: Option<Box<Reader<Ndjson>>>,
    deltas: VecDeque<Delta>,
}

/// What a stream says of the answer's head.
#[derive(Clone, Debug)]
pub(crate) struct StreamHead {
    pub(crate) status: u16,
    pub(crate) request_id: Option<Shown>,
    pub(crate) content_type: Option<String>,
}

/// Shows what the stream has read so far, never its text.
impl fmt::Debug for AnswerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flow = &self.flow;
        f.debug_struct("AnswerStream")
            .field("status", &flow.head.status)
            .field("request_id", &flow.head.request_id)
            .field("content_type", &flow.head.content_type)
            .field("bytes", &flow.bytes)
            .field("events", &flow.events)
            .field("done", &flow.done)
            .field("ending", &flow.ending)
            .finish()
    }
}

/// What a stream says of the answer's head, kept in a [`StreamHead`] at the
/// path given: written once for this stream and the blocking one, which
/// keeps a copy while the stream itself is away on its runtime.
macro_rules! head {
    ($($path:ident).+) => {
        /// The HTTP status the engine answered, a `2xx`.
        pub fn status(&self) -> u16 {
            self.$($path).+.status
        }

        /// The engine's id for the request, concealed and bounded, when it
        /// sent one.
        pub fn request_id(&self) -> Option<&str> {
            self.$($path).+.request_id.as_deref()
        }

        /// The answer's `content-type`, concealed, when it sent one:
        /// `text/event-stream` for events, `application/x-ndjson` (or
        /// `application/jsonl`) for lines.
        pub fn content_type(&self) -> Option<&str> {
            self.$($path).+.content_type.as_deref()
        }
    };
}
#[cfg(feature = "blocking")]
pub(crate) use head;

impl AnswerStream {
    /// A stream of `chunks`, for a predictor's tests and fakes: its events
    /// and lines are read from those chunks like any others (a chunk may
    /// end anywhere, even inside a line), and an event named `error`, or a
    /// payload with an `error` member, is a refusal as from an engine.
    pub fn from_chunks<I>(status: u16, chunks: I) -> AnswerStream
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let head = StreamHead {
            status,
            request_id: None,
            content_type: None,
        };
        let chunks = chunks.into_iter().map(Into::into).collect();
        AnswerStream::new(Flow::new(head, Source::Chunks(chunks), usize::MAX, None))
    }

    /// What the stream says of the answer's head, for a copy kept apart
    /// from it.
    #[cfg(feature = "blocking")]
    pub(crate) fn head(&self) -> StreamHead {
        self.flow.head.clone()
    }

    fn new(flow: Flow) -> AnswerStream {
        AnswerStream {
            flow,
            readers: Readers::default(),
        }
    }

    /// The stream of a transport's send whose `2xx` head arrived, its body
    /// to come.
    pub(crate) fn opened(
        head: StreamHead,
        body: Pieces,
        timers: Timers,
        ledger: SendRecord,
    ) -> AnswerStream {
        let concealer = ledger.transport.concealer().clone();
        let cap = usize::try_from(ledger.transport.max_answer_bytes()).unwrap_or(usize::MAX);
        let body = EngineBody::new(body, concealer, timers);
        AnswerStream::new(Flow::new(
            head,
            Source::Engine(Box::new(body)),
            cap,
            Some(ledger),
        ))
    }

    /// The same stream, with `id` as the engine's id for the request, as a
    /// real stream has when the engine sent one: for a fake's stream.
    ///
    /// ```
    /// let stream = meterwire::AnswerStream::from_chunks(200, ["data: hi\n\n"])
    ///     .with_request_id("req-7")
    ///     .with_content_type("text/event-stream");
    /// assert_eq!(stream.request_id(), Some("req-7"));
    /// assert_eq!(stream.content_type(), Some("text/event-stream"));
    /// ```
    pub fn with_request_id(mut self, id: impl Into<String>) -> AnswerStream {
        self.flow.head.request_id = Some(Shown::given(id.into()));
        self
    }

    /// The same stream, with `content_type` as its `content-type`, as a
    /// real stream has: for a fake's stream, so that a predictor that picks
    /// its reader by it can be tested.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> AnswerStream {
        self.flow.head.content_type = Some(content_type.into());
        self
    }

    /// The same stream, refusing a body that ends without `[DONE]` as a
    /// real stream of a call that asked for it
    /// ([`Request::expect_done`](crate::Request::expect_done)) does: for a
    /// fake's stream, so that a fake that writes
    /// [`Transport::stream`](crate::Transport::stream) itself honours
    /// [`Request::get_expect_done`](crate::Request::get_expect_done). The
    /// refusal is `engine-unreachable`, after the events that came; a
    /// stream read as chunks, which parses nothing, ends at the body
    /// whatever is asked.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut stream = meterwire::AnswerStream::from_chunks(200, ["data: cut sho"]).expecting_done();
    /// let refusal = stream.next_event().await.expect("the refusal").expect_err("no [DONE]");
    /// assert!(refusal.reason().contains("ended without [DONE]"));
    /// # }
    /// ```
    pub fn expecting_done(mut self) -> AnswerStream {
        self.flow.expect_done = true;
        self
    }

    /// The same stream, with what a fake's whole answer said it billed.
    pub(crate) fn with_usage(mut self, usage: Option<Usage>) -> AnswerStream {
        self.flow.usage = Streamed::given(usage);
        self
    }

    head!(flow.head);

    /// How the stream ended, once a reader has had its last item and the
    /// stream ended cleanly: `[DONE]` arrived, the body ended at an event
    /// or line boundary, or it ended inside an event, whose bytes were not
    /// yielded. `None` before the end, after a refusal (which says why),
    /// and for a stream dropped before its end.
    pub fn ending(&self) -> Option<Ending> {
        self.flow.ending
    }

    /// What the engine billed, as the stream's events and lines said it:
    /// OpenAI's last chunk (with `stream_options.include_usage`), the
    /// Responses API's `response.completed`, Anthropic's `message_start`
    /// then each `message_delta` (cumulative), Gemini's `usageMetadata`,
    /// Ollama's `done: true` line. The last figures win, count by count;
    /// read it after the end. `None` when no event said, and for a stream
    /// read with [`next_chunk`](Self::next_chunk), whose text is not read
    /// as events.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut stream = meterwire::AnswerStream::from_chunks(200, [
    ///     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
    ///     "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n",
    /// ]);
    /// while let Some(event) = stream.next_event().await {
    ///     event.expect("not a refusal");
    /// }
    /// let usage = stream.usage().expect("a usage");
    /// assert_eq!((usage.input(), usage.output()), (Some(25), Some(15)));
    /// # }
    /// ```
    pub fn usage(&self) -> Option<Usage> {
        self.flow.usage.usage()
    }

    /// The next piece of generated text, concealed; `None` at the end.
    ///
    /// The stream is read as its `content-type` says: `text/event-stream`
    /// as events, `application/x-ndjson` or `application/jsonl` as lines,
    /// each read in the stream shapes of OpenAI chat
    /// (`choices[i].delta`: `content`, `reasoning_content`,
    /// `tool_calls[j].function.arguments`), the Responses API
    /// (`response.output_text.delta`, `response.reasoning_text.delta`,
    /// `response.reasoning_summary_text.delta`,
    /// `response.function_call_arguments.delta`), Anthropic
    /// (`content_block_delta`: `text_delta`, `thinking_delta`,
    /// `input_json_delta`), Gemini (`candidates[i].content.parts[j]`:
    /// `text`, `thought: true` for reasoning, `functionCall.args`) and
    /// Ollama (`message.content`, `message.thinking`, `/api/generate`'s
    /// `response` and `thinking`); anything else as chunks of text, each a
    /// [`Part::Text`] delta of choice 0.
    ///
    /// Events that carry no text are read and dropped: their usage and
    /// the stream's end count as for any reader ([`usage`](Self::usage),
    /// [`ending`](Self::ending)), as does an error in one. The Responses
    /// API's `.done` events, which repeat the whole text, yield nothing;
    /// an event whose data is not a JSON object (plain text, or a bare
    /// `42`) is one [`Part::Text`] delta of choice 0; an object of no
    /// known shape yields nothing. A delta whose text
    /// is empty (sent so, or emptied by concealment) is not yielded.
    ///
    /// The text is concealed as the crate joins it: the deltas of a choice
    /// and part, joined, hold no form of a secret an engine split across
    /// events.
    ///
    /// ```
    /// use meterwire::{AnswerStream, Part};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut stream = AnswerStream::from_chunks(200, [
    ///     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n",
    ///     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n",
    ///     "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    /// ])
    /// .with_content_type("text/event-stream");
    /// let mut text = String::new();
    /// while let Some(delta) = stream.next_delta().await {
    ///     let delta = delta.expect("not a refusal");
    ///     if delta.part() == Part::Text {
    ///         text.push_str(delta.text());
    ///     }
    /// }
    /// assert_eq!(text, "Hello");
    /// # }
    /// ```
    pub async fn next_delta(&mut self) -> Option<Result<Delta, Refusal>> {
        poll_fn(|cx| self.poll_delta(cx)).await
    }

    /// The next text that arrived, concealed; `None` at the end. This is
    /// the raw text with the byte-level concealment only: a token an engine
    /// splits across several events' JSON strings is concealed by the
    /// parsed readers, [`next_event`](Self::next_event) and
    /// [`next_line`](Self::next_line), which know where the strings are.
    /// Chunks are never parsed, so no `[DONE]` is looked for: the stream
    /// ends at the end of the body ([`Ending::Body`]), whether or not the
    /// call asked for `[DONE]`.
    pub async fn next_chunk(&mut self) -> Option<Result<String, Refusal>> {
        poll_fn(|cx| self.poll_chunk(cx)).await
    }

    /// The next server-sent event, concealed; `None` at the end, or at an
    /// event whose data is `[DONE]`, which ends the stream cleanly and is
    /// not yielded. An event the end of the body cuts off is not yielded
    /// either, as the standard says; [`ending`](Self::ending) counts it.
    ///
    /// What a predictor joins is concealed as joined. Each string of an
    /// event's data, read as predictors read it, is joined with the same
    /// strings of the events before it, with and without the event types:
    /// by its path with `index` members (OpenAI's choices and tool calls,
    /// Anthropic's content blocks), by its path with array positions
    /// (`choices[0]`), by its keys alone (Gemini's `parts`, a message's
    /// blocks as one text), every occurrence of a repeated key and the last
    /// (as serde_json keeps it); data that is a JSON string as its value,
    /// and data that is no JSON object as text. A string nested deeper than
    /// 64 levels joins nothing, the strings above it still do. A form of a
    /// secret (the token, a token file's current and earlier tokens, the
    /// Redis and proxy passwords) that a join spells across events becomes
    /// one `[redacted]` in the first string it touched, the others losing
    /// their part; every other byte, each event's type and id, and JSON
    /// data's being JSON, stay.
    ///
    /// **What is held.** An event is held back while a join of its strings
    /// ends in what could begin or be inside a form: two or more bytes
    /// that begin one (the secret, its hex, a core of its base64; line
    /// breaks inside them dropped), one such byte after `"`, `'`, a space,
    /// a tab, `=`, `:`, `,`, `(`, `[`, `{`, a backtick or a line break, or
    /// at the start of the join, or a run since the last separator that
    /// holds a `\`, `%` or `&` (an escape may be at work). The events after
    /// it wait with it, in order. **What is not.** One byte that could
    /// begin a form inside a word (`cats`, for a token that starts with
    /// `s`) holds nothing: if the form does go on, that byte stays in the
    /// event already yielded and the rest of the form is concealed.
    ///
    /// **Until when.** A held event is released when later events settle
    /// the join; when the engine closes it (Anthropic's
    /// `content_block_stop` for its block, a choice's `finish_reason`);
    /// when 64 events pass without adding to it (what it held is then
    /// yielded, and a form that resumes after all is concealed from where
    /// it resumes); or at the end of the stream (`[DONE]`, the body's end;
    /// a refusal that ends it comes after). Never on a timer. An event is
    /// limited by the answer cap alone: past 4,096 held events, or past
    /// their bytes' bound (1 MiB, or four times the concealer's reach for
    /// long secrets), the oldest is released rather than the stream
    /// refused.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut stream = meterwire::AnswerStream::from_chunks(200, [
    ///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    ///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n",
    /// ]);
    /// let mut text = String::new();
    /// while let Some(event) = stream.next_event().await {
    ///     let data: serde_json::Value = serde_json::from_str(event.expect("not a refusal").data()).expect("JSON");
    ///     text.push_str(data["choices"][0]["delta"]["content"].as_str().unwrap_or_default());
    /// }
    /// assert_eq!(text, "Hello");
    /// # }
    /// ```
    pub async fn next_event(&mut self) -> Option<Result<Event, Refusal>> {
        poll_fn(|cx| {
            let reader = self
                .readers
                .events
                .get_or_insert_with(|| self.flow.reader());
            self.flow.poll_joined(reader, cx)
        })
        .await
    }

    /// The next NDJSON line, concealed (blank lines skipped); `None` at the
    /// end. A last line with no line break after it is complete at the end
    /// of the body. A line `[DONE]` ends the stream cleanly and is not
    /// yielded, as SSE's does. A line that is a JSON object with a
    /// top-level `error` member
    /// ends the stream with a refusal, as an SSE error does.
    ///
    /// What a predictor joins across lines is concealed as joined, and a
    /// line held back while a join of its strings could still begin or be
    /// inside a form, exactly as [`next_event`](Self::next_event) says
    /// (every line is of one type): held for two or more bytes that begin a
    /// form, one such byte after a separator or at the join's start, or a
    /// run that holds an escape's trigger; not for one byte inside a word;
    /// released when later lines settle it, when the engine closes it, when
    /// 64 lines pass without adding to it, or at the end, never on a timer.
    pub async fn next_line(&mut self) -> Option<Result<String, Refusal>> {
        poll_fn(|cx| {
            let reader = self.readers.lines.get_or_insert_with(|| self.flow.reader());
            self.flow.poll_joined(reader, cx)
        })
        .await
    }

    /// Polls for the next delta: those read and not yet taken first, then
    /// the deltas of the next frame of the stream's format.
    fn poll_delta(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Delta, Refusal>>> {
        loop {
            if let Some(delta) = self.readers.deltas.pop_front() {
                return Poll::Ready(Some(Ok(delta)));
            }
            let readers = &mut self.readers;
            let flow = &mut self.flow;
            let read = match Format::of(flow.head.content_type.as_deref()) {
                Format::Events => {
                    let reader = readers.events.get_or_insert_with(|| flow.reader());
                    ready!(flow.poll_joined(reader, cx)).map(|event| {
                        event.map(|event| {
                            Delta::read(event.kind(), event.data(), &mut readers.deltas)
                        })
                    })
                }
                Format::Lines => {
                    let reader = readers.lines.get_or_insert_with(|| flow.reader());
                    ready!(flow.poll_joined(reader, cx)).map(|line| {
                        line.map(|line| Delta::read(line.kind(), line.data(), &mut readers.deltas))
                    })
                }
                Format::Chunks => ready!(flow.poll_frame(&mut Chunks, cx))
                    .map(|chunk| chunk.map(|chunk| readers.deltas.push_back(Delta::raw(chunk)))),
            };
            match read {
                Some(Ok(())) => {}
                Some(Err(refusal)) => return Poll::Ready(Some(Err(refusal))),
                None => return Poll::Ready(None),
            }
        }
    }

    /// Polls for the next text a reader of chunks takes.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<String, Refusal>>> {
        self.flow.poll_frame(&mut Chunks, cx)
    }
}

/// The stream's text as it arrives, each item as [`AnswerStream::next_chunk`]
/// yields it.
impl futures_core::Stream for AnswerStream {
    type Item = Result<String, Refusal>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_chunk(cx)
    }
}
