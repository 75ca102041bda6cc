//! A streamed answer for a program with no async runtime: each piece is
//! read on the transport's background runtime while the caller waits,
//! parked, as a send is.
//!
//! The async stream moves to the runtime for each read and comes back with
//! its item, so its body, its timers and its concealer are only ever
//! driven there; nothing is read ahead (the caller pulls, as from the
//! async stream).

use std::fmt;
use std::sync::Arc;

use super::{Background, wait};
use crate::refusal::Refusal;
use crate::stream::{Delta, Ending, Event, StreamHead};
use crate::usage::Usage;

/// An answer read as it arrives, from
/// [`blocking::HttpTransport::stream`](super::HttpTransport::stream): the
/// async [`AnswerStream`](crate::AnswerStream)'s readers, each waiting
/// for its item, and an iterator over each
/// ([`deltas`](Self::deltas), [`events`](Self::events),
/// [`lines`](Self::lines), [`chunks`](Self::chunks); the stream itself
/// iterates its chunks).
///
/// Read it on a thread that is not driving an async runtime, as every
/// blocking call is made. After a refusal or the end, nothing more.
pub struct AnswerStream {
    /// `None` while a read is on the runtime, and for good if that read
    /// panicked (the stream then ends, with no ending).
    stream: Option<crate::AnswerStream>,
    head: StreamHead,
    runtime: Arc<Background>,
}

/// Which reader a read uses.
#[derive(Clone, Copy)]
enum Reader {
    Deltas,
    Events,
    Lines,
    Chunks,
}

/// What one read yields.
enum Item {
    Delta(Option<Result<Delta, Refusal>>),
    Event(Option<Result<Event, Refusal>>),
    Text(Option<Result<String, Refusal>>),
}

impl fmt::Debug for AnswerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("blocking::AnswerStream")
            .field(&self.stream)
            .finish()
    }
}

impl AnswerStream {
    pub(super) fn new(stream: crate::AnswerStream, runtime: Arc<Background>) -> AnswerStream {
        AnswerStream {
            head: stream.head(),
            stream: Some(stream),
            runtime,
        }
    }

    crate::stream::head!(head);

    /// How the stream ended, once it ended cleanly, as
    /// [`AnswerStream::ending`](crate::AnswerStream::ending) says.
    pub fn ending(&self) -> Option<Ending> {
        self.stream.as_ref().and_then(crate::AnswerStream::ending)
    }

    /// What the engine billed, as
    /// [`AnswerStream::usage`](crate::AnswerStream::usage) says: read it
    /// after the end.
    pub fn usage(&self) -> Option<Usage> {
        self.stream.as_ref().and_then(crate::AnswerStream::usage)
    }

    /// The next piece of generated text, as
    /// [`AnswerStream::next_delta`](crate::AnswerStream::next_delta).
    fn next_delta(&mut self) -> Option<Result<Delta, Refusal>> {
        match self.read(Reader::Deltas)? {
            Item::Delta(delta) => delta,
            Item::Event(_) | Item::Text(_) => None,
        }
    }

    /// The next server-sent event, as
    /// [`AnswerStream::next_event`](crate::AnswerStream::next_event).
    pub fn next_event(&mut self) -> Option<Result<Event, Refusal>> {
        match self.read(Reader::Events)? {
            Item::Event(event) => event,
            Item::Text(_) | Item::Delta(_) => None,
        }
    }

    /// The next NDJSON line, as
    /// [`AnswerStream::next_line`](crate::AnswerStream::next_line).
    pub fn next_line(&mut self) -> Option<Result<String, Refusal>> {
        match self.read(Reader::Lines)? {
            Item::Text(line) => line,
            Item::Event(_) | Item::Delta(_) => None,
        }
    }

    /// The next text that arrived, as
    /// [`AnswerStream::next_chunk`](crate::AnswerStream::next_chunk):
    /// raw text, with the byte-level concealment only.
    pub fn next_chunk(&mut self) -> Option<Result<String, Refusal>> {
        match self.read(Reader::Chunks)? {
            Item::Text(chunk) => chunk,
            Item::Event(_) | Item::Delta(_) => None,
        }
    }

    /// Every piece of generated text to the end, or to the refusal, which
    /// is the last item, as
    /// [`AnswerStream::next_delta`](crate::AnswerStream::next_delta)
    /// reads them.
    pub fn deltas(&mut self) -> impl Iterator<Item = Result<Delta, Refusal>> + '_ {
        std::iter::from_fn(|| self.next_delta())
    }

    /// Every event to the end, or to the refusal, which is the last item.
    pub fn events(&mut self) -> impl Iterator<Item = Result<Event, Refusal>> + '_ {
        std::iter::from_fn(|| self.next_event())
    }

    /// Every NDJSON line to the end, or to the refusal.
    pub fn lines(&mut self) -> impl Iterator<Item = Result<String, Refusal>> + '_ {
        std::iter::from_fn(|| self.next_line())
    }

    /// Every chunk of text to the end, or to the refusal.
    pub fn chunks(&mut self) -> impl Iterator<Item = Result<String, Refusal>> + '_ {
        std::iter::from_fn(|| self.next_chunk())
    }

    /// One read on the background runtime, the stream going there and
    /// back; `None` once the stream is gone.
    fn read(&mut self, reader: Reader) -> Option<Item> {
        let mut stream = self.stream.take()?;
        let runtime = self.runtime.0.as_ref()?;
        let reading = runtime.spawn(async move {
            let item = match reader {
                Reader::Deltas => Item::Delta(stream.next_delta().await),
                Reader::Events => Item::Event(stream.next_event().await),
                Reader::Lines => Item::Text(stream.next_line().await),
                Reader::Chunks => Item::Text(stream.next_chunk().await),
            };
            (stream, item)
        });
        // A read whose task panicked loses the stream, which was metered
        // as it dropped; the stream ends there.
        let (stream, item) = wait(reading).ok()?;
        self.stream = Some(stream);
        Some(item)
    }
}

/// The stream's chunks, each as [`next_chunk`](AnswerStream::next_chunk)
/// yields it.
impl Iterator for AnswerStream {
    type Item = Result<String, Refusal>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_chunk()
    }
}
