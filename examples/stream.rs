//! A streaming predictor in a page: it asks for a generation and prints
//! each piece of text as it arrives, concealed. Its engine streams
//! OpenAI-style chat chunks from 127.0.0.1, a word at a time, so it needs
//! nothing else.
use std::io::Write;
use std::time::Duration;

use meterwire::{HttpTransport, SecretString};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TOKEN: &str = "mw-example-0123456789";

/// Streams one word an event, echoing the token once, then `[DONE]`.
async fn engine() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = format!("http://{}/v1/generate", listener.local_addr()?);
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let _ = socket.read(&mut [0u8; 4096]).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n";
        let _ = socket
            .write_all(format!("{head}connection: close\r\n\r\n").as_bytes())
            .await;
        let words = format!("The cat sat on the mat ({TOKEN})");
        let chunk =
            |w: &str| format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"{w} "}}}}]}}"#);
        for word in words.split(' ').map(chunk) {
            let _ = socket
                .write_all(format!("data: {word}\n\n").as_bytes())
                .await;
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        let _ = socket.write_all(b"data: [DONE]\n\n").await;
    });
    Ok(address)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let transport = HttpTransport::builder("stream-example")
        .address(engine().await?)
        .token(SecretString::from(TOKEN))
        .idle_timeout(Duration::from_secs(5)) // the longest silence between pieces
        .build()?;
    let question = serde_json::json!({"prompt": "the cat", "stream": true});
    let mut stream = transport.stream_json(&question).await?;
    while let Some(delta) = stream.next_delta().await {
        let delta = delta?; // a refusal: an error inside the stream, a cut, a timer
        print!("{}", delta.text());
        std::io::stdout().flush()?; // each piece as it arrives
    }
    let first = transport.meter().first_byte(1.0).unwrap_or_default();
    println!("\nthe first byte came after {first:?}");
    Ok(())
}
