//! Bounded reads of a body: an error body only as far as the detail needs,
//! an answer no further than its cap.
//!
//! A 300 MB error page costs the first 64 KiB and no more; an answer over
//! the cap is refused without ever holding more than the cap; both stop at
//! the send's deadline.

use tokio::time::timeout_at;

use super::deadline::Deadline;
use super::incoming::Incoming;
use crate::conceal::{Concealed, Concealer, REDACTED};
use crate::meter::Meter;
use crate::refusal::evidence::words::DETAIL_READ_LIMIT;
use crate::refusal::failure::Failure;
use crate::text::utf8::Utf8Pieces;

/// The most of an answer's text reserved before it arrives: a length the engine
/// declares is a claim, and 256 sends each reserving a declared 32 MiB
/// for a body that never comes would be 8 GiB.
const RESERVE_AHEAD: usize = 1 << 20;

/// Reads at most the first 64 KiB of an error body, and stops at the
/// deadline with what has arrived: the status already says what happened,
/// so a body that drips forever costs the detail, not the refusal. The rest
/// is never read; dropping the response closes the connection.
///
/// The head comes back concealed, with how many bytes of it arrived. A
/// head that did not reach the end of the body may end in the middle of a
/// form of a secret (a token hard-wrapped across two lines, cut after its
/// first), where no concealer can recognise it whole: it is concealed as a
/// stream would conceal it, and only what the stream releases is kept,
/// never what it still holds back because it could be part of a form
/// ([`Concealer::admit`], [`Concealer::admit_cut`]). It is concealed once,
/// here: 256 sends reading large error pages each hold a head, and a second
/// pass and copy of each would double that.
pub(super) async fn read_head(
    response: &mut impl Incoming,
    deadline: Deadline,
    concealer: &Concealer,
) -> (Concealed, usize) {
    let mut head = Vec::new();
    let complete = loop {
        if head.len() >= DETAIL_READ_LIMIT {
            break false;
        }
        match timeout_at(deadline.at(), response.chunk()).await {
            Ok(Ok(Some(chunk))) => keep(&mut head, &chunk),
            Ok(Ok(None)) => break true,
            Ok(Err(_)) | Err(_) => break false,
        }
    };
    let arrived = head.len();
    if complete {
        let text = match String::from_utf8(head) {
            Ok(text) => text,
            Err(invalid) => String::from_utf8_lossy(invalid.as_bytes()).into_owned(),
        };
        return (concealer.admit(text), arrived);
    }
    (
        concealer.admit_cut(&String::from_utf8_lossy(&head)),
        arrived,
    )
}

/// Adds what `head` has room for of `chunk`. The head is held across every
/// await of its read, once per send in flight (256 sends reading large
/// error pages hold 256 heads at once), so it grows by doubling, as a `Vec`
/// grows, but never past the limit: plain doubling from 56 KiB would hold
/// 112 KiB for 64. The chunk is not kept: holding it would keep the HTTP
/// client's whole read buffer alive.
fn keep(head: &mut Vec<u8>, chunk: &[u8]) {
    let kept = &chunk[..chunk.len().min(DETAIL_READ_LIMIT - head.len())];
    if head.capacity() - head.len() < kept.len() {
        let wanted = head
            .capacity()
            .saturating_mul(2)
            .min(DETAIL_READ_LIMIT)
            .max(head.len() + kept.len());
        head.reserve_exact(wanted - head.len());
    }
    head.extend_from_slice(kept);
}

/// How an answer's body is read: at most `cap` bytes, within `deadline`,
/// counted by `meter` as they arrive and concealed by `concealer` as they
/// come.
#[derive(Clone, Copy)]
pub(super) struct Bounds<'a> {
    pub(super) cap: u64,
    pub(super) deadline: Deadline,
    pub(super) meter: &'a Meter,
    pub(super) concealer: &'a Concealer,
}

/// Reads an answer body of at most `cap` bytes, concealing it as it
/// arrives; one byte more and it is refused, having never held more than
/// `cap`. The deadline covers the concealment too: each piece is concealed
/// as it comes, so the timer is checked between pieces, and joined the
/// pieces are exactly the concealment of the whole body. A failure comes
/// with how many bytes had arrived.
pub(super) async fn read_answer(
    response: &mut impl Incoming,
    bounds: Bounds<'_>,
) -> Result<String, (Failure, u64)> {
    let Bounds {
        cap,
        deadline,
        meter,
        concealer,
    } = bounds;
    let cap_bytes = usize::try_from(cap).unwrap_or(usize::MAX);
    let expected = response
        .content_length()
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(8 * 1024);
    let mut text = String::with_capacity(expected.min(cap_bytes).min(RESERVE_AHEAD));
    let mut arrived: usize = 0;
    let mut characters = Utf8Pieces::default();
    let mut concealing = concealer.stream();
    let read = async {
        // One timer for the whole body, not one per piece: a timer is set
        // and cleared in the runtime's wheel each time.
        while let Some(piece) = response.chunk().await? {
            meter.received(piece.len());
            if piece.len() > cap_bytes - arrived {
                arrived = arrived.saturating_add(piece.len());
                return Err(Failure::AnswerTooLarge {
                    cap,
                    declared: None,
                });
            }
            arrived += piece.len();
            // A push releases at most the piece (with up to 3 bytes of a
            // character split before it, pushed apart: one more marker cut
            // short) and what was held.
            let release = concealing
                .most_released(piece.len().saturating_add(3))
                .saturating_add(REDACTED.len());
            reserve(&mut text, release, cap_bytes);
            characters
                .push(&piece, |part| concealing.push(part, &mut text))
                .map_err(|_| Failure::AnswerNotUtf8)?;
        }
        characters.finish().map_err(|_| Failure::AnswerNotUtf8)?;
        reserve(&mut text, concealing.most_released(0), cap_bytes);
        concealing.finish(&mut text);
        Ok(())
    };
    let read = timeout_at(deadline.at(), read).await;
    let arrived = u64::try_from(arrived).unwrap_or(u64::MAX);
    match read {
        Err(_) => Err((Failure::Deadline { ms: deadline.ms() }, arrived)),
        Ok(Err(failure)) => Err((failure, arrived)),
        Ok(Ok(())) => Ok(text),
    }
}

/// Makes room in `text` for `release` bytes more: doubling, as a `String`
/// grows, but never past the cap (from just over half the cap, doubling
/// would allocate nearly twice it). Reserving what a push can release, not
/// the concealer's whole reach, lets an answer as long as it declared fit
/// what was reserved for it, with no copy to a larger buffer at its end.
fn reserve(text: &mut String, release: usize, cap: usize) {
    if text.capacity() - text.len() < release {
        let wanted = text
            .capacity()
            .saturating_mul(2)
            .min(cap)
            .max(text.len().saturating_add(release));
        text.reserve_exact(wanted - text.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_head_never_holds_more_than_its_limit_however_the_pieces_fall() {
        const KIB: usize = 1024;
        // As hyper reads a body that is all there (each read twice the
        // last), in tiny pieces, in one piece past the limit, and in pieces
        // that end just short of it.
        let cases: [&[usize]; 4] = [
            &[8 * KIB - 300, 16 * KIB, 32 * KIB, 64 * KIB, 128 * KIB],
            &[1; 70 * KIB],
            &[300 * KIB],
            &[56 * KIB, 8 * KIB - 1, 2],
        ];
        for pieces in cases {
            let mut head = Vec::new();
            let mut offered = Vec::new();
            for (i, &len) in pieces.iter().enumerate() {
                let piece: Vec<u8> = (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect();
                offered.extend_from_slice(&piece);
                keep(&mut head, &piece);
                assert!(
                    head.capacity() <= DETAIL_READ_LIMIT,
                    "{} bytes held after {} pieces",
                    head.capacity(),
                    i + 1
                );
            }
            assert_eq!(head, offered[..offered.len().min(DETAIL_READ_LIMIT)]);
        }
    }
}
