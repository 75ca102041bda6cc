//! The probe (`examples/probe/README.md`), run as the built example in a subprocess with
//! an environment built here rather than inherited, against engines on
//! 127.0.0.1: its exit statuses, its JSON documents, the body it sends, the
//! tour of `--embedded`, and that nothing it prints in any mode carries the
//! token in any form.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use wiremock::{MockServer, ResponseTemplate};

use crate::support::engines::{any_request, engine, engine_expecting, engine_with, first_then};
use crate::support::forms::{assert_echo_redacted, assert_no_form, forms};

/// The token these tests hand the probe. `/` and `+` make its JSON-escaped,
/// percent-encoded and base64 forms all differ from the raw text.
const TOKEN: &str = "mw-probe-test/K4+q8ZtW2vR6nJ3xQ";

/// The probe's own token for `--embedded`, as `examples/probe/embedded.rs`
/// defines it; a test checks the two agree, so a renamed constant cannot
/// turn the leak check into a check for a string nobody prints.
const EMBEDDED_TOKEN: &str = "mw_embedded/tour+5c1d9e0a7b3f";
/// The token the tour rotates its token file to.
const ROTATED_TOKEN: &str = "mw_embedded/rotated+9e2b7a4c0d1f";

const ENGINE_VAR: &str = "CHANT_BEHAVIOUR_ENGINE";
const TOKEN_VAR: &str = "CHANT_BEHAVIOUR_TOKEN";

/// A probe that has not exited by then is hung, not slow: the tour walks
/// over forty rows, each with a transport of its own, which a debug build
/// on a loaded two-core machine takes over 20 s to do.
const HANG: Duration = Duration::from_secs(60);

/// Every row the tour must walk, and the cause the contract gives it
/// (`answer` for an answer).
const TOUR_ROWS: [(&str, &str); 33] = [
    ("answer", "answer"),
    ("no token", "no-engine"),
    ("token from a file", "answer"),
    ("token file rotated", "answer"),
    ("token file missing", "no-engine"),
    ("token rejected", "no-engine"),
    ("token forbidden", "no-engine"),
    ("out of credit", "engine-out-of-credit"),
    ("over quota", "engine-over-quota"),
    ("engine failing", "engine-unreachable"),
    ("request refused", "engine-unreachable"),
    ("credit, in the words", "engine-out-of-credit"),
    ("key, by its code", "no-engine"),
    ("x402 payment", "engine-out-of-credit"),
    ("address banned", "engine-over-quota"),
    ("gateway's upstream", "engine-unreachable"),
    ("overloaded, as a 429", "engine-unreachable"),
    ("no such path", "engine-unreachable"),
    ("proxy down", "engine-unreachable"),
    ("redirect", "engine-unreachable"),
    ("connection refused", "engine-unreachable"),
    ("deadline", "engine-unreachable"),
    ("stream echo, raw", "answer"),
    ("stream echo, JSON", "answer"),
    ("stream echo, percent", "answer"),
    ("stream echo, HTML", "answer"),
    ("stream echo, base64", "answer"),
    ("stream error, a limit", "engine-over-quota"),
    ("stream error, credit", "engine-out-of-credit"),
    ("stream error, the token", "no-engine"),
    ("stream error, overloaded", "engine-unreachable"),
    ("stream cut mid-way", "engine-unreachable"),
    ("stream stalled", "engine-unreachable"),
];

struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// stdout as JSON lines, each one object.
    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).expect("each line is one JSON object"))
            .collect()
    }

    /// stdout as exactly one JSON document (`from_str` rejects anything
    /// after it but whitespace).
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|error| {
            panic!(
                "stdout is not one JSON document ({error}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs the probe with exactly `PATH` and `vars` in its environment.
async fn probe(args: &[&str], vars: &[(&str, &str)]) -> Run {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    tokio::task::spawn_blocking(move || run_blocking(&args, &vars))
        .await
        .expect("the probe runner does not panic")
}

fn run_blocking(args: &[String], vars: &[(String, String)]) -> Run {
    let mut command = Command::new(crate::support::probe_path());
    command
        .env_clear()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    for (name, value) in vars {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("the probe starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr is piped")));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the probe can be waited on") {
            break status;
        }
        if started.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the probe {args:?} did not exit within {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        status: status.code().expect("the probe exits with a status"),
        stdout: stdout.join().expect("stdout drains"),
        stderr: stderr.join().expect("stderr drains"),
    }
}

fn json_response(status: u16, body: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body.to_owned(), "application/json")
}

/// The address and the token variables, pointing at `server`.
fn vars_for(server: &MockServer) -> [(&'static str, String); 2] {
    [
        (ENGINE_VAR, format!("{}/v1", server.uri())),
        (TOKEN_VAR, TOKEN.to_owned()),
    ]
}

async fn probe_at(server: &MockServer, args: &[&str]) -> Run {
    let vars = vars_for(server);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    probe(args, &vars).await
}

async fn received(server: &MockServer) -> Vec<wiremock::Request> {
    server
        .received_requests()
        .await
        .expect("request recording is on")
}

/// A loopback port nothing listens on: bound, then released.
fn released_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("a bound address").port()
}

/// A file of this test's own in the temp directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> TempFile {
        let path = std::env::temp_dir().join(format!("the_probe-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).expect("the temp directory is writable");
        TempFile(path)
    }

    fn arg(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn an_answer_exits_0_and_is_printed() {
    let server = engine(json_response(200, r#"{"answer":"yes"}"#)).await;
    let run = probe_at(&server, &[]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    assert!(run.stdout.contains(r#"{"answer":"yes"}"#), "{}", run.stdout);
    assert!(run.stdout.contains("HTTP 200"), "{}", run.stdout);
}

#[tokio::test]
async fn a_flag_the_probe_does_not_know_exits_2() {
    let run = probe(&["--no-such-flag"], &[]).await;
    assert_eq!(run.status, 2, "{}", run.all());
    assert!(run.stderr.contains("--no-such-flag"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[tokio::test]
async fn an_unreadable_body_file_exits_2_naming_it_and_sends_nothing() {
    let server = engine_expecting(0, json_response(200, "{}")).await;
    let missing = std::env::temp_dir().join("the_probe-no-such-dir/body.json");
    let arg = format!("@{}", missing.display());
    let run = probe_at(&server, &["--json", "--body", &arg]).await;
    assert_eq!(run.status, 2, "{}", run.all());
    assert!(run.stderr.contains("--body"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&missing.display().to_string()),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(received(&server).await.is_empty());
}

#[tokio::test]
async fn repeat_0_exits_2() {
    let server = engine_expecting(0, json_response(200, "{}")).await;
    let run = probe_at(&server, &["--repeat", "0"]).await;
    assert_eq!(run.status, 2, "{}", run.all());
    assert!(run.stderr.contains("--repeat"), "{}", run.stderr);
    assert!(received(&server).await.is_empty());
}

#[tokio::test]
async fn concurrency_0_exits_2() {
    let server = engine_expecting(0, json_response(200, "{}")).await;
    let run = probe_at(&server, &["--repeat", "3", "--concurrency", "0"]).await;
    assert_eq!(run.status, 2, "{}", run.all());
    assert!(run.stderr.contains("--concurrency"), "{}", run.stderr);
    assert!(received(&server).await.is_empty());
}

#[tokio::test]
async fn an_unreadable_ca_certificate_exits_2_naming_the_option() {
    let server = engine_expecting(0, json_response(200, "{}")).await;
    let missing = std::env::temp_dir().join("the_probe-no-such-dir/ca.pem");
    let run = probe_at(&server, &["--ca-cert", &missing.display().to_string()]).await;
    assert_eq!(run.status, 2, "{}", run.all());
    assert!(run.stderr.contains("--ca-cert"), "{}", run.stderr);
    assert!(received(&server).await.is_empty());
}

#[tokio::test]
async fn a_ca_certificate_that_is_not_pem_exits_2_naming_the_option() {
    let server = engine_expecting(0, json_response(200, "{}")).await;
    let file = TempFile::new("not-a-ca.pem", b"this is not a certificate\n");
    let run = probe_at(&server, &["--ca-cert", &file.arg()]).await;
    assert_eq!(run.status, 2, "{}", run.all());
    assert!(run.stderr.contains("--ca-cert"), "{}", run.stderr);
    assert!(run.stderr.contains("PEM"), "{}", run.stderr);
    assert!(received(&server).await.is_empty());
}

#[tokio::test]
async fn a_scope_with_no_letter_or_digit_exits_2_naming_the_option() {
    let server = engine_expecting(0, json_response(200, "{}")).await;
    let run = probe_at(&server, &["--scope=--"]).await;
    assert_eq!(run.status, 2, "{}", run.all());
    assert!(run.stderr.contains("--scope"), "{}", run.stderr);
    assert!(received(&server).await.is_empty());
}

#[tokio::test]
async fn a_pem_ca_certificate_is_accepted_and_the_send_goes_ahead() {
    let server = engine_expecting(1, json_response(200, r#"{"answer":"yes"}"#)).await;
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("a self-signed certificate");
    let file = TempFile::new("ca.pem", ca.cert.pem().as_bytes());
    let run = probe_at(&server, &["--ca-cert", &file.arg()]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    assert_eq!(received(&server).await.len(), 1);
}

#[tokio::test]
async fn the_scope_prefix_and_stem_name_the_variables_read() {
    let server = engine_expecting(1, json_response(200, "{}")).await;
    let address = format!("{}/v1", server.uri());
    let run = probe(
        &[
            "--scope",
            "my-lexicon",
            "--prefix",
            "ACME",
            "--stem",
            "METER",
        ],
        &[("ACME_ENGINE_MY_LEXICON", &address), ("METER_TOKEN", TOKEN)],
    )
    .await;
    assert_eq!(run.status, 0, "{}", run.all());
    let requests = received(&server).await;
    assert_eq!(requests.len(), 1);
    let authorization = requests[0]
        .headers
        .get("authorization")
        .and_then(|value| value.to_str().ok());
    assert_eq!(authorization, Some(format!("Bearer {TOKEN}").as_str()));
}

#[tokio::test]
async fn timeout_ms_is_the_deadline() {
    let server = engine(json_response(200, "{}").set_delay(Duration::from_secs(3))).await;
    let run = probe_at(&server, &["--timeout-ms", "200"]).await;
    assert_eq!(run.status, 4, "{}", run.all());
    assert!(
        run.stdout.contains("no answer within 200 ms"),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn max_answer_bytes_is_the_answer_cap() {
    let server = engine(json_response(
        200,
        &format!(r#"{{"a":"{}"}}"#, "x".repeat(100)),
    ))
    .await;
    let run = probe_at(&server, &["--max-answer-bytes", "10"]).await;
    assert_eq!(run.status, 4, "{}", run.all());
    assert!(run.stdout.contains("cap of 10 bytes"), "{}", run.stdout);
}

#[tokio::test]
async fn no_token_exits_3_and_sends_nothing() {
    let server = engine_expecting(0, json_response(200, "{}")).await;
    let address = format!("{}/v1", server.uri());
    let run = probe(&[], &[(ENGINE_VAR, &address)]).await;
    assert_eq!(run.status, 3, "{}", run.all());
    assert!(run.stdout.contains("no-engine"), "{}", run.stdout);
    assert!(run.stdout.contains(TOKEN_VAR), "{}", run.stdout);
    assert!(received(&server).await.is_empty());
}

#[tokio::test]
async fn no_address_exits_3() {
    let run = probe(&[], &[(TOKEN_VAR, TOKEN)]).await;
    assert_eq!(run.status, 3, "{}", run.all());
    assert!(run.stdout.contains(ENGINE_VAR), "{}", run.stdout);
}

#[tokio::test]
async fn a_401_exits_3() {
    let server = engine(ResponseTemplate::new(401).set_body_string("bad token")).await;
    let run = probe_at(&server, &[]).await;
    assert_eq!(run.status, 3, "{}", run.all());
    assert!(run.stdout.contains("HTTP 401"), "{}", run.stdout);
}

#[tokio::test]
async fn a_503_exits_4() {
    let server = engine(ResponseTemplate::new(503).set_body_string("restarting")).await;
    let run = probe_at(&server, &[]).await;
    assert_eq!(run.status, 4, "{}", run.all());
    assert!(run.stdout.contains("engine-unreachable"), "{}", run.stdout);
}

#[tokio::test]
async fn connection_refused_exits_4() {
    let address = format!("http://127.0.0.1:{}/v1", released_port());
    let run = probe(&[], &[(ENGINE_VAR, &address), (TOKEN_VAR, TOKEN)]).await;
    assert_eq!(run.status, 4, "{}", run.all());
    assert!(run.stdout.contains("connection refused"), "{}", run.stdout);
}

#[tokio::test]
async fn a_402_exits_5() {
    let server = engine(json_response(402, r#"{"error":"balance is zero"}"#)).await;
    let run = probe_at(&server, &[]).await;
    assert_eq!(run.status, 5, "{}", run.all());
    assert!(
        run.stdout.contains("engine-out-of-credit"),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn a_429_exits_6() {
    let server =
        engine(json_response(429, r#"{"error":"slow down"}"#).insert_header("retry-after", "17"))
            .await;
    let run = probe_at(&server, &[]).await;
    assert_eq!(run.status, 6, "{}", run.all());
    assert!(run.stdout.contains("retry after 17"), "{}", run.stdout);
}

#[tokio::test]
async fn prose_shows_the_retry_hint_and_the_request_id() {
    let server = engine(
        json_response(429, r#"{"error":"slow down"}"#)
            .insert_header("retry-after", "900")
            .insert_header("x-request-id", "r-1"),
    )
    .await;
    let run = probe_at(&server, &[]).await;
    assert_eq!(run.status, 6, "{}", run.all());
    let retry_line = run
        .stdout
        .lines()
        .find(|line| line.trim_start().starts_with("retry "))
        .unwrap_or_else(|| panic!("no retry line:\n{}", run.stdout));
    assert!(retry_line.contains("in 15 min (at "), "{retry_line}");
    assert!(retry_line.ends_with(" UTC)"), "{retry_line}");
    assert!(
        run.stdout
            .lines()
            .any(|line| line.trim() == "request id  r-1"),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn json_carries_the_retry_hint_the_request_id_and_the_status() {
    let server = engine(
        json_response(429, r#"{"error":"slow down"}"#)
            .insert_header("retry-after-ms", "1500")
            .insert_header("request-id", "r-2"),
    )
    .await;
    let run = probe_at(&server, &["--json"]).await;
    assert_eq!(run.status, 6, "{}", run.all());
    let refusal = &run.json()["refusal"];
    assert_eq!(refusal["retryAfter"], 1.5);
    assert_eq!(refusal["requestId"], "r-2");
    assert_eq!(refusal["status"], 429);
}

#[tokio::test]
async fn help_explains_the_options_and_lists_the_exit_statuses() {
    let run = probe(&["--help"], &[]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    for option in [
        "--scope",
        "--prefix",
        "--stem",
        "--body",
        "--timeout-ms",
        "--max-answer-bytes",
        "--ca-cert",
        "--allow-plaintext",
        "--json",
        "--repeat",
        "--concurrency",
        "--embedded",
    ] {
        assert!(run.stdout.contains(option), "no {option}:\n{}", run.stdout);
    }
    for (status, cause) in [
        ("3", "no-engine"),
        ("4", "engine-unreachable"),
        ("5", "engine-out-of-credit"),
        ("6", "engine-over-quota"),
    ] {
        assert!(
            run.stdout
                .lines()
                .any(|line| line.trim_start().starts_with(status) && line.contains(cause)),
            "exit status {status} ({cause}) is not listed:\n{}",
            run.stdout
        );
    }
}

#[tokio::test]
async fn json_for_an_answer_is_one_document_of_the_answer_shape() {
    let server = engine(json_response(200, r#"{"score":0.5}"#)).await;
    let run = probe_at(&server, &["--json"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let doc = run.json();
    let object = doc.as_object().expect("an object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["answer", "attempts", "elapsedMs", "status"]);
    assert_eq!(doc["answer"], r#"{"score":0.5}"#);
    assert_eq!(doc["status"], 200);
    assert_eq!(doc["attempts"], 1);
    assert!(doc["elapsedMs"].is_u64(), "{doc}");
}

#[tokio::test]
async fn json_for_a_refusal_is_one_document_of_the_report_shape() {
    let server = engine(json_response(402, r#"{"error":"balance is zero"}"#)).await;
    let run = probe_at(&server, &["--json"]).await;
    assert_eq!(run.status, 5, "{}", run.all());
    let doc = run.json();
    assert_eq!(doc["behaviour"], "v1");
    assert_eq!(doc["refusal"]["cause"], "engine-out-of-credit");
    assert_eq!(doc["refusal"]["source"], ENGINE_VAR);
    let report: meterwire::Report =
        serde_json::from_value(doc.clone()).expect("the report deserializes");
    assert!(
        report.refusal().reason().contains("balance is zero"),
        "{doc}"
    );
    assert!(!report.refusal().remedy().is_empty(), "{doc}");
}

#[tokio::test]
async fn a_body_file_is_sent_byte_for_byte() {
    let server = engine_expecting(1, json_response(200, "{}")).await;
    // Not UTF-8, a NUL, a CRLF and a trailing newline: bytes, not text.
    let bytes = b"{\"q\":\"caf\xc3\xa9\"}\r\n\x00\xff\xfe trailing\n".to_vec();
    let file = TempFile::new("body.bin", &bytes);
    let run = probe_at(&server, &["--body", &format!("@{}", file.arg())]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let requests = received(&server).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body, bytes);
}

#[tokio::test]
async fn a_text_body_is_sent_as_given() {
    let server = engine_expecting(1, json_response(200, "{}")).await;
    let body = r#"{"question": "the next word after «once upon a»?"}"#;
    let run = probe_at(&server, &["--body", body]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let requests = received(&server).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body, body.as_bytes());
}

#[tokio::test]
async fn repeat_json_counts_every_send_and_the_engine_receives_exactly_that_many() {
    let server = engine_expecting(20, json_response(200, r#"{"answer":"yes"}"#)).await;
    let run = probe_at(&server, &["--repeat", "20", "--concurrency", "4", "--json"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let doc = run.json();
    assert_eq!(doc["sent"], 20, "{doc}");
    assert_eq!(doc["answers"], 20, "{doc}");
    let refusals = doc["refusals"].as_object().expect("refusals by cause");
    assert!(
        refusals.values().all(|count| count == 0),
        "no refusals expected: {doc}"
    );
    assert!(doc["elapsedMs"].is_u64(), "{doc}");
    assert!(doc["requestsPerSecond"].is_number(), "{doc}");
    for key in ["p50", "p90", "p99", "max"] {
        assert!(
            doc["latencyMs"][key].is_number(),
            "no latencyMs.{key}: {doc}"
        );
    }
    let p50 = doc["latencyMs"]["p50"].as_f64().unwrap_or(f64::NAN);
    let max = doc["latencyMs"]["max"].as_f64().unwrap_or(f64::NAN);
    assert!(p50 <= max, "p50 above max: {doc}");
    assert_eq!(received(&server).await.len(), 20);
}

#[tokio::test]
async fn repeat_counts_refusals_by_cause_and_still_exits_0() {
    let server = engine_expecting(5, json_response(429, r#"{"error":"slow down"}"#)).await;
    let run = probe_at(&server, &["--repeat", "5", "--concurrency", "8", "--json"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let doc = run.json();
    assert_eq!(doc["sent"], 5, "{doc}");
    assert_eq!(doc["answers"], 0, "{doc}");
    assert_eq!(doc["refusals"]["engine-over-quota"], 5, "{doc}");
    assert_eq!(received(&server).await.len(), 5);
}

#[tokio::test]
async fn embedded_json_walks_every_row_with_the_contract_causes() {
    let run = probe(&["--embedded", "--json"], &[]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let doc = run.json();
    let rows = doc.as_array().expect("an array of rows");
    let row = |name: &str| {
        rows.iter()
            .find(|row| row["row"] == name)
            .unwrap_or_else(|| panic!("no row {name:?} in {doc}"))
    };
    for (name, cause) in TOUR_ROWS {
        let row = row(name);
        assert!(row["wire"].is_string(), "row {name} has no wire: {row}");
        if cause == "answer" {
            assert_eq!(row["status"], 200, "{row}");
            assert!(row["answer"].is_string(), "{row}");
        } else {
            assert_eq!(row["behaviour"], "v1", "{row}");
            assert_eq!(row["refusal"]["cause"], cause, "row {name}: {row}");
        }
    }
    for (name, status) in [
        ("token rejected", 401),
        ("token forbidden", 403),
        ("out of credit", 402),
        ("over quota", 429),
        ("engine failing", 503),
        ("redirect", 302),
        ("credit, in the words", 400),
        ("key, by its code", 400),
        ("x402 payment", 402),
        ("address banned", 403),
        ("gateway's upstream", 401),
        ("overloaded, as a 429", 429),
    ] {
        assert_eq!(row(name)["refusal"]["status"], status, "{}", row(name));
    }
    let reason = |name: &str| row(name)["refusal"]["reason"].as_str().map(str::to_owned);
    assert!(reason("over quota").is_some_and(|r| r.contains("retry after")));
    assert!(reason("deadline").is_some_and(|r| r.contains("no answer within")));
    assert!(reason("connection refused").is_some_and(|r| r.contains("connection refused")));
    assert_eq!(row("redirect")["redirectTargetRequests"], 0);
    // Each remedy points where its wire does.
    let remedy = |name: &str| {
        row(name)["refusal"]["remedy"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(remedy("request refused").starts_with("fix the request"));
    assert_eq!(
        row("token file rotated")["attempts"],
        2,
        "the old token once, then the new"
    );
    assert!(remedy("token file missing").contains("CHANT_BEHAVIOUR_TOKEN_FILE names"));
    assert!(remedy("no such path").contains("an endpoint the engine serves"));
    assert!(remedy("engine failing").starts_with("try again later"));
    assert!(remedy("proxy down").contains("the proxy http://127.0.0.1:"));
    assert!(reason("proxy down").is_some_and(|r| r.contains("the proxy refused the connection")));
    // Where the engine's code, words or protocol name a better cause than
    // its status, the reason says which, and the remedy follows it.
    assert!(reason("credit, in the words").is_some_and(|r| {
        r.contains("the engine's words name the account's credit: \"credit balance is too low\"")
    }));
    assert!(reason("key, by its code").is_some_and(
        |r| r.contains("with the code \"API_KEY_INVALID\", which names the token")
    ));
    assert!(remedy("key, by its code").starts_with("set CHANT_BEHAVIOUR_TOKEN"));
    assert!(remedy("x402 payment").contains("x402"));
    assert!(!remedy("x402 payment").starts_with("fund the account"));
    assert!(reason("address banned").is_some_and(|r| r.contains("a ban that ends")));
    assert_eq!(row("address banned")["refusal"]["retryAfter"], 291);
    assert!(remedy("address banned").starts_with("wait for the ban to end"));
    assert!(remedy("gateway's upstream").contains("whoever runs the gateway"));
    assert!(remedy("overloaded, as a 429").starts_with("try again later"));
}

#[tokio::test]
async fn embedded_prose_is_a_table_of_every_row_and_exits_0() {
    let run = probe(&["--embedded"], &[]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    for (name, cause) in TOUR_ROWS {
        assert!(
            run.stdout
                .lines()
                .any(|line| line.contains(name) && line.contains(cause)),
            "no line shows row {name:?} with {cause}:\n{}",
            run.stdout
        );
    }
    assert!(
        run.stdout.contains("each as the wire table says"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains('\x1b'),
        "colour on a pipe:\n{}",
        run.stdout
    );
}

#[tokio::test]
async fn a_single_send_never_prints_the_token_its_engine_echoes() {
    // Engines that quote the token back as it arrived, in an answer and in
    // the error bodies of the three refusals that read one.
    let echo = format!("token {TOKEN} was used");
    for response in [
        json_response(200, &format!(r#"{{"account":"{TOKEN}"}}"#)),
        ResponseTemplate::new(401).set_body_string(echo.clone()),
        json_response(402, &format!(r#"{{"error":"{echo}"}}"#)),
        ResponseTemplate::new(429).set_body_string(echo.clone()),
    ] {
        let server = engine(response).await;
        for args in [&[][..], &["--json"][..]] {
            let run = probe_at(&server, args).await;
            assert_no_form(TOKEN, &format!("probe {args:?}"), &run.all());
            // The answer is printed whole and each refusal quotes the
            // engine's words, so the echo shows, concealed.
            assert_echo_redacted(&format!("probe {args:?}"), &run.stdout);
        }
    }
}

#[tokio::test]
async fn a_repeat_run_never_prints_the_token_its_engine_echoes() {
    for (status, response) in [
        (
            200,
            json_response(200, &format!(r#"{{"account":"{TOKEN}"}}"#)),
        ),
        (
            401,
            ResponseTemplate::new(401).set_body_string(format!("token {TOKEN} is not valid")),
        ),
    ] {
        let server = engine(response).await;
        for args in [&["--repeat", "3"][..], &["--repeat", "3", "--json"][..]] {
            let run = probe_at(&server, args).await;
            assert_eq!(run.status, 0, "{}", run.all());
            assert_no_form(TOKEN, &format!("probe {args:?}"), &run.all());
            // A run counts answers without printing them, and `--json`
            // prints only counts; the one place it quotes the engine is the
            // prose's first refusal of each cause, so only there can the
            // echo show, as the marker.
            if status == 401 && !args.contains(&"--json") {
                assert_echo_redacted(&format!("probe {args:?}"), &run.stdout);
            }
        }
    }
}

#[tokio::test]
async fn the_embedded_tour_never_prints_its_own_token() {
    let source = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/probe/embedded.rs"
    ));
    assert!(
        source.contains(&format!("\"{EMBEDDED_TOKEN}\"")),
        "EMBEDDED_TOKEN here no longer matches the probe's own token"
    );
    assert!(
        source.contains(&format!("\"{ROTATED_TOKEN}\"")),
        "ROTATED_TOKEN here no longer matches the probe's own token"
    );
    for args in [&["--embedded"][..], &["--embedded", "--json"][..]] {
        let run = probe(args, &[]).await;
        assert_eq!(run.status, 0, "{}", run.all());
        assert_no_form(EMBEDDED_TOKEN, &format!("probe {args:?}"), &run.all());
        assert_no_form(ROTATED_TOKEN, &format!("probe {args:?}"), &run.all());
        // The tour's engine does echo it: the table shows where it was concealed.
        assert!(run.stdout.contains("[redacted]"), "{}", run.stdout);
    }
}

#[tokio::test]
async fn a_token_echoed_in_any_encoding_is_never_printed() {
    // Every form the concealer must catch at once, in an answer and in the
    // first line of an error body: what a careless engine, a proxy or a
    // debug page quotes back.
    let echoes: Vec<String> = forms(TOKEN).into_iter().map(|(_, form)| form).collect();
    let line = echoes.join(" ");
    // The token holds no quote or backslash, so every form of it is valid
    // inside a JSON string and the answer is still JSON.
    let answer = format!(r#"{{"echoes":"{line}"}}"#);
    for response in [
        json_response(200, &answer),
        ResponseTemplate::new(401).set_body_string(line.clone()),
        ResponseTemplate::new(402).set_body_string(line.clone()),
    ] {
        let server = engine(response).await;
        for args in [&[][..], &["--json"][..]] {
            let run = probe_at(&server, args).await;
            assert_no_form(TOKEN, &format!("probe {args:?}"), &run.all());
            assert_echo_redacted(&format!("probe {args:?}"), &run.stdout);
        }
    }
}

#[tokio::test]
async fn a_redirect_target_receives_nothing_from_a_single_send() {
    // Any method: a 302 followed would arrive as a GET.
    let target = engine_with([any_request()
        .respond_with(json_response(200, "{}"))
        .expect(0)])
    .await;
    let server = engine_with([any_request()
        .respond_with(
            ResponseTemplate::new(302).insert_header("location", format!("{}/x", target.uri())),
        )
        .expect(1)])
    .await;
    let run = probe_at(&server, &["--json"]).await;
    assert_eq!(run.status, 4, "{}", run.all());
    assert_eq!(run.json()["refusal"]["status"], 302);
    assert!(received(&target).await.is_empty());
}

#[tokio::test]
async fn a_repeat_run_against_an_engine_asking_for_forever_accounts_for_every_send() {
    // Once a panic in the library: every send is a refusal now, and the
    // run says so.
    let server = engine_expecting(
        1,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "99999999999999999999999999999999999"),
    )
    .await;
    let run = probe_at(&server, &["--repeat", "3", "--json"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let doc = run.json();
    assert_eq!(doc["sent"], 3, "{doc}");
    assert_eq!(doc["refusals"]["engine-over-quota"], 3, "{doc}");
    assert!(doc.get("lost").is_none(), "{doc}");
    assert_eq!(doc["meter"]["held"], 2, "{doc}");
}

#[tokio::test]
async fn repeat_json_says_what_the_first_and_the_last_refusal_of_each_cause_said() {
    let server = engine_with(first_then(
        json_response(503, r#"{"error":"first"}"#),
        1,
        json_response(503, r#"{"error":"later"}"#),
    ))
    .await;
    let run = probe_at(&server, &["--repeat", "4", "--json"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let doc = run.json();
    let said = &doc["said"]["engine-unreachable"];
    let reason = |which: &str| {
        said[which]["refusal"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(said["first"]["behaviour"], "v1", "{doc}");
    assert!(reason("first").contains("\"first\""), "{doc}");
    assert!(reason("last").contains("\"later\""), "{doc}");
    assert!(doc["said"].get("no-engine").is_none(), "{doc}");
}

#[tokio::test]
async fn prose_never_cuts_an_answer_inside_an_escape() {
    // Cut at 2,000 characters, `&#65;…` would end `&#65`: a reader of HTML
    // decodes it to `A` and the echo before it to the token.
    let token = "Qz7kP2mA";
    let answer = format!(
        "{}&#81;&#122;&#55;&#107;&#80;&#50;&#109;&#655; more",
        "w".repeat(1958)
    );
    let server = engine(ResponseTemplate::new(200).set_body_string(answer)).await;
    let vars = [
        (ENGINE_VAR, format!("{}/v1", server.uri())),
        (TOKEN_VAR, token.to_owned()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = probe(&[], &vars).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let shown = run.stdout.lines().nth(1).unwrap_or_default();
    assert!(shown.ends_with("&#109;"), "{shown:?}");
    assert!(run.stdout.contains("more bytes (--json prints it whole)"));
}

#[tokio::test]
async fn prose_never_turns_a_control_character_into_an_escape() {
    // A raw CR beside a JSON `\n`: written as `\r`, the two would read as
    // the token broken by one JSON-escaped CRLF.
    let token = "mw_live_4f9zQx7Kp2LmN8vR3t";
    let server = engine(
        ResponseTemplate::new(200)
            .set_body_bytes(&b"{\"a\":\"mw_live_4f9z\r\\nQx7Kp2LmN8vR3t\"}"[..]),
    )
    .await;
    let vars = [
        (ENGINE_VAR, format!("{}/v1", server.uri())),
        (TOKEN_VAR, token.to_owned()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = probe(&[], &vars).await;
    assert!(!run.stdout.contains("\\r\\n"), "{}", run.stdout);
    assert!(!run.stdout.contains('\r'), "{:?}", run.stdout);
}

#[tokio::test]
async fn stream_json_prints_one_object_per_event_then_the_end() {
    let server = engine(ResponseTemplate::new(200).set_body_raw(
        format!("event: delta\nid: 1\ndata: {{\"delta\":\"the\"}}\n\ndata: {TOKEN}\n\n"),
        "text/event-stream",
    ))
    .await;
    let run = probe_at(&server, &["--stream", "--json", "--idle-ms", "5000"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let lines = run.json_lines();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert_eq!(lines[0]["event"], "delta");
    assert_eq!(lines[0]["data"], "{\"delta\":\"the\"}");
    assert_eq!(lines[0]["id"], "1");
    assert!(lines[0]["atMs"].is_number());
    assert_eq!(lines[1]["event"], "message");
    assert_eq!(lines[1]["data"], "[redacted]");
    assert!(lines[1].get("id").is_none());
    assert_eq!(lines[2]["end"]["status"], 200);
    assert_eq!(lines[2]["end"]["events"], 2);
    assert!(lines[2]["end"]["bytes"].as_u64().is_some_and(|b| b > 0));
    assert!(lines[2]["end"]["firstByteMs"].is_number());
    assert_eq!(lines[2]["end"]["ended"], "body");
    assert!(lines[2]["end"].get("unfinishedBytes").is_none());
    assert!(!run.all().contains(TOKEN));
}

/// The stream's end record of the probe run against `body`, with `args`
/// after `--stream --json`: the exit status and the last line.
async fn stream_end(body: &str, args: &[&str]) -> (i32, Value) {
    let server =
        engine(ResponseTemplate::new(200).set_body_raw(body.to_owned(), "text/event-stream")).await;
    let mut all = vec!["--stream", "--json"];
    all.extend_from_slice(args);
    let run = probe_at(&server, &all).await;
    let last = run.stdout.lines().last().unwrap_or_default();
    let last = serde_json::from_str(last).unwrap_or_else(|error| panic!("{error}: {}", run.all()));
    (run.status, last)
}

#[tokio::test]
async fn stream_json_says_how_the_stream_ended_and_expect_done_asks_for_done() {
    let (status, end) = stream_end("data: a\n\ndata: [DONE]\n\n", &[]).await;
    assert_eq!(status, 0);
    assert_eq!(end["end"]["ended"], "done", "{end}");
    assert_eq!(end["end"]["events"], 1, "{end}");

    let (status, end) = stream_end("data: a\n\ndata: tw", &[]).await;
    assert_eq!(status, 0);
    assert_eq!(end["end"]["ended"], "unfinished", "{end}");
    assert_eq!(end["end"]["unfinishedBytes"], 8, "{end}");

    let (status, end) = stream_end("data: a\n\ndata: [DONE]\n\n", &["--expect-done"]).await;
    assert_eq!(status, 0);
    assert_eq!(end["end"]["ended"], "done", "{end}");

    let (status, end) = stream_end("data: a\n\n", &["--expect-done"]).await;
    assert_eq!(status, 4, "{end}");
    assert_eq!(end["refusal"]["cause"], "engine-unreachable", "{end}");
    let reason = end["refusal"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("ended without [DONE] after 1 event"),
        "{end}"
    );

    // Without --stream it is a bad command line.
    let server = engine(json_response(200, "{}")).await;
    let run = probe_at(&server, &["--expect-done"]).await;
    assert_eq!(run.status, 2, "{}", run.all());
}

#[tokio::test]
async fn stream_prose_prints_each_piece_then_a_summary_and_a_refusal_exits_as_one_send() {
    let server = engine(
        ResponseTemplate::new(200).set_body_raw("{\"a\":1}\n{\"a\":2}\n", "application/x-ndjson"),
    )
    .await;
    let run = probe_at(&server, &["--stream"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(&lines[..2], ["{\"a\":1}", "{\"a\":2}"], "{}", run.stdout);
    assert!(
        lines[2].starts_with("stream ended  HTTP 200, 2 pieces"),
        "{}",
        run.stdout
    );

    let server = engine(ResponseTemplate::new(200).set_body_raw(
        "data: {\"error\":{\"type\":\"insufficient_quota\"}}\n\n",
        "text/event-stream",
    ))
    .await;
    let run = probe_at(&server, &["--stream", "--json"]).await;
    assert_eq!(run.status, 5, "{}", run.all());
    assert_eq!(run.json()["refusal"]["cause"], "engine-out-of-credit");
}

/// An Anthropic stream that thinks, answers in two deltas (`text`'s two
/// halves) and calls a tool.
fn anthropic_stream(one: &str, two: &str) -> String {
    let delta = |index: u32, delta: String| {
        format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{delta}}}\n\n"
        )
    };
    let quoted = |text: &str| serde_json::to_string(text).expect("a string");
    [
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n".to_owned(),
        delta(0, r#"{"type":"thinking_delta","thinking":"Let me see."}"#.to_owned()),
        delta(1, format!(r#"{{"type":"text_delta","text":{}}}"#, quoted(one))),
        delta(1, format!(r#"{{"type":"text_delta","text":{}}}"#, quoted(two))),
        delta(2, r#"{"type":"input_json_delta","partial_json":"{\"city\": \"Paris\"}"}"#.to_owned()),
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n".to_owned(),
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_owned(),
    ]
    .concat()
}

#[tokio::test]
async fn stream_delta_prints_each_delta_as_a_json_line_then_the_end() {
    let (head, tail) = TOKEN.split_at(TOKEN.len() / 2);
    let body = anthropic_stream(&format!("Your key: {head}"), &format!("{tail}. Done."));
    let server = engine(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")).await;
    let run = probe_at(&server, &["--stream", "--delta", "--json"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let lines = run.json_lines();
    assert_eq!(lines.len(), 5, "{}", run.stdout);
    assert_eq!(
        lines[0]["delta"],
        serde_json::json!({"choice": 0, "part": "reasoning", "text": "Let me see."})
    );
    assert!(lines[0]["atMs"].is_number());
    assert_eq!(lines[1]["delta"]["part"], "text");
    assert_eq!(lines[2]["delta"]["part"], "text");
    let joined = format!(
        "{}{}",
        lines[1]["delta"]["text"].as_str().unwrap_or_default(),
        lines[2]["delta"]["text"].as_str().unwrap_or_default()
    );
    assert!(joined.starts_with("Your key: [redacted]"), "{joined}");
    assert!(joined.ends_with(". Done."), "{joined}");
    assert_eq!(
        lines[3]["delta"],
        serde_json::json!({"choice": 0, "part": "toolArguments", "call": 2, "text": "{\"city\": \"Paris\"}"})
    );
    let end = &lines[4]["end"];
    assert_eq!(end["status"], 200, "{end}");
    assert_eq!(end["events"], 4, "the deltas printed: {end}");
    assert_eq!(end["ended"], "body", "{end}");
    assert!(end.get("unfinishedBytes").is_none(), "{end}");
    assert_eq!(end["usage"]["input"], 25, "{end}");
    assert_eq!(end["usage"]["output"], 15, "{end}");
    assert_no_form(TOKEN, "--stream --delta --json", &run.all());

    // Without --stream it is a bad command line.
    let run = probe_at(&server, &["--delta"]).await;
    assert_eq!(run.status, 2, "{}", run.all());
}

#[tokio::test]
async fn stream_delta_prose_prints_the_text_each_part_after_its_label() {
    let body = anthropic_stream("The cat", " sat.");
    let server = engine(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")).await;
    let run = probe_at(&server, &["--stream", "--delta"]).await;
    assert_eq!(run.status, 0, "{}", run.all());
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        &lines[..3],
        [
            "reasoning  Let me see.",
            "The cat sat.",
            "tool call 2  {\"city\": \"Paris\"}"
        ],
        "{}",
        run.stdout
    );
    assert!(
        lines[3].starts_with("stream ended  HTTP 200, 4 pieces"),
        "{}",
        run.stdout
    );
    assert!(
        lines[3].ends_with("at the end of the body, without [DONE]"),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn a_token_file_twin_is_read_like_any_predictor_reads_it() {
    let server = engine_expecting(1, json_response(200, r#"{"answer":"yes"}"#)).await;
    let file = TempFile::new("token-file", format!("{TOKEN}\n").as_bytes());
    let address = format!("{}/v1", server.uri());
    let path = file.arg();
    let run = probe(
        &[],
        &[
            (ENGINE_VAR, &address),
            ("CHANT_BEHAVIOUR_TOKEN_FILE", &path),
        ],
    )
    .await;
    assert_eq!(run.status, 0, "{}", run.all());
    let sent = received(&server).await;
    assert_eq!(
        sent[0].headers.get("authorization").map(|v| v.as_bytes()),
        Some(format!("Bearer {TOKEN}").as_bytes()),
        "the trimmed content of the file"
    );
}

#[tokio::test]
async fn a_missing_token_file_exits_3_naming_the_variable_and_the_path() {
    let server = engine_expecting(0, json_response(200, "{}")).await;
    let address = format!("{}/v1", server.uri());
    let path = std::env::temp_dir().join(format!("the_probe-{}-absent", std::process::id()));
    let path = path.display().to_string();
    let run = probe(
        &["--json"],
        &[
            (ENGINE_VAR, &address),
            ("CHANT_BEHAVIOUR_TOKEN_FILE", &path),
        ],
    )
    .await;
    assert_eq!(run.status, 3, "{}", run.all());
    let json = run.json();
    let reason = json["refusal"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&path) && reason.contains("does not exist"),
        "{json}"
    );
    assert_eq!(
        json["refusal"]["source"], "CHANT_BEHAVIOUR_TOKEN_FILE",
        "{json}"
    );
}

#[tokio::test]
async fn rust_log_writes_the_crate_s_events_to_stderr_and_never_to_stdout() {
    let server = engine(json_response(200, r#"{"answer":"yes"}"#)).await;
    let address = format!("{}/v1", server.uri());
    let run = probe(
        &["--json"],
        &[
            (ENGINE_VAR, &address),
            (TOKEN_VAR, TOKEN),
            ("RUST_LOG", "meterwire=debug"),
        ],
    )
    .await;
    assert_eq!(run.status, 0, "{}", run.all());
    assert_eq!(
        run.json()["answer"],
        r#"{"answer":"yes"}"#,
        "stdout is one document"
    );
    assert!(run.stderr.contains("answered"), "{}", run.stderr);
    assert!(!run.stderr.contains(TOKEN), "{}", run.stderr);
}

#[tokio::test]
async fn a_timer_the_probe_sets_is_raised_by_its_flag_in_the_remedy() {
    use crate::streams::{Step, chunk, engine};
    let slow_body = engine(
        "application/json",
        vec![chunk("{\"a\":"), Step::Pause(crate::support::GUARD)],
    )
    .await;
    let run = probe(
        &["--timeout-ms", "300"],
        &[(ENGINE_VAR, slow_body.address.as_str()), (TOKEN_VAR, TOKEN)],
    )
    .await;
    assert_eq!(run.status, 4, "{}", run.all());
    assert!(
        run.stdout
            .contains("raise the deadline (now 300 ms) with --timeout-ms"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("HttpTransportBuilder::deadline"),
        "{}",
        run.stdout
    );
}
