//! A short answer, read whole and concealed in one call.
//!
//! Most answers are a few hundred bytes of JSON that arrive in one piece.
//! Concealing them as a stream (its set-up, a push, its end, and the
//! checks of every character cut between pieces) costs more than the one
//! call that conceals the whole text, and gives the same text: the stream
//! releases exactly the concealment of the whole body. So the first piece
//! is looked at before anything is set up: when it is all the body the
//! engine declared, short, within the cap and UTF-8, and the body ends
//! there, it is concealed in one call. Any other body is read as before,
//! from its first piece, by the reader in `body.rs`, which sees the very
//! pieces, failures and deadline it would have seen.

use bytes::Bytes;
use reqwest::header::HeaderMap;
use tokio::time::timeout_at;

use super::body::read_answer;
use super::deadline::Deadline;
use super::incoming::Incoming;
use crate::conceal::Concealer;
use crate::meter::Meter;
use crate::refusal::failure::Failure;

/// The longest body concealed in one call: the concealment of a piece this
/// long takes microseconds, so the deadline, checked between pieces for a
/// longer body, is not overrun by it.
const SHORT: usize = 16 * 1024;

/// Reads an answer body of at most `cap` bytes and conceals it, as
/// [`read_answer`] does (the same text, failures and meter counts), in one
/// call when it is short and arrives in one piece.
pub(super) async fn read_text(
    response: &mut impl Incoming,
    cap: u64,
    deadline: Deadline,
    meter: &Meter,
    concealer: &Concealer,
) -> Result<String, (Failure, u64)> {
    let short = usize::try_from(cap).map_or(SHORT, |cap| cap.min(SHORT));
    let passed = || Failure::Deadline { ms: deadline.ms() };
    let first = match timeout_at(deadline.at(), response.chunk()).await {
        Ok(Ok(Some(piece))) => piece,
        Ok(Ok(None)) => return Ok(String::new()),
        Ok(Err(failure)) => return Err((failure, 0)),
        Err(_) => return Err((passed(), 0)),
    };
    let mut replay = Replay {
        response,
        first: None,
        second: None,
        failed: None,
    };
    // Only a piece that is all the engine declared is held while the end of
    // the body is awaited: the end is then already on its way, and a piece
    // held while more is awaited would keep the HTTP client's read buffer
    // alive with it.
    let declared = replay.response.content_length();
    let whole = (first.len() <= short && declared == u64::try_from(first.len()).ok())
        .then(|| std::str::from_utf8(&first).ok())
        .flatten();
    if let Some(text) = whole {
        let arrived = u64::try_from(first.len()).unwrap_or(u64::MAX);
        match timeout_at(deadline.at(), replay.response.chunk()).await {
            Ok(Ok(None)) => {
                meter.received(first.len());
                return Ok(concealer.conceal(text).into_owned());
            }
            Ok(Ok(Some(piece))) => replay.second = Some(piece),
            Ok(Err(failure)) => replay.failed = Some(failure),
            Err(_) => {
                meter.received(first.len());
                return Err((passed(), arrived));
            }
        }
    }
    replay.first = Some(first);
    read_answer(&mut replay, cap, deadline, meter, concealer).await
}

/// An answer whose first pieces (or the failure that came after the
/// first) were read already: they are given again, in order, before the
/// rest.
struct Replay<'a, I> {
    response: &'a mut I,
    first: Option<Bytes>,
    second: Option<Bytes>,
    failed: Option<Failure>,
}

impl<I: Incoming> Incoming for Replay<'_, I> {
    fn status(&self) -> u16 {
        self.response.status()
    }

    fn take_headers(&mut self) -> HeaderMap {
        self.response.take_headers()
    }

    fn content_length(&self) -> Option<u64> {
        self.response.content_length()
    }

    async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
        if let Some(piece) = self.first.take().or_else(|| self.second.take()) {
            return Ok(Some(piece));
        }
        if let Some(failure) = self.failed.take() {
            return Err(failure);
        }
        self.response.chunk().await
    }
}
