//! `--stream`: the answer read as it arrives, picked by its `content-type`
//! (`text/event-stream` as events, `application/x-ndjson` or
//! `application/jsonl` as lines, anything else as chunks), each printed as
//! it comes, then one summary.
//!
//! Prose prints each event's data (each line, each chunk) as it arrives;
//! `--json` prints one JSON object per line, `atMs` the milliseconds since
//! the send began, and last either `{"end": {…}}` (with how the stream
//! ended: `done`, `body` or `unfinished`) or the refusal's report.
//!
//! What is printed is not kept: a stream of any length is read in the
//! memory of one piece, as a predictor reads it.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use meterwire::{AnswerStream, Ending, HttpTransport, Refusal, Usage};
use serde::Serialize;

use crate::show::{self, Style};

/// How the probe reads a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    Events,
    Lines,
    Chunks,
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
    /// `done`, `body` or `unfinished`.
    ended: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    unfinished_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
}

/// How `ending` reads in the end record, and the bytes of an unfinished
/// event.
fn ended(ending: Option<Ending>) -> (&'static str, Option<u64>) {
    match ending {
        Some(Ending::Done) => ("done", None),
        Some(Ending::Unfinished { bytes }) => ("unfinished", Some(bytes)),
        // A stream read to its end without a refusal has an ending; `body`
        // is what any other ending a later version names comes closest to.
        _ => ("body", None),
    }
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
    started: Instant,
    keep: bool,
    mut each: impl FnMut(Piece<'_>, Duration),
) -> Read {
    let reading = Reading::of(&stream);
    let status = stream.status();
    let mut joined = String::new();
    let mut pieces = 0;
    let mut join = |text: &str| {
        if keep {
            if !joined.is_empty() && reading != Reading::Chunks {
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
}

pub async fn stream_once(
    transport: &HttpTransport,
    body: Bytes,
    expect_done: bool,
    json: bool,
    style: &Style,
) -> ExitCode {
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
    let read = read_all(stream, started, false, |piece, at| {
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
            };
            crate::print_json(&line);
        } else {
            let text = match piece {
                Piece::Event(event) => event.data(),
                Piece::Line(line) | Piece::Chunk(line) => line,
            };
            out!("{}", show::tame(text, false));
        }
    })
    .await;
    if let Some(refusal) = read.refusal {
        return crate::refused(&refusal, json, style);
    }
    let meter = transport.meter();
    let (ended, unfinished_bytes) = ended(read.ending);
    let end = End {
        status: read.status,
        events: read.pieces,
        bytes: meter.bytes_received(),
        first_byte_ms: meter
            .first_byte(1.0)
            .map(|after| (after.as_secs_f64() * 10_000.0).round() / 10.0),
        elapsed_ms: crate::millis(started.elapsed()),
        ended,
        unfinished_bytes,
        usage: read.usage,
    };
    if json {
        crate::print_json(&EndJson { end });
    } else {
        let how = match (end.ended, end.unfinished_bytes) {
            ("done", _) => "at [DONE]".to_owned(),
            (_, Some(bytes)) => format!("inside an event, {bytes} bytes of it not shown"),
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
