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
//!   lines is caught too. A token an engine splits across several events'
//!   JSON payloads, each fragment shorter than any form, is out of a
//!   byte-level concealer's reach.
//! - **The same bounds, and three timers.** The send's deadline covers
//!   connect, the head and the first byte; an idle timer (30 s) every gap
//!   between bytes after that (a comment counts as a byte); a stream
//!   deadline (10 min) the whole stream. Each is named in the refusal it
//!   causes. A piece, event or line larger than the answer cap is refused.
//! - **Errors inside a `200`.** An SSE event named `error`, or a payload
//!   that is a JSON object with a top-level `error` member, ends the stream
//!   with a refusal whose cause its `type` and `code` name.
//!
//! The caller pulls: nothing is read ahead into a buffer that can grow.

mod sse;
mod upstream;

use std::collections::VecDeque;
use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

use crate::conceal::Concealer;
use crate::conceal::stream::ConcealStream;
use crate::refusal::Refusal;
use crate::refusal::evidence::words::{engine_code, engine_words, stream_error};
use crate::refusal::failure::{Answered, Failure, refusal_after_head};
use crate::refusal::stream::{StreamError, Timer, in_stream_error, timed_out};
use crate::transport::reply::{Opened, Pieces};
use crate::transport::utf8::Utf8Pieces;
use sse::{Gathered, Lines};
pub(crate) use upstream::{Ending, Timers, Upstream};

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
    /// How the stream is metered and traced when it ends; `None` for a
    /// fake's, or once it has been.
    ending: Option<Ending>,
    pub(crate) usage: crate::usage::Streamed,
}

/// Where the text comes from.
enum Source {
    /// An engine's body.
    Wire(Box<Wire>),
    /// A fake's pieces.
    Chunks(VecDeque<String>),
}

/// An engine's body, and what reads it.
struct Wire {
    /// Only ever reached through `&mut` (`Mutex::get_mut`, which never
    /// locks): the mutex makes the stream `Sync` though the body is not.
    body: std::sync::Mutex<Pieces>,
    characters: Utf8Pieces,
    concealing: ConcealStream,
    concealer: Concealer,
    timers: Timers,
    sleep: Pin<Box<Sleep>>,
    /// The instant `sleep` is set for.
    armed: Option<Instant>,
    /// When the last byte arrived.
    last_byte: Option<Instant>,
}

/// What one more read of the body came to.
enum More {
    /// Text was released (perhaps none: the concealer holds it).
    Text,
    /// The body ended cleanly.
    End,
    /// The stream is refused.
    Refused(Refusal),
}

/// One server-sent event: its type, its data (multi-line data joined with
/// `\n`) and its id, each concealed.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut stream = meterwire::AnswerStream::from_chunks(200, ["event: delta\nid: 7\ndata: a\ndata: b\n\n"]);
/// let event = stream.next_event().await.expect("an event").expect("not a refusal");
/// assert_eq!(event.event(), Some("delta"));
/// assert_eq!(event.data(), "a\nb");
/// assert_eq!(event.id(), Some("7"));
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    event: Option<String>,
    data: String,
    id: Option<String>,
}

impl Event {
    /// The event's type, when it carried an `event` field (a reader takes
    /// none for `message`).
    pub fn event(&self) -> Option<&str> {
        self.event.as_deref()
    }

    /// The event's data, its lines joined with `\n`.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// The `id` field this event carried (none carried forward from an
    /// earlier one).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
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
            .finish()
    }
}

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
        ending: Option<Ending>,
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
            bom_checked: false,
            ended: false,
            done: false,
            bytes: 0,
            events: None,
            cap,
            ending,
            usage: Default::default(),
        }
    }

    /// The stream of a transport's send whose `2xx` head arrived.
    pub(crate) fn opened(opened: Opened, timers: Timers, ending: Ending) -> AnswerStream {
        let concealer = ending.transport.concealer().clone();
        let cap = usize::try_from(ending.transport.max_answer_bytes()).unwrap_or(usize::MAX);
        let wire = Wire {
            body: std::sync::Mutex::new(opened.body),
            characters: Utf8Pieces::default(),
            concealing: concealer.stream(),
            concealer,
            timers,
            sleep: Box::pin(tokio::time::sleep_until(timers.first_byte)),
            armed: Some(timers.first_byte),
            last_byte: None,
        };
        AnswerStream::new(
            opened.status,
            opened.request_id,
            opened.content_type,
            Source::Wire(Box::new(wire)),
            cap,
            Some(ending),
        )
    }

    /// The same stream, with the engine's id for the request.
    pub(crate) fn with_request_id(mut self, id: Option<String>) -> AnswerStream {
        self.request_id = id;
        self
    }

    /// The HTTP status the engine answered, a `2xx`.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The engine's id for the request, concealed and bounded, when it sent
    /// one.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The answer's `content-type`, concealed, when it sent one:
    /// `text/event-stream` for events, `application/x-ndjson` (or
    /// `application/jsonl`) for lines.
    pub fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    /// The next text that arrived, concealed; `None` at the end.
    pub async fn next_chunk(&mut self) -> Option<Result<String, Refusal>> {
        poll_fn(|cx| self.poll_chunk(cx)).await
    }

    /// The next server-sent event, concealed; `None` at the end, or at an
    /// event whose data is `[DONE]`, which ends the stream cleanly and is
    /// not yielded.
    pub async fn next_event(&mut self) -> Option<Result<Event, Refusal>> {
        self.events.get_or_insert(0);
        if self.done {
            return None;
        }
        loop {
            while let Some(line) = self.take_line() {
                if !line.is_empty() {
                    self.event.field(&line);
                    if self.event.data.len() > self.cap {
                        return Some(Err(self.refuse_failure(Failure::PieceTooLarge {
                            what: "event",
                            cap: self.cap_u64(),
                        })));
                    }
                    continue;
                }
                let Some(gathered) = self.event.dispatch() else {
                    continue;
                };
                return self.dispatched(gathered);
            }
            if let Some(refusal) = self.line_over_cap() {
                return Some(Err(refusal));
            }
            // An event cut off by the end of the body is dropped, as the
            // standard says.
            if let Err(refusal) = self.more().await? {
                return Some(Err(refusal));
            }
        }
    }

    /// The next NDJSON line, concealed (blank lines skipped); `None` at the
    /// end. A line that is a JSON object with a top-level `error` member
    /// ends the stream with a refusal, as an SSE error does.
    pub async fn next_line(&mut self) -> Option<Result<String, Refusal>> {
        if self.done {
            return None;
        }
        loop {
            while let Some(line) = self.take_line() {
                if line.trim().is_empty() {
                    continue;
                }
                if let Some(refusal) = self.error_in(None, &line) {
                    return Some(Err(refusal));
                }
                return Some(Ok(line));
            }
            if let Some(refusal) = self.line_over_cap() {
                return Some(Err(refusal));
            }
            if self.ended {
                // The last line may end without a line end.
                let rest = self.text[self.taken..].to_owned();
                self.taken = self.text.len();
                // An error there is a refusal, read while the site is known.
                if !rest.trim().is_empty()
                    && let Some(refusal) = self.error_in(None, &rest)
                {
                    return Some(Err(refusal));
                }
                self.finish(None);
                if rest.trim().is_empty() {
                    return None;
                }
                return Some(Ok(rest));
            }
            if let Err(refusal) = self.more().await? {
                return Some(Err(refusal));
            }
        }
    }

    /// Reads more of the body into `text`: `None` once it has ended and
    /// nothing is left (the stream is finished), `Some(Err)` for a refusal.
    async fn more(&mut self) -> Option<Result<(), Refusal>> {
        if self.ended {
            self.finish(None);
            return None;
        }
        match poll_fn(|cx| self.poll_more(cx)).await {
            More::Text => Some(Ok(())),
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

    /// The next complete line of released text, if one has arrived. A
    /// byte-order mark that starts the stream is dropped, as the standard
    /// says.
    fn take_line(&mut self) -> Option<String> {
        if !self.bom_checked && !self.text.is_empty() {
            self.bom_checked = true;
            if self.text[self.taken..].starts_with('\u{feff}') {
                self.taken += '\u{feff}'.len_utf8();
            }
        }
        let line = self.lines.next(&self.text, &mut self.taken)?.to_owned();
        // Text taken is dropped now and then: linear, and bounded by what
        // is not yet read.
        if self.taken > 4096 && self.taken * 2 > self.text.len() {
            self.text.drain(..self.taken);
            self.taken = 0;
        }
        Some(line)
    }

    /// A refusal when the line being read is already larger than the cap.
    fn line_over_cap(&mut self) -> Option<Refusal> {
        (self.text.len() - self.taken > self.cap).then(|| {
            self.refuse_failure(Failure::PieceTooLarge {
                what: "line",
                cap: self.cap_u64(),
            })
        })
    }

    fn cap_u64(&self) -> u64 {
        u64::try_from(self.cap).unwrap_or(u64::MAX)
    }

    /// What a dispatched event comes to: yielded, the clean end at
    /// `[DONE]` (`None`, the stream finished), or a refusal for an error.
    fn dispatched(&mut self, gathered: Gathered) -> Option<Result<Event, Refusal>> {
        // What the parser joined is concealed again: a form split over two
        // `data:` lines is a form broken by one line break.
        let data = match &self.source {
            Source::Wire(wire) => wire.concealer.conceal(&gathered.data).into_owned(),
            Source::Chunks(_) => gathered.data,
        };
        if data.trim() == "[DONE]" {
            self.finish(None);
            return None;
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

    /// The refusal an error inside the stream makes: an event named
    /// `error`, or a payload that is a JSON object with an `error` member.
    fn error_in(&mut self, event: Option<&str>, payload: &str) -> Option<Refusal> {
        self.usage.read(event, payload, self.ending.as_mut()); // every event and line comes here
        let codes = stream_error(payload);
        if event != Some("error") && codes.is_none() {
            return None;
        }
        let empty = Concealer::new([]);
        let concealer = match &self.source {
            Source::Wire(wire) => &wire.concealer,
            Source::Chunks(_) => &empty,
        };
        let bounded = |value: Option<String>| {
            value
                .map(|value| engine_code(&value, concealer))
                .filter(|value| !value.is_empty())
        };
        let (kind, code) = codes.unwrap_or_default();
        let error = StreamError {
            kind: bounded(kind),
            code: bounded(code),
            words: engine_words(payload, concealer),
        };
        let site = self.ending.as_ref().map(|ending| &ending.site);
        let refusal = in_stream_error(site, self.answered(), &error);
        let refusal = self.with_attempts(refusal);
        self.finish(Some(&refusal));
        Some(refusal)
    }

    /// How far the stream got, for a refusal.
    fn answered(&self) -> Answered {
        Answered {
            status: self.status,
            bytes: self.bytes,
            events: self.events,
        }
    }

    fn with_attempts(&self, refusal: Refusal) -> Refusal {
        match &self.ending {
            Some(ending) => refusal.with_attempts(ending.attempts),
            None => refusal,
        }
    }

    /// The refusal of a failure after the head, and the stream finished.
    fn refuse_failure(&mut self, failure: Failure) -> Refusal {
        let refusal = match self.ending.as_ref() {
            Some(ending) => refusal_after_head(&ending.site, &failure, self.answered()),
            None => scripted_refusal(),
        };
        let refusal = self.with_attempts(refusal);
        self.finish(Some(&refusal));
        refusal
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

    /// Polls the body for its next piece, under the three timers.
    fn poll_more(&mut self, cx: &mut Context<'_>) -> Poll<More> {
        if self.done {
            return Poll::Ready(More::End);
        }
        let wire = match &mut self.source {
            Source::Chunks(chunks) => {
                return Poll::Ready(match chunks.pop_front() {
                    Some(chunk) => {
                        self.bytes = self
                            .bytes
                            .saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
                        self.text.push_str(&chunk);
                        More::Text
                    }
                    None => More::End,
                });
            }
            Source::Wire(wire) => wire,
        };
        let (limit, timer) = match wire.last_byte {
            None => (
                wire.timers.first_byte,
                Timer::FirstByte {
                    ms: wire.timers.first_byte_ms,
                },
            ),
            Some(last) => (
                crate::clock::later(last, wire.timers.idle),
                Timer::Idle {
                    ms: u64::try_from(wire.timers.idle.as_millis()).unwrap_or(u64::MAX),
                },
            ),
        };
        let (limit, timer) = if wire.timers.end < limit {
            (
                wire.timers.end,
                Timer::Whole {
                    ms: wire.timers.end_ms,
                },
            )
        } else {
            (limit, timer)
        };
        if wire.armed != Some(limit) {
            wire.sleep.as_mut().reset(limit);
            wire.armed = Some(limit);
        }
        let body = wire
            .body
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match body.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(piece))) => {
                let now = Instant::now();
                if wire.last_byte.is_none()
                    && let Some(ending) = &self.ending
                {
                    let after = now.saturating_duration_since(ending.started);
                    ending.transport.first_byte_after(after);
                    ending.span.record(
                        "first_byte_ms",
                        u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                    );
                }
                wire.last_byte = Some(now);
                let length = u64::try_from(piece.len()).unwrap_or(u64::MAX);
                self.bytes = self.bytes.saturating_add(length);
                if let Some(ending) = &self.ending {
                    ending.transport.received(piece.len());
                }
                if piece.len() > self.cap {
                    let cap = self.cap_u64();
                    return Poll::Ready(More::Refused(
                        self.refusal_of(Failure::PieceTooLarge { what: "piece", cap }),
                    ));
                }
                let Source::Wire(wire) = &mut self.source else {
                    return Poll::Ready(More::End);
                };
                let text = &mut self.text;
                let concealing = &mut wire.concealing;
                let decoded = wire
                    .characters
                    .push(&piece, |part| concealing.push(part, text));
                Poll::Ready(match decoded {
                    Ok(()) => More::Text,
                    Err(_) => More::Refused(self.refusal_of(Failure::AnswerNotUtf8)),
                })
            }
            Poll::Ready(Some(Err(failure))) => Poll::Ready(More::Refused(self.refusal_of(failure))),
            Poll::Ready(None) => {
                if wire.characters.finish().is_err() {
                    return Poll::Ready(More::Refused(self.refusal_of(Failure::AnswerNotUtf8)));
                }
                wire.concealing.finish(&mut self.text);
                Poll::Ready(More::End)
            }
            Poll::Pending => match wire.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let site = self.ending.as_ref().map(|ending| &ending.site);
                    let refusal = timed_out(site, timer, self.answered());
                    Poll::Ready(More::Refused(self.with_attempts(refusal)))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    /// The refusal of a failure after the head, not yet finished.
    fn refusal_of(&self, failure: Failure) -> Refusal {
        let refusal = match self.ending.as_ref() {
            Some(ending) => refusal_after_head(&ending.site, &failure, self.answered()),
            None => scripted_refusal(),
        };
        self.with_attempts(refusal)
    }

    /// Nothing more is yielded; the send is metered and traced once: an
    /// answer, or the refusal it ended in.
    fn finish(&mut self, refusal: Option<&Refusal>) {
        self.done = true;
        self.text = String::new();
        self.taken = 0;
        if let Some(ending) = self.ending.take() {
            ending.record(
                refusal,
                self.status,
                self.request_id.as_deref(),
                self.bytes,
                self.events,
            );
        }
    }
}

/// A failure in a fake's stream, which names no engine.
fn scripted_refusal() -> Refusal {
    Refusal::new(
        crate::refusal::Cause::EngineUnreachable,
        "the scripted stream holds a piece, event or line over the cap",
        "a scripted stream refused; the engine's address is read from CHANT_BEHAVIOUR_ENGINE by default",
        None,
    )
}

/// A stream its reader drops before the end counts as an answer: the
/// engine answered, and the reader chose to stop.
impl Drop for AnswerStream {
    fn drop(&mut self) {
        if let Some(ending) = self.ending.take() {
            ending.record(
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
