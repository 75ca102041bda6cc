//! What [`HttpTransport::send`] adds over a bare `reqwest` POST.
//!
//! Both clients are configured the same way (no proxy, no redirects, the
//! same 30 s deadline, the same headers and body) and send to the same
//! loopback servers, which answer every request with one of five pre-built
//! responses:
//!
//! - `small`: a small JSON answer, no token, one at a time and 32 at once;
//! - `1MiB-echo`: exactly 1 MiB of plain JSON records (none of `\ % &`),
//!   with the raw token echoed 1,000 times, spread evenly through the body,
//!   8 at once;
//! - `1MiB-generated`: exactly 1 MiB of JSON records of generated text,
//!   whose strings escape newlines, quotes and non-ASCII characters (`\n`,
//!   `\"`, `caf\u00e9`, `\u2014`), as an engine that generates text writes
//!   them; every 1,100th record quotes the token back JSON-escaped (9
//!   times), in turn as PHP escapes it (`\u002B` and `\/`) and with `\/`
//!   only; 8 at once;
//! - `1MiB-104-echoes`: the same, with every 100th record quoting the token
//!   (104 times), 8 at once;
//! - `1MiB-paced`: the generated answer, one at a time, from a server of its
//!   own that writes it in 16 KiB pieces at 125 MB/s, as a 1 Gb/s link
//!   delivers it: the concealer's work overlaps the transfer.
//!
//! Before anything is timed, each case checks what both clients get: the
//! bare client the whole body, the transport the body with every echo, and
//! nothing else, replaced by `[redacted]` (as many markers as echoes were
//! put in, counted as the body was built), so the figures can only be those
//! of a concealer that works.
//!
//! `cargo bench --bench send` runs criterion's groups, then prints, from its
//! own interleaved runs, the medians of both, the ratio of times (transport
//! / bare) and the ratio of throughputs (bare / transport, the figure the
//! targets are given in): samples of the two clients alternate, so drift in
//! the machine's speed lands on both. `cargo bench --bench send -- ratio`
//! prints the table alone.
//!
//! What reading usage costs (`-- usage` prints that table alone): the
//! transport cannot be told not to read it (no public switch exists for a
//! benchmark's sake), so the small answer and the generated 1 MiB one are
//! served twice, with an OpenAI `usage` member at their end and with the
//! same bytes but the member's name changed by one letter (`"usagf"`),
//! which the reader does not take for usage. Interleaved, the two give
//! what finding and parsing the member, summing it in the meter and
//! recording it on the span cost; the search both pay (at most the last
//! 32 KiB of an answer, twice, for an answer without usage) is timed on
//! its own, with the reader's own source compiled into this bench, as a
//! share of a send.
//!
//! The servers run on threads of their own and the clients on one
//! single-threaded runtime, so on a two-core machine each side has a core;
//! the servers only parse a request head and write a ready buffer, so they
//! are never what a client waits for (but for the paced one, by design).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput};
use memchr::memmem;
use meterwire::{Answer, Env, HttpTransport, REDACTED, USER_AGENT};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::redirect::Policy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

/// The transport's meter, its own source, so that its cost per send is
/// measured on the code the transport runs. `crate::refusal::Cause` in it
/// resolves to the module below.
#[allow(dead_code, unused_imports)]
#[path = "../src/meter.rs"]
mod meter;

mod refusal {
    pub use meterwire::Cause;
}

/// The meter's locks, the transport's own source too.
#[allow(dead_code, unused_imports)]
#[path = "../src/lock.rs"]
mod lock;

/// The meter's sums of usage, which the meter's source holds, and the
/// reader of usage, timed alone: the transport's own sources.
#[allow(dead_code, unused_imports)]
#[path = "../src/usage/read.rs"]
mod usage_read;
#[allow(dead_code, unused_imports)]
#[path = "../src/usage/totals.rs"]
mod usage_totals;

mod usage {
    pub(crate) use crate::usage_totals::{Sums, Totals};
    pub use meterwire::Usage;
}

#[path = "common/records.rs"]
mod records;
use records::{JSON_FORMS, TOKEN, echo, generated, generated_echo, plain};

const DEADLINE: Duration = Duration::from_secs(30);
const REQUEST: &str = r#"{"prompt":"the cat sat on the","max_tokens":16,"temperature":0.2}"#;
const SMALL: &str = r#"{"id":"cmpl-7f3a","choices":[{"text":" mat","score":0.731}],"usage":{"prompt":6,"completion":1}}"#;
const LARGE_LEN: usize = 1 << 20;

/// Bounds on the server's loops; a run uses a few dozen connections and a
/// few hundred thousand requests.
const MAX_CONNECTIONS: usize = 4096;
const MAX_REQUESTS_PER_CONNECTION: usize = 1 << 24;
const MAX_HEAD: usize = 64 * 1024;

/// How many times the plain 1 MiB answer echoes the raw token.
const PLAIN_ECHOES: usize = 1_000;

/// Every how many records the generated answers echo the token: 9 times
/// in 1 MiB, and 104 times.
const GENERATED_EVERY: usize = 1_100;
const ECHOES_EVERY: usize = 100;

/// The paced server's link: 125 MB/s (1 Gb/s), written 16 KiB at a time.
const LINK_BYTES_PER_SEC: f64 = 125e6;
const PIECE: usize = 16 * 1024;

/// The usage member the billed answers end with, and its name made no
/// usage's by one letter, the same length.
const BILLED: &str = r#","usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":0}}}"#;
const UNBILLED: &str = r#","usagf":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":0}}}"#;

/// An answer the loopback engine sends, and what the transport must make
/// of it.
struct Body {
    /// The body as sent: what the bare client must get.
    sent: String,
    /// The body with each echo of the token, and nothing else, replaced by
    /// [`REDACTED`]: what the transport must return.
    concealed: String,
    /// How many echoes of the token `sent` holds, counted as they were put
    /// in.
    echoes: usize,
}

impl Body {
    /// An answer with no token.
    fn tokenless(text: &str) -> Body {
        Body {
            sent: text.to_owned(),
            concealed: text.to_owned(),
            echoes: 0,
        }
    }

    /// The start of a 1 MiB answer of records.
    fn open() -> Body {
        Body::tokenless(r#"{"records":["#)
    }

    /// True while there is room for another record, leaving enough for the
    /// closing one.
    fn room(&self) -> bool {
        self.sent.len() < LARGE_LEN - 200
    }

    /// Appends a record that holds no token.
    fn push(&mut self, record: &str) {
        self.sent.push_str(record);
        self.concealed.push_str(record);
    }

    /// Appends a record that holds the token in `form`: sent with it, and
    /// concealed with the marker in its place.
    fn push_echo(&mut self, record: impl Fn(&str) -> String, form: &str) {
        self.sent.push_str(&record(form));
        self.concealed.push_str(&record(REDACTED));
        self.echoes += 1;
    }

    /// The same answer, its closing `}` replaced by `member` (which closes
    /// it again).
    fn ending_with(&self, member: &str) -> Body {
        let swap = |text: &str| format!("{}{member}", &text[..text.len() - 1]);
        Body {
            sent: swap(&self.sent),
            concealed: swap(&self.concealed),
            echoes: self.echoes,
        }
    }

    /// Closes the records with one whose string of `x` brings the answer to
    /// exactly 1 MiB.
    fn close(mut self) -> Body {
        let filler = "x".repeat(LARGE_LEN - self.sent.len() - r#"{"id":-1,"text":""}]}"#.len());
        self.push(&format!(r#"{{"id":-1,"text":"{filler}"}}]}}"#));
        assert_eq!(self.sent.len(), LARGE_LEN);
        self
    }
}

/// 1 MiB of generated-text records, every `every`th echoing the token
/// JSON-escaped.
fn text_answer(every: usize) -> Body {
    let mut body = Body::open();
    let mut i = 0;
    while body.room() {
        match generated_echo(i, every) {
            None => body.push(&generated(i, None)),
            Some(form) => body.push_echo(|form| generated(i, Some(form)), form),
        }
        i += 1;
    }
    body.close()
}

/// 1 MiB of plain records, with the raw token echoed 1,000 times: echo `k`
/// is the first record past `(k + 1/2) / 1000` of the answer.
fn plain_answer() -> Body {
    let mut body = Body::open();
    let mut i = 0;
    while body.room() {
        let mark = (2 * body.echoes + 1) * LARGE_LEN / (2 * PLAIN_ECHOES);
        if body.echoes < PLAIN_ECHOES && body.sent.len() >= mark {
            body.push_echo(|token| echo(i, token), TOKEN);
        } else {
            body.push(&plain(i));
        }
        i += 1;
    }
    assert_eq!(body.echoes, PLAIN_ECHOES);
    body.close()
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
    generated: Bytes,
    echoes: Bytes,
    /// `/billed/…` and `/unbilled/…`: the small answer and the generated
    /// one, with and without usage.
    billed: [Bytes; 4],
}

/// Starts the loopback engine on its own thread: `/small` gets the small
/// answer, `/plain` the plain 1 MiB one, `/generated` the generated-text
/// 1 MiB one with 9 echoes, anything else the one with 104. Returns its
/// port.
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
        let answer = if let Some(at) = BILLED_PATHS
            .iter()
            .position(|path| head.starts_with(format!("POST /{path} ").as_bytes()))
        {
            &answers.billed[at]
        } else if head.starts_with(b"POST /small ") {
            &answers.small
        } else if head.starts_with(b"POST /plain ") {
            &answers.plain
        } else if head.starts_with(b"POST /generated ") {
            &answers.generated
        } else {
            &answers.echoes
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

/// The paths of [`Answers::billed`], in its order.
const BILLED_PATHS: [&str; 4] = [
    "billed/small",
    "unbilled/small",
    "billed/generated",
    "unbilled/generated",
];

fn content_length(head: &[u8]) -> Option<usize> {
    head.split(|&b| b == b'\n').find_map(|line| {
        let line = std::str::from_utf8(line).ok()?;
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

/// Starts a loopback engine of its own that answers every request with
/// `answer`, its head at once and its bytes in [`PIECE`]s on the schedule
/// of a [`LINK_BYTES_PER_SEC`] link (each piece leaves when the link would
/// have carried the ones before it; a thread per connection, which sleeps
/// between pieces). Returns its port.
fn start_paced_server(answer: Bytes) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("local address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(MAX_CONNECTIONS) {
            let Ok(stream) = stream else {
                return;
            };
            let _ = stream.set_nodelay(true);
            let answer = answer.clone();
            std::thread::spawn(move || serve_paced(stream, &answer));
        }
    });
    port
}

/// [`serve`], blocking, with the answer's body paced.
fn serve_paced(mut stream: std::net::TcpStream, answer: &[u8]) {
    use std::io::{Read, Write};
    let head_len = memmem::find(answer, b"\r\n\r\n").map_or(0, |at| at + 4);
    let (head, body) = answer.split_at(head_len);
    let piece_time = Duration::from_secs_f64(PIECE as f64 / LINK_BYTES_PER_SEC);
    let mut buffer: Vec<u8> = Vec::with_capacity(8 * 1024);
    let mut chunk = [0u8; 8 * 1024];
    for _ in 0..MAX_REQUESTS_PER_CONNECTION {
        let head_end = loop {
            if let Some(at) = memmem::find(&buffer, b"\r\n\r\n") {
                break at + 4;
            }
            if buffer.len() > MAX_HEAD {
                return;
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let length = content_length(&buffer[..head_end]).unwrap_or(0);
        while buffer.len() < head_end + length {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        buffer.drain(..head_end + length);
        if stream.write_all(head).is_err() {
            return;
        }
        let start = Instant::now();
        for (k, piece) in body.chunks(PIECE).enumerate() {
            let due = start + piece_time * u32::try_from(k).unwrap_or(u32::MAX);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if stream.write_all(piece).is_err() {
                return;
            }
        }
    }
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
        // reqwest is built without a TLS provider of its own, as the
        // transport's is; the bare client gets the same one.
        let _ = rustls::crypto::ring::default_provider().install_default();
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

    /// Sends the request and returns what came back.
    async fn receive(&self) -> Received {
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
                Received::Bare(response.bytes().await.expect("the body arrives"))
            }
            Sender::Transport(transport) => match transport.send(body).await {
                Ok(answer) => Received::Transport(answer),
                Err(refusal) => panic!("the loopback engine answers: {}", refusal.reason()),
            },
        }
    }

    /// Sends the request and returns the answer's length in bytes.
    async fn send(&self) -> usize {
        self.receive().await.text().len()
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

/// What one of the contestants got back.
enum Received {
    Bare(Bytes),
    Transport(Answer),
}

impl Received {
    fn text(&self) -> &str {
        match self {
            // The least a transport that returns text must do: check that
            // the answer is UTF-8, without copying it.
            Received::Bare(bytes) => std::str::from_utf8(bytes).expect("UTF-8 text"),
            Received::Transport(answer) => answer.text(),
        }
    }
}

/// One row of the bench: an answer at a concurrency, both contestants.
struct Case {
    name: String,
    body: Arc<Body>,
    concurrency: usize,
    bare: Sender,
    transport: Sender,
}

/// The cases: each answer at its concurrency, from the server at `port`
/// but for the paced one, from the server at `paced`.
fn cases(port: u16, paced: u16, bodies: &Bodies) -> Vec<Case> {
    let answers = [
        ("small/c1", port, "small", &bodies.small, 1),
        ("small/c32", port, "small", &bodies.small, 32),
        ("1MiB-echo/c8", port, "plain", &bodies.plain, 8),
        ("1MiB-generated/c8", port, "generated", &bodies.generated, 8),
        ("1MiB-104-echoes/c8", port, "echoes", &bodies.echoes, 8),
        ("1MiB-paced/c1", paced, "paced", &bodies.generated, 1),
    ];
    answers
        .into_iter()
        .map(|(name, port, path, body, concurrency)| {
            let url = format!("http://127.0.0.1:{port}/{path}");
            Case {
                name: name.to_owned(),
                body: Arc::clone(body),
                concurrency,
                // Each case has its own clients, so one case's pooled
                // connections never serve another's.
                bare: Sender::bare(&url),
                transport: Sender::transport(&url),
            }
        })
        .collect()
}

/// The answers' bodies, built once.
struct Bodies {
    small: Arc<Body>,
    plain: Arc<Body>,
    generated: Arc<Body>,
    echoes: Arc<Body>,
    /// As [`BILLED_PATHS`] names them.
    billed: [Arc<Body>; 4],
}

/// The usage rows: each answer with usage (`transport`) against the same
/// without (`bare`), both through the transport.
fn usage_cases(port: u16, bodies: &Bodies) -> Vec<(Case, Arc<Body>)> {
    [("small/c32", 0, 32), ("1MiB-generated/c8", 2, 8)]
        .into_iter()
        .map(|(name, at, concurrency)| {
            let url = |at: usize| format!("http://127.0.0.1:{port}/{}", BILLED_PATHS[at]);
            let case = Case {
                name: name.to_owned(),
                body: Arc::clone(&bodies.billed[at + 1]),
                concurrency,
                bare: Sender::transport(&url(at + 1)),
                transport: Sender::transport(&url(at)),
            };
            (case, Arc::clone(&bodies.billed[at]))
        })
        .collect()
}

/// Checks the usage rows: both answers as concealed, only the billed one
/// read as billed, and the meter summing it.
fn check_usage(runtime: &Runtime, case: &Case, billed: &Body) {
    let name = &case.name;
    let expected = meterwire::Usage::new()
        .with_input(1117)
        .with_output(46)
        .with_cached(1024)
        .with_reasoning(0);
    for (sender, body, usage) in [
        (&case.transport, billed, Some(expected)),
        (&case.bare, &*case.body, None),
    ] {
        let Received::Transport(answer) = runtime.block_on(sender.receive()) else {
            panic!("{name}: both usage contestants are transports");
        };
        assert!(
            answer.text() == body.concealed,
            "{name}: the answer as concealed"
        );
        assert_eq!(answer.usage(), usage, "{name}");
        let Sender::Transport(transport) = sender else {
            unreachable!()
        };
        assert_eq!(transport.meter().usage(), usage, "{name}: the meter's sums");
    }
}

/// The reader's time on `text`, per read.
fn read_time(text: &str) -> f64 {
    const READS: u32 = 20_000;
    let start = Instant::now();
    for _ in 0..READS {
        black_box(usage_read::read(black_box(text.as_bytes())));
    }
    start.elapsed().as_secs_f64() / f64::from(READS)
}

fn usage_table(runtime: &Runtime, cases: &[(Case, Arc<Body>)]) {
    println!();
    println!(
        "usage: medians of interleaved runs, the same answers with and without a usage member"
    );
    println!(
        "{:<20} {:>12} {:>12} {:>17} {:>22}",
        "case", "without", "with", "time: with/without", "the search, per send"
    );
    for (case, billed) in cases {
        let (without, with) = medians(runtime, case);
        // The search an answer without usage pays: its whole tail, twice.
        let search = read_time(&case.body.concealed);
        let per_send = with / case.concurrency as f64;
        println!(
            "{:<20} {:>9.1} µs {:>9.1} µs {:>17.4}x {:>9.3} µs, {:.3}%",
            case.name,
            without * 1e6,
            with * 1e6,
            with / without,
            search * 1e6,
            100.0 * search / per_send
        );
        println!(
            "{:<20} {:>9.3} µs to find and parse the member in the billed answer",
            "",
            read_time(&billed.concealed) * 1e6
        );
    }
}

/// Checks what both clients get: the bare client the whole body, the
/// transport no form of the token, one marker per echo, and the body with
/// each echo, and nothing else, concealed.
fn check(runtime: &Runtime, case: &Case) {
    let (name, body) = (&case.name, &case.body);
    let bare = runtime.block_on(case.bare.receive());
    assert!(
        bare.text() == body.sent,
        "{name}: the bare client gets the whole body"
    );
    let ours = runtime.block_on(case.transport.receive());
    let ours = ours.text();
    for form in [TOKEN].iter().chain(&JSON_FORMS) {
        assert!(
            !ours.contains(form),
            "{name}: the transport's answer holds the token as {form}"
        );
    }
    assert_eq!(
        ours.matches(REDACTED).count(),
        body.echoes,
        "{name}: one marker per echo"
    );
    assert!(
        ours == body.concealed,
        "{name}: the transport's answer is the body with each echo concealed"
    );
}

/// Checks the answers, then fills both pools and checks both clients get
/// answers of the right length. Under `cargo test --all-targets`
/// (unoptimized, each benchmark run once) one send each is check enough.
fn warm_up(runtime: &Runtime, case: &Case) {
    check(runtime, case);
    let (rounds, concurrency) = if measuring() {
        (3, case.concurrency)
    } else {
        (1, 1)
    };
    let expected = [
        (&case.bare, case.body.sent.len()),
        (&case.transport, case.body.concealed.len()),
    ];
    for (sender, answer_len) in expected {
        for _ in 0..rounds {
            let total = runtime.block_on(sender.batch(concurrency));
            assert_eq!(total, answer_len * concurrency, "{}", case.name);
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
        "{:<20} {:>12} {:>12} {:>17} {:>17}",
        "case", "bare", "transport", "time: ours/bare", "speed: bare/ours"
    );
    for case in cases {
        let (bare, ours) = medians(runtime, case);
        println!(
            "{:<20} {:>9.1} µs {:>9.1} µs {:>16.3}x {:>17.3}",
            case.name,
            bare * 1e6,
            ours * 1e6,
            ours / bare,
            bare / ours
        );
        if case.name == "small/c1" {
            println!(
                "{:<20} {:>9.3} µs per send, {:.3}% of a small/c1 send",
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

/// The filter given on the command line, if any: criterion's one positional
/// argument.
fn filter() -> Option<String> {
    std::env::args().skip(1).find(|a| !a.starts_with('-'))
}

fn main() {
    for form in JSON_FORMS {
        let decoded: String = serde_json::from_str(&format!("\"{form}\"")).expect("a JSON string");
        assert_eq!(decoded, TOKEN, "{form} is the token JSON-escaped");
    }
    let generated = text_answer(GENERATED_EVERY);
    // The small answer without its own made-up `usage`, which is no shape.
    let small = Body::tokenless(r#"{"id":"cmpl-7f3a","choices":[{"text":" mat","score":0.731}]}"#);
    let billed = [
        Arc::new(small.ending_with(BILLED)),
        Arc::new(small.ending_with(UNBILLED)),
        Arc::new(generated.ending_with(BILLED)),
        Arc::new(generated.ending_with(UNBILLED)),
    ];
    let bodies = Bodies {
        small: Arc::new(Body::tokenless(SMALL)),
        plain: Arc::new(plain_answer()),
        generated: Arc::new(generated),
        echoes: Arc::new(text_answer(ECHOES_EVERY)),
        billed,
    };
    assert_eq!(bodies.generated.echoes, 9, "the generated answer's echoes");
    assert_eq!(bodies.echoes.echoes, 104, "the echoing answer's echoes");
    let port = start_server(Answers {
        small: response(&bodies.small.sent),
        plain: response(&bodies.plain.sent),
        generated: response(&bodies.generated.sent),
        echoes: response(&bodies.echoes.sent),
        billed: bodies.billed.each_ref().map(|body| response(&body.sent)),
    });
    let paced = start_paced_server(response(&bodies.generated.sent));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the client runtime starts");
    let cases = cases(port, paced, &bodies);
    let usage_cases = usage_cases(port, &bodies);
    let only = filter();
    let only = only.as_deref();
    if only != Some("usage") {
        for case in &cases {
            warm_up(&runtime, case);
        }
    }
    for (case, billed) in &usage_cases {
        check_usage(&runtime, case, billed);
    }
    let mut criterion = Criterion::default().configure_from_args();
    if only.is_none_or(|f| f != "ratio" && f != "usage") {
        criterion_groups(&mut criterion, &runtime, &cases);
        criterion.final_summary();
    }
    if measuring() && only.is_none_or(|f| f == "ratio") {
        ratio_table(&runtime, &cases);
    }
    if measuring() && only.is_none_or(|f| f == "usage") {
        usage_table(&runtime, &usage_cases);
    }
}
