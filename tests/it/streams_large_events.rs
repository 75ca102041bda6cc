//! An event is limited by the answer cap alone: the public SSE suites' very
//! large events (eventsource-parser's 10 MiB of multibyte text, the
//! LaunchDarkly contract tests' 5 MiB of base64 in one chunk and in two)
//! and an image stream's 2 MiB `b64_json` event are yielded whole, never
//! refused for what the parsed readers hold back, even when their end
//! could begin the token. The cases and the fixture text they repeat are
//! in `data/sse_large_events.json`, each naming its source.

use base64::Engine as _;
use serde_json::Value;

use crate::streams::{Step, chunk, engine, event, opened, transport};
use crate::support::TOKEN;

/// The cases, and the fixture text of the huge one.
fn table() -> Value {
    serde_json::from_str(include_str!("data/sse_large_events.json")).expect("the table is JSON")
}

/// The table's case named `test`.
fn case(table: &Value, test: &str) -> Value {
    table["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|case| case["test"] == test)
        .cloned()
        .unwrap_or_else(|| panic!("no case {test:?}"))
}

/// `len` characters of base64 of pseudo-random bytes (xorshift, seeded).
fn random_base64(len: usize, seed: u64) -> String {
    let mut state = seed | 1;
    let bytes: Vec<u8> = (0..len.div_ceil(4) * 3)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let mut encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    encoded.truncate(len);
    encoded
}

/// The first characters of the base64 of the transport's token: an end
/// that could begin its form.
fn open_end() -> String {
    base64::engine::general_purpose::STANDARD.encode(TOKEN)[..6].to_owned()
}

/// The events a stream of `steps` yields: (type, data), read to the end,
/// none refused.
async fn read(steps: Vec<Step>) -> Vec<(Option<String>, String)> {
    let engine = engine("text/event-stream", steps).await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    let mut read = Vec::new();
    while let Some(event) = event(&mut stream).await {
        let event = event.unwrap_or_else(|refusal| panic!("refused: {}", refusal.reason()));
        read.push((event.event().map(str::to_owned), event.data().to_owned()));
    }
    read
}

#[tokio::test]
async fn eventsource_parsers_ten_mib_of_huge_data_chunks_is_one_event() {
    let table = table();
    let case = case(
        &table,
        "stream with huge data chunks (getHugeMessageFixtureStream)",
    );
    let text = |key: &str| -> Vec<String> {
        table[key]
            .as_array()
            .expect("fixture lines")
            .iter()
            .map(|line| line.as_str().expect("a line").to_owned())
            .collect()
    };
    // encodeData of the lines joined by blank lines, then the emojis;
    // trimmed, its last blank line gone.
    let source = format!(
        "{}\n{}",
        text("multibyte_lines").join("\n\n"),
        text("multibyte_emojis").join(" ")
    );
    let data_chunk: String = source
        .split('\n')
        .map(|line| format!("data: {line}\n"))
        .collect::<String>()
        .trim()
        .to_owned();
    let mut steps = vec![chunk(": hello\n\n")];
    let mut written = 0;
    let mut body = String::new();
    while written < 10 * 1024 * 1024 {
        steps.push(chunk(&data_chunk));
        body.push_str(&data_chunk);
        written += data_chunk.len();
    }
    let expected = &case["expect"]["events"];
    let digest = expected[1]["data"].as_str().expect("the digest");
    steps.push(chunk("\n\n"));
    steps.push(chunk(": END-OF-STREAM\n\n"));
    steps.push(chunk(&format!("event: done\ndata: {digest}\n\n")));
    steps.push(Step::End);
    // The data, as the standard joins it: each `data` line's value.
    let data: Vec<&str> = body
        .split('\n')
        .map(|line| line.strip_prefix("data: ").unwrap_or(line))
        .collect();
    let data = data.join("\n");
    assert_eq!(
        data.encode_utf16().count() as u64,
        expected[0]["data_utf16_len"].as_u64().expect("a length"),
        "the fixture is the suite's"
    );

    let read = read(steps).await;
    assert_eq!(read.len(), 2);
    assert_eq!(read[0].0, None);
    assert!(read[0].1 == data, "the huge event's data, whole");
    assert_eq!(read[1], (Some("done".to_owned()), digest.to_owned()));
}

#[tokio::test]
async fn launchdarklys_five_mib_message_in_one_chunk_and_in_two_is_one_event() {
    let table = table();
    for (test, seed) in [
        ("large message in one chunk", 7),
        ("large message in two chunks", 11),
    ] {
        let parts: Vec<usize> = case(&table, test)["pieces"]["parts"]
            .as_array()
            .expect("parts")
            .iter()
            .map(|part| usize::try_from(part.as_u64().expect("a length")).expect("fits"))
            .collect();
        let data: Vec<String> = parts
            .iter()
            .zip(seed..)
            .map(|(&len, seed)| random_base64(len, seed))
            .collect();
        let mut steps: Vec<Step> = Vec::new();
        for (n, part) in data.iter().enumerate() {
            let head = if n == 0 { "data: " } else { "" };
            let tail = if n + 1 == data.len() { "\n\n" } else { "" };
            steps.push(chunk(&format!("{head}{part}{tail}")));
        }
        steps.push(Step::End);
        let read = read(steps).await;
        assert_eq!(read.len(), 1, "{test}");
        assert!(read[0].1 == data.concat(), "{test}: the data, whole");
    }
}

#[tokio::test]
async fn a_five_mib_base64_event_whose_end_could_begin_the_token_is_yielded_whole() {
    let data = format!("{}{}", random_base64(5 * 1024 * 1024, 3), open_end());
    let read = read(vec![
        chunk(&format!("data: {data}\n\n")),
        chunk("data: after\n\n"),
        Step::End,
    ])
    .await;
    assert_eq!(read.len(), 2);
    assert!(read[0].1 == data, "the large event, whole");
    assert_eq!(read[1].1, "after");
}

#[tokio::test]
async fn a_two_mib_b64_json_image_event_is_yielded_whole() {
    for end in [String::new(), open_end()] {
        let image = format!("{}{end}", random_base64(2 * 1024 * 1024, 5));
        let partial = format!(
            "{{\"type\":\"image_generation.partial_image\",\"b64_json\":\"{image}\",\"partial_image_index\":0}}"
        );
        let done = "{\"type\":\"image_generation.completed\",\"b64_json\":\"AAAA\"}";
        let read = read(vec![
            chunk(&format!(
                "event: image_generation.partial_image\ndata: {partial}\n\n"
            )),
            chunk(&format!(
                "event: image_generation.completed\ndata: {done}\n\n"
            )),
            Step::End,
        ])
        .await;
        assert_eq!(read.len(), 2);
        assert!(read[0].1 == partial, "the image event, whole");
        assert_eq!(read[1].1, done);
    }
}
