//! Bounded reads of a body: an error body only as far as the detail needs,
//! an answer no further than its cap.
//!
//! A 300 MB error page costs the first 64 KiB and no more; an answer over
//! the cap is refused without ever holding more than the cap; both stop at
//! the send's deadline.

use tokio::time::timeout_at;

use super::deadline::Deadline;
use super::incoming::Incoming;
use crate::meter::Meter;
use crate::refusal::evidence::words::DETAIL_READ_LIMIT;
use crate::refusal::failure::Failure;

/// The most of an answer reserved before it arrives: a length the engine
/// declares is a claim, and 256 sends each reserving a declared 32 MiB
/// for a body that never comes would be 8 GiB.
const RESERVE_AHEAD: usize = 1 << 20;

/// Reads at most the first 64 KiB of an error body, and stops at the
/// deadline with what has arrived: the status already says what happened,
/// so a body that drips forever costs the detail, not the refusal. The rest
/// is never read; dropping the response closes the connection.
///
/// A head that did not reach the end of the body may end in the middle of a
/// token, where no concealer can recognise it; it is cut back to its last
/// whitespace, since no form of a token holds any.
pub(super) async fn read_head(response: &mut impl Incoming, deadline: Deadline) -> Vec<u8> {
    let mut head = Vec::new();
    let complete = loop {
        if head.len() >= DETAIL_READ_LIMIT {
            break false;
        }
        match timeout_at(deadline.at(), response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = DETAIL_READ_LIMIT - head.len();
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(Ok(None)) => break true,
            Ok(Err(_)) | Err(_) => break false,
        }
    };
    if !complete {
        let keep = head.iter().rposition(u8::is_ascii_whitespace).unwrap_or(0);
        head.truncate(keep);
    }
    head
}

/// Reads an answer body of at most `cap` bytes; one byte more and it is
/// refused, having never held more than `cap`. A failure comes with how
/// many bytes had arrived.
pub(super) async fn read_capped(
    response: &mut impl Incoming,
    cap: u64,
    deadline: Deadline,
    meter: &Meter,
) -> Result<Vec<u8>, (Failure, u64)> {
    let cap_bytes = usize::try_from(cap).unwrap_or(usize::MAX);
    let expected = response
        .content_length()
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(8 * 1024);
    let mut body = Vec::with_capacity(expected.min(cap_bytes).min(RESERVE_AHEAD));
    let mut arrived: u64 = 0;
    // One timer for the whole body, not one per chunk: a timer is set and
    // cleared in the runtime's wheel each time.
    let read = async {
        while let Some(chunk) = response.chunk().await? {
            meter.received(chunk.len());
            arrived = arrived.saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
            if chunk.len() > cap_bytes - body.len() {
                return Err(Failure::AnswerTooLarge {
                    cap,
                    declared: None,
                });
            }
            // Doubling, as a `Vec` grows, but never past the cap: from just
            // over half the cap, doubling would allocate nearly twice it.
            if body.capacity() - body.len() < chunk.len() {
                let wanted = body
                    .capacity()
                    .saturating_mul(2)
                    .max(body.len() + chunk.len())
                    .min(cap_bytes);
                body.reserve_exact(wanted - body.len());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(())
    };
    let read = timeout_at(deadline.at(), read).await;
    match read {
        Err(_) => Err((Failure::Deadline { ms: deadline.ms() }, arrived)),
        Ok(Err(failure)) => Err((failure, arrived)),
        Ok(Ok(())) => Ok(body),
    }
}
