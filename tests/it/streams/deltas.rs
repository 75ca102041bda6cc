//! The text as it arrives (`next_delta`): each engine's stream, as its
//! docs show it, read into pieces named by choice and part, whatever the
//! network cut; what carries no text read for its usage and its end; a
//! token an engine splits across deltas concealed in their join; the
//! framing picked by the `content-type`; and a fake that asks for
//! `[DONE]` refused without it, as a real stream is.

use super::*;
use meterwire::{Delta, Ending, Part};

/// A delta as the tests compare it.
type Piece = (u32, Part, String);

fn text(choice: u32, text: &str) -> Piece {
    (choice, Part::Text, text.to_owned())
}

fn reasoning(choice: u32, text: &str) -> Piece {
    (choice, Part::Reasoning, text.to_owned())
}

fn arguments(choice: u32, call: u32, text: &str) -> Piece {
    (choice, Part::ToolArguments { call }, text.to_owned())
}

fn piece(delta: &Delta) -> Piece {
    (delta.choice(), delta.part(), delta.text().to_owned())
}

/// `body` written in pieces of `size` bytes, then the end of the body.
fn in_pieces(body: &str, size: usize) -> Vec<Step> {
    let mut steps: Vec<Step> = body
        .as_bytes()
        .chunks(size)
        .map(|piece| Step::Chunk(piece.to_vec()))
        .collect();
    steps.push(Step::End);
    steps
}

/// Every delta of `stream` to its end, or its refusal.
async fn all_deltas(stream: &mut AnswerStream) -> Result<Vec<Piece>, Refusal> {
    let mut pieces = Vec::new();
    loop {
        let next = tokio::time::timeout(GUARD, stream.next_delta())
            .await
            .expect("the next delta, or the end, arrives by itself");
        match next {
            Some(delta) => pieces.push(piece(&delta?)),
            None => return Ok(pieces),
        }
    }
}

/// An engine's stream as its documentation shows it, and what it comes to.
struct Stream {
    engine: &'static str,
    content_type: &'static str,
    body: String,
    deltas: Vec<Piece>,
    ending: Ending,
    /// `(input, output)` as the stream said it billed.
    usage: (Option<u64>, Option<u64>),
}

fn sse(events: &[(&str, &str)]) -> String {
    events
        .iter()
        .map(|(kind, data)| match kind {
            &"" => format!("data: {data}\n\n"),
            kind => format!("event: {kind}\ndata: {data}\n\n"),
        })
        .collect()
}

fn lines(lines: &[&str]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// A text as a JSON string's content, as an engine writes it.
fn json(text: &str) -> String {
    let quoted = serde_json::to_string(text).expect("a string");
    quoted[1..quoted.len() - 1].to_owned()
}

/// The two texts each stream below writes its answer in, as two deltas.
const ANSWER: (&str, &str) = ("It is", " sunny.");

/// OpenAI chat completions with `n: 2`, a reasoning model's
/// `reasoning_content`, a tool call, and `stream_options.include_usage`.
fn openai_chat((one, two): (&str, &str)) -> Stream {
    let (j1, j2) = (json(one), json(two));
    let chunk = |choices: &str| {
        format!(
            r#"{{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":{choices}}}"#
        )
    };
    let body = sse(&[
        (
            "",
            &chunk(
                r#"[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]"#,
            ),
        ),
        (
            "",
            &chunk(
                r#"[{"index":0,"delta":{"content":null,"reasoning_content":"Weather \u00e0 la tool."},"logprobs":null,"finish_reason":null}]"#,
            ),
        ),
        (
            "",
            &chunk(&format!(
                r#"[{{"index":1,"delta":{{"content":"{j1}"}},"logprobs":null,"finish_reason":null}}]"#
            )),
        ),
        (
            "",
            &chunk(
                r#"[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]"#,
            ),
        ),
        (
            "",
            &chunk(
                r#"[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":\""}}]},"logprobs":null,"finish_reason":null}]"#,
            ),
        ),
        (
            "",
            &chunk(&format!(
                r#"[{{"index":1,"delta":{{"content":"{j2}"}},"logprobs":null,"finish_reason":null}}]"#
            )),
        ),
        (
            "",
            &chunk(
                r#"[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]"#,
            ),
        ),
        (
            "",
            &chunk(r#"[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]"#),
        ),
        (
            "",
            &chunk(r#"[{"index":1,"delta":{},"logprobs":null,"finish_reason":"stop"}]"#),
        ),
        (
            "",
            r#"{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}"#,
        ),
        ("", "[DONE]"),
    ]);
    Stream {
        engine: "OpenAI chat",
        content_type: "text/event-stream",
        body,
        deltas: vec![
            reasoning(0, "Weather à la tool."),
            text(1, one),
            arguments(0, 0, "{\"location\":\""),
            text(1, two),
            arguments(0, 0, "Paris\"}"),
        ],
        ending: Ending::Done,
        usage: (Some(9), Some(12)),
    }
}

/// The Responses API: a reasoning summary, the text, a function call, and
/// the `.done` events that repeat each whole.
fn responses((one, two): (&str, &str)) -> Stream {
    let (j1, j2) = (json(one), json(two));
    let body = sse(&[
        (
            "response.created",
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_67c9fdcecf488190","object":"response","created_at":1741290958,"status":"in_progress","output":[],"usage":null}}"#,
        ),
        (
            "response.output_item.added",
            r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
        ),
        (
            "response.reasoning_summary_text.delta",
            r#"{"type":"response.reasoning_summary_text.delta","sequence_number":2,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Greeting**"}"#,
        ),
        (
            "response.reasoning_summary_text.done",
            r#"{"type":"response.reasoning_summary_text.done","sequence_number":3,"item_id":"rs_1","output_index":0,"summary_index":0,"text":"**Greeting**"}"#,
        ),
        (
            "response.output_text.delta",
            &format!(
                r#"{{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"{j1}"}}"#
            ),
        ),
        (
            "response.output_text.delta",
            &format!(
                r#"{{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"{j2}"}}"#
            ),
        ),
        (
            "response.output_text.done",
            &format!(
                r#"{{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_1","output_index":1,"content_index":0,"text":"{j1}{j2}"}}"#
            ),
        ),
        (
            "response.function_call_arguments.delta",
            r#"{"type":"response.function_call_arguments.delta","sequence_number":7,"item_id":"fc_1","output_index":2,"delta":"{\"city\":"}"#,
        ),
        (
            "response.function_call_arguments.delta",
            r#"{"type":"response.function_call_arguments.delta","sequence_number":8,"item_id":"fc_1","output_index":2,"delta":"\"Paris\"}"}"#,
        ),
        (
            "response.function_call_arguments.done",
            r#"{"type":"response.function_call_arguments.done","sequence_number":9,"item_id":"fc_1","output_index":2,"arguments":"{\"city\":\"Paris\"}"}"#,
        ),
        (
            "response.completed",
            r#"{"type":"response.completed","sequence_number":10,"response":{"id":"resp_67c9fdcecf488190","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Hi there"}]}],"usage":{"input_tokens":37,"input_tokens_details":{"cached_tokens":0},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":48}}}"#,
        ),
    ]);
    Stream {
        engine: "the Responses API",
        content_type: "text/event-stream",
        body,
        deltas: vec![
            reasoning(0, "**Greeting**"),
            text(0, one),
            text(0, two),
            arguments(0, 2, "{\"city\":"),
            arguments(0, 2, "\"Paris\"}"),
        ],
        ending: Ending::Body,
        usage: (Some(37), Some(11)),
    }
}

/// Anthropic's Messages API with extended thinking and a tool use.
fn anthropic((one, two): (&str, &str)) -> Stream {
    let (j1, j2) = (json(one), json(two));
    let body = sse(&[
        (
            "message_start",
            r#"{"type":"message_start","message":{"id":"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me check the weather."}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        ),
        ("ping", r#"{"type": "ping"}"#),
        (
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"text_delta","text":"{j1}"}}}}"#
            ),
        ),
        (
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"text_delta","text":"{j2}"}}}}"#
            ),
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":1}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\"}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":2}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]);
    Stream {
        engine: "Anthropic",
        content_type: "text/event-stream",
        body,
        deltas: vec![
            reasoning(0, "Let me check the weather."),
            text(0, one),
            text(0, two),
            arguments(0, 2, "{\"location\": \"San Fra"),
            arguments(0, 2, "ncisco, CA\"}"),
        ],
        ending: Ending::Body,
        usage: (Some(25), Some(89)),
    }
}

/// Gemini's `streamGenerateContent?alt=sse` with thoughts and a function
/// call.
fn gemini((one, two): (&str, &str)) -> Stream {
    let (j1, j2) = (json(one), json(two));
    let body = sse(&[
        (
            "",
            r#"{"candidates": [{"content": {"parts": [{"text": "**Thinking about cats**\n\n","thought": true}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8},"modelVersion": "gemini-2.5-flash","responseId": "mT5xaL3dIc"}"#,
        ),
        (
            "",
            &format!(
                r#"{{"candidates": [{{"content": {{"parts": [{{"text": "{j1}"}}],"role": "model"}},"index": 0}}],"usageMetadata": {{"promptTokenCount": 8,"totalTokenCount": 8}},"modelVersion": "gemini-2.5-flash","responseId": "mT5xaL3dIc"}}"#
            ),
        ),
        (
            "",
            &format!(
                r#"{{"candidates": [{{"content": {{"parts": [{{"text": "{j2}"}},{{"functionCall": {{"name": "find_cat","args": {{"size": "small"}}}}}}],"role": "model"}},"finishReason": "STOP","index": 0}}],"usageMetadata": {{"promptTokenCount": 8,"candidatesTokenCount": 4,"totalTokenCount": 40,"thoughtsTokenCount": 28}},"modelVersion": "gemini-2.5-flash","responseId": "mT5xaL3dIc"}}"#
            ),
        ),
    ]);
    Stream {
        engine: "Gemini",
        content_type: "text/event-stream",
        body,
        deltas: vec![
            reasoning(0, "**Thinking about cats**\n\n"),
            text(0, one),
            text(0, two),
            arguments(0, 1, r#"{"size": "small"}"#),
        ],
        ending: Ending::Body,
        usage: (Some(8), Some(32)),
    }
}

/// Ollama's `/api/chat` with `think: true`.
fn ollama_chat((one, two): (&str, &str)) -> Stream {
    let (j1, j2) = (json(one), json(two));
    let body = lines(&[
        r#"{"model":"qwen3","created_at":"2025-05-27T22:54:57.641643Z","message":{"role":"assistant","content":"","thinking":"Okay, the sky."},"done":false}"#,
        &format!(
            r#"{{"model":"qwen3","created_at":"2025-05-27T22:54:57.72Z","message":{{"role":"assistant","content":"{j1}"}},"done":false}}"#
        ),
        &format!(
            r#"{{"model":"qwen3","created_at":"2025-05-27T22:54:57.8Z","message":{{"role":"assistant","content":"{j2}"}},"done":false}}"#
        ),
        r#"{"model":"qwen3","created_at":"2025-05-27T22:54:57.9Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}"#,
    ]);
    Stream {
        engine: "Ollama chat",
        content_type: "application/x-ndjson",
        body,
        deltas: vec![reasoning(0, "Okay, the sky."), text(0, one), text(0, two)],
        ending: Ending::Body,
        usage: (Some(26), Some(282)),
    }
}

/// Ollama's `/api/generate`, its last line without a line break.
fn ollama_generate((one, two): (&str, &str)) -> Stream {
    let (j1, j2) = (json(one), json(two));
    let mut body = lines(&[
        r#"{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","response":"","thinking":"Rayleigh.","done":false}"#,
        &format!(
            r#"{{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","response":"{j1}","done":false}}"#
        ),
        &format!(
            r#"{{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","response":"{j2}","done":false}}"#
        ),
    ]);
    body.push_str(r#"{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","response":"","done":true,"context":[1,2,3],"total_duration":10706818083,"prompt_eval_count":26,"eval_count":290}"#);
    Stream {
        engine: "Ollama generate",
        content_type: "application/jsonl",
        body,
        deltas: vec![reasoning(0, "Rayleigh."), text(0, one), text(0, two)],
        ending: Ending::Body,
        usage: (Some(26), Some(290)),
    }
}

/// Every engine's stream, its answer written as `answer`'s two deltas.
fn streams(answer: (&str, &str)) -> [Stream; 6] {
    [
        openai_chat(answer),
        responses(answer),
        anthropic(answer),
        gemini(answer),
        ollama_chat(answer),
        ollama_generate(answer),
    ]
}

#[tokio::test]
async fn each_engines_stream_yields_its_text_reasoning_and_tool_arguments_however_it_is_cut() {
    for stream in streams(ANSWER) {
        for size in [7, 64, stream.body.len()] {
            let server = engine(stream.content_type, in_pieces(&stream.body, size)).await;
            let sender = transport(&server);
            let mut read = opened(&sender).await;
            let what = format!("{} in pieces of {size}", stream.engine);
            let deltas = all_deltas(&mut read).await.expect("not refused");
            assert_eq!(deltas, stream.deltas, "{what}");
            assert_eq!(read.ending(), Some(stream.ending), "{what}");
            let usage = read.usage().expect("the stream said what it billed");
            assert_eq!((usage.input(), usage.output()), stream.usage, "{what}");
            assert!(
                read.next_delta().await.is_none(),
                "{what}: nothing after the end"
            );
            drop(read);
            let meter = sender.meter();
            assert_eq!(meter.answers(), 1, "{what}");
            assert_eq!(server.requests.load(Ordering::SeqCst), 1, "{what}");
        }
    }
}

#[tokio::test]
async fn a_token_an_engine_splits_across_deltas_is_concealed_in_their_join_in_every_form() {
    for (name, form) in forms(TOKEN) {
        let (head, tail) = form.split_at(form.len() / 2);
        let (one, two) = (format!("The key is {head}"), format!("{tail}, keep it."));
        for stream in streams((&one, &two)) {
            let server = engine(stream.content_type, in_pieces(&stream.body, 48)).await;
            let mut read = opened(&transport(&server)).await;
            let what = format!("{}, {name}", stream.engine);
            let deltas = all_deltas(&mut read).await.expect("not refused");
            let joined: String = deltas
                .iter()
                .filter(|(_, part, _)| *part == Part::Text)
                .map(|(_, _, text)| text.as_str())
                .collect();
            crate::support::forms::assert_no_form(TOKEN, &what, &joined);
            assert!(joined.contains("[redacted]"), "{what}: {joined}");
            assert!(joined.starts_with("The key is "), "{what}: {joined}");
        }
    }
}

/// Streams whose text a predictor joins by choice and part across strings
/// no one path names alike: Anthropic's text in two content blocks,
/// Gemini's text in parts at different places or with a thought between,
/// the Responses API's reasoning in its text and summary events, and one
/// call's arguments with another's between. Each splits `(one, two)`
/// over two pieces of the same choice and part.
fn joined_across_shapes((one, two): (&str, &str)) -> [(&'static str, String, Part); 5] {
    let (j1, j2) = (json(one), json(two));
    let anthropic = sse(&[
        (
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"text_delta","text":"{j1}"}}}}"#
            ),
        ),
        (
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":2,"delta":{{"type":"text_delta","text":"{j2}"}}}}"#
            ),
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]);
    let gemini = sse(&[
        (
            "",
            &format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"text":"{j1}"}}],"role":"model"}},"index":0}}]}}"#
            ),
        ),
        (
            "",
            &format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"functionCall":{{"name":"f","args":{{}}}}}},{{"text":"{j2}"}}],"role":"model"}},"index":0}}]}}"#
            ),
        ),
    ]);
    let responses = sse(&[
        (
            "response.reasoning_text.delta",
            &format!(
                r#"{{"type":"response.reasoning_text.delta","item_id":"rs_1","output_index":0,"content_index":0,"delta":"{j1}","sequence_number":3}}"#
            ),
        ),
        (
            "response.reasoning_summary_text.delta",
            &format!(
                r#"{{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"{j2}","sequence_number":4}}"#
            ),
        ),
    ]);
    // Only the join by choice and part meets these two: Gemini's text with
    // a thought between its halves (every path reads the thought's text
    // too), and the Responses API's arguments of one call with another
    // call's between (`output_index` is no `index`).
    let thought = sse(&[
        (
            "",
            &format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"text":"{j1}"}}]}},"index":0}}]}}"#
            ),
        ),
        (
            "",
            r#"{"candidates":[{"content":{"parts":[{"text":"weighing it","thought":true}]},"index":0}]}"#,
        ),
        (
            "",
            &format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"text":"{j2}"}}]}},"index":0}}]}}"#
            ),
        ),
    ]);
    let call = |index: u32, delta: &str| {
        (
            "response.function_call_arguments.delta",
            format!(
                r#"{{"type":"response.function_call_arguments.delta","item_id":"fc_{index}","output_index":{index},"delta":"{delta}"}}"#
            ),
        )
    };
    let calls: Vec<(&str, String)> = vec![call(1, &j1), call(2, "{\\\"city\\\":"), call(1, &j2)];
    let calls: Vec<(&str, &str)> = calls
        .iter()
        .map(|(kind, data)| (*kind, data.as_str()))
        .collect();
    [
        ("Anthropic, two text blocks", anthropic, Part::Text),
        ("Gemini, parts at two places", gemini, Part::Text),
        (
            "Responses, reasoning text and summary",
            responses,
            Part::Reasoning,
        ),
        ("Gemini, a thought between", thought, Part::Text),
        (
            "Responses, another call between",
            sse(&calls),
            Part::ToolArguments { call: 1 },
        ),
    ]
}

/// The deltas `keep` picks, joined, as a predictor joins `"The key is "`, a
/// form of the token and `", keep it."` split over deltas: no form, the
/// marker once, the text around it as sent.
fn assert_concealed_once(deltas: &[Piece], keep: impl Fn(&Piece) -> bool, what: &str) {
    let joined: String = deltas
        .iter()
        .filter(|piece| keep(piece))
        .map(|(_, _, text)| text.as_str())
        .collect();
    crate::support::forms::assert_no_form(TOKEN, what, &joined);
    assert_eq!(joined.matches("[redacted]").count(), 1, "{what}: {joined}");
    assert!(joined.starts_with("The key is "), "{what}: {joined}");
    assert!(joined.ends_with(", keep it."), "{what}: {joined}");
}

#[tokio::test]
async fn a_token_split_where_only_the_delta_join_meets_it_is_concealed_in_that_join() {
    for (name, form) in forms(TOKEN) {
        let (head, tail) = form.split_at(form.len() / 2);
        let (one, two) = (format!("The key is {head}"), format!("{tail}, keep it."));
        for (shape, body, part) in joined_across_shapes((&one, &two)) {
            for size in [16, body.len()] {
                let server = engine("text/event-stream", in_pieces(&body, size)).await;
                let mut read = opened(&transport(&server)).await;
                let what = format!("{shape}, {name}, pieces of {size}");
                let deltas = all_deltas(&mut read).await.expect("not refused");
                assert_concealed_once(
                    &deltas,
                    |(choice, got, _)| *choice == 0 && *got == part,
                    &what,
                );
            }
        }
    }
}

#[tokio::test]
async fn the_same_shapes_without_a_token_are_yielded_as_sent() {
    for (shape, body, part) in joined_across_shapes(("The key is ", "not here.")) {
        let server = engine("text/event-stream", in_pieces(&body, 16)).await;
        let mut read = opened(&transport(&server)).await;
        let deltas = all_deltas(&mut read).await.expect("not refused");
        let joined: String = deltas
            .iter()
            .filter(|(_, got, _)| *got == part)
            .map(|(_, _, text)| text.as_str())
            .collect();
        assert_eq!(joined, "The key is not here.", "{shape}");
    }
}

#[tokio::test]
async fn events_with_no_text_still_count_for_usage_the_end_and_errors() {
    // Only text-less events, then [DONE]: no delta, and what they billed.
    let body = sse(&[
        (
            "message_start",
            r#"{"type":"message_start","message":{"content":[],"usage":{"input_tokens":3,"output_tokens":1}}}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#,
        ),
        ("", "[DONE]"),
    ]);
    let server = engine("text/event-stream", in_pieces(&body, 16)).await;
    let mut read = opened(&transport(&server)).await;
    assert_eq!(all_deltas(&mut read).await.expect("not refused"), []);
    assert_eq!(read.ending(), Some(Ending::Done));
    let usage = read.usage().expect("a usage");
    assert_eq!((usage.input(), usage.output()), (Some(3), Some(7)));

    // An error among the deltas ends them in its refusal, after the text
    // before it.
    let body = sse(&[
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
        ),
        (
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    ]);
    let server = engine("text/event-stream", in_pieces(&body, 16)).await;
    let sender = transport(&server);
    let mut read = opened(&sender).await;
    let first = read
        .next_delta()
        .await
        .expect("a delta")
        .expect("not refused");
    assert_eq!(piece(&first), text(0, "Hel"));
    let refusal = read
        .next_delta()
        .await
        .expect("the refusal")
        .expect_err("refused");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains("overloaded_error"),
        "{}",
        refusal.reason()
    );
    assert_refusal_shape(&refusal);
    assert!(read.next_delta().await.is_none());
    assert_eq!(read.ending(), None);
    drop(read);
    assert_eq!(sender.meter().refusals(Cause::EngineUnreachable), 1);

    // A call that asks for [DONE] refuses a body that ends without it.
    let server = engine("text/event-stream", in_pieces(&anthropic(ANSWER).body, 64)).await;
    let call = transport(&server).call("{}").expect_done().stream();
    let mut read = tokio::time::timeout(GUARD, call)
        .await
        .expect("the head arrives")
        .expect("a 2xx head");
    let refusal = all_deltas(&mut read)
        .await
        .expect_err("refused without [DONE]");
    assert!(
        refusal.reason().contains("ended without [DONE]"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn the_content_type_picks_events_lines_or_text() {
    // Events whose data is not JSON are text of choice 0; JSON of no known
    // shape yields nothing.
    let server = engine(
        "text/event-stream; charset=utf-8",
        in_pieces(
            "data: plain words\n\ndata: {\"status\":\"busy\"}\n\ndata: {\"delta\":\"?\"}\n\n",
            5,
        ),
    )
    .await;
    let mut read = opened(&transport(&server)).await;
    assert_eq!(
        all_deltas(&mut read).await.expect("not refused"),
        [text(0, "plain words")]
    );

    // A body that is no stream format is its text, as it arrives, each
    // piece a delta of choice 0 (joined, the body).
    let body = "data: {\"choices\":[]}\n\nnot parsed";
    let server = engine("text/plain", in_pieces(body, 9)).await;
    let mut read = opened(&transport(&server)).await;
    let deltas = all_deltas(&mut read).await.expect("not refused");
    assert!(
        deltas
            .iter()
            .all(|(choice, part, _)| (*choice, *part) == (0, Part::Text))
    );
    let joined: String = deltas.iter().map(|(_, _, text)| text.as_str()).collect();
    assert_eq!(joined, body);
    assert_eq!(read.ending(), Some(Ending::Body));

    // An Ollama stream is lines: read as events it is one event of no
    // known shape (no blank line ends any sooner); as lines, its text.
    let ollama = ollama_chat(ANSWER);
    let server = engine("text/event-stream", in_pieces(&ollama.body, 11)).await;
    let mut read = opened(&transport(&server)).await;
    assert_eq!(all_deltas(&mut read).await.expect("not refused"), []);
    let server = engine("application/x-ndjson", in_pieces(&ollama.body, 11)).await;
    let mut read = opened(&transport(&server)).await;
    assert_eq!(
        all_deltas(&mut read).await.expect("not refused"),
        ollama.deltas
    );
}

#[tokio::test]
async fn a_fake_that_streams_for_itself_honours_expect_done() {
    /// A fake whose `stream` scripts the engine's events itself, as a
    /// predictor's test does.
    struct Scripted {
        body: &'static str,
    }
    impl Transport for Scripted {
        fn send(
            &self,
            _body: Bytes,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
            Box::pin(async { Ok(Answer::new(200, "{}")) })
        }

        fn stream(
            &self,
            request: Request,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<AnswerStream, Refusal>> + Send + '_>>
        {
            let stream =
                AnswerStream::from_chunks(200, [self.body]).with_content_type("text/event-stream");
            let stream = if request.get_expect_done() {
                stream.expecting_done()
            } else {
                stream
            };
            Box::pin(async move { Ok(stream) })
        }
    }
    let cut = Scripted {
        body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    };
    let whole = Scripted {
        body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: [DONE]\n\n",
    };

    // Not asked for: a body that ends without [DONE] ends at the body.
    let mut stream = cut.stream(Request::new("{}")).await.expect("a stream");
    assert_eq!(
        all_deltas(&mut stream).await.expect("not refused"),
        [text(0, "Hel")]
    );
    assert_eq!(stream.ending(), Some(Ending::Body));

    // Asked for: refused without it, as a real stream is, after the text.
    let mut stream = cut
        .stream(Request::new("{}").expect_done())
        .await
        .expect("a stream");
    let first = stream
        .next_delta()
        .await
        .expect("a delta")
        .expect("not refused");
    assert_eq!(first.text(), "Hel");
    let refusal = stream
        .next_delta()
        .await
        .expect("the refusal")
        .expect_err("refused without [DONE]");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal
            .reason()
            .contains("ended without [DONE] after 1 event"),
        "{}",
        refusal.reason()
    );
    assert_eq!(stream.ending(), None);

    // Asked for and sent: the clean end.
    let mut stream = whole
        .stream(Request::new("{}").expect_done())
        .await
        .expect("a stream");
    assert_eq!(
        all_deltas(&mut stream).await.expect("not refused"),
        [text(0, "Hel")]
    );
    assert_eq!(stream.ending(), Some(Ending::Done));
}

/// `body` with each event's JSON data (each NDJSON line) made as a lenient
/// reader still reads it: a no-break space or a form feed around it
/// (dropped by `str::trim`, Python's `strip`), or a member nobody reads
/// holding a lone surrogate (skipped by serde_json, kept by Python and
/// JavaScript).
fn leniently(body: &str, trigger: &str) -> String {
    let change = |json: &str| match trigger {
        "a lone surrogate beside" => format!("{{\"id\":\"\\udc00\",{}", &json[1..]),
        space => format!("{space}{json}{space}"),
    };
    body.split_inclusive('\n')
        .map(|line| {
            let (head, rest) = match line.strip_prefix("data: ") {
                Some(rest) => ("data: ", rest),
                None => ("", line),
            };
            let json = rest.trim_end_matches('\n');
            if json.starts_with('{') && !json.starts_with("{}") {
                format!("{head}{}{}", change(json), &rest[json.len()..])
            } else {
                line.to_owned()
            }
        })
        .collect()
}

#[tokio::test]
async fn data_a_lenient_reader_reads_as_json_is_read_as_json_by_next_delta_and_every_reading() {
    for trigger in ["\u{a0}", "\u{c}", "\u{2028}", "a lone surrogate beside"] {
        for (name, form) in forms(TOKEN) {
            let (head, tail) = form.split_at(form.len() / 2);
            let (one, two) = (format!("The key is {head}"), format!("{tail}, keep it."));
            for stream in streams((&one, &two)) {
                let body = leniently(&stream.body, trigger);
                let what = format!("{}, {name}, {trigger:?}", stream.engine);
                for size in [7, body.len()] {
                    let server = engine(stream.content_type, in_pieces(&body, size)).await;
                    let mut read = opened(&transport(&server)).await;
                    let deltas = all_deltas(&mut read).await.expect("not refused");
                    assert_concealed_once(&deltas, |(_, part, _)| *part == Part::Text, &what);
                }
            }
        }
    }
}

/// The reader a Python predictor writes, `json.loads(data.strip())` and
/// `choices[0].delta.content`, over events with a no-break space around
/// their data: what it joins from `next_event` holds no form.
#[tokio::test]
async fn a_reader_that_strips_the_data_before_parsing_it_joins_no_form() {
    for (name, form) in forms(TOKEN) {
        let (head, tail) = form.split_at(form.len() / 2);
        let (one, two) = (format!("The key is {head}"), format!("{tail}, keep it."));
        let body = leniently(&openai_chat((&one, &two)).body, "\u{a0}");
        let server = engine("text/event-stream", in_pieces(&body, 7)).await;
        let mut read = opened(&transport(&server)).await;
        let mut joined = String::new();
        // Bounded: the stream has a handful of events.
        for _ in 0..64 {
            let next = tokio::time::timeout(GUARD, read.next_event())
                .await
                .expect("the next event, or the end, arrives by itself");
            let Some(event) = next else { break };
            let event = event.expect("not refused");
            let data = event.data().trim();
            let Ok(value) = serde_json::from_str::<serde_json::Value>(data) else {
                continue;
            };
            if let Some(content) = value["choices"][0]["delta"]["content"].as_str() {
                joined.push_str(content);
            }
        }
        crate::support::forms::assert_no_form(TOKEN, &name, &joined);
        assert!(joined.starts_with("The key is "), "{name}: {joined}");
    }
}
