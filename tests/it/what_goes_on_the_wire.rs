//! What a send puts on the wire (the README's security properties), read back from what a
//! wiremock engine on loopback received: one `POST` to the address, the body
//! byte for byte, the four headers, the token in the `authorization` header
//! and nowhere else, and never a second request behind the caller's back.

use std::sync::Arc;

use bytes::Bytes;
use meterwire::{Cause, USER_AGENT};
use wiremock::matchers::{header, path, query_param};
use wiremock::{MockServer, Request, ResponseTemplate};

use crate::support::engines::{any_request, engine_with, posts};
use crate::support::{SCOPE, TOKEN, transport_for};

const PATH: &str = "/v1/predict";

/// An engine answering every request with `status` and an empty JSON body,
/// expecting exactly `requests` of them (one send is one request); the tests
/// read what it received rather than matching up front, so a wrong request
/// shows up as a wrong value, not as a 404.
async fn engine(status: u16, requests: u64) -> MockServer {
    engine_with([any_request()
        .respond_with(ResponseTemplate::new(status).set_body_string("{}"))
        .expect(requests)])
    .await
}

fn address_of(server: &MockServer) -> String {
    format!("{}{PATH}", server.uri())
}

async fn received(server: &MockServer) -> Vec<Request> {
    server
        .received_requests()
        .await
        .expect("wiremock records requests")
}

/// The one request a single send made.
async fn the_one_request(server: &MockServer) -> Request {
    let mut requests = received(server).await;
    assert_eq!(requests.len(), 1, "one send, {} requests", requests.len());
    requests.remove(0)
}

fn header_value<'r>(request: &'r Request, name: &str) -> Vec<&'r str> {
    request
        .headers
        .get_all(name)
        .iter()
        .map(|value| value.to_str().expect("a visible-ASCII header"))
        .collect()
}

#[tokio::test]
async fn a_send_is_one_post_to_the_address_path() {
    let server = engine(200, 1).await;
    transport_for(&address_of(&server), SCOPE)
        .send("{}")
        .await
        .expect("answered");
    let request = the_one_request(&server).await;
    assert_eq!(request.method.as_str(), "POST");
    assert_eq!(request.url.path(), PATH);
}

#[tokio::test]
async fn the_query_of_the_address_is_preserved_on_the_wire() {
    let server = engine_with([posts()
        .and(path(PATH))
        .and(query_param("model", "small"))
        .and(query_param("region", "eu"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .expect(1)])
    .await;
    let address = format!("{}?model=small&region=eu", address_of(&server));
    let answer = transport_for(&address, SCOPE)
        .send("{}")
        .await
        .expect("the matchers saw the query");
    assert_eq!(answer.status(), 200);
    let request = the_one_request(&server).await;
    assert_eq!(request.url.query(), Some("model=small&region=eu"));
}

#[tokio::test]
async fn a_non_ascii_json_body_arrives_byte_for_byte() {
    let server = engine(200, 1).await;
    let body = r#"{"question":"héllo wörld 🦀 — ¿qué?","n":1}"#;
    transport_for(&address_of(&server), SCOPE)
        .send(body)
        .await
        .expect("answered");
    assert_eq!(the_one_request(&server).await.body, body.as_bytes());
}

#[tokio::test]
async fn a_body_that_is_not_json_is_sent_unchanged_because_the_transport_does_not_validate_it() {
    let server = engine(200, 1).await;
    let body: &[u8] = b"not json {\"unterminated\": [1, 2,\n\x00\xff\xfe trailing";
    transport_for(&address_of(&server), SCOPE)
        .send(Bytes::from_static(body))
        .await
        .expect("answered");
    assert_eq!(the_one_request(&server).await.body, body);
}

#[tokio::test]
async fn an_empty_body_is_sent_as_an_empty_body() {
    let server = engine(200, 1).await;
    transport_for(&address_of(&server), SCOPE)
        .send(Bytes::new())
        .await
        .expect("answered");
    assert!(the_one_request(&server).await.body.is_empty());
}

#[tokio::test]
async fn the_request_says_it_sends_and_accepts_json() {
    let server = engine(200, 1).await;
    transport_for(&address_of(&server), SCOPE)
        .send("{}")
        .await
        .expect("answered");
    let request = the_one_request(&server).await;
    assert_eq!(header_value(&request, "content-type"), ["application/json"]);
    assert_eq!(header_value(&request, "accept"), ["application/json"]);
}

#[tokio::test]
async fn the_token_is_sent_as_one_bearer_authorization_header() {
    let server = engine_with([posts()
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .expect(1)])
    .await;
    transport_for(&address_of(&server), SCOPE)
        .send("{}")
        .await
        .expect("the matcher saw the bearer header");
    let request = the_one_request(&server).await;
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(header_value(&request, "authorization"), [bearer.as_str()]);
}

#[tokio::test]
async fn the_user_agent_names_the_crate_and_its_version() {
    assert!(USER_AGENT.starts_with("meterwire/"), "{USER_AGENT}");
    assert!(
        USER_AGENT.contains(env!("CARGO_PKG_VERSION")),
        "{USER_AGENT}"
    );
    let server = engine(200, 1).await;
    transport_for(&address_of(&server), SCOPE)
        .send("{}")
        .await
        .expect("answered");
    let request = the_one_request(&server).await;
    assert_eq!(header_value(&request, "user-agent"), [USER_AGENT]);
}

#[tokio::test]
async fn the_token_is_nowhere_on_the_wire_but_the_authorization_header() {
    let server = engine(200, 1).await;
    let address = format!("{}?model=small", address_of(&server));
    transport_for(&address, SCOPE)
        .send(r#"{"question":"what is my token?"}"#)
        .await
        .expect("answered");
    let request = the_one_request(&server).await;
    assert!(!request.url.as_str().contains(TOKEN), "{}", request.url);
    assert!(
        !String::from_utf8_lossy(&request.body).contains(TOKEN),
        "the token is in the body"
    );
    for (name, value) in &request.headers {
        if name.as_str() != "authorization" {
            assert!(
                !String::from_utf8_lossy(value.as_bytes()).contains(TOKEN),
                "the token is in the {name} header"
            );
        }
    }
}

#[tokio::test]
async fn a_503_is_not_retried() {
    let server = engine(503, 1).await;
    let refusal = transport_for(&address_of(&server), SCOPE)
        .send("{}")
        .await
        .expect_err("a 503 is refused");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(received(&server).await.len(), 1, "the send was retried");
}

#[tokio::test]
async fn each_send_is_exactly_one_request() {
    let server = engine(200, 3).await;
    let transport = transport_for(&address_of(&server), SCOPE);
    for n in 1..=3 {
        transport.send("{}").await.expect("answered");
        assert_eq!(received(&server).await.len(), n);
    }
}

#[tokio::test]
async fn a_cloned_transport_sends_to_the_same_engine_with_the_same_token() {
    let server = engine(200, 1).await;
    let original = transport_for(&address_of(&server), SCOPE);
    let clone = original.clone();
    drop(original);
    let answer = clone.send("{}").await.expect("the clone answers");
    assert_eq!(answer.text(), "{}");
    let request = the_one_request(&server).await;
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(header_value(&request, "authorization"), [bearer.as_str()]);
    assert_eq!(request.url.path(), PATH);
}

#[tokio::test]
async fn a_transport_can_be_shared_across_tasks() {
    let server = engine(200, 4).await;
    let transport = Arc::new(transport_for(&address_of(&server), SCOPE));
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let transport = transport.clone();
            tokio::spawn(async move { transport.send(format!("{{\"i\":{i}}}")).await })
        })
        .collect();
    for task in tasks {
        task.await.expect("the task ran").expect("answered");
    }
    let mut bodies: Vec<Vec<u8>> = received(&server)
        .await
        .into_iter()
        .map(|r| r.body)
        .collect();
    bodies.sort();
    let expected: Vec<Vec<u8>> = (0..4)
        .map(|i| format!("{{\"i\":{i}}}").into_bytes())
        .collect();
    assert_eq!(bodies, expected);
}
