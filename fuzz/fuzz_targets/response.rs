//! The response path end to end: an arbitrary status, arbitrary header
//! pairs and an arbitrary body in arbitrary pieces at arbitrary (virtual)
//! times, through the real send loop (the door, the evidence, the refusal,
//! the limits, retries, the meter). The oracle: no panic; every send ends in
//! exactly one answer or refusal, within its policy's attempts (a stream,
//! read whole, by chunks, events or lines, yields nothing after a refusal
//! and is never sent again once its head arrived); the meter counts every
//! send; and no output holds the token, in any form the concealer knows.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use meterwire::Concealer;
use meterwire::fuzzing::{End, Piece, Reply, Script, send_all};

/// The headers an engine's evidence arrives in, and two it may echo the
/// token in; any other name a fuzzer picks is as likely.
const NAMES: [&str; 16] = [
    "retry-after",
    "retry-after-ms",
    "date",
    "ratelimit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "www-authenticate",
    "location",
    "x-request-id",
    "request-id",
    "cf-ray",
    "content-type",
    "set-cookie",
    "x-echo",
];

#[derive(Arbitrary, Debug)]
struct Input {
    token: TokenShape,
    sends: u8,
    attempts: u8,
    keys: bool,
    deadline_ms: u16,
    cap: u16,
    latch: bool,
    max_hold_s: u8,
    read: u8,
    idle_ms: u16,
    replies: Vec<FuzzReply>,
}

#[derive(Arbitrary, Debug)]
enum TokenShape {
    Fixed,
    Digits(u64),
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum FuzzReply {
    Fail(u8),
    Answer {
        delay_ms: u16,
        status: u16,
        headers: Vec<(u8, Value)>,
        declared: Option<u32>,
        pieces: Vec<(u16, Value)>,
        end: u8,
    },
}

/// Bytes, or the token in them, raw or echoed the ways engines echo it.
#[derive(Arbitrary, Debug)]
enum Value {
    Bytes(Vec<u8>),
    Token(Vec<u8>, u8, Vec<u8>),
    Number(u128),
    /// A media type a stream is read as (a whole answer too).
    Media(u8),
}

const MEDIA: [&str; 3] = ["text/event-stream", "application/x-ndjson", "application/json"];

const FIXED: &str = "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN";

fn token(shape: &TokenShape) -> String {
    let token = match shape {
        TokenShape::Fixed => FIXED.to_owned(),
        TokenShape::Digits(n) => format!("{:012}", n % 1_000_000_000_000),
        TokenShape::Bytes(bytes) => bytes
            .iter()
            .map(|b| char::from(b'!' + b % 94))
            .take(40)
            .collect(),
    };
    if token.len() < 8 { FIXED.to_owned() } else { token }
}

fn bytes(value: &Value, token: &str) -> Vec<u8> {
    match value {
        Value::Bytes(bytes) => bytes.clone(),
        Value::Number(n) => n.to_string().into_bytes(),
        Value::Media(n) => MEDIA[usize::from(*n) % MEDIA.len()].as_bytes().to_vec(),
        Value::Token(before, form, after) => {
            let echo = match form % 4 {
                0 => token.to_owned(),
                1 => serde_json::to_string(token).unwrap_or_default(),
                2 => token
                    .bytes()
                    .map(|b| format!("%{b:02X}"))
                    .collect::<String>(),
                _ => token.bytes().map(|b| format!("&#{b};")).collect::<String>(),
            };
            let mut out = before.clone();
            out.extend_from_slice(echo.as_bytes());
            out.extend_from_slice(after);
            out
        }
    }
}

fuzz_target!(|input: Input| {
    let token = token(&input.token);
    let replies = input
        .replies
        .iter()
        .take(8)
        .map(|reply| match reply {
            FuzzReply::Fail(kind) => Reply::Fail(*kind),
            FuzzReply::Answer {
                delay_ms,
                status,
                headers,
                declared,
                pieces,
                end,
            } => Reply::Answer {
                delay_ms: *delay_ms,
                status: 100 + status % 500,
                headers: headers
                    .iter()
                    .take(12)
                    .map(|(name, value)| {
                        (NAMES[usize::from(*name) % NAMES.len()].to_owned(), bytes(value, &token))
                    })
                    .collect(),
                content_length: declared.map(u64::from),
                pieces: pieces
                    .iter()
                    .take(16)
                    .map(|(delay_ms, value)| Piece {
                        delay_ms: *delay_ms,
                        bytes: bytes(value, &token),
                    })
                    .collect(),
                end: match end % 3 {
                    0 => End::Clean,
                    1 => End::Reset,
                    _ => End::Stall,
                },
            },
        })
        .collect();
    let script = Script {
        token: token.clone(),
        replies,
        sends: input.sends,
        attempts: u32::from(input.attempts),
        keys: input.keys,
        deadline_ms: u32::from(input.deadline_ms),
        cap: u32::from(input.cap),
        latch: input.latch,
        max_hold_s: u32::from(input.max_hold_s),
        read: input.read,
        idle_ms: u32::from(input.idle_ms),
    };
    let sends = usize::from(script.sends.clamp(1, 4));
    let policy = script.attempts.clamp(1, 4);
    let sent = send_all(script);
    // Every send, then the meter's line.
    assert_eq!(sent.len(), sends + 1, "{sent:?}");
    let (meter, sent) = sent.split_last().expect("the meter's line");
    assert!(meter.answered, "the meter counts every send: {meter:?}");
    for one in sent {
        assert!(one.attempts <= policy, "{one:?}");
    }
    // A stream's refusal is the last thing it yields.
    if input.read % 4 != 0 {
        for one in sent.iter().filter(|one| !one.answered) {
            assert!(one.texts.len() >= 3, "{one:?}");
        }
    }
    let concealer = Concealer::new([token.as_str()]);
    for text in sent.iter().chain([meter]).flat_map(|one| &one.texts) {
        assert!(!text.contains(&token), "the token in {text:?}");
        assert_eq!(
            concealer.conceal(text),
            text.as_str(),
            "a form of the token in {text:?}"
        );
    }
});
