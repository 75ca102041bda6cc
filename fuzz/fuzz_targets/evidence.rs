//! Arbitrary answers read for their evidence: a status, headers and a
//! body into the reader that decides a refusal's cause from the engine's
//! code, its words and the protocol on the wire, and the words written
//! from it.
//!
//! The first two bytes are the status (mod 600); then up to eight header
//! lines (`name: value`) up to a blank line; the rest is the body. Nothing
//! may panic; a `2xx` is no refusal, anything else is one of the four
//! causes with a reason under 1 000 characters, and neither the reason nor
//! the remedy holds the token.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::answer_read;

const TOKEN: &str = "sk-fuzz-Q7vX2kP9zR4tL8wN";

fuzz_target!(|data: &[u8]| {
    let Some((status, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let status = u16::from_le_bytes(*status) % 600;
    let text = String::from_utf8_lossy(rest);
    let (head, body) = text.split_once("\n\n").unwrap_or(("", &text));
    let pairs: Vec<(&str, &[u8])> = head
        .lines()
        .take(8)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim(), value.trim().as_bytes()))
        .collect();
    let read = answer_read(status, &pairs, body, TOKEN);
    if (200..300).contains(&status) {
        assert!(read.is_none(), "a 2xx is an answer");
        return;
    }
    let Some((cause, reason, remedy)) = read else {
        panic!("HTTP {status} gave no refusal");
    };
    assert!(
        ["no-engine", "engine-unreachable", "engine-out-of-credit", "engine-over-quota"]
            .contains(&cause)
    );
    assert!(reason.chars().count() < 1000, "{reason}");
    assert!(!reason.contains(TOKEN) && !remedy.contains(TOKEN));
});
