//! What a predictor joins is concealed as joined: a token an engine splits
//! across the JSON payloads of many events (each fragment too short to be
//! a form) reaches no predictor that joins them, in the shapes engines
//! stream (OpenAI chat, two choices told apart by `index`, two tool calls
//! likewise, Anthropic, the Responses API, Ollama's NDJSON) and in every
//! reading predictors join them by (a choice read by position while its
//! `index` alternates, Gemini's parts as one text, a repeated key as
//! serde_json reads it, an event type that changes, data that is a JSON
//! string or plain text, an event nested past the reader's depth); the
//! events keep their number, types, ids and JSON; a stream with no token
//! is yielded byte for byte; and a held event waits for the bytes that
//! settle it, never for a timer. Every engine is a server of its own on
//! loopback (`streams.rs`'s).

use std::time::Duration;

use meterwire::{AnswerStream, Part, REDACTED};
use proptest::prelude::*;
use serde_json::Value;

use crate::streams::{Step, chunk, engine, event, opened, transport};
use crate::support::TOKEN;
use crate::support::forms::{assert_no_form, forms, wrap};

/// How engines stream what a predictor joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    OpenAi,
    /// `n=2`: one choice per chunk, told apart by `index`.
    TwoChoices,
    /// Two tool calls' arguments, one per chunk, told apart by `index`.
    ToolCalls,
    Anthropic,
    Responses,
    Ollama,
    /// `choices[0]` whose `index` alternates 0 and 1, read by position.
    Positions,
    /// Gemini's parts, the text at alternating positions, read as one.
    Parts,
    /// A `content` repeated, serde_json's reading keeping the last.
    Repeated,
    /// Event types that alternate, read whatever the type.
    Types,
    /// Data that is one JSON string, read as its value.
    Decoded,
    /// Plain text data.
    Text,
    /// A chunk that also holds a field nested past the reader's depth.
    Deep,
}

const SHAPES: [Shape; 13] = [
    Shape::OpenAi,
    Shape::TwoChoices,
    Shape::ToolCalls,
    Shape::Anthropic,
    Shape::Responses,
    Shape::Ollama,
    Shape::Positions,
    Shape::Parts,
    Shape::Repeated,
    Shape::Types,
    Shape::Decoded,
    Shape::Text,
    Shape::Deep,
];

/// Containers around the deep shape's field: past the reader's 64, within
/// serde_json's 128.
const DEEP: usize = 70;

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// What [`quoted`] made of `text`, read back.
fn unquoted(quoted: &str) -> String {
    serde_json::from_str(quoted).expect("a JSON string")
}

impl Shape {
    fn ndjson(self) -> bool {
        self == Shape::Ollama
    }

    /// What the joined text says around the form.
    fn around(self) -> (&'static str, &'static str) {
        match self {
            Shape::ToolCalls => ("{\"api_key\": \"", "\", \"retry\": true}"),
            _ => ("The key you gave me is ", ", keep it safe."),
        }
    }

    /// The event (or line) whose joined channel gets `text`, the `n`th sent;
    /// `index` tells the choice or tool call apart where the shape has two.
    fn item(self, text: &str, index: u8, n: usize) -> String {
        let text = quoted(text);
        match self {
            Shape::OpenAi | Shape::TwoChoices => format!(
                "data: {{\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\"created\":1741569952,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_44709d6fcb\",\"choices\":[{{\"index\":{index},\"delta\":{{\"content\":{text}}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
            ),
            Shape::ToolCalls => format!(
                "data: {{\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":{text}}}}}]}},\"finish_reason\":null}}]}}\n\n"
            ),
            Shape::Anthropic => format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"text_delta\",\"text\":{text}}}}}\n\n"
            ),
            Shape::Responses => format!(
                "event: response.output_text.delta\nid: {n}\ndata: {{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_67c9fdcf37fc\",\"output_index\":0,\"content_index\":0,\"delta\":{text}}}\n\n"
            ),
            Shape::Ollama => format!(
                "{{\"model\":\"llama3.2\",\"created_at\":\"2024-07-01T00:00:00.123Z\",\"message\":{{\"role\":\"assistant\",\"content\":{text}}},\"done\":false}}\n"
            ),
            Shape::Positions => format!(
                "data: {{\"choices\":[{{\"index\":{},\"delta\":{{\"content\":{text}}}}}]}}\n\n",
                n % 2
            ),
            Shape::Parts => {
                let parts = if n.is_multiple_of(2) {
                    format!("{{\"text\":{text}}}")
                } else {
                    format!("{{\"text\":\"\"}},{{\"text\":{text}}}")
                };
                format!(
                    "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{parts}],\"role\":\"model\"}},\"index\":0}}]}}\n\n"
                )
            }
            Shape::Repeated => {
                format!("data: {{\"delta\":{{\"content\":\"{n}. \",\"content\":{text}}}}}\n\n")
            }
            Shape::Types => format!(
                "event: part.{}\ndata: {{\"text\":{text}}}\n\n",
                ["a", "b"][n % 2]
            ),
            Shape::Decoded => format!("data: {text}\n\n"),
            Shape::Text => {
                let lines: String = unquoted(&text)
                    .split('\n')
                    .map(|line| format!("data: {line}\n"))
                    .collect();
                format!("{lines}\n")
            }
            Shape::Deep => format!(
                "data: {{\"meta\":{}\"deep\"{},\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{text}}}}}]}}\n\n",
                "[".repeat(DEEP),
                "]".repeat(DEEP)
            ),
        }
    }

    /// Whether the shape interleaves a second choice or tool call.
    fn two(self) -> bool {
        matches!(self, Shape::TwoChoices | Shape::ToolCalls)
    }

    /// The last item, after which nothing is joined.
    fn last(self) -> &'static str {
        match self {
            Shape::Ollama => "{\"model\":\"llama3.2\",\"done\":true}\n",
            _ => "data: [DONE]\n\n",
        }
    }

    /// Whether the shape can carry `text` (server-sent data holds no
    /// carriage return).
    fn carries(self, text: &str) -> bool {
        self != Shape::Text || !text.contains('\r')
    }

    /// The string the channel of `index` has in `data`, if it has one, as
    /// a predictor reads it.
    fn carried(self, data: &str, index: u64) -> Option<String> {
        match self {
            Shape::Text => return Some(data.to_owned()),
            Shape::Decoded => {
                return Some(serde_json::from_str(data).expect("still a JSON string"));
            }
            _ => {}
        }
        let data: Value = serde_json::from_str(data).expect("every item's data is still JSON");
        let data = &data;
        if self == Shape::Parts {
            let parts = data["candidates"][0]["content"]["parts"].as_array()?;
            return Some(
                parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect(),
            );
        }
        let value = match self {
            Shape::OpenAi | Shape::TwoChoices => {
                let choice = &data["choices"][0];
                (choice["index"] == index).then(|| &choice["delta"]["content"])?
            }
            Shape::ToolCalls => {
                let call = &data["choices"][0]["delta"]["tool_calls"][0];
                (call["index"] == index).then(|| &call["function"]["arguments"])?
            }
            Shape::Anthropic => (data["index"] == index).then(|| &data["delta"]["text"])?,
            Shape::Responses => &data["delta"],
            Shape::Ollama => &data["message"]["content"],
            Shape::Positions | Shape::Deep => &data["choices"][0]["delta"]["content"],
            Shape::Repeated => &data["delta"]["content"],
            Shape::Types => &data["text"],
            Shape::Parts | Shape::Decoded | Shape::Text => return None,
        };
        value.as_str().map(str::to_owned)
    }
}

/// One stream as the engine sends it: the items (each a chunk of its own
/// on the wire), the joined text's parts, and the second channel's.
struct Scripted {
    items: Vec<String>,
    last: &'static str,
}

fn script(shape: Shape, parts: &[&str]) -> Scripted {
    let mut items = Vec::new();
    for (n, part) in parts.iter().enumerate() {
        items.push(shape.item(part, 0, items.len()));
        if shape.two() {
            let other = if shape == Shape::ToolCalls {
                format!("{{\"n\": {n}}}")
            } else {
                format!("other words {n} ")
            };
            items.push(shape.item(&other, 1, items.len()));
        }
    }
    Scripted {
        items,
        last: shape.last(),
    }
}

/// The scripted stream, served in one chunk an item by an engine on
/// loopback, opened.
async fn open_scripted(shape: Shape, scripted: &Scripted) -> AnswerStream {
    let mut steps: Vec<Step> = scripted.items.iter().map(|item| chunk(item)).collect();
    steps.push(chunk(scripted.last));
    steps.push(Step::End);
    let content_type = if shape.ndjson() {
        "application/x-ndjson"
    } else {
        "text/event-stream"
    };
    let engine = engine(content_type, steps).await;
    opened(&transport(&engine)).await
}

/// What a reader got: each item's (type, id, data).
type Read = Vec<(Option<String>, Option<String>, String)>;

async fn read_all(shape: Shape, scripted: &Scripted) -> Read {
    let mut stream = open_scripted(shape, scripted).await;
    let mut read = Vec::new();
    if shape.ndjson() {
        while let Some(line) = next_line(&mut stream).await {
            read.push((None, None, line.expect("not refused")));
        }
    } else {
        while let Some(event) = event(&mut stream).await {
            let event = event.expect("not refused");
            read.push((
                event.event().map(str::to_owned),
                event.id().map(str::to_owned),
                event.data().to_owned(),
            ));
        }
    }
    read
}

async fn next_line(stream: &mut AnswerStream) -> Option<Result<String, meterwire::Refusal>> {
    tokio::time::timeout(crate::support::GUARD, stream.next_line())
        .await
        .expect("the next line, or the end, arrives by itself")
}

/// What the items sent are, read as the standard reads them: the last
/// line of NDJSON is a line, `[DONE]` is no event.
fn as_sent(shape: Shape, scripted: &Scripted) -> Read {
    let last = shape.ndjson().then_some(&scripted.last);
    scripted
        .items
        .iter()
        .map(String::as_str)
        .chain(last.map(|last| &**last))
        .map(|item| {
            if shape.ndjson() {
                return (None, None, item.trim_end().to_owned());
            }
            let mut kind = None;
            let mut id = None;
            let mut data: Vec<&str> = Vec::new();
            for line in item.split('\n') {
                if let Some(value) = line.strip_prefix("event: ") {
                    kind = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("id: ") {
                    id = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data.push(value);
                }
            }
            (kind, id, data.join("\n"))
        })
        .collect()
}

/// The joined text of the channel of `index`.
fn joined(shape: Shape, read: &Read, index: u64) -> String {
    read.iter()
        .filter_map(|(_, _, data)| shape.carried(data, index))
        .collect()
}

/// `form` cut at `cuts` (moved back to character boundaries).
fn fragments<'f>(form: &'f str, cuts: &[usize]) -> Vec<&'f str> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&cut| {
            let mut cut = cut.min(form.len());
            while !form.is_char_boundary(cut) {
                cut -= 1;
            }
            cut
        })
        .chain([0, form.len()])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|w| &form[w[0]..w[1]]).collect()
}

/// Every form of the token, and the token and its base64 broken across
/// lines as engines break them.
fn every_form() -> Vec<(String, String)> {
    let mut all = forms(TOKEN);
    let (head, tail) = TOKEN.split_at(11);
    for line_break in ["\n", "\r\n"] {
        all.push((
            format!("wrapped by {line_break:?}"),
            format!("{head}{line_break}{tail}"),
        ));
    }
    let encoded = base64_of(TOKEN);
    for (width, line_break) in [(76, "\n"), (8, "\r\n"), (5, "\n")] {
        all.push((
            format!("base64 wrapped at {width}"),
            wrap(&encoded, width, line_break),
        ));
    }
    all
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// Sends each form cut at its cuts in `shape`, one after another between
/// ` | `, and checks what was read: as many items, with their types and
/// ids, all still JSON; the joined text holds no form and each form's
/// stretch the marker once, the words around them kept; the second
/// channel unchanged; and the same stream with no token in it (each form
/// replaced by as many plain words, cut alike) read back byte for byte.
async fn check(shape: Shape, name: &str, forms: &[(&str, Vec<usize>)]) {
    let (lead, trail) = shape.around();
    let plain_words = "nothing secret, only words said one after another and more words again";
    let build = |plain: bool| {
        let mut parts = vec![lead];
        for (n, (form, cuts)) in forms.iter().enumerate() {
            if n > 0 {
                parts.push(" | ");
            }
            let text = if plain {
                &plain_words[..form.len().min(plain_words.len())]
            } else {
                form
            };
            parts.extend(fragments(text, cuts));
        }
        parts.push(trail);
        script(shape, &parts)
    };
    let scripted = build(false);
    let read = read_all(shape, &scripted).await;
    let sent = as_sent(shape, &scripted);
    let what = format!("{shape:?}, {name}");
    assert_eq!(read.len(), sent.len(), "{what}: as many items");
    for ((kind, id, _), (sent_kind, sent_id, _)) in read.iter().zip(&sent) {
        assert_eq!(
            (kind, id),
            (sent_kind, sent_id),
            "{what}: types and ids kept"
        );
    }
    let text = joined(shape, &read, 0);
    assert_no_form(TOKEN, &what, &text);
    let stretches: Vec<&str> = text.split(" | ").collect();
    assert_eq!(stretches.len(), forms.len(), "{what}: {text:?}");
    for stretch in stretches {
        assert_eq!(stretch.matches(REDACTED).count(), 1, "{what}: {text:?}");
    }
    assert!(
        text.starts_with(lead) && text.ends_with(trail),
        "{what}: {text:?}"
    );
    if shape.two() {
        assert_eq!(joined(shape, &read, 1), joined(shape, &sent, 1), "{what}");
    }
    let scripted = build(true);
    let read = read_all(shape, &scripted).await;
    assert_eq!(read, as_sent(shape, &scripted), "{shape:?} with no token");
}

#[tokio::test]
async fn a_token_split_across_events_in_every_form_and_shape_is_concealed_as_joined() {
    let all = every_form();
    for shape in SHAPES {
        let cut: Vec<(&str, Vec<usize>)> = all
            .iter()
            .filter(|(_, form)| shape.carries(form))
            .map(|(_, form)| (form.as_str(), vec![form.len() / 3, 2 * form.len() / 3]))
            .collect();
        check(shape, "every form in three fragments", &cut).await;
    }
}

#[tokio::test]
async fn a_token_sent_one_byte_per_event_is_concealed_as_joined() {
    let encoded = base64_of(TOKEN);
    let (head, tail) = TOKEN.split_at(11);
    let wrapped = format!("{head}\r\n{tail}");
    for shape in SHAPES {
        for form in [TOKEN, encoded.as_str(), wrapped.as_str()] {
            if shape.carries(form) {
                let every: Vec<usize> = (1..form.len()).collect();
                check(shape, "one byte per event", &[(form, every)]).await;
            }
        }
    }
}

/// The shapes `next_delta` reads: OpenAI chat (text and tool arguments,
/// with a second choice or call between), Anthropic, the Responses API,
/// Gemini's parts, Ollama, and plain text.
const DELTA_SHAPES: [Shape; 8] = [
    Shape::OpenAi,
    Shape::TwoChoices,
    Shape::ToolCalls,
    Shape::Anthropic,
    Shape::Responses,
    Shape::Parts,
    Shape::Ollama,
    Shape::Text,
];

/// Each delta of the scripted stream, read with `next_delta`, as its
/// choice, its part (`text`, `reasoning`, `arguments N`) and its text.
async fn read_deltas(shape: Shape, scripted: &Scripted) -> Vec<(u32, String, String)> {
    let mut stream = open_scripted(shape, scripted).await;
    let mut read = Vec::new();
    loop {
        let next = tokio::time::timeout(crate::support::GUARD, stream.next_delta())
            .await
            .expect("the next delta, or the end, arrives by itself");
        let Some(delta) = next else { break };
        let delta = delta.expect("not refused");
        let part = match delta.part() {
            Part::Text => "text".to_owned(),
            Part::Reasoning => "reasoning".to_owned(),
            Part::ToolArguments { call } => format!("arguments {call}"),
            _ => "other".to_owned(),
        };
        read.push((delta.choice(), part, delta.text().to_owned()));
    }
    read
}

/// The join of the choice and part the form was written in.
fn delta_join(shape: Shape, read: &[(u32, String, String)]) -> String {
    let part = if shape == Shape::ToolCalls {
        "arguments 0"
    } else {
        "text"
    };
    read.iter()
        .filter(|(choice, got, _)| *choice == 0 && got == part)
        .map(|(_, _, text)| text.as_str())
        .collect()
}

/// `form` cut at `cuts`, sent in `shape` and read with `next_delta`: the
/// join of its choice and part holds no form and the marker once, the
/// words around it kept; the other choice or call as sent; and the stream
/// with no token in it read as sent, delta for delta.
async fn check_deltas(shape: Shape, name: &str, form: &str, cuts: &[usize]) {
    let (lead, trail) = shape.around();
    let what = format!("{shape:?}, {name}, cut at {cuts:?}");
    let mut parts = vec![lead];
    parts.extend(fragments(form, cuts));
    parts.push(trail);
    let read = read_deltas(shape, &script(shape, &parts)).await;
    let text = delta_join(shape, &read);
    assert_no_form(TOKEN, &what, &text);
    assert_eq!(text.matches(REDACTED).count(), 1, "{what}: {text:?}");
    assert!(
        text.starts_with(lead) && text.ends_with(trail),
        "{what}: {text:?}"
    );

    let plain = "nothing secret, only words said one after another and more words";
    let plain = &plain[..form.len().min(plain.len())];
    let mut parts = vec![lead];
    parts.extend(fragments(plain, cuts));
    parts.push(trail);
    let read = read_deltas(shape, &script(shape, &parts)).await;
    let sent: String = parts.concat();
    assert_eq!(delta_join(shape, &read), sent, "{shape:?} with no token");
}

/// Where a property cuts a form: each drawn index, anywhere from before its
/// first byte to after its last.
fn cut_at(form: &str, cuts: &[prop::sample::Index]) -> Vec<usize> {
    cuts.iter().map(|cut| cut.index(form.len() + 1)).collect()
}

/// Runs a property's case on a runtime of its own.
fn block_on<F: std::future::Future>(case: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(case)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every form, cut into any number of fragments (one to one per byte),
    /// in every shape `next_delta` reads: what it yields, joined by choice
    /// and part, holds no form of the token.
    #[test]
    fn a_token_cut_anywhere_into_deltas_is_concealed_in_what_next_delta_joins(
        shape in prop::sample::select(DELTA_SHAPES.to_vec()),
        form in prop::sample::select(every_form()),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..64),
    ) {
        let (name, form) = form;
        prop_assume!(shape.carries(&form));
        let cuts = cut_at(&form, &cuts);
        block_on(check_deltas(shape, &name, &form, &cuts));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every form, cut into any number of fragments (one to one per
    /// byte), in any shape and so any reading (the tests above send every
    /// form through every shape): no reading's join holds a form, and the
    /// stream with no token is yielded byte for byte.
    #[test]
    fn a_token_cut_anywhere_into_any_number_of_events_is_concealed_in_every_reading(
        shape in prop::sample::select(SHAPES.to_vec()),
        form in prop::sample::select(every_form()),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..64),
    ) {
        let (name, form) = form;
        prop_assume!(shape.carries(&form));
        let cuts = cut_at(&form, &cuts);
        block_on(check(shape, &name, &[(form.as_str(), cuts)]));
    }
}

#[tokio::test]
async fn a_held_event_waits_for_the_next_bytes_never_for_a_timer() {
    let (head, tail) = TOKEN.split_at(6);
    let shape = Shape::OpenAi;
    let engine = engine(
        "text/event-stream",
        vec![
            chunk(&shape.item("the key: ", 0, 0)),
            chunk(&shape.item(head, 0, 1)),
            Step::Wait,
            chunk(&shape.item(&format!("{tail}!"), 0, 2)),
            chunk(shape.last()),
            Step::End,
        ],
    )
    .await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    let first = event(&mut stream)
        .await
        .expect("an event")
        .expect("not refused");
    assert!(first.data().contains("the key: "));
    // `mw-tes` could begin the token: held while the engine says nothing,
    // however long that is.
    let waited = tokio::time::timeout(Duration::from_millis(400), stream.next_event()).await;
    assert!(waited.is_err(), "a held event was released by time alone");
    engine.go.send(()).expect("the engine waits");
    let mut text = String::new();
    let mut count = 1;
    while let Some(event) = event(&mut stream).await {
        let data: Value = serde_json::from_str(event.expect("not refused").data()).expect("JSON");
        text.push_str(
            data["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap_or_default(),
        );
        count += 1;
    }
    assert_eq!(count, 3);
    assert_eq!(text, format!("{REDACTED}!"));
}

#[tokio::test]
async fn a_refusal_that_ends_a_stream_comes_after_the_events_it_held() {
    let (head, _) = TOKEN.split_at(6);
    let shape = Shape::Anthropic;
    let engine = engine(
        "text/event-stream",
        vec![
            chunk(&shape.item("key ", 0, 0)),
            chunk(&shape.item(head, 0, 1)),
            chunk("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"),
            Step::End,
        ],
    )
    .await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    let mut texts = Vec::new();
    let refusal = loop {
        match event(&mut stream).await {
            Some(Ok(event)) => texts.push(event.data().to_owned()),
            Some(Err(refusal)) => break refusal,
            None => panic!("the stream ended without its refusal"),
        }
    };
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts[1].contains(&format!("\"text\":\"{head}\"")),
        "{texts:?}"
    );
    assert_eq!(refusal.cause(), meterwire::Cause::EngineUnreachable);
    assert!(event(&mut stream).await.is_none());
}

#[tokio::test]
async fn a_stream_past_the_most_channels_is_refused_not_yielded_unconcealed() {
    let keys: Vec<String> = (0..5000).map(|i| format!("\"k{i}\":\"v\"")).collect();
    let engine = engine(
        "text/event-stream",
        vec![
            chunk("data: {\"first\":\"fine\"}\n\n"),
            chunk(&format!("data: {{{}}}\n\n", keys.join(","))),
            chunk("data: {\"after\":\"never read\"}\n\n"),
            Step::End,
        ],
    )
    .await;
    let transport = transport(&engine);
    let mut stream = opened(&transport).await;
    let first = event(&mut stream)
        .await
        .expect("an event")
        .expect("not refused");
    assert_eq!(first.data(), "{\"first\":\"fine\"}");
    let refusal = match event(&mut stream).await {
        Some(Err(refusal)) => refusal,
        other => panic!("expected the refusal, got {other:?}"),
    };
    assert_eq!(refusal.cause(), meterwire::Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains("channels"),
        "{}",
        refusal.reason()
    );
    crate::support::assert_refusal_shape(&refusal);
    assert!(
        event(&mut stream).await.is_none(),
        "nothing after the refusal"
    );
    let refused = transport
        .meter()
        .refusals(meterwire::Cause::EngineUnreachable);
    assert_eq!(refused, 1, "metered as a refusal");
}
