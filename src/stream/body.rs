//! An engine's body under the three timers: each piece decoded as UTF-8
//! (a character split across pieces is one character) and concealed
//! across pieces, or the timer that ran out.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::time::{Instant, Sleep};

use super::Timers;
use crate::conceal::Concealer;
use crate::conceal::stream::ConcealStream;
use crate::lock::Unpoisoned;
use crate::refusal::failure::Failure;
use crate::refusal::stream::Timer;
use crate::text::utf8::{NotUtf8, Utf8Pieces};

/// A body's pieces as they arrive: any answer's, boxed, so the stream that
/// reads them has one type whatever answered.
pub(crate) type Pieces = Pin<Box<dyn futures_core::Stream<Item = Result<Bytes, Failure>> + Send>>;

/// An engine's body, and what reads it.
pub(super) struct EngineBody {
    /// Only ever reached through `&mut` (`Mutex::get_mut`, which never
    /// locks): the mutex makes the stream `Sync` though the body is not.
    body: std::sync::Mutex<Pieces>,
    characters: Utf8Pieces,
    concealing: ConcealStream,
    pub(super) concealer: Concealer,
    timers: Timers,
    sleep: Pin<Box<Sleep>>,
    /// The instant `sleep` is set for.
    armed: Option<Instant>,
    /// When the last byte arrived.
    last_byte: Option<Instant>,
}

/// What one poll of the body came to.
pub(super) enum Pulled {
    /// A piece arrived, not yet decoded; `first` is when, if it was the
    /// body's first.
    Piece {
        piece: Bytes,
        first: Option<Instant>,
    },
    /// The body ended cleanly.
    End,
    /// Reading it failed.
    Failed(Failure),
    /// A timer ran out first.
    TimedOut(Timer),
}

impl EngineBody {
    pub(super) fn new(body: Pieces, concealer: Concealer, timers: Timers) -> EngineBody {
        EngineBody {
            body: std::sync::Mutex::new(body),
            characters: Utf8Pieces::default(),
            concealing: concealer.stream(),
            concealer,
            timers,
            sleep: Box::pin(tokio::time::sleep_until(timers.first_byte)),
            armed: Some(timers.first_byte),
            last_byte: None,
        }
    }

    /// Polls for the next piece, under the timer that applies now.
    pub(super) fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Pulled> {
        let (limit, timer) = self.limit();
        if self.armed != Some(limit) {
            self.sleep.as_mut().reset(limit);
            self.armed = Some(limit);
        }
        match self.body.get_mut_unpoisoned().as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(piece))) => {
                let now = Instant::now();
                let first = self.last_byte.is_none().then_some(now);
                self.last_byte = Some(now);
                Poll::Ready(Pulled::Piece { piece, first })
            }
            Poll::Ready(Some(Err(failure))) => Poll::Ready(Pulled::Failed(failure)),
            Poll::Ready(None) => Poll::Ready(Pulled::End),
            Poll::Pending => match self.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Pulled::TimedOut(timer)),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    /// Decodes and conceals `piece`, appending what the concealer releases
    /// to `text`.
    pub(super) fn decode(&mut self, piece: &[u8], text: &mut String) -> Result<(), NotUtf8> {
        let concealing = &mut self.concealing;
        self.characters
            .push(piece, |part| concealing.push(part, text))
    }

    /// The body ended: what the concealer held is released to `text`,
    /// unless the body ended inside a character.
    pub(super) fn finish(&mut self, text: &mut String) -> Result<(), NotUtf8> {
        self.characters.finish()?;
        self.concealing.finish(text);
        Ok(())
    }

    /// The instant the next byte must arrive by, and the timer that says so.
    fn limit(&self) -> (Instant, Timer) {
        let (limit, timer) = match self.last_byte {
            None => (
                self.timers.first_byte,
                Timer::FirstByte {
                    ms: self.timers.first_byte_ms,
                },
            ),
            Some(last) => (
                crate::clock::later(last, self.timers.idle),
                Timer::Idle {
                    ms: crate::clock::millis(self.timers.idle),
                },
            ),
        };
        if self.timers.end < limit {
            (
                self.timers.end,
                Timer::Whole {
                    ms: self.timers.end_ms,
                },
            )
        } else {
            (limit, timer)
        }
    }
}
