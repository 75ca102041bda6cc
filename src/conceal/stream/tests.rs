//! The stream's release rules, each cut every way.

use super::*;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use proptest::prelude::*;

/// Has `+`, `/`, `_` and `-`: its JSON, percent, HTML and two base64
/// forms all differ from it.
const TOKEN: &str = "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN";

/// Every form the concealer promises to find (raw, escaped, encoded,
/// base64, and wrapped across lines), of `TOKEN`.
fn forms() -> Vec<String> {
    let each = |f: &dyn Fn(char) -> String| TOKEN.chars().map(f).collect::<String>();
    let mut forms = vec![
        TOKEN.to_owned(),
        TOKEN.replace('+', r"\u002B").replace('/', r"\/"),
        each(&|c| format!(r"\u{:04x}", u32::from(c))),
        TOKEN.replace('+', r"\u002b").replace('_', "%5F"),
        TOKEN.replace('+', "%2B").replace('/', "%2f"),
        each(&|c| format!("%{:02X}", u32::from(c))),
        each(&|c| format!("&#{};", u32::from(c))),
        TOKEN
            .replace('+', "&#x2B;")
            .replace('/', "&sol;")
            .replace('_', "&lowbar;"),
        TOKEN
            .replace('+', "&#43")
            .replace('/', r"\u002F")
            .replace('4', "%34"),
        TOKEN.replace('+', r"\\u002B").replace('/', r"\\/"),
        TOKEN.replace('+', "%252B"),
        TOKEN.bytes().map(|b| format!("{b:02x}")).collect(),
    ];
    for prefix in ["", "x", "xy", "Bearer ", "user:"] {
        let data = format!("{prefix}{TOKEN}");
        forms.push(STANDARD.encode(&data));
        forms.push(URL_SAFE_NO_PAD.encode(&data));
        forms.push(format!(
            "QUJD{}",
            URL_SAFE_NO_PAD.encode(format!("{data}!!"))
        ));
    }
    let encoded = STANDARD.encode(format!("user:{TOKEN}"));
    for (width, line_break) in [(76, "\n"), (8, "\r\n"), (5, r"\n"), (3, r"\r\n")] {
        let lines: Vec<&str> = encoded
            .as_bytes()
            .chunks(width)
            .map(|line| std::str::from_utf8(line).unwrap_or_default())
            .collect();
        forms.push(lines.join(line_break));
    }
    for line_break in [
        "\n",
        "\r\n",
        r"\n",
        r"\r\n",
        r"\u000a",
        "%0A",
        "&#10;",
        "&#13;&#10;",
        "\r\\n",
    ] {
        let (head, tail) = TOKEN.split_at(13);
        forms.push(format!("{head}{line_break}{tail}"));
    }
    forms
}

/// `text` cut at `cuts` (moved back to character boundaries), streamed
/// piece by piece, joined.
fn streamed(concealer: &Concealer, text: &str, cuts: &[usize]) -> String {
    let mut stream = concealer.stream();
    let mut out = String::new();
    let mut at = 0;
    let mut cuts = cuts.to_vec();
    cuts.sort_unstable();
    for cut in cuts.into_iter().chain([text.len()]) {
        let cut = floor_boundary(text, cut.max(at));
        let (before, most) = (out.len(), stream.most_released(cut - at));
        stream.push(text.get(at..cut).unwrap_or_default(), &mut out);
        assert!(stream.held() <= concealer.reach().max(cut - at));
        assert!(out.len() - before <= most, "released past most_released");
        at = cut;
    }
    let (before, most) = (out.len(), stream.most_released(0));
    stream.finish(&mut out);
    assert!(out.len() - before <= most, "released past most_released");
    out
}

/// The texts the forms are streamed in: an SSE stream, NDJSON, and a
/// JSON body with no line breaks at all.
fn texts(form: &str) -> [String; 3] {
    [
        format!("event: e\ndata: said {form} here\n\ndata: {{\"k\":\"{form}\"}}\n\n"),
        format!("{{\"a\":1}}\n{{\"token\":\"{form}\",\"n\":2}}\n{{\"b\":\"{form}x\"}}\n"),
        format!("{{\"error\":\"key {form} rejected\",\"echo\":\"{form}\"}}"),
    ]
}

#[test]
fn every_form_cut_at_every_position_streams_as_it_conceals_whole() {
    let concealer = Concealer::new([TOKEN]);
    for form in forms() {
        for text in texts(&form) {
            let whole = concealer.conceal(&text);
            assert!(!whole.contains(TOKEN) && !whole.contains(&form), "{whole}");
            assert!(whole.contains(REDACTED), "{text:?}");
            for cut in 0..=text.len() {
                let out = streamed(&concealer, &text, &[cut]);
                assert_eq!(out, whole, "{text:?} cut at {cut}");
            }
        }
    }
}

/// A span that starts inside the digits of an escape takes its opening,
/// however the text was cut, and the base64 of a short token cut short
/// goes: in pieces as whole.
#[test]
fn an_opening_a_span_takes_and_a_short_cut_echo_stream_as_they_conceal_whole() {
    let concealer = Concealer::new(["ivXwBlS8"]);
    let hex = "69765877426c5338";
    for opening in ["&#56", r"\u0026#56", "%26%2356", "&amp;#56"] {
        let form = format!("ivXwBlS{opening}{hex}");
        for text in texts(&form) {
            let whole = concealer.conceal(&text);
            assert!(!whole.contains("&#56") && !whole.contains(hex), "{whole}");
            for cut in 0..=text.len() {
                assert_eq!(
                    streamed(&concealer, &text, &[cut]),
                    whole,
                    "{text:?} at {cut}"
                );
            }
        }
    }
    let concealer = Concealer::new(["TGMml5dK"]);
    for text in texts("VEdNbWw1ZA==") {
        let whole = concealer.conceal(&text);
        assert!(!whole.contains("VEdNbWw1Z"), "{whole}");
        for cut in 0..=text.len() {
            assert_eq!(
                streamed(&concealer, &text, &[cut]),
                whole,
                "{text:?} at {cut}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_form_cut_anywhere_into_many_pieces_streams_as_it_conceals_whole(
        form in prop::sample::select(forms()),
        shape in 0usize..3,
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        filler in "[ -~\n]{0,40}",
    ) {
        let concealer = Concealer::new([TOKEN]);
        let text = format!("{filler}{}{filler}", texts(&form)[shape]);
        let cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(text.len() + 1)).collect();
        let whole = concealer.conceal(&text);
        prop_assert!(!whole.contains(TOKEN));
        prop_assert_eq!(streamed(&concealer, &text, &cuts), whole);
    }

    #[test]
    fn any_text_streams_as_it_conceals_whole(
        secret in "[!-~]{4,12}",
        text in "([!-~ \n\r]|\\\\u00|%2|&#|\\\\\\\\){0,120}",
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let concealer = Concealer::new([secret.as_str()]);
        let text = text.replace("@", &secret);
        let cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(text.len() + 1)).collect();
        prop_assert_eq!(streamed(&concealer, &text, &cuts), concealer.conceal(&text));
    }
}

proptest! {
    // Each case builds a concealer, whose automata cost most of its
    // time in a debug build: fewer cases, and the fuzz targets for more.
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Runs with no separator, where only gaps settle the text: base64
    /// characters, padding, line breaks, triggers and forms of the
    /// secret, cut anywhere.
    #[test]
    fn a_run_with_no_separator_streams_as_it_conceals_whole(
        secret in "[A-Za-z0-9+/=_-]{4,20}",
        prefix in "[a-z]{0,2}",
        text in r"([A-Za-z0-9+/_-]|=|\n|\r\n|%2B|\\u00|&#|@|#){0,160}",
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
    ) {
        let concealer = Concealer::new([secret.as_str()]);
        let text = text
            .replace('@', &STANDARD.encode(format!("{prefix}{secret}")))
            .replace('#', &secret);
        let cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(text.len() + 1)).collect();
        prop_assert_eq!(streamed(&concealer, &text, &cuts), concealer.conceal(&text));
    }
}

#[test]
fn a_complete_event_is_released_before_the_next_byte_arrives() {
    let concealer = Concealer::new([TOKEN]);
    for blank in ["\n\n", "\r\n\r\n", "\r\r", "\n\r\n"] {
        for event in [
            format!("data: {TOKEN}{blank}"),
            format!("data: mw_live_4f+Ab{blank}"),
            format!("data: {{\"k\":\"{}\"}}{blank}", STANDARD.encode(TOKEN)),
        ] {
            let mut stream = concealer.stream();
            let mut out = String::new();
            stream.push(&event, &mut out);
            assert_eq!(out, concealer.conceal(&event), "{event:?}");
            assert_eq!(stream.held(), 0, "{event:?}");
        }
    }
}

#[test]
fn a_line_whose_end_cannot_begin_a_form_is_released_at_once() {
    let concealer = Concealer::new([TOKEN]);
    for line in [
        "{\"a\":1}\n",
        "{\"a\":\"x\"}\n",
        "[1, 2, \"three\"]\r\n",
        "ok.\n",
    ] {
        let mut stream = concealer.stream();
        let mut out = String::new();
        stream.push(line, &mut out);
        assert_eq!(out, line);
        assert_eq!(stream.held(), 0, "{line:?}");
    }
}

#[test]
fn a_line_whose_end_could_begin_a_form_is_held_until_the_next_bytes_settle_it() {
    let concealer = Concealer::new([TOKEN]);
    let (head, tail) = TOKEN.split_at(13);
    let mut stream = concealer.stream();
    let mut out = String::new();
    stream.push(&format!("data: {head}\n"), &mut out);
    // The line may be a hard-wrapped token's first half.
    assert_eq!(out, "data: ");
    assert_eq!(stream.held(), head.len() + 1);
    stream.push(&format!("{tail} rest"), &mut out);
    // `re` goes at once: no two of `r`, `e`, `s`, `t` stand side by
    // side in any pattern, so no form can hold the `e` or the `s`;
    // only the two bytes that decide that gap are held.
    assert_eq!(out, format!("data: {REDACTED} re"));
    assert_eq!(stream.held(), 2);
    stream.push("\n\n", &mut out);
    assert_eq!(out, format!("data: {REDACTED} rest\n\n"));
    assert_eq!(stream.held(), 0);
    // Settled by bytes that turn out to hold no form.
    let mut stream = concealer.stream();
    let mut out = String::new();
    stream.push("data: mw_live\n", &mut out);
    assert!(stream.held() > 0);
    stream.push("and more, ", &mut out);
    assert_eq!(out, "data: mw_live\nand more, ");
    assert_eq!(stream.held(), 0);
}

/// A run with no separator is released up to its last gap, and what a
/// gap cuts is concealed on each side as whole: base64 cores touching
/// it from either side, padding and line breaks beside it, escapes
/// near it, cut at every place.
#[test]
fn a_run_with_no_separator_is_released_up_to_its_last_gap() {
    let concealer = Concealer::new([TOKEN]);
    let mut stream = concealer.stream();
    let mut out = String::new();
    stream.push(
        &format!("<html>down for maintenance\n{}", "z".repeat(70_000)),
        &mut out,
    );
    assert!(
        out.starts_with("<html>down for maintenance\nzzz"),
        "{out:.40}"
    );
    assert_eq!(stream.held(), GAP_AHEAD);
    let cores = [
        STANDARD.encode(format!("x{TOKEN}")),
        URL_SAFE_NO_PAD.encode(format!("xy{TOKEN}!")),
        STANDARD.encode(TOKEN),
    ];
    for core in &cores {
        for text in [
            format!("zz{core}zzzz{core}qq{core}"),
            format!("qqqq{core}{core}zzzz=zz{core}\nzz"),
            format!("qq%2Bqq{}{core}zzzz", "q".repeat(300)),
            format!("qq{TOKEN}zzzz{}zz{TOKEN}", &core[3..]),
        ] {
            let whole = concealer.conceal(&text);
            assert!(whole.contains(REDACTED), "{text}");
            for cut in 0..=text.len() {
                assert_eq!(
                    streamed(&concealer, &text, &[cut]),
                    whole,
                    "{text} at {cut}"
                );
            }
            let cuts: Vec<usize> = (0..text.len()).collect();
            assert_eq!(streamed(&concealer, &text, &cuts), whole, "{text} bytewise");
        }
    }
}

/// A stretch with no barrier (one base64 run, the token repeated back to
/// back) is settled a radius at a time: never more than the reach is
/// held, however it is cut, and what is held does not grow with it.
#[test]
fn hold_back_never_exceeds_the_reach() {
    let concealer = Concealer::new(["mw-Q7vX2"]);
    let reach = concealer.reach();
    let run: String = STANDARD
        .encode("x".repeat(3 * reach / 4) + "mw-Q7vX2" + &"y".repeat(3 * reach / 4))
        .repeat(2);
    for piece in [1, 7, 4096, 100_000] {
        let mut stream = concealer.stream();
        let mut out = String::new();
        for chunk in run.as_bytes().chunks(piece) {
            stream.push(std::str::from_utf8(chunk).unwrap_or_default(), &mut out);
            assert!(stream.held() <= reach, "{} held of {reach}", stream.held());
            assert!(stream.buf.capacity() <= 2 * (reach + piece));
        }
        stream.finish(&mut out);
        assert_eq!(out, concealer.conceal(&run), "pieces of {piece}");
    }
}

#[test]
fn a_secret_repeated_for_megabytes_is_one_marker_in_bounded_memory() {
    let concealer = Concealer::new([TOKEN]);
    let piece = TOKEN.repeat(2048);
    let mut stream = concealer.stream();
    let mut out = String::new();
    stream.push("key ", &mut out);
    for _ in 0..256 {
        stream.push(&piece, &mut out);
        assert!(stream.held() <= concealer.reach());
        assert!(out.len() <= "key ".len() + REDACTED.len());
    }
    stream.push(" end", &mut out);
    stream.finish(&mut out);
    assert_eq!(out, format!("key {REDACTED} end"));
    assert!(stream.buf.capacity() <= 2 * (concealer.reach() + piece.len()));
}

/// One byte at a time, a text is concealed a few times over at most:
/// a barrier's text once, a stretch with none in windows that advance
/// by a radius.
#[test]
fn one_byte_pieces_are_concealed_a_few_times_over_not_once_per_byte() {
    let concealer = Concealer::new([TOKEN]);
    let mut text = String::new();
    for i in 0..400 {
        text.push_str(&format!(
            "{{\"i\":{i},\"text\":\"line\\none \\\"two\\\" caf\\u00e9\",\"key\":\"{}\"}}\n",
            if i % 7 == 0 { TOKEN } else { "none" }
        ));
    }
    text.push_str(&STANDARD.encode(TOKEN.repeat(4000)));
    CONCEALED.with(|concealed| concealed.set(0));
    let cuts: Vec<usize> = (0..text.len()).collect();
    assert_eq!(streamed(&concealer, &text, &cuts), concealer.conceal(&text));
    let concealed = CONCEALED.with(std::cell::Cell::get);
    assert!(
        concealed <= 4 * text.len(),
        "{concealed} for {}",
        text.len()
    );
}

/// A run of backslashes longer than a reader's parity can be read
/// locally: the escape after it is read both ways, in a stream as whole.
#[test]
fn the_escape_after_a_long_run_of_backslashes_is_read_either_way() {
    let concealer = Concealer::new([TOKEN]);
    for run in [301, 302, 1001, 1002] {
        let text = format!(
            "x{}u006Dw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN y",
            "\\".repeat(run)
        );
        let whole = concealer.conceal(&text);
        assert!(whole.contains(REDACTED), "{run}");
        assert!(!whole.contains("u006D"), "{run}");
        for cut in [1, 150, run, run + 1, run + 3, text.len() - 2] {
            assert_eq!(streamed(&concealer, &text, &[cut]), whole, "{run} at {cut}");
        }
    }
}
