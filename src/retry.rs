//! Retries, said exactly: the retry table as code.
//!
//! A metered engine bills every request that reaches it, so a retry is a
//! second bill unless the first request provably never reached the engine,
//! or the engine itself asked for the retry (a `429` or `503` with a
//! hint). A request that was sent and then failed (a `408`, a `5xx`
//! without a hint, a reset) may have been billed already; an
//! `Idempotency-Key` lets an engine that honours it recognise the repeat,
//! but an engine that ignores the header bills every attempt, and a client
//! cannot tell the two apart. Peer clients retry any failed `POST`; that is
//! how a job gets resubmitted hundreds of times and billed for most of
//! them. So retries are opt-in ([`RetryPolicy::none`] is the default), a
//! policy sends no key unless asked to (only then is a request that was
//! sent tried again), and [`decide`] is the one place that says whether an
//! outcome may be tried again.

use std::time::Duration;

/// How many times a send may be attempted, how long it may wait for the
/// engine's hint, and whether each send carries an idempotency key.
///
/// Without a key, a policy retries only what cannot double a bill: a
/// request that never reached the engine, and a `429` or `503` whose hint
/// asks for the retry. With [`idempotency_keys(true)`](Self::idempotency_keys)
/// it also retries a request that was sent and failed (a `408`, a `5xx`
/// without a hint, a reset), which is safe only against an engine that
/// honours `Idempotency-Key`.
///
/// ```
/// use std::time::Duration;
/// use meterwire::RetryPolicy;
///
/// let policy = RetryPolicy::new()
///     .max_attempts(4)
///     .max_wait(Duration::from_secs(10));
/// assert_eq!(policy.attempts(), 4);
/// assert_eq!(RetryPolicy::none().attempts(), 1);
/// // For an engine that honours `Idempotency-Key` only:
/// let keyed = RetryPolicy::new().idempotency_keys(true);
/// # let _ = keyed;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    max_attempts: u32,
    max_wait: Duration,
    idempotency_keys: bool,
    backoff_base: Duration,
    backoff_cap: Duration,
}

impl Default for RetryPolicy {
    /// [`RetryPolicy::none`]: one attempt.
    fn default() -> RetryPolicy {
        RetryPolicy::none()
    }
}

impl RetryPolicy {
    /// At most 3 attempts, backoff from 250 ms doubling to at most 8 s with
    /// full jitter, a hint waited for when it is at most 30 s, and no
    /// idempotency key: a request that may have reached the engine (a
    /// `408`, a `5xx` without a hint, a reset after it was sent) is not
    /// sent again, since the engine may have billed it.
    pub fn new() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            max_wait: Duration::from_secs(30),
            idempotency_keys: false,
            backoff_base: Duration::from_millis(250),
            backoff_cap: Duration::from_secs(8),
        }
    }

    /// One attempt and no key: what a transport does without a policy.
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::new()
        }
    }

    /// At most `attempts` requests per send, the first included; `0` is
    /// read as `1`.
    pub fn max_attempts(mut self, attempts: u32) -> RetryPolicy {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The longest wait for an engine's retry hint (or a hold, see
    /// [`HttpTransportBuilder::respect_limits`](crate::HttpTransportBuilder::respect_limits));
    /// a longer hint is a refusal at once, its `retryAfter` set.
    pub fn max_wait(mut self, wait: Duration) -> RetryPolicy {
        self.max_wait = wait;
        self
    }

    /// Whether every send carries a fresh `Idempotency-Key` (the same on
    /// each of its attempts), and so whether a request that was sent and
    /// then failed (a `408`, a `5xx` without a hint, a reset) is sent
    /// again. Turn it on only for an engine that honours `Idempotency-Key`:
    /// one that ignores the header may bill each attempt. Off by default.
    pub fn idempotency_keys(mut self, on: bool) -> RetryPolicy {
        self.idempotency_keys = on;
        self
    }

    /// The most requests one send may make.
    pub fn attempts(&self) -> u32 {
        self.max_attempts
    }

    pub(crate) fn waits_for(&self) -> Duration {
        self.max_wait
    }

    pub(crate) fn keys(&self) -> bool {
        self.idempotency_keys
    }

    /// Full jitter (a uniform draw from zero to the doubled delay): clients
    /// that failed together do not come back together.
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let doubled = self
            .backoff_base
            .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
            .min(self.backoff_cap);
        let nanos = u64::try_from(doubled.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// What one attempt came to, as far as retrying is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The request never reached the engine: connection refused, no such
    /// host, a failed connect.
    NotSent,
    /// The engine answered this status, with or without a retry hint.
    Status(u16, Option<Duration>),
    /// The request was sent, or may have been, and no complete answer came:
    /// a reset, an incomplete answer, a failure none of the others name.
    Lost,
    /// Nothing to retry: TLS, an answer over the cap or not UTF-8, the
    /// deadline, or a refusal before sending.
    Final,
}

/// Whether, and after how long, an outcome may be tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Not again: the refusal stands.
    No,
    /// Again, after the engine's hint, exactly.
    After(Duration),
    /// Again, after a backoff.
    Backoff,
}

/// The retry table: a request that never reached the engine is retried
/// with backoff; a `429` or `503` with a hint no longer than `max_wait`
/// after exactly the hint; a `408`, `500`, `502`, `503` or `504` without a
/// hint, or a reset or incomplete answer after sending, only when a key is
/// sent; anything else (a hint over `max_wait`, `4xx`, `3xx`, TLS, an
/// answer over the cap or not UTF-8, a refusal before sending) never.
/// `keyed` says whether the request carried an
/// idempotency key; the caller checks the attempt count and the deadline.
pub(crate) fn decide(outcome: Outcome, keyed: bool, max_wait: Duration) -> Retry {
    match outcome {
        Outcome::NotSent => Retry::Backoff,
        Outcome::Status(429 | 503, Some(hint)) => {
            if hint <= max_wait {
                Retry::After(hint)
            } else {
                Retry::No
            }
        }
        Outcome::Status(408 | 500 | 502 | 503 | 504, None) | Outcome::Lost if keyed => {
            Retry::Backoff
        }
        Outcome::Status(..) | Outcome::Lost | Outcome::Final => Retry::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(30);

    #[test]
    fn a_request_that_never_reached_the_engine_is_retried_keyed_or_not() {
        assert_eq!(decide(Outcome::NotSent, false, WAIT), Retry::Backoff);
        assert_eq!(decide(Outcome::NotSent, true, WAIT), Retry::Backoff);
    }

    #[test]
    fn a_hinted_429_or_503_waits_exactly_the_hint_when_it_is_short_enough() {
        let hint = Duration::from_millis(1500);
        for status in [429, 503] {
            for keyed in [false, true] {
                assert_eq!(
                    decide(Outcome::Status(status, Some(hint)), keyed, WAIT),
                    Retry::After(hint)
                );
                assert_eq!(
                    decide(
                        Outcome::Status(status, Some(Duration::from_secs(31))),
                        keyed,
                        WAIT
                    ),
                    Retry::No
                );
            }
        }
    }

    #[test]
    fn a_failure_after_sending_is_retried_only_with_a_key() {
        for outcome in [408, 500, 502, 503, 504]
            .map(|status| Outcome::Status(status, None))
            .into_iter()
            .chain([Outcome::Lost])
        {
            assert_eq!(decide(outcome, false, WAIT), Retry::No, "{outcome:?}");
            assert_eq!(decide(outcome, true, WAIT), Retry::Backoff, "{outcome:?}");
        }
    }

    #[test]
    fn what_a_retry_cannot_fix_is_never_retried() {
        let hint = Some(Duration::from_millis(100));
        for status in [
            300, 301, 302, 307, 308, 400, 401, 402, 403, 404, 405, 409, 410, 413, 415, 422, 429,
        ] {
            for keyed in [false, true] {
                assert_eq!(
                    decide(Outcome::Status(status, None), keyed, WAIT),
                    Retry::No,
                    "{status}"
                );
                if status != 429 {
                    assert_eq!(
                        decide(Outcome::Status(status, hint), keyed, WAIT),
                        Retry::No,
                        "{status}"
                    );
                }
            }
        }
        assert_eq!(decide(Outcome::Final, true, WAIT), Retry::No);
    }

    #[test]
    fn backoff_doubles_from_the_base_to_the_cap_with_full_jitter() {
        let policy = RetryPolicy::new();
        for retry in 1..=10 {
            let bound =
                Duration::from_millis(250 * (1u64 << (retry - 1))).min(Duration::from_secs(8));
            for _ in 0..100 {
                assert!(policy.backoff(retry) <= bound, "{retry}");
            }
        }
        let spread: std::collections::HashSet<_> = (0..50).map(|_| policy.backoff(3)).collect();
        assert!(spread.len() > 10, "jitter draws differ");
    }

    #[test]
    fn the_default_is_one_attempt_without_a_key() {
        let none = RetryPolicy::default();
        assert_eq!(none.attempts(), 1);
        assert!(!none.keys());
        assert_eq!(RetryPolicy::new().attempts(), 3);
        assert!(!RetryPolicy::new().keys(), "no key unless asked for");
        assert!(RetryPolicy::new().idempotency_keys(true).keys());
        assert_eq!(RetryPolicy::new().max_attempts(0).attempts(), 1);
    }
}
