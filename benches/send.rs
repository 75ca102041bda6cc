//! What [`HttpTransport::send`] adds over a bare `reqwest` POST.
//!
//! Both clients are configured the same way (no proxy, no redirects, the
//! same 30 s deadline, the same headers and body) and send to the same
//! in-process loopback server, which answers every request with one of three
//! pre-built responses: a small JSON answer, a 1 MiB JSON answer of
//! generated text (its strings escape newlines and quotes, as an engine
//! that generates text writes them), and a 1 MiB JSON answer with no escape
//! at all. Each is sent one at a time and 32 at once.
//!
//! `cargo bench --bench send` runs criterion's groups, then prints the ratio
//! of medians, transport / bare, from its own interleaved runs: samples of
//! the two clients alternate, so drift in the machine's speed lands on both.
//!
//! The server runs on its own thread and runtime and the clients on one
//! single-threaded runtime, so on a two-core machine each side has a core;
//! the server only parses a request head and writes a ready buffer, so it is
//! never what a client waits for.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput};
use memchr::memmem;
use meterwire::{Env, HttpTransport, USER_AGENT};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::redirect::Policy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

/// The transport's meter, its own source, so that its cost per send is
/// measured on the code the transport runs. `crate::Cause` in it resolves
/// to the import below.
#[allow(dead_code, unused_imports)]
#[path = "../src/meter.rs"]
mod meter;

#[allow(unused_imports)]
use meterwire::Cause;

const TOKEN: &str = "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN";
const DEADLINE: Duration = Duration::from_secs(30);
const REQUEST: &str = r#"{"prompt":"the cat sat on the","max_tokens":16,"temperature":0.2}"#;
const SMALL: &str = r#"{"id":"cmpl-7f3a","choices":[{"text":" mat","score":0.731}],"usage":{"prompt":6,"completion":1}}"#;
const LARGE_LEN: usize = 1 << 20;

/// Bounds on the server's loops; a run uses a few dozen connections and a
/// few hundred thousand requests.
const MAX_CONNECTIONS: usize = 4096;
const MAX_REQUESTS_PER_CONNECTION: usize = 1 << 24;
const MAX_HEAD: usize = 64 * 1024;

/// A 1 MiB answer: JSON records, as generated text (strings holding `\n`
/// and `\"`) or plain (no escape at all), and no token.
fn large_answer(escaped: bool) -> String {
    let mut body = String::with_capacity(LARGE_LEN + 256);
    body.push_str(r#"{"choices":["#);
    let mut i = 0;
    // Leaves room for the closing `]}` and stops at exactly 1 MiB.
    while body.len() < LARGE_LEN - 200 {
        let text = if escaped {
            r#"The cat sat on the mat.\nIt said \"warm\", and slept."#
        } else {
            "The cat sat on the mat. It said warm, and slept."
        };
        body.push_str(&format!(
            r#"{{"index":{i},"text":"{text}","score":0.{:03}}},"#,
            i % 1000
        ));
        i += 1;
    }
    body.push_str(r#"{"index":-1,"text":""#);
    while body.len() < LARGE_LEN - 4 {
        body.push('x');
    }
    body.push_str(r#""}]}"#);
    body
}

fn response(body: &str) -> Bytes {
    Bytes::from(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    ))
}

/// The loopback engine's answers, by path.
struct Answers {
    small: Bytes,
    plain: Bytes,
    text: Bytes,
}

/// Starts the loopback engine on its own thread: `/small` gets the small
/// answer, `/plain` the plain 1 MiB one, anything else the generated-text
/// 1 MiB one. Returns its port.
fn start_server(answers: Answers) -> u16 {
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("the server runtime starts");
        runtime.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let port = listener.local_addr().expect("local address").port();
            port_tx.send(port).expect("the bench waits for the port");
            let answers = Arc::new(answers);
            for _ in 0..MAX_CONNECTIONS {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, Arc::clone(&answers)));
            }
        });
    });
    port_rx.recv().expect("the server reports its port")
}

/// HTTP/1.1 keep-alive: reads each request's head and `content-length`
/// body, and writes the ready answer.
async fn serve(mut stream: TcpStream, answers: Arc<Answers>) {
    let mut buffer: Vec<u8> = Vec::with_capacity(8 * 1024);
    for _ in 0..MAX_REQUESTS_PER_CONNECTION {
        let head_end = loop {
            if let Some(at) = memmem::find(&buffer, b"\r\n\r\n") {
                break at + 4;
            }
            if buffer.len() > MAX_HEAD {
                return;
            }
            match stream.read_buf(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        let head = &buffer[..head_end];
        let answer = if head.starts_with(b"POST /small ") {
            &answers.small
        } else if head.starts_with(b"POST /plain ") {
            &answers.plain
        } else {
            &answers.text
        };
        let length = content_length(head).unwrap_or(0);
        while buffer.len() < head_end + length {
            match stream.read_buf(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        buffer.drain(..head_end + length);
        if stream.write_all(answer).await.is_err() {
            return;
        }
    }
}

fn content_length(head: &[u8]) -> Option<usize> {
    head.split(|&b| b == b'\n').find_map(|line| {
        let line = std::str::from_utf8(line).ok()?;
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

/// One of the two contestants, sending to one address.
#[derive(Clone)]
enum Sender {
    Bare {
        client: reqwest::Client,
        url: reqwest::Url,
        authorization: HeaderValue,
    },
    Transport(HttpTransport),
}

impl Sender {
    fn bare(url: &str) -> Sender {
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(Policy::none())
            .timeout(DEADLINE)
            .connect_timeout(DEADLINE)
            .user_agent(USER_AGENT)
            .build()
            .expect("the bare client builds");
        let mut authorization =
            HeaderValue::from_str(&format!("Bearer {TOKEN}")).expect("a valid header");
        authorization.set_sensitive(true);
        Sender::Bare {
            client,
            url: url.parse().expect("a valid URL"),
            authorization,
        }
    }

    fn transport(url: &str) -> Sender {
        let transport = HttpTransport::builder("bench")
            .env(Env::from_pairs([
                ("CHANT_BEHAVIOUR_ENGINE", url),
                ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
            ]))
            .deadline(DEADLINE)
            .build()
            .expect("the transport builds");
        assert!(transport.refusal().is_none(), "the transport can send");
        Sender::Transport(transport)
    }

    /// Sends the request and returns the answer's length in bytes.
    async fn send(&self) -> usize {
        let body = Bytes::from_static(REQUEST.as_bytes());
        match self {
            Sender::Bare {
                client,
                url,
                authorization,
            } => {
                let response = client
                    .post(url.clone())
                    .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                    .header(ACCEPT, HeaderValue::from_static("application/json"))
                    .header(AUTHORIZATION, authorization.clone())
                    .body(body)
                    .send()
                    .await
                    .expect("the loopback engine answers");
                assert!(response.status().is_success());
                let bytes = response.bytes().await.expect("the body arrives");
                // The least a transport that returns text must do: check
                // that the answer is UTF-8, without copying it.
                std::str::from_utf8(&bytes).expect("UTF-8 text").len()
            }
            Sender::Transport(transport) => match transport.send(body).await {
                Ok(answer) => answer.text().len(),
                Err(refusal) => panic!("the loopback engine answers: {}", refusal.reason()),
            },
        }
    }

    /// Sends `concurrency` requests at once and waits for all of them.
    async fn batch(&self, concurrency: usize) -> usize {
        if concurrency == 1 {
            return self.send().await;
        }
        let mut set = JoinSet::new();
        for _ in 0..concurrency {
            let sender = self.clone();
            set.spawn(async move { sender.send().await });
        }
        let mut total = 0;
        while let Some(done) = set.join_next().await {
            total += done.expect("a send does not panic");
        }
        total
    }
}

/// One row of the bench: an answer size at a concurrency, both contestants.
struct Case {
    name: String,
    answer_len: usize,
    concurrency: usize,
    bare: Sender,
    transport: Sender,
}

fn cases(port: u16) -> Vec<Case> {
    let mut cases = Vec::new();
    let sizes = [
        ("small", "small", SMALL.len()),
        ("text", "1MiB-text", LARGE_LEN),
        ("plain", "1MiB-plain", LARGE_LEN),
    ];
    for (path, size, answer_len) in sizes {
        for concurrency in [1, 32] {
            let url = format!("http://127.0.0.1:{port}/{path}");
            cases.push(Case {
                name: format!("{size}/c{concurrency}"),
                answer_len,
                concurrency,
                // Each case has its own clients, so one case's pooled
                // connections never serve another's.
                bare: Sender::bare(&url),
                transport: Sender::transport(&url),
            });
        }
    }
    cases
}

/// Fills both pools and checks both clients get the whole answer. Under
/// `cargo test --all-targets` (unoptimized, each benchmark run once) one
/// send each is check enough.
fn warm_up(runtime: &Runtime, case: &Case) {
    let (rounds, concurrency) = if measuring() {
        (3, case.concurrency)
    } else {
        (1, 1)
    };
    for sender in [&case.bare, &case.transport] {
        for _ in 0..rounds {
            let total = runtime.block_on(sender.batch(concurrency));
            assert_eq!(total, case.answer_len * concurrency, "{}", case.name);
        }
    }
}

fn criterion_groups(criterion: &mut Criterion, runtime: &Runtime, cases: &[Case]) {
    for case in cases {
        let mut group = criterion.benchmark_group(format!("send/{}", case.name));
        group
            .throughput(Throughput::Elements(case.concurrency as u64))
            .sample_size(30)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        group.bench_function("bare", |b| {
            b.iter(|| runtime.block_on(case.bare.batch(case.concurrency)))
        });
        group.bench_function("transport", |b| {
            b.iter(|| runtime.block_on(case.transport.batch(case.concurrency)))
        });
        group.finish();
    }
}

/// Seconds per batch of `sender`, timed over `batches` batches.
fn per_batch(runtime: &Runtime, sender: &Sender, concurrency: usize, batches: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..batches {
        black_box(runtime.block_on(sender.batch(concurrency)));
    }
    start.elapsed().as_secs_f64() / batches as f64
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Medians of the two contestants over alternating samples (bare first in
/// even rounds, transport first in odd ones, so neither always follows the
/// other), each sample some 20 ms of batches.
fn medians(runtime: &Runtime, case: &Case) -> (f64, f64) {
    const ROUNDS: usize = 101;
    let once = per_batch(runtime, &case.bare, case.concurrency, 3);
    let batches = ((0.02 / once) as usize).clamp(1, 1000);
    let (mut bare, mut ours) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            bare.push(per_batch(runtime, &case.bare, case.concurrency, batches));
            ours.push(per_batch(
                runtime,
                &case.transport,
                case.concurrency,
                batches,
            ));
        } else {
            ours.push(per_batch(
                runtime,
                &case.transport,
                case.concurrency,
                batches,
            ));
            bare.push(per_batch(runtime, &case.bare, case.concurrency, batches));
        }
    }
    (median(bare), median(ours))
}

/// What the meter does for one send, with the meter's own code: the
/// transport's `src/meter.rs`, compiled into this bench. The meter cannot be
/// switched off (there is no public switch for a benchmark's sake), so its
/// cost is its work per send, measured in the same run as the sends: one
/// attempt with its bytes, the bytes received, and the outcome with its
/// latency recorded into the histogram.
fn meter_work_per_send() -> f64 {
    let meter = meter::Meter::default();
    const SENDS: u64 = 1_000_000;
    let start = Instant::now();
    for i in 0..SENDS {
        meter.attempt(black_box(REQUEST.len()));
        meter.received(black_box(SMALL.len()));
        let latency = Duration::from_micros(black_box(50 + (i & 0xfff)));
        meter.sent(black_box(Ok(())), Some(latency), false);
    }
    black_box(meter.snapshot());
    start.elapsed().as_secs_f64() / SENDS as f64
}

fn ratio_table(runtime: &Runtime, cases: &[Case]) {
    let meter = meter_work_per_send();
    println!();
    println!("send: medians of interleaved runs, per batch of `concurrency` sends");
    println!(
        "{:<12} {:>12} {:>12} {:>18}",
        "case", "bare", "transport", "transport / bare"
    );
    for case in cases {
        let (bare, ours) = medians(runtime, case);
        println!(
            "{:<12} {:>9.1} µs {:>9.1} µs {:>17.3}x",
            case.name,
            bare * 1e6,
            ours * 1e6,
            ours / bare
        );
        if case.name == "small/c1" {
            println!(
                "{:<12} {:>9.3} µs per send, {:.3}% of a small/c1 send",
                "  the meter",
                meter * 1e6,
                100.0 * meter / ours
            );
        }
    }
}

/// True when cargo runs this as a benchmark (`cargo bench`), not as a test
/// (`cargo test --all-targets` runs each benchmark once and must stay fast).
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    has("--bench") && !has("--test") && !has("--list") && !has("--profile-time")
}

fn main() {
    let (text, plain) = (large_answer(true), large_answer(false));
    assert_eq!((text.len(), plain.len()), (LARGE_LEN, LARGE_LEN));
    let port = start_server(Answers {
        small: response(SMALL),
        plain: response(&plain),
        text: response(&text),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the client runtime starts");
    let cases = cases(port);
    for case in &cases {
        warm_up(&runtime, case);
    }
    let mut criterion = Criterion::default().configure_from_args();
    criterion_groups(&mut criterion, &runtime, &cases);
    criterion.final_summary();
    if measuring() {
        ratio_table(&runtime, &cases);
    }
}
