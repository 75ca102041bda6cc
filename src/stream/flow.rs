//! A stream below its readers: the text as the concealer releases it, cut
//! into frames by a [`Framing`], each frame read once for what the engine
//! said in it (`[DONE]`, an error, what it billed), and the one end the
//! stream meets, metered and traced.
//!
//! Every reader is [`Flow::poll_frame`] over its framing; the parsed ones
//! go through their channels ([`Flow::poll_joined`]) as well. Nothing is
//! read ahead: text is pulled from the body only when no frame is
//! complete.

use std::collections::VecDeque;
use std::sync::OnceLock;
use std::task::{Context, Poll, ready};

use super::body::{EngineBody, Pulled};
use super::channels::{Carrier, Exceeded, Joined};
use super::ending::error_refusal;
use super::framing::Framing;
use super::upstream::{SendRecord, Tally};
use super::{Ending, StreamHead};
use crate::conceal::{Concealer, Shown};
use crate::refusal::failure::{Answered, Failure};
use crate::refusal::kind::Kind;
use crate::refusal::stream::{timed_out, without_done, written};
use crate::refusal::{Refusal, history};
use crate::usage::Streamed;

/// What a stream has read, and where it stands.
pub(super) struct Flow {
    pub(super) head: StreamHead,
    source: Source,
    released: Released,
    /// The body has ended (cleanly): what is released is the last of it.
    ended: bool,
    /// Nothing more will be yielded.
    pub(super) done: bool,
    pub(super) bytes: u64,
    /// Events dispatched so far, once events are read.
    pub(super) events: Option<u64>,
    cap: usize,
    /// A clean end without `[DONE]` is a refusal.
    pub(super) expect_done: bool,
    /// How the stream ended, once it ended cleanly.
    pub(super) ending: Option<Ending>,
    /// The send the stream came from, metered and traced when it ends;
    /// `None` for a fake's, or once it has been.
    ledger: Option<SendRecord>,
    /// What its frames said was billed.
    pub(super) usage: Streamed,
}

/// Where the text comes from.
pub(super) enum Source {
    /// An engine's body.
    Engine(Box<EngineBody>),
    /// A fake's pieces.
    Chunks(VecDeque<String>),
}

/// Released text no reader has taken yet, from `taken` on.
#[derive(Default)]
struct Released {
    text: String,
    taken: usize,
}

impl Released {
    /// The bytes of the frame being read, which has not ended yet.
    fn rest(&self) -> usize {
        self.text.len() - self.taken
    }

    /// Drops taken text now and then: linear, and bounded by what is not
    /// yet read.
    fn compact(&mut self) {
        if self.taken == self.text.len() {
            self.text.clear();
            self.taken = 0;
        } else if self.taken > 4096 && self.taken * 2 > self.text.len() {
            self.text.drain(..self.taken);
            self.taken = 0;
        }
    }
}

/// One reader's state: its framing, and the channels its frames go
/// through.
pub(super) struct Reader<F: Framing> {
    framing: F,
    joined: Joined<F::Frame>,
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

/// The concealer of a fake's stream, which knows no secret: errors it
/// scripts are read as an engine's.
fn no_secrets() -> &'static Concealer {
    static NONE: OnceLock<Concealer> = OnceLock::new();
    NONE.get_or_init(|| Concealer::new([]))
}

impl Flow {
    pub(super) fn new(
        head: StreamHead,
        source: Source,
        cap: usize,
        ledger: Option<SendRecord>,
    ) -> Flow {
        Flow {
            head,
            source,
            released: Released::default(),
            ended: false,
            done: false,
            bytes: 0,
            events: None,
            cap,
            expect_done: false,
            ending: None,
            ledger,
            usage: Streamed::default(),
        }
    }

    /// The concealer of an engine's stream (a fake's has none).
    fn concealer(&self) -> Option<&Concealer> {
        match &self.source {
            Source::Engine(body) => Some(&body.concealer),
            Source::Chunks(_) => None,
        }
    }

    /// A reader of framing `F` for this stream, its channels concealed by
    /// the stream's concealer.
    pub(super) fn reader<F: Framing>(&self) -> Box<Reader<F>> {
        Box::new(Reader {
            framing: F::default(),
            joined: Joined::new(self.concealer()),
        })
    }

    /// Polls for the next frame of `framing` as the channels release it.
    pub(super) fn poll_joined<F: Framing>(
        &mut self,
        reader: &mut Reader<F>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<F::Frame, Refusal>>> {
        loop {
            if let Some(out) = reader.joined.out() {
                return Poll::Ready(out);
            }
            let read = ready!(self.poll_frame(&mut reader.framing, cx));
            if let Err(exceeded) = reader.joined.take(read) {
                let refusal = self.joining_refusal(exceeded);
                reader.joined.refused(refusal);
            }
        }
    }

    /// Polls for the next frame of `framing`: `None` at the clean end
    /// (`[DONE]`, or the body's), after which nothing more comes.
    pub(super) fn poll_frame<F: Framing>(
        &mut self,
        framing: &mut F,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<F::Frame, Refusal>>> {
        if F::EVENTS {
            self.events.get_or_insert(0);
        }
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            let released = &mut self.released;
            let next = framing.next(&released.text, &mut released.taken, self.cap);
            released.compact();
            match next {
                Ok(Some(frame)) => return Poll::Ready(self.framed::<F>(frame)),
                Ok(None) => {}
                Err(what) => return Poll::Ready(Some(Err(self.over_cap(what)))),
            }
            if self.released.rest() > self.cap {
                return Poll::Ready(Some(Err(self.over_cap("line"))));
            }
            if self.ended {
                let released = &mut self.released;
                let (last, how) = framing.end(&released.text[released.taken..]);
                released.taken = released.text.len();
                if let Some(frame) = last {
                    return Poll::Ready(self.framed::<F>(frame));
                }
                if !F::PARSED {
                    // Raw text has no `[DONE]` to look for: the end of the
                    // body is the end.
                    self.ending = Some(how);
                    self.finish(None);
                    return Poll::Ready(None);
                }
                return Poll::Ready(self.end(how).map(Err));
            }
            match ready!(self.poll_more(cx)) {
                More::Text => {}
                More::End => self.ended = true,
                More::Refused(refusal) => {
                    self.finish(Some(&refusal));
                    return Poll::Ready(Some(Err(refusal)));
                }
            }
        }
    }

    /// What one frame comes to: yielded, the clean end at `[DONE]`
    /// (`None`), or a refusal for an error the engine sent in it.
    fn framed<F: Framing>(&mut self, mut frame: F::Frame) -> Option<Result<F::Frame, Refusal>> {
        if !F::PARSED {
            return Some(Ok(frame));
        }
        if let Some(concealer) = self.concealer() {
            F::conceal_joined(&mut frame, concealer);
        }
        if frame.data().trim() == "[DONE]" {
            return self.end(Ending::Done).map(Err);
        }
        let named = F::named(&frame);
        self.read_usage(named, frame.data());
        if let Some(refusal) = self.error_in(named, frame.data()) {
            return Some(Err(refusal));
        }
        if F::EVENTS
            && let Some(events) = self.events.as_mut()
        {
            *events = events.saturating_add(1);
        }
        Some(Ok(frame))
    }

    /// The one place a stream reads what the engine billed: every frame it
    /// parses comes here once, whatever reads it (`event` is the frame's
    /// type, none for an NDJSON line).
    fn read_usage(&mut self, event: Option<&str>, data: &str) {
        self.usage.read(event, data);
    }

    /// Reads more of the body into the released text.
    fn poll_more(&mut self, cx: &mut Context<'_>) -> Poll<More> {
        let body = match &mut self.source {
            Source::Chunks(chunks) => {
                return Poll::Ready(match chunks.pop_front() {
                    Some(chunk) => {
                        self.bytes = self
                            .bytes
                            .saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
                        self.released.text.push_str(&chunk);
                        More::Text
                    }
                    None => More::End,
                });
            }
            Source::Engine(body) => body,
        };
        let pulled = ready!(body.poll_piece(cx));
        let failure = match pulled {
            Pulled::Piece { piece, first } => {
                if let Some(ledger) = &self.ledger {
                    if let Some(at) = first {
                        ledger.first_byte(at);
                    }
                    ledger.transport.received(piece.len());
                }
                let length = u64::try_from(piece.len()).unwrap_or(u64::MAX);
                self.bytes = self.bytes.saturating_add(length);
                if piece.len() > self.cap {
                    let cap = u64::try_from(self.cap).unwrap_or(u64::MAX);
                    Failure::PieceTooLarge { what: "piece", cap }
                } else {
                    match body.decode(&piece, &mut self.released.text) {
                        Ok(()) => return Poll::Ready(More::Text),
                        Err(_) => Failure::AnswerNotUtf8,
                    }
                }
            }
            Pulled::End => match body.finish(&mut self.released.text) {
                Ok(()) => return Poll::Ready(More::End),
                Err(_) => Failure::AnswerNotUtf8,
            },
            Pulled::Failed(failure) => failure,
            Pulled::TimedOut(timer) => {
                let site = self.ledger.as_ref().map(|ledger| &ledger.site);
                let refusal = timed_out(site, timer, self.answered());
                return Poll::Ready(More::Refused(self.carried(refusal, timer.short())));
            }
        };
        Poll::Ready(More::Refused(self.refusal_of(failure)))
    }

    /// The stream met the clean end `how`: nothing more is yielded, and
    /// the send is metered as an answer, unless the caller asked for
    /// `[DONE]` and this end is not it, which is a refusal (returned).
    fn end(&mut self, how: Ending) -> Option<Refusal> {
        if self.expect_done && how != Ending::Done {
            let unfinished = match how {
                Ending::Unfinished { bytes } => Some(bytes),
                _ => None,
            };
            let site = self.ledger.as_ref().map(|ledger| &ledger.site);
            let refusal = without_done(site, self.answered(), unfinished);
            let refusal = self.carried(refusal, Shown::from("no [DONE]"));
            self.finish(Some(&refusal));
            return Some(refusal);
        }
        self.ending = Some(how);
        self.finish(None);
        None
    }

    /// How far the stream got, for a refusal.
    fn answered(&self) -> Answered {
        Answered {
            status: self.head.status,
            bytes: self.bytes,
            events: self.events,
        }
    }

    /// `refusal` with what a refusal of the send carries: the engine's id
    /// for the request, the attempts, what each came to (this one, the
    /// stream's, as `short`), and the idempotency key.
    fn carried(&self, refusal: Refusal, short: Shown) -> Refusal {
        let refusal = match &self.head.request_id {
            Some(id) => refusal.with_shown_request_id(id.clone()),
            None => refusal,
        };
        let Some(ledger) = &self.ledger else {
            return refusal;
        };
        let mut history = ledger.history.clone();
        history.push(short);
        history::after_attempts(
            &ledger.site,
            refusal.with_attempts(ledger.attempts),
            &history,
            ledger.key.as_ref(),
        )
    }

    /// The refusal of a failure after the head, not yet finished.
    fn refusal_of(&self, failure: Failure) -> Refusal {
        let short = failure.short();
        let kind = Kind::Failed {
            failure,
            answered: Some(self.answered()),
        };
        let refusal = written(self.ledger.as_ref().map(|ledger| &ledger.site), kind);
        self.carried(refusal, short)
    }

    /// A piece, event or line over the cap, refused, and the stream
    /// finished.
    fn over_cap(&mut self, what: &'static str) -> Refusal {
        let cap = u64::try_from(self.cap).unwrap_or(u64::MAX);
        let refusal = self.refusal_of(Failure::PieceTooLarge { what, cap });
        self.finish(Some(&refusal));
        refusal
    }

    /// The refusal an error inside the stream makes: an event named
    /// `error`, or a payload that is a JSON object with an `error` member.
    fn error_in(&mut self, event: Option<&str>, payload: &str) -> Option<Refusal> {
        let concealer = match self.concealer() {
            Some(concealer) => concealer,
            None => no_secrets(),
        };
        let site = self.ledger.as_ref().map(|ledger| &ledger.site);
        let refusal = error_refusal(site, concealer, self.answered(), event, payload)?;
        let refusal = self.carried(refusal, Shown::from("an error in the stream"));
        self.finish(Some(&refusal));
        Some(refusal)
    }

    /// The refusal of a stream past a bound of its channels, and the stream
    /// finished.
    fn joining_refusal(&mut self, exceeded: Exceeded) -> Refusal {
        let concealer = match self.concealer() {
            Some(concealer) => concealer,
            None => no_secrets(),
        };
        let kind = Kind::Unjoined {
            answered: self.answered(),
            why: concealer.show_all(&exceeded.describe()),
        };
        let refusal = written(self.ledger.as_ref().map(|ledger| &ledger.site), kind);
        let refusal = self.carried(
            refusal,
            Shown::from("a stream whose joined text could not be concealed"),
        );
        self.finish(Some(&refusal));
        refusal
    }

    /// Nothing more is yielded; the send is metered and traced once: an
    /// answer, or the refusal it ended in.
    fn finish(&mut self, refusal: Option<&Refusal>) {
        self.done = true;
        self.released = Released::default();
        if let Some(ledger) = self.ledger.take() {
            ledger.record(refusal, self.tally());
        }
    }

    /// How far the stream got, for its ledger.
    fn tally(&self) -> Tally<'_> {
        Tally {
            head: &self.head,
            bytes: self.bytes,
            events: self.events,
            usage: self.usage.usage(),
        }
    }
}

/// A stream its reader drops before the end counts as an answer: the
/// engine answered, and the reader chose to stop.
impl Drop for Flow {
    fn drop(&mut self) {
        if let Some(ledger) = self.ledger.take() {
            ledger.record(None, self.tally());
        }
    }
}
