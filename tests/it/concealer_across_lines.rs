//! CONTRACT §5 "Forms across lines": base64 wrapped at any width, and a
//! token hard-wrapped by one line break, are concealed whole, break
//! included; a blank line, or prose, joins nothing.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use meterwire::Concealer;

use crate::support::forms::{BREAKS, ESCAPED_BREAKS, MIXED_TOKEN as TOKEN, json_php, wrap};

#[test]
fn base64_wrapped_at_any_width_is_concealed_whole() {
    let concealer = Concealer::new([TOKEN]);
    for prefix in ["", "Bearer ", "user:", "xy"] {
        let data = format!("{prefix}{TOKEN}");
        for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&data);
            for width in [1, 2, 3, 4, 5, 7, 13, 16, 64, 76] {
                for line_break in BREAKS {
                    let wrapped = wrap(&encoded, width, line_break);
                    let text = format!("said: {wrapped} (end)");
                    assert_eq!(
                        concealer.conceal(&text),
                        "said: [redacted] (end)",
                        "{text:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_pem_style_block_is_concealed_whole() {
    let concealer = Concealer::new([TOKEN]);
    let encoded = STANDARD.encode(format!("{}user:{TOKEN}\n", "x".repeat(100)));
    let text = format!(
        "-----BEGIN DATA-----\r\n{}\r\n-----END DATA-----",
        wrap(&encoded, 64, "\r\n")
    );
    assert_eq!(
        concealer.conceal(&text),
        "-----BEGIN DATA-----\r\n[redacted]\r\n-----END DATA-----"
    );
}

#[test]
fn a_token_hard_wrapped_once_is_concealed_whole() {
    for token in [TOKEN, r#"tok<en,=x"y\z%41&amp;"#, "0123456789"] {
        let concealer = Concealer::new([token]);
        for at in 1..token.len() {
            let (head, tail) = token.split_at(at);
            for line_break in BREAKS {
                let text = format!("a {head}{line_break}{tail} b");
                assert_eq!(concealer.conceal(&text), "a [redacted] b", "{text:?}");
            }
            // JSON-escaped, broken by a JSON break.
            let (head, tail) = (json_php(head), json_php(tail));
            for line_break in [r"\n", r"\r\n"] {
                let text = format!(r#"{{"a":"{head}{line_break}{tail}"}}"#);
                assert_eq!(
                    concealer.conceal(&text),
                    r#"{"a":"[redacted]"}"#,
                    "{text:?}"
                );
            }
        }
    }
}

#[test]
fn a_blank_line_or_prose_joins_nothing() {
    let concealer = Concealer::new([TOKEN]);
    let (head, tail) = TOKEN.split_at(10);
    let text = format!("{head}\n\n{tail}");
    assert_eq!(concealer.conceal(&text), text);
    assert_eq!(
        concealer.conceal("one line\nand the next"),
        "one line\nand the next"
    );
}

/// The break of a hard-wrapped token is a line break in any escaping the
/// concealer reads: a JSON reader turns `\u000a` into the same LF as a raw
/// one, a URL decoder `%0A`, an HTML reader `&#10;`, and a raw CR beside a
/// JSON `\n` is one CRLF to a reader of the JSON.
#[test]
fn a_token_broken_by_an_escaped_line_break_is_concealed_whole() {
    let concealer = Concealer::new([TOKEN]);
    for line_break in ESCAPED_BREAKS {
        for at in 1..TOKEN.len() {
            let (head, tail) = TOKEN.split_at(at);
            let text = format!("key {head}{line_break}{tail} rejected");
            assert_eq!(
                concealer.conceal(&text),
                "key [redacted] rejected",
                "{text:?}"
            );
        }
    }
}

/// Two escaped breaks in a row are a blank line, which joins nothing,
/// whatever writes them.
#[test]
fn an_escaped_blank_line_joins_nothing() {
    let concealer = Concealer::new([TOKEN]);
    let (head, tail) = TOKEN.split_at(10);
    for blank in [
        r"\u000a\u000a",
        "%0A%0A",
        "&#10;&#10;",
        r"\n\u000a",
        "\r\n%0D%0A",
    ] {
        let text = format!("key {head}{blank}{tail} rejected");
        assert_eq!(concealer.conceal(&text), text, "{text:?}");
    }
}
