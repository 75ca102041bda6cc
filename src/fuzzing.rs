//! The crate's private readers of engine text, for the fuzz targets in
//! `fuzz/` only: built with `--cfg fuzzing` (as `cargo fuzz` builds), never
//! part of the public API. Each wraps one reader, taking plain strings and
//! bytes; header readers take `(name, value)` pairs, and a pair whose name
//! or value is not a valid header is left out, as the HTTP stack would
//! refuse it.
#![allow(missing_docs)]

use std::time::{Duration, SystemTime};

use crate::conceal::Concealer;
use crate::refusal::evidence::header_map as headers;
use crate::refusal::evidence::{challenge, request_id as id, retry, words};

pub fn retry_delay(pairs: &[(&str, &[u8])], now: SystemTime) -> Option<Duration> {
    retry::retry_hint(&headers(pairs), now).map(|hint| hint.delay)
}

pub fn exhausted(pairs: &[(&str, &[u8])], now: SystemTime) -> Option<Duration> {
    retry::Fields::read(&headers(pairs), now)
        .exhausted
        .map(|left| left.reset)
}

/// What the rate-limit fields say, in any dialect: the budget's
/// `(remaining, limit, reset)` and the hold's `(what, reset)`.
#[allow(clippy::type_complexity)]
pub fn rate_limit_fields(
    pairs: &[(&str, &[u8])],
    now: SystemTime,
) -> (
    Option<(u64, Option<u64>, Duration)>,
    Option<(&'static str, Duration)>,
) {
    let fields = retry::Fields::read(&headers(pairs), now);
    (
        fields
            .budget
            .map(|left| (left.remaining, left.limit, left.reset)),
        fields.exhausted.map(|left| (left.what, left.reset)),
    )
}

/// An RFC 3339 time as Anthropic's resets are read.
pub fn rfc3339(text: &str) -> Option<SystemTime> {
    retry::rfc3339(text)
}

/// `(error, error_description, scope)` of the `Bearer` challenge among
/// these `www-authenticate` values.
#[allow(clippy::type_complexity)]
pub fn bearer_challenge(
    values: &[&[u8]],
) -> Option<(Option<String>, Option<String>, Option<String>)> {
    let pairs: Vec<(&str, &[u8])> = values.iter().map(|v| ("www-authenticate", *v)).collect();
    challenge::bearer_challenge(&headers(&pairs)).map(|c| (c.error, c.description, c.scope))
}

pub fn request_id(pairs: &[(&str, &[u8])]) -> Option<Vec<u8>> {
    id::request_id(&headers(pairs)).map(<[u8]>::to_vec)
}

pub fn engine_words(text: &str, concealer: &Concealer) -> Option<String> {
    words::engine_words(text, concealer)
}

pub fn engine_value(value: &[u8], concealer: &Concealer, limit: usize) -> String {
    words::engine_value(value, concealer, limit)
}

pub fn credit_code(text: &str, concealer: &Concealer) -> Option<String> {
    words::credit_code(text, concealer)
}

pub fn json_message(text: &str) -> Option<String> {
    words::json_message(text)
}

pub fn html_text(text: &str) -> Option<String> {
    words::html_text(text)
}

pub fn bound_whole(text: &str, max_chars: usize) -> &str {
    crate::text::bound_whole(text, max_chars)
}

/// The concealer's decoding over the whole text, which the windowed
/// one must match.
pub fn conceal_whole(concealer: &Concealer, text: &str) -> String {
    concealer.conceal_whole(text).into_owned()
}

/// The concealment of `pieces` pushed one after another into a
/// `ConcealStream`, which must be `conceal` of them joined; and the most
/// bytes it held after a push, and its reach, which that must not pass.
pub fn conceal_in_pieces(concealer: &Concealer, pieces: &[&str]) -> (String, usize, usize) {
    let mut stream = concealer.stream();
    let mut out = String::new();
    let mut most = 0;
    for piece in pieces {
        stream.push(piece, &mut out);
        most = most.max(stream.held());
    }
    stream.finish(&mut out);
    (out, most, concealer.reach())
}

/// A token file's content as the transport reads it: the header value it
/// sends (`Bearer <token>`), or what a refusal says is wrong with it.
pub fn token_file(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let origin = crate::origin::Origin::File {
        path: "/run/secrets/engine".to_owned(),
        variable: Some("CHANT_BEHAVIOUR_TOKEN_FILE".to_owned()),
        twin: "CHANT_BEHAVIOUR_TOKEN_FILE".to_owned(),
    };
    crate::token::content::parse(bytes, origin)
        .map(|token| token.header().as_bytes().to_vec())
        .map_err(|problem| problem.describe())
}

pub use self::raced::{Raced, token_file_raced};

/// A token file read while a writer acts on it between the read's system
/// calls and during its waits, on a real file in a directory of the
/// process's own, in a time of the read's own (a wait passes at once).
mod raced {
    use std::fs::File;
    use std::io::Write as _;
    use std::path::PathBuf;
    use std::sync::OnceLock;
    use std::time::{Duration, SystemTime};

    use crate::origin::Origin;
    use crate::token::read::{self, MOST_WAIT, Pace, Step};

    /// What the read came to: the header it would send, or what it says is
    /// wrong; and every content the file held whole at some moment (the
    /// only ones it may send).
    pub struct Raced {
        pub read: Result<String, String>,
        pub whole: Vec<String>,
    }

    /// The path read, a pipe, a directory, and where new files are made.
    struct Place {
        path: PathBuf,
        pipe: PathBuf,
        directory: PathBuf,
        spare: PathBuf,
    }

    fn place() -> &'static Place {
        static PLACE: OnceLock<Place> = OnceLock::new();
        PLACE.get_or_init(|| {
            let dir = std::env::temp_dir()
                .join(format!("meterwire-fuzz-token-file-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("directory")).expect("a directory of its own");
            let pipe = dir.join("pipe");
            let made = std::process::Command::new("mkfifo").arg(&pipe).status();
            assert!(made.is_ok_and(|status| status.success()), "mkfifo");
            Place {
                path: dir.join("token"),
                pipe,
                directory: dir.join("directory"),
                spare: dir.join("spare"),
            }
        })
    }

    /// The content the script's byte `k` names: mostly tokens, some that
    /// cannot be one.
    fn content(k: u8) -> String {
        match k % 16 {
            15 => "mw fuzz Q7vX2kP9 spaced".to_owned(),
            14 => "\n".to_owned(),
            n => format!(
                "mw-fuzz-{n:x}-Q7vX2kP9zR4tL8wN{}\n",
                "z".repeat(usize::from(k % 5))
            ),
        }
    }

    /// The writer: one act of the script at each step and wait, and an
    /// in-place rewrite under way carried on at every one, so no part of it
    /// ever stands still across a wait.
    struct Writer<'s> {
        script: std::slice::Iter<'s, u8>,
        place: &'static Place,
        waited: Duration,
        /// The file being rewritten in place, what is still to be written
        /// to it, and the size of each piece.
        writing: Option<(File, String, usize, usize)>,
        coarse: bool,
        whole: Vec<String>,
    }

    impl Writer<'_> {
        fn now(&self) -> SystemTime {
            SystemTime::now() + self.waited
        }

        /// The time a write sets, in whole seconds when the writer plays a
        /// file system that keeps no finer time.
        fn stamp(&self) -> SystemTime {
            let now = self.now();
            if !self.coarse {
                return now;
            }
            let since = now
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            SystemTime::UNIX_EPOCH + Duration::from_secs(since.as_secs())
        }

        fn act(&mut self) {
            let stamp = self.stamp();
            if let Some((file, content, written, piece)) = &mut self.writing {
                let end = (*written + *piece).min(content.len());
                let _ = file.write_all(&content.as_bytes()[*written..end]);
                let _ = file.set_modified(stamp);
                *written = end;
                if end == content.len() {
                    self.whole.push(std::mem::take(content));
                    self.writing = None;
                }
            }
            let Some(&op) = self.script.next() else {
                return;
            };
            let place = self.place;
            match op % 8 {
                1 => {
                    let _ = std::fs::remove_file(&place.spare);
                    let _ = std::fs::hard_link(&place.pipe, &place.spare);
                    let _ = std::fs::rename(&place.spare, &place.path);
                }
                2 => self.renamed_over(content(op >> 3)),
                3 if self.writing.is_none() => {
                    // In place only over a regular file: opening a pipe to
                    // write would wait for a reader.
                    let regular = std::fs::symlink_metadata(&place.path)
                        .is_ok_and(|metadata| metadata.is_file());
                    if !regular {
                        return self.renamed_over(content(op >> 3));
                    }
                    if let Ok(file) = File::create(&place.path) {
                        let _ = file.set_modified(stamp);
                        let piece = 1 + usize::from(op >> 3) % 5;
                        self.writing = Some((file, content(op >> 5), 0, piece));
                    }
                }
                4 => {
                    let _ = std::fs::remove_file(&place.path);
                }
                5 => {
                    let _ = std::fs::remove_file(&place.spare);
                    let _ = std::os::unix::fs::symlink(&place.directory, &place.spare);
                    let _ = std::fs::rename(&place.spare, &place.path);
                }
                6 => self.coarse = !self.coarse,
                7 => {
                    if std::fs::symlink_metadata(&place.path).is_ok_and(|m| m.is_file())
                        && let Ok(file) = File::options().append(true).open(&place.path)
                    {
                        let _ = file.set_modified(stamp);
                    }
                }
                _ => {}
            }
        }

        /// `content` written to a new file and renamed over the path: whole
        /// the moment it is there.
        fn renamed_over(&mut self, content: String) {
            let place = self.place;
            let _ = std::fs::remove_file(&place.spare);
            if std::fs::write(&place.spare, &content).is_ok() {
                if let Ok(file) = File::options().append(true).open(&place.spare) {
                    let _ = file.set_modified(self.stamp());
                }
                if std::fs::rename(&place.spare, &place.path).is_ok() {
                    self.whole.push(content);
                }
            }
        }
    }

    impl Pace for Writer<'_> {
        fn wall(&self) -> SystemTime {
            self.now()
        }

        fn elapsed(&self) -> Duration {
            self.waited
        }

        fn wait(&mut self, wait: Duration) {
            self.waited += wait;
            self.act();
        }

        fn step(&mut self, _step: Step) {
            self.act();
        }
    }

    /// The file starts with `script[0]`'s content (modified an hour ago
    /// when its low bit says, a moment ago otherwise); each later byte is
    /// one act of the writer: nothing, a pipe renamed over the path, a
    /// whole file renamed over it, an in-place rewrite in small pieces, a
    /// removal, a link to a directory renamed over it, whole-second times
    /// on or off, or a touch.
    pub fn token_file_raced(script: &[u8]) -> Raced {
        let place = place();
        let (first, script) = script.split_first().unwrap_or((&0, &[]));
        let _ = std::fs::remove_file(&place.path);
        let start = content(*first);
        std::fs::write(&place.path, &start).expect("the first content");
        let modified = if first & 1 == 1 {
            SystemTime::now() - Duration::from_secs(3600)
        } else {
            SystemTime::now()
        };
        if let Ok(file) = File::options().append(true).open(&place.path) {
            let _ = file.set_modified(modified);
        }
        let mut writer = Writer {
            script: script.iter(),
            place,
            waited: Duration::ZERO,
            writing: None,
            coarse: false,
            whole: vec![start],
        };
        let origin = Origin::File {
            path: place.path.display().to_string(),
            variable: Some("CHANT_BEHAVIOUR_TOKEN_FILE".to_owned()),
            twin: "CHANT_BEHAVIOUR_TOKEN_FILE".to_owned(),
        };
        let read = read::read(&place.path, origin, MOST_WAIT, &mut writer)
            .map(|token| String::from_utf8_lossy(token.header().as_bytes()).into_owned())
            .map_err(|problem| problem.describe());
        Raced {
            read,
            whole: writer.whole,
        }
    }
}

/// A shared hold's stored value as another process reads it back: the
/// record's `(why, asked ms, asked at Unix ms)`, or `None` for a value it
/// did not write; and what writing that record back stores.
#[cfg(feature = "redis")]
/// Every way an address or a proxy as the caller gave it is shown: its
/// redacted text, and what parsing it as an engine's address shows (the
/// address and host it names, or the error's redacted value and the scheme
/// or host it quotes).
pub fn shown_address(text: &str) -> Vec<String> {
    use crate::address::{Address, AddressError};
    let mut shown = vec![crate::address::redact_address(text)];
    match Address::parse(text, crate::origin::Origin::Variable("E_ENGINE".to_owned())) {
        Ok(address) => shown.extend([address.to_string(), address.host()]),
        Err(error) => {
            shown.push(error.shown().to_owned());
            match error {
                AddressError::Scheme { scheme, .. } => shown.push(scheme),
                AddressError::UserInfo { host, .. } => shown.push(host),
                // Its words are the crate's or the URL parser's own.
                AddressError::Malformed { .. } => {}
            }
        }
    }
    shown
}

pub fn shared_record(value: &[u8]) -> Option<((String, u128, u128), String)> {
    crate::limits::shared::Record::decode_for_fuzzing(value)
}

pub use self::engine::{End, Piece, Reply, Script, Sent, send_all};

/// A scripted engine for the response path end to end: every attempt of
/// every send goes through the real send loop (the door, the evidence, the
/// refusal, the limits, retries and the meter); only the request's trip
/// is replaced, by a script of what the engine answered, in pieces at
/// given (virtual) times.
mod engine {
    use std::collections::VecDeque;
    use std::sync::{Mutex, OnceLock};
    use std::time::Duration;

    use bytes::Bytes;
    use reqwest::header::HeaderMap;

    use super::headers;
    use crate::env::Env;
    use crate::refusal::failure::Failure;
    use crate::refusal::site::Site;
    use crate::retry::RetryPolicy;
    use crate::transport::HttpTransport;
    use crate::transport::deadline::Deadline;
    use crate::transport::incoming::Incoming;
    use crate::transport::run::{Options, Post};

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

        fn headers(&self) -> &HeaderMap {
            &self.headers
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
            let next = self
                .replies
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .pop_front();
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
}

/// The string values of a JSON object as a stream's channels read them:
/// each literal's byte range (quotes included), its decoded value and its
/// path; or why the text is read as no JSON object (`other`, `invalid`,
/// `deep`).
#[allow(clippy::type_complexity)]
pub fn json_strings(
    text: &str,
) -> Result<Vec<(std::ops::Range<usize>, String, String)>, &'static str> {
    use crate::stream::channels::json_spans::{NotAnObject, strings};
    match strings(text) {
        Ok(found) => Ok(found
            .into_iter()
            .map(|s| (s.raw, s.value, s.path))
            .collect()),
        Err(NotAnObject::Other) => Err("other"),
        Err(NotAnObject::Invalid) => Err("invalid"),
        Err(NotAnObject::TooDeep) => Err("deep"),
    }
}

/// NDJSON lines through a stream's channels, each concealed first as the
/// stream conceals what arrives, then its end: the lines released, in
/// order, or the bound a stream is refused at.
pub fn join_lines(concealer: &Concealer, lines: &[&str]) -> Result<Vec<String>, String> {
    use crate::stream::channels::Joined;
    let mut joined: Joined<String> = Joined::new(Some(concealer));
    let mut out = Vec::new();
    let drain = |joined: &mut Joined<String>, out: &mut Vec<String>| {
        while let Some(Some(Ok(line))) = joined.out() {
            out.push(line);
        }
    };
    for line in lines {
        joined
            .take(Some(Ok(concealer.conceal(line).into_owned())))
            .map_err(|exceeded| format!("{exceeded:?}"))?;
        drain(&mut joined, &mut out);
    }
    joined
        .take(None)
        .map_err(|exceeded| format!("{exceeded:?}"))?;
    drain(&mut joined, &mut out);
    Ok(out)
}

/// What a whole answer's concealed text says was billed.
pub fn usage_whole(text: &str) -> Option<crate::Usage> {
    crate::usage::whole(text)
}

/// What a stream of `(event type, data)` says was billed, read as an
/// `AnswerStream` reads its events, the last figures winning.
pub fn usage_streamed(events: &[(Option<&str>, &str)]) -> Option<crate::Usage> {
    let mut streamed = crate::usage::Streamed::default();
    for (event, data) in events {
        streamed.read(*event, data, None);
    }
    streamed.usage()
}
