//! What the engine billed: usage read from every engine's shape, whole
//! and streamed, through wiremock and through an engine of one's own that
//! writes its body in pieces; hostile figures; a fake's usage through the
//! trait; the meter's sums under concurrent senders; the probe's output.

use std::sync::Arc;
use std::time::Duration;

use meterwire::{Answer, AnswerStream, Bytes, HttpTransport, Refusal, Request, Transport, Usage};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::engines::{engine, engine_expecting};
use crate::support::raw_http::read_request;
use crate::support::{GUARD, SCOPE, TOKEN, builder_for, env};

/// The engines' bodies the probe's tour sends too.
#[allow(dead_code)]
#[path = "../../examples/probe/bills.rs"]
mod bills;

use bills::Counts;

fn usage_of((input, output, cached, reasoning): Counts) -> Usage {
    let mut usage = Usage::new();
    if let Some(n) = input {
        usage = usage.with_input(n);
    }
    if let Some(n) = output {
        usage = usage.with_output(n);
    }
    if let Some(n) = cached {
        usage = usage.with_cached(n);
    }
    if let Some(n) = reasoning {
        usage = usage.with_reasoning(n);
    }
    usage
}

/// A loopback engine that answers each of at most `requests` requests
/// with a chunked `200` of `content_type`, its body written in pieces of
/// `piece` bytes, each flushed.
async fn piecemeal(
    content_type: &'static str,
    body: &'static str,
    piece: usize,
    requests: usize,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        for _ in 0..requests {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            if read_request(&mut stream).await.is_none() {
                continue;
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            );
            if stream.write_all(head.as_bytes()).await.is_err() {
                continue;
            }
            for part in body.as_bytes().chunks(piece) {
                let mut framed = format!("{:x}\r\n", part.len()).into_bytes();
                framed.extend_from_slice(part);
                framed.extend_from_slice(b"\r\n");
                if stream.write_all(&framed).await.is_err() || stream.flush().await.is_err() {
                    break;
                }
            }
            let _ = stream.write_all(b"0\r\n\r\n").await;
            let _ = stream.shutdown().await;
        }
    });
    address
}

/// A stream read to its end as its content type says, then its usage.
async fn usage_at_the_end(mut stream: AnswerStream) -> Option<Usage> {
    let lines = stream.content_type().is_some_and(|t| t.contains("ndjson"));
    let read = async {
        if lines {
            while let Some(line) = stream.next_line().await {
                line.expect("not a refusal");
            }
        } else {
            while let Some(event) = stream.next_event().await {
                event.expect("not a refusal");
            }
        }
        stream.usage()
    };
    tokio::time::timeout(GUARD, read)
        .await
        .expect("the stream ends by itself")
}

async fn send(transport: &HttpTransport) -> Answer {
    tokio::time::timeout(GUARD, transport.send("{}"))
        .await
        .expect("the send ends by itself")
        .unwrap_or_else(|refusal| panic!("an answer: {}", refusal.reason()))
}

#[tokio::test]
async fn every_whole_answer_shape_is_read_through_wiremock_and_summed_by_the_meter() {
    let server = MockServer::start().await;
    for (i, (_, _, body, _)) in bills::WHOLE.iter().enumerate() {
        Mock::given(method("POST"))
            .and(path(format!("/{i}")))
            .respond_with(ResponseTemplate::new(200).set_body_raw(*body, "application/json"))
            .expect(1)
            .mount(&server)
            .await;
    }
    Mock::given(method("POST"))
        .and(path("/none"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(r#"{"score":0.5}"#, "application/json"),
        )
        .mount(&server)
        .await;
    let mut sums = [0u64; 4];
    for (i, (row, _, _, counts)) in bills::WHOLE.iter().enumerate() {
        let transport = builder_for(&format!("{}/{i}", server.uri()), SCOPE)
            .build()
            .expect("builds");
        let answer = send(&transport).await;
        assert_eq!(answer.usage(), Some(usage_of(*counts)), "{row}");
        let usage = answer.usage().expect("a usage");
        let counts = [
            usage.input(),
            usage.output(),
            usage.cached(),
            usage.reasoning(),
        ];
        for (sum, count) in sums.iter_mut().zip(counts) {
            *sum += count.unwrap_or(0);
        }
        let meter = transport.meter();
        assert_eq!(
            meter.usage(),
            Some(usage),
            "{row}: one answer's sums are its usage"
        );
        assert_eq!(meter.answers_with_usage(), 1, "{row}");
        let json = serde_json::to_value(&meter).expect("serializes");
        let zero = |count: Option<u64>| count.unwrap_or(0);
        assert_eq!(
            json["usage"],
            serde_json::json!({
                "input": zero(usage.input()), "output": zero(usage.output()),
                "cached": zero(usage.cached()), "reasoning": zero(usage.reasoning()),
                "answersWithUsage": 1
            }),
            "{row}"
        );
    }
    let transport = builder_for(&format!("{}/none", server.uri()), SCOPE)
        .build()
        .expect("builds");
    assert_eq!(
        send(&transport).await.usage(),
        None,
        "an answer that says nothing of usage"
    );
    let meter = transport.meter();
    assert_eq!((meter.answers(), meter.answers_with_usage()), (1, 0));
    assert_eq!(meter.usage(), None);
    // Every shape through one transport, and one answer without.
    let all = MockServer::start().await;
    let bodies: Vec<&'static str> = bills::WHOLE
        .iter()
        .map(|w| w.2)
        .chain([r#"{"a":1}"#])
        .collect();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let turn = next.clone();
    Mock::given(method("POST"))
        .respond_with(move |_: &wiremock::Request| {
            let body =
                bodies[turn.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % bodies.len()];
            ResponseTemplate::new(200).set_body_raw(body, "application/json")
        })
        .expect(6)
        .mount(&all)
        .await;
    let transport = builder_for(&all.uri(), SCOPE).build().expect("builds");
    for _ in 0..6 {
        send(&transport).await;
    }
    let snapshot = transport.meter();
    assert_eq!(snapshot.answers(), 6);
    assert_eq!(snapshot.answers_with_usage(), 5);
    let summed = snapshot.usage().expect("sums");
    assert_eq!(
        [
            summed.input(),
            summed.output(),
            summed.cached(),
            summed.reasoning()
        ],
        sums.map(Some)
    );
}

#[tokio::test]
async fn every_whole_answer_shape_is_read_from_an_engine_that_writes_it_in_pieces() {
    for (row, _, body, counts) in bills::WHOLE {
        for piece in [1, 7, 300] {
            let address = piecemeal("application/json", body, piece, 1).await;
            let transport = builder_for(&address, SCOPE).build().expect("builds");
            let answer = send(&transport).await;
            assert_eq!(
                answer.usage(),
                Some(usage_of(counts)),
                "{row}, pieces of {piece}"
            );
        }
    }
}

#[tokio::test]
async fn every_stream_shape_is_read_from_its_events_with_and_without_the_usage_chunk() {
    let server = MockServer::start().await;
    for (i, (_, _, content_type, body, _)) in bills::STREAMS.iter().enumerate() {
        Mock::given(method("POST"))
            .and(path(format!("/{i}")))
            .respond_with(ResponseTemplate::new(200).set_body_raw(*body, content_type))
            .expect(1)
            .mount(&server)
            .await;
    }
    for (i, (row, _, content_type, body, counts)) in bills::STREAMS.iter().enumerate() {
        let expected = counts.map(usage_of);
        // Whole, through wiremock.
        let transport = builder_for(&format!("{}/{i}", server.uri()), SCOPE)
            .build()
            .expect("builds");
        let stream = transport.stream("{}").await.expect("a stream");
        assert_eq!(usage_at_the_end(stream).await, expected, "{row}, wiremock");
        let meter = transport.meter();
        assert_eq!(meter.answers(), 1, "{row}");
        assert_eq!(
            meter.answers_with_usage(),
            u64::from(expected.is_some()),
            "{row}"
        );
        assert_eq!(
            meter.usage(),
            expected,
            "{row}: the meter has the last figures"
        );
        // In pieces that cut events, lines and numbers anywhere.
        for piece in [3, 61] {
            let address = piecemeal(content_type, body, piece, 1).await;
            let transport = builder_for(&address, SCOPE).build().expect("builds");
            let stream = transport.stream("{}").await.expect("a stream");
            assert_eq!(
                usage_at_the_end(stream).await,
                expected,
                "{row}, pieces of {piece}"
            );
            assert_eq!(
                transport.meter().usage(),
                expected,
                "{row}, pieces of {piece}"
            );
        }
    }
}

#[tokio::test]
async fn a_stream_read_as_chunks_or_dropped_early_says_what_it_read() {
    let (_, _, content_type, body, _) = bills::STREAMS[3];
    let address = piecemeal(content_type, body, 4096, 2).await;
    let transport = builder_for(&address, SCOPE).build().expect("builds");
    // Chunks are text, not events: no usage is read from them.
    let mut stream = transport.stream("{}").await.expect("a stream");
    while let Some(chunk) = stream.next_chunk().await {
        chunk.expect("not a refusal");
    }
    assert_eq!(stream.usage(), None);
    // Dropped after `message_start`: an answer with the input it billed.
    let mut stream = transport.stream("{}").await.expect("a stream");
    let first = stream
        .next_event()
        .await
        .expect("an event")
        .expect("not a refusal");
    assert_eq!(first.event(), Some("message_start"));
    assert_eq!(stream.usage().and_then(|u| u.input()), Some(25));
    drop(stream);
    let meter = transport.meter();
    assert_eq!((meter.answers(), meter.answers_with_usage()), (2, 1));
    assert_eq!(meter.usage().and_then(|u| u.input()), Some(25));
}

#[tokio::test]
async fn a_hostile_figure_from_the_wire_is_none_and_the_send_is_still_an_answer() {
    let hostile = [
        (
            r#"{"usage":{"prompt_tokens":-3,"completion_tokens":12}}"#,
            None,
            Some(12),
        ),
        (
            r#"{"usage":{"prompt_tokens":7,"completion_tokens":1.5}}"#,
            Some(7),
            None,
        ),
        (
            r#"{"usage":{"prompt_tokens":9007199254740993,"completion_tokens":2}}"#,
            None,
            Some(2),
        ),
        (
            r#"{"usage":{"prompt_tokens":1e999,"completion_tokens":2}}"#,
            None,
            Some(2),
        ),
        (
            r#"{"usageMetadata":{"promptTokenCount":"8","candidatesTokenCount":3}}"#,
            None,
            Some(3),
        ),
        (
            r#"{"done":true,"prompt_eval_count":true,"eval_count":4}"#,
            None,
            Some(4),
        ),
    ];
    for (body, input, output) in hostile {
        let server = engine_expecting(
            1,
            ResponseTemplate::new(200).set_body_raw(body, "application/json"),
        )
        .await;
        let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
        let answer = send(&transport).await;
        assert_eq!(answer.text(), body, "the answer is as sent");
        let usage = answer.usage().expect("the other figure is kept");
        assert_eq!((usage.input(), usage.output()), (input, output), "{body}");
        assert_eq!(usage.total(), None, "{body}");
    }
    // No valid figure at all: no usage, and the meter says the answer said nothing.
    let server = engine(ResponseTemplate::new(200).set_body_raw(
        r#"{"usage":{"prompt_tokens":-1,"completion_tokens":"many"}}"#,
        "application/json",
    ))
    .await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    assert_eq!(send(&transport).await.usage(), None);
    assert_eq!(transport.meter().answers_with_usage(), 0);
    assert_eq!(transport.meter().usage(), None);
}

#[tokio::test]
async fn figures_are_read_from_the_concealed_text() {
    // A token that is all digits, as some engines' keys are: the figure
    // that echoes it is concealed before it is read, and never a count.
    let token = "31415926535897932384";
    let server = engine(ResponseTemplate::new(200).set_body_raw(
        format!(r#"{{"usage":{{"prompt_tokens":{token},"completion_tokens":5}}}}"#),
        "application/json",
    ))
    .await;
    let transport = HttpTransport::builder(SCOPE)
        .env(env(&[
            ("CHANT_BEHAVIOUR_ENGINE", &server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", token),
        ]))
        .build()
        .expect("builds");
    let answer = send(&transport).await;
    assert!(!answer.text().contains(token), "{}", answer.text());
    assert!(answer.text().contains("[redacted]"), "{}", answer.text());
    // `[redacted]` where a number was is no JSON: the member reads as none.
    assert_eq!(answer.usage(), None);
    let json = serde_json::to_string(&transport.meter()).expect("serializes");
    assert!(!json.contains(token));

    // The support token, echoed as a figure's string: that figure is none.
    let server = engine(ResponseTemplate::new(200).set_body_raw(
        format!(r#"{{"usage":{{"prompt_tokens":"{TOKEN}","completion_tokens":5}}}}"#),
        "application/json",
    ))
    .await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    let usage = send(&transport).await.usage().expect("the output is kept");
    assert_eq!((usage.input(), usage.output()), (None, Some(5)));
}

/// A fake that says what it billed.
struct Billing(Usage);

impl Transport for Billing {
    fn send(
        &self,
        _: Bytes,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
        let usage = self.0;
        Box::pin(async move { Ok(Answer::new(200, r#"{"a":1}"#).with_usage(usage)) })
    }
}

#[tokio::test]
async fn a_fakes_usage_crosses_arc_dyn_transport_as_an_answer_and_as_a_stream() {
    let usage = Usage::new().with_input(40).with_output(2).with_reasoning(1);
    let transport: Arc<dyn Transport> = Arc::new(Billing(usage));
    let answer = transport
        .send(Bytes::from_static(b"{}"))
        .await
        .expect("an answer");
    assert_eq!(answer.usage(), Some(usage));
    assert_eq!(answer.usage().and_then(|u| u.total()), Some(42));
    let answer = transport
        .execute(Request::new("{}"))
        .await
        .expect("an answer");
    assert_eq!(answer.usage(), Some(usage));
    // The trait's default stream yields the whole answer, its usage kept.
    let mut stream = transport
        .stream(Request::new("{}"))
        .await
        .expect("a stream");
    while let Some(chunk) = stream.next_chunk().await {
        chunk.expect("not a refusal");
    }
    assert_eq!(stream.usage(), Some(usage));
    assert!(transport.meter().is_none());
    // A fake's stream of events is read like an engine's.
    let mut stream = AnswerStream::from_chunks(200, [bills::OPENAI_CHAT_STREAM]);
    while let Some(event) = stream.next_event().await {
        event.expect("not a refusal");
    }
    assert_eq!(
        stream.usage(),
        Some(usage_of(bills::STREAMS[0].4.expect("counts")))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_meter_sums_usage_exactly_under_8_concurrent_senders() {
    const SENDERS: u64 = 8;
    const EACH: u64 = 12;
    let server = MockServer::start().await;
    let (_, _, chat, chat_counts) = bills::WHOLE[0];
    let (_, _, sse, anthropic, anthropic_counts) = bills::STREAMS[3];
    for (word, body, content_type) in [
        ("chat", chat, "application/json"),
        ("none", r#"{"score":1}"#, "application/json"),
        ("stream", anthropic, sse),
    ] {
        Mock::given(method("POST"))
            .and(body_string_contains(word))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
            .expect(SENDERS * EACH / 3)
            .mount(&server)
            .await;
    }
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    let senders: Vec<_> = (0..SENDERS)
        .map(|_| {
            let transport = transport.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    match i % 3 {
                        0 => {
                            transport.send(r#"{"k":"chat"}"#).await.expect("an answer");
                        }
                        1 => {
                            transport.send(r#"{"k":"none"}"#).await.expect("an answer");
                        }
                        _ => {
                            let stream = transport
                                .stream(r#"{"k":"stream"}"#)
                                .await
                                .expect("a stream");
                            usage_at_the_end(stream).await.expect("a usage");
                        }
                    }
                }
            })
        })
        .collect();
    for sender in senders {
        tokio::time::timeout(GUARD, sender)
            .await
            .expect("in time")
            .expect("joined");
    }
    let meter = transport.meter();
    let per_kind = SENDERS * EACH / 3;
    assert_eq!(meter.answers(), SENDERS * EACH);
    assert_eq!(meter.answers_with_usage(), 2 * per_kind);
    let chat = usage_of(chat_counts);
    let streamed = usage_of(anthropic_counts.expect("counts"));
    let sum = |f: fn(&Usage) -> Option<u64>| {
        Some(per_kind * (f(&chat).unwrap_or(0) + f(&streamed).unwrap_or(0)))
    };
    let summed = meter.usage().expect("sums");
    assert_eq!(summed.input(), sum(Usage::input));
    assert_eq!(summed.output(), sum(Usage::output));
    assert_eq!(summed.cached(), sum(Usage::cached));
    // Only the chat answers give a reasoning count (zero).
    assert_eq!(summed.reasoning(), Some(0));
    let json = serde_json::to_value(&meter).expect("serializes");
    assert_eq!(json["usage"]["answersWithUsage"], 2 * per_kind);
    assert_eq!(json["usage"]["input"], sum(Usage::input).expect("a sum"));
}

/// The probe, run with `args` against `address`, its stdout and status.
async fn probe(address: &str, args: &[&str]) -> (i32, String) {
    let mut command = std::process::Command::new(crate::support::probe_path());
    command
        .env_clear()
        .args(args)
        .env("CHANT_BEHAVIOUR_ENGINE", address)
        .env("CHANT_BEHAVIOUR_TOKEN", TOKEN)
        .stdin(std::process::Stdio::null());
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .expect("the probe exits by itself")
    .expect("joined")
    .expect("the probe runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(!stdout.contains(TOKEN));
    (output.status.code().unwrap_or(-1), stdout)
}

async fn engine_of(body: &'static str, content_type: &'static str) -> MockServer {
    engine(ResponseTemplate::new(200).set_body_raw(body, content_type)).await
}

#[tokio::test]
async fn the_probe_shows_usage_on_an_answer_and_leaves_it_out_when_there_is_none() {
    let server = engine_of(bills::ANTHROPIC, "application/json").await;
    let (status, stdout) = probe(&server.uri(), &["--json"]).await;
    assert_eq!(status, 0, "{stdout}");
    let doc: Value = serde_json::from_str(&stdout).expect("one document");
    assert_eq!(
        doc["usage"],
        serde_json::json!({"input": 3895, "output": 503, "cached": 1800, "total": 4398})
    );
    let (status, stdout) = probe(&server.uri(), &[]).await;
    assert_eq!(status, 0, "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|line| line.trim() == "usage  3895 in (1800 cached) · 503 out · 4398 in all"),
        "{stdout}"
    );
    let bare = engine_of(r#"{"answer":"yes"}"#, "application/json").await;
    let (_, stdout) = probe(&bare.uri(), &["--json"]).await;
    let doc: Value = serde_json::from_str(&stdout).expect("one document");
    assert!(doc.get("usage").is_none(), "{doc}");
    let (_, stdout) = probe(&bare.uri(), &[]).await;
    assert!(!stdout.contains("usage"), "{stdout}");
}

#[tokio::test]
async fn the_probe_shows_a_streams_usage_in_its_end_record() {
    let (_, _, content_type, body, counts) = bills::STREAMS[6];
    let server = engine_of(body, content_type).await;
    let (status, stdout) = probe(&server.uri(), &["--stream", "--json"]).await;
    assert_eq!(status, 0, "{stdout}");
    let last: Value = serde_json::from_str(stdout.lines().last().expect("lines")).expect("JSON");
    let (input, output, _, _) = counts.expect("counts");
    assert_eq!(
        last["end"]["usage"],
        serde_json::json!({"input": input, "output": output, "total": 316})
    );
    let (_, _, content_type, body, _) = bills::STREAMS[1];
    let bare = engine_of(body, content_type).await;
    let (_, stdout) = probe(&bare.uri(), &["--stream", "--json"]).await;
    let last: Value = serde_json::from_str(stdout.lines().last().expect("lines")).expect("JSON");
    assert!(
        last["end"].is_object() && last["end"].get("usage").is_none(),
        "{last}"
    );
    let (_, stdout) = probe(&server.uri(), &["--stream"]).await;
    assert!(
        stdout
            .lines()
            .any(|line| line.trim() == "usage  26 in · 290 out · 316 in all"),
        "{stdout}"
    );
}

#[tokio::test]
async fn the_probe_sums_usage_in_the_repeat_summarys_meter() {
    let server = engine_of(bills::GEMINI, "application/json").await;
    let (status, stdout) = probe(
        &server.uri(),
        &["--repeat", "6", "--concurrency", "3", "--json"],
    )
    .await;
    assert_eq!(status, 0, "{stdout}");
    let doc: Value = serde_json::from_str(&stdout).expect("one document");
    assert_eq!(
        doc["meter"]["usage"],
        serde_json::json!({"input": 48, "output": 6 * 1047, "cached": 0, "reasoning": 6 * 1040, "answersWithUsage": 6})
    );
    let (_, stdout) = probe(&server.uri(), &["--repeat", "2"]).await;
    assert!(
        stdout.lines().any(|line| line.trim()
            == "usage     16 in · 2094 out (2080 reasoning) · 2110 in all (2 of 2 answers said)"),
        "{stdout}"
    );
}

#[tokio::test]
async fn the_probes_tour_walks_a_row_per_engine_shape() {
    let (status, stdout) = probe("http://127.0.0.1:9/unused", &["--embedded", "--json"]).await;
    assert_eq!(status, 0, "{stdout}");
    let rows: Value = serde_json::from_str(&stdout).expect("one document");
    let rows = rows.as_array().expect("rows");
    let row = |name: &str| {
        rows.iter()
            .find(|row| row["row"] == name)
            .unwrap_or_else(|| panic!("no row {name}"))
    };
    for (name, _, _, counts) in bills::WHOLE {
        let usage = serde_json::to_value(usage_of(counts)).expect("serializes");
        assert_eq!(row(name)["usage"], usage, "{name}");
        assert_eq!(row(name)["status"], 200, "{name}");
    }
    for (name, _, _, _, counts) in bills::STREAMS {
        match counts {
            Some(counts) => {
                let usage = serde_json::to_value(usage_of(counts)).expect("serializes");
                assert_eq!(row(name)["usage"], usage, "{name}");
            }
            None => assert!(row(name).get("usage").is_none(), "{name}"),
        }
    }
}

#[tokio::test]
async fn a_stream_refused_after_its_usage_keeps_it_but_the_meter_counts_a_refusal() {
    let body = concat!(
        "event: message_start\n",
        r#"data: {"type":"message_start","message":{"usage":{"input_tokens":25,"output_tokens":1}}}"#,
        "\n\n",
        "event: error\n",
        r#"data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        "\n\n",
    );
    let server = engine_of(body, "text/event-stream").await;
    let transport = builder_for(&server.uri(), SCOPE).build().expect("builds");
    let mut stream = transport.stream("{}").await.expect("a stream");
    let refusal = loop {
        match stream.next_event().await {
            Some(Ok(_)) => continue,
            Some(Err(refusal)) => break refusal,
            None => panic!("the stream ended cleanly"),
        }
    };
    assert_eq!(refusal.cause(), meterwire::Cause::EngineUnreachable);
    assert_eq!(stream.usage().and_then(|u| u.input()), Some(25));
    let meter = transport.meter();
    assert_eq!((meter.answers(), meter.answers_with_usage()), (0, 0));
    assert_eq!(meter.usage(), None);
}
