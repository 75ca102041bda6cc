//! The shapes, one rule a test: where each engine's text stands, by what
//! it is named, and what yields nothing.

use super::*;

/// Each piece of text in `data` (an event of type `kind`), decoded, with
/// its choice and part.
fn read(kind: &str, data: &str) -> Vec<(u32, Part, String)> {
    let mut out = VecDeque::new();
    Delta::read(kind, data, &mut out);
    out.into_iter()
        .map(|delta| (delta.choice, delta.part, delta.text))
        .collect()
}

fn text(choice: u32, text: &str) -> (u32, Part, String) {
    (choice, Part::Text, text.to_owned())
}

fn reasoning(choice: u32, text: &str) -> (u32, Part, String) {
    (choice, Part::Reasoning, text.to_owned())
}

fn arguments(choice: u32, call: u32, text: &str) -> (u32, Part, String) {
    (choice, Part::ToolArguments { call }, text.to_owned())
}

#[test]
fn openai_chat_names_choices_and_tool_calls_by_their_index() {
    let data = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":1,"delta":{"content":"Hel\"lo","reasoning_content":null},"finish_reason":null},{"index":0,"delta":{"reasoning_content":"think","tool_calls":[{"index":2,"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"a\""}}]}}]}"#;
    assert_eq!(
        read("message", data),
        [
            text(1, "Hel\"lo"),
            reasoning(0, "think"),
            arguments(0, 2, "{\"a\"")
        ]
    );
    // Without an index, or with one that is no whole number that fits,
    // the place in the array names it.
    let data = r#"{"choices":[{"delta":{"content":"a"}},{"index":-1,"delta":{"content":"b"}},{"index":4294967296,"delta":{"tool_calls":[{"function":{"arguments":"c"}}]}}]}"#;
    assert_eq!(
        read("message", data),
        [text(0, "a"), text(1, "b"), arguments(2, 0, "c")]
    );
}

#[test]
fn the_responses_api_reads_its_delta_events_and_not_its_done_events() {
    let delta = |kind: &str, delta: &str| {
        format!(
            r#"{{"type":"{kind}","item_id":"msg_1","output_index":3,"content_index":0,"delta":"{delta}","sequence_number":4}}"#
        )
    };
    assert_eq!(
        read(
            "response.output_text.delta",
            &delta("response.output_text.delta", "In")
        ),
        [text(0, "In")]
    );
    for kind in [
        "response.reasoning_text.delta",
        "response.reasoning_summary_text.delta",
    ] {
        assert_eq!(read(kind, &delta(kind, "why")), [reasoning(0, "why")]);
    }
    let kind = "response.function_call_arguments.delta";
    assert_eq!(read(kind, &delta(kind, "{\\\"")), [arguments(0, 3, "{\"")]);
    // The type in the data wins over the event's.
    assert_eq!(
        read("message", &delta("response.output_text.delta", "x")),
        [text(0, "x")]
    );
    for done in [
        r#"{"type":"response.output_text.done","item_id":"msg_1","output_index":0,"content_index":0,"text":"In full"}"#,
        r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{}"}"#,
        r#"{"type":"response.completed","response":{"id":"resp_1","output":[{"content":[{"text":"In full"}]}]}}"#,
        r#"{"type":"response.refusal.delta","delta":"no"}"#,
    ] {
        assert_eq!(read("message", done), [], "{done}");
    }
}

#[test]
fn anthropic_reads_text_thinking_and_tool_input_from_content_block_deltas() {
    let delta = |index: u32, delta: &str| {
        format!(r#"{{"type":"content_block_delta","index":{index},"delta":{delta}}}"#)
    };
    let kind = "content_block_delta";
    assert_eq!(
        read(kind, &delta(0, r#"{"type":"text_delta","text":"Hello"}"#)),
        [text(0, "Hello")]
    );
    assert_eq!(
        read(
            kind,
            &delta(0, r#"{"type":"thinking_delta","thinking":"Let me"}"#)
        ),
        [reasoning(0, "Let me")]
    );
    assert_eq!(
        read(
            kind,
            &delta(
                1,
                r#"{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}"#
            )
        ),
        [arguments(0, 1, "{\"location\": \"San Fra")]
    );
    assert_eq!(
        read(
            kind,
            &delta(0, r#"{"type":"signature_delta","signature":"EqQB"}"#)
        ),
        []
    );
    for other in [
        r#"{"type":"message_start","message":{"id":"msg_1","content":[],"usage":{"input_tokens":25}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"pre"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#,
        r#"{"type":"ping"}"#,
    ] {
        assert_eq!(read("message", other), [], "{other}");
    }
}

#[test]
fn gemini_names_candidates_by_index_and_tool_calls_by_the_parts_place() {
    let data = r#"{"candidates":[{"content":{"parts":[{"text":"**Plan**","thought":true},{"text":"The"},{"functionCall":{"name":"get","args":{"city":"Paris"}}}],"role":"model"},"index":1}],"usageMetadata":{"promptTokenCount":9},"modelVersion":"gemini-2.5-flash"}"#;
    assert_eq!(
        read("message", data),
        [
            reasoning(1, "**Plan**"),
            text(1, "The"),
            arguments(1, 2, r#"{"city":"Paris"}"#)
        ]
    );
    // `thought` must be `true` itself.
    let data = r#"{"candidates":[{"content":{"parts":[{"text":"a","thought":"true"}]}}]}"#;
    assert_eq!(read("message", data), [text(0, "a")]);
}

#[test]
fn ollama_reads_chat_and_generate_lines() {
    let chat = r#"{"model":"qwen3","created_at":"2025-05-29T09:35:56Z","message":{"role":"assistant","content":"","thinking":"Hmm"},"done":false}"#;
    assert_eq!(read("", chat), [reasoning(0, "Hmm")]);
    let generate = r#"{"model":"llama3.2","created_at":"2023-08-04T08:52:19Z","response":"The","thinking":"so","done":false}"#;
    assert_eq!(read("", generate), [text(0, "The"), reasoning(0, "so")]);
    let last = r#"{"model":"llama3.2","response":"","done":true,"eval_count":290}"#;
    assert_eq!(read("", last), []);
}

#[test]
fn data_that_is_no_json_object_is_text_of_choice_0_and_an_object_of_no_known_shape_is_nothing() {
    // Whatever is not a JSON object is a plain-text piece, as the channels
    // read it: a bare number or string in a text stream is text too.
    for plain in [
        "plain words",
        "{\"broken\":",
        "42",
        "\"a string\"",
        "[\"an\",\"array\"]",
    ] {
        assert_eq!(read("message", plain), [text(0, plain)], "{plain}");
    }
    for nothing in [
        "",
        r#"{"delta":"not a shape"}"#,
        r#"{"choices":"not an array","message":{"content":3}}"#,
        // A repeated member that a shape is read by: no reading is the engine's.
        r#"{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}"#,
    ] {
        assert_eq!(read("message", nothing), [], "{nothing}");
    }
}

#[test]
fn every_span_is_the_literal_where_it_stands() {
    let data =
        r#"  {"choices":[{"index":0,"delta":{"content":"a\u00e9\n"}}],"message":{"content":"b"}}"#;
    let spans = delta_spans("message", data);
    assert_eq!(spans.len(), 2);
    assert_eq!(&data[spans[0].raw.clone()], r#""a\u00e9\n""#);
    assert!(spans[0].json);
    assert_eq!(&data[spans[1].raw.clone()], r#""b""#);
    assert!(spans[0].raw.end <= spans[1].raw.start, "in order");
    let plain = delta_spans("message", "héllo");
    assert_eq!(plain.len(), 1);
    assert_eq!((plain[0].raw.clone(), plain[0].json), (0..6, false));
}

#[test]
fn whitespace_of_any_kind_around_json_is_none_of_it() {
    let data = "\u{c}\u{a0}{\"message\":{\"content\":\"a\"}}\u{2028}";
    assert_eq!(read("", data), [text(0, "a")]);
    let spans = delta_spans("", data);
    assert_eq!(&data[spans[0].raw.clone()], "\"a\"");
}

#[test]
fn data_the_channels_read_as_text_is_one_piece_of_text_whatever_serde_json_reads() {
    let data = r#"{"choices":[{"index":0,"delta":{"content":"mw-"}}]}"#;
    let spans = shapes::delta_spans_of("message", data, false);
    assert_eq!(spans.len(), 1);
    assert_eq!(
        (spans[0].raw.clone(), spans[0].json),
        (0..data.len(), false)
    );
    assert_eq!(shapes::delta_spans_of("message", data, true).len(), 1);
    assert!(shapes::delta_spans_of("message", data, true)[0].json);
}

#[test]
fn a_lone_surrogate_is_decoded_as_the_channels_decode_it() {
    let data = r#"{"id":"\udc00","choices":[{"index":0,"delta":{"content":"a\ud800b"}}]}"#;
    assert_eq!(read("message", data), [text(0, "a\u{fffd}b")]);
}
