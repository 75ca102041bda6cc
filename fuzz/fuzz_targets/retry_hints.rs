//! Arbitrary values in the headers an engine's retry hints and rate-limit
//! fields arrive in, in every dialect read (IETF `RateLimit` and
//! `RateLimit-Policy`, OpenAI's, Anthropic's RFC 3339 resets, and
//! `X-RateLimit-*`): the readers must neither panic nor take long, and what
//! they believe must make sense (a budget never above its limit, a reset
//! never zero).
//!
//! The input is split at `\n` into values, given in turn to the names
//! below (a name may get several values, as a repeated header).

#![no_main]

use std::time::{Duration, Instant, SystemTime};

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::{exhausted, rate_limit_fields, retry_delay, rfc3339};

const NAMES: [&str; 28] = [
    "retry-after",
    "retry-after-ms",
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-reset",
    "date",
    "ratelimit-remaining",
    "ratelimit-limit",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
    "x-ratelimit-limit-tokens",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-requests-limit",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-remaining",
    "anthropic-ratelimit-output-tokens-reset",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-limit",
    "ratelimit",
    "retry-after",
];

fuzz_target!(|data: &[u8]| {
    let pairs: Vec<(&str, &[u8])> = data
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, value)| (NAMES[i % NAMES.len()], value))
        .collect();
    let started = Instant::now();
    // A fixed clock, and one far out, so date arithmetic meets both ends.
    for now in [
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        SystemTime::UNIX_EPOCH,
    ] {
        let _ = retry_delay(&pairs, now);
        let _ = exhausted(&pairs, now);
        let (budget, held) = rate_limit_fields(&pairs, now);
        if let Some((remaining, limit, reset)) = budget {
            assert!(limit.is_none_or(|limit| remaining <= limit));
            assert!(!reset.is_zero());
        }
        if let Some((_, reset)) = held {
            assert!(!reset.is_zero());
        }
    }
    for (_, value) in &pairs {
        if let Ok(text) = std::str::from_utf8(value) {
            let _ = rfc3339(text);
        }
    }
    // Header values are short; reading them is linear and quick.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "slow: {:?}",
        started.elapsed()
    );
});
