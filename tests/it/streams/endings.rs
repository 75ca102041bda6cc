//! How a stream ended, and what the smaller promises of a stream hold: each
//! ending told apart against a real engine, `[DONE]` asked for and refused
//! without it (once, never sent again), a refusal carrying what any refusal
//! of a send carries, the cap on every line and field however the pieces
//! fall, and what a user reaches for (`Event::json`, a fake's request id
//! and content type, a whole answer that is a stream).

use super::*;
use meterwire::Ending;

/// Reads every event to the end; the data of each, or the refusal.
async fn all_events(stream: &mut AnswerStream) -> Result<Vec<String>, Refusal> {
    let mut data = Vec::new();
    while let Some(event) = event(stream).await {
        data.push(event?.data().to_owned());
    }
    Ok(data)
}

#[tokio::test]
async fn each_ending_is_told_apart_after_the_last_event() {
    for (body, data, ending) in [
        ("data: a\n\ndata: [DONE]\n\n", vec!["a"], Ending::Done),
        ("data: a\n\n: a comment after it\n", vec!["a"], Ending::Body),
        // Cut inside an event: its 8 bytes are not yielded, and counted.
        (
            "data: a\n\ndata: tw",
            vec!["a"],
            Ending::Unfinished { bytes: 8 },
        ),
        // Cut after whole lines of an event that no blank line ended.
        (
            "data: a\n\nevent: x\ndata: partial\n",
            vec!["a"],
            Ending::Unfinished { bytes: 23 },
        ),
    ] {
        let engine = engine("text/event-stream", vec![chunk(body), Step::End]).await;
        let transport = transport(&engine);
        let mut stream = opened(&transport).await;
        assert_eq!(stream.ending(), None, "none before the end");
        assert_eq!(all_events(&mut stream).await.expect("not refused"), data);
        assert_eq!(stream.ending(), Some(ending), "{body:?}");
        drop(stream);
        assert_eq!(transport.meter().answers(), 1, "{body:?}");
    }
}

#[tokio::test]
async fn lines_end_at_done_or_at_the_body_and_chunks_at_the_body() {
    let done = engine(
        "application/x-ndjson",
        vec![chunk("{\"a\":1}\n[DONE]\n{\"never\":1}\n"), Step::End],
    )
    .await;
    let mut stream = opened(&transport(&done)).await;
    let mut lines = Vec::new();
    while let Some(line) = stream.next_line().await {
        lines.push(line.expect("not refused"));
    }
    assert_eq!(lines, ["{\"a\":1}"]);
    assert_eq!(stream.ending(), Some(Ending::Done));

    let engine = engine(
        "application/x-ndjson",
        vec![chunk("{\"a\":1}\n{\"a\":2}"), Step::End],
    )
    .await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    while let Some(line) = stream.next_line().await {
        line.expect("not refused");
    }
    assert_eq!(stream.ending(), Some(Ending::Body));

    let mut stream = opened(&transport).await;
    while let Some(chunk) = stream.next_chunk().await {
        chunk.expect("not refused");
    }
    assert_eq!(stream.ending(), Some(Ending::Body));
}

#[tokio::test]
async fn a_stream_asked_for_done_is_refused_without_it_once_and_never_sent_again() {
    for (body, says) in [
        ("data: a\n\n", "ended without [DONE] after 1 event"),
        (
            "data: a\n\ndata: tw",
            "ended without [DONE] after 1 event, inside an event (8 bytes of it not read)",
        ),
    ] {
        let engine = engine("text/event-stream", vec![chunk(body), Step::End]).await;
        // A policy that would retry what it may: never a stream after its head.
        let transport = builder_for(&engine.address, SCOPE)
            .retries(RetryPolicy::new().max_attempts(5).idempotency_keys(true))
            .build()
            .expect("builds");
        let mut stream = tokio::time::timeout(GUARD, transport.call("{}").expect_done().stream())
            .await
            .expect("the head arrives")
            .expect("a 2xx head");
        let refusal = all_events(&mut stream).await.expect_err("refused");
        assert_eq!(refusal.cause(), Cause::EngineUnreachable);
        assert_eq!(refusal.status(), Some(200));
        assert!(refusal.reason().contains(says), "{}", refusal.reason());
        assert_refusal_shape(&refusal);
        assert_eq!(stream.ending(), None, "a refusal says why itself");
        assert!(event(&mut stream).await.is_none(), "nothing after it");
        drop(stream);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(engine.requests.load(Ordering::SeqCst), 1, "sent once");
        let meter = transport.meter();
        assert_eq!(meter.attempts(), 1);
        assert_eq!(meter.refusals(Cause::EngineUnreachable), 1);
        assert_eq!(meter.answers(), 0);
    }

    // With its [DONE], the same call is an answer.
    let done = engine(
        "text/event-stream",
        vec![chunk("data: a\n\ndata: [DONE]\n\n"), Step::End],
    )
    .await;
    let transport = transport(&done);
    // Through the trait, as a predictor holding `Arc<dyn Transport>` asks.
    let shared: &dyn Transport = &transport;
    let mut stream = tokio::time::timeout(GUARD, shared.stream(Request::new("{}").expect_done()))
        .await
        .expect("the head arrives")
        .expect("a 2xx head");
    assert_eq!(all_events(&mut stream).await.expect("answered"), ["a"]);
    assert_eq!(stream.ending(), Some(Ending::Done));
    drop(stream);
    assert_eq!(transport.meter().answers(), 1);
}

#[tokio::test]
async fn a_fake_streaming_through_the_trait_honours_expect_done() {
    struct Canned;
    impl Transport for Canned {
        fn send(
            &self,
            _body: Bytes,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
            Box::pin(async {
                Ok(Answer::new(200, "data: a\n\n")
                    .with_request_id("r-1")
                    .with_header("content-type", "text/event-stream"))
            })
        }
    }
    let shared: Arc<dyn Transport> = Arc::new(Canned);
    let mut stream = shared
        .stream(Request::new("{}").expect_done())
        .await
        .expect("a stream");
    assert_eq!(stream.request_id(), Some("r-1"));
    assert_eq!(stream.content_type(), Some("text/event-stream"));
    let refusal = all_events(&mut stream).await.expect_err("no [DONE]");
    assert!(
        refusal.reason().contains("ended without [DONE]"),
        "{}",
        refusal.reason()
    );
    assert_eq!(refusal.request_id(), Some("r-1"));
}

#[tokio::test]
async fn a_refusal_that_ends_a_stream_carries_the_request_id_attempts_history_and_key() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    let keys = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = keys.clone();
    tokio::spawn(async move {
        for n in 0..2 {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let Some(request) = read_request(&mut stream).await else {
                return;
            };
            let head = String::from_utf8_lossy(&request).to_ascii_lowercase();
            seen.lock().expect("not poisoned").push(head);
            let reply: &[u8] = if n == 0 {
                b"HTTP/1.1 503 Busy\r\nretry-after-ms: 20\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            } else {
                // The body stops short of its declared length.
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-request-id: req-9\r\ncontent-length: 500\r\n\r\ndata: one\n\n"
            };
            let _ = stream.write_all(reply).await;
        }
    });
    let transport = builder_for(&address, SCOPE)
        .retries(RetryPolicy::new())
        .build()
        .expect("builds");
    let mut stream = tokio::time::timeout(
        GUARD,
        transport.call("{}").idempotency_key("order-7").stream(),
    )
    .await
    .expect("the head arrives")
    .expect("a 2xx head");
    let refusal = refusal_of(&mut stream).await;
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.request_id(), Some("req-9"));
    assert_eq!(refusal.attempts(), 2);
    assert_eq!(refusal.idempotency_key(), Some("order-7"));
    assert!(
        refusal.reason().contains("after 2 attempts (HTTP 503, "),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal
            .reason()
            .contains("with idempotency key \"order-7\""),
        "{}",
        refusal.reason()
    );
    assert!(refusal.reason().contains("1 event"), "{}", refusal.reason());
    assert_refusal_shape(&refusal);
    let keys = keys.lock().expect("not poisoned");
    assert_eq!(keys.len(), 2, "the 503, then the stream");
    assert!(
        keys.iter()
            .all(|head| head.contains("idempotency-key: \"order-7\"")),
        "{keys:?}"
    );
}

#[tokio::test]
async fn an_empty_event_field_is_the_type_message() {
    let engine = engine(
        "text/event-stream",
        vec![
            chunk("event: delta\nevent:\ndata: a\n\nevent:\ndata: b\n\n"),
            Step::End,
        ],
    )
    .await;
    let mut stream = opened(&transport(&engine)).await;
    for data in ["a", "b"] {
        let event = event(&mut stream)
            .await
            .expect("an event")
            .expect("not refused");
        assert_eq!(event.data(), data);
        assert_eq!(event.event(), None, "message, the default type");
    }
}

/// The stream of `steps` under a cap of 1 000 bytes, read as its content
/// type says, to its refusal.
async fn refused_under_a_cap_of_1000(content_type: &str, steps: Vec<Step>) -> Refusal {
    let engine = engine(content_type, steps).await;
    let transport = builder_for(&engine.address, SCOPE)
        .max_answer_bytes(1000)
        .build()
        .expect("builds");
    let mut stream = opened(&transport).await;
    let refusal = if content_type == "text/event-stream" {
        refusal_of(&mut stream).await
    } else {
        loop {
            match tokio::time::timeout(GUARD, stream.next_line())
                .await
                .expect("the next line arrives")
            {
                Some(Ok(line)) => assert!(line.len() <= 1000, "a line of {}", line.len()),
                Some(Err(refusal)) => break refusal,
                None => panic!("the stream ended cleanly"),
            }
        }
    };
    drop(stream);
    assert_eq!(transport.meter().refusals(Cause::EngineUnreachable), 1);
    refusal
}

#[tokio::test]
async fn a_line_over_the_cap_is_refused_however_the_pieces_fall() {
    let over = "one line of the stream is larger than the cap of 1000 bytes";
    // The line ends in the piece that takes it over the cap.
    let refusal = refused_under_a_cap_of_1000(
        "application/x-ndjson",
        vec![
            chunk(&"a".repeat(600)),
            chunk(&format!("{}\n", "b".repeat(600))),
            Step::End,
        ],
    )
    .await;
    assert!(refusal.reason().contains(over), "{}", refusal.reason());
    // The last line, with no line break, at the end of the body.
    let refusal = refused_under_a_cap_of_1000(
        "application/x-ndjson",
        vec![
            chunk("{\"a\":1}\n"),
            chunk(&"a".repeat(600)),
            chunk(&"b".repeat(600)),
            Step::End,
        ],
    )
    .await;
    assert!(refusal.reason().contains(over), "{}", refusal.reason());
    // An SSE field that is not data, and a comment, however long.
    for line in [
        format!("id: {}", "i".repeat(1800)),
        format!("event: {}", "e".repeat(1800)),
        format!(": {}", "c".repeat(1800)),
    ] {
        let (head, tail) = line.split_at(900);
        let refusal = refused_under_a_cap_of_1000(
            "text/event-stream",
            vec![
                chunk(head),
                chunk(&format!("{tail}\ndata: a\n\n")),
                Step::End,
            ],
        )
        .await;
        assert!(refusal.reason().contains(over), "{}", refusal.reason());
    }
}

#[tokio::test]
async fn an_event_reads_its_data_as_json() {
    #[derive(serde::Deserialize, Debug)]
    struct Delta {
        content: String,
    }
    let engine = engine(
        "text/event-stream",
        vec![
            chunk("data: {\"content\":\"the\"}\n\ndata: not json\n\n"),
            Step::End,
        ],
    )
    .await;
    let mut stream = opened(&transport(&engine)).await;
    let first = event(&mut stream).await.expect("an event").expect("ok");
    assert_eq!(first.json::<Delta>().expect("a delta").content, "the");
    let second = event(&mut stream).await.expect("an event").expect("ok");
    assert!(second.json::<Delta>().is_err());
}

#[tokio::test]
async fn a_fake_stream_has_the_request_id_and_content_type_a_real_one_has() {
    let stream = AnswerStream::from_chunks(200, ["{\"a\":1}\n"])
        .with_request_id("req-7")
        .with_content_type("application/x-ndjson");
    assert_eq!(stream.request_id(), Some("req-7"));
    assert_eq!(stream.content_type(), Some("application/x-ndjson"));
    let mut scripted =
        AnswerStream::from_chunks(200, ["data: {\"error\":{}}\n\n"]).with_request_id("req-8");
    let refusal = scripted
        .next_event()
        .await
        .expect("a refusal")
        .expect_err("refused");
    assert_eq!(refusal.request_id(), Some("req-8"));
}

#[tokio::test]
async fn a_whole_answer_that_is_a_stream_ending_in_an_error_is_refused_not_answered() {
    for (content_type, body) in [
        (
            "text/event-stream",
            "data: {\"delta\":\"the\"}\n\ndata: {\"error\":{\"type\":\"rate_limit_error\"}}\n\n",
        ),
        (
            "application/x-ndjson",
            "{\"delta\":\"the\"}\n{\"error\":{\"type\":\"rate_limit_error\"}}",
        ),
    ] {
        let engine = engine(content_type, vec![chunk(body), Step::End]).await;
        let transport = transport(&engine);
        let refusal = tokio::time::timeout(GUARD, transport.send("{\"stream\":true}"))
            .await
            .expect("ends")
            .expect_err("the error inside the 200");
        assert_eq!(refusal.cause(), Cause::EngineOverQuota, "{content_type}");
        assert_eq!(refusal.status(), Some(200));
        assert!(
            refusal.reason().contains("then sent an error"),
            "{}",
            refusal.reason()
        );
        assert_refusal_shape(&refusal);
        let meter = transport.meter();
        assert_eq!(meter.refusals(Cause::EngineOverQuota), 1);
        assert_eq!(meter.answers(), 0);
        assert_eq!(engine.requests.load(Ordering::SeqCst), 1);
    }
    // A stream with no error is still the answer it was.
    let engine = engine(
        "text/event-stream",
        vec![
            chunk("data: {\"delta\":\"the\"}\n\ndata: [DONE]\n\n"),
            Step::End,
        ],
    )
    .await;
    let answer = transport(&engine).send("{}").await.expect("an answer");
    assert!(answer.text().starts_with("data: {\"delta\""));
}
