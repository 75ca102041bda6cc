//! Arbitrary text where an engine writes what it billed: the reader must
//! neither panic nor take long, and whatever it reads is a count no larger
//! than three figures of 2^53 (Anthropic's input adds three).
//!
//! The input is read whole as an answer, then split at blank lines into
//! events, each line `event: TYPE` starting one with that type, as a
//! stream's events would arrive.

#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use meterwire::Usage;
use meterwire::fuzzing::{usage_streamed, usage_whole};

const MOST: u64 = 3 << 53;

fn check(usage: Option<Usage>) {
    let Some(usage) = usage else { return };
    let counts = [usage.input(), usage.output(), usage.cached(), usage.reasoning()];
    assert!(counts.iter().any(Option::is_some), "a usage with no count");
    for count in counts.into_iter().flatten() {
        assert!(count <= MOST, "{count} is past any sum of figures");
    }
    if let (Some(input), Some(output)) = (usage.input(), usage.output()) {
        assert_eq!(usage.total(), Some(input + output));
    }
    let json = serde_json::to_value(usage).expect("a usage serializes");
    assert!(json.is_object());
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let started = Instant::now();
    check(usage_whole(&text));
    let events: Vec<(Option<&str>, &str)> = text
        .split("\n\n")
        .map(|event| match event.strip_prefix("event: ") {
            Some(rest) => match rest.split_once('\n') {
                Some((kind, data)) => (Some(kind), data),
                None => (Some(rest), ""),
            },
            None => (None, event),
        })
        .collect();
    check(usage_streamed(&events));
    // The tail searched is bounded, and so is every parse.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "slow: {:?}",
        started.elapsed()
    );
});
