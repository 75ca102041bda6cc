//! Streamed answers: every piece as it arrives, concealed across pieces,
//! never billed twice. Each engine here is a server of one's own on
//! loopback that writes its body in pieces, flushing each, pausing or
//! waiting for the test between them: wiremock sends a body whole.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use meterwire::{
    Answer, AnswerStream, Bytes, Cause, HttpTransport, Refusal, Request, RetryPolicy, Transport,
};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::support::forms::forms;
use crate::support::raw_http::read_request;
use crate::support::{GUARD, SCOPE, TOKEN, assert_refusal_shape, builder_for};

/// What the engine writes after the head, one step at a time.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    /// A chunk of the chunked body, flushed.
    Chunk(Vec<u8>),
    /// Silence.
    Pause(Duration),
    /// Waits until the test says to go on.
    Wait,
    /// The end of a chunked body.
    End,
    /// Closes the connection, the body unfinished.
    Close,
}

pub(crate) fn chunk(text: &str) -> Step {
    Step::Chunk(text.as_bytes().to_vec())
}

/// An engine that answers each of at most `connections` requests with a
/// chunked `200` of `content_type`, then `steps`; it counts the requests,
/// and `go` lets a `Wait` go on.
pub(crate) struct Engine {
    pub(crate) address: String,
    pub(crate) requests: Arc<AtomicUsize>,
    pub(crate) go: mpsc::UnboundedSender<()>,
}

pub(crate) async fn engine(content_type: &str, steps: Vec<Step>) -> Engine {
    engine_with(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n"
        ),
        steps,
    )
    .await
}

async fn engine_with(head: String, steps: Vec<Step>) -> Engine {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    let requests = Arc::new(AtomicUsize::new(0));
    let (go, mut went) = mpsc::unbounded_channel::<()>();
    let counted = requests.clone();
    tokio::spawn(async move {
        // Bounded: a few connections at most, then the engine stops.
        for _ in 0..4 {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            if read_request(&mut stream).await.is_none() {
                continue;
            }
            counted.fetch_add(1, Ordering::SeqCst);
            if !write_steps(&mut stream, &head, &steps, &mut went).await {
                return;
            }
        }
    });
    Engine {
        address,
        requests,
        go,
    }
}

/// Writes the head and the steps; `false` once the connection is closed.
async fn write_steps(
    stream: &mut TcpStream,
    head: &str,
    steps: &[Step],
    went: &mut mpsc::UnboundedReceiver<()>,
) -> bool {
    let chunked = head.contains("chunked");
    if stream.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for step in steps {
        let written = match step {
            Step::Chunk(bytes) if chunked => {
                let mut framed = format!("{:x}\r\n", bytes.len()).into_bytes();
                framed.extend_from_slice(bytes);
                framed.extend_from_slice(b"\r\n");
                stream.write_all(&framed).await
            }
            Step::Chunk(bytes) => stream.write_all(bytes).await,
            Step::Pause(pause) => {
                tokio::time::sleep(*pause).await;
                Ok(())
            }
            Step::Wait => {
                let _ = tokio::time::timeout(GUARD, went.recv()).await;
                Ok(())
            }
            Step::End => stream.write_all(b"0\r\n\r\n").await,
            Step::Close => return false,
        };
        if written.is_err() || stream.flush().await.is_err() {
            return false;
        }
    }
    true
}

pub(crate) fn transport(engine: &Engine) -> HttpTransport {
    builder_for(&engine.address, SCOPE).build().expect("builds")
}

pub(crate) async fn opened(transport: &HttpTransport) -> AnswerStream {
    tokio::time::timeout(GUARD, transport.stream("{}"))
        .await
        .expect("the head arrives")
        .expect("a 2xx head")
}

pub(crate) async fn event(stream: &mut AnswerStream) -> Option<Result<meterwire::Event, Refusal>> {
    tokio::time::timeout(GUARD, stream.next_event())
        .await
        .expect("the next event, or the end, arrives by itself")
}

async fn refusal_of(stream: &mut AnswerStream) -> Refusal {
    loop {
        match event(stream).await {
            Some(Ok(_)) => continue,
            Some(Err(refusal)) => return refusal,
            None => panic!("the stream ended cleanly"),
        }
    }
}

#[tokio::test]
async fn each_event_is_yielded_as_soon_as_its_blank_line_arrives() {
    let engine = engine(
        "text/event-stream",
        vec![
            chunk("data: first\n\n"),
            Step::Wait,
            chunk("data: second\n\n"),
            Step::End,
        ],
    )
    .await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.content_type(), Some("text/event-stream"));
    // Yielded while the engine still waits: nothing more has arrived.
    let first = event(&mut stream)
        .await
        .expect("an event")
        .expect("not refused");
    assert_eq!(first.data(), "first");
    engine.go.send(()).expect("the engine waits");
    let second = event(&mut stream)
        .await
        .expect("an event")
        .expect("not refused");
    assert_eq!(second.data(), "second");
    assert!(event(&mut stream).await.is_none());
    assert_eq!(engine.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn events_are_read_as_the_standard_reads_them() {
    let engine = engine(
        "text/event-stream",
        vec![
            Step::Chunk(b"\xef\xbb\xbf: a comment, read and dropped\r\n".to_vec()),
            chunk("event: delta\r\nid: 1\r\ndata: one\r\ndata:two\r\n\r\n"),
            chunk("retry: 5\rdata: cr\r\rdata"),
            chunk(": after\n\nevent: ping\n\n"),
            chunk("data: [DONE]\n\ndata: never\n\n"),
            Step::End,
        ],
    )
    .await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    let mut seen = Vec::new();
    while let Some(event) = event(&mut stream).await {
        let event = event.expect("not refused");
        seen.push((
            event.event().map(str::to_owned),
            event.data().to_owned(),
            event.id().map(str::to_owned),
        ));
    }
    assert_eq!(
        seen,
        [
            (
                Some("delta".to_owned()),
                "one\ntwo".to_owned(),
                Some("1".to_owned())
            ),
            (None, "cr".to_owned(), None),
            (None, "after".to_owned(), None),
        ]
    );
    let meter = transport.meter();
    assert_eq!((meter.sends(), meter.answers()), (1, 1));
    assert!(meter.first_byte(0.5).is_some());
}

#[tokio::test]
async fn ndjson_lines_and_raw_chunks_arrive_as_sent() {
    let engine = engine(
        "application/x-ndjson",
        vec![
            chunk("{\"a\":1}\n{\"a\""),
            chunk(":2}\n\n{\"a\":3}"),
            Step::End,
        ],
    )
    .await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    let mut lines = Vec::new();
    while let Some(line) = stream.next_line().await {
        lines.push(line.expect("not refused"));
    }
    assert_eq!(lines, ["{\"a\":1}", "{\"a\":2}", "{\"a\":3}"]);

    let mut chunks = String::new();
    let mut stream = opened(&transport).await;
    while let Some(chunk) = stream.next_chunk().await {
        chunks.push_str(&chunk.expect("not refused"));
    }
    assert_eq!(chunks, "{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}");
}

/// An error on an NDJSON stream's last line, with no line end after it, is
/// the engine's refusal as on any other line: naming the scope and the
/// engine, and metered as a refusal, not an answer.
#[tokio::test]
async fn an_error_on_the_last_unended_ndjson_line_is_the_engines_refusal() {
    let engine = engine(
        "application/x-ndjson",
        vec![
            chunk("{\"delta\":\"the\"}\n"),
            chunk("{\"error\":{\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}"),
            Step::End,
        ],
    )
    .await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    assert_eq!(
        stream
            .next_line()
            .await
            .expect("a line")
            .expect("not refused"),
        "{\"delta\":\"the\"}"
    );
    let refusal = stream
        .next_line()
        .await
        .expect("the last line")
        .expect_err("the engine's error");
    assert_eq!(
        refusal.cause(),
        Cause::EngineOverQuota,
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains("rate_limit_exceeded"),
        "{}",
        refusal.reason()
    );
    assert_refusal_shape(&refusal);
    assert!(
        stream.next_line().await.is_none(),
        "nothing after a refusal"
    );
    drop(stream);
    let meter = transport.meter();
    assert_eq!(meter.refusals(Cause::EngineOverQuota), 1);
    assert_eq!(meter.answers(), 0);
}

#[tokio::test]
async fn a_character_split_across_pieces_is_one_character() {
    let text = "données — 日本 😀";
    let bytes = text.as_bytes();
    let steps: Vec<Step> = bytes
        .chunks(1)
        .map(|byte| Step::Chunk(byte.to_vec()))
        .chain([Step::End])
        .collect();
    let engine = engine("text/plain", steps).await;
    let mut stream = opened(&transport(&engine)).await;
    let mut all = String::new();
    while let Some(chunk) = stream.next_chunk().await {
        all.push_str(&chunk.expect("a split character is no error"));
    }
    assert_eq!(all, text);
}

#[tokio::test]
async fn a_token_echoed_across_pieces_in_every_form_is_concealed() {
    // Each form of the token, cut at a few places into two pieces that
    // arrive apart.
    for (name, form) in forms(TOKEN) {
        for cut in [1, form.len() / 2, form.len() - 1] {
            let Some((head, tail)) = form.split_at_checked(cut) else {
                continue;
            };
            let engine = engine(
                "text/event-stream",
                vec![
                    chunk(&format!("data: you sent {head}")),
                    Step::Pause(Duration::from_millis(5)),
                    chunk(&format!("{tail} back\n\n")),
                    Step::End,
                ],
            )
            .await;
            let mut stream = opened(&transport(&engine)).await;
            let mut all = String::new();
            while let Some(chunk) = stream.next_chunk().await {
                all.push_str(&chunk.expect("not refused"));
            }
            crate::support::forms::assert_no_form(TOKEN, &format!("{name} cut at {cut}"), &all);
            assert!(all.contains("[redacted]"), "{name} cut at {cut}: {all}");
        }
    }
}

#[tokio::test]
async fn a_token_split_over_two_data_lines_is_concealed_in_the_event() {
    let (head, tail) = TOKEN.split_at(9);
    let engine = engine(
        "text/event-stream",
        vec![chunk(&format!("data: {head}\ndata: {tail}\n\n")), Step::End],
    )
    .await;
    let mut stream = opened(&transport(&engine)).await;
    let event = event(&mut stream)
        .await
        .expect("an event")
        .expect("not refused");
    assert_eq!(event.data(), "[redacted]");
}

#[tokio::test]
async fn an_error_inside_a_200_names_its_cause() {
    for (payload, cause, says) in [
        (
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            Cause::EngineUnreachable,
            "of type \"overloaded_error\"",
        ),
        (
            "data: {\"error\":{\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached\"}}\n\n",
            Cause::EngineOverQuota,
            "rate_limit_exceeded",
        ),
        (
            "data: {\"error\":{\"type\":\"insufficient_quota\",\"message\":\"You exceeded your current quota\"}}\n\n",
            Cause::EngineOutOfCredit,
            "insufficient_quota",
        ),
        (
            "data: {\"error\":{\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\",\"message\":\"Incorrect API key\"}}\n\n",
            Cause::NoEngine,
            "invalid_api_key",
        ),
        // A problem type given as a URI names its cause by its last segment.
        (
            "data: {\"error\":{\"type\":\"https://errors.example/problems/insufficient_quota\",\"message\":\"Out of credit\"}}\n\n",
            Cause::EngineOutOfCredit,
            "insufficient_quota",
        ),
    ] {
        let engine = engine(
            "text/event-stream",
            vec![
                chunk("data: {\"delta\":\"the\"}\n\n"),
                chunk(payload),
                Step::End,
            ],
        )
        .await;
        let transport = transport(&engine);
        let mut stream = opened(&transport).await;
        let refusal = refusal_of(&mut stream).await;
        assert_eq!(refusal.cause(), cause, "{}", refusal.reason());
        assert_eq!(refusal.status(), Some(200));
        assert!(
            refusal.reason().contains("answered HTTP 200, streamed"),
            "{}",
            refusal.reason()
        );
        assert!(refusal.reason().contains("1 event"), "{}", refusal.reason());
        assert!(refusal.reason().contains(says), "{}", refusal.reason());
        assert_refusal_shape(&refusal);
        assert!(
            event(&mut stream).await.is_none(),
            "nothing after a refusal"
        );
        assert_eq!(transport.meter().refusals(cause), 1);
    }
}

#[tokio::test]
async fn a_stream_that_stops_early_says_after_how_much() {
    let closes = engine(
        "text/event-stream",
        vec![chunk("data: one\n\n"), chunk("data: tw"), Step::Close],
    )
    .await;
    let short = engine_with(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 500\r\n\r\n"
            .to_owned(),
        vec![chunk("data: one\n\n"), Step::Close],
    )
    .await;
    for engine in [closes, short] {
        let mut stream = opened(&transport(&engine)).await;
        let refusal = refusal_of(&mut stream).await;
        assert_eq!(refusal.cause(), Cause::EngineUnreachable);
        assert_eq!(refusal.status(), Some(200));
        assert!(refusal.reason().contains("1 event"), "{}", refusal.reason());
        assert!(refusal.reason().contains("bytes"), "{}", refusal.reason());
        assert!(
            refusal.remedy().starts_with("try again later"),
            "{}",
            refusal.remedy()
        );
    }
}

#[tokio::test]
async fn each_timer_ends_a_stream_and_is_named() {
    // No first byte by the deadline.
    let silent = engine("text/event-stream", vec![Step::Pause(GUARD)]).await;
    let transport = builder_for(&silent.address, SCOPE)
        .deadline(Duration::from_millis(300))
        .build()
        .expect("builds");
    let refusal = refusal_of(&mut opened(&transport).await).await;
    assert!(
        refusal.reason().contains("no answer within 300 ms"),
        "{}",
        refusal.reason()
    );

    // A gap longer than the idle timer.
    let stalls = engine(
        "text/event-stream",
        vec![chunk("data: one\n\n"), Step::Pause(GUARD)],
    )
    .await;
    let transport = builder_for(&stalls.address, SCOPE)
        .idle_timeout(Duration::from_millis(300))
        .build()
        .expect("builds");
    let refusal = refusal_of(&mut opened(&transport).await).await;
    assert!(
        refusal.reason().contains("idle timer of 300 ms"),
        "{}",
        refusal.reason()
    );
    assert!(refusal.reason().contains("1 event"), "{}", refusal.reason());

    // Comments keep it alive; the stream deadline still ends it.
    let mut alive = vec![chunk("data: one\n\n")];
    for _ in 0..40 {
        alive.push(Step::Pause(Duration::from_millis(50)));
        alive.push(chunk(": keep-alive\n"));
    }
    let alive = engine("text/event-stream", alive).await;
    let transport = builder_for(&alive.address, SCOPE)
        .idle_timeout(Duration::from_millis(300))
        .build()
        .expect("builds");
    let mut stream = transport
        .call("{}")
        .stream_deadline(Duration::from_millis(700))
        .stream()
        .await
        .expect("a 2xx head");
    let refusal = refusal_of(&mut stream).await;
    assert!(
        refusal.reason().contains("deadline of 700 ms"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_stream_is_never_sent_again_once_its_head_arrived() {
    let engine = engine(
        "text/event-stream",
        vec![chunk("data: one\n\n"), Step::Close],
    )
    .await;
    // Retries with keys would retry a reset; not after a 2xx head.
    let transport = builder_for(&engine.address, SCOPE)
        .retries(RetryPolicy::new().max_attempts(5).idempotency_keys(true))
        .build()
        .expect("builds");
    let mut stream = opened(&transport).await;
    let refusal = refusal_of(&mut stream).await;
    assert_eq!(refusal.attempts(), 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(engine.requests.load(Ordering::SeqCst), 1, "sent once");
    assert_eq!(transport.meter().attempts(), 1);
}

#[tokio::test]
async fn retries_apply_until_a_2xx_head_arrives() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        for n in 0..3 {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let _ = read_request(&mut stream).await;
            counted.fetch_add(1, Ordering::SeqCst);
            let reply: &[u8] = if n == 0 {
                b"HTTP/1.1 503 Busy\r\nretry-after-ms: 50\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 12\r\nconnection: close\r\n\r\ndata: hi\n\n\n\n"
            };
            let _ = stream.write_all(reply).await;
        }
    });
    let transport = builder_for(&address, SCOPE)
        .retries(RetryPolicy::new())
        .build()
        .expect("builds");
    let mut stream = opened(&transport).await;
    let first = event(&mut stream)
        .await
        .expect("an event")
        .expect("not refused");
    assert_eq!(first.data(), "hi");
    assert_eq!(requests.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_event_larger_than_the_cap_is_refused() {
    let engine = engine(
        "text/event-stream",
        vec![
            chunk(&format!("data: {}\n", "x".repeat(600))),
            chunk(&format!("data: {}\n\n", "y".repeat(600))),
            Step::End,
        ],
    )
    .await;
    let transport = builder_for(&engine.address, SCOPE)
        .max_answer_bytes(1000)
        .build()
        .expect("builds");
    let refusal = refusal_of(&mut opened(&transport).await).await;
    assert!(
        refusal
            .reason()
            .contains("one event of the stream is larger than the cap of 1000 bytes"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_fake_streams_through_the_trait_by_default() {
    struct Canned;
    impl Transport for Canned {
        fn send(
            &self,
            _body: Bytes,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
            Box::pin(async {
                Ok(Answer::new(200, "data: a\n\ndata: b\n\n").with_request_id("r-1"))
            })
        }
    }
    let shared: Arc<dyn Transport> = Arc::new(Canned);
    let mut stream = shared.stream(Request::new("{}")).await.expect("a stream");
    assert_eq!(stream.request_id(), Some("r-1"));
    let mut data = Vec::new();
    while let Some(event) = stream.next_event().await {
        data.push(event.expect("not refused").data().to_owned());
    }
    assert_eq!(data, ["a", "b"]);

    // A scripted error is a refusal as from an engine.
    let mut stream = AnswerStream::from_chunks(
        200,
        ["event: error\ndata: {\"error\":{\"type\":\"rate_limit_error\"}}\n\n"],
    );
    let refusal = stream
        .next_event()
        .await
        .expect("a refusal")
        .expect_err("refused");
    assert_eq!(refusal.cause(), Cause::EngineOverQuota);
}

#[tokio::test]
async fn a_refused_head_comes_before_any_piece() {
    let engine = engine_with(
        "HTTP/1.1 402 Payment Required\r\ncontent-type: application/json\r\ncontent-length: 36\r\n\r\n{\"error\":{\"message\":\"no credit\"}}\n\n\n".to_owned(),
        vec![],
    )
    .await;
    let refusal = transport(&engine).stream("{}").await.expect_err("refused");
    assert_eq!(refusal.cause(), Cause::EngineOutOfCredit);
    assert_eq!(refusal.status(), Some(402));
}

mod deltas;
mod endings;
