//! A hold settles: an event that ends in what could begin the token (a
//! DeepSeek reasoning text ending in `…the task`, an Anthropic message id
//! ending in `sk`, for a token that starts with `sk-`) holds the events
//! after it for 64 events at most when nothing continues it, and none once
//! the engine closes its block; after that, each event is yielded as it
//! arrives. Counted, not timed: the engine writes one event per permit the
//! test gives, and each permit must bring exactly the next event.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use meterwire::{AnswerStream, Env, HttpTransport};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::streams::event;
use crate::support::raw_http::read_request;
use crate::support::{GUARD, SCOPE};

const TOKEN: &str = "sk-proj-7Qx9Lm2Pz4Vb8Nc6Rt1Yw3Kd";

/// How many events pass without continuing a channel before its hold
/// settles.
const SETTLE_AFTER: usize = 64;

/// An engine that writes `items` (each an SSE event of its own), then
/// `[DONE]`, one per permit, counting what it wrote; one connection.
struct Gated {
    address: String,
    permits: mpsc::UnboundedSender<()>,
    written: Arc<AtomicUsize>,
}

async fn gated(items: Vec<String>) -> Gated {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    let (permits, mut granted) = mpsc::unbounded_channel::<()>();
    let written = Arc::new(AtomicUsize::new(0));
    let counted = written.clone();
    tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        if read_request(&mut stream).await.is_none() {
            return;
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if stream.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let done = "data: [DONE]\n\n".to_owned();
        for item in items.iter().chain([&done]) {
            if granted.recv().await.is_none() {
                return;
            }
            let chunk = format!("{:x}\r\n{item}\r\n", item.len());
            if stream.write_all(chunk.as_bytes()).await.is_err() || stream.flush().await.is_err() {
                return;
            }
            counted.fetch_add(1, Ordering::SeqCst);
        }
        let _ = stream.write_all(b"0\r\n\r\n").await;
        let _ = stream.flush().await;
    });
    Gated {
        address,
        permits,
        written,
    }
}

async fn opened(engine: &Gated) -> AnswerStream {
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", engine.address.as_str()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ]))
        .build()
        .expect("builds");
    tokio::time::timeout(GUARD, transport.stream("{}"))
        .await
        .expect("the head arrives")
        .expect("a 2xx head")
}

/// The data of the SSE event `item`.
fn data_of(item: &str) -> &str {
    item.lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or_default()
}

/// Reads `items` through the gate: the first `together` come out together
/// once that many were written; every later one comes out after exactly
/// its own permit, before the engine writes the next. Then the end.
async fn assert_each_arrives_once_settled(items: Vec<String>, together: usize) {
    let engine = gated(items.clone()).await;
    let mut stream = opened(&engine).await;
    for _ in 0..together {
        engine.permits.send(()).expect("the engine waits");
    }
    for item in &items[..together] {
        let read = event(&mut stream)
            .await
            .expect("an event")
            .expect("not refused");
        assert_eq!(read.data(), data_of(item));
    }
    assert_eq!(engine.written.load(Ordering::SeqCst), together);
    for (n, item) in items.iter().enumerate().skip(together) {
        engine.permits.send(()).expect("the engine waits");
        let read = event(&mut stream)
            .await
            .expect("an event")
            .expect("not refused");
        assert_eq!(read.data(), data_of(item), "event {n}");
        assert_eq!(
            engine.written.load(Ordering::SeqCst),
            n + 1,
            "event {n} came with its own write, none after it"
        );
    }
    engine.permits.send(()).expect("the engine waits");
    assert!(event(&mut stream).await.is_none(), "then the end");
}

fn openai(field: &str, text: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"deepseek-reasoner\",\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":{}}},\"finish_reason\":null}}]}}\n\n",
        serde_json::to_string(text).expect("a string")
    )
}

fn anthropic_delta(index: usize, text: &str) -> String {
    format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"text_delta\",\"text\":{}}}}}\n\n",
        serde_json::to_string(text).expect("a string")
    )
}

#[tokio::test]
async fn a_reasoning_text_ending_in_the_tokens_first_letters_holds_sixty_four_events_then_none() {
    let mut items = vec![openai(
        "reasoning_content",
        "The user wants a summary, so I will do the task",
    )];
    items.extend((0..5000).map(|n| openai("content", &format!("word {n} "))));
    assert_each_arrives_once_settled(items, SETTLE_AFTER + 1).await;
}

#[tokio::test]
async fn a_message_id_ending_in_the_tokens_first_letters_holds_sixty_four_events_then_none() {
    let mut items = vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYsk\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n".to_owned(),
    ];
    items.extend((0..5000).map(|n| anthropic_delta(0, &format!("word {n} "))));
    assert_each_arrives_once_settled(items, SETTLE_AFTER + 1).await;
}

#[tokio::test]
async fn a_block_the_engine_closes_releases_what_it_held_at_once() {
    let mut items = vec![
        anthropic_delta(0, "The key is sk"),
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
            .to_owned(),
    ];
    items.extend((0..200).map(|n| anthropic_delta(1, &format!("word {n} "))));
    assert_each_arrives_once_settled(items, 2).await;
}
