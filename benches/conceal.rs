//! The concealer's throughput against the floor and the naive scrub.
//!
//! Every string an engine sends passes through [`Concealer::conceal`], so its
//! cost is measured here on 64 KiB, 1 MiB and 16 MiB texts of each kind a
//! body can be: plain JSON with nothing to find, JSON of generated text
//! (escaped newlines and quotes), generated text that echoes the token
//! JSON-escaped (the send bench's `1MiB-text`: strings with `\n`, `\"` and
//! `\uXXXX`, every 100th record quoting the token as PHP escapes it or with
//! `\/` only), plain JSON echoing the raw token once every ~1 KiB (as the
//! send bench's `1MiB-plain`), JSON dense with the token in mixed
//! encodings, JSON heavy with escapes of every family, and adversarial runs
//! (of `\`, `%`, `&`, base64 characters) that would expose any quadratic
//! path. Two baselines run on the same texts in the same process: `memmem`
//! counting the raw token (the floor: one pass, one pattern) and
//! `str::replace` of the raw token (what a naive scrub does, finding none of
//! the encoded forms).
//!
//! Before anything is timed, every text the bench runs that holds the token
//! (`generated`, `echoes`, `dense`) is concealed once and must come out with
//! no form of it left, and `generated` and `echoes` with one marker per
//! echo, so the figures can only be those of a concealer that works.
//!
//! Building a concealer is measured too (`build/…`): a secret of 1,000,
//! 4,000 and 16,000 repetitions of one character, the worst shape for an
//! automaton's failure links, must cost time linear in its length. And so
//! is searching for one (`secret/…`): a 4 MiB answer echoing an
//! 8,000-character secret that repeats itself (`abab…`) costs what the
//! same answer echoing a random secret of that length costs, and the ratio
//! table says by how much it differs.
//!
//! The `stream` group conceals the same texts in 16 KiB pieces through the
//! crate's `ConcealStream`, as the transport does while an answer arrives,
//! and the ratio table says what that costs against concealing each whole.
//! The stream is the crate's own, reached through the fuzzing shim, so the
//! group is built only with `--cfg fuzzing`:
//! `RUSTFLAGS="--cfg fuzzing" CARGO_TARGET_DIR=target/fuzzing cargo bench
//! --bench conceal -- stream` (its own target directory, since the flag
//! rebuilds every dependency).
//!
//! `cargo bench --bench conceal` runs criterion's groups, then prints a ratio
//! table from its own interleaved medians, so each ratio compares runs taken
//! moments apart. With a filter (`cargo bench --bench conceal -- build`) only
//! the matching groups run, and the ratio table only when the filter is
//! `ratio` (the `secret` ratio also when it is `secret`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use memchr::memmem::Finder;
use meterwire::{Concealer, REDACTED};

#[path = "common/records.rs"]
mod records;
use records::{JSON_FORMS, TOKEN, echo, generated, generated_echo, plain};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const SIZES: [usize; 3] = [64 * KIB, MIB, 16 * MIB];

/// The sizes to run: all three under `cargo bench`, the smallest alone when
/// `cargo test --all-targets` runs each benchmark once (unoptimized, where
/// 16 MiB texts would take a minute to prove nothing more).
fn sizes() -> &'static [usize] {
    if measuring() { &SIZES } else { &SIZES[..1] }
}

/// One kind of text, built to any length.
struct Kind {
    name: &'static str,
    /// Record `i` of the text; records are repeated, numbered, until the
    /// text is long enough, then it is cut to the exact length.
    record: fn(usize) -> String,
}

const KINDS: [Kind; 10] = [
    Kind {
        name: "plain",
        record: plain,
    },
    Kind {
        name: "text-json",
        record: text_json,
    },
    Kind {
        name: "generated",
        record: |i| generated(i, generated_echo(i, 100)),
    },
    Kind {
        name: "echoes",
        // 12 plain records and an echo: ~1 KiB.
        record: |i| {
            if i % 13 == 12 {
                echo(i, TOKEN)
            } else {
                plain(i)
            }
        },
    },
    Kind {
        name: "dense",
        record: dense,
    },
    Kind {
        name: "escapes",
        record: escapes,
    },
    Kind {
        name: "run-backslash",
        record: |_| "\\".repeat(64),
    },
    Kind {
        name: "run-percent",
        record: |_| "%".repeat(64),
    },
    Kind {
        name: "run-ampersand",
        record: |_| "&".repeat(64),
    },
    Kind {
        name: "run-base64",
        record: base64_run,
    },
];

/// JSON as a generating engine answers it: prose whose strings escape
/// newlines and quotes, one backslash every ~30 bytes, and no token.
fn text_json(i: usize) -> String {
    format!(
        r#"{{"index":{i},"text":"The cat sat on the mat.\nIt said \"warm\", and slept.","score":0.{:03}}},"#,
        i % 1000
    )
}

/// JSON echoing the token in a different mixture of encodings every record:
/// one occurrence per ~90 bytes, the worst an echoing engine does.
fn dense(i: usize) -> String {
    let base64 = STANDARD.encode(format!("Bearer {TOKEN}"));
    let forms = [
        TOKEN.to_owned(),
        TOKEN.replace('+', r"\u002B").replace('/', r"\/"),
        TOKEN.replace('+', "%2B").replace('/', "%2f"),
        TOKEN.replace('+', "%2B").replace('/', r"\/"),
        TOKEN.replace('+', "&#43;").replace('/', "&#x2F;"),
        TOKEN.replace('+', "&plus;").replace('/', "&sol;"),
        TOKEN.replace('+', r"\\u002b").replace('/', r"\\/"),
        base64,
    ];
    let form = &forms[i % forms.len()];
    format!(r#"{{"id":{i},"echo":"{form}","note":"rejected"}},"#)
}

/// JSON whose strings escape everything they can, with no token: every
/// family's view is built and every decoder runs, for nothing.
fn escapes(i: usize) -> String {
    format!(
        r#"{{"id":{i},"text":"line\none \"two\"\tcaf\u00e9 \ud83d\ude00 C:\\dir\\f","url":"/q?a=1%202&b=%2Fx%3D","html":"a &amp; b &lt;c&gt; &#169; &#x2014;"}},"#
    )
}

/// One long base64 run (the encoding of the token, repeated), so every
/// alignment's core hits inside a single run.
fn base64_run(_: usize) -> String {
    STANDARD
        .encode(TOKEN.repeat(3))
        .trim_end_matches('=')
        .to_owned()
}

fn text(kind: &Kind, len: usize) -> String {
    let mut text = String::with_capacity(len + 4 * KIB);
    let mut i = 0;
    while text.len() < len {
        text.push_str(&(kind.record)(i));
        i += 1;
    }
    // Every record is ASCII, so any cut is a char boundary.
    text.truncate(len);
    text
}

fn label(size: usize) -> String {
    if size >= MIB {
        format!("{}MiB", size / MIB)
    } else {
        format!("{}KiB", size / KIB)
    }
}

/// The three contestants, each returning something to keep the optimizer
/// from dropping the work.
struct Contestants {
    finder: Finder<'static>,
    concealer: Concealer,
}

impl Contestants {
    fn new() -> Contestants {
        Contestants {
            finder: Finder::new(TOKEN.as_bytes()),
            concealer: Concealer::new([TOKEN]),
        }
    }

    fn memmem(&self, text: &str) -> usize {
        self.finder.find_iter(text.as_bytes()).count()
    }

    fn replace(&self, text: &str) -> usize {
        text.replace(TOKEN, REDACTED).len()
    }

    fn conceal(&self, text: &str) -> usize {
        self.concealer.conceal(text).len()
    }
}

fn criterion_groups(criterion: &mut Criterion, texts: &[(&Kind, Vec<String>)]) {
    let contestants = Contestants::new();
    for (kind, sized) in texts {
        let mut group = criterion.benchmark_group(format!("conceal/{}", kind.name));
        for (size, text) in sizes().iter().zip(sized) {
            group.throughput(Throughput::Bytes(*size as u64));
            if *size >= 16 * MIB {
                // A call takes tens of milliseconds: ten flat samples are
                // plenty, and linear sampling would need ~55 calls.
                group
                    .sampling_mode(SamplingMode::Flat)
                    .sample_size(10)
                    .warm_up_time(Duration::from_millis(500))
                    .measurement_time(Duration::from_secs(2));
            } else {
                group
                    .sampling_mode(SamplingMode::Auto)
                    .sample_size(20)
                    .warm_up_time(Duration::from_millis(300))
                    .measurement_time(Duration::from_millis(800));
            }
            let id = |name| BenchmarkId::new(name, label(*size));
            group.bench_with_input(id("memmem"), text, |b, t| {
                b.iter(|| contestants.memmem(black_box(t)))
            });
            group.bench_with_input(id("replace"), text, |b, t| {
                b.iter(|| contestants.replace(black_box(t)))
            });
            group.bench_with_input(id("conceal"), text, |b, t| {
                b.iter(|| contestants.conceal(black_box(t)))
            });
        }
        group.finish();
    }
}

/// How long a secret the build group uses: one character repeated.
const BUILD_LENGTHS: [usize; 3] = [1_000, 4_000, 16_000];

fn build_group(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("build");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(1));
    let lengths: &[usize] = if measuring() {
        &BUILD_LENGTHS
    } else {
        &BUILD_LENGTHS[..1]
    };
    for &len in lengths {
        let secret = "a".repeat(len);
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("repeated", len), &secret, |b, s| {
            b.iter(|| Concealer::new([black_box(s.as_str())]))
        });
    }
    group.finish();
}

/// The length of the secrets the `secret` group echoes.
const LONG_SECRET: usize = 8_000;

/// The two secrets of the `secret` group: one that repeats itself, the
/// worst case for a search restarted past each hit, and one of random
/// token characters (a fixed linear congruential sequence).
fn long_secrets() -> [(&'static str, String); 2] {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let random = (0..LONG_SECRET)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(alphabet[(state >> 58) as usize])
        })
        .collect();
    [
        ("repetitive", "ab".repeat(LONG_SECRET / 2)),
        ("random", random),
    ]
}

/// An answer of `len` bytes echoing `secret` in every record.
fn echoing(secret: &str, len: usize) -> String {
    let mut text = String::with_capacity(len + LONG_SECRET + 64);
    let mut i = 0;
    while text.len() < len {
        text.push_str(&echo(i, secret));
        i += 1;
    }
    text.truncate(len);
    text
}

/// The size of the `secret` group's answers.
fn echo_size() -> usize {
    if measuring() { 4 * MIB } else { 64 * KIB }
}

fn secret_group(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("secret");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let size = echo_size();
    group.throughput(Throughput::Bytes(size as u64));
    for (name, secret) in long_secrets() {
        let concealer = Concealer::new([secret.as_str()]);
        let text = echoing(&secret, size);
        group.bench_with_input(BenchmarkId::new(name, label(size)), &text, |b, t| {
            b.iter(|| concealer.conceal(black_box(t)).len())
        });
    }
    group.finish();
}

/// The `secret` group's figures, interleaved, and their ratio.
fn secret_ratio() {
    let size = echo_size();
    let [repetitive, random] = long_secrets().map(|(_, secret)| {
        let concealer = Concealer::new([secret.as_str()]);
        (concealer, echoing(&secret, size))
    });
    let mut samples = [Vec::new(), Vec::new()];
    for _ in 0..7 {
        for (k, (concealer, text)) in [&repetitive, &random].into_iter().enumerate() {
            samples[k].push(per_call(1, || concealer.conceal(black_box(text)).len()));
        }
    }
    let [repeats, plain] = samples.map(median);
    println!();
    println!(
        "secret: {} answers echoing an {LONG_SECRET}-character secret: repetitive {:.1} ns/byte, random {:.1} ns/byte, ratio {:.2}x",
        label(size),
        repeats * 1e9 / size as f64,
        plain * 1e9 / size as f64,
        repeats / plain,
    );
}

/// How long the pieces of the `stream` group are: what one read of an
/// answer's body brings.
#[cfg(fuzzing)]
const PIECE: usize = 16 * KIB;

/// `text` in pieces of [`PIECE`] bytes (ASCII, so any cut is a boundary).
#[cfg(fuzzing)]
fn pieces(text: &str) -> Vec<&str> {
    text.as_bytes()
        .chunks(PIECE)
        .map(|piece| std::str::from_utf8(piece).unwrap_or_default())
        .collect()
}

#[cfg(fuzzing)]
fn stream_group(criterion: &mut Criterion, texts: &[(&Kind, Vec<String>)]) {
    let concealer = Concealer::new([TOKEN]);
    for (kind, sized) in texts {
        let mut group = criterion.benchmark_group(format!("stream/{}", kind.name));
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        for (size, text) in sizes().iter().zip(sized) {
            group.throughput(Throughput::Bytes(*size as u64));
            let pieces = pieces(text);
            group.bench_with_input(BenchmarkId::new("pieces", label(*size)), &pieces, |b, p| {
                b.iter(|| {
                    meterwire::fuzzing::conceal_in_pieces(&concealer, black_box(p))
                        .0
                        .len()
                })
            });
        }
        group.finish();
    }
}

/// Whole-text concealment against the stream's, interleaved, per text: the
/// two outputs are the same (checked), so the ratio is the stream's cost.
#[cfg(fuzzing)]
fn stream_ratio(texts: &[(&Kind, Vec<String>)]) {
    let concealer = Concealer::new([TOKEN]);
    println!();
    println!(
        "stream: {} KiB pieces against the whole text (medians, ms)",
        PIECE / KIB
    );
    println!(
        "{:<14} {:>6} {:>9} {:>9} {:>8}",
        "text", "size", "whole", "stream", "ratio"
    );
    for (kind, sized) in texts {
        for (size, text) in sizes().iter().zip(sized) {
            let pieces = pieces(text);
            let streamed = meterwire::fuzzing::conceal_in_pieces(&concealer, &pieces).0;
            assert_eq!(streamed, concealer.conceal(text), "{}", kind.name);
            let rounds = if *size >= 16 * MIB { 5 } else { 11 };
            let calls = (4 * MIB / text.len()).max(1);
            let mut samples = [Vec::new(), Vec::new()];
            for _ in 0..rounds {
                samples[0].push(per_call(calls, || concealer.conceal(black_box(text)).len()));
                samples[1].push(per_call(calls, || {
                    meterwire::fuzzing::conceal_in_pieces(&concealer, black_box(&pieces))
                        .0
                        .len()
                }));
            }
            let [whole, stream] = samples.map(median);
            println!(
                "{:<14} {:>6} {:>9.3} {:>9.3} {:>7.2}x",
                kind.name,
                label(*size),
                whole * 1e3,
                stream * 1e3,
                stream / whole
            );
        }
    }
}

/// Seconds per call of `f`, timed over `calls` calls.
fn per_call(calls: usize, mut f: impl FnMut() -> usize) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        black_box(f());
    }
    start.elapsed().as_secs_f64() / calls as f64
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Medians of the three contestants, sampled in turn so that drift in the
/// machine's speed lands on all three alike.
fn medians(contestants: &Contestants, text: &str) -> [f64; 3] {
    let rounds = match text.len() {
        n if n >= 16 * MIB => 7,
        n if n >= MIB => 15,
        _ => 31,
    };
    // About 4 MiB of text per sample, so a 64 KiB sample is not one
    // clock tick.
    let calls = (4 * MIB / text.len()).max(1);
    let mut samples = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..rounds {
        samples[0].push(per_call(calls, || contestants.memmem(black_box(text))));
        samples[1].push(per_call(calls, || contestants.replace(black_box(text))));
        samples[2].push(per_call(calls, || contestants.conceal(black_box(text))));
    }
    samples.map(median)
}

fn ratio_table(texts: &[(&Kind, Vec<String>)]) {
    let contestants = Contestants::new();
    let gibs = |len: usize, secs: f64| len as f64 / secs / (1u64 << 30) as f64;
    println!();
    println!("conceal: medians of interleaved runs (GiB/s), and ratios of time");
    println!(
        "{:<14} {:>6} {:>8} {:>8} {:>8} {:>14} {:>15}",
        "text", "size", "memmem", "replace", "conceal", "conceal/memmem", "conceal/replace"
    );
    for (kind, sized) in texts {
        let mut per_byte = Vec::new();
        for (size, text) in sizes().iter().zip(sized) {
            let [floor, naive, ours] = medians(&contestants, text);
            per_byte.push((floor / *size as f64, ours / *size as f64));
            println!(
                "{:<14} {:>6} {:>8.2} {:>8.2} {:>8.2} {:>13.2}x {:>14.2}x",
                kind.name,
                label(*size),
                gibs(*size, floor),
                gibs(*size, naive),
                gibs(*size, ours),
                ours / floor,
                ours / naive,
            );
        }
        // Linear growth: the time per byte at 16 MiB over that at 64 KiB.
        // A quadratic path would show ~256x here; cache misses alone, which
        // slow the floor too, show a little over 1x.
        let (first, last) = (per_byte[0], per_byte[per_byte.len() - 1]);
        println!(
            "{:<14} growth 64KiB -> 16MiB, time per byte: conceal {:.2}x, memmem {:.2}x",
            kind.name,
            last.1 / first.1,
            last.0 / first.0,
        );
    }
}

/// True when cargo runs this as a benchmark (`cargo bench`), not as a test
/// (`cargo test --all-targets` runs each benchmark once and must stay fast).
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    has("--bench") && !has("--test") && !has("--list") && !has("--profile-time")
}

/// The filter given on the command line, if any: criterion's one positional
/// argument.
fn filter() -> Option<String> {
    std::env::args().skip(1).find(|a| !a.starts_with('-'))
}

/// Conceals every text that holds the token once: none may come out with a
/// form of it left, and `generated` and `echoes` must come out with one
/// marker per echo (every form but base64 ends with `9zQ7vX2kP9zR4tL8wN`;
/// an echo the text's end cuts short is no token, and stays), or the
/// figures would be for a concealer that misses.
fn check_concealed(texts: &[(&Kind, Vec<String>)]) {
    for form in JSON_FORMS {
        let decoded: String = serde_json::from_str(&format!("\"{form}\"")).expect("a JSON string");
        assert_eq!(decoded, TOKEN, "{form} is the token JSON-escaped");
    }
    let concealer = Contestants::new().concealer;
    let tail = &TOKEN[TOKEN.len() - 18..];
    let base64 = STANDARD.encode(format!("Bearer {TOKEN}"));
    for (kind, sized) in texts {
        if !matches!(kind.name, "generated" | "echoes" | "dense") {
            continue;
        }
        for text in sized {
            let concealed = concealer.conceal(text);
            let name = kind.name;
            assert!(
                !concealed.contains(tail) && !concealed.contains(&base64),
                "{name}: a form of the token is left"
            );
            if name != "dense" {
                let echoes = text.matches(tail).count();
                assert!(echoes > 0, "{name}: the text echoes the token");
                assert_eq!(
                    concealed.matches(REDACTED).count(),
                    echoes,
                    "{name}: one marker per echo"
                );
            }
        }
    }
}

fn main() {
    let texts: Vec<(&Kind, Vec<String>)> = KINDS
        .iter()
        .map(|kind| (kind, sizes().iter().map(|&size| text(kind, size)).collect()))
        .collect();
    check_concealed(&texts);
    let mut criterion = Criterion::default().configure_from_args();
    build_group(&mut criterion);
    secret_group(&mut criterion);
    criterion_groups(&mut criterion, &texts);
    #[cfg(fuzzing)]
    stream_group(&mut criterion, &texts);
    criterion.final_summary();
    if measuring() && filter().is_none_or(|f| f == "ratio") {
        ratio_table(&texts);
    }
    if measuring() && filter().is_none_or(|f| f == "ratio" || f == "secret") {
        secret_ratio();
    }
    #[cfg(fuzzing)]
    if measuring() && filter().is_none_or(|f| f == "ratio" || f == "stream") {
        stream_ratio(&texts);
    }
}
