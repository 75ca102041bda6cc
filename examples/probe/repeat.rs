//! `--repeat N --concurrency C`: N sends through one transport, C in flight.
//!
//! One transport, cloned into every worker, because that is how a predictor
//! uses it: one connection pool, one armed header. C workers pull send
//! numbers from a shared counter, so the run is bounded by N whatever C is,
//! and it stops by itself when the counter passes N. The counts and the
//! latency percentiles are the transport's own meter; the probe keeps the
//! first and the last refusal of each cause, to show why. Every send is
//! accounted for: one whose task panics is counted as lost, and a run with
//! any lost send exits non-zero.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::FutureExt;
use meterwire::{Cause, HttpTransport, MeterSnapshot, Refusal, Report};
use serde::Serialize;

use crate::show::{self, Style};

/// The most sends one run makes: enough to measure, and bounded.
pub const MAX_REPEAT: u64 = 1_000_000;

/// The most sends in flight: one connection each, under a usual file limit.
pub const MAX_CONCURRENCY: u64 = 1_024;

/// A progress line appears only for a run that lasts longer than this.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

pub struct Summary {
    sent: u64,
    concurrency: u64,
    answers: u64,
    refusals: BTreeMap<&'static str, u64>,
    /// What the refusals of each cause said, first and last: a count says
    /// how many, the refusal says why.
    said: BTreeMap<Cause, Said>,
    /// Sends that never came back: their task panicked or was lost. The
    /// run did not complete if any did.
    lost: u64,
    elapsed: Duration,
    /// The transport's meter at the end of the run.
    meter: MeterSnapshot,
}

/// The first and the last refusal of one cause, by the order they ended.
struct Said {
    first: (u64, Refusal),
    last: (u64, Refusal),
}

impl Said {
    fn new(at: u64, refusal: Refusal) -> Said {
        Said {
            first: (at, refusal.clone()),
            last: (at, refusal),
        }
    }

    fn merge(&mut self, other: Said) {
        if other.first.0 < self.first.0 {
            self.first = other.first;
        }
        if other.last.0 > self.last.0 {
            self.last = other.last;
        }
    }
}

impl Summary {
    /// Whether every send came back with an answer or a refusal.
    pub fn completed(&self) -> bool {
        self.lost == 0
    }
}

/// `every`: each worker starts a send at most once this often.
pub async fn run(
    transport: &HttpTransport,
    body: Bytes,
    sends: u64,
    concurrency: u64,
    every: Option<Duration>,
) -> Summary {
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let printed = Arc::new(AtomicBool::new(false));
    let progress = tokio::spawn(progress(started, sends, done.clone(), printed.clone()));

    let workers: Vec<_> = (0..concurrency.min(sends))
        .map(|_| {
            let transport = transport.clone();
            let body = body.clone();
            let next = next.clone();
            let done = done.clone();
            tokio::spawn(async move {
                let mut said: HashMap<Cause, Said> = HashMap::new();
                let mut lost = 0;
                let mut pace = every.map(|every| {
                    let mut pace = tokio::time::interval(every);
                    // A send slower than the pace is followed at once by the
                    // next, never by a burst that catches up.
                    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    pace
                });
                // At most `sends` increments are below `sends`: the bound.
                while next.fetch_add(1, Ordering::Relaxed) < sends {
                    if let Some(pace) = &mut pace {
                        pace.tick().await;
                    }
                    // A send that panics is counted, and the worker goes on
                    // with the next one: the run accounts for every send.
                    let outcome = AssertUnwindSafe(transport.send(body.clone()))
                        .catch_unwind()
                        .await;
                    let at = done.fetch_add(1, Ordering::Relaxed);
                    match outcome {
                        Ok(Ok(_)) => {}
                        Ok(Err(refusal)) => {
                            let cause = refusal.cause();
                            let one = Said::new(at, refusal);
                            match said.get_mut(&cause) {
                                Some(said) => said.merge(one),
                                None => {
                                    said.insert(cause, one);
                                }
                            }
                        }
                        Err(_) => lost += 1,
                    }
                }
                (said, lost)
            })
        })
        .collect();

    let mut said: BTreeMap<Cause, Said> = BTreeMap::new();
    let mut lost = 0;
    for worker in workers {
        // A worker that is itself lost takes nothing with it: the sends it
        // did not report are counted from `done` below.
        let Ok((theirs, their_lost)) = worker.await else {
            continue;
        };
        lost += their_lost;
        for (cause, one) in theirs {
            match said.get_mut(&cause) {
                Some(said) => said.merge(one),
                None => {
                    said.insert(cause, one);
                }
            }
        }
    }
    let elapsed = started.elapsed();
    progress.abort();
    let _ = progress.await;
    if printed.load(Ordering::Relaxed) {
        // Clears the progress line so the summary starts on a clean one.
        eprint!("\r\x1b[2K");
    }
    // Every send either ended (`done`) or was never reached because its
    // worker was lost: those count as lost too.
    lost += sends.saturating_sub(done.load(Ordering::Relaxed));
    let meter = transport.meter();
    let refusals: BTreeMap<&'static str, u64> = Cause::ALL
        .iter()
        .map(|cause| (cause.as_str(), meter.refusals(*cause)))
        .collect();
    Summary {
        sent: meter.sends(),
        concurrency: concurrency.min(sends),
        answers: meter.answers(),
        refusals,
        said,
        lost,
        elapsed,
        meter,
    }
}

/// A live line on stderr, only on a terminal and only once the run has
/// lasted a second; `printed` says whether it wrote anything. It ends when
/// every send is done or when the run aborts it, whichever comes first.
async fn progress(started: Instant, sends: u64, done: Arc<AtomicU64>, printed: Arc<AtomicBool>) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    tokio::time::sleep(PROGRESS_AFTER).await;
    loop {
        let count = done.load(Ordering::Relaxed);
        let secs = started.elapsed().as_secs_f64();
        {
            // Scoped: a stderr lock must not be held across the sleep.
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[2K  {count}/{sends} sent, {:.1} s, {:.0} per second",
                secs,
                count as f64 / secs.max(f64::EPSILON)
            );
            let _ = err.flush();
        }
        printed.store(true, Ordering::Relaxed);
        if count >= sends {
            return;
        }
        tokio::time::sleep(PROGRESS_EVERY).await;
    }
}

/// `--json` for a run.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryJson<'a> {
    sent: u64,
    answers: u64,
    refusals: &'a BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "is_zero")]
    lost: u64,
    elapsed_ms: u64,
    requests_per_second: f64,
    latency_ms: LatencyJson,
    meter: &'a MeterSnapshot,
    said: BTreeMap<&'static str, SaidJson>,
}

/// What the refusals of one cause said, first and last.
#[derive(Serialize)]
struct SaidJson {
    first: Report,
    last: Report,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct LatencyJson {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

impl Summary {
    pub fn to_json(&self) -> SummaryJson<'_> {
        SummaryJson {
            sent: self.sent,
            answers: self.answers,
            refusals: &self.refusals,
            elapsed_ms: crate::millis(self.elapsed),
            requests_per_second: round(self.per_second(), 10.0),
            latency_ms: LatencyJson {
                p50: self.percentile_ms(50),
                p90: self.percentile_ms(90),
                p99: self.percentile_ms(99),
                max: self.percentile_ms(100),
            },
            meter: &self.meter,
            said: self
                .said
                .iter()
                .map(|(cause, said)| {
                    let json = SaidJson {
                        first: said.first.1.report(),
                        last: said.last.1.report(),
                    };
                    (cause.as_str(), json)
                })
                .collect(),
            lost: self.lost,
        }
    }

    fn per_second(&self) -> f64 {
        self.sent as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// The meter's percentile, in milliseconds to the hundredth; zero when
    /// no send reached the engine.
    fn percentile_ms(&self, p: usize) -> f64 {
        let latency = self.meter.latency(p as f64 / 100.0).unwrap_or_default();
        round(latency.as_secs_f64() * 1000.0, 100.0)
    }

    pub fn print(&self, style: &Style) {
        let refused: u64 = self.refusals.values().sum();
        let held = self.meter.held();
        out!(
            "{} sent, {} at once, in {} ms: {:.1} requests per second",
            style.bold(&self.sent.to_string()),
            self.concurrency,
            crate::millis(self.elapsed),
            self.per_second()
        );
        let answers = self.answers.to_string();
        out!(
            "  answers   {}",
            if self.answers > 0 {
                style.good(&answers)
            } else {
                answers
            }
        );
        out!("  refusals  {refused}");
        out!(
            "  attempts  {} ({} held, not sent)",
            self.meter.attempts(),
            held
        );
        out!(
            "  waited    {} (for the engine's window, then sent)",
            self.meter.waited()
        );
        if self.lost > 0 {
            out!(
                "  {}      {} (their task panicked or was lost: the run did not complete)",
                style.bad("lost"),
                self.lost
            );
        }
        for (cause, said) in &self.said {
            let cause = *cause;
            let refusal = &said.first.1;
            let count = self.refusals.get(cause.as_str()).copied().unwrap_or(0);
            out!(
                "    {}  {count}  {}",
                style.cause(cause, cause.as_str()),
                style.dim(&format!("({}); the first said:", show::meaning(cause)))
            );
            out!("      {}  {}", style.bold("reason"), refusal.reason());
            out!(
                "      {}  {}",
                style.bold("remedy"),
                show::in_probe_words(refusal.remedy())
            );
        }
        if let Some(usage) = self.meter.usage() {
            out!(
                "  usage     {} ({} of {} answers said)",
                show::usage_words(&usage),
                self.meter.answers_with_usage(),
                self.answers
            );
        }
        out!(
            "  latency   p50 {:.2} ms · p90 {:.2} ms · p99 {:.2} ms · max {:.2} ms",
            self.percentile_ms(50),
            self.percentile_ms(90),
            self.percentile_ms(99),
            self.percentile_ms(100)
        );
    }
}

fn round(value: f64, scale: f64) -> f64 {
    (value * scale).round() / scale
}
