//! Reads are bounded (the README's security properties): an error body is read only as far as
//! its detail needs, an answer over the cap is refused without being read
//! whole (declared or chunked), one deadline covers the whole body, and a
//! server that sends non-UTF-8, closes early or does not speak HTTP is
//! `engine-unreachable` rather than a hang or a panic.
//!
//! Each engine here is a hand-written HTTP/1.1 server on loopback, because
//! the cases are about bodies a mock server will not produce: huge, lazy,
//! dripping, chunked, broken.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use meterwire::{Answer, Cause, Env, HttpTransport, Refusal};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};

use crate::support::raw_http::read_request;
use crate::support::{GUARD, TOKEN};

const CAP: u64 = 1 << 20;
const CHUNK: usize = 64 * 1024;
/// Far below any body the cases offer, far above what socket buffers on
/// loopback absorb after the client stops reading.
const READ_BOUND: u64 = 16 * 1024 * 1024;
const DRIP_EVERY: Duration = Duration::from_millis(100);
const MAX_DRIPS: usize = 600;
const MAX_CONNECTIONS: usize = 4;

/// One accepted connection, counting what the server managed to write.
struct Wire {
    stream: TcpStream,
    written: u64,
}

impl Wire {
    /// Writes `data`; `false` once the client has gone away.
    async fn write(&mut self, data: &[u8]) -> bool {
        match self.stream.write_all(data).await {
            Ok(()) => {
                self.written += data.len() as u64;
                true
            }
            Err(_) => false,
        }
    }

    /// Writes `total` bytes of body in 64 KiB chunks, lazily, stopping when
    /// the client goes away.
    async fn stream_body(&mut self, total: u64) {
        let chunk = vec![b'z'; CHUNK];
        let mut left = total;
        while left > 0 {
            let n = usize::try_from(left).map_or(CHUNK, |left| left.min(CHUNK));
            if !self.write(&chunk[..n]).await {
                return;
            }
            left -= n as u64;
        }
    }

    /// Writes `total` bytes of body as 64 KiB chunks of a chunked encoding,
    /// then the last chunk, stopping when the client goes away.
    async fn stream_chunked(&mut self, total: u64) {
        let chunk = vec![b'z'; CHUNK];
        let mut left = total;
        while left > 0 {
            let n = usize::try_from(left).map_or(CHUNK, |left| left.min(CHUNK));
            let framed = [format!("{n:x}\r\n").as_bytes(), &chunk[..n], b"\r\n"].concat();
            if !self.write(&framed).await {
                return;
            }
            left -= n as u64;
        }
        self.write(b"0\r\n\r\n").await;
    }

    /// Writes `byte` once every 100 ms, a bounded number of times.
    async fn drip(&mut self, byte: u8) {
        for _ in 0..MAX_DRIPS {
            sleep(DRIP_EVERY).await;
            if !self.write(&[byte]).await {
                return;
            }
        }
    }
}

/// A loopback server that reads each request and hands the connection to
/// `respond`; it reports how many bytes each connection wrote once its
/// response ends.
struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
    finished: mpsc::UnboundedReceiver<u64>,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start<F, Fut>(respond: F) -> Server
    where
        F: Fn(Wire) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Wire> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("local address").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let (done, finished) = mpsc::unbounded_channel();
        let respond = Arc::new(respond);
        let counted = Arc::clone(&connections);
        let task = tokio::spawn(async move {
            for _ in 0..MAX_CONNECTIONS {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let respond = Arc::clone(&respond);
                let done = done.clone();
                tokio::spawn(async move {
                    if read_request(&mut stream).await.is_none() {
                        return;
                    }
                    let wire = respond(Wire { stream, written: 0 }).await;
                    let _ = done.send(wire.written);
                });
            }
        });
        Server {
            port,
            connections,
            finished,
            task,
        }
    }

    fn transport(&self, deadline: Duration) -> HttpTransport {
        HttpTransport::builder("acme")
            .env(Env::from_pairs([
                (
                    "CHANT_BEHAVIOUR_ENGINE",
                    format!("http://127.0.0.1:{}/v1", self.port),
                ),
                ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
            ]))
            .deadline(deadline)
            .max_answer_bytes(CAP)
            .build()
            .expect("the configuration is valid")
    }

    /// Bytes the first connection wrote, once its response has ended.
    async fn written(&mut self) -> u64 {
        timeout(GUARD, self.finished.recv())
            .await
            .expect("the server stops writing once the client has gone")
            .expect("the connection was answered")
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

async fn send(transport: &HttpTransport) -> Result<Answer, Refusal> {
    timeout(GUARD, transport.send(r#"{"question":"next word?"}"#))
        .await
        .expect("the send ends instead of hanging")
}

async fn refused(transport: &HttpTransport) -> Refusal {
    let refusal = send(transport).await.expect_err("a refusal, not an answer");
    assert!(!refusal.reason().is_empty() && !refusal.remedy().is_empty());
    assert!(
        !refusal.report().to_json().contains(TOKEN),
        "the token leaked: {refusal}"
    );
    refusal
}

fn head(status_line: &str, headers: &str) -> Vec<u8> {
    format!("HTTP/1.1 {status_line}\r\n{headers}connection: close\r\n\r\n").into_bytes()
}

#[tokio::test]
async fn a_huge_error_body_is_refused_by_its_status_without_being_read() {
    const DECLARED: u64 = 300_000_000;
    let mut server = Server::start(|mut wire: Wire| async move {
        // The sentence ends as sentences do: a head cut short keeps what
        // the concealer can release, up to a separator, and a word right
        // before one line break could be the first line of a wrapped token.
        let said = b"the engine failed: out of memory.\n";
        let head = head(
            "500 Internal Server Error",
            &format!("content-type: text/plain\r\ncontent-length: {DECLARED}\r\n"),
        );
        if wire.write(&head).await && wire.write(said).await {
            wire.stream_body(DECLARED - said.len() as u64).await;
        }
        wire
    })
    .await;
    let transport = server.transport(Duration::from_secs(30));

    let refusal = refused(&transport).await;

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains("HTTP 500"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains("out of memory"),
        "{}",
        refusal.reason()
    );
    let written = server.written().await;
    assert!(
        written < READ_BOUND,
        "the server wrote {written} bytes of a {DECLARED}-byte error body"
    );
}

#[tokio::test]
async fn an_answer_declared_over_the_cap_is_refused_without_being_read() {
    const DECLARED: u64 = 64 * 1024 * 1024;
    let mut server = Server::start(|mut wire: Wire| async move {
        let head = head(
            "200 OK",
            &format!("content-type: application/json\r\ncontent-length: {DECLARED}\r\n"),
        );
        if wire.write(&head).await {
            wire.stream_body(DECLARED).await;
        }
        wire
    })
    .await;
    assert_refused_over_the_cap_unread(&mut server, DECLARED).await;
}

#[tokio::test]
async fn a_chunked_answer_over_the_cap_is_refused_without_being_read() {
    const SENT: u64 = 64 * 1024 * 1024;
    let mut server = Server::start(|mut wire: Wire| async move {
        let head = head(
            "200 OK",
            "content-type: application/json\r\ntransfer-encoding: chunked\r\n",
        );
        if wire.write(&head).await {
            wire.stream_chunked(SENT).await;
        }
        wire
    })
    .await;
    assert_refused_over_the_cap_unread(&mut server, SENT).await;
}

/// The send is refused naming the cap, and the server got to write far less
/// than the `sent` bytes it had for the answer.
async fn assert_refused_over_the_cap_unread(server: &mut Server, sent: u64) {
    let transport = server.transport(Duration::from_secs(30));

    let refusal = refused(&transport).await;

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains(&CAP.to_string()),
        "the reason should name the cap: {}",
        refusal.reason()
    );
    let written = server.written().await;
    assert!(
        written < READ_BOUND,
        "the server wrote {written} bytes of a {sent}-byte answer"
    );
}

#[tokio::test]
async fn a_chunked_answer_one_byte_over_the_cap_is_refused() {
    let server = Server::start(|mut wire: Wire| async move {
        let head = head(
            "200 OK",
            "content-type: application/json\r\ntransfer-encoding: chunked\r\n",
        );
        if wire.write(&head).await {
            wire.stream_chunked(CAP + 1).await;
        }
        wire
    })
    .await;
    let transport = server.transport(Duration::from_secs(30));

    let refusal = refused(&transport).await;

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains(&CAP.to_string()),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn an_answer_declared_exactly_at_the_cap_is_accepted() {
    let server = Server::start(|mut wire: Wire| async move {
        let head = head(
            "200 OK",
            &format!("content-type: application/json\r\ncontent-length: {CAP}\r\n"),
        );
        if wire.write(&head).await {
            wire.stream_body(CAP).await;
        }
        wire
    })
    .await;
    let transport = server.transport(Duration::from_secs(30));

    let answer = send(&transport).await.expect("an answer at the cap");

    assert_eq!(answer.text().len() as u64, CAP);
}

#[tokio::test]
async fn a_chunked_answer_exactly_at_the_cap_is_accepted() {
    let server = Server::start(|mut wire: Wire| async move {
        let head = head(
            "200 OK",
            "content-type: application/json\r\ntransfer-encoding: chunked\r\n",
        );
        if wire.write(&head).await {
            wire.stream_chunked(CAP).await;
        }
        wire
    })
    .await;
    let transport = server.transport(Duration::from_secs(30));

    let answer = send(&transport).await.expect("an answer at the cap");

    assert_eq!(answer.text().len() as u64, CAP);
}

#[tokio::test]
async fn an_answer_that_drips_past_the_deadline_is_refused() {
    let server = Server::start(|mut wire: Wire| async move {
        let head = head(
            "200 OK",
            &format!("content-type: application/json\r\ncontent-length: {MAX_DRIPS}\r\n"),
        );
        if wire.write(&head).await {
            wire.drip(b' ').await;
        }
        wire
    })
    .await;
    let transport = server.transport(Duration::from_millis(500));

    let started = Instant::now();
    let refusal = refused(&transport).await;

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains("no answer within 500 ms"),
        "{}",
        refusal.reason()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_out_of_credit_answer_whose_body_drips_is_still_out_of_credit() {
    let server = Server::start(|mut wire: Wire| async move {
        let said = b"balance is zero\n";
        let head = head(
            "402 Payment Required",
            &format!(
                "content-type: text/plain\r\ncontent-length: {}\r\n",
                1 << 20
            ),
        );
        if wire.write(&head).await && wire.write(said).await {
            wire.drip(b'.').await;
        }
        wire
    })
    .await;
    let transport = server.transport(Duration::from_millis(500));

    let started = Instant::now();
    let refusal = refused(&transport).await;

    assert_eq!(refusal.cause(), Cause::EngineOutOfCredit);
    assert!(
        refusal.reason().contains("HTTP 402"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains("balance is zero"),
        "the detail is what arrived before the deadline: {}",
        refusal.reason()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_answer_that_is_not_utf8_is_refused() {
    let server = Server::start(|mut wire: Wire| async move {
        let head = head(
            "200 OK",
            "content-type: application/json\r\ncontent-length: 2\r\n",
        );
        if wire.write(&head).await {
            wire.write(&[0xff, 0xfe]).await;
        }
        wire
    })
    .await;
    let transport = server.transport(Duration::from_secs(30));

    let refusal = refused(&transport).await;

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains("not UTF-8"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_connection_closed_without_an_answer_is_refused_and_not_retried() {
    // Dropping the stream closes the connection before any response.
    let server = Server::start(|wire: Wire| async move { wire }).await;
    let transport = server.transport(Duration::from_secs(30));

    let refusal = refused(&transport).await;

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains("reset") || refusal.reason().contains("closed"),
        "{}",
        refusal.reason()
    );
    assert_eq!(server.connections(), 1, "the request was retried");
}

#[tokio::test]
async fn a_server_that_does_not_speak_http_is_refused() {
    let server = Server::start(|mut wire: Wire| async move {
        wire.write(b"SSH-2.0-OpenSSH_9.6\r\n\x00\x01\xff\xfe not http at all\r\n\r\n")
            .await;
        wire
    })
    .await;
    let transport = server.transport(Duration::from_secs(30));

    let refusal = refused(&transport).await;

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.variable(), Some("CHANT_BEHAVIOUR_ENGINE"));
}
