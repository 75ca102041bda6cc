//! The stream readers alone, through the public API: arbitrary text in
//! arbitrary pieces, read as chunks, events, lines and deltas. The oracle:
//! no panic; chunks join back into the text, and so do the deltas of a
//! stream of no stream format; every event's data and every line is text
//! the pieces held (no byte invented); nothing after the end or a refusal;
//! a clean end of events (and of the deltas read from them) says how it
//! ended, a refusal not.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::AnswerStream;

/// Whether `item` is a reader's last: a clean end says how it ended, a
/// refusal says why itself.
fn is_last<T, E>(item: &Option<Result<T, E>>, stream: &AnswerStream) -> bool {
    match item {
        Some(Ok(_)) => false,
        Some(Err(_)) => {
            assert!(stream.ending().is_none());
            true
        }
        None => {
            assert!(stream.ending().is_some());
            true
        }
    }
}

fuzz_target!(|input: (Vec<u8>, String)| {
    let (cuts, text) = input;
    let mut pieces = Vec::new();
    let mut rest = text.as_str();
    for cut in cuts.iter().take(32) {
        let at = usize::from(*cut).min(rest.len());
        let at = (0..=at)
            .rev()
            .find(|at| rest.is_char_boundary(*at))
            .unwrap_or(0);
        let (piece, after) = rest.split_at(at);
        pieces.push(piece.to_owned());
        rest = after;
    }
    pieces.push(rest.to_owned());
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    runtime.block_on(async {
        let mut stream = AnswerStream::from_chunks(200, pieces.clone());
        let mut joined = String::new();
        while let Some(chunk) = stream.next_chunk().await {
            joined.push_str(&chunk.expect("chunks of a fake's text are never refused"));
        }
        assert_eq!(joined, text);
        assert!(stream.next_chunk().await.is_none());

        let mut stream = AnswerStream::from_chunks(200, pieces.clone());
        let mut joined = String::new();
        while let Some(delta) = stream.next_delta().await {
            let delta = delta.expect("text of no stream format is never refused");
            assert!(!delta.text().is_empty());
            joined.push_str(delta.text());
        }
        assert_eq!(joined, text);

        let mut stream =
            AnswerStream::from_chunks(200, pieces.clone()).with_content_type("text/event-stream");
        loop {
            let delta = stream.next_delta().await;
            if let Some(Ok(delta)) = &delta {
                assert!(!delta.text().is_empty());
            }
            if is_last(&delta, &stream) {
                break;
            }
        }
        assert!(stream.next_delta().await.is_none());

        let mut stream = AnswerStream::from_chunks(200, pieces.clone());
        loop {
            let event = stream.next_event().await;
            if let Some(Ok(event)) = &event {
                for line in event.data().split('\n') {
                    assert!(text.contains(line), "{line:?} not in the text");
                }
            }
            if is_last(&event, &stream) {
                break;
            }
        }
        assert!(stream.next_event().await.is_none());

        let mut stream = AnswerStream::from_chunks(200, pieces);
        loop {
            match stream.next_line().await {
                Some(Ok(line)) => assert!(text.contains(&line), "{line:?} not in the text"),
                Some(Err(_)) | None => break,
            }
        }
        assert!(stream.next_line().await.is_none());
    });
});
