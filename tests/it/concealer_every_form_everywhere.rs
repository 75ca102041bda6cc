//! The form table: every form an echo of a token can take, standing
//! alone, at the start, at the end, inside a JSON string and between
//! base64 characters, written by an engine on loopback into a whole
//! answer, an error body, a header value, a refusal's reason and a stream
//! cut at every byte, for a long token and short ones. No form survives in
//! anything the crate hands back.
//!
//! One engine per place, answering every case (the request body names
//! it), so the table costs requests, not servers.

use std::sync::Arc;

use meterwire::{HttpTransport, REDACTED, Refusal, RetryPolicy};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use wiremock::{MockServer, Request, ResponseTemplate};

use crate::support::engines;
use crate::support::forms::{assert_none_of, every_form, placed};
use crate::support::raw_http::{body_of, read_request};
use crate::support::{ADDRESS_VAR, GUARD, SCOPE, TOKEN_VAR, env};

/// The token of the report this table answers: `/`, `+` and `=` make its
/// JSON, percent, HTML and two base64 forms differ from it, and its 33
/// characters put it at a different alignment from each prefix.
const TOKEN: &str = "acme/9f8e+7d6c=not-for-print-0042";

/// The tokens of the table: the long one, and short ones of 8, 12 and 16
/// characters, whose base64 cut short holds no more than a few bytes of
/// them (of 8, five).
const TOKENS: [&str; 4] = [TOKEN, "k+9/Qz=7", "ab/9z+Q7=x<y", "mw_live_4f+Ab/9z"];

/// One row of the table: which token (its place in [`TOKENS`]), which form,
/// where it stands, and the text the engine writes.
struct Case {
    token: usize,
    name: String,
    text: String,
}

/// The cases, and each token's forms.
struct Table {
    cases: Arc<Vec<Case>>,
    forms: Vec<Vec<(String, String)>>,
}

impl Table {
    fn new() -> Table {
        let forms: Vec<Vec<(String, String)>> = TOKENS.iter().map(|t| every_form(t)).collect();
        let mut cases = Vec::new();
        for (token, token_forms) in forms.iter().enumerate() {
            for (form_name, form) in token_forms {
                for (place, text) in placed(form) {
                    cases.push(Case {
                        token,
                        name: format!("{}: {form_name}, {place}", TOKENS[token]),
                        text,
                    });
                }
            }
        }
        Table {
            cases: Arc::new(cases),
            forms,
        }
    }

    /// Fails naming the case when `text` holds a form of its token.
    #[track_caller]
    fn assert_none(&self, case: &Case, what: &str, text: &str) {
        assert_none_of(&self.forms[case.token], TOKENS[case.token], what, text);
    }
}

/// The case a request asks for, by its number in the request body.
fn asked(body: &[u8]) -> usize {
    String::from_utf8_lossy(body).trim().parse().unwrap_or(0)
}

/// An engine that writes case `n`'s text where `place` says, for a request
/// whose body is `n`.
async fn engine(cases: Arc<Vec<Case>>, place: &'static str) -> MockServer {
    engines::engine(move |request: &Request| {
        let text = cases
            .get(asked(&request.body))
            .map(|case| case.text.clone())
            .unwrap_or_default();
        match place {
            "answer" => ResponseTemplate::new(200).set_body_string(text),
            "error body" => ResponseTemplate::new(400).set_body_string(text),
            "header" => ResponseTemplate::new(200)
                .insert_header("x-echo", text.as_str())
                .insert_header("x-request-id", text.as_str())
                .set_body_string("ok"),
            _ => ResponseTemplate::new(400).set_body_json(serde_json::json!({
                "error": { "message": text }
            })),
        }
    })
    .await
}

/// A transport for `address` that sends each request once, with `token`.
fn transport_with(address: &str, token: &str) -> HttpTransport {
    HttpTransport::builder(SCOPE)
        .env(env(&[(ADDRESS_VAR, address), (TOKEN_VAR, token)]))
        .retries(RetryPolicy::none())
        .deadline(GUARD)
        .build()
        .expect("a transport for loopback builds")
}

/// A transport for `address` with the long token.
fn transport(address: &str) -> HttpTransport {
    transport_with(address, TOKEN)
}

/// One transport for `address` per token of [`TOKENS`], in order.
fn transports(address: &str) -> Vec<HttpTransport> {
    TOKENS.iter().map(|t| transport_with(address, t)).collect()
}

/// Every string a refusal gives the caller holds none of the forms.
#[track_caller]
fn assert_refusal_holds_none(table: &Table, case: &Case, refusal: &Refusal) {
    for (part, text) in [
        ("reason", refusal.reason().to_owned()),
        ("remedy", refusal.remedy().to_owned()),
        ("Display", refusal.to_string()),
        ("Debug", format!("{refusal:?}")),
        ("report", refusal.report().to_json()),
    ] {
        table.assert_none(case, &format!("{}: {part}", case.name), &text);
    }
}

#[tokio::test]
async fn no_form_survives_in_a_whole_answer() {
    let table = Table::new();
    let cases = table.cases.clone();
    let server = engine(cases.clone(), "answer").await;
    let transports = transports(&server.uri());
    for (n, case) in cases.iter().enumerate() {
        let answer = transports[case.token]
            .send(n.to_string())
            .await
            .unwrap_or_else(|refusal| panic!("{}: refused: {refusal}", case.name));
        table.assert_none(case, &case.name, answer.text());
        assert!(
            answer.text().contains(REDACTED),
            "{}: {}",
            case.name,
            answer.text()
        );
    }
    assert_eq!(
        server.received_requests().await.map(|r| r.len()),
        Some(cases.len())
    );
}

#[tokio::test]
async fn no_form_survives_in_an_error_body() {
    let table = Table::new();
    let cases = table.cases.clone();
    let server = engine(cases.clone(), "error body").await;
    let transports = transports(&server.uri());
    for (n, case) in cases.iter().enumerate() {
        let refusal = transports[case.token]
            .send(n.to_string())
            .await
            .expect_err("a 400 is a refusal");
        assert_refusal_holds_none(&table, case, &refusal);
    }
    assert_eq!(
        server.received_requests().await.map(|r| r.len()),
        Some(cases.len())
    );
}

#[tokio::test]
async fn no_form_survives_in_a_refusal_s_reason() {
    let table = Table::new();
    let cases = table.cases.clone();
    let server = engine(cases.clone(), "reason").await;
    let transports = transports(&server.uri());
    for (n, case) in cases.iter().enumerate() {
        let refusal = transports[case.token]
            .send(n.to_string())
            .await
            .expect_err("a 400 is a refusal");
        assert_refusal_holds_none(&table, case, &refusal);
        // The engine's message is quoted, with the echo in it concealed.
        assert!(
            refusal.reason().contains(REDACTED),
            "{}: {}",
            case.name,
            refusal.reason()
        );
    }
}

#[tokio::test]
async fn no_form_survives_in_a_header_value() {
    let table = Table::new();
    let cases = table.cases.clone();
    let server = engine(cases.clone(), "header").await;
    let transports = transports(&server.uri());
    let mut sent = 0;
    for (n, case) in cases.iter().enumerate() {
        // A header value holds no raw line break: HTTP forbids one.
        if case.text.contains(['\r', '\n']) {
            continue;
        }
        let answer = transports[case.token]
            .send(n.to_string())
            .await
            .unwrap_or_else(|refusal| panic!("{}: refused: {refusal}", case.name));
        sent += 1;
        let echo = answer.header("x-echo").unwrap_or_default();
        table.assert_none(case, &format!("{}: x-echo", case.name), echo);
        assert!(echo.contains(REDACTED), "{}: {echo}", case.name);
        let id = answer.request_id().unwrap_or_default();
        table.assert_none(case, &format!("{}: request id", case.name), id);
        table.assert_none(case, &case.name, &format!("{answer:?}"));
    }
    assert!(
        sent * 2 > cases.len(),
        "only {sent} of {} cases sent",
        cases.len()
    );
}

/// An engine that streams case `n`'s event once for every place it can be
/// cut at: copy `c` is written as two chunks of the chunked body, cut
/// after its `c`-th byte, and the client's reader gets each chunk as a
/// piece of its own.
async fn streaming_engine(cases: Arc<Vec<Case>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        // Bounded: one connection per case.
        for _ in 0..cases.len() {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let Some(request) = read_request(&mut stream).await else {
                continue;
            };
            let event = cases
                .get(asked(body_of(&request)))
                .map(|case| format!("data: {}\n\n", case.text))
                .unwrap_or_default();
            let mut body = String::from(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                 transfer-encoding: chunked\r\nconnection: close\r\n\r\n",
            );
            for cut in 0..=event.len() {
                for piece in [&event[..cut], &event[cut..]] {
                    if !piece.is_empty() {
                        body.push_str(&format!("{:x}\r\n{piece}\r\n", piece.len()));
                    }
                }
            }
            body.push_str("0\r\n\r\n");
            if stream.write_all(body.as_bytes()).await.is_err() {
                continue;
            }
            let _ = stream.flush().await;
        }
    });
    address
}

#[tokio::test]
async fn no_form_survives_in_a_stream_cut_at_every_byte() {
    let table = Table::new();
    let cases = table.cases.clone();
    let address = streaming_engine(cases.clone()).await;
    let transports = transports(&address);
    for (n, case) in cases.iter().enumerate() {
        let transport = &transports[case.token];
        let mut stream = tokio::time::timeout(GUARD, transport.stream(n.to_string()))
            .await
            .expect("the head arrives")
            .unwrap_or_else(|refusal| panic!("{}: refused: {refusal}", case.name));
        let mut events = 0;
        while let Some(event) = tokio::time::timeout(GUARD, stream.next_event())
            .await
            .expect("the next event, or the end, arrives")
        {
            let event = event.unwrap_or_else(|refusal| panic!("{}: {refusal}", case.name));
            let what = format!("{}, event {events}", case.name);
            table.assert_none(case, &what, event.data());
            assert!(event.data().contains(REDACTED), "{what}: {}", event.data());
            events += 1;
        }
        let written = format!("data: {}\n\n", case.text).len() + 1;
        assert_eq!(events, written, "{}: one event per cut", case.name);
    }
}

/// An error head cut at its bound inside a run of letters keeps the
/// engine's words: only what could still begin or be inside a form of the
/// token is held back from it, and `maintenance` followed by a line break
/// and a run of `z` (in no pattern, two at a time) is not that.
#[tokio::test]
async fn an_error_head_cut_at_its_bound_keeps_the_engine_s_words() {
    let body = format!("<html>down for maintenance\n{}", "z".repeat(100 * 1024));
    let server =
        engines::engine_expecting(1, ResponseTemplate::new(503).set_body_string(body)).await;
    let refusal = transport(&server.uri())
        .send("{}")
        .await
        .expect_err("a 503 is a refusal");
    assert!(
        refusal.reason().contains("down for maintenance"),
        "{}",
        refusal.reason()
    );
}
