//! Arbitrary request-id headers: the reader must not panic, and returns
//! one of the values it was given, never a blank one.
//!
//! Each `\n`-separated line is a header: its first byte picks the name.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::request_id;

const NAMES: [&str; 6] = [
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-correlation-id",
    "cf-ray",
    "x-other",
];

fuzz_target!(|data: &[u8]| {
    let pairs: Vec<(&str, &[u8])> = data
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let (&pick, value) = line.split_first()?;
            Some((NAMES[usize::from(pick) % NAMES.len()], value))
        })
        .collect();
    if let Some(id) = request_id(&pairs) {
        assert!(!id.iter().all(u8::is_ascii_whitespace));
        assert!(
            pairs
                .iter()
                .any(|(name, value)| *name != "x-other" && *value == id)
        );
    }
});
