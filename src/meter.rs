//! What the transport did: counts, bytes and latency, shared by clones.
//!
//! Counters are atomics, so a send pays a few relaxed additions. Latency
//! goes into an HdrHistogram (microseconds, three significant figures,
//! bounded at one hour), whose memory is fixed however many sends it sees;
//! its lock is taken once per send, for one record.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::lock::Unpoisoned;
use crate::refusal::Cause;

/// The highest latency the histogram tells apart: an hour, in microseconds.
const MAX_MICROS: u64 = 3_600_000_000;

#[derive(Debug)]
pub(crate) struct Meter {
    sends: AtomicU64,
    attempts: AtomicU64,
    answers: AtomicU64,
    refusals: [AtomicU64; 4],
    held: AtomicU64,
    waited: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    latency: Mutex<Option<Histogram<u64>>>,
    /// How long streams took to their first byte.
    first_byte: Mutex<Option<Histogram<u64>>>,
    /// What the engine billed, summed over the answers that said.
    pub(crate) usage: crate::usage::Totals,
}

impl Default for Meter {
    fn default() -> Meter {
        Meter {
            sends: AtomicU64::new(0),
            attempts: AtomicU64::new(0),
            answers: AtomicU64::new(0),
            refusals: Default::default(),
            held: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
            // `new_with_bounds` fails only for bounds that are wrong in
            // themselves; without a histogram the latency reads as none.
            latency: Mutex::new(Histogram::new_with_bounds(1, MAX_MICROS, 3).ok()),
            first_byte: Mutex::new(Histogram::new_with_bounds(1, MAX_MICROS, 3).ok()),
            usage: crate::usage::Totals::default(),
        }
    }
}

fn index(cause: Cause) -> usize {
    match cause {
        Cause::NoEngine => 0,
        Cause::EngineUnreachable => 1,
        Cause::EngineOutOfCredit => 2,
        Cause::EngineOverQuota => 3,
    }
}

impl Meter {
    /// An answer's usage, summed and recorded on the send's span under
    /// OpenTelemetry's GenAI names.
    pub(crate) fn billed(&self, span: &tracing::Span, usage: Option<crate::usage::Usage>) {
        let Some(usage) = usage else {
            return;
        };
        self.usage.add(&usage);
        if let Some(input) = usage.input() {
            span.record("gen_ai.usage.input_tokens", input);
        }
        if let Some(output) = usage.output() {
            span.record("gen_ai.usage.output_tokens", output);
        }
    }

    /// One request went to the wire with a body of `bytes`.
    pub(crate) fn attempt(&self, bytes: usize) {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        self.bytes_sent
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// A send waited for a window, then went.
    pub(crate) fn waited(&self) {
        self.waited.fetch_add(1, Ordering::Relaxed);
    }

    /// `bytes` of a body were read from the wire.
    pub(crate) fn received(&self, bytes: usize) {
        self.bytes_received
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// A stream's first byte arrived `after` its send began.
    pub(crate) fn first_byte(&self, after: Duration) {
        record(&self.first_byte, after);
    }

    /// One send ended in an answer or a refusal. `latency` is the send's
    /// time when it reached the engine; `held` says it was refused locally
    /// by a hold or a latch.
    pub(crate) fn sent(&self, outcome: Result<(), Cause>, latency: Option<Duration>, held: bool) {
        match outcome {
            Ok(()) => self.answers.fetch_add(1, Ordering::Relaxed),
            Err(cause) => self.refusals[index(cause)].fetch_add(1, Ordering::Relaxed),
        };
        if held {
            self.held.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(latency) = latency {
            record(&self.latency, latency);
        }
        // Counted last, so that a snapshot never shows more sends than
        // answers and refusals together... except for sends in flight.
        self.sends.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> MeterSnapshot {
        let latency = percentiles(&self.latency);
        let first_byte = percentiles(&self.first_byte);
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        MeterSnapshot {
            sends: load(&self.sends),
            attempts: load(&self.attempts),
            answers: load(&self.answers),
            refusals: Refusals {
                no_engine: load(&self.refusals[0]),
                engine_unreachable: load(&self.refusals[1]),
                engine_out_of_credit: load(&self.refusals[2]),
                engine_over_quota: load(&self.refusals[3]),
            },
            held: load(&self.held),
            waited: load(&self.waited),
            bytes_sent: load(&self.bytes_sent),
            bytes_received: load(&self.bytes_received),
            latency_ms: latency,
            first_byte_ms: first_byte,
            usage: self.usage.snapshot(),
        }
    }
}

/// Records one duration, in microseconds, in `histogram`.
fn record(histogram: &Mutex<Option<Histogram<u64>>>, duration: Duration) {
    let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
    let mut histogram = histogram.lock_unpoisoned();
    if let Some(histogram) = histogram.as_mut() {
        histogram.saturating_record(micros.clamp(1, MAX_MICROS));
    }
}

/// The percentiles of `histogram`; none before anything was recorded.
fn percentiles(histogram: &Mutex<Option<Histogram<u64>>>) -> Latency {
    let histogram = histogram.lock_unpoisoned();
    let recorded = histogram.as_ref().filter(|h| !h.is_empty());
    let at = |q: f64| recorded.map(|h| Duration::from_micros(h.value_at_quantile(q)));
    Latency {
        p50: at(0.50),
        p90: at(0.90),
        p99: at(0.99),
        max: recorded.map(|h| Duration::from_micros(h.max())),
    }
}

/// What a transport and its clones have done so far, from
/// [`HttpTransport::meter`](crate::HttpTransport::meter). Serializes in
/// camelCase:
///
/// ```json
/// {"sends": 10, "attempts": 12, "answers": 8,
///  "refusals": {"no-engine": 0, "engine-unreachable": 1, "engine-out-of-credit": 0, "engine-over-quota": 1},
///  "held": 1, "waited": 0, "bytesSent": 420, "bytesReceived": 9001,
///  "latencyMs": {"p50": 4.1, "p90": 9.8, "p99": 12.0, "max": 12.3},
///  "firstByteMs": {"p50": 0.9, "p90": 1.2, "p99": 1.9, "max": 2.0},
///  "usage": {"input": 5200, "output": 960, "cached": 1024, "reasoning": 0, "answersWithUsage": 8}}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MeterSnapshot {
    sends: u64,
    attempts: u64,
    answers: u64,
    refusals: Refusals,
    held: u64,
    waited: u64,
    bytes_sent: u64,
    bytes_received: u64,
    latency_ms: Latency,
    first_byte_ms: Latency,
    pub(crate) usage: crate::usage::Sums,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
struct Refusals {
    no_engine: u64,
    engine_unreachable: u64,
    engine_out_of_credit: u64,
    engine_over_quota: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
struct Latency {
    #[serde(serialize_with = "millis")]
    p50: Option<Duration>,
    #[serde(serialize_with = "millis")]
    p90: Option<Duration>,
    #[serde(serialize_with = "millis")]
    p99: Option<Duration>,
    #[serde(serialize_with = "millis")]
    max: Option<Duration>,
}

fn millis<S: serde::Serializer>(
    value: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        // Whole microseconds over a thousand, the closest float, which
        // prints as the decimal itself: `110.975`, never
        // `110.97500000000001`.
        Some(duration) => serializer.serialize_f64(duration.as_micros() as f64 / 1000.0),
        None => serializer.serialize_none(),
    }
}

impl MeterSnapshot {
    /// What the engine billed, summed over the answers that said: each
    /// count the sum of the answers that gave it, `None` when none did;
    /// `None` before any answer said. A stream counts once, with its last
    /// figures, when it ends as an answer (its reader dropping it early
    /// included); one that ends in a refusal is a refusal, and not summed,
    /// though its [`AnswerStream::usage`](crate::AnswerStream::usage) says
    /// what it read. In the JSON: `usage`, each sum a number (zero when no
    /// answer gave it), with `answersWithUsage`.
    pub fn usage(&self) -> Option<crate::usage::Usage> {
        self.usage.usage()
    }

    /// How many answers said what the engine billed: the rest of
    /// [`answers`](Self::answers) said nothing of it. In the JSON:
    /// `usage.answersWithUsage`.
    pub fn answers_with_usage(&self) -> u64 {
        self.usage.answers_with_usage()
    }

    /// Calls to send, held ones included.
    pub fn sends(&self) -> u64 {
        self.sends
    }

    /// Requests that went to the wire.
    pub fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Sends that ended in an answer.
    pub fn answers(&self) -> u64 {
        self.answers
    }

    /// Sends that ended in a refusal with `cause`, held ones included.
    pub fn refusals(&self, cause: Cause) -> u64 {
        match cause {
            Cause::NoEngine => self.refusals.no_engine,
            Cause::EngineUnreachable => self.refusals.engine_unreachable,
            Cause::EngineOutOfCredit => self.refusals.engine_out_of_credit,
            Cause::EngineOverQuota => self.refusals.engine_over_quota,
        }
    }

    /// Sends refused without sending because of a hold or a latch.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Sends that waited for the engine's window (a hold, or a requests
    /// window the budget said was spent), then went.
    pub fn waited(&self) -> u64 {
        self.waited
    }

    /// Body bytes that went to the wire, every attempt counted.
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }

    /// Body bytes read from the wire, answers and error bodies.
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received
    }

    /// The latency below which `quantile` (`0.5`, `0.9`, `0.99`, `1.0` for
    /// the most) of the sends that reached the engine finished; `None`
    /// before any did. Read from a histogram precise to three significant
    /// figures.
    pub fn latency(&self, quantile: f64) -> Option<Duration> {
        match quantile {
            q if q >= 1.0 => self.latency_ms.max,
            q if q >= 0.99 => self.latency_ms.p99,
            q if q >= 0.9 => self.latency_ms.p90,
            _ => self.latency_ms.p50,
        }
    }

    /// How long streams took from their send to the first byte of their
    /// body, at `quantile` as [`MeterSnapshot::latency`] reads it; `None`
    /// before any stream had one. In the JSON: `firstByteMs`.
    pub fn first_byte(&self, quantile: f64) -> Option<Duration> {
        match quantile {
            q if q >= 1.0 => self.first_byte_ms.max,
            q if q >= 0.99 => self.first_byte_ms.p99,
            q if q >= 0.9 => self.first_byte_ms.p90,
            _ => self.first_byte_ms.p50,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_serialize_in_camel_case() {
        let meter = Meter::default();
        meter.attempt(10);
        meter.attempt(10);
        meter.received(5);
        meter.sent(Ok(()), Some(Duration::from_millis(3)), false);
        meter.sent(Err(Cause::EngineOverQuota), None, true);
        let snapshot = meter.snapshot();
        assert_eq!(snapshot.sends(), 2);
        assert_eq!(snapshot.attempts(), 2);
        assert_eq!(snapshot.answers(), 1);
        assert_eq!(snapshot.refusals(Cause::EngineOverQuota), 1);
        assert_eq!(snapshot.held(), 1);
        assert_eq!(snapshot.bytes_sent(), 20);
        let json = serde_json::to_value(&snapshot).expect("serializes");
        assert_eq!(json["bytesSent"], 20);
        assert_eq!(json["bytesReceived"], 5);
        assert_eq!(json["refusals"]["engine-over-quota"], 1);
        assert_eq!(json["refusals"]["no-engine"], 0);
        let p50 = json["latencyMs"]["p50"].as_f64().expect("a number");
        assert!((2.99..=3.01).contains(&p50), "{p50}");
    }

    #[test]
    fn no_latency_before_any_send_reached_the_engine() {
        let snapshot = Meter::default().snapshot();
        assert_eq!(snapshot.latency(0.5), None);
        let json = serde_json::to_value(&snapshot).expect("serializes");
        assert!(json["latencyMs"]["max"].is_null());
    }
}
