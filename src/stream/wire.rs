//! Reading an engine's body under the three timers: each piece decoded as
//! UTF-8 (a character split across pieces is one character), concealed
//! across pieces, metered as it arrives.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

use super::{AnswerStream, Source, Timers};
use crate::conceal::Concealer;
use crate::conceal::stream::ConcealStream;
use crate::lock::Unpoisoned;
use crate::refusal::Refusal;
use crate::refusal::failure::Failure;
use crate::refusal::stream::{Timer, timed_out};
use crate::transport::reply::Pieces;
use crate::transport::utf8::Utf8Pieces;

/// An engine's body, and what reads it.
pub(super) struct Wire {
    /// Only ever reached through `&mut` (`Mutex::get_mut`, which never
    /// locks): the mutex makes the stream `Sync` though the body is not.
    pub(super) body: std::sync::Mutex<Pieces>,
    pub(super) characters: Utf8Pieces,
    pub(super) concealing: ConcealStream,
    pub(super) concealer: Concealer,
    pub(super) timers: Timers,
    pub(super) sleep: Pin<Box<Sleep>>,
    /// The instant `sleep` is set for.
    pub(super) armed: Option<Instant>,
    /// When the last byte arrived.
    pub(super) last_byte: Option<Instant>,
}

impl Wire {
    pub(super) fn new(body: Pieces, concealer: Concealer, timers: Timers) -> Wire {
        Wire {
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

/// What one more read of the body came to.
pub(super) enum More {
    /// Text was released (perhaps none: the concealer holds it).
    Text,
    /// The body ended cleanly.
    End,
    /// The stream is refused.
    Refused(Refusal),
}

impl AnswerStream {
    /// Polls the body for its next piece, under the three timers.
    pub(super) fn poll_more(&mut self, cx: &mut Context<'_>) -> Poll<More> {
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
        let (limit, timer) = wire.limit();
        if wire.armed != Some(limit) {
            wire.sleep.as_mut().reset(limit);
            wire.armed = Some(limit);
        }
        let body = wire.body.get_mut_unpoisoned();
        match body.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(piece))) => {
                let now = Instant::now();
                if wire.last_byte.is_none()
                    && let Some(sent) = &self.sent
                {
                    let after = now.saturating_duration_since(sent.started);
                    sent.transport.first_byte_after(after);
                    sent.span
                        .record("first_byte_ms", crate::clock::millis(after));
                }
                wire.last_byte = Some(now);
                let length = u64::try_from(piece.len()).unwrap_or(u64::MAX);
                self.bytes = self.bytes.saturating_add(length);
                if let Some(sent) = &self.sent {
                    sent.transport.received(piece.len());
                }
                if piece.len() > self.cap {
                    let cap = u64::try_from(self.cap).unwrap_or(u64::MAX);
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
                    let site = self.sent.as_ref().map(|sent| &sent.site);
                    let refusal = timed_out(site, timer, self.answered());
                    Poll::Ready(More::Refused(self.carried(refusal, &timer.short())))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}
