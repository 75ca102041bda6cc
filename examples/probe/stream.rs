//! `--stream`: the answer read as it arrives, picked by its `content-type`
//! (`text/event-stream` as events, `application/x-ndjson` or
//! `application/jsonl` as lines, anything else as chunks), each printed as
//! it comes, then one summary; with `--delta`, the generated text the
//! library reads from those (`next_delta`), piece by piece.
//!
//! Prose prints each event's data (each line, each chunk) as it arrives,
//! or the deltas' text, each part and choice after a label; `--json`
//! prints one JSON object per line, `atMs` the milliseconds since the send
//! began, and last either `{"end": {…}}` (with how the stream ended:
//! `done`, `body` or `unfinished`) or the refusal's report.
//!
//! What is printed is not kept: a stream of any length is read in the
//! memory of one piece, as a predictor reads it.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use meterwire::{AnswerStream, Delta, Ending, HttpTransport, Part, Refusal, Usage};
use serde::Serialize;

use crate::show::{self, Style};

/// How the probe reads a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    Events,
    Lines,
    Chunks,
    /// The generated text, as the library reads it from any of those.
    Deltas,
}

impl Reading {
    /// As its `content-type` says.
    pub fn of(stream: &AnswerStream) -> Reading {
        let media = stream
            .content_type()
            .and_then(|value| value.split(';').next())
            .map(|media| media.trim().to_ascii_lowercase());
        match media.as_deref() {
            Some("text/event-stream") => Reading::Events,
            Some("application/x-ndjson" | "application/jsonl") => Reading::Lines,
            _ => Reading::Chunks,
        }
    }
}

/// One piece as `--json` prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
#[serde(untagged)]
enum PieceJson<'a> {
    Event {
        event: &'a str,
        data: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        #[serde(rename = "atMs")]
        at_ms: f64,
    },
    Line {
        line: &'a str,
        #[serde(rename = "atMs")]
        at_ms: f64,
    },
    Chunk {
        chunk: &'a str,
        #[serde(rename = "atMs")]
        at_ms: f64,
    },
    Delta {
        delta: DeltaJson<'a>,
        #[serde(rename = "atMs")]
        at_ms: f64,
    },
}

/// A delta as `--json` prints it: `{"choice": 0, "part": "text", "text":
/// "…"}`, a tool call's part `toolArguments` with its `call`.
#[derive(Serialize)]
struct DeltaJson<'a> {
    choice: u32,
    part: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    call: Option<u32>,
    text: &'a str,
}

impl<'a> DeltaJson<'a> {
    fn of(delta: &'a Delta) -> DeltaJson<'a> {
        let (part, call) = part_name(delta.part());
        DeltaJson {
            choice: delta.choice(),
            part,
            call,
            text: delta.text(),
        }
    }
}

/// A part's name in the probe's output, and its tool call.
fn part_name(part: Part) -> (&'static str, Option<u32>) {
    match part {
        Part::Text => ("text", None),
        Part::Reasoning => ("reasoning", None),
        Part::ToolArguments { call } => ("toolArguments", Some(call)),
        // A part a later version names.
        _ => ("other", None),
    }
}

#[derive(Serialize)]
struct EndJson {
    end: End,
}

/// How a stream ended cleanly.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct End {
    status: u16,
    events: u64,
    bytes: u64,
    first_byte_ms: Option<f64>,
    elapsed_ms: u64,
    /// `"ended"`, and `"unfinishedBytes"` for an unfinished event, as the
    /// library writes an ending.
    #[serde(flatten)]
    ending: Ending,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
}

/// What a stream came to, read to its end: every piece it yielded, joined
/// (when asked to keep them), how it ended, and the refusal it ended in, if
/// any.
pub struct Read {
    pub status: u16,
    pub joined: String,
    pub pieces: u64,
    pub ending: Option<Ending>,
    pub refusal: Option<Refusal>,
    /// What the stream's events said the engine billed.
    pub usage: Option<Usage>,
}

/// Reads `stream` to its end, handing each piece (with the time since
/// `started`) to `each`, and joining them when `keep` (the tour shows a
/// stream as the answer it made; a printed stream keeps nothing).
// A refusal is as large as what it says.
#[allow(clippy::result_large_err)]
pub async fn read_all(
    mut stream: AnswerStream,
    reading: Reading,
    started: Instant,
    keep: bool,
    mut each: impl FnMut(Piece<'_>, Duration),
) -> Read {
    let status = stream.status();
    let mut joined = String::new();
    let mut pieces = 0;
    let mut join = |text: &str| {
        if keep {
            if !joined.is_empty() && !matches!(reading, Reading::Chunks | Reading::Deltas) {
                joined.push('\n');
            }
            joined.push_str(text);
        }
    };
    let refusal = loop {
        let next = match reading {
            Reading::Events => stream.next_event().await.map(|event| {
                event.map(|event| {
                    each(Piece::Event(&event), started.elapsed());
                    join(event.data());
                })
            }),
            Reading::Lines => stream.next_line().await.map(|line| {
                line.map(|line| {
                    each(Piece::Line(&line), started.elapsed());
                    join(&line);
                })
            }),
            Reading::Chunks => stream.next_chunk().await.map(|chunk| {
                chunk.map(|chunk| {
                    each(Piece::Chunk(&chunk), started.elapsed());
                    join(&chunk);
                })
            }),
            Reading::Deltas => stream.next_delta().await.map(|delta| {
                delta.map(|delta| {
                    each(Piece::Delta(&delta), started.elapsed());
                    join(delta.text());
                })
            }),
        };
        match next {
            Some(Ok(())) => pieces += 1,
            Some(Err(refusal)) => break Some(refusal),
            None => break None,
        }
    };
    Read {
        status,
        joined,
        pieces,
        ending: stream.ending(),
        refusal,
        usage: stream.usage(),
    }
}

/// One piece a stream yielded.
pub enum Piece<'a> {
    Event(&'a meterwire::Event),
    Line(&'a str),
    Chunk(&'a str),
    Delta(&'a Delta),
}

/// How `--stream` reads: the call's options and the output's.
pub struct Asked {
    pub expect_done: bool,
    /// `--delta`: the generated text, not the stream's pieces.
    pub delta: bool,
    pub json: bool,
}

/// The label a run of prose deltas of this choice and part starts with:
/// none for the first choice's text.
fn label(delta: &Delta) -> Option<String> {
    let part = match part_name(delta.part()) {
        ("text", _) => None,
        (_, Some(call)) => Some(format!("tool call {call}")),
        (name, None) => Some(name.to_owned()),
    };
    match (delta.choice(), part) {
        (0, part) => part,
        (choice, None) => Some(format!("choice {choice}")),
        (choice, Some(part)) => Some(format!("choice {choice}, {part}")),
    }
}

pub async fn stream_once(
    transport: &HttpTransport,
    body: Bytes,
    asked: Asked,
    style: &Style,
) -> ExitCode {
    let Asked {
        expect_done,
        delta,
        json,
    } = asked;
    let started = Instant::now();
    let call = transport.call(body);
    let call = if expect_done {
        call.expect_done()
    } else {
        call
    };
    let stream = match call.stream().await {
        Ok(stream) => stream,
        Err(refusal) => return crate::refused(&refusal, json, style),
    };
    let reading = if delta {
        Reading::Deltas
    } else {
        Reading::of(&stream)
    };
    // The choice and part the prose deltas last printed, and whether a
    // line is open.
    let mut run: Option<(u32, Part)> = None;
    let read = read_all(stream, reading, started, false, |piece, at| {
        let at_ms = (at.as_secs_f64() * 10_000.0).round() / 10.0;
        if json {
            let line = match piece {
                Piece::Event(event) => PieceJson::Event {
                    event: event.event().unwrap_or("message"),
                    data: event.data(),
                    id: event.id(),
                    at_ms,
                },
                Piece::Line(line) => PieceJson::Line { line, at_ms },
                Piece::Chunk(chunk) => PieceJson::Chunk { chunk, at_ms },
                Piece::Delta(delta) => PieceJson::Delta {
                    delta: DeltaJson::of(delta),
                    at_ms,
                },
            };
            crate::print_json(&line);
        } else if let Piece::Delta(delta) = piece {
            print_delta(delta, &mut run, style);
        } else {
            let text = match piece {
                Piece::Event(event) => event.data(),
                Piece::Line(line) | Piece::Chunk(line) => line,
                Piece::Delta(delta) => delta.text(),
            };
            out!("{}", show::tame(text, false));
        }
    })
    .await;
    if run.is_some() {
        out!();
    }
    if let Some(refusal) = read.refusal {
        return crate::refused(&refusal, json, style);
    }
    let meter = transport.meter();
    let end = End {
        status: read.status,
        events: read.pieces,
        bytes: meter.bytes_received(),
        first_byte_ms: meter
            .first_byte(1.0)
            .map(|after| (after.as_secs_f64() * 10_000.0).round() / 10.0),
        elapsed_ms: crate::millis(started.elapsed()),
        // A stream read to its end without a refusal has an ending.
        ending: read.ending.unwrap_or(Ending::Body),
        usage: read.usage,
    };
    if json {
        crate::print_json(&EndJson { end });
    } else {
        let how = match end.ending {
            Ending::Done => "at [DONE]".to_owned(),
            Ending::Unfinished { bytes } => {
                format!("inside an event, {bytes} bytes of it not shown")
            }
            // The body, or an ending a later version names.
            _ => "at the end of the body, without [DONE]".to_owned(),
        };
        out!(
            "{}  HTTP {}, {} pieces, {} bytes, the first after {} ms, {} ms in all, ended {how}",
            style.good("stream ended"),
            end.status,
            end.events,
            end.bytes,
            end.first_byte_ms
                .map_or("no".to_owned(), |ms| ms.to_string()),
            end.elapsed_ms
        );
        if let Some(usage) = &end.usage {
            out!("  {}  {}", style.bold("usage"), show::usage_words(usage));
        }
    }
    ExitCode::SUCCESS
}

/// One delta in prose: its text as it arrives, a new line with a label
/// where the choice or the part changes.
fn print_delta(delta: &Delta, run: &mut Option<(u32, Part)>, style: &Style) {
    use std::io::Write as _;
    let now = (delta.choice(), delta.part());
    let mut stdout = std::io::stdout().lock();
    if *run != Some(now) {
        if run.is_some() {
            let _ = writeln!(stdout);
        }
        if let Some(label) = label(delta) {
            let _ = write!(stdout, "{}  ", style.bold(&label));
        }
        *run = Some(now);
    }
    let _ = write!(stdout, "{}", show::tame(delta.text(), false));
    let _ = stdout.flush();
}
