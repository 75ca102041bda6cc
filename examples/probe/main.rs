//! The probe: ask an engine one question the way a predictor would, and say
//! what came back (its manual is `examples/probe/README.md`).
//!
//! It is built on the crate's public API alone, so it is also the proof that
//! the API is enough: every string it prints about a refusal is the
//! library's own, already concealed, and it prints nothing else read from the
//! environment (no address, no variable value), because anything the probe
//! formatted itself from the environment would bypass the concealer.
//!
//! ```text
//! cargo run --example probe -- --embedded          # the tour, against an engine of its own
//! cargo run --example probe                        # one send to the engine in CHANT_BEHAVIOUR_ENGINE
//! cargo run --example probe -- --repeat 200 --concurrency 8 --json
//! ```

/// `println!` that does not panic when stdout is closed early (`probe |
/// head`): what is left to print is dropped, and the exit status stands.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod bills;
mod embedded;
mod repeat;
mod show;
mod stream;
mod stream_engine;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, value_parser};
use meterwire::{Cause, Env, HttpTransport, HttpTransportBuilder, Naming, Refusal, RetryPolicy};
use serde::Serialize;

use crate::show::Style;

const EXIT_STATUSES: &str = "\
Exit status:
  0  an answer (with --repeat or --embedded: the run completed)
  1  with --repeat: some send never came back (its task panicked or was
     lost); the summary counts them as lost
  2  a bad command line (an unknown option, an unreadable --body @FILE or
     --ca-cert, a naming or scope that cannot name variables)
  3  no-engine             no address, no usable token, or the token was rejected (401/403)
  4  engine-unreachable    the engine did not answer the question (refused, deadline, 3xx, 5xx, ...)
  5  engine-out-of-credit  the engine answered 402: the account is empty
  6  engine-over-quota     the engine answered 429: a limit is spent

Variables (default naming, scope \"probe\"), most specific first:
  address  CHANT_BEHAVIOUR_ENGINE_PROBE, CHANT_BEHAVIOUR_ENGINE, BEHAVIOUR_ENGINE
  token    CHANT_BEHAVIOUR_TOKEN_PROBE,  CHANT_BEHAVIOUR_TOKEN,  BEHAVIOUR_TOKEN
Each token variable has a _FILE twin naming a file that holds the token
(CHANT_BEHAVIOUR_TOKEN_FILE=/run/secrets/engine); set one of the two.

The token is never printed, in any mode: refusals name the variable that held it.
Warnings (a token file that could not be read, ...) go to stderr, never stdout;
RUST_LOG sets the level (default: warn).";

/// Probe a metered HTTP engine the way a predictor would, and say what came
/// back: an answer, or a refusal with its cause, reason and remedy.
#[derive(Parser, Debug)]
#[command(name = "probe", version, after_help = EXIT_STATUSES)]
struct Args {
    /// The scope (the predictor's name) whose variables are read first:
    /// PREFIX_ENGINE_<SCOPE> and PREFIX_TOKEN_<SCOPE>
    #[arg(long, value_name = "NAME", default_value = "probe")]
    scope: String,

    /// The prefix of the variables: PREFIX_ENGINE, PREFIX_TOKEN
    #[arg(long, value_name = "PREFIX", default_value = "CHANT_BEHAVIOUR")]
    prefix: String,

    /// The stem of the last variable of each chain: STEM_ENGINE, STEM_TOKEN
    #[arg(long, value_name = "STEM", default_value = "BEHAVIOUR")]
    stem: String,

    /// The request body, sent byte for byte: the text itself, or @FILE for
    /// the bytes of FILE
    #[arg(long, value_name = "TEXT|@FILE", default_value = "{}")]
    body: String,

    /// The deadline of one send, in milliseconds, covering connect, headers
    /// and the whole body
    #[arg(long, value_name = "N", default_value_t = 30_000,
          value_parser = value_parser!(u64).range(1..))]
    timeout_ms: u64,

    /// The largest answer accepted, in bytes; a larger one is refused
    #[arg(long, value_name = "N", default_value_t = 33_554_432,
          value_parser = value_parser!(u64).range(1..))]
    max_answer_bytes: u64,

    /// Trust one more certificate authority (a PEM file), for an engine
    /// whose certificate a private authority signed
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,

    /// Allow the token over plain http to a host that is not loopback
    /// (dangerous: anyone on the path can read the token and spend the account)
    #[arg(long)]
    allow_plaintext: bool,

    /// Print exactly one JSON document on stdout instead of prose;
    /// diagnostics go to stderr
    #[arg(long)]
    json: bool,

    /// Send N times (at most 1 000 000) through one transport and report
    /// answers, refusals by cause, throughput and latency
    #[arg(long, value_name = "N",
          value_parser = value_parser!(u64).range(1..=repeat::MAX_REPEAT))]
    repeat: Option<u64>,

    /// With --repeat: how many sends are in flight at once (at most 1024)
    /// [default: 1]
    #[arg(long, value_name = "C", requires = "repeat",
          value_parser = value_parser!(u64).range(1..=repeat::MAX_CONCURRENCY))]
    concurrency: Option<u64>,

    /// With --repeat: each worker starts a send at most once every N
    /// milliseconds, the pace of a predictor rather than a load test
    #[arg(long, value_name = "N", requires = "repeat",
          value_parser = value_parser!(u64).range(1..=3_600_000))]
    every_ms: Option<u64>,

    /// Keep the engine's hold in the Redis at URL (redis://host:6379/) as
    /// well, shared by every process that names it: a 429 one process sees
    /// holds them all (needs the probe built with --features redis)
    #[arg(long, value_name = "URL")]
    shared_hold: Option<String>,

    /// A non-secret header on every request, as NAME:VALUE (repeatable), such
    /// as an engine's version header
    #[arg(long = "header", value_name = "NAME:VALUE")]
    headers: Vec<String>,

    /// Read the answer as a stream, each piece as it arrives: events for
    /// text/event-stream, lines for application/x-ndjson, chunks otherwise
    #[arg(long, conflicts_with = "repeat")]
    stream: bool,

    /// With --stream: the longest gap between bytes after the first, in
    /// milliseconds
    #[arg(long, value_name = "N", requires = "stream", default_value_t = 30_000,
          value_parser = value_parser!(u64).range(1..))]
    idle_ms: u64,

    /// With --stream: the deadline of the whole stream, in milliseconds
    #[arg(long, value_name = "N", requires = "stream", default_value_t = 600_000,
          value_parser = value_parser!(u64).range(1..))]
    stream_deadline_ms: u64,

    /// With --stream: print the generated text the library reads from the
    /// stream (each engine's shape), piece by piece, in place of its events,
    /// lines or chunks
    #[arg(long, requires = "stream")]
    delta: bool,

    /// With --stream: the engine must end the stream with [DONE]; a stream
    /// whose body ends without it is refused (engine-unreachable, exit 4)
    #[arg(long, requires = "stream")]
    expect_done: bool,

    /// A retry policy of at most N attempts per send (1 is none), with no
    /// idempotency key: only where a retry cannot double a bill (nothing
    /// reached the engine, or it asked for the retry with a hint)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = value_parser!(u32).range(1..=10))]
    retries: u32,

    /// Start an engine on 127.0.0.1 in this process and walk every row of the
    /// wire table against it (answer, no token, 401, 403, 402, 429,
    /// 503, a redirect, connection refused, the deadline, ...), with a token
    /// of the probe's own
    #[arg(long, conflicts_with_all = [
        "repeat", "concurrency", "timeout_ms", "max_answer_bytes", "ca_cert", "allow_plaintext",
        "headers", "retries", "stream", "shared_hold",
    ])]
    embedded: bool,
}

fn main() -> ExitCode {
    // Usage errors exit 2 and `--help` exits 0, both from clap.
    let args = Args::parse();
    install_logging(args.embedded);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: the async runtime could not start: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(code) => code,
        Err(Usage(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The crate's `WARN` events and above (a token file that could not be
/// read, a shared hold that did not answer) on stderr, so that stdout stays
/// one document with `--json`; `RUST_LOG` sets another level. The tour
/// stages its failures on purpose, and its table says what each row
/// came to, so it logs only when `RUST_LOG` asks.
fn install_logging(tour: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if tour { "off" } else { "warn" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// A command line that parsed but cannot run; exits 2 with this message.
struct Usage(String);

const EXIT_USAGE: u8 = 2;

/// A `--repeat` run in which some send never came back.
const EXIT_LOST: u8 = 1;

/// The exit status of a refusal, by cause.
fn exit_for(cause: Cause) -> ExitCode {
    ExitCode::from(match cause {
        Cause::NoEngine => 3,
        Cause::EngineUnreachable => 4,
        Cause::EngineOutOfCredit => 5,
        Cause::EngineOverQuota => 6,
    })
}

async fn run(args: Args) -> Result<ExitCode, Usage> {
    let naming = Naming::new(&args.prefix, &args.stem)
        .map_err(|error| Usage(format!("--prefix/--stem: {error}")))?;
    let body = read_body(&args.body)?;
    let style = Style::for_stdout();

    if args.embedded {
        return embedded::tour(&args.scope, &naming, body, args.json, &style).await;
    }

    let transport = build(&args, naming)?;
    match args.repeat {
        Some(sends) => {
            let concurrency = args.concurrency.unwrap_or(1);
            let every = args.every_ms.map(Duration::from_millis);
            let summary = repeat::run(&transport, body, sends, concurrency, every).await;
            if args.json {
                print_json(&summary.to_json());
            } else {
                summary.print(&style);
            }
            Ok(if summary.completed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_LOST)
            })
        }
        None if args.stream => {
            let asked = stream::Asked {
                expect_done: args.expect_done,
                delta: args.delta,
                json: args.json,
            };
            Ok(stream::stream_once(&transport, body, asked, &style).await)
        }
        None => Ok(send_once(&transport, body, args.json, &style).await),
    }
}

/// The body as given, or the bytes of the file after `@`.
fn read_body(arg: &str) -> Result<Bytes, Usage> {
    match arg.strip_prefix('@') {
        Some(path) => std::fs::read(path).map(Bytes::from).map_err(|error| {
            Usage(format!(
                "--body @{path}: the file cannot be read ({error}); give a readable file after @, or the body itself as text"
            ))
        }),
        None => Ok(Bytes::copy_from_slice(arg.as_bytes())),
    }
}

/// The transport of a single send or a `--repeat` run, reading the real
/// process environment as a predictor would.
fn build(args: &Args, naming: Naming) -> Result<HttpTransport, Usage> {
    let mut builder = HttpTransport::builder(args.scope.as_str())
        .naming(naming)
        .env(Env::from_process())
        .deadline(Duration::from_millis(args.timeout_ms))
        .max_answer_bytes(args.max_answer_bytes)
        .danger_allow_plaintext_http(args.allow_plaintext)
        .idle_timeout(Duration::from_millis(args.idle_ms))
        .stream_deadline(Duration::from_millis(args.stream_deadline_ms));
    if args.retries > 1 {
        builder = builder.retries(RetryPolicy::new().max_attempts(args.retries));
    }
    for header in &args.headers {
        let Some((name, value)) = header.split_once(':') else {
            return Err(Usage(format!(
                "--header {}: give it as NAME:VALUE, for example --header engine-version:2025-01-01",
                header.split(':').next().unwrap_or_default()
            )));
        };
        builder = builder.header(name.trim(), value.trim());
    }
    if let Some(path) = &args.ca_cert {
        let pem = std::fs::read(path).map_err(|error| {
            Usage(format!(
                "--ca-cert {}: the file cannot be read ({error}); give the path of the authority's PEM certificate",
                path.display()
            ))
        })?;
        builder = builder.add_ca_certificate_pem(pem);
    }
    if let Some(url) = &args.shared_hold {
        builder = shared_hold(builder, url)?;
    }
    builder.build().map_err(|error| Usage(build_error(&error)))
}

#[cfg(feature = "redis")]
fn shared_hold(builder: HttpTransportBuilder, url: &str) -> Result<HttpTransportBuilder, Usage> {
    Ok(builder.shared_hold(url))
}

#[cfg(not(feature = "redis"))]
fn shared_hold(_: HttpTransportBuilder, _: &str) -> Result<HttpTransportBuilder, Usage> {
    Err(Usage(
        "--shared-hold: this probe was built without the redis feature; run it as \
         cargo run --features redis --example probe -- --shared-hold URL ..."
            .to_owned(),
    ))
}

/// A build error with the option to fix in front of it.
fn build_error(error: &meterwire::BuildError) -> String {
    match error {
        meterwire::BuildError::Scope(_) => format!("--scope: {error}"),
        meterwire::BuildError::CaCertificate(_) => format!("--ca-cert: {error}"),
        meterwire::BuildError::ZeroDeadline => format!("--timeout-ms: {error}"),
        meterwire::BuildError::ZeroCap => format!("--max-answer-bytes: {error}"),
        meterwire::BuildError::Header(_) => format!("--header: {error}"),
        #[cfg(feature = "redis")]
        meterwire::BuildError::SharedHold(_) => format!("--shared-hold: {error}"),
        _ => error.to_string(),
    }
}

async fn send_once(transport: &HttpTransport, body: Bytes, json: bool, style: &Style) -> ExitCode {
    let started = Instant::now();
    let outcome = transport.send(body).await;
    let elapsed_ms = millis(started.elapsed());
    match outcome {
        Ok(answer) => {
            if json {
                print_json(&AnswerJson::new(&answer, elapsed_ms));
            } else {
                show::print_answer(&answer, elapsed_ms, style);
            }
            ExitCode::SUCCESS
        }
        Err(refusal) => refused(&refusal, json, style),
    }
}

/// Prints a refusal (its report with `--json`) and gives its exit status.
fn refused(refusal: &Refusal, json: bool, style: &Style) -> ExitCode {
    if json {
        print_json(&refusal.report());
    } else {
        show::print_refusal(refusal, style);
    }
    exit_for(refusal.cause())
}

/// `{"answer": "<concealed text>", "status": 200, "elapsedMs": 12,
/// "attempts": 1, "usage": {"input": 9, "output": 12, "total": 21}}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AnswerJson<'a> {
    answer: &'a str,
    status: u16,
    elapsed_ms: u64,
    attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<&'a str>,
    /// What the engine said it billed: `{"input", "output", "cached",
    /// "reasoning", "total"}`, the counts it lacks left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<meterwire::Usage>,
}

impl<'a> AnswerJson<'a> {
    fn new(answer: &'a meterwire::Answer, elapsed_ms: u64) -> AnswerJson<'a> {
        AnswerJson {
            answer: answer.text(),
            status: answer.status(),
            elapsed_ms,
            attempts: answer.attempts(),
            request_id: answer.request_id(),
            usage: answer.usage(),
        }
    }
}

/// The outcome of one send, as `--json` prints it: the report of a refusal,
/// or the answer object.
#[derive(Serialize)]
#[serde(untagged)]
enum OutcomeJson<'a> {
    Answer(AnswerJson<'a>),
    Refusal(meterwire::Report),
}

impl<'a> OutcomeJson<'a> {
    fn new(outcome: &'a Result<meterwire::Answer, Refusal>, elapsed_ms: u64) -> OutcomeJson<'a> {
        match outcome {
            Ok(answer) => OutcomeJson::Answer(AnswerJson::new(answer, elapsed_ms)),
            Err(refusal) => OutcomeJson::Refusal(refusal.report()),
        }
    }
}

/// Prints one JSON document on stdout, the only thing `--json` prints there.
fn print_json(value: &impl Serialize) {
    match serde_json::to_string(value) {
        Ok(text) => out!("{text}"),
        // Plain strings and numbers always serialize; say so if that changes.
        Err(error) => eprintln!("error: the JSON document could not be written: {error}"),
    }
}

fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}
