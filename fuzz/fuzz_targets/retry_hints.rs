//! Arbitrary values in the headers an engine's retry hints and rate-limit
//! fields arrive in: the readers must neither panic nor take long.
//!
//! The input is split at `\n` into values, given in turn to the names
//! below (a name may get several values, as a repeated header).

#![no_main]

use std::time::{Duration, Instant, SystemTime};

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::{exhausted, retry_delay};

const NAMES: [&str; 9] = [
    "retry-after",
    "retry-after-ms",
    "ratelimit",
    "ratelimit-reset",
    "date",
    "ratelimit-remaining",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
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
    }
    let _ = exhausted(&pairs);
    // Header values are short; reading them is linear and quick.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "slow: {:?}",
        started.elapsed()
    );
});
