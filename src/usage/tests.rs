use proptest::prelude::*;

use super::read::{MOST, TAIL};
use super::*;

fn usage(
    input: Option<u64>,
    output: Option<u64>,
    cached: Option<u64>,
    reasoning: Option<u64>,
) -> Usage {
    Usage {
        input,
        output,
        cached,
        reasoning,
    }
}

/// Each engine's usage member, with `{N}` where one figure goes, and
/// what it reads as when `{N}` is 7 (the other figures fixed).
const SHAPES: [(&str, &str); 5] = [
    (
        "openai chat",
        r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":{P},"completion_tokens":{O},"total_tokens":99,"prompt_tokens_details":{"cached_tokens":{C},"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":{R},"audio_tokens":0}},"system_fingerprint":"fp_1"}"#,
    ),
    (
        "openai responses",
        r#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":{P},"input_tokens_details":{"cached_tokens":{C}},"output_tokens":{O},"output_tokens_details":{"reasoning_tokens":{R}},"total_tokens":99},"user":null,"metadata":{}}"#,
    ),
    (
        "anthropic",
        r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":{P},"cache_creation_input_tokens":{R},"cache_read_input_tokens":{C},"output_tokens":{O}}}"#,
    ),
    (
        "gemini",
        r#"{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":{P},"candidatesTokenCount":{O},"totalTokenCount":99,"cachedContentTokenCount":{C},"promptTokensDetails":[{"modality":"TEXT","tokenCount":8}],"thoughtsTokenCount":{R}},"modelVersion":"gemini-2.5-flash"}"#,
    ),
    (
        "ollama",
        r#"{"model":"llama3.2","message":{"role":"assistant","content":"hi"},"done":true,"total_duration":5191566416,"prompt_eval_count":{P},"prompt_eval_duration":383809000,"eval_count":{O},"eval_duration":4799921000}"#,
    ),
];

fn fill(shape: &str, p: &str, o: &str, c: &str, r: &str) -> String {
    shape
        .replace("{P}", p)
        .replace("{O}", o)
        .replace("{C}", c)
        .replace("{R}", r)
}

/// What each shape reads as with P=100, O=20, C=30, R=4.
fn expected(name: &str) -> Usage {
    match name {
        "openai chat" | "openai responses" => usage(Some(100), Some(20), Some(30), Some(4)),
        // Input is the three counts; R stands in the cache writes.
        "anthropic" => usage(Some(134), Some(20), Some(30), None),
        // Output is the candidates and the thoughts.
        "gemini" => usage(Some(100), Some(24), Some(30), Some(4)),
        "ollama" => usage(Some(100), Some(20), None, None),
        _ => unreachable!(),
    }
}

#[test]
fn every_shape_reads_in_one_meaning() {
    for (name, shape) in SHAPES {
        let text = fill(shape, "100", "20", "30", "4");
        assert_eq!(whole(&text), Some(expected(name)), "{name}");
    }
}

#[test]
fn a_bad_figure_is_none_and_the_others_are_kept() {
    let bad = [
        "-1",
        "12.5",
        "9007199254740993",
        "18446744073709551616",
        "1e400",
        "-1e400",
        "\"12\"",
        "true",
        "[1]",
        "{\"n\":1}",
    ];
    for (name, shape) in SHAPES {
        for value in bad {
            let good = expected(name);
            // The input figure is bad.
            let text = fill(shape, value, "20", "30", "4");
            let read = whole(&text).unwrap_or_else(|| panic!("{name} {value}: a usage"));
            assert_eq!(read.input, None, "{name} {value}: input");
            assert_eq!(read.output, good.output, "{name} {value}: output kept");
            assert_eq!(read.cached, good.cached, "{name} {value}: cached kept");
            // The output figure is bad.
            let text = fill(shape, "100", value, "30", "4");
            let read = whole(&text).unwrap_or_else(|| panic!("{name} {value}: a usage"));
            assert_eq!(read.output, None, "{name} {value}: output");
            assert_eq!(read.input, good.input, "{name} {value}: input kept");
            assert_eq!(read.total(), None, "{name} {value}: no total");
            if name == "ollama" {
                continue;
            }
            // The cached figure is bad (Anthropic's is part of its input).
            let text = fill(shape, "100", "20", value, "4");
            let read = whole(&text).unwrap_or_else(|| panic!("{name} {value}: a usage"));
            assert_eq!(read.cached, None, "{name} {value}: cached");
            assert_eq!(read.output, good.output, "{name} {value}: output kept");
            if name != "anthropic" {
                assert_eq!(read.input, good.input, "{name} {value}: input kept");
            }
        }
    }
}

#[test]
fn a_usage_with_no_valid_figure_is_none() {
    for (name, shape) in SHAPES {
        let text = fill(shape, "-1", "null", "1.5", "\"x\"");
        assert_eq!(whole(&text), None, "{name}");
    }
    assert_eq!(whole(r#"{"usage":{}}"#), None);
    assert_eq!(whole(r#"{"usage":null}"#), None);
    assert_eq!(whole(r#"{"usage":"a lot"}"#), None);
    assert_eq!(whole(r#"{"usage":{"prompt_tokens":}"#), None);
    assert_eq!(whole(r#"{"usage":{"prompt_tokens":5"#), None, "cut short");
    assert_eq!(whole(""), None);
}

#[test]
fn the_edges_of_a_figure() {
    let read = |value: &str| {
        whole(&format!(r#"{{"usage":{{"prompt_tokens":{value}}}}}"#)).and_then(|u| u.input)
    };
    assert_eq!(read("0"), Some(0));
    assert_eq!(read(&MOST.to_string()), Some(MOST), "2^53 is a count");
    assert_eq!(read(&(MOST + 1).to_string()), None, "past 2^53 is none");
    assert_eq!(read("12.0"), Some(12), "a whole number with a fraction");
    assert_eq!(read("1e3"), Some(1000));
    assert_eq!(read("9007199254740992.0"), Some(MOST));
    assert_eq!(read("1.5e1"), Some(15));
    assert_eq!(read("1e16"), None);
    assert_eq!(read("-0"), Some(0));
    assert_eq!(read("0.5"), None);
    assert_eq!(read(" 7 "), Some(7));
}

#[test]
fn a_key_inside_a_string_is_text_not_usage() {
    let text = r#"{"choices":[{"text":"{\"usage\": {\"prompt_tokens\": 5}}"}]}"#;
    assert_eq!(whole(text), None);
    // An escaped backslash before a real key leaves it a key.
    let text = r#"{"a":"x\\","usage":{"prompt_tokens":5}}"#;
    assert_eq!(whole(text).and_then(|u| u.input), Some(5));
    // A string valued "usage" is no member.
    let text = r#"{"usage":{"prompt_tokens":5},"kind":"usage"}"#;
    assert_eq!(whole(text).and_then(|u| u.input), Some(5));
}

#[test]
fn the_last_usage_member_is_the_engines() {
    // A tool's input with a member named `usage`, then the bill.
    let text = r#"{"content":[{"type":"tool_use","input":{"usage":{"input_tokens":1}}}],"usage":{"input_tokens":40,"output_tokens":2}}"#;
    assert_eq!(whole(text).and_then(|u| u.input), Some(40));
    // Repeated keys: the last one wins.
    let text = r#"{"usage":{"prompt_tokens":1,"prompt_tokens":2}}"#;
    assert_eq!(whole(text).and_then(|u| u.input), Some(2));
}

#[test]
fn usage_is_read_from_the_tail_of_a_long_answer() {
    let filler = "x".repeat(3 * TAIL);
    let at_end =
        format!(r#"{{"text":"{filler}","usage":{{"prompt_tokens":5,"completion_tokens":6}}}}"#);
    assert_eq!(whole(&at_end).and_then(|u| u.total()), Some(11));
    // A key cut by a block boundary is found: every position near one.
    for pad in 4090..4100 {
        let text = format!(
            r#"{{"usage":{{"prompt_tokens":5}},"text":"{}"}}"#,
            "y".repeat(pad)
        );
        assert_eq!(whole(&text).and_then(|u| u.input), Some(5), "{pad}");
    }
    // Usage followed by more than the tail is out of its reach.
    let at_start = format!(r#"{{"usage":{{"prompt_tokens":5}},"text":"{filler}"}}"#);
    assert_eq!(whole(&at_start), None);
}

#[test]
fn many_keys_that_do_not_parse_cost_a_few_parses() {
    let text = r#""usage":["#.repeat(TAIL / 9);
    let started = std::time::Instant::now();
    assert_eq!(whole(&text), None);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

#[test]
fn ollama_counts_are_read_only_when_no_usage_member_is_there() {
    let text = r#"{"done":true,"prompt_eval_count":3,"eval_count":4}"#;
    assert_eq!(whole(text).and_then(|u| u.total()), Some(7));
    let text = r#"{"message":{"content":"\"eval_count\": 9"},"done":false}"#;
    assert_eq!(whole(text), None);
}

#[test]
fn a_usage_serializes_the_counts_it_has_and_its_total() {
    let json = |u: Usage| serde_json::to_string(&u).expect("serializes");
    assert_eq!(
        json(usage(Some(1), Some(2), Some(0), Some(1))),
        r#"{"input":1,"output":2,"cached":0,"reasoning":1,"total":3}"#
    );
    assert_eq!(json(usage(None, Some(2), None, None)), r#"{"output":2}"#);
    assert_eq!(json(Usage::new()), "{}");
    assert_eq!(usage(Some(u64::MAX), Some(1), None, None).total(), None);
}

fn hostile_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |x| x.is_finite())
            .prop_map(|x| format!("{x:?}")),
        (0u64..1000, 0u32..400).prop_map(|(m, e)| format!("{m}e{e}")),
        "[a-z\"\\\\]{0,6}".prop_map(|s| format!("{s:?}")),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("[1,2]".to_owned()),
        Just("{\"a\":{}}".to_owned()),
    ]
}

proptest! {
    /// Whatever is in one figure, the others read as they were written,
    /// and the figure itself is a valid count or none.
    #[test]
    fn one_hostile_figure_never_spoils_the_others(value in hostile_value(), shape in 0..SHAPES.len()) {
        let (name, shape) = SHAPES[shape];
        let text = fill(shape, &value, "20", "30", "4");
        let good = expected(name);
        let read = whole(&text);
        prop_assert!(read.is_some(), "{}", text);
        let read = read.unwrap_or_default();
        prop_assert_eq!(read.output, good.output);
        prop_assert_eq!(read.cached, good.cached);
        if let Some(input) = read.input {
            prop_assert!(input <= 3 * MOST);
        }
        let valid = value.parse::<u64>().ok().filter(|n| *n <= MOST);
        if let (Some(n), "openai chat" | "openai responses" | "ollama") = (valid, name) {
            prop_assert_eq!(read.input, Some(n));
        }
    }

    /// Any text at all: no panic, and only counts up to 2^53.
    #[test]
    fn any_text_reads_without_a_panic(text in "\\PC{0,200}", prefix in "[\"usage:{}_evalcount 0-9,-]{0,40}") {
        for text in [text.clone(), format!("{prefix}{text}"), format!("{{\"usage\":{{{prefix}{text}")] {
            if let Some(read) = whole(&text) {
                for count in [read.output, read.cached, read.reasoning].into_iter().flatten() {
                    prop_assert!(count <= 2 * MOST);
                }
            }
        }
    }
}
