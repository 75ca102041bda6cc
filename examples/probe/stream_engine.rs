//! The tour's streaming engine: a server of the probe's own on 127.0.0.1
//! that writes its bodies in pieces, flushing each, pausing between them,
//! as an engine that generates text does (the tour's other engine sends
//! each body whole). One route per stream row.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The most connections the engine serves before it stops by itself.
const MAX_CONNECTIONS: usize = 32;
/// Between two pieces of a body.
const PAUSE: Duration = Duration::from_millis(20);
/// A keep-alive comment every so often, for the row that runs past its
/// stream deadline.
pub const COMMENT_EVERY: Duration = Duration::from_millis(100);
/// How long the stalled row's engine stays silent: past its idle timer.
const STALL: Duration = Duration::from_secs(3);

/// The forms the token is echoed in, each cut across two pieces.
pub const FORMS: [&str; 5] = ["raw", "json", "percent", "html", "base64"];

/// The in-stream errors, by the cause each names.
pub const ERRORS: [(&str, &str); 4] = [
    (
        "over-quota",
        r#"{"error":{"type":"rate_limit_error","message":"requests per minute spent"}}"#,
    ),
    (
        "out-of-credit",
        r#"{"error":{"type":"insufficient_quota","message":"you exceeded your current quota"}}"#,
    ),
    (
        "token",
        r#"{"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"incorrect API key"}}"#,
    ),
    (
        "engine",
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ),
];

/// Starts the engine; its address.
pub async fn start(token: String) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        for _ in 0..MAX_CONNECTIONS {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(serve(stream, token.clone()));
        }
    });
    Ok(address)
}

/// The token in one of the forms an engine echoes it.
fn form(token: &str, name: &str) -> String {
    match name {
        "json" => token.replace('/', "\\/").replace('+', "\\u002B"),
        "percent" => token.bytes().map(|b| format!("%{b:02X}")).collect(),
        "html" => token.bytes().map(|b| format!("&#{b};")).collect(),
        "base64" => STANDARD.encode(format!("Bearer {token}")),
        _ => token.to_owned(),
    }
}

/// What a route writes after its head: pieces, pauses, and how it ends.
enum Step {
    Piece(String),
    Pause(Duration),
    End,
    /// The connection closes, the body unfinished.
    Cut,
}

fn route(path: &str, token: &str) -> Vec<Step> {
    let event = |data: &str| Step::Piece(format!("data: {data}\n\n"));
    let mut steps = vec![event(r#"{"delta":"the"}"#), Step::Pause(PAUSE)];
    if let Some(name) = path.strip_prefix("/stream/echo-") {
        let echo = form(token, name);
        let (head, tail) = echo.split_at(echo.len() / 2);
        steps.extend([
            Step::Piece(format!("data: {{\"delta\":\" account {head}")),
            Step::Pause(PAUSE),
            Step::Piece(format!("{tail}\"}}\n\n")),
            Step::End,
        ]);
    } else if let Some(cause) = path.strip_prefix("/stream/error-") {
        let payload = ERRORS
            .iter()
            .find(|(name, _)| *name == cause)
            .map_or("{}", |(_, payload)| *payload);
        let name = if cause == "engine" {
            "event: error\n"
        } else {
            ""
        };
        steps.extend([Step::Piece(format!("{name}data: {payload}\n\n")), Step::End]);
    } else if path == "/stream/cut" {
        steps.extend([Step::Piece("data: {\"delta\":\" ca".to_owned()), Step::Cut]);
    } else if path == "/stream/stall" {
        steps.extend([Step::Pause(STALL), Step::End]);
    } else if path == "/stream/comments" {
        for _ in 0..30 {
            steps.extend([
                Step::Pause(COMMENT_EVERY),
                Step::Piece(": keep-alive\n".to_owned()),
            ]);
        }
        steps.push(Step::End);
    } else {
        steps.push(Step::End);
    }
    steps
}

async fn serve(mut stream: TcpStream, token: String) {
    let Some(path) = read_path(&mut stream).await else {
        return;
    };
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for step in route(&path, &token) {
        let written = match step {
            Step::Piece(text) => {
                let framed = format!("{:x}\r\n{text}\r\n", text.len());
                stream.write_all(framed.as_bytes()).await
            }
            Step::Pause(pause) => {
                tokio::time::sleep(pause).await;
                Ok(())
            }
            Step::End => stream.write_all(b"0\r\n\r\n").await,
            Step::Cut => return,
        };
        if written.is_err() || stream.flush().await.is_err() {
            return;
        }
    }
}

/// The path of the request, once its head (and a small body) has arrived.
async fn read_path(stream: &mut TcpStream) -> Option<String> {
    let mut request = Vec::new();
    let mut buffer = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 || request.len() > 16 * 1024 {
            return None;
        }
        request.extend_from_slice(&buffer[..read]);
    }
    let line = String::from_utf8_lossy(&request);
    line.split(' ').nth(1).map(str::to_owned)
}
