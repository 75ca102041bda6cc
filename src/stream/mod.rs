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

pub(crate) mod channels;
mod ending;
mod event;
mod sse;
mod upstream;
mod whole;
mod wire;

use std::collections::VecDeque;
use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::conceal::Concealer;
use crate::refusal::Refusal;
use crate::transport::reply::Opened;
pub use ending::Ending;
pub use event::Event;
use sse::{Gathered, Lines};
pub(crate) use upstream::{Sent, Timers, Upstream};
pub(crate) use whole::error_in_answer;
use wire::{More, Wire};

/// An answer read as it arrives, from [`HttpTransport::stream`](crate::HttpTransport::stream),
/// [`Call::stream`](crate::Call::stream) or [`Transport::stream`](crate::Transport::stream).
///
/// Read it in one of three ways, as its `content_type()` suggests: text as
/// it arrives ([`next_chunk`](Self::next_chunk), also through
/// `futures_core::Stream`), server-sent events
/// ([`next_event`](Self::next_event)), or NDJSON lines
/// ([`next_line`](Self::next_line)). Each yields concealed text, or one
/// refusal, and after a refusal or the end, nothing more.
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
    status: u16,
    request_id: Option<String>,
    content_type: Option<String>,
    source: Source,
    /// Released text no reader has taken yet, from `taken` on.
    text: String,
    taken: usize,
    lines: Lines,
    event: Gathered,
    /// The bytes of the event being read, since the parser was last
    /// between events: what an end of the body there cuts off.
    pending: u64,
    /// Whether the start of the text was looked at for a byte-order mark.
    bom_checked: bool,
    /// The body has ended (cleanly): what is in `text` is the last of it.
    ended: bool,
    /// Nothing more will be yielded.
    done: bool,
    bytes: u64,
    /// Events dispatched so far, once events are read.
    events: Option<u64>,
    cap: usize,
    /// A clean end without `[DONE]` is a refusal.
    expect_done: bool,
    /// How the stream ended, once it ended cleanly.
    how: Option<Ending>,
    /// The send the stream came from, metered and traced when it ends;
    /// `None` for a fake's, or once it has been.
    sent: Option<Sent>,
    /// What the parsed readers join (`channels/`).
    joining: channels::Joining,
    pub(crate) usage: crate::usage::Streamed,
}

/// Where the text comes from.
enum Source {
    /// An engine's body.
    Wire(Box<Wire>),
    /// A fake's pieces.
    Chunks(VecDeque<String>),
}

/// Shows what the stream has read so far, never its text.
impl fmt::Debug for AnswerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnswerStream")
            .field("status", &self.status)
            .field("request_id", &self.request_id)
            .field("content_type", &self.content_type)
            .field("bytes", &self.bytes)
            .field("events", &self.events)
            .field("done", &self.done)
            .field("ending", &self.how)
            .finish()
    }
}

/// What a stream says of the answer's head, kept in fields of these names:
/// written once for this stream and the blocking one, which keeps a copy
/// while the stream itself is away on its runtime.
macro_rules! head {
    () => {
        /// The HTTP status the engine answered, a `2xx`.
        pub fn status(&self) -> u16 {
            self.status
        }

        /// The engine's id for the request, concealed and bounded, when it
        /// sent one.
        pub fn request_id(&self) -> Option<&str> {
            self.request_id.as_deref()
        }

        /// The answer's `content-type`, concealed, when it sent one:
        /// `text/event-stream` for events, `application/x-ndjson` (or
        /// `application/jsonl`) for lines.
        pub fn content_type(&self) -> Option<&str> {
            self.content_type.as_deref()
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
        let chunks = chunks.into_iter().map(Into::into).collect();
        AnswerStream::new(status, None, None, Source::Chunks(chunks), usize::MAX, None)
    }

    fn new(
        status: u16,
        request_id: Option<String>,
        content_type: Option<String>,
        source: Source,
        cap: usize,
        sent: Option<Sent>,
    ) -> AnswerStream {
        AnswerStream {
            status,
            request_id,
            content_type,
            source,
            text: String::new(),
            taken: 0,
            lines: Lines::default(),
            event: Gathered::default(),
            pending: 0,
            bom_checked: false,
            ended: false,
            done: false,
            bytes: 0,
            events: None,
            cap,
            expect_done: false,
            how: None,
            sent,
            joining: channels::Joining::default(),
            usage: Default::default(),
        }
    }

    /// The stream of a transport's send whose `2xx` head arrived.
    pub(crate) fn opened(opened: Opened, timers: Timers, sent: Sent) -> AnswerStream {
        let concealer = sent.transport.concealer().clone();
        let cap = usize::try_from(sent.transport.max_answer_bytes()).unwrap_or(usize::MAX);
        let wire = Wire::new(opened.body, concealer, timers);
        AnswerStream::new(
            opened.status,
            opened.request_id,
            opened.content_type,
            Source::Wire(Box::new(wire)),
            cap,
            Some(sent),
        )
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
        self.request_id = Some(id.into());
        self
    }

    /// The same stream, with `content_type` as its `content-type`, as a
    /// real stream has: for a fake's stream, so that a predictor that picks
    /// its reader by it can be tested.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> AnswerStream {
        self.content_type = Some(content_type.into());
        self
    }

    /// The same stream, refusing a clean end without `[DONE]`.
    pub(crate) fn expecting_done(mut self, expect: bool) -> AnswerStream {
        self.expect_done = expect;
        self
    }

    head!();

    /// How the stream ended, once a reader has had its last item and the
    /// stream ended cleanly: `[DONE]` arrived, the body ended at an event
    /// or line boundary, or it ended inside an event, whose bytes were not
    /// yielded. `None` before the end, after a refusal (which says why),
    /// and for a stream dropped before its end.
    pub fn ending(&self) -> Option<Ending> {
        self.how
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

    /// The next event as the parser dispatches it, before its channels
    /// (`channels/`); `None` at the end, or at `[DONE]` (not yielded).
    async fn read_event(&mut self) -> Option<Result<Event, Refusal>> {
        self.events.get_or_insert(0);
        if self.done {
            return None;
        }
        loop {
            while let Some((line, used)) = self.take_line() {
                if line.len() > self.cap {
                    return Some(Err(self.over_cap("line")));
                }
                if line.is_empty() {
                    self.pending = 0;
                    let Some(gathered) = self.event.dispatch() else {
                        continue;
                    };
                    return self.dispatched(gathered);
                }
                // A comment between events is no part of one.
                if !(line.starts_with(':') && self.pending == 0) {
                    self.pending = self.pending.saturating_add(used as u64);
                }
                self.event.field(&line);
                if self.event.size() > self.cap {
                    return Some(Err(self.over_cap("event")));
                }
            }
            if self.rest() > self.cap {
                return Some(Err(self.over_cap("line")));
            }
            if self.ended {
                let cut = self.pending.saturating_add(self.rest() as u64);
                return self.end(Ending::at_end(cut)).map(Err);
            }
            if let Err(refusal) = self.more().await? {
                return Some(Err(refusal));
            }
        }
    }

    /// The next NDJSON line as it was read (blank lines skipped), before
    /// its channels; `None` at the end. An `error` member is a refusal.
    async fn read_line(&mut self) -> Option<Result<String, Refusal>> {
        if self.done {
            return None;
        }
        loop {
            while let Some((line, _)) = self.take_line() {
                if line.len() > self.cap {
                    return Some(Err(self.over_cap("line")));
                }
                if let Some(line) = self.line_read(line) {
                    return line;
                }
            }
            if self.rest() > self.cap {
                return Some(Err(self.over_cap("line")));
            }
            if self.ended {
                let rest = self.text[self.taken..].to_owned();
                self.taken = self.text.len();
                if let Some(line) = self.line_read(rest) {
                    return line;
                }
                return self.end(Ending::Body).map(Err);
            }
            if let Err(refusal) = self.more().await? {
                return Some(Err(refusal));
            }
        }
    }

    /// What one complete NDJSON line comes to: nothing for a blank one,
    /// the end at `[DONE]`, a refusal for an error, else the line.
    fn line_read(&mut self, line: String) -> Option<Option<Result<String, Refusal>>> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return None;
        }
        if trimmed == "[DONE]" {
            return Some(self.end(Ending::Done).map(Err));
        }
        if let Some(refusal) = self.error_in(None, &line) {
            return Some(Some(Err(refusal)));
        }
        Some(Some(Ok(line)))
    }

    /// Reads more of the body into `text`: `None` once the stream has
    /// finished, `Some(Err)` for a refusal.
    async fn more(&mut self) -> Option<Result<(), Refusal>> {
        match poll_fn(|cx| self.poll_more(cx)).await {
            More::Text => Some(Ok(())),
            More::End if self.done => None,
            More::End => {
                self.ended = true;
                Some(Ok(()))
            }
            More::Refused(refusal) => {
                self.finish(Some(&refusal));
                Some(Err(refusal))
            }
        }
    }

    /// The next complete line of released text, if one has arrived, and
    /// the bytes it took. A byte-order mark that starts the stream is
    /// dropped, as the standard says.
    fn take_line(&mut self) -> Option<(String, usize)> {
        if !self.bom_checked && !self.text.is_empty() {
            self.bom_checked = true;
            if self.text[self.taken..].starts_with('\u{feff}') {
                self.taken += '\u{feff}'.len_utf8();
            }
        }
        let (line, used) = self.lines.next(&self.text, &mut self.taken)?;
        let line = line.to_owned();
        // Text taken is dropped now and then: linear, and bounded by what
        // is not yet read.
        if self.taken > 4096 && self.taken * 2 > self.text.len() {
            self.text.drain(..self.taken);
            self.taken = 0;
        }
        Some((line, used))
    }

    /// The bytes of the line being read, which has not ended yet.
    fn rest(&self) -> usize {
        self.text.len() - self.taken
    }

    /// The concealer of an engine's stream (a fake's has none).
    fn concealer(&self) -> Option<&Concealer> {
        match &self.source {
            Source::Wire(wire) => Some(&wire.concealer),
            Source::Chunks(_) => None,
        }
    }

    /// What a dispatched event comes to: yielded, the clean end at
    /// `[DONE]` (`None`, the stream finished), or a refusal for an error.
    fn dispatched(&mut self, gathered: Gathered) -> Option<Result<Event, Refusal>> {
        // What the parser joined is concealed again: a form split over two
        // `data:` lines is a form broken by one line break.
        let data = match self.concealer() {
            Some(concealer) => concealer.conceal(&gathered.data).into_owned(),
            None => gathered.data,
        };
        if data.trim() == "[DONE]" {
            return self.end(Ending::Done).map(Err);
        }
        if let Some(refusal) = self.error_in(gathered.event.as_deref(), &data) {
            return Some(Err(refusal));
        }
        if let Some(events) = self.events.as_mut() {
            *events = events.saturating_add(1);
        }
        Some(Ok(Event {
            event: gathered.event,
            data,
            id: gathered.id,
        }))
    }

    /// Polls for the next text a reader of chunks takes.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<String, Refusal>>> {
        loop {
            if self.taken < self.text.len() {
                let chunk = self.text[self.taken..].to_owned();
                self.text.clear();
                self.taken = 0;
                return Poll::Ready(Some(Ok(chunk)));
            }
            if self.done {
                return Poll::Ready(None);
            }
            if self.ended {
                // Raw text has no `[DONE]` to look for: the end of the
                // body is the end.
                self.how = Some(Ending::Body);
                self.finish(None);
                return Poll::Ready(None);
            }
            match self.poll_more(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(More::Text) => {}
                Poll::Ready(More::End) => self.ended = true,
                Poll::Ready(More::Refused(refusal)) => {
                    self.finish(Some(&refusal));
                    return Poll::Ready(Some(Err(refusal)));
                }
            }
        }
    }
}

/// A stream its reader drops before the end counts as an answer: the
/// engine answered, and the reader chose to stop.
impl Drop for AnswerStream {
    fn drop(&mut self) {
        if let Some(sent) = self.sent.take() {
            sent.record(
                None,
                self.status,
                self.request_id.as_deref(),
                self.bytes,
                self.events,
            );
        }
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
