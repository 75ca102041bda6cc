//! What [`HttpTransport::stream`] adds over a bare `reqwest`
//! `bytes_stream()` with a naive server-sent-events split, on a stream of
//! 1,000 events: the time to the first event, and the latency each event
//! gains between the engine writing it and the reader having it.
//!
//! The engine is a blocking server on its own thread, in this process: it
//! writes each event as one chunk, flushed, stamped with the nanoseconds
//! since an instant both sides share, and pauses about 100 µs before the
//! next, so that each event is a piece of its own on the wire, as a
//! generating engine writes them. The readers parse each event's stamp,
//! so an event held back (past its blank line) shows as latency.
//!
//! `cargo bench --bench stream` runs criterion's group (the time to the
//! first event), then prints, from interleaved runs of the two readers, the
//! medians and their ratio, and the added latency per event.
//!
//! Then a realistic chat stream: 2,000 OpenAI chunks of English text, a
//! word or half a word each, as a model streams them, 2 ms apart, read
//! with every reading of every string joined and concealed, once for each
//! of three tokens (the held share depends on how a token's patterns
//! begin). An event the channels hold waits for the next, 2 ms later, so
//! its latency tells it apart: the share of events held on this
//! token-free stream, and the latency added to the others (mean and p99)
//! against the bare reader's. The bare reader's events past the same mark
//! are the host's own stalls, the floor under that count on a busy host.

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::Criterion;
use futures_util::StreamExt;
use meterwire::{Env, HttpTransport};
use tokio::runtime::Runtime;

const TOKEN: &str = "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN";
const EVENTS: usize = 1_000;
const PAUSE: Duration = Duration::from_micros(100);
const CHAT_EVENTS: usize = 2_000;
const CHAT_PAUSE: Duration = Duration::from_millis(2);
/// A latency past this is an event held for the next (2 ms later).
const HELD_NANOS: u64 = 1_500_000;
/// Bounds on the server's loop.
const MAX_CONNECTIONS: usize = 100_000;

/// The instant every stamp counts from.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn stamp() -> u64 {
    u64::try_from(base().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The engine: for each request, a head, then `EVENTS` stamped events and
/// `[DONE]`.
fn start_engine() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(MAX_CONNECTIONS) {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || serve(stream));
        }
    });
    port
}

fn serve(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    if request.starts_with(b"POST /v1/chat") {
        return serve_chat(stream);
    }
    for i in 0..=EVENTS {
        let event = if i == EVENTS {
            "data: [DONE]\n\n".to_owned()
        } else {
            format!(
                "data: {{\"i\":{i},\"t\":{},\"text\":\"a token of generated text\"}}\n\n",
                stamp()
            )
        };
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        if stream.write_all(chunk.as_bytes()).is_err() {
            return;
        }
        std::thread::sleep(PAUSE);
    }
    let _ = stream.write_all(b"0\r\n\r\n");
}

/// What a model streams: English text, a word (or half a long one) per
/// chunk, with the spaces and punctuation a tokenizer keeps.
fn chat_pieces() -> Vec<String> {
    const TEXT: &str = "Sure! Here is a short overview of how streaming works in practice. \
        When a client sends a request with stream set to true, the server starts generating tokens \
        and sends each one as soon as it is ready, so the user sees the answer appear word by word. \
        Each chunk carries a small delta: usually a single token, sometimes a piece of punctuation, \
        and the client joins them in order. The final chunk has an empty delta and a finish reason, \
        which tells the client that the model stopped because it reached a natural end, hit the \
        length limit, or decided to call a tool. In 2024 most providers followed the same format, \
        with small differences in field names; libraries hide them behind one interface. If you \
        need the full text, keep appending each delta to a buffer; if you render it live, flush \
        the buffer to the screen every few milliseconds. Errors can also arrive mid-stream, so \
        check every event before you trust it, and remember that the connection may close early.";
    let mut pieces = Vec::new();
    for word in TEXT.split_whitespace() {
        let (head, tail) = match word.char_indices().nth(6) {
            Some((at, _)) if word.len() > 8 => word.split_at(at),
            _ => (word, ""),
        };
        pieces.push(format!(" {head}"));
        if !tail.is_empty() {
            pieces.push(tail.to_owned());
        }
    }
    pieces
}

/// A chat stream: `CHAT_EVENTS` stamped chunks, then `[DONE]`.
fn serve_chat(mut stream: TcpStream) {
    let pieces = chat_pieces();
    for i in 0..=CHAT_EVENTS {
        let event = if i == CHAT_EVENTS {
            "data: [DONE]\n\n".to_owned()
        } else {
            let content = serde_json::to_string(&pieces[i % pieces.len()]).unwrap_or_default();
            format!(
                "data: {{\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\"created\":1741569952,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_44709d6fcb\",\"t\":{},\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{content}}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
                stamp()
            )
        };
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        if stream.write_all(chunk.as_bytes()).is_err() {
            return;
        }
        std::thread::sleep(CHAT_PAUSE);
    }
    let _ = stream.write_all(b"0\r\n\r\n");
}

/// What one read of the stream saw.
struct Seen {
    first: Duration,
    /// Nanoseconds from each event's stamp to its reading.
    latencies: Vec<u64>,
}

fn stamp_of(data: &str) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_str(data).ok()?;
    value["t"].as_u64()
}

async fn with_transport(transport: &HttpTransport) -> Seen {
    with_transport_of(transport, EVENTS).await
}

async fn with_transport_of(transport: &HttpTransport, events: usize) -> Seen {
    let started = Instant::now();
    let mut stream = transport.stream("{}").await.expect("a 2xx head");
    let mut first = None;
    let mut latencies = Vec::with_capacity(events);
    while let Some(event) = stream.next_event().await {
        let now = stamp();
        let event = event.expect("not refused");
        first.get_or_insert_with(|| started.elapsed());
        if let Some(sent) = stamp_of(event.data()) {
            latencies.push(now.saturating_sub(sent));
        }
    }
    assert_eq!(latencies.len(), events);
    Seen {
        first: first.unwrap_or_default(),
        latencies,
    }
}

async fn bare(client: &reqwest::Client, url: &str) -> Seen {
    bare_of(client, url, EVENTS).await
}

async fn bare_of(client: &reqwest::Client, url: &str, events: usize) -> Seen {
    let started = Instant::now();
    let response = client
        .post(url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body("{}")
        .send()
        .await
        .expect("a response");
    let mut body = response.bytes_stream();
    let mut pending: Vec<u8> = Vec::new();
    let mut first = None;
    let mut latencies = Vec::with_capacity(events);
    while let Some(piece) = body.next().await {
        pending.extend_from_slice(&piece.expect("a piece"));
        // The naive split: events end at a blank line.
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let now = stamp();
            let event: Vec<u8> = pending.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&event);
            first.get_or_insert_with(|| started.elapsed());
            let data = text.trim().strip_prefix("data: ").unwrap_or("");
            if let Some(sent) = stamp_of(data) {
                latencies.push(now.saturating_sub(sent));
            }
        }
    }
    assert_eq!(latencies.len(), events);
    Seen {
        first: first.unwrap_or_default(),
        latencies,
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn mean_micros(latencies: &[u64]) -> f64 {
    latencies.iter().sum::<u64>() as f64 / latencies.len() as f64 / 1000.0
}

fn p99_micros(latencies: &[u64]) -> f64 {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() * 99 / 100] as f64 / 1000.0
}

/// True when cargo runs this as a benchmark, not as a test.
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    has("--bench") && !has("--test") && !has("--list") && !has("--profile-time")
}

fn main() {
    base();
    let port = start_engine();
    let url = format!("http://127.0.0.1:{port}/v1/stream");
    let runtime: Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the client runtime starts");
    let transport = HttpTransport::builder("bench")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", url.as_str()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ]))
        .build()
        .expect("builds");
    // reqwest is built without a TLS provider of its own, as the
    // transport's is; the bare client gets the same one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client");
    // Warm both, and check what each reads.
    runtime.block_on(with_transport(&transport));
    runtime.block_on(bare(&client, &url));

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("stream/first-event");
    group.sample_size(20);
    group.bench_function("bare", |b| {
        b.iter(|| black_box(runtime.block_on(bare(&client, &url)).first))
    });
    group.bench_function("transport", |b| {
        b.iter(|| black_box(runtime.block_on(with_transport(&transport)).first))
    });
    group.finish();
    criterion.final_summary();

    if measuring() {
        const ROUNDS: usize = 21;
        let (mut bare_first, mut ours_first) = (Vec::new(), Vec::new());
        let (mut bare_mean, mut ours_mean) = (Vec::new(), Vec::new());
        let (mut bare_p99, mut ours_p99) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let mut one = |ours: bool| {
                let seen = if ours {
                    runtime.block_on(with_transport(&transport))
                } else {
                    runtime.block_on(bare(&client, &url))
                };
                let (first, mean, p99) = if ours {
                    (&mut ours_first, &mut ours_mean, &mut ours_p99)
                } else {
                    (&mut bare_first, &mut bare_mean, &mut bare_p99)
                };
                first.push(seen.first.as_secs_f64() * 1e6);
                mean.push(mean_micros(&seen.latencies));
                p99.push(p99_micros(&seen.latencies));
            };
            one(round % 2 == 1);
            one(round % 2 == 0);
        }
        let (bare_first, ours_first) = (median(bare_first), median(ours_first));
        let (bare_mean, ours_mean) = (median(bare_mean), median(ours_mean));
        let (bare_p99, ours_p99) = (median(bare_p99), median(ours_p99));
        println!();
        println!("stream: medians of {ROUNDS} interleaved runs of {EVENTS} events each");
        println!(
            "{:<28} {:>12} {:>12} {:>18}",
            "", "bare", "transport", "transport / bare"
        );
        println!(
            "{:<28} {:>9.1} µs {:>9.1} µs {:>17.3}x",
            "time to the first event",
            bare_first,
            ours_first,
            ours_first / bare_first
        );
        println!(
            "{:<28} {:>9.1} µs {:>9.1} µs {:>+14.1} µs added",
            "latency per event, mean",
            bare_mean,
            ours_mean,
            ours_mean - bare_mean
        );
        println!(
            "{:<28} {:>9.1} µs {:>9.1} µs {:>+14.1} µs added",
            "latency per event, p99",
            bare_p99,
            ours_p99,
            ours_p99 - bare_p99
        );
        chat(&runtime, &client, port);
    }
}

/// The tokens the chat stream is read with, one transport each: the held
/// share depends on how the token's patterns begin.
const CHAT_TOKENS: [&str; 3] = [
    TOKEN,
    "sk-repro-7Qx9Lm2Pz4Vb8Nc6Rt1Yw3",
    "mw-test-Q7vX2kP9zR4tL8wN",
];

/// The chat stream's figures, for each of [`CHAT_TOKENS`]: events held,
/// and the latency added to the others, from interleaved runs of the two
/// readers.
fn chat(runtime: &Runtime, client: &reqwest::Client, port: u16) {
    const ROUNDS: usize = 4;
    let url = format!("http://127.0.0.1:{port}/v1/chat");
    println!();
    println!(
        "chat stream: medians of {ROUNDS} interleaved runs of {CHAT_EVENTS} chunks each, every reading joined"
    );
    println!(
        "{:<34} {:>12} {:>12} {:>12} {:>10} {:>16}",
        "token", "bare mean", "added mean", "added p99", "bare slow", "held (slow)"
    );
    for token in CHAT_TOKENS {
        let transport = HttpTransport::builder("bench")
            .env(Env::from_pairs([
                ("CHANT_BEHAVIOUR_ENGINE", url.as_str()),
                ("CHANT_BEHAVIOUR_TOKEN", token),
            ]))
            .build()
            .expect("builds");
        let (mut bare_mean, mut ours_mean) = (Vec::new(), Vec::new());
        let (mut bare_p99, mut ours_p99) = (Vec::new(), Vec::new());
        let (mut bare_slow, mut ours_held) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            for ours in [round % 2 == 1, round % 2 == 0] {
                let seen = if ours {
                    runtime.block_on(with_transport_of(&transport, CHAT_EVENTS))
                } else {
                    runtime.block_on(bare_of(client, &url, CHAT_EVENTS))
                };
                let (settled, held): (Vec<u64>, Vec<u64>) =
                    seen.latencies.iter().partition(|&&l| l < HELD_NANOS);
                if ours {
                    ours_mean.push(mean_micros(&settled));
                    ours_p99.push(p99_micros(&settled));
                    ours_held.push(held.len() as f64);
                } else {
                    bare_mean.push(mean_micros(&settled));
                    bare_p99.push(p99_micros(&settled));
                    bare_slow.push(held.len() as f64);
                }
            }
        }
        let (bare_mean, ours_mean) = (median(bare_mean), median(ours_mean));
        let (bare_p99, ours_p99) = (median(bare_p99), median(ours_p99));
        let (slow, held) = (median(bare_slow), median(ours_held));
        println!(
            "{:<34} {:>9.1} µs {:>+9.1} µs {:>+9.1} µs {:>10} {:>7} ({:.2}%)",
            token,
            bare_mean,
            ours_mean - bare_mean,
            ours_p99 - bare_p99,
            slow,
            held,
            100.0 * held / CHAT_EVENTS as f64
        );
    }
}
