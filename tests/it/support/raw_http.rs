//! The one piece of HTTP/1.1 the hand-written test servers need: reading a
//! request, so they can answer it in ways wiremock cannot (TLS, a body that
//! drips or never ends, bytes that are not HTTP).

use tokio::io::{AsyncRead, AsyncReadExt};

/// Reads one request's head and its `content-length` body; `None` when the
/// peer goes away first or sends more than a request should.
pub async fn read_request(stream: &mut (impl AsyncRead + Unpin)) -> Option<Vec<u8>> {
    const LIMIT: usize = 64 * 1024;
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buffer.len() > LIMIT {
            return None;
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    if length > LIMIT {
        return None;
    }
    while buffer.len() < head_end + length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    Some(buffer)
}

/// The body of a request as [`read_request`] returns it: what follows the
/// blank line that ends its head.
pub fn body_of(request: &[u8]) -> &[u8] {
    request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(&[], |at| &request[at + 4..])
}

/// A loopback server of one's own: each of at most `connections`
/// connections has its request read, then is handed to `answer`, which
/// writes what the case needs (a stall, a reset, bytes no mock server
/// sends). Returns the `http://127.0.0.1:port` address; the server stops by
/// itself after its last connection.
pub async fn answering<F, Fut>(connections: usize, answer: F) -> String
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        for _ in 0..connections {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            if read_request(&mut stream).await.is_some() {
                tokio::spawn(answer(stream));
            }
        }
    });
    address
}
