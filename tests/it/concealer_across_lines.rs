//! Forms across lines: base64 wrapped at any width, and a
//! token hard-wrapped by one line break, are concealed whole, break
//! included; a blank line, or prose, joins nothing.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use meterwire::{Concealer, REDACTED};

use crate::support::forms::{
    BREAKS, ESCAPED_BREAKS, MIXED_TOKEN as TOKEN, concealed, json_php, wrap,
};

#[test]
/// From the first to the last character that carries the token's bits,
/// breaks included: the characters of what precedes it (`Bearer `,
/// `user:`) stay, since they carry none of the token's bits.
fn base64_wrapped_at_any_width_is_concealed_from_its_first_to_its_last_character() {
    let concealer = Concealer::new([TOKEN]);
    for prefix in ["", "Bearer ", "user:", "xy"] {
        let data = format!("{prefix}{TOKEN}");
        for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&data);
            for width in [1, 2, 3, 4, 5, 7, 13, 16, 64, 76] {
                for line_break in BREAKS {
                    let wrapped = wrap(&encoded, width, line_break);
                    let text = format!("said: {wrapped} (end)");
                    let echo = concealed(&wrapped, TOKEN);
                    assert_eq!(
                        concealer.conceal(&text),
                        format!("said: {echo} (end)"),
                        "{text:?}"
                    );
                }
            }
        }
    }
}

/// The token's characters in a PEM-style block go, breaks between them
/// included, as one marker; the block's other lines, and its boundary
/// lines, stay.
#[test]
fn the_token_in_a_pem_style_block_is_one_marker() {
    let concealer = Concealer::new([TOKEN]);
    let encoded = STANDARD.encode(format!("{}user:{TOKEN}\n", "x".repeat(100)));
    let block = wrap(&encoded, 64, "\r\n");
    let text = format!("-----BEGIN DATA-----\r\n{block}\r\n-----END DATA-----");
    let out = concealer.conceal(&text);
    assert_eq!(
        out,
        format!(
            "-----BEGIN DATA-----\r\n{}\r\n-----END DATA-----",
            concealed(&block, TOKEN)
        )
    );
    assert_eq!(out.matches(REDACTED).count(), 1, "{out}");
    assert!(out.starts_with("-----BEGIN DATA-----\r\neHh4eHh4"), "{out}");
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
