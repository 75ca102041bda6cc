//! The joiner's rules, one test each: what is held and for how long, what a
//! form spanning items becomes, and its bounds.

use super::*;

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
    let refusal = Refusal::new(Cause::EngineUnreachable, "cut", "retry", None);
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
    let mut joined = joiner();
    joined.push(line("sk-re")).expect("within bounds");
    let mut out = Vec::new();
    for i in 0..=MAX_HELD_EVENTS {
        joined
            .push(format!("{{\"other\":\"{i} \"}}"))
            .expect("never refused for holding");
        out.extend(drain(&mut joined));
    }
    assert_eq!(out.len(), MAX_HELD_EVENTS + 2, "every item released");
    assert_eq!(out[0], line("sk-re"));
    assert!(joined.held.len() <= MAX_HELD_EVENTS);
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
