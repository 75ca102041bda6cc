//! What a stream reports to, and when: its three timers, the transport it
//! came from (as [`Upstream`], so that the stream needs nothing of the
//! transport's own), and the [`SendRecord`] that meters and traces it once.

use std::time::Duration;

use tokio::time::Instant;

use super::StreamHead;
use crate::conceal::{Concealer, Shown};
use crate::refusal::Refusal;
use crate::refusal::site::Site;
use crate::usage::Usage;

/// A stream's three timers, as instants where they are fixed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timers {
    /// The send's deadline, which covers the first byte.
    pub(crate) first_byte: Instant,
    pub(crate) first_byte_ms: u64,
    /// The longest gap between bytes after the first.
    pub(crate) idle: Duration,
    /// The stream's own deadline.
    pub(crate) end: Instant,
    pub(crate) end_ms: u64,
}

/// The transport a stream came from, as the stream needs it: the
/// concealer and the cap it reads with, and the meter and span it reports
/// to as it goes and when it ends. A trait, so that this module needs
/// nothing of the transport's own.
pub(crate) trait Upstream: Send + Sync {
    fn concealer(&self) -> &Concealer;
    fn max_answer_bytes(&self) -> u64;
    /// `bytes` of the body arrived.
    fn received(&self, bytes: usize);
    /// The first byte arrived `after` the send began.
    fn first_byte_after(&self, after: Duration);
    /// The stream ended in `refusal` after its head.
    fn streamed_refusal(&self, span: &tracing::Span, refusal: &Refusal, elapsed: Duration);
    /// The stream ended as an answer that said it billed `usage`.
    fn billed(&self, span: &tracing::Span, usage: Option<Usage>);
    /// The stream ended as an answer.
    fn answered(&self, span: &tracing::Span, ended: Ended<'_>);
}

/// How a send that ended in an answer ended, for its meter and span.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ended<'a> {
    pub(crate) status: u16,
    pub(crate) attempts: u32,
    pub(crate) request_id: Option<&'a str>,
    pub(crate) elapsed: Duration,
}

/// The send a stream came from, as the stream keeps it: how it is metered and
/// traced when it ends, and what a refusal that ends it carries, as any
/// refusal of a send does (the attempts, what each came to, the
/// idempotency key).
pub(crate) struct SendRecord {
    pub(crate) transport: Box<dyn Upstream>,
    pub(crate) site: Site,
    pub(crate) span: tracing::Span,
    pub(crate) started: Instant,
    pub(crate) attempts: u32,
    /// What each attempt before the one that opened the stream came to.
    pub(crate) history: Vec<Shown>,
    pub(crate) key: Option<Shown>,
}

/// How far a stream got when it ended, for its ledger.
pub(super) struct Tally<'a> {
    pub(super) head: &'a StreamHead,
    pub(super) bytes: u64,
    pub(super) events: Option<u64>,
    pub(super) usage: Option<Usage>,
}

impl SendRecord {
    /// The body's first byte arrived `at`.
    pub(super) fn first_byte(&self, at: Instant) {
        let after = at.saturating_duration_since(self.started);
        self.transport.first_byte_after(after);
        self.span
            .record("first_byte_ms", crate::clock::millis(after));
    }

    /// The stream ended, in `refusal` or as an answer: metered and traced.
    pub(super) fn record(self, refusal: Option<&Refusal>, tally: Tally<'_>) {
        let elapsed = self.started.elapsed();
        let span = &self.span;
        span.record("bytes", tally.bytes);
        if let Some(events) = tally.events {
            span.record("events", events);
        }
        match refusal {
            Some(refusal) => self.transport.streamed_refusal(span, refusal, elapsed),
            None => {
                let head = tally.head;
                let ended = Ended {
                    status: head.status,
                    attempts: self.attempts,
                    request_id: head.request_id.as_deref(),
                    elapsed,
                };
                self.transport.answered(span, ended);
                self.transport.billed(span, tally.usage);
            }
        }
    }
}
