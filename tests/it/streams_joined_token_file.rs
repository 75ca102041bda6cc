//! A token read from a file is concealed in what a predictor joins, as a
//! token given in code is: the joined text's holds and its context come
//! from every secret the transport holds, a file's tokens among them. The
//! engine splits the token across 2, 3 and 8 deltas, in OpenAI's SSE chunks
//! and Ollama's NDJSON lines, and the transport reads its token from a file
//! given in code or named by the `_FILE` variable.

use std::path::PathBuf;

use meterwire::{Env, HttpTransport, REDACTED};
use serde_json::Value;

use crate::streams::{Engine, Step, chunk, engine, opened};
use crate::support::forms::assert_no_form;
use crate::support::{GUARD, SCOPE};

const FILE_TOKEN: &str = "mw-file-7Qx9Lm2Pz4Vb8Nc6Rt1Yw3K";

/// A file holding [`FILE_TOKEN`], removed on drop.
struct TokenFile(PathBuf);

impl TokenFile {
    fn new(name: &str) -> TokenFile {
        let path = std::env::temp_dir().join(format!(
            "meterwire-joined-token-file-{}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, format!("{FILE_TOKEN}\n")).expect("the token file is written");
        TokenFile(path)
    }
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// How the transport is told where its token file is.
#[derive(Clone, Copy, Debug)]
enum Given {
    InCode,
    ByVariable,
}

fn transport(engine: &Engine, file: &TokenFile, given: Given) -> HttpTransport {
    let address = engine.address.as_str();
    let path = file.0.display().to_string();
    match given {
        Given::InCode => HttpTransport::builder(SCOPE)
            .env(Env::from_pairs([("CHANT_BEHAVIOUR_ENGINE", address)]))
            .token_file(&file.0),
        Given::ByVariable => HttpTransport::builder(SCOPE).env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", address),
            ("CHANT_BEHAVIOUR_TOKEN_FILE", path.as_str()),
        ])),
    }
    .build()
    .expect("builds")
}

/// `text` cut into `parts` pieces of about the same length.
fn split(text: &str, parts: usize) -> Vec<&str> {
    let step = text.len().div_ceil(parts);
    (0..parts)
        .map(|n| &text[(n * step).min(text.len())..((n + 1) * step).min(text.len())])
        .collect()
}

fn openai(content: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
        serde_json::to_string(content).expect("a string")
    )
}

fn ollama(content: &str) -> String {
    format!(
        "{{\"model\":\"llama3.2\",\"message\":{{\"role\":\"assistant\",\"content\":{}}},\"done\":false}}\n",
        serde_json::to_string(content).expect("a string")
    )
}

/// The joined content of a stream that says `key: `, the file's token in
/// `parts` deltas, then ` ok`, read as events (`ndjson` false) or lines.
async fn joined(ndjson: bool, parts: usize, given: Given) -> String {
    let file = TokenFile::new(&format!("{ndjson}-{parts}-{given:?}"));
    let item = if ndjson { ollama } else { openai };
    let mut steps = vec![chunk(&item("key: "))];
    steps.extend(
        split(FILE_TOKEN, parts)
            .into_iter()
            .map(|part| chunk(&item(part))),
    );
    steps.push(chunk(&item(" ok")));
    steps.push(chunk(if ndjson {
        "{\"model\":\"llama3.2\",\"done\":true}\n"
    } else {
        "data: [DONE]\n\n"
    }));
    steps.push(Step::End);
    let content_type = if ndjson {
        "application/x-ndjson"
    } else {
        "text/event-stream"
    };
    let engine = engine(content_type, steps).await;
    let transport = transport(&engine, &file, given);
    let mut stream = opened(&transport).await;
    let mut text = String::new();
    loop {
        let data = if ndjson {
            tokio::time::timeout(GUARD, stream.next_line()).await
        } else {
            tokio::time::timeout(GUARD, stream.next_event())
                .await
                .map(|event| event.map(|event| event.map(|event| event.data().to_owned())))
        };
        let Some(data) = data.expect("the next item, or the end, arrives by itself") else {
            break;
        };
        let value: Value = serde_json::from_str(&data.expect("not refused")).expect("still JSON");
        let content = if ndjson {
            &value["message"]["content"]
        } else {
            &value["choices"][0]["delta"]["content"]
        };
        text.push_str(content.as_str().unwrap_or_default());
    }
    text
}

#[tokio::test]
async fn a_token_read_from_a_file_and_split_across_deltas_is_concealed_as_joined() {
    for ndjson in [false, true] {
        for parts in [2, 3, 8] {
            for given in [Given::InCode, Given::ByVariable] {
                let text = joined(ndjson, parts, given).await;
                let what = format!("ndjson: {ndjson}, {parts} deltas, the file given {given:?}");
                assert_no_form(FILE_TOKEN, &what, &text);
                assert_eq!(text, format!("key: {REDACTED} ok"), "{what}");
            }
        }
    }
}
