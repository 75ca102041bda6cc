//! `--embedded`: the tour. An engine of the probe's own on 127.0.0.1, and
//! every row of the wire table (README: "What the wire becomes") walked against it.
//!
//! Each row gets a transport of its own, built from a snapshot of made-up
//! variables (`Env::from_pairs`), never the process environment: the tour
//! must show the same thing on every machine, and must not send a real
//! token to a fake engine. The engine echoes the probe's token back in some
//! of its bodies, the way real engines quote a request in an error, so the
//! table also shows the token concealed where it was echoed.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use meterwire::{Answer, Cause, Env, HttpTransport, Naming, Refusal};
use serde::Serialize;
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::bills::{self, Counts};
use crate::show::{self, Style};
use crate::stream_engine;
use crate::{OutcomeJson, Usage, print_json};

/// The probe's own token, made up for the tour. It holds `/` and `+` so the
/// engine's JSON-escaped echo of it differs from the raw text.
pub const TOUR_TOKEN: &str = "mw_embedded/tour+5c1d9e0a7b3f";

/// The token the tour's token file is rotated to, mid-send.
pub const ROTATED_TOKEN: &str = "mw_embedded/rotated+9e2b7a4c0d1f";

/// The deadline of every row but the deadline's own: the engine is local.
const ROW_DEADLINE: Duration = Duration::from_secs(5);
/// The deadline row's deadline, and how long its engine waits: long enough
/// apart that the row cannot answer, short enough to keep the tour quick.
const SHORT_DEADLINE: Duration = Duration::from_millis(300);
const SLOW_ENGINE: Duration = Duration::from_secs(3);
/// The cap of the over-the-cap row, and the size of its answer.
const SMALL_CAP: u64 = 1_024;
const LARGE_ANSWER: usize = 4_096;
const RETRY_AFTER: &str = "30";
/// How long the banned-address row's engine bans the address for.
const BAN_SECONDS: u32 = 291;
/// The x402 row's `PAYMENT-REQUIRED`: the x402 specification's example
/// (`specs/transports-v2/http.md`), a payment of 10 000 units of USDC
/// asked with each request, base64 as sent.
const PAYMENT_REQUIRED: &str = "eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJQQVlNRU5ULVNJR05BVFVSRSBoZWFkZXIgaXMgcmVxdWlyZWQiLCJyZXNvdXJjZSI6eyJ1cmwiOiJodHRwczovL2FwaS5leGFtcGxlLmNvbS9wcmVtaXVtLWRhdGEiLCJkZXNjcmlwdGlvbiI6IkFjY2VzcyB0byBwcmVtaXVtIG1hcmtldCBkYXRhIiwibWltZVR5cGUiOiJhcHBsaWNhdGlvbi9qc29uIn0sImFjY2VwdHMiOlt7InNjaGVtZSI6ImV4YWN0IiwibmV0d29yayI6ImVpcDE1NTo4NDUzMiIsImFtb3VudCI6IjEwMDAwIiwiYXNzZXQiOiIweDAzNkNiRDUzODQyYzU0MjY2MzRlNzkyOTU0MWVDMjMxOGYzZENGN2UiLCJwYXlUbyI6IjB4MjA5NjkzQmM2YWZjMEM1MzI4YkEzNkZhRjAzQzUxNEVGMzEyMjg3QyIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsibmFtZSI6IlVTREMiLCJ2ZXJzaW9uIjoiMiJ9fV19";

/// The stream rows' timers: short, so the tour stays quick.
const STREAM_IDLE: Duration = Duration::from_millis(300);
const STREAM_DEADLINE: Duration = Duration::from_millis(700);

/// The rows of a token echoed across two pieces of a stream, one per form
/// (in `stream_engine::FORMS`' order).
const STREAM_ECHO_ROWS: [&str; 5] = [
    "stream echo, raw",
    "stream echo, JSON",
    "stream echo, percent",
    "stream echo, HTML",
    "stream echo, base64",
];

/// The rows of an error inside a stream, one per cause it names (in
/// `stream_engine::ERRORS`' order).
const STREAM_ERROR_ROWS: [(&str, Cause); 4] = [
    ("stream error, a limit", Cause::EngineOverQuota),
    ("stream error, credit", Cause::EngineOutOfCredit),
    ("stream error, the token", Cause::NoEngine),
    ("stream error, overloaded", Cause::EngineUnreachable),
];

/// The table's width, and its columns.
const WIDTH: usize = 120;
const ROW_COLUMN: usize = 26;
const WIRE_COLUMN: usize = 42;
const INDENT: usize = 7;

/// One row of the tour: what the engine is made to do, and what the
/// wire table says it becomes.
struct Stage {
    row: &'static str,
    /// What goes over the wire, as the engine was staged to say it.
    wire: String,
    /// `None`: an answer.
    expected: Option<Cause>,
    /// The wire table says this row refuses before anything is sent; the tour
    /// checks that before sending, so even a library that got it wrong
    /// sends nothing from this row.
    refused_before_sending: bool,
    env: Env,
    deadline: Duration,
    cap: u64,
    /// A proxy every request of the row goes through.
    proxy: Option<String>,
    /// The answer is read as a stream, with these timers when set.
    stream: bool,
    idle: Option<Duration>,
    stream_deadline: Option<Duration>,
    /// The usage rows: what the answer must say the engine billed.
    billed: Option<Option<meterwire::Usage>>,
}

/// What a row came to.
enum Outcome {
    Sent {
        result: Result<Answer, Refusal>,
        elapsed_ms: u64,
    },
    /// A row the wire table refuses before sending was about to send.
    NotRefused,
}

struct Walked {
    stage: Stage,
    outcome: Outcome,
    /// For the redirect row: how many requests the redirect's target got.
    target_requests: Option<usize>,
}

impl Walked {
    fn cause(&self) -> Option<Cause> {
        match &self.outcome {
            Outcome::Sent { result: Err(r), .. } => Some(r.cause()),
            _ => None,
        }
    }

    fn as_the_table_says(&self) -> bool {
        match &self.outcome {
            Outcome::NotRefused => false,
            Outcome::Sent { result, .. } => {
                result.as_ref().err().map(Refusal::cause) == self.stage.expected
                    && self.target_requests.unwrap_or(0) == 0
                    && self
                        .stage
                        .billed
                        .is_none_or(|billed| result.as_ref().ok().and_then(Answer::usage) == billed)
            }
        }
    }

    fn wire(&self) -> String {
        match self.target_requests {
            Some(n) => format!("{}; its target got {n} requests", self.stage.wire),
            None => self.stage.wire.clone(),
        }
    }
}

pub async fn tour(
    scope: &str,
    naming: &Naming,
    body: Bytes,
    json: bool,
    style: &Style,
) -> Result<ExitCode, Usage> {
    let engine = MockServer::start().await;
    let elsewhere = MockServer::start().await;
    let files = TokenFiles::new().map_err(|error| {
        Usage(format!(
            "--embedded: no temporary directory for the token-file rows ({error})"
        ))
    })?;
    stage_engine(&engine, &elsewhere, &files).await;

    let at = |route: &str| format!("{}/{route}", engine.uri());
    let engine_var = naming.engine_variable();
    let token_var = naming.token_variable();
    let pairs = |address: &str, token: Option<&str>| {
        let mut env = Env::new();
        env.set(engine_var.as_str(), address);
        if let Some(token) = token {
            env.set(token_var.as_str(), token);
        }
        env
    };
    let with_file = |mut env: Env, file: &std::path::Path| {
        env.set(format!("{token_var}_FILE"), file.display().to_string());
        env
    };
    let stage = |row, wire: &str, expected, env| Stage {
        row,
        wire: wire.to_owned(),
        expected,
        refused_before_sending: false,
        env,
        deadline: ROW_DEADLINE,
        cap: meterwire::DEFAULT_MAX_ANSWER_BYTES,
        proxy: None,
        stream: false,
        idle: None,
        stream_deadline: None,
        billed: None,
    };
    let offline = |row, expected, env| Stage {
        refused_before_sending: true,
        ..stage(row, "nothing sent", Some(expected), env)
    };
    let token = Some(TOUR_TOKEN);
    let refused_port = released_port().map_err(|error| {
        Usage(format!(
            "--embedded: no loopback port to stage with ({error})"
        ))
    })?;

    let streaming = stream_engine::start(TOUR_TOKEN.to_owned())
        .await
        .map_err(|error| {
            Usage(format!(
                "--embedded: no loopback port to stream from ({error})"
            ))
        })?;
    let streamed = |row, wire: &str, expected, route: &str| Stage {
        stream: true,
        ..stage(
            row,
            wire,
            expected,
            pairs(&format!("{streaming}/stream/{route}"), token),
        )
    };
    let mut stages = vec![
        stage("answer", "HTTP 200", None, pairs(&at("answer"), token)),
        stage(
            "token rejected",
            "HTTP 401",
            Some(Cause::NoEngine),
            pairs(&at("rejected"), token),
        ),
        stage(
            "token forbidden",
            "HTTP 403",
            Some(Cause::NoEngine),
            pairs(&at("forbidden"), token),
        ),
        stage(
            "out of credit",
            "HTTP 402",
            Some(Cause::EngineOutOfCredit),
            pairs(&at("empty"), token),
        ),
        stage(
            "over quota",
            &format!("HTTP 429, retry-after: {RETRY_AFTER}"),
            Some(Cause::EngineOverQuota),
            pairs(&at("spent"), token),
        ),
        stage(
            "engine failing",
            "HTTP 503",
            Some(Cause::EngineUnreachable),
            pairs(&at("failing"), token),
        ),
        stage(
            "request refused",
            "HTTP 400",
            Some(Cause::EngineUnreachable),
            pairs(&at("malformed"), token),
        ),
        stage(
            "credit, in the words",
            "HTTP 400, \"credit balance is too low\"",
            Some(Cause::EngineOutOfCredit),
            pairs(&at("credit-in-words"), token),
        ),
        stage(
            "key, by its code",
            "HTTP 400, reason API_KEY_INVALID",
            Some(Cause::NoEngine),
            pairs(&at("key-by-code"), token),
        ),
        stage(
            "x402 payment",
            "HTTP 402, PAYMENT-REQUIRED",
            Some(Cause::EngineOutOfCredit),
            pairs(&at("x402"), token),
        ),
        stage(
            "address banned",
            &format!("HTTP 403, retry-after: {BAN_SECONDS}"),
            Some(Cause::EngineOverQuota),
            pairs(&at("banned"), token),
        ),
        stage(
            "gateway's upstream",
            "HTTP 401, llm_provider- headers",
            Some(Cause::EngineUnreachable),
            pairs(&at("relayed"), token),
        ),
        stage(
            "overloaded, as a 429",
            "HTTP 429, error_type overloaded",
            Some(Cause::EngineUnreachable),
            pairs(&at("overloaded"), token),
        ),
        stage(
            "no such path",
            "HTTP 404",
            Some(Cause::EngineUnreachable),
            pairs(&at("nowhere"), token),
        ),
        stage(
            "redirect",
            "HTTP 302",
            Some(Cause::EngineUnreachable),
            pairs(&at("moved"), token),
        ),
        stage(
            "connection refused",
            "connection refused",
            Some(Cause::EngineUnreachable),
            pairs(&format!("http://127.0.0.1:{refused_port}/v1"), token),
        ),
        Stage {
            proxy: Some(format!("http://127.0.0.1:{refused_port}")),
            ..stage(
                "proxy down",
                "connection refused, at the proxy",
                Some(Cause::EngineUnreachable),
                pairs(&at("answer"), token),
            )
        },
        Stage {
            deadline: SHORT_DEADLINE,
            ..stage(
                "deadline",
                &format!(
                    "HTTP 200 after {} ms, deadline {} ms",
                    SLOW_ENGINE.as_millis(),
                    SHORT_DEADLINE.as_millis()
                ),
                Some(Cause::EngineUnreachable),
                pairs(&at("slow"), token),
            )
        },
        Stage {
            cap: SMALL_CAP,
            ..stage(
                "answer over the cap",
                &format!("HTTP 200, {LARGE_ANSWER} bytes, cap {SMALL_CAP}"),
                Some(Cause::EngineUnreachable),
                pairs(&at("large"), token),
            )
        },
        offline(
            "no address",
            Cause::NoEngine,
            Env::from_pairs([(token_var.as_str(), TOUR_TOKEN)]),
        ),
        offline("no token", Cause::NoEngine, pairs(&at("answer"), None)),
        stage(
            "token from a file",
            &format!("HTTP 200, the token in {token_var}_FILE"),
            None,
            with_file(pairs(&at("answer"), None), &files.token),
        ),
        stage(
            "token file rotated",
            "HTTP 401 to the old token, the file replaced meanwhile; HTTP 200 to the new",
            None,
            with_file(pairs(&at("rotated"), None), &files.rotating),
        ),
        stage(
            "token file missing",
            "nothing sent",
            Some(Cause::NoEngine),
            with_file(pairs(&at("answer"), None), &files.missing),
        ),
        offline(
            "unusable token",
            Cause::NoEngine,
            // The usual slip: the header's value pasted whole, scheme and all.
            pairs(&at("answer"), Some(&format!("Bearer {TOUR_TOKEN}"))),
        ),
        offline(
            "plain http, remote host",
            Cause::EngineUnreachable,
            // `.example` is reserved; the row never resolves it, let alone
            // connects, because a send is refused before anything happens.
            pairs("http://engine.example/v1", token),
        ),
        offline(
            "userinfo in address",
            Cause::EngineUnreachable,
            pairs(
                &engine.uri().replace("http://", "http://probe:hunter2@"),
                token,
            ),
        ),
    ];
    for form in stream_engine::FORMS {
        stages.push(streamed(
            STREAM_ECHO_ROWS[stream_engine::FORMS
                .iter()
                .position(|f| *f == form)
                .unwrap_or(0)],
            &format!("SSE, the token {form} across two pieces"),
            None,
            &format!("echo-{form}"),
        ));
    }
    for ((name, _), (row, cause)) in stream_engine::ERRORS.iter().zip(STREAM_ERROR_ROWS) {
        stages.push(streamed(
            row,
            &format!("SSE, then an error ({name})"),
            Some(cause),
            &format!("error-{name}"),
        ));
    }
    stages.push(streamed(
        "stream cut mid-way",
        "SSE, closed inside an event",
        Some(Cause::EngineUnreachable),
        "cut",
    ));
    stages.push(Stage {
        idle: Some(STREAM_IDLE),
        ..streamed(
            "stream stalled",
            &format!(
                "SSE, then silence past the {} ms idle timer",
                STREAM_IDLE.as_millis()
            ),
            Some(Cause::EngineUnreachable),
            "stall",
        )
    });
    stages.push(Stage {
        stream_deadline: Some(STREAM_DEADLINE),
        ..streamed(
            "stream past its deadline",
            &format!(
                "SSE, a comment every {} ms past a {} ms deadline",
                stream_engine::COMMENT_EVERY.as_millis(),
                STREAM_DEADLINE.as_millis()
            ),
            Some(Cause::EngineUnreachable),
            "comments",
        )
    });
    for (row, wire, _, counts) in bills::WHOLE {
        stages.push(Stage {
            billed: Some(Some(usage_of(counts))),
            ..stage(row, wire, None, pairs(&at(&route(row)), token))
        });
    }
    for (row, wire, _, _, counts) in bills::STREAMS {
        stages.push(Stage {
            billed: Some(counts.map(usage_of)),
            stream: true,
            ..stage(row, wire, None, pairs(&at(&route(row)), token))
        });
    }

    let mut walked = Vec::with_capacity(stages.len());
    for stage in stages {
        let mut builder = HttpTransport::builder(scope)
            .naming(naming.clone())
            .env(stage.env.clone())
            .deadline(stage.deadline)
            .max_answer_bytes(stage.cap);
        if let Some(proxy) = &stage.proxy {
            builder = builder.proxy(proxy.as_str());
        }
        if let Some(idle) = stage.idle {
            builder = builder.idle_timeout(idle);
        }
        if let Some(deadline) = stage.stream_deadline {
            builder = builder.stream_deadline(deadline);
        }
        let transport = builder
            .build()
            .map_err(|error| Usage(crate::build_error(&error)))?;
        let outcome = if stage.refused_before_sending && transport.refusal().is_none() {
            Outcome::NotRefused
        } else if stage.stream {
            let started = Instant::now();
            let result = match transport.stream(body.clone()).await {
                // A stream read to its end is shown as the answer it made.
                Ok(stream) => {
                    let reading = crate::stream::Reading::of(&stream);
                    let read =
                        crate::stream::read_all(stream, reading, started, true, |_, _| {}).await;
                    let answer = Answer::new(read.status, read.joined);
                    match (read.refusal, read.usage) {
                        (Some(refusal), _) => Err(refusal),
                        (None, Some(usage)) => Ok(answer.with_usage(usage)),
                        (None, None) => Ok(answer),
                    }
                }
                Err(refusal) => Err(refusal),
            };
            Outcome::Sent {
                result,
                elapsed_ms: crate::millis(started.elapsed()),
            }
        } else {
            let started = Instant::now();
            let result = transport.send(body.clone()).await;
            Outcome::Sent {
                result,
                elapsed_ms: crate::millis(started.elapsed()),
            }
        };
        let target_requests = if stage.row == "redirect" {
            Some(received(&elsewhere).await)
        } else {
            None
        };
        walked.push(Walked {
            stage,
            outcome,
            target_requests,
        });
    }

    if json {
        print_rows_json(&walked);
    } else {
        print_table(
            &walked,
            scope,
            &engine.uri(),
            &engine_var,
            &token_var,
            style,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The token files of the tour's token-file rows, in a directory of the
/// probe's own that goes when the tour ends.
struct TokenFiles {
    dir: std::path::PathBuf,
    /// Holds the tour's token, with the newline an editor leaves.
    token: std::path::PathBuf,
    /// Holds the tour's token until the engine rotates it mid-send.
    rotating: std::path::PathBuf,
    /// Never written.
    missing: std::path::PathBuf,
}

impl TokenFiles {
    fn new() -> std::io::Result<TokenFiles> {
        let dir = std::env::temp_dir().join(format!("meterwire-tour-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let files = TokenFiles {
            token: dir.join("token"),
            rotating: dir.join("rotating"),
            missing: dir.join("missing"),
            dir,
        };
        std::fs::write(&files.token, format!("{TOUR_TOKEN}\n"))?;
        std::fs::write(&files.rotating, format!("{TOUR_TOKEN}\n"))?;
        Ok(files)
    }
}

impl Drop for TokenFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The rotated row's engine: it takes only [`ROTATED_TOKEN`], and a
/// request with any other rotates the file (a new file renamed over the
/// path, as Vault agent writes it) before it answers `401`, as when a
/// token is replaced while a send is in flight. Its answer quotes both
/// tokens, to show each concealed.
struct Rotating(std::path::PathBuf);

impl Respond for Rotating {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let new = format!("Bearer {ROTATED_TOKEN}");
        if request
            .headers
            .get("authorization")
            .is_some_and(|value| value.as_bytes() == new.as_bytes())
        {
            return ResponseTemplate::new(200).set_body_raw(
                format!(
                    r#"{{"answer":"the new token","old":"{TOUR_TOKEN}","new":"{ROTATED_TOKEN}"}}"#
                ),
                "application/json",
            );
        }
        let temporary = self.0.with_extension("new");
        let _ = std::fs::write(&temporary, ROTATED_TOKEN)
            .and_then(|()| std::fs::rename(&temporary, &self.0));
        ResponseTemplate::new(401).set_body_raw("the token expired", "text/plain")
    }
}

/// The engine of the tour: one route per row, and a second server for the
/// redirect to point at.
async fn stage_engine(engine: &MockServer, elsewhere: &MockServer, files: &TokenFiles) {
    let json = |status: u16, body: String| {
        ResponseTemplate::new(status).set_body_raw(body, "application/json")
    };
    // How a JSON encoder that escapes `/` and `+` (PHP, .NET) writes the token.
    let escaped = TOUR_TOKEN.replace('/', "\\/").replace('+', "\\u002B");
    let location = format!("{}/collect", elsewhere.uri());
    let routes = [
        (
            "/answer",
            json(
                200,
                format!(
                    r#"{{"answer":"the embedded engine heard the question","account":"{TOUR_TOKEN}"}}"#
                ),
            ),
        ),
        (
            "/rejected",
            ResponseTemplate::new(401)
                .insert_header(
                    "www-authenticate",
                    r#"Bearer realm="tour", error="invalid_token", error_description="the token expired""#,
                )
                .set_body_raw(format!("token {TOUR_TOKEN} is not valid"), "text/plain"),
        ),
        (
            "/forbidden",
            json(
                403,
                r#"{"error":{"message":"this token may not use this engine"}}"#.to_owned(),
            ),
        ),
        (
            "/empty",
            json(
                402,
                format!(r#"{{"error":{{"message":"account {escaped} has no credit left"}}}}"#),
            ),
        ),
        (
            "/spent",
            json(
                429,
                r#"{"error":"request quota spent for this minute"}"#.to_owned(),
            )
            .insert_header("retry-after", RETRY_AFTER)
            .insert_header("x-request-id", "req-tour-429"),
        ),
        // What real engines say, where their status alone would mislead:
        // Anthropic's empty account on a 400, Google's bad key on a 400,
        // an x402 engine's payment asked per request, fakeai's ban of an
        // address, LiteLLM relaying its upstream's rejection of its own
        // key, and TGI's full queue on a 429.
        (
            "/credit-in-words",
            json(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"#.to_owned(),
            ),
        ),
        (
            "/key-by-code",
            json(
                400,
                r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#.to_owned(),
            ),
        ),
        (
            "/x402",
            json(402, "{}".to_owned()).insert_header("payment-required", PAYMENT_REQUIRED),
        ),
        (
            "/banned",
            json(
                403,
                format!(r#"{{"error":{{"code":"ip_banned","message":"IP address temporarily banned due to abuse. Retry after {BAN_SECONDS} seconds.","param":null,"type":"security_error"}}}}"#),
            )
            .insert_header("retry-after", BAN_SECONDS.to_string().as_str()),
        ),
        (
            "/relayed",
            json(
                401,
                r#"{"error":{"message":"litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided: sk-proj-****. You can find your API key at https://platform.openai.com/account/api-keys.","type":"auth_error","param":"None","code":"401"}}"#.to_owned(),
            )
            .insert_header("llm_provider-x-request-id", "req_tour_relayed"),
        ),
        (
            "/overloaded",
            json(
                429,
                r#"{"error":"Model is overloaded","error_type":"overloaded"}"#.to_owned(),
            ),
        ),
        (
            "/failing",
            ResponseTemplate::new(503)
                .set_body_raw("engine is restarting, try again shortly", "text/plain"),
        ),
        (
            "/malformed",
            json(
                400,
                r#"{"error":{"message":"'question' is a required property"}}"#.to_owned(),
            ),
        ),
        (
            "/moved",
            ResponseTemplate::new(302).insert_header("location", location.as_str()),
        ),
        (
            "/slow",
            json(200, r#"{"answer":"too late"}"#.to_owned()).set_delay(SLOW_ENGINE),
        ),
        (
            "/large",
            json(
                200,
                format!(r#"{{"answer":"{}"}}"#, "x".repeat(LARGE_ANSWER - 13)),
            ),
        ),
    ];
    for (route, response) in routes {
        Mock::given(method("POST"))
            .and(path(route))
            .respond_with(response)
            .mount(engine)
            .await;
    }
    for (row, _, body, _) in bills::WHOLE {
        Mock::given(method("POST"))
            .and(path(format!("/{}", route(row))))
            .respond_with(json(200, body.to_owned()))
            .mount(engine)
            .await;
    }
    for (row, _, content_type, body, _) in bills::STREAMS {
        Mock::given(method("POST"))
            .and(path(format!("/{}", route(row))))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
            .mount(engine)
            .await;
    }
    Mock::given(method("POST"))
        .and(path("/rotated"))
        .respond_with(Rotating(files.rotating.clone()))
        .mount(engine)
        .await;
    Mock::given(any())
        .respond_with(json(
            200,
            r#"{"answer":"a host the engine named"}"#.to_owned(),
        ))
        .mount(elsewhere)
        .await;
}

/// The route of a usage row: its name, in lower case, words joined by `-`.
fn route(row: &str) -> String {
    row.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The usage a row's counts make.
fn usage_of((input, output, cached, reasoning): Counts) -> meterwire::Usage {
    use meterwire::Usage as U;
    let mut usage = U::new();
    for (count, with) in [
        (input, U::with_input as fn(U, u64) -> U),
        (output, U::with_output),
        (cached, U::with_cached),
        (reasoning, U::with_reasoning),
    ] {
        if let Some(count) = count {
            usage = with(usage, count);
        }
    }
    usage
}

async fn received(server: &MockServer) -> usize {
    server.received_requests().await.map_or(0, |r| r.len())
}

/// A loopback port nothing listens on: bound, then released.
fn released_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// One row of `--embedded --json`: its name, what the wire said, what the
/// wire table expects, and the outcome as a single send prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RowJson<'a> {
    row: &'a str,
    wire: String,
    expected: &'static str,
    #[serde(flatten)]
    outcome: RowOutcomeJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    redirect_target_requests: Option<usize>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum RowOutcomeJson<'a> {
    Sent(OutcomeJson<'a>),
    NotRefused { error: &'static str },
}

const NOT_REFUSED: &str = "the transport was about to send, where the wire table refuses before sending; the tour sent nothing";

fn expected_name(expected: Option<Cause>) -> &'static str {
    expected.map_or("answer", Cause::as_str)
}

/// The array, one row per line, so it reads in a terminal and parses as one
/// document.
fn print_rows_json(walked: &[Walked]) {
    let rows: Vec<RowJson<'_>> = walked
        .iter()
        .map(|w| RowJson {
            row: w.stage.row,
            wire: w.wire(),
            expected: expected_name(w.stage.expected),
            outcome: match &w.outcome {
                Outcome::Sent { result, elapsed_ms } => {
                    RowOutcomeJson::Sent(OutcomeJson::new(result, *elapsed_ms))
                }
                Outcome::NotRefused => RowOutcomeJson::NotRefused { error: NOT_REFUSED },
            },
            redirect_target_requests: w.target_requests,
        })
        .collect();
    let lines: Result<Vec<String>, _> = rows.iter().map(serde_json::to_string).collect();
    match lines {
        Ok(lines) => out!("[\n  {}\n]", lines.join(",\n  ")),
        // Plain strings and numbers always serialize; fall back to one line.
        Err(_) => print_json(&rows),
    }
}

fn print_table(
    walked: &[Walked],
    scope: &str,
    engine: &str,
    engine_var: &str,
    token_var: &str,
    style: &Style,
) {
    out!(
        "{} an engine of the probe's own at {engine}, a token of its own in {token_var},",
        style.bold("meterwire tour:")
    );
    out!(
        r#"and every row of the wire table (the README's "What the wire becomes") walked against it."#
    );
    out!(
        "Reasons below drop their opening {}; {} prints them whole.",
        style.dim(&format!(
            "scope {scope:?}: engine at <address> (from <variable>)"
        )),
        style.bold("--json")
    );
    out!();
    out!(
        "{}",
        style.bold(&format!(
            "  {}{}{}",
            show::pad("ROW", ROW_COLUMN),
            show::pad("THE WIRE", WIRE_COLUMN),
            "CAUSE"
        ))
    );
    let detail = WIDTH - INDENT;
    let lead = format!("scope {scope:?}: ");
    for w in walked {
        let mark = if w.as_the_table_says() {
            style.good("✓")
        } else {
            style.bad("✗")
        };
        let cause = match (&w.outcome, w.cause()) {
            (Outcome::NotRefused, _) => style.bad("sent nothing (not refused)"),
            (_, Some(cause)) => style.cause(cause, cause.as_str()),
            (_, None) => style.good("answer"),
        };
        // A space after each column even when its text overruns the width.
        out!(
            "{mark} {} {} {cause}",
            show::pad(w.stage.row, ROW_COLUMN - 1),
            show::pad(&w.wire(), WIRE_COLUMN - 1)
        );
        let (first, then) = match &w.outcome {
            Outcome::Sent {
                result: Ok(answer), ..
            } => match answer.usage() {
                Some(usage) => (
                    format!(
                        "usage {}; {}",
                        show::usage_words(&usage),
                        show::tame(answer.text(), true)
                    ),
                    None,
                ),
                None => (show::tame(answer.text(), true), None),
            },
            Outcome::Sent {
                result: Err(refusal),
                ..
            } => (
                gist(refusal.reason(), &lead).to_owned(),
                Some(show::in_probe_words(refusal.remedy())),
            ),
            Outcome::NotRefused => (NOT_REFUSED.to_owned(), None),
        };
        for line in show::wrap(&first, detail, 2) {
            out!("{}{line}", " ".repeat(INDENT));
        }
        if let Some(remedy) = then {
            for (i, line) in show::wrap(&remedy, detail - 2, 2).iter().enumerate() {
                let arrow = if i == 0 { "→ " } else { "  " };
                out!("{}{}{line}", " ".repeat(INDENT - 2), style.dim(arrow));
            }
        }
    }
    out!();
    let differ = walked.iter().filter(|w| !w.as_the_table_says()).count();
    if differ == 0 {
        out!(
            "{} {} rows, each as the wire table says; the redirect's target received nothing.",
            style.good("✓"),
            walked.len()
        );
    } else {
        out!(
            "{} {differ} of {} rows differ from the wire table (marked ✗).",
            style.bad("✗"),
            walked.len()
        );
    }
    out!(
        "Probe your own engine: set {engine_var} to its address and {token_var} to its token, then run\n  cargo run --example probe"
    );
}

/// A reason without its opening `scope "…": engine at <address> (from
/// <variable>)`, which the table's header says once for every row.
fn gist<'r>(reason: &'r str, lead: &str) -> &'r str {
    let Some(rest) = reason.strip_prefix(lead) else {
        return reason;
    };
    if !(rest.starts_with("engine at ") || rest.starts_with("the address ")) {
        return rest;
    }
    let after_from = rest
        .find(" (from ")
        .and_then(|at| rest[at..].find(')').map(|close| at + close + 1));
    match after_from {
        Some(end) => rest[end..].trim_start_matches([':', ' ']),
        None => rest,
    }
}
