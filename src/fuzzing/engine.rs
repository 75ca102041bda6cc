use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::HeaderMap;

use super::headers;
use crate::config::env::Env;
use crate::lock::Unpoisoned;
use crate::refusal::failure::Failure;
use crate::refusal::site::Site;
use crate::retry::RetryPolicy;
use crate::transport::HttpTransport;
use crate::transport::deadline::Deadline;
use crate::transport::incoming::Incoming;
use crate::transport::post::Post;
use crate::transport::run::Options;

/// How a body ends after its last piece.
#[derive(Clone, Copy, Debug)]
pub enum End {
    Clean,
    Reset,
    /// Nothing more, ever: the deadline ends it.
    Stall,
}

/// One piece of a body, after `delay_ms` of silence.
#[derive(Clone, Debug)]
pub struct Piece {
    pub delay_ms: u16,
    pub bytes: Vec<u8>,
}

/// What the engine does with one attempt.
#[derive(Clone, Debug)]
pub enum Reply {
    /// No answer's head: `0` refused, `1` host not found, `2` reset,
    /// `3` TLS, anything else a connect failure.
    Fail(u8),
    /// A head after `delay_ms`, then a body.
    Answer {
        delay_ms: u16,
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        content_length: Option<u64>,
        pieces: Vec<Piece>,
        end: End,
    },
}

/// Everything about one run.
#[derive(Clone, Debug)]
pub struct Script {
    pub token: String,
    pub replies: Vec<Reply>,
    pub sends: u8,
    pub attempts: u32,
    pub keys: bool,
    pub deadline_ms: u32,
    pub cap: u32,
    pub latch: bool,
    pub max_hold_s: u32,
    /// How each answer is read: `0` whole, `1` as chunks, `2` as
    /// events, `3` as lines.
    pub read: u8,
    pub idle_ms: u32,
}

/// What one send came to, as text: the answer's or the refusal's every
/// string, which must hold no form of the token.
#[derive(Clone, Debug)]
pub struct Sent {
    pub answered: bool,
    pub attempts: u32,
    pub texts: Vec<String>,
}

struct Scripted {
    replies: Mutex<VecDeque<Reply>>,
}

struct Body {
    status: u16,
    headers: HeaderMap,
    content_length: Option<u64>,
    pieces: VecDeque<Piece>,
    end: End,
}

impl Incoming for Body {
    fn status(&self) -> u16 {
        self.status
    }

    fn take_headers(&mut self) -> HeaderMap {
        std::mem::take(&mut self.headers)
    }

    fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
        match self.pieces.pop_front() {
            Some(piece) => {
                tokio::time::sleep(Duration::from_millis(u64::from(piece.delay_ms))).await;
                Ok(Some(Bytes::from(piece.bytes)))
            }
            None => match self.end {
                End::Clean => Ok(None),
                End::Reset => Err(Failure::ConnectionReset),
                End::Stall => std::future::pending().await,
            },
        }
    }
}

impl Post for Scripted {
    type Reply = Body;

    async fn post(
        &self,
        _site: &Site,
        _headers: HeaderMap,
        _body: Bytes,
        deadline: Deadline,
    ) -> Result<Body, Failure> {
        let next = self.replies.lock_unpoisoned().pop_front();
        let reply = next.unwrap_or(Reply::Fail(0));
        match reply {
            Reply::Fail(0) => Err(Failure::ConnectionRefused),
            Reply::Fail(1) => Err(Failure::HostNotFound),
            Reply::Fail(2) => Err(Failure::ConnectionReset),
            Reply::Fail(3) => Err(Failure::Tls("the engine's certificate was rejected")),
            Reply::Fail(_) => Err(Failure::Connect),
            Reply::Answer {
                delay_ms,
                status,
                headers: pairs,
                content_length,
                pieces,
                end,
            } => {
                let head = tokio::time::sleep(Duration::from_millis(u64::from(delay_ms)));
                if tokio::time::timeout_at(deadline.at(), head).await.is_err() {
                    return Err(Failure::Deadline { ms: deadline.ms() });
                }
                let pairs: Vec<(&str, &[u8])> = pairs
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.as_slice()))
                    .collect();
                Ok(Body {
                    status,
                    headers: headers(&pairs),
                    content_length,
                    pieces: pieces.into(),
                    end,
                })
            }
        }
    }
}

/// One send read as a stream, by chunks (`1`), events (`2`) or lines
/// (`3`), to its end or its refusal.
async fn read_stream(transport: &HttpTransport, post: &Scripted, read: u8) -> Sent {
    let opened = transport
        .open_with(post, Bytes::from_static(b"{}"), Options::default())
        .await;
    let mut stream = match opened {
        Ok(stream) => stream,
        Err(refusal) => return refused(&refusal),
    };
    let mut texts = vec![format!("{stream:?}")];
    loop {
        let next = match read {
            1 => stream.next_chunk().await,
            2 => stream
                .next_event()
                .await
                .map(|event| event.map(|event| format!("{event:?}"))),
            _ => stream.next_line().await,
        };
        match next {
            Some(Ok(text)) => texts.push(text),
            Some(Err(refusal)) => {
                let mut sent = refused(&refusal);
                sent.texts.extend(texts);
                // Nothing more after a refusal.
                sent.answered = stream.next_chunk().await.is_none();
                return sent;
            }
            None => {
                return Sent {
                    answered: true,
                    attempts: 1,
                    texts,
                };
            }
        }
    }
}

fn refused(refusal: &crate::refusal::Refusal) -> Sent {
    Sent {
        answered: false,
        attempts: refusal.attempts(),
        texts: vec![
            refusal.to_string(),
            format!("{refusal:?}"),
            refusal.report().to_json(),
        ],
    }
}

/// Runs the script's sends, one after another, on a runtime whose clock
/// only moves when everything waits (so a minute's stall costs
/// nothing), and says what each came to.
pub fn send_all(script: Script) -> Vec<Sent> {
    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .ok()
    });
    let Some(runtime) = runtime else {
        return Vec::new();
    };
    let env = Env::from_pairs([
        ("CHANT_BEHAVIOUR_ENGINE", "http://127.0.0.1:9/v1"),
        ("CHANT_BEHAVIOUR_TOKEN", script.token.as_str()),
    ]);
    let mut builder = HttpTransport::builder("fuzz")
        .env(env)
        .deadline(Duration::from_millis(u64::from(script.deadline_ms.max(1))))
        .max_answer_bytes(u64::from(script.cap.max(1)))
        .max_hold(Duration::from_secs(u64::from(script.max_hold_s)))
        .retries(
            RetryPolicy::new()
                .max_attempts(script.attempts.clamp(1, 4))
                .idempotency_keys(script.keys),
        );
    if script.latch {
        builder = builder.latch(Duration::from_secs(60));
    }
    builder = builder
        .idle_timeout(Duration::from_millis(u64::from(script.idle_ms.max(1))))
        .stream_deadline(Duration::from_secs(600));
    // One client for every input: the script replaces what it does.
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    let client = CLIENT
        .get_or_init(|| {
            let tls = crate::transport::tls::client_config(Vec::new()).expect("TLS on ring");
            reqwest::Client::builder()
                .tls_backend_preconfigured(tls)
                .build()
                .expect("a client")
        })
        .clone();
    let Ok(transport) = builder.finish(client) else {
        return Vec::new();
    };
    let post = Scripted {
        replies: Mutex::new(script.replies.into()),
    };
    runtime.block_on(async {
        let mut sent = Vec::new();
        for _ in 0..script.sends.clamp(1, 4) {
            if script.read % 4 != 0 {
                sent.push(read_stream(&transport, &post, script.read % 4).await);
                continue;
            }
            let outcome = transport
                .run_with(&post, Bytes::from_static(b"{}"), Options::default())
                .await;
            sent.push(match outcome {
                Ok(answer) => Sent {
                    answered: true,
                    attempts: answer.attempts(),
                    texts: [
                        Some(answer.text().to_owned()),
                        answer.request_id().map(str::to_owned),
                    ]
                    .into_iter()
                    .flatten()
                    .chain([format!("{answer:?}")])
                    .collect(),
                },
                Err(refusal) => refused(&refusal),
            });
        }
        let meter = transport.meter();
        sent.push(Sent {
            answered: meter.sends() == u64::try_from(sent.len()).unwrap_or(u64::MAX),
            attempts: u32::try_from(meter.attempts()).unwrap_or(u32::MAX),
            texts: vec![format!("{transport:?}"), format!("{meter:?}")],
        });
        sent
    })
}
