//! The meter's sums of what engines billed: a few relaxed additions per
//! answer that said, none for one that did not. It uses `Usage`'s public
//! API alone, so that the send bench, which compiles the meter's own
//! source, can compile it too.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::usage::Usage;

/// The sums, shared by a transport's clones. A count no answer gave stays
/// apart from a zero: `given` has a bit per count that some answer gave.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    input: AtomicU64,
    output: AtomicU64,
    cached: AtomicU64,
    reasoning: AtomicU64,
    answers: AtomicU64,
    given: AtomicU64,
}

impl Totals {
    /// One answer's usage (one that holds a count).
    pub(crate) fn add(&self, usage: &Usage) {
        let counts = [
            usage.input(),
            usage.output(),
            usage.cached(),
            usage.reasoning(),
        ];
        let sums = [&self.input, &self.output, &self.cached, &self.reasoning];
        let mut given = 0;
        for (bit, (count, sum)) in counts.into_iter().zip(sums).enumerate() {
            if let Some(count) = count {
                // Saturating: a sum past `u64` stays at its most.
                let _ = sum.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |sum| {
                    Some(sum.saturating_add(count))
                });
                given |= 1 << bit;
            }
        }
        self.given.fetch_or(given, Ordering::Relaxed);
        self.answers.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Sums {
        let load = |sum: &AtomicU64| sum.load(Ordering::Relaxed);
        Sums {
            input: load(&self.input),
            output: load(&self.output),
            cached: load(&self.cached),
            reasoning: load(&self.reasoning),
            answers_with_usage: load(&self.answers),
            given: load(&self.given),
        }
    }
}

/// The sums as a snapshot shows them: `{"input": …, "output": …,
/// "cached": …, "reasoning": …, "answersWithUsage": …}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Sums {
    input: u64,
    output: u64,
    cached: u64,
    reasoning: u64,
    answers_with_usage: u64,
    #[serde(skip)]
    given: u64,
}

impl Sums {
    /// What the engine billed, summed over the answers that said: each
    /// count the sum of the answers that gave it, `None` when none did;
    /// `None` before any answer said.
    pub(crate) fn usage(&self) -> Option<Usage> {
        let given = |bit: u32| self.given & (1 << bit) != 0;
        let mut usage = Usage::new();
        if given(0) {
            usage = usage.with_input(self.input);
        }
        if given(1) {
            usage = usage.with_output(self.output);
        }
        if given(2) {
            usage = usage.with_cached(self.cached);
        }
        if given(3) {
            usage = usage.with_reasoning(self.reasoning);
        }
        (self.given != 0).then_some(usage)
    }

    /// How many answers said what the engine billed.
    pub(crate) fn answers_with_usage(&self) -> u64 {
        self.answers_with_usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_no_answer_gave_are_none_and_zero_in_the_json() {
        let totals = Totals::default();
        totals.add(&Usage::new().with_input(3).with_output(4));
        totals.add(&Usage::new().with_input(u64::MAX).with_cached(2));
        let sums = totals.snapshot();
        assert_eq!(sums.input, u64::MAX, "a sum past u64 stays at its most");
        assert_eq!(sums.output, 4);
        assert_eq!(sums.cached, 2);
        assert_eq!(sums.reasoning, 0);
        assert_eq!(sums.answers_with_usage, 2);
        assert_eq!(sums.given, 0b0111);
        let json = serde_json::to_value(&sums).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!({"input": u64::MAX, "output": 4, "cached": 2, "reasoning": 0, "answersWithUsage": 2})
        );
    }
}
