//! `meterwire::blocking` (cargo feature `blocking`): a program with no
//! async runtime sends, streams and reads the meter with every option of
//! the async builder; a thread of tokio's blocking pool sends too, and one
//! driving a runtime is refused, never panics.

use meterwire::{Cause, Env, blocking};
use wiremock::matchers::header;
use wiremock::{MockServer, ResponseTemplate};

use crate::support::engines::{self, engine_with, posts};
use crate::support::{SCOPE, TOKEN, assert_refusal_shape};

fn engine() -> (tokio::runtime::Runtime, MockServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the engine");
    let server = runtime.block_on(engine_with([posts()
        .and(header("x-trace", "t-1"))
        .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"ok":true}"#))]));
    (runtime, server)
}

#[test]
fn a_program_with_no_runtime_sends_and_reads_the_meter() {
    let (_runtime, server) = engine();
    let transport = blocking::HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
        ]))
        .header("x-trace", "t-1")
        .build()
        .expect("builds");
    let answer = transport.send("{}").expect("answered");
    assert_eq!(answer.text(), r#"{"ok":true}"#);
    let answer = transport
        .call("{}")
        .idempotency_key("order-7")
        .send()
        .expect("answered");
    assert_eq!(answer.status(), 200);
    transport
        .send_json(&serde_json::json!({"prompt": "hi"}))
        .expect("answered");
    // Clones share the meter, and from other threads too.
    let clone = transport.clone();
    std::thread::spawn(move || clone.send("{}").expect("answered"))
        .join()
        .expect("the thread ends");
    assert_eq!(transport.meter().sends(), 4);
}

#[tokio::test]
async fn inside_a_runtime_it_refuses_instead_of_panicking() {
    let transport = blocking::HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", "http://127.0.0.1:9/v1"),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ]))
        .build()
        .expect("builds, even here");
    let refusal = transport.send("{}").expect_err("refused");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.attempts(), 0);
    assert!(
        refusal.remedy().contains("meterwire::HttpTransport"),
        "{}",
        refusal.remedy()
    );
    assert_refusal_shape(&refusal);
    // Dropped here, inside the runtime, without a panic.
    drop(transport);
}

/// A runtime, and an engine on it that answers every request with `body`
/// as `content_type`.
fn answering(content_type: &str, body: &str) -> (tokio::runtime::Runtime, MockServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the engine");
    let server = runtime.block_on(engines::engine(
        ResponseTemplate::new(200).set_body_raw(body.to_owned(), content_type),
    ));
    (runtime, server)
}

fn transport_for(server: &MockServer) -> blocking::HttpTransport {
    blocking::HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
        ]))
        .build()
        .expect("builds")
}

#[test]
fn a_blocking_stream_is_an_iterator_of_events_lines_or_chunks() {
    let (_runtime, server) = answering(
        "text/event-stream",
        "event: delta\ndata: {\"content\":\"the\"}\n\ndata: cat\n\ndata: [DONE]\n\n",
    );
    let transport = transport_for(&server);
    let mut stream = transport.stream("{\"stream\":true}").expect("a 2xx head");
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.content_type(), Some("text/event-stream"));
    assert_eq!(stream.ending(), None);
    let events: Vec<meterwire::Event> = stream
        .events()
        .collect::<Result<_, _>>()
        .expect("not refused");
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].event(), Some("delta"));
    #[derive(serde::Deserialize)]
    struct Delta {
        content: String,
    }
    assert_eq!(events[0].json::<Delta>().expect("a delta").content, "the");
    assert_eq!(events[1].data(), "cat");
    assert_eq!(stream.ending(), Some(meterwire::Ending::Done));
    assert!(stream.next_event().is_none(), "nothing after the end");

    let chunks: String = transport
        .call("{}")
        .stream()
        .expect("a 2xx head")
        .collect::<Result<_, _>>()
        .expect("not refused");
    assert!(chunks.ends_with("data: [DONE]\n\n"), "{chunks}");
    let meter = transport.meter();
    assert_eq!((meter.sends(), meter.answers()), (2, 2));

    let (_runtime, server) = answering("application/x-ndjson", "{\"a\":1}\n{\"a\":2}");
    let mut stream = transport_for(&server).stream("{}").expect("a 2xx head");
    let lines: Vec<String> = stream.lines().collect::<Result<_, _>>().expect("lines");
    assert_eq!(lines, ["{\"a\":1}", "{\"a\":2}"]);
    assert_eq!(stream.ending(), Some(meterwire::Ending::Body));
}

#[test]
fn a_blocking_stream_yields_its_deltas_then_says_what_was_billed_and_how_it_ended() {
    let (_runtime, server) = answering(
        "text/event-stream",
        concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Hm.\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"the cat\"}}\n\n",
            "event: message_delta\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n",
            "event: message_stop\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        ),
    );
    let transport = transport_for(&server);
    let mut stream = transport.stream("{\"stream\":true}").expect("a 2xx head");
    assert_eq!((stream.usage(), stream.ending()), (None, None));
    let deltas: Vec<meterwire::Delta> = stream
        .deltas()
        .collect::<Result<_, _>>()
        .expect("not refused");
    let read: Vec<(meterwire::Part, &str)> = deltas
        .iter()
        .map(|delta| (delta.part(), delta.text()))
        .collect();
    assert_eq!(
        read,
        [
            (meterwire::Part::Reasoning, "Hm."),
            (meterwire::Part::Text, "the cat")
        ]
    );
    assert_eq!(stream.ending(), Some(meterwire::Ending::Body));
    let usage = stream.usage().expect("a usage");
    assert_eq!((usage.input(), usage.output()), (Some(25), Some(15)));
    assert!(stream.deltas().next().is_none(), "nothing after the end");
    drop(stream);
    let meter = transport.meter();
    assert_eq!((meter.answers(), meter.answers_with_usage()), (1, 1));
}

#[test]
fn a_blocking_stream_asked_for_done_is_refused_without_it() {
    let (_runtime, server) = answering("text/event-stream", "data: a\n\n");
    let transport = transport_for(&server);
    let mut stream = transport
        .call("{}")
        .expect_done()
        .stream()
        .expect("a 2xx head");
    let refusal = stream
        .events()
        .find_map(Result::err)
        .expect("refused without [DONE]");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal
            .reason()
            .contains("ended without [DONE] after 1 event"),
        "{}",
        refusal.reason()
    );
    assert_refusal_shape(&refusal);
    drop(stream);
    assert_eq!(transport.meter().refusals(Cause::EngineUnreachable), 1);
    assert_eq!(transport.meter().attempts(), 1, "never sent again");
}

#[test]
fn a_stream_true_body_sent_whole_is_refused_when_it_ends_in_an_error_event() {
    let (_runtime, server) = answering(
        "text/event-stream",
        "data: {\"delta\":\"the\"}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let transport = transport_for(&server);
    let refusal = transport
        .send("{\"stream\":true}")
        .expect_err("the error inside the 200 is no answer");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.status(), Some(200));
    assert!(
        refusal.reason().contains("streamed") && refusal.reason().contains("overloaded_error"),
        "{}",
        refusal.reason()
    );
    assert_refusal_shape(&refusal);
    assert_eq!(transport.meter().answers(), 0);
}

/// An engine on a thread of its own that writes `data: one`, then stays
/// silent for `silence` with the connection open: one connection, then it
/// stops.
fn stalling_engine(silence: std::time::Duration) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    std::thread::spawn(move || {
        let Ok((mut socket, _)) = listener.accept() else {
            return;
        };
        let mut request = [0u8; 4096];
        let _ = socket.read(&mut request);
        let _ = socket.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\nb\r\ndata: one\n\n\r\n",
        );
        let _ = socket.flush();
        std::thread::sleep(silence);
    });
    address
}

#[test]
fn every_option_of_the_async_builder_is_set_on_the_blocking_one() {
    // The token from a file, read again at its interval; the stream's
    // timers; the shared hold (a Redis nothing listens at is skipped
    // within its wait).
    let path = std::env::temp_dir().join(format!("blocking-token-{}", std::process::id()));
    std::fs::write(&path, format!("{TOKEN}\n")).expect("the token file is written");
    let address = stalling_engine(std::time::Duration::from_secs(5));
    let transport = blocking::HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([(
            "CHANT_BEHAVIOUR_ENGINE",
            address.as_str(),
        )]))
        .token_file(&path)
        .token_file_interval(std::time::Duration::from_secs(5))
        .idle_timeout(std::time::Duration::from_millis(300))
        .stream_deadline(std::time::Duration::from_secs(20))
        .shared_hold("redis://127.0.0.1:1/")
        .shared_hold_key("meterwire:test:blocking")
        .shared_hold_wait(std::time::Duration::from_millis(20))
        .build()
        .expect("builds");
    let started = std::time::Instant::now();
    let mut stream = transport
        .stream("{}")
        .expect("a 2xx head, the token read from its file");
    let first = stream.next_event().expect("an event").expect("not refused");
    assert_eq!(first.data(), "one");
    let refusal = stream
        .next_event()
        .expect("the idle timer ends it")
        .expect_err("refused");
    assert!(
        refusal.reason().contains("idle timer of 300 ms"),
        "{}",
        refusal.reason()
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    let _ = std::fs::remove_file(&path);

    // A call's own timers replace the transport's.
    let address = stalling_engine(std::time::Duration::from_secs(5));
    let transport = blocking::HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", address),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
        ]))
        .build()
        .expect("builds");
    let mut stream = transport
        .call("{}")
        .idle_timeout(std::time::Duration::from_secs(30))
        .stream_deadline(std::time::Duration::from_millis(400))
        .stream()
        .expect("a 2xx head");
    let refusal = stream
        .events()
        .find_map(Result::err)
        .expect("the stream deadline ends it");
    assert!(
        refusal.reason().contains("deadline of 400 ms"),
        "{}",
        refusal.reason()
    );
}

// A refusal is as large as what it says.
#[allow(clippy::result_large_err)]
#[test]
fn from_spawn_blocking_it_sends_and_from_an_async_task_it_refuses() {
    let (engine_runtime, server) = engine();
    let transport = blocking::HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
        ]))
        .header("x-trace", "t-1")
        .build()
        .expect("builds");
    for multi_thread in [false, true] {
        let caller = if multi_thread {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .expect("the caller's runtime");
        let sending = transport.clone();
        let answer = caller
            .block_on(caller.spawn_blocking(move || sending.send("{}")))
            .expect("the blocking task ends");
        assert_eq!(
            answer.expect("sent from the blocking pool").status(),
            200,
            "multi_thread: {multi_thread}"
        );
        let sending = transport.clone();
        let refused = caller
            .block_on(caller.spawn(async move { sending.send("{}") }))
            .expect("the task ends");
        let refusal = refused.expect_err("refused inside an async task");
        assert_eq!(refusal.attempts(), 0, "nothing sent");
        assert!(
            refusal.remedy().contains("meterwire::HttpTransport"),
            "{}",
            refusal.remedy()
        );
        let sending = transport.clone();
        let refused = caller.block_on(async move { sending.send("{}") });
        assert!(refused.is_err(), "refused in block_on's own future");
    }
    // The sends that went: one per runtime, from its blocking pool.
    assert_eq!(transport.meter().answers(), 2);
    drop(engine_runtime);
}

/// A token read from a file, split by the engine across 2, 3 and 8 deltas
/// (OpenAI's SSE chunks, Ollama's NDJSON lines): what a predictor joins
/// holds the marker once, and no form of the token.
#[test]
fn a_token_read_from_a_file_is_concealed_in_what_a_blocking_reader_joins() {
    const FILE_TOKEN: &str = "mw-file-7Qx9Lm2Pz4Vb8Nc6Rt1Yw3K";
    let path = std::env::temp_dir().join(format!("blocking-joined-token-{}", std::process::id()));
    std::fs::write(&path, format!("{FILE_TOKEN}\n")).expect("the token file is written");
    for ndjson in [false, true] {
        for parts in [2, 3, 8] {
            let step = FILE_TOKEN.len().div_ceil(parts);
            let mut contents = vec!["key: "];
            contents.extend(
                (0..parts).map(|n| &FILE_TOKEN[n * step..((n + 1) * step).min(FILE_TOKEN.len())]),
            );
            contents.push(" ok");
            let body: String = contents
                .iter()
                .map(|content| {
                    let content = serde_json::to_string(content).expect("a string");
                    if ndjson {
                        format!("{{\"message\":{{\"role\":\"assistant\",\"content\":{content}}},\"done\":false}}\n")
                    } else {
                        format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{content}}}}}]}}\n\n")
                    }
                })
                .collect();
            let content_type = if ndjson {
                "application/x-ndjson"
            } else {
                "text/event-stream"
            };
            let (_runtime, server) = answering(content_type, &body);
            let transport = blocking::HttpTransport::builder(SCOPE)
                .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", server.uri())]))
                .token_file(&path)
                .build()
                .expect("builds");
            let mut stream = transport.stream("{}").expect("a 2xx head");
            let datas: Vec<String> = if ndjson {
                stream.lines().collect::<Result<_, _>>().expect("lines")
            } else {
                stream
                    .events()
                    .map(|event| event.map(|event| event.data().to_owned()))
                    .collect::<Result<_, _>>()
                    .expect("events")
            };
            let text: String = datas
                .iter()
                .map(|data| {
                    let value: serde_json::Value = serde_json::from_str(data).expect("still JSON");
                    let content = if ndjson {
                        &value["message"]["content"]
                    } else {
                        &value["choices"][0]["delta"]["content"]
                    };
                    content.as_str().unwrap_or_default().to_owned()
                })
                .collect();
            let what = format!("ndjson: {ndjson}, {parts} deltas");
            crate::support::forms::assert_no_form(FILE_TOKEN, &what, &text);
            assert_eq!(text, format!("key: {} ok", meterwire::REDACTED), "{what}");
        }
    }
    let _ = std::fs::remove_file(&path);
}
