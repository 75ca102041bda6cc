//! The joiner's rules, one test each: what is held and for how long, what a
//! form spanning items becomes, and its bounds.

use super::*;
use crate::conceal::REDACTED;

const TOKEN: &str = "sk-repro-7Qx9Lm2Pz4Vb8Nc6Rt1Yw3";

fn joiner() -> Joined<String> {
    Joined::new(Some(&Concealer::new([TOKEN])))
}

fn line(content: &str) -> String {
    format!(
        "{{\"model\":\"m1\",\"message\":{{\"content\":{}}},\"done\":false}}",
        serde_json::to_string(content).expect("a string")
    )
}

/// Everything ready now, in order.
fn drain<T: Carrier>(joined: &mut Joined<T>) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(Some(Ok(item))) = joined.out() {
        out.push(item);
    }
    out
}

/// What comes out of `joined` for `items`, each pushed and what is ready
/// then taken, and the rest taken at the end of the stream.
fn through<T: Carrier>(joined: &mut Joined<T>, items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        joined.push(item).expect("within bounds");
        out.extend(drain(joined));
    }
    joined.take(None).expect("within bounds");
    out.extend(drain(joined));
    out
}

/// The `message.content` values of `lines`, joined.
fn joined_content(lines: &[String]) -> String {
    lines
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("still JSON");
            value["message"]["content"]
                .as_str()
                .expect("a string")
                .to_owned()
        })
        .collect()
}

#[test]
fn an_item_is_held_only_while_its_channel_ends_in_a_possible_prefix() {
    let mut joined = joiner();
    joined.push(line("the key is ")).expect("within bounds");
    assert_eq!(drain(&mut joined), [line("the key is ")]);
    joined.push(line("sk-re")).expect("within bounds");
    assert!(drain(&mut joined).is_empty(), "`sk-re` may begin the token");
    assert_eq!(joined.ever_held, 1);
    // One byte of a pattern is not enough to hold.
    let mut joined = joiner();
    joined.push(line("cats")).expect("within bounds");
    assert_eq!(drain(&mut joined), [line("cats")]);
    assert_eq!(joined.ever_held, 0);
}

#[test]
fn a_held_item_is_released_unchanged_by_the_next_that_settles_it() {
    let mut joined = joiner();
    joined.push(line("sk-re")).expect("within bounds");
    assert!(drain(&mut joined).is_empty());
    joined.push(line("ady now")).expect("within bounds");
    assert_eq!(drain(&mut joined), [line("sk-re"), line("ady now")]);
}

#[test]
fn a_held_item_is_released_at_the_end() {
    let mut joined = joiner();
    joined.push(line("sk-re")).expect("within bounds");
    assert!(drain(&mut joined).is_empty());
    joined.take(None).expect("within bounds");
    assert_eq!(drain(&mut joined), [line("sk-re")]);
    assert!(matches!(joined.out(), Some(None)));
}

#[test]
fn a_refusal_that_ends_the_stream_comes_after_the_held_items() {
    let mut joined = joiner();
    joined.push(line("sk-re")).expect("within bounds");
    let refusal = Refusal::new(
        crate::refusal::Cause::EngineUnreachable,
        "cut",
        "retry",
        None,
    );
    joined.take(Some(Err(refusal))).expect("within bounds");
    assert!(matches!(joined.out(), Some(Some(Ok(item))) if item == line("sk-re")));
    assert!(matches!(joined.out(), Some(Some(Err(_)))));
    assert!(matches!(joined.out(), Some(None)));
}

#[test]
fn a_token_split_across_items_is_one_marker_in_the_first_string_it_touched() {
    let mut joined = joiner();
    let (head, rest) = TOKEN.split_at(7);
    let (middle, tail) = rest.split_at(11);
    let parts = [
        "key: ".to_owned(),
        head.to_owned(),
        middle.to_owned(),
        format!("{tail}, done"),
    ];
    let out = through(&mut joined, parts.iter().map(|part| line(part)));
    assert_eq!(out.len(), 4, "as many items as came");
    assert_eq!(joined_content(&out), format!("key: {REDACTED}, done"));
    assert_eq!(
        out[0],
        line("key: "),
        "an item the form missed is unchanged"
    );
    assert_eq!(out[1], line(REDACTED));
    assert_eq!(out[2], line(""));
    assert_eq!(out[3], line(", done"));
}

#[test]
fn an_item_behind_a_held_one_waits_for_it_and_order_is_kept() {
    let mut joined = joiner();
    joined.push(line("sk-re")).expect("within bounds");
    // Another channel, settled at once, still comes after.
    joined
        .push("{\"other\":\"words \"}".to_owned())
        .expect("within bounds");
    assert!(drain(&mut joined).is_empty());
    joined.push(line("ad.")).expect("within bounds");
    assert_eq!(
        drain(&mut joined),
        [
            line("sk-re"),
            "{\"other\":\"words \"}".to_owned(),
            line("ad.")
        ]
    );
}

#[test]
fn choices_told_apart_by_index_are_joined_each_on_its_own() {
    let mut joined: Joined<Event> = Joined::new(Some(&Concealer::new([TOKEN])));
    let chunk = |index: u8, content: &str| Event {
        event: None,
        data: format!(
            "{{\"choices\":[{{\"index\":{index},\"delta\":{{\"content\":{}}}}}]}}",
            serde_json::to_string(content).expect("a string")
        ),
        id: None,
    };
    let (head, tail) = TOKEN.split_at(12);
    let events = [
        chunk(0, head),
        chunk(1, "other words "),
        chunk(0, tail),
        chunk(1, "and more"),
    ];
    let out = through(&mut joined, events);
    assert_eq!(out.len(), 4);
    let content = |event: &Event| {
        let value: serde_json::Value = serde_json::from_str(event.data()).expect("JSON");
        value["choices"][0]["delta"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(content(&out[0]) + &content(&out[2]), REDACTED);
    assert_eq!(out[1], chunk(1, "other words "));
    assert_eq!(out[3], chunk(1, "and more"));
}

#[test]
fn data_that_is_not_json_is_one_channel_joined_with_nothing_between() {
    let mut joined: Joined<Event> = Joined::new(Some(&Concealer::new([TOKEN])));
    let event = |data: &str| Event {
        event: Some("delta".to_owned()),
        data: data.to_owned(),
        id: Some("7".to_owned()),
    };
    let (head, tail) = TOKEN.split_at(9);
    joined
        .push(event(&format!("say {head}")))
        .expect("within bounds");
    joined
        .push(event(&format!("{tail} now")))
        .expect("within bounds");
    let out = drain(&mut joined);
    assert_eq!(out, [event(&format!("say {REDACTED}")), event(" now")]);
}

#[test]
fn an_escape_at_work_holds_until_a_separator_ends_its_run() {
    let mut joined = joiner();
    joined.push(line("up 50%")).expect("within bounds");
    assert!(drain(&mut joined).is_empty(), "`%` may begin an escape");
    joined.push(line("2B more")).expect("within bounds");
    assert_eq!(drain(&mut joined), [line("up 50%"), line("2B more")]);
}

#[test]
fn a_stream_with_nothing_to_conceal_is_yielded_as_it_came() {
    let mut joined: Joined<String> = Joined::new(Some(&Concealer::new([])));
    joined
        .push(line("sk-re"))
        .expect("no bounds without a secret");
    assert_eq!(drain(&mut joined), [line("sk-re")]);
    let mut joined: Joined<String> = Joined::new(None);
    joined
        .push("not json".to_owned())
        .expect("no bounds for a fake");
    assert_eq!(drain(&mut joined), ["not json"]);
}

#[test]
fn past_the_most_channels_a_stream_is_refused() {
    let mut joined = joiner();
    for i in 0..MAX_CHANNELS {
        joined
            .push(format!("{{\"k{i}\":\"v\"}}"))
            .expect("within bounds");
    }
    assert_eq!(
        joined.push("{\"one more\":\"v\"}".to_owned()),
        Err(Exceeded::Channels)
    );
}

#[test]
fn past_the_most_items_held_the_oldest_hold_settles_and_nothing_is_refused() {
    // An escape at work in a run that every item continues: no hold
    // settles by itself, and none is refused.
    let mut joined = joiner();
    joined.push(line("up 50%")).expect("within bounds");
    let mut out = Vec::new();
    for _ in 0..3 * MAX_HELD_EVENTS {
        joined.push(line("a")).expect("never refused for holding");
        assert!(joined.held.len() <= MAX_HELD_EVENTS);
        out.extend(drain(&mut joined));
    }
    assert!(out.len() >= 2 * MAX_HELD_EVENTS, "{} released", out.len());
    assert_eq!(out[0], line("up 50%"));
    joined.take(None).expect("the end");
    out.extend(drain(&mut joined));
    assert_eq!(out.len(), 3 * MAX_HELD_EVENTS + 1, "every item, in order");
}

#[test]
fn a_large_item_that_ends_open_is_released_at_once() {
    let concealer = Concealer::new([TOKEN]);
    let mut joined: Joined<String> = Joined::new(Some(&concealer));
    // Past the held bytes' bound, ending in what begins the token.
    let big = format!("{}sk-re", "a".repeat(4 * concealer.reach().max(1 << 20)));
    joined.push(line(&big)).expect("never refused");
    assert_eq!(drain(&mut joined), [line(&big)]);
    // What comes after is still concealed where the form resumes.
    let (_, rest) = TOKEN.split_at(5);
    joined.push(line(rest)).expect("within bounds");
    joined.take(None).expect("within bounds");
    let out = drain(&mut joined);
    assert_eq!(out, [line(REDACTED)], "the rest of the form goes");
}

#[test]
fn a_channel_holds_no_more_than_its_reach_at_its_end() {
    let concealer = Concealer::new([TOKEN]);
    let mut joined: Joined<String> = Joined::new(Some(&concealer));
    // An escape at work in a run that never ends: held, up to the reach.
    joined.push(line("%")).expect("within bounds");
    let piece = "a".repeat(8192);
    let pushed = concealer.reach() / piece.len() + 2;
    let mut out = drain(&mut joined);
    for _ in 0..pushed {
        joined.push(line(&piece)).expect("never refused");
        out.extend(drain(&mut joined));
    }
    assert!(!out.is_empty(), "what lies past the reach is released");
    assert!(out.len() < pushed + 1, "the end is held");
}

/// English text as a model streams it, a word or half a long one per
/// chunk (the bench's chat stream, `benches/stream.rs`).
const PROSE: &str = "Sure! Here is a short overview of how streaming works in practice. \
    When a client sends a request with stream set to true, the server starts generating tokens \
    and sends each one as soon as it is ready, so the user sees the answer appear word by word. \
    Each chunk carries a small delta: usually a single token, sometimes a piece of punctuation, \
    and the client joins them in order. The final chunk has an empty delta and a finish reason, \
    which tells the client that the model stopped because it reached a natural end, hit the \
    length limit, or decided to call a tool. In 2024 most providers followed the same format, \
    with small differences in field names; libraries hide them behind one interface. If you \
    need the full text, keep appending each delta to a buffer; if you render it live, flush \
    the buffer to the screen every few milliseconds. Errors can also arrive mid-stream, so \
    check every event before you trust it, and remember that the connection may close early.";

#[test]
fn a_token_free_chat_stream_holds_fewer_than_one_event_in_a_hundred() {
    let mut pieces = Vec::new();
    for word in PROSE.split_whitespace() {
        let (head, tail) = match word.char_indices().nth(6) {
            Some((at, _)) if word.len() > 8 => word.split_at(at),
            _ => (word, ""),
        };
        pieces.push(format!(" {head}"));
        if !tail.is_empty() {
            pieces.push(tail.to_owned());
        }
    }
    for token in [
        TOKEN,
        "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN",
        "mw-test-Q7vX2kP9zR4tL8wN",
    ] {
        let mut joined: Joined<Event> = Joined::new(Some(&Concealer::new([token])));
        let sent: Vec<Event> = (0..2000)
            .map(|i| {
                let content = serde_json::to_string(&pieces[i % pieces.len()]).expect("a string");
                Event {
                    event: None,
                    data: format!(
                        "{{\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\"created\":1741569952,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_44709d6fcb\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{content}}},\"logprobs\":null,\"finish_reason\":null}}]}}"
                    ),
                    id: None,
                }
            })
            .collect();
        let out = through(&mut joined, sent.clone());
        assert_eq!(out, sent, "{token}: byte for byte");
        assert!(
            joined.ever_held < 20,
            "{token}: {} of 2000 held",
            joined.ever_held
        );
        eprintln!("{token}: {} of 2000 events held", joined.ever_held);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

    /// Any text with the token in it, cut anywhere into lines: the joined
    /// channel holds no form, and a marker for each, as the joined text
    /// concealed whole does (a form's first byte may stay where an item
    /// released it, so two forms back to back may be two markers); every
    /// line is still JSON, as many as came.
    #[test]
    fn any_text_cut_into_lines_joins_to_its_concealment(
        text in "[a-z ,.:%&\\\\]{0,40}@[a-z ,.]{0,40}(@[a-z ]{0,10})?",
        cuts in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..16),
    ) {
        let text = text.replace('@', TOKEN);
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(text.len() + 1)).collect();
        cuts.extend([0, text.len()]);
        cuts.sort_unstable();
        cuts.dedup();
        let lines = cuts.windows(2).map(|window| line(&text[window[0]..window[1]]));
        let out = through(&mut joiner(), lines);
        proptest::prop_assert_eq!(out.len(), cuts.len() - 1);
        let content = joined_content(&out);
        proptest::prop_assert!(!content.contains(TOKEN), "{content:?}");
        let concealer = Concealer::new([TOKEN]);
        let whole = concealer.conceal(&text).into_owned();
        proptest::prop_assert_eq!(concealer.conceal(&content).into_owned(), content.clone());
        // The token twice back to back is one marker whole, and two when
        // the second's first byte was released between them.
        let markers = content.matches(REDACTED).count();
        proptest::prop_assert!(
            markers >= whole.matches(REDACTED).count() && markers <= text.matches(TOKEN).count(),
            "{:?} became {:?}", text, content
        );
    }
}

/// An SSE event of `kind` (a `message` when `None`) with `data`.
fn event(kind: Option<&str>, data: &str) -> Event {
    Event {
        event: kind.map(str::to_owned),
        data: data.to_owned(),
        id: None,
    }
}

/// What a reader joins: `read` of each event's data (parsed by
/// serde_json, as predictors read it), in order.
fn join_by(events: &[Event], read: impl Fn(&serde_json::Value) -> Option<String>) -> String {
    events
        .iter()
        .filter_map(|event| {
            let value: serde_json::Value =
                serde_json::from_str(event.data()).expect("every event is still JSON");
            read(&value)
        })
        .collect()
}

/// The token cut in two, each half in one string.
fn halves() -> (&'static str, &'static str) {
    TOKEN.split_at(13)
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

fn events_through(events: Vec<Event>) -> Vec<Event> {
    through(
        &mut Joined::<Event>::new(Some(&Concealer::new([TOKEN]))),
        events,
    )
}

#[test]
fn a_token_split_where_the_event_type_changes_is_concealed_as_a_reader_ignoring_types_joins_it() {
    let (head, tail) = halves();
    let out = events_through(vec![
        event(
            Some("a"),
            &format!("{{\"text\":{}}}", quoted(&format!("key: {head}"))),
        ),
        event(
            Some("b"),
            &format!("{{\"text\":{}}}", quoted(&format!("{tail} ok"))),
        ),
    ]);
    let text = join_by(&out, |v| v["text"].as_str().map(str::to_owned));
    assert_eq!(text, format!("key: {REDACTED} ok"));
    assert_eq!(out[1].event(), Some("b"), "types kept");
}

#[test]
fn a_choice_read_by_position_while_its_index_alternates_is_concealed() {
    let (head, tail) = halves();
    let chunk = |index: u8, content: &str| {
        event(
            None,
            &format!(
                "{{\"choices\":[{{\"index\":{index},\"delta\":{{\"content\":{}}}}}]}}",
                quoted(content)
            ),
        )
    };
    let out = events_through(vec![
        chunk(0, &format!("key: {head}")),
        chunk(1, &format!("{tail} ok")),
    ]);
    let text = join_by(&out, |v| {
        v["choices"][0]["delta"]["content"]
            .as_str()
            .map(str::to_owned)
    });
    assert_eq!(text, format!("key: {REDACTED} ok"));
}

#[test]
fn gemini_parts_joined_as_one_text_are_concealed() {
    let (head, tail) = halves();
    let out = events_through(vec![
        event(
            None,
            &format!(
                "{{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":{}}}]}}}}]}}",
                quoted(&format!("key: {head}"))
            ),
        ),
        event(
            None,
            &format!(
                "{{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"\"}},{{\"text\":{}}}]}}}}]}}",
                quoted(&format!("{tail} ok"))
            ),
        ),
    ]);
    let text = join_by(&out, |v| {
        v["candidates"][0]["content"]["parts"]
            .as_array()
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect()
            })
    });
    assert_eq!(text, format!("key: {REDACTED} ok"));
}

#[test]
fn a_repeated_key_is_concealed_as_serde_json_reads_it_and_each_occurrence_too() {
    let (head, tail) = halves();
    // serde_json keeps the last `content`: `JUNK` stands between the
    // halves only for a reader of every occurrence.
    let out = events_through(vec![
        event(
            None,
            &format!("{{\"content\":{}}}", quoted(&format!("key: {head}"))),
        ),
        event(
            None,
            &format!(
                "{{\"content\":\"JUNK\",\"content\":{}}}",
                quoted(&format!("{tail} ok"))
            ),
        ),
    ]);
    let text = join_by(&out, |v| v["content"].as_str().map(str::to_owned));
    assert_eq!(text, format!("key: {REDACTED} ok"));
    assert!(out[1].data().contains("JUNK"), "{}", out[1].data());
    // Every occurrence in order: the halves meet inside one event.
    let out = events_through(vec![event(
        None,
        &format!(
            "{{\"content\":{},\"content\":{}}}",
            quoted(&format!("key: {head}")),
            quoted(&format!("{tail} ok"))
        ),
    )]);
    assert!(!out[0].data().contains(head), "{}", out[0].data());
    assert!(out[0].data().contains(REDACTED), "{}", out[0].data());
}

#[test]
fn data_that_is_one_json_string_is_concealed_as_its_value() {
    let (head, tail) = halves();
    let out = events_through(vec![
        event(None, &quoted(&format!("key: {head}"))),
        event(None, &format!(" {} ", quoted(&format!("{tail} ok")))),
    ]);
    let text: String = out
        .iter()
        .map(|event| serde_json::from_str::<String>(event.data()).expect("still a JSON string"))
        .collect();
    assert_eq!(text, format!("key: {REDACTED} ok"));
}

#[test]
fn an_event_nested_past_the_readers_bound_still_joins_the_strings_above() {
    let (head, tail) = halves();
    let deep = format!(
        "{}\"deep\"{}",
        "[".repeat(json_spans::MAX_DEPTH + 6),
        "]".repeat(json_spans::MAX_DEPTH + 6)
    );
    let out = events_through(vec![
        event(
            None,
            &format!(
                "{{\"meta\":{deep},\"content\":{}}}",
                quoted(&format!("key: {head}"))
            ),
        ),
        event(
            None,
            &format!("{{\"content\":{}}}", quoted(&format!("{tail} ok"))),
        ),
    ]);
    let text = join_by(&out, |v| v["content"].as_str().map(str::to_owned));
    assert_eq!(text, format!("key: {REDACTED} ok"));
    assert!(out[0].data().contains(&deep), "the deep part kept");
}

/// How many items come out after each push of `items` after `first`.
fn released_per_push(joined: &mut Joined<Event>, first: Event, items: &[Event]) -> Vec<usize> {
    joined.push(first).expect("within bounds");
    let mut out = vec![drain(joined).len()];
    for item in items {
        joined
            .push(item.clone())
            .expect("never refused for holding");
        out.push(drain(joined).len());
    }
    out
}

/// Holds [`SETTLE_AFTER`] items after `first` (which ends in a beginning
/// no later item continues), then releases them all, then each item as it
/// arrives.
fn assert_settles(first: Event, next: impl Fn(usize) -> Event) {
    let items: Vec<Event> = (0..5000).map(next).collect();
    let mut joined = Joined::<Event>::new(Some(&Concealer::new([TOKEN])));
    let released = released_per_push(&mut joined, first, &items);
    let settle = usize::try_from(SETTLE_AFTER).expect("small");
    assert!(
        released[..settle].iter().all(|&n| n == 0),
        "held while it may go on"
    );
    assert_eq!(released[settle], settle + 1, "then released at once");
    assert!(
        released[settle + 1..].iter().all(|&n| n == 1),
        "and every later item as it arrives"
    );
    assert_eq!(joined.held.len(), 0);
}

#[test]
fn a_reasoning_text_ending_in_the_tokens_first_letters_holds_sixty_four_events_not_the_stream() {
    let chunk = |field: &str, text: &str| {
        event(
            None,
            &format!(
                "{{\"id\":\"1\",\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":{}}}}}]}}",
                quoted(text)
            ),
        )
    };
    assert_settles(chunk("reasoning_content", "so I will do the task"), |i| {
        chunk("content", &format!("word {i} "))
    });
}

#[test]
fn a_message_id_ending_in_the_tokens_first_letters_holds_sixty_four_events_not_the_stream() {
    assert_settles(
        event(
            Some("message_start"),
            "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYsk\",\"role\":\"assistant\"}}",
        ),
        |i| {
            event(
                Some("content_block_delta"),
                &format!(
                    "{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"word {i} \"}}}}"
                ),
            )
        },
    );
}

#[test]
fn a_block_the_engine_closes_releases_its_held_events_at_once() {
    let mut joined = Joined::<Event>::new(Some(&Concealer::new([TOKEN])));
    let delta = |text: &str| {
        event(
            Some("content_block_delta"),
            &format!(
                "{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{}}}}}",
                quoted(text)
            ),
        )
    };
    joined.push(delta("the key is sk")).expect("within bounds");
    assert!(drain(&mut joined).is_empty(), "`sk` may begin the token");
    joined
        .push(event(
            Some("content_block_stop"),
            "{\"type\":\"content_block_stop\",\"index\":0}",
        ))
        .expect("within bounds");
    assert_eq!(drain(&mut joined).len(), 2, "closed: released at once");
    // Another block's stop closes nothing of block 0.
    joined.push(delta(" and sk")).expect("within bounds");
    joined
        .push(event(
            Some("content_block_stop"),
            "{\"type\":\"content_block_stop\",\"index\":1}",
        ))
        .expect("within bounds");
    assert!(drain(&mut joined).is_empty());
}

#[test]
fn a_choice_whose_finish_reason_arrives_releases_its_held_events_at_once() {
    let mut joined = Joined::<Event>::new(Some(&Concealer::new([TOKEN])));
    let chunk = |content: &str, finish: &str| {
        event(
            None,
            &format!(
                "{{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":{finish}}}]}}",
                quoted(content)
            ),
        )
    };
    joined
        .push(chunk("the key is sk", "null"))
        .expect("within bounds");
    assert!(drain(&mut joined).is_empty());
    joined.push(chunk("", "\"stop\"")).expect("within bounds");
    assert_eq!(drain(&mut joined).len(), 2, "finished: released at once");
}

#[test]
fn the_rest_of_a_form_that_resumes_after_its_hold_settled_is_still_concealed() {
    let (head, tail) = halves();
    let mut joined = joiner();
    let mut out = Vec::new();
    joined
        .push(line(&format!("key: {head}")))
        .expect("within bounds");
    for i in 0..SETTLE_AFTER {
        joined
            .push(format!("{{\"other\":\"{i} \"}}"))
            .expect("within bounds");
        out.extend(drain(&mut joined));
    }
    assert_eq!(out.len(), 65, "the hold settled");
    let out = through(&mut joined, [line(&format!("{tail} ok"))]);
    assert_eq!(
        out,
        [line(&format!("{REDACTED} ok"))],
        "cut where it resumed"
    );
}

#[test]
fn a_one_byte_beginning_is_held_after_a_separator_or_at_a_channels_start_not_inside_a_word() {
    for before in [
        " ", "\"", "'", "\t", "=", ":", ",", "(", "[", "{", "`", "\n", "\r\n",
    ] {
        let mut joined = joiner();
        joined
            .push(line(&format!("key{before}s")))
            .expect("within bounds");
        assert!(drain(&mut joined).is_empty(), "after {before:?}");
        joined.push(line("k-repro")).expect("within bounds");
        assert!(
            drain(&mut joined).is_empty(),
            "after {before:?}, still open"
        );
    }
    let mut joined = joiner();
    joined.push(line("s")).expect("within bounds");
    assert!(drain(&mut joined).is_empty(), "at the channel's start");
    let mut joined = joiner();
    joined.push(line("cats")).expect("within bounds");
    assert_eq!(drain(&mut joined), [line("cats")], "inside a word");
}

#[test]
fn names_share_a_channel_until_they_receive_different_strings() {
    let mut joined = Joined::<Event>::new(Some(&Concealer::new([TOKEN])));
    let chunk = |index: u8| {
        event(
            None,
            &format!("{{\"choices\":[{{\"index\":{index},\"delta\":{{\"content\":\"x \"}}}}]}}"),
        )
    };
    for _ in 0..10 {
        joined.push(chunk(0)).expect("within bounds");
    }
    let count = |joined: &Joined<Event>| joined.state.as_ref().map_or(0, |s| s.channel_count());
    assert_eq!(
        count(&joined),
        1,
        "every reading of one choice, one channel"
    );
    joined.push(chunk(1)).expect("within bounds");
    // By index, a new choice; by position and by keys, the same one.
    assert_eq!(count(&joined), 3);
    assert_eq!(drain(&mut joined).len(), 11);
}

#[test]
fn a_token_the_concealer_adopts_mid_stream_is_joined_from_the_next_item_on() {
    let concealer = Concealer::new([]);
    let mut joined: Joined<String> = Joined::new(Some(&concealer));
    joined.push(line("key: ")).expect("within bounds");
    assert_eq!(drain(&mut joined), [line("key: ")]);
    let before = joined.state.as_ref().map(|s| (s.context, s.held_limit));
    concealer.hold([TOKEN]);
    let (head, tail) = halves();
    let out = through(&mut joined, [line(head), line(&format!("{tail} ok"))]);
    assert_eq!(joined_content(&out), format!("{REDACTED} ok"));
    let after = joined.state.as_ref().map(|s| (s.context, s.held_limit));
    assert_ne!(before, after, "the context and the bounds derive from it");
}

#[test]
fn past_the_bytes_names_may_take_a_stream_is_refused() {
    let mut joined = Joined::<Event>::new(Some(&Concealer::new([TOKEN])));
    let long = "t".repeat(MAX_NAME_BYTES / 4);
    let refused = (0..8).find_map(|i| {
        joined
            .push(event(Some(&format!("{long}{i}")), "{\"a\":\"v\"}"))
            .err()
    });
    assert_eq!(
        refused,
        Some(Exceeded::Names),
        "event types as long as the engine makes them"
    );
}

#[test]
fn when_the_concealer_drops_its_last_secret_what_was_held_goes_first_in_order() {
    let concealer = Concealer::new([]);
    concealer.hold([TOKEN]);
    let mut joined: Joined<String> = Joined::new(Some(&concealer));
    joined.push(line("sk-re")).expect("within bounds");
    assert!(drain(&mut joined).is_empty());
    concealer.hold([]);
    joined.push(line("next")).expect("within bounds");
    assert_eq!(drain(&mut joined), [line("sk-re"), line("next")]);
}

#[test]
fn a_plain_text_piece_that_is_bare_json_joins_every_reading_alike() {
    // `13` is JSON (a number), yet text to every reader of a plain-text
    // stream, `next_delta`'s join among them: were one reading to leave it
    // out, two readings would mark the form in two different pieces.
    let token = "mw-test-Q7vX2kP9zR4tL8wN";
    let form = "QmVhcmVyIG13LXRlc3QtUTd2WDJrUDl6UjR0TDh3Tg"; // base64 of "Bearer <token>"
    let items = [
        "The key you gave me is ",
        &form[..10],
        &form[10..12],
        &form[12..15],
        &form[15..],
        ", keep it safe.",
    ];
    for group in 1..=items.len() {
        let mut joined = Joined::new(Some(&Concealer::new([token])));
        let mut out = Vec::new();
        for chunk in items.chunks(group) {
            for item in chunk {
                joined.push((*item).to_owned()).expect("within bounds");
            }
            out.extend(drain(&mut joined));
        }
        joined.take(None).expect("within bounds");
        out.extend(drain(&mut joined));
        let text: String = out.concat();
        assert_eq!(
            text.matches(REDACTED).count(),
            1,
            "taken {group} at a time: {text}"
        );
        assert!(
            !text.contains("LXRlc3Qt"),
            "taken {group} at a time: {text}"
        );
    }
}
