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

use super::body::{Bounds, read_answer};
use super::deadline::Deadline;
use super::incoming::Incoming;
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
    bounds: Bounds<'_>,
) -> Result<String, (Failure, u64)> {
    let (cap, deadline) = (bounds.cap, bounds.deadline);
    let short = usize::try_from(cap).map_or(SHORT, |cap| cap.min(SHORT));
    let passed = || Failure::Deadline { ms: deadline.ms() };
    // Read before the first piece: what reqwest tells is what is left of
    // the body, not what was declared.
    let declared = response.content_length();
    let first = match within(deadline, response.chunk()).await {
        Ok(Ok(Some(piece))) => piece,
        Ok(Ok(None)) => return Ok(String::new()),
        Ok(Err(failure)) => return Err((failure, 0)),
        Err(_) => return Err((passed(), 0)),
    };
    let mut replay = Replay {
        response,
        declared,
        first: None,
        second: None,
        failed: None,
    };
    // Only a piece that is all the engine declared is held while the end of
    // the body is awaited: the end is then already on its way, and a piece
    // held while more is awaited would keep the HTTP client's read buffer
    // alive with it.
    let whole = (first.len() <= short && declared == u64::try_from(first.len()).ok())
        .then(|| std::str::from_utf8(&first).ok())
        .flatten();
    if let Some(text) = whole {
        let arrived = u64::try_from(first.len()).unwrap_or(u64::MAX);
        match within(deadline, replay.response.chunk()).await {
            Ok(Ok(None)) => {
                bounds.meter.received(first.len());
                return Ok(bounds.concealer.conceal(text).into_owned());
            }
            Ok(Ok(Some(piece))) => replay.second = Some(piece),
            Ok(Err(failure)) => replay.failed = Some(failure),
            Err(_) => {
                bounds.meter.received(first.len());
                return Err((passed(), arrived));
            }
        }
    }
    replay.first = Some(first);
    read_answer(&mut replay, bounds).await
}

/// `read` within the deadline, as `timeout_at` would run it (a read that is
/// ready is taken even past the deadline), with no timer set for a read
/// that is ready when first polled: a short answer's pieces usually are,
/// and a timer costs a lookup of the runtime and a place in its wheel.
async fn within<F: std::future::Future>(
    deadline: Deadline,
    read: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    let mut read = std::pin::pin!(read);
    let ready = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match read.as_mut().poll(cx) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        })
    })
    .await;
    match ready {
        Some(output) => Ok(output),
        None => timeout_at(deadline.at(), read).await,
    }
}

/// An answer whose first pieces (or the failure that came after the
/// first) were read already: they are given again, in order, before the
/// rest.
struct Replay<'a, I> {
    response: &'a mut I,
    /// What the answer declared before any piece was read.
    declared: Option<u64>,
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
        self.declared
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

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::*;
    use crate::conceal::Concealer;
    use crate::meter::Meter;

    const SECRET: &str = "mw-short-0123456789abcdef";

    /// A body in the pieces given, each a piece or a failure, with the
    /// length it declares; as reqwest's, its length is what is left of it
    /// once pieces were read.
    struct Scripted {
        declared: Option<u64>,
        pieces: VecDeque<Result<Bytes, Failure>>,
    }

    impl Incoming for Scripted {
        fn status(&self) -> u16 {
            200
        }

        fn take_headers(&mut self) -> HeaderMap {
            HeaderMap::new()
        }

        fn content_length(&self) -> Option<u64> {
            self.declared
        }

        async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
            let piece = self.pieces.pop_front().transpose()?;
            if let (Some(left), Some(piece)) = (&mut self.declared, &piece) {
                *left = left.saturating_sub(piece.len() as u64);
            }
            Ok(piece)
        }
    }

    fn scripted(declared: Option<u64>, pieces: &[Result<&'static str, Failure>]) -> Scripted {
        Scripted {
            declared,
            pieces: pieces
                .iter()
                .map(|piece| {
                    piece
                        .clone()
                        .map(|text| Bytes::from_static(text.as_bytes()))
                })
                .collect(),
        }
    }

    /// What a reader gave, and the bytes its meter counted.
    type Yield = (Result<String, (Failure, u64)>, u64);

    /// A body's pieces, each a piece or a failure.
    type Pieces = Vec<Result<&'static str, Failure>>;

    /// What `read_text` and the streaming reader give for the same body.
    fn both(
        declared: Option<u64>,
        pieces: &[Result<&'static str, Failure>],
        cap: u64,
    ) -> [Yield; 2] {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        let concealer = Concealer::new([SECRET]);
        runtime.block_on(async {
            let deadline = Deadline::new(Instant::now(), Duration::from_secs(10));
            let (ours, streamed) = (Meter::default(), Meter::default());
            let mut body = scripted(declared, pieces);
            let bounds = |meter| Bounds {
                cap,
                deadline,
                meter,
                concealer: &concealer,
            };
            let short = read_text(&mut body, bounds(&ours)).await;
            let mut body = scripted(declared, pieces);
            let whole = read_answer(&mut body, bounds(&streamed)).await;
            [
                (short, ours.snapshot().bytes_received()),
                (whole, streamed.snapshot().bytes_received()),
            ]
        })
    }

    #[test]
    fn a_short_body_in_one_piece_is_concealed_as_the_streaming_reader_conceals_it() {
        let body = "{\"text\":\"mw-short-0123456789abcdef\"}";
        let [short, whole] = both(Some(body.len() as u64), &[Ok(body)], 1024);
        assert_eq!(short, whole);
        assert_eq!(short.0.as_deref(), Ok("{\"text\":\"[redacted]\"}"));
        assert_eq!(short.1, body.len() as u64, "the piece is counted");
    }

    #[test]
    fn a_body_in_pieces_or_cut_short_reads_as_the_streaming_reader_reads_it() {
        // A secret split across two pieces; a piece more than declared; a
        // failure after the first piece, declared longer or as long as it;
        // a body with no declared length; an empty body.
        let cases: [(Option<u64>, Pieces); 6] = [
            (
                Some(33),
                vec![Ok("{\"t\":\"mw-short-01234"), Ok("56789abcdef\"}")],
            ),
            (Some(3), vec![Ok("abc"), Ok("def")]),
            (Some(9), vec![Ok("abc"), Err(Failure::ConnectionReset)]),
            (Some(3), vec![Ok("abc"), Err(Failure::ConnectionReset)]),
            (None, vec![Ok("mw-short-0123456789abcdef")]),
            (Some(0), vec![]),
        ];
        for (declared, pieces) in cases {
            let [short, whole] = both(declared, &pieces, 1024);
            assert_eq!(short, whole, "{pieces:?}");
        }
    }

    #[test]
    fn a_piece_past_the_cap_or_not_utf8_is_refused_as_before() {
        let cases: [(&'static str, u64); 3] = [("abcdef", 3), ("abc", 0), ("caf\u{e9}", 4)];
        for (piece, cap) in cases {
            let [short, whole] = both(Some(piece.len() as u64), &[Ok(piece)], cap);
            assert_eq!(short, whole, "{piece:?} under a cap of {cap}");
            assert!(short.0.is_err(), "{piece:?} under a cap of {cap}");
        }
        // Not UTF-8: a lone continuation byte, declared whole.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        let concealer = Concealer::new([SECRET]);
        let failure = runtime.block_on(async {
            let deadline = Deadline::new(Instant::now(), Duration::from_secs(10));
            let mut body = Scripted {
                declared: Some(2),
                pieces: VecDeque::from([Ok(Bytes::from_static(b"a\x80"))]),
            };
            let meter = Meter::default();
            let bounds = Bounds {
                cap: 1024,
                deadline,
                meter: &meter,
                concealer: &concealer,
            };
            read_text(&mut body, bounds).await
        });
        assert_eq!(failure, Err((Failure::AnswerNotUtf8, 2)));
    }
}
