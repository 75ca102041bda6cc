//! A token from a file that rotates, without a rebuild, a second bill or a
//! leak: real files in a temporary directory, replaced the ways the
//! kubelet, Vault agent and Docker replace them while sends run, against a
//! loopback engine that accepts the old token until the swap and only the
//! new one after.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use meterwire::{Cause, Env, HttpTransport, Refusal};
use wiremock::{Match, Mock, MockServer, Request, ResponseTemplate};

use crate::support::engines::{any_request, engine_with};
use crate::support::{GUARD, SCOPE, assert_refusal_shape};

const OLD: &str = "mw-file-old-Q7vX2kP9zR4tL8wN";
const NEW: &str = "mw-file-new-8fJ3mZ1qT6yH0cBv";
const FILE_VAR: &str = "CHANT_BEHAVIOUR_TOKEN_FILE";

/// A directory of this test's own, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let path = std::env::temp_dir().join(format!(
            "meterwire-token-files-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a temp directory");
        Dir(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `content` to a temporary file and renames it over `path`, as
/// Vault agent does: a reader sees the old file or the new one, whole.
fn replace(path: &Path, content: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, content).expect("write");
    std::fs::rename(&temporary, path).expect("rename");
}

/// The token the engine accepts, switched by the test.
#[derive(Clone)]
struct Accepted(Arc<Mutex<String>>);

impl Accepted {
    fn set(&self, token: &str) {
        *self.0.lock().expect("not poisoned") = token.to_owned();
    }
}

impl Match for Accepted {
    fn matches(&self, request: &Request) -> bool {
        let accepted = format!("Bearer {}", self.0.lock().expect("not poisoned"));
        request
            .headers
            .get("authorization")
            .is_some_and(|value| value == accepted.as_str())
    }
}

/// An engine that answers `200` (echoing `echo`) to the accepted token and
/// `401` to any other.
async fn engine(accepted: &Accepted, echo: &str) -> MockServer {
    engine_with([
        Mock::given(accepted.clone())
            .respond_with(ResponseTemplate::new(200).set_body_string(echo.to_owned()))
            .with_priority(1),
        any_request()
            .respond_with(ResponseTemplate::new(401).set_body_string("the token is not valid"))
            .with_priority(2),
    ])
    .await
}

/// The bearer tokens the engine received, in order.
async fn sent_with(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .expect("recording")
        .iter()
        .map(|request| {
            request
                .headers
                .get("authorization")
                .and_then(|value| value.to_str().ok())
                .unwrap_or("")
                .trim_start_matches("Bearer ")
                .to_owned()
        })
        .collect()
}

fn transport(server: &MockServer, file: &Path) -> HttpTransport {
    HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            (FILE_VAR, file.display().to_string()),
        ]))
        .build()
        .expect("builds")
}

/// A transport whose token is the file at `file`, given in code and read
/// at every send.
fn reading_every_send(server: &MockServer, file: &Path) -> HttpTransport {
    HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", server.uri())]))
        .token_file(file)
        .token_file_interval(Duration::ZERO)
        .build()
        .expect("builds")
}

#[tokio::test]
async fn a_trailing_newline_or_crlf_is_trimmed() {
    for content in [format!("{OLD}\n"), format!("  {OLD}\r\n"), OLD.to_owned()] {
        let dir = Dir::new("trimmed");
        let file = dir.join("token");
        std::fs::write(&file, &content).expect("write");
        let accepted = Accepted(Arc::new(Mutex::new(OLD.to_owned())));
        let server = engine(&accepted, "{}").await;
        transport(&server, &file)
            .send("{}")
            .await
            .expect("the trimmed token is accepted");
        assert_eq!(sent_with(&server).await, [OLD]);
    }
}

/// Sends through a rotation made by `rotate`, which leaves `NEW` in the
/// file: no send is refused, at most one request goes out with the old
/// token after the swap, and the send that met the swap counts it.
async fn survives(name: &str, rotate: impl Fn(&Dir)) {
    let dir = Dir::new(name);
    std::fs::write(dir.join("start"), OLD).expect("write");
    // The path the transport reads; each setup points it at "start".
    let file = dir.join("token");
    if !file.exists() {
        std::fs::rename(dir.join("start"), &file).expect("rename");
    }
    let accepted = Accepted(Arc::new(Mutex::new(OLD.to_owned())));
    let server = engine(&accepted, "{}").await;
    let transport = transport(&server, &file);
    for _ in 0..3 {
        transport
            .send("{}")
            .await
            .expect("the old token is accepted");
    }
    rotate(&dir);
    accepted.set(NEW);
    for _ in 0..3 {
        let answer = transport.send("{}").await.expect("no send is refused");
        assert!(answer.attempts() <= 2, "{name}: {}", answer.attempts());
    }
    let sent = sent_with(&server).await;
    assert_eq!(&sent[..3], [OLD, OLD, OLD], "{name}");
    let after: Vec<&str> = sent[3..].iter().map(String::as_str).collect();
    assert_eq!(
        after,
        [OLD, NEW, NEW, NEW],
        "{name}: one request with the old token, then the new"
    );
    let meter = transport.meter();
    assert_eq!(
        (meter.sends(), meter.attempts(), meter.answers()),
        (6, 7, 6),
        "{name}"
    );
}

#[tokio::test]
async fn a_rename_over_the_path_is_seen() {
    survives("rename", |dir| replace(&dir.join("token"), NEW)).await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_kubelet_style_data_symlink_swap_is_seen() {
    use std::os::unix::fs::symlink;
    let dir = Dir::new("kubelet");
    // The kubelet's layout: token -> ..data/token, ..data -> ..<timestamp>.
    std::fs::create_dir(dir.join("..2026_12_01_1")).expect("mkdir");
    std::fs::write(dir.join("..2026_12_01_1/token"), OLD).expect("write");
    symlink("..2026_12_01_1", dir.join("..data")).expect("symlink");
    symlink("..data/token", dir.join("token")).expect("symlink");
    let file = dir.join("token");
    let accepted = Accepted(Arc::new(Mutex::new(OLD.to_owned())));
    let server = engine(&accepted, "{}").await;
    let transport = transport(&server, &file);
    transport.send("{}").await.expect("the old token");
    // The swap: a new directory, a new link to it, renamed over `..data`.
    std::fs::create_dir(dir.join("..2026_12_01_2")).expect("mkdir");
    std::fs::write(dir.join("..2026_12_01_2/token"), NEW).expect("write");
    symlink("..2026_12_01_2", dir.join("..data_tmp")).expect("symlink");
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).expect("swap");
    std::fs::remove_dir_all(dir.join("..2026_12_01_1")).expect("the old one goes");
    accepted.set(NEW);
    let answer = transport.send("{}").await.expect("no send is refused");
    assert_eq!(answer.attempts(), 2);
    transport.send("{}").await.expect("the new token");
    assert_eq!(sent_with(&server).await, [OLD, OLD, NEW, NEW]);
    drop(dir);
}

/// A file that is unreadable for a while (`gone` does that to it): the
/// last good token goes out meanwhile, and the new one once it is back.
async fn the_last_good_token_is_kept_while(name: &str, gone: fn(&std::path::Path)) {
    let dir = Dir::new(name);
    let file = dir.join("token");
    std::fs::write(&file, OLD).expect("write");
    let accepted = Accepted(Arc::new(Mutex::new(OLD.to_owned())));
    let server = engine(&accepted, "{}").await;
    let transport = reading_every_send(&server, &file);
    transport.send("{}").await.expect("the old token");
    gone(&file);
    transport
        .send("{}")
        .await
        .expect("the last good token is kept meanwhile");
    std::fs::write(&file, NEW).expect("rewrite");
    accepted.set(NEW);
    transport.send("{}").await.expect("the new token");
    assert_eq!(sent_with(&server).await, [OLD, OLD, NEW]);
}

#[tokio::test]
async fn a_truncate_and_rewrite_keeps_the_last_good_token_meanwhile() {
    // Truncated in place: empty for a moment, then the new token.
    the_last_good_token_is_kept_while("truncate", |file| {
        std::fs::write(file, "").expect("truncate");
    })
    .await;
}

#[tokio::test]
async fn a_file_deleted_and_restored_keeps_the_last_good_token_meanwhile() {
    the_last_good_token_is_kept_while("deleted", |file| {
        std::fs::remove_file(file).expect("delete");
    })
    .await;
}

#[tokio::test]
async fn a_rejected_token_the_file_has_not_replaced_is_not_sent_again() {
    let dir = Dir::new("unchanged");
    let file = dir.join("token");
    std::fs::write(&file, OLD).expect("write");
    let accepted = Accepted(Arc::new(Mutex::new(NEW.to_owned())));
    let server = engine(&accepted, "{}").await;
    let transport = transport(&server, &file);
    let refusal = transport.send("{}").await.expect_err("rejected");
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(refusal.attempts(), 1);
    assert_eq!(refusal.variable(), Some(FILE_VAR));
    assert!(
        refusal.reason().contains(&file.display().to_string()),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.remedy().contains(&file.display().to_string()),
        "{}",
        refusal.remedy()
    );
    assert_refusal_shape(&refusal);
    assert_eq!(sent_with(&server).await, [OLD], "one request, not two");
}

#[tokio::test]
async fn a_file_that_holds_no_usable_token_is_refused_naming_the_path_never_the_content() {
    let dir = Dir::new("unusable");
    let server = MockServer::start().await;
    for (content, says) in [
        (None, "does not exist"),
        (Some(""), "is empty"),
        (Some("  \n"), "is empty"),
        (Some("mw-file-half\nmw-file-other-half"), "line break"),
        (Some("mw file with spaces"), "space"),
    ] {
        let file = dir.join("token");
        let _ = std::fs::remove_file(&file);
        if let Some(content) = content {
            std::fs::write(&file, content).expect("write");
        }
        let refusal = transport(&server, &file)
            .send("{}")
            .await
            .expect_err("no usable token");
        assert_eq!(refusal.cause(), Cause::NoEngine, "{says}");
        assert_eq!(refusal.attempts(), 0, "nothing sent");
        assert_eq!(refusal.variable(), Some(FILE_VAR));
        assert!(refusal.reason().contains(says), "{}", refusal.reason());
        assert!(
            refusal.reason().contains(&file.display().to_string()),
            "{}",
            refusal.reason()
        );
        assert!(
            !refusal.report().to_json().contains("mw-file"),
            "{refusal:?}"
        );
        assert!(!refusal.report().to_json().contains("half"), "{refusal:?}");
        assert_refusal_shape(&refusal);
    }
    assert!(
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

/// A directory, a device that never ends and a pipe no one writes to are
/// refused at once, none of them read: reading `/dev/zero` whole would never
/// end, and opening a pipe would wait for a writer.
#[cfg(unix)]
#[tokio::test]
async fn a_path_that_is_no_regular_file_is_refused_without_being_read() {
    let dir = Dir::new("not-a-file");
    let pipe = dir.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo makes the pipe");
    let server = MockServer::start().await;
    for path in [dir.join(""), std::path::PathBuf::from("/dev/zero"), pipe] {
        let started = std::time::Instant::now();
        let refusal = transport(&server, &path)
            .send("{}")
            .await
            .expect_err("no regular file");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{path:?} was read"
        );
        assert_eq!(refusal.cause(), Cause::NoEngine, "{path:?}");
        assert_eq!(refusal.attempts(), 0, "nothing sent");
        assert!(
            refusal.reason().contains("is not a regular file"),
            "{}",
            refusal.reason()
        );
    }
    assert!(
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn a_variable_and_its_file_twin_both_set_is_refused_naming_both() {
    let server = MockServer::start().await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", OLD.to_owned()),
            (FILE_VAR, "/run/secrets/engine".to_owned()),
        ]))
        .build()
        .expect("builds");
    let refusal: Refusal = transport.refusal().expect("refused").clone();
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert!(
        refusal
            .reason()
            .contains("CHANT_BEHAVIOUR_TOKEN and CHANT_BEHAVIOUR_TOKEN_FILE"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.remedy().starts_with("set one of the two"),
        "{}",
        refusal.remedy()
    );
    assert!(!refusal.report().to_json().contains(OLD));
    assert_refusal_shape(&refusal);
}

#[tokio::test]
async fn every_token_the_transport_held_stays_concealed() {
    let dir = Dir::new("concealed");
    let file = dir.join("token");
    std::fs::write(&file, OLD).expect("write");
    // After the switch, the engine echoes both tokens in its answers.
    let accepted = Accepted(Arc::new(Mutex::new(OLD.to_owned())));
    let server = engine(&accepted, &format!("old {OLD} new {NEW}")).await;
    let transport = transport(&server, &file);
    transport.send("{}").await.expect("the old token");
    replace(&file, NEW);
    accepted.set(NEW);
    let answer = transport.send("{}").await.expect("the new token");
    assert_eq!(answer.text(), "old [redacted] new [redacted]");
    let again = transport.send("{}").await.expect("the new token");
    assert_eq!(again.text(), "old [redacted] new [redacted]");
    assert_eq!(
        transport.concealer().conceal(&format!("{OLD} {NEW}")),
        "[redacted] [redacted]"
    );
}

#[tokio::test]
async fn a_new_token_clears_the_latch_and_the_meter_survives_a_rotation() {
    let dir = Dir::new("latch");
    let file = dir.join("token");
    std::fs::write(&file, OLD).expect("write");
    let accepted = Accepted(Arc::new(Mutex::new(NEW.to_owned())));
    let server = engine(&accepted, "{}").await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            (FILE_VAR, file.display().to_string()),
        ]))
        .latch(Duration::from_secs(600))
        .build()
        .expect("builds");
    transport
        .send("{}")
        .await
        .expect_err("the old token is rejected");
    let latched = transport.send("{}").await.expect_err("latched");
    assert!(latched.reason().contains("latched"), "{}", latched.reason());
    replace(&file, NEW);
    transport
        .send("{}")
        .await
        .expect("a new token clears the latch it did not earn");
    assert_eq!(sent_with(&server).await, [OLD, NEW]);
    let meter = transport.meter();
    assert_eq!((meter.sends(), meter.held()), (3, 1), "the meter survives");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rotation_while_sends_run_refuses_none_and_counts_every_attempt() {
    let dir = Dir::new("concurrent");
    let file = dir.join("token");
    std::fs::write(&file, OLD).expect("write");
    let accepted = Accepted(Arc::new(Mutex::new(OLD.to_owned())));
    let server = engine(&accepted, "{}").await;
    let transport = transport(&server, &file);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let transport = transport.clone();
        tasks.push(tokio::spawn(async move {
            let mut attempts = Vec::new();
            for _ in 0..25 {
                let answer = transport.send("{}").await.expect("no send is refused");
                attempts.push(answer.attempts());
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            attempts
        }));
    }
    tokio::time::sleep(Duration::from_millis(40)).await;
    // The file first, then the engine, as a rotation happens: for a moment
    // the engine still takes only the old token while the file holds the
    // new, then only the new.
    replace(&file, NEW);
    accepted.set(NEW);
    let mut per_send = Vec::new();
    for task in tasks {
        per_send.extend(task.await.expect("the task ends"));
    }
    assert_eq!(per_send.len(), 200);
    assert!(per_send.iter().all(|&n| n == 1 || n == 2), "{per_send:?}");
    let sent = sent_with(&server).await;
    let total: u32 = per_send.iter().sum();
    assert_eq!(
        sent.len() as u64,
        u64::from(total),
        "every request is an attempt counted"
    );
    let meter = transport.meter();
    assert_eq!((meter.sends(), meter.answers()), (200, 200));
    assert_eq!(meter.attempts(), u64::from(total));
    // A send that met the swap sent the old token once, then the new.
    let retried = per_send.iter().filter(|&&n| n == 2).count();
    let old_after_new = sent
        .iter()
        .skip_while(|token| token.as_str() == OLD)
        .filter(|token| token.as_str() == OLD)
        .count();
    assert!(
        retried <= 8,
        "at most one per task in flight at the swap: {retried}"
    );
    assert!(old_after_new <= 8, "{old_after_new}");
    assert_eq!(sent.last().map(String::as_str), Some(NEW));
}

#[tokio::test]
async fn a_429_hold_outlives_a_rotation() {
    let dir = Dir::new("hold");
    let file = dir.join("token");
    std::fs::write(&file, OLD).expect("write");
    let server = engine_with([any_request()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "600")
                .set_body_string("slow down"),
        )
        .expect(1)])
    .await;
    let transport = transport(&server, &file);
    let first = transport.send("{}").await.expect_err("over quota");
    assert_eq!(first.cause(), Cause::EngineOverQuota);
    replace(&file, NEW);
    let held = transport.send("{}").await.expect_err("still held");
    assert_eq!(held.cause(), Cause::EngineOverQuota);
    assert_eq!(held.attempts(), 0, "nothing sent into the spent window");
    assert_eq!(transport.meter().held(), 1);
}

#[tokio::test]
async fn the_file_is_read_again_once_the_interval_has_passed_not_before() {
    let dir = Dir::new("interval");
    let file = dir.join("token");
    std::fs::write(&file, OLD).expect("write");
    // This engine takes either token: only the interval decides.
    let server =
        engine_with([any_request().respond_with(ResponseTemplate::new(200).set_body_string("{}"))])
            .await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", server.uri())]))
        .token_file(&file)
        .token_file_interval(Duration::from_millis(300))
        .build()
        .expect("builds");
    transport.send("{}").await.expect("answered");
    replace(&file, NEW);
    transport.send("{}").await.expect("answered");
    tokio::time::sleep(Duration::from_millis(350)).await;
    transport.send("{}").await.expect("answered");
    assert_eq!(sent_with(&server).await, [OLD, OLD, NEW]);
    assert_eq!(transport.meter().attempts(), 3);
}

#[tokio::test]
async fn a_scoped_file_twin_comes_before_the_shared_variable() {
    let dir = Dir::new("chain");
    let file = dir.join("token");
    std::fs::write(&file, format!("{NEW}\n")).expect("write");
    let accepted = Accepted(Arc::new(Mutex::new(NEW.to_owned())));
    let server = engine(&accepted, "{}").await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            (
                "CHANT_BEHAVIOUR_TOKEN_ACME_FILE",
                file.display().to_string(),
            ),
            ("CHANT_BEHAVIOUR_TOKEN", OLD.to_owned()),
        ]))
        .build()
        .expect("builds");
    transport.send("{}").await.expect("the scoped file's token");
    assert_eq!(sent_with(&server).await, [NEW]);
}

/// Writes `content` to a temporary file last modified an hour ago, and
/// renames it over `path`: a rotation long settled, which a read adopts at
/// once (a file modified a moment ago is read again until it stands still).
fn replace_settled(path: &Path, content: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, content).expect("write");
    settle(&temporary);
    std::fs::rename(&temporary, path).expect("rename");
}

/// Marks `path` as last modified an hour ago.
fn settle(path: &Path) {
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(an_hour_ago))
        .expect("set the modification time");
}

/// A loopback engine whose first connection answers with `head` and
/// `first`, then waits for `release` before it writes `rest` and ends; every
/// later connection answers `200 {}` at once and closes. `opened` is
/// notified once the first answer's head and first piece are written.
async fn holding_engine(
    head: String,
    first: String,
    rest: String,
    opened: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
) -> String {
    use tokio::io::AsyncWriteExt as _;
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    crate::support::raw_http::answering(4, move |mut stream| {
        let n = connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (head, first, rest) = (head.clone(), first.clone(), rest.clone());
        let (opened, release) = (opened.clone(), release.clone());
        async move {
            if n == 0 {
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(first.as_bytes()).await;
                let _ = stream.flush().await;
                opened.notify_one();
                release.notified().await;
                let _ = stream.write_all(rest.as_bytes()).await;
                let _ = stream.flush().await;
            } else {
                let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                              content-length: 2\r\nconnection: close\r\n\r\n{}";
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.flush().await;
            }
        }
    })
    .await
}

/// A transport reading `file` at every send, against the engine at `address`.
fn reading_every_send_at(address: &str, file: &Path) -> HttpTransport {
    HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", address)]))
        .token_file(file)
        .token_file_interval(Duration::ZERO)
        .build()
        .expect("builds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_open_across_a_rotation_conceals_the_token_that_replaced_its_own() {
    let dir = Dir::new("stream-across");
    let file = dir.join("token");
    replace_settled(&file, OLD);
    let (opened, release) = (
        Arc::new(tokio::sync::Notify::new()),
        Arc::new(tokio::sync::Notify::new()),
    );
    let line = format!("echo {OLD} | {NEW}\n");
    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n\
                transfer-encoding: chunked\r\n\r\n"
        .to_owned();
    let first = "6\r\nhello\n\r\n".to_owned();
    let rest = format!("{:x}\r\n{line}\r\n0\r\n\r\n", line.len());
    let address = holding_engine(head, first, rest, opened.clone(), release.clone()).await;
    let transport = reading_every_send_at(&address, &file);
    let mut stream = tokio::time::timeout(GUARD, transport.stream("{}"))
        .await
        .expect("in time")
        .expect("a stream, sent with the old token");
    opened.notified().await;
    // The rotation, and a send that reads the new token, while the
    // stream is open.
    replace_settled(&file, NEW);
    tokio::time::timeout(GUARD, transport.send("{}"))
        .await
        .expect("in time")
        .expect("answered with the new token");
    release.notify_one();
    let mut lines = Vec::new();
    while let Some(line) = tokio::time::timeout(GUARD, stream.next_line())
        .await
        .expect("in time")
    {
        lines.push(line.expect("a line"));
    }
    assert_eq!(lines, ["hello", "echo [redacted] | [redacted]"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_answer_in_flight_across_a_rotation_conceals_the_token_that_replaced_its_own() {
    let dir = Dir::new("answer-across");
    let file = dir.join("token");
    replace_settled(&file, OLD);
    let (opened, release) = (
        Arc::new(tokio::sync::Notify::new()),
        Arc::new(tokio::sync::Notify::new()),
    );
    let first = "echo ".to_owned();
    let rest = format!("{OLD} | {NEW}");
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n",
        first.len() + rest.len()
    );
    let address = holding_engine(head, first, rest, opened.clone(), release.clone()).await;
    let transport = reading_every_send_at(&address, &file);
    let in_flight = tokio::spawn({
        let transport = transport.clone();
        async move { transport.send("{}").await }
    });
    opened.notified().await;
    // Time for the client to read the head and begin the body.
    tokio::time::sleep(Duration::from_millis(200)).await;
    replace_settled(&file, NEW);
    tokio::time::timeout(GUARD, transport.send("{}"))
        .await
        .expect("in time")
        .expect("answered with the new token");
    release.notify_one();
    let answer = tokio::time::timeout(GUARD, in_flight)
        .await
        .expect("in time")
        .expect("the task ends")
        .expect("answered with the old token");
    assert_eq!(answer.text(), "echo [redacted] | [redacted]");
}

/// A pipe renamed over the path between the reader's look at it and its
/// open of it: the open must not wait for a writer. The swaps go on as fast
/// as a thread can make them while sends run; every send is answered with
/// the last good token, none hangs.
#[cfg(unix)]
#[test]
fn a_pipe_swapped_in_between_the_look_and_the_open_never_blocks_a_send() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let dir = Dir::new("pipe-swap");
    let file = dir.join("token");
    let (regular, pipe) = (dir.join("regular"), dir.join("pipe"));
    std::fs::write(&regular, OLD).expect("write");
    settle(&regular);
    std::fs::hard_link(&regular, &file).expect("link");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo makes the pipe");

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let sender = {
        let (file, stop, done) = (file.clone(), stop.clone(), done.clone());
        let (regular, pipe) = (regular.clone(), pipe.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            let outcome = runtime.block_on(async move {
                let server =
                    engine_with([any_request()
                        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))])
                    .await;
                let transport = HttpTransport::builder(SCOPE)
                    .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", server.uri())]))
                    .token_file(&file)
                    .token_file_interval(Duration::ZERO)
                    .deadline(Duration::from_secs(2))
                    .build()
                    .expect("builds");
                transport.send("{}").await.expect("the first read is whole");
                // The swapper: the pipe over the path, then the file back,
                // through hard links renamed over it.
                let swapper = std::thread::spawn({
                    let (file, stop) = (file.clone(), stop.clone());
                    move || {
                        let (to_pipe, to_regular) =
                            (file.with_extension("p"), file.with_extension("r"));
                        let mut swaps = 0u64;
                        while !stop.load(Ordering::SeqCst) {
                            let _ = std::fs::hard_link(&pipe, &to_pipe);
                            let _ = std::fs::rename(&to_pipe, &file);
                            let _ = std::fs::hard_link(&regular, &to_regular);
                            let _ = std::fs::rename(&to_regular, &file);
                            swaps += 1;
                        }
                        swaps
                    }
                });
                let started = std::time::Instant::now();
                let mut refused = Vec::new();
                while started.elapsed() < Duration::from_secs(4)
                    && done.load(Ordering::SeqCst) < 3000
                {
                    if let Err(refusal) = transport.send("{}").await {
                        refused.push(refusal.reason().to_owned());
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                }
                stop.store(true, Ordering::SeqCst);
                let swaps = swapper.join().expect("the swapper ends");
                let sent = sent_with(&server).await;
                (refused, swaps, sent)
            });
            let _ = tx.send(outcome);
        })
    };
    let outcome = rx.recv_timeout(Duration::from_secs(30));
    stop.store(true, Ordering::SeqCst);
    let Ok((refused, swaps, sent)) = outcome else {
        // Free the send stuck in the open, so the thread can end.
        let pipe = pipe.clone();
        std::thread::spawn(move || std::fs::OpenOptions::new().write(true).open(pipe));
        panic!(
            "a send blocked on the pipe after {} sends",
            done.load(Ordering::SeqCst)
        );
    };
    sender.join().expect("the sender ends");
    assert!(refused.is_empty(), "{refused:?}");
    assert!(swaps > 100, "{swaps} swaps");
    assert!(sent.len() > 100, "{} sends", sent.len());
    assert!(sent.iter().all(|token| token == OLD), "{sent:?}");
}

/// Rewrites `path` in place, `rounds` times, each time truncated and
/// written a few bytes at a time (alternately `a` and `b`), then left whole
/// for a while.
fn rewrite_in_small_writes(path: &Path, a: &str, b: &str, rounds: usize, hold: Duration) {
    use std::io::Write as _;
    for round in 0..rounds {
        let content = if round % 2 == 0 { b } else { a };
        let mut file = std::fs::File::create(path).expect("truncate");
        for chunk in content.as_bytes().chunks(3) {
            file.write_all(chunk).expect("write");
            std::thread::sleep(Duration::from_micros(300));
        }
        drop(file);
        std::thread::sleep(hold);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_rewritten_in_place_in_small_writes_is_never_sent_or_learned_torn() {
    const A: &str = "mw-torn-aaaa-Q7vX2kP9zR4tL8wN";
    const B: &str = "mw-torn-bbbb-8fJ3mZ1qT6yH0cBv";
    let dir = Dir::new("torn");
    let file = dir.join("token");
    std::fs::write(&file, A).expect("write");
    settle(&file);
    let server =
        engine_with([any_request().respond_with(ResponseTemplate::new(200).set_body_string("{}"))])
            .await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", server.uri())]))
        .token_file(&file)
        .token_file_interval(Duration::ZERO)
        .build()
        .expect("builds");
    transport.send("{}").await.expect("the first token");
    let writer = std::thread::spawn({
        let file = file.clone();
        move || rewrite_in_small_writes(&file, A, B, 12, Duration::from_millis(250))
    });
    let mut sends = 0;
    while !writer.is_finished() {
        tokio::time::timeout(GUARD, transport.send("{}"))
            .await
            .expect("in time")
            .expect("no send is refused");
        sends += 1;
    }
    writer.join().expect("the writer ends");
    let sent = sent_with(&server).await;
    let torn: Vec<&String> = sent.iter().filter(|t| *t != A && *t != B).collect();
    assert!(torn.is_empty(), "{} torn of {sends}: {torn:?}", torn.len());
    assert!(sent.iter().any(|t| t == B), "the rewrites were read");
    // Only the two whole tokens were learned: no part of one is concealed.
    assert_eq!(
        format!("{:?}", transport.concealer()),
        "Concealer { secrets: 2 }"
    );
    for cut in 4..A.len() {
        assert_eq!(transport.concealer().conceal(&A[..cut]), &A[..cut]);
        assert_eq!(transport.concealer().conceal(&B[..cut]), &B[..cut]);
    }
}

/// A file rewritten in place without pause keeps changing while it is
/// read: the send does not wait past its deadline for it to stand still,
/// goes with the last good token, and sends on other clones meanwhile are
/// not held up by the read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_never_stands_still_keeps_the_last_good_token_within_the_deadline() {
    const A: &str = "mw-busy-aaaa-Q7vX2kP9zR4tL8wN";
    const B: &str = "mw-busy-bbbb-8fJ3mZ1qT6yH0cBv";
    let dir = Dir::new("busy");
    let file = dir.join("token");
    std::fs::write(&file, A).expect("write");
    settle(&file);
    let server =
        engine_with([any_request().respond_with(ResponseTemplate::new(200).set_body_string("{}"))])
            .await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", server.uri())]))
        .token_file(&file)
        .token_file_interval(Duration::ZERO)
        .deadline(Duration::from_millis(1500))
        .build()
        .expect("builds");
    transport.send("{}").await.expect("the first token");
    let writer = std::thread::spawn({
        let file = file.clone();
        move || rewrite_in_small_writes(&file, A, B, 60, Duration::from_millis(5))
    });
    let clone = transport.clone();
    let mut slowest = Duration::ZERO;
    let mut sends = 0;
    while !writer.is_finished() {
        let started = std::time::Instant::now();
        let (one, other) = tokio::join!(transport.send("{}"), clone.send("{}"));
        one.expect("no send is refused");
        other.expect("no send is refused");
        slowest = slowest.max(started.elapsed());
        sends += 2;
    }
    writer.join().expect("the writer ends");
    let sent = sent_with(&server).await;
    assert!(sent.iter().all(|t| t == A), "{sends} sends: {sent:?}");
    assert!(slowest < Duration::from_millis(1500), "{slowest:?}");
}

#[tokio::test]
async fn many_rotations_keep_the_concealer_to_the_current_token_and_the_eight_before() {
    let dir = Dir::new("many");
    let file = dir.join("token");
    let server =
        engine_with([any_request().respond_with(ResponseTemplate::new(200).set_body_string("{}"))])
            .await;
    let token = |n: usize| format!("mw-rotation-{n:04}-Q7vX2kP9zR4tL8wN");
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", server.uri())]))
        .token_file(&file)
        .token_file_interval(Duration::ZERO)
        .build()
        .expect("builds");
    const ROTATIONS: usize = 200;
    for n in 0..ROTATIONS {
        replace_settled(&file, &token(n));
        transport.send("{}").await.expect("answered");
        let held = (n + 1).min(9);
        assert_eq!(
            format!("{:?}", transport.concealer()),
            format!("Concealer {{ secrets: {held} }}"),
            "after {} rotations",
            n + 1
        );
    }
    let sent = sent_with(&server).await;
    assert_eq!(sent.len(), ROTATIONS);
    assert!(sent.iter().enumerate().all(|(n, t)| *t == token(n)));
    // The current token and the eight before it stay concealed.
    for n in ROTATIONS - 9..ROTATIONS {
        assert_eq!(
            transport.concealer().conceal(&token(n)),
            "[redacted]",
            "{n}"
        );
    }
}
