//! No engine can crash, brick or mislead the transport: a number too large
//! for any clock, rate-limit fields on the wrong status, two retry hints at
//! once, error shapes other clients write, an answer that fails after its
//! head, a proxy that is down, and a caller's option that holds a secret.
//! Each case is an engine on loopback that answers as a hostile (or just
//! unusual) one would, and each counts the requests it received.

use std::time::Duration;

use meterwire::{BuildError, Cause, HttpTransport, Refusal, Report};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wiremock::ResponseTemplate;

use crate::support::engines::engine_expecting;
use crate::support::raw_http::answering;
use crate::support::{GUARD, SCOPE, TOKEN, assert_refusal_shape, builder_for, transport_for};

/// Far more seconds than any clock holds: `Instant + Duration` panics on it.
const HUGE: &str = "99999999999999999999999999999999999";

async fn refused(transport: &HttpTransport) -> Refusal {
    tokio::time::timeout(GUARD, transport.send("{}"))
        .await
        .expect("the send ends by itself")
        .expect_err("a refusal")
}

#[track_caller]
fn assert_round_trips(refusal: &Refusal) {
    let json = refusal.report().to_json();
    let back: Report = serde_json::from_str(&json).expect("the report parses");
    assert_eq!(back.refusal(), refusal, "{json}");
}

// ---------------------------------------------------------------------------
// Numbers too large for any clock.

#[tokio::test]
async fn a_retry_after_too_long_for_any_clock_is_a_refusal_then_a_capped_hold() {
    let server = engine_expecting(
        1,
        ResponseTemplate::new(429).insert_header("retry-after", HUGE),
    )
    .await;
    let transport = transport_for(&server.uri(), SCOPE);

    let first = refused(&transport).await;
    assert_eq!(first.cause(), Cause::EngineOverQuota);
    assert_eq!(first.status(), Some(429));
    // The engine's wait as sent, saturated to what fits.
    assert_eq!(first.retry_after(), Some(Duration::from_secs(u64::MAX)));
    assert!(first.reason().contains(&format!("retry after {HUGE}")));
    assert_round_trips(&first);

    let held = refused(&transport).await;
    assert_eq!(held.cause(), Cause::EngineOverQuota);
    assert_eq!(held.attempts(), 0, "not sent");
    let left = held.retry_after().expect("the time left");
    assert!(left <= Duration::from_secs(24 * 3600), "{left:?}");
    assert!(left > Duration::from_secs(23 * 3600), "{left:?}");
    assert!(
        held.reason()
            .contains("longer than the longest hold this transport keeps, so the hold was cut to"),
        "{}",
        held.reason()
    );
    assert_refusal_shape(&held);
    assert_eq!(transport.meter().held(), 1);
}

#[tokio::test]
async fn rate_limit_fields_too_long_for_any_clock_hold_for_the_ceiling() {
    for headers in [
        vec![("ratelimit", format!("\"d\";r=0;t={HUGE}"))],
        vec![
            ("ratelimit-remaining", "0".to_owned()),
            ("ratelimit-reset", HUGE.to_owned()),
        ],
    ] {
        let mut answer = ResponseTemplate::new(200).set_body_string("{}");
        for (name, value) in &headers {
            answer = answer.insert_header(*name, value.as_str());
        }
        let server = engine_expecting(1, answer).await;
        let transport = builder_for(&server.uri(), SCOPE)
            .max_hold(Duration::from_secs(60))
            .build()
            .expect("builds");
        transport
            .send("{}")
            .await
            .expect("an answer, whatever its headers say");
        let held = refused(&transport).await;
        assert_eq!(held.cause(), Cause::EngineOverQuota, "{headers:?}");
        let left = held.retry_after().expect("the time left");
        assert!(left <= Duration::from_secs(60), "{headers:?}: {left:?}");
        assert!(
            held.reason().contains("cut to 1 min"),
            "{headers:?}: {}",
            held.reason()
        );
    }
}

#[tokio::test]
async fn a_deadline_too_long_for_any_clock_still_sends() {
    let server = engine_expecting(2, ResponseTemplate::new(200).set_body_string("{}")).await;
    let transport = builder_for(&server.uri(), SCOPE)
        .deadline(Duration::MAX)
        .latch(Duration::MAX)
        .build()
        .expect("builds");
    transport.send("{}").await.expect("an answer");
    transport
        .call("{}")
        .deadline(Duration::MAX)
        .send()
        .await
        .expect("an answer");
}

// ---------------------------------------------------------------------------
// Holds that start where the engine says so.

#[tokio::test]
async fn a_429_with_only_rate_limit_fields_holds_for_their_reset() {
    // OpenAI's usual 429: no retry-after, the reset in its own header.
    let server = engine_expecting(
        1,
        ResponseTemplate::new(429)
            .insert_header("x-ratelimit-remaining-requests", "0")
            .insert_header("x-ratelimit-reset-requests", "6m0s")
            .set_body_string(
                r#"{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}"#,
            ),
    )
    .await;
    let transport = transport_for(&server.uri(), SCOPE);
    let first = refused(&transport).await;
    assert_eq!(first.retry_after(), Some(Duration::from_secs(360)));
    assert!(
        first
            .reason()
            .contains("retry after 6 min (x-ratelimit-reset-requests: 6m0s)"),
        "{}",
        first.reason()
    );
    for _ in 0..2 {
        let held = refused(&transport).await;
        assert_eq!(held.attempts(), 0, "{}", held.reason());
    }
    let meter = transport.meter();
    assert_eq!((meter.sends(), meter.attempts(), meter.held()), (3, 1, 2));
}

#[tokio::test]
async fn a_latched_refusal_names_its_subject_once() {
    let server = engine_expecting(1, ResponseTemplate::new(401)).await;
    let transport = builder_for(&server.uri(), SCOPE)
        .latch(Duration::from_secs(60))
        .build()
        .expect("builds");
    refused(&transport).await;
    let latched = refused(&transport).await;
    let subject = format!("scope \"{SCOPE}\": engine at");
    assert_eq!(
        latched.reason().matches(&subject).count(),
        1,
        "{}",
        latched.reason()
    );
    assert!(latched.reason().contains("latched, not sent"));
    assert!(latched.reason().contains("answered HTTP 401"));
    assert_refusal_shape(&latched);
}

// ---------------------------------------------------------------------------
// Words that point where the wire does.

#[tokio::test]
async fn the_reason_quotes_the_retry_header_whose_value_was_used() {
    let server = engine_expecting(
        1,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .insert_header("retry-after-ms", "250"),
    )
    .await;
    let refusal = refused(&transport_for(&server.uri(), SCOPE)).await;
    assert_eq!(refusal.retry_after(), Some(Duration::from_millis(250)));
    assert!(
        refusal
            .reason()
            .contains("retry after 0.250 s (retry-after-ms: 250)"),
        "{}",
        refusal.reason()
    );
    assert!(
        !refusal.reason().contains("retry after 1;"),
        "{}",
        refusal.reason()
    );
    assert!(refusal.remedy().contains("0.250 s"), "{}", refusal.remedy());
}

#[tokio::test]
async fn a_string_error_is_quoted_with_the_sentence_beside_it() {
    for (status, body, words) in [
        (
            401,
            r#"{"error": "invalid_token", "error_description": "The access token expired"}"#,
            "the engine said: \"The access token expired (invalid_token)\"",
        ),
        (
            400,
            r#"{"error": "SyntaxError", "message": "Unexpected token } in JSON at position 12"}"#,
            "the engine said: \"Unexpected token } in JSON at position 12 (SyntaxError)\"",
        ),
    ] {
        let server = engine_expecting(1, ResponseTemplate::new(status).set_body_string(body)).await;
        let refusal = refused(&transport_for(&server.uri(), SCOPE)).await;
        assert!(refusal.reason().contains(words), "{}", refusal.reason());
    }
}

#[tokio::test]
async fn a_408_or_425_says_the_engine_waited_or_was_asked_too_early() {
    for (status, says) in [
        (408, "timed out waiting for the request"),
        (425, "sent this early"),
    ] {
        let server = engine_expecting(1, ResponseTemplate::new(status)).await;
        let refusal = refused(&transport_for(&server.uri(), SCOPE)).await;
        assert!(refusal.reason().contains(says), "{}", refusal.reason());
        assert!(
            !refusal.reason().contains("refused the request itself"),
            "{}",
            refusal.reason()
        );
        assert!(
            refusal.remedy().starts_with("try again later"),
            "{}",
            refusal.remedy()
        );
    }
}

/// Writes a `200` head promising `declared` bytes, then `sent` of them.
async fn answer_then(mut stream: TcpStream, declared: usize, sent: &[u8], then: After) {
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {declared}\r\n\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(sent).await;
    let _ = stream.flush().await;
    match then {
        After::Stall => tokio::time::sleep(GUARD).await,
        After::Close => drop(stream),
    }
}

#[derive(Clone, Copy)]
enum After {
    Stall,
    Close,
}

#[tokio::test]
async fn a_failure_after_a_2xx_head_keeps_the_status_and_says_how_far_it_got() {
    let stall = answering(1, |stream| {
        answer_then(stream, 100, b"{\"partial\":", After::Stall)
    })
    .await;
    let reset = answering(1, |stream| {
        answer_then(stream, 100, b"{\"partial\":", After::Close)
    })
    .await;
    let not_text = answering(1, |stream| {
        answer_then(stream, 4, b"\xff\xfe{}", After::Close)
    })
    .await;
    let over = answering(1, |stream| {
        answer_then(stream, 4000, &[b'x'; 4000], After::Close)
    })
    .await;
    for (address, says) in [
        (
            &stall,
            "its body stopped after 11 bytes: no answer within 500 ms",
        ),
        (&reset, "after 11 bytes of the answer"),
        (&not_text, "not UTF-8 text (4 bytes arrived)"),
        (&over, "declares 4000 bytes, over the cap of 100 bytes"),
    ] {
        let transport = builder_for(address, SCOPE)
            .deadline(Duration::from_millis(500))
            .max_answer_bytes(100)
            .build()
            .expect("builds");
        let refusal = refused(&transport).await;
        assert_eq!(refusal.cause(), Cause::EngineUnreachable);
        assert_eq!(refusal.status(), Some(200), "{}", refusal.reason());
        assert!(
            refusal.reason().contains("answered HTTP 200, but"),
            "{}",
            refusal.reason()
        );
        assert!(refusal.reason().contains(says), "{}", refusal.reason());
        assert!(
            !refusal.reason().contains("did not answer"),
            "{}",
            refusal.reason()
        );
        assert_refusal_shape(&refusal);
    }
}

// ---------------------------------------------------------------------------
// A proxy that fails is named, and the remedy points at it.

fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("an address").port()
}

#[track_caller]
fn assert_names_the_proxy(refusal: &Refusal, proxy: &str, says: &str) {
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(refusal.reason().contains(says), "{}", refusal.reason());
    assert!(
        refusal.reason().contains(&format!("the proxy at {proxy}")),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.remedy().contains(&format!("the proxy {proxy}")),
        "{}",
        refusal.remedy()
    );
    assert!(
        !refusal.remedy().contains("check that the engine"),
        "{}",
        refusal.remedy()
    );
    assert_refusal_shape(refusal);
}

#[tokio::test]
async fn a_proxy_that_is_down_is_named_whatever_its_kind() {
    let engine = engine_expecting(0, ResponseTemplate::new(200)).await;
    // A SOCKS connector keeps the socket's error to itself: all it says is
    // that the proxy could not be reached.
    for (scheme, says) in [
        ("http", "the proxy refused the connection"),
        ("socks5", "the connection to the proxy could not be made"),
        ("socks5h", "the connection to the proxy could not be made"),
    ] {
        let proxy = format!("{scheme}://127.0.0.1:{}", dead_port());
        let transport = builder_for(&engine.uri(), SCOPE)
            .proxy(proxy.as_str())
            .build()
            .expect("a proxy of this kind builds");
        let refusal = refused(&transport).await;
        assert_names_the_proxy(&refusal, &proxy, says);
    }
}

#[tokio::test]
async fn a_proxy_that_asks_for_credentials_is_named() {
    const ASK: &[u8] = b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n";
    // An `https` engine is reached through a CONNECT tunnel; a plain `http`
    // one through the proxy itself, which answers 407 as a status.
    for engine in ["https://127.0.0.1:1/v1", "http://127.0.0.1:1/v1"] {
        let proxy = answering(1, |mut stream| async move {
            let _ = stream.write_all(ASK).await;
            let _ = stream.flush().await;
        })
        .await;
        let transport = builder_for(engine, SCOPE)
            .proxy(proxy.as_str())
            .build()
            .expect("builds");
        let refusal = refused(&transport).await;
        assert_names_the_proxy(&refusal, &proxy, "credentials");
        assert!(
            refusal.remedy().contains("credentials it asks for"),
            "{}",
            refusal.remedy()
        );
    }
}

/// A SOCKS5 proxy of one's own (RFC 1928: no authentication, `CONNECT` to
/// an IPv4 address): enough to prove the transport speaks it.
async fn socks5_proxy(connections: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        for _ in 0..connections {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut greeting = [0u8; 2];
                client.read_exact(&mut greeting).await.ok()?;
                let mut methods = vec![0u8; usize::from(greeting[1])];
                client.read_exact(&mut methods).await.ok()?;
                client.write_all(&[5, 0]).await.ok()?;
                let mut request = [0u8; 10];
                client.read_exact(&mut request).await.ok()?;
                let ip = std::net::Ipv4Addr::new(request[4], request[5], request[6], request[7]);
                let port = u16::from_be_bytes([request[8], request[9]]);
                let mut engine = TcpStream::connect((ip, port)).await.ok()?;
                client
                    .write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0])
                    .await
                    .ok()?;
                tokio::io::copy_bidirectional(&mut client, &mut engine)
                    .await
                    .ok()
            });
        }
    });
    format!("socks5://{address}")
}

#[tokio::test]
async fn a_socks5_proxy_carries_the_request() {
    let server = engine_expecting(
        1,
        ResponseTemplate::new(200).set_body_string("{\"via\":\"socks\"}"),
    )
    .await;
    let proxy = socks5_proxy(1).await;
    let transport = builder_for(&server.uri(), SCOPE)
        .proxy(proxy.as_str())
        .build()
        .expect("builds");
    let answer = tokio::time::timeout(GUARD, transport.send("{}"))
        .await
        .expect("ends")
        .expect("an answer through the proxy");
    assert_eq!(answer.text(), "{\"via\":\"socks\"}");
}

#[test]
fn a_proxy_the_transport_cannot_speak_is_refused_naming_its_scheme() {
    for proxy in ["ftp://proxy.example:21", "not a url"] {
        let error = HttpTransport::builder(SCOPE)
            .proxy(proxy)
            .build()
            .expect_err("refused");
        assert!(matches!(error, BuildError::Proxy { .. }), "{error:?}");
        let shown = error.to_string();
        assert!(
            shown.contains(proxy.split(':').next().unwrap_or(proxy)),
            "{shown}"
        );
        assert!(shown.contains("socks5://"), "{shown}");
    }
}

// ---------------------------------------------------------------------------
// What a caller gave is shown concealed.

#[test]
fn debug_conceals_a_scope_or_header_name_built_from_the_token() {
    let env = meterwire::Env::from_pairs([
        ("CHANT_BEHAVIOUR_ENGINE", "http://127.0.0.1:9/v1"),
        ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
    ]);
    let builder = HttpTransport::builder(format!("scope-{TOKEN}"))
        .env(env.clone())
        .header(format!("x-{TOKEN}"), "1");
    let shown = format!("{builder:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
    // An address or proxy given in code with the token in its path.
    let in_path = format!("http://127.0.0.1:9/{TOKEN}/v1");
    let builder = HttpTransport::builder(SCOPE)
        .env(env.clone())
        .address(&in_path)
        .proxy(&in_path);
    let shown = format!("{builder:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("127.0.0.1:9/[redacted]"), "{shown}");

    let transport = HttpTransport::builder(format!("scope-{TOKEN}"))
        .env(env)
        .build()
        .expect("builds");
    let call = transport.call("{}").header(format!("x-{TOKEN}"), "1");
    for shown in [format!("{transport:?}"), format!("{call:?}")] {
        assert!(!shown.contains(TOKEN), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}

// ---------------------------------------------------------------------------
// Any header set, through a real socket.

/// Arbitrary header sets on arbitrary statuses, from a server of one's own
/// on loopback: the transport never panics, every send ends in one answer
/// or refusal, and no output holds the token, though the values echo it.
#[test]
fn arbitrary_header_sets_through_a_real_socket_never_panic_or_leak() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use crate::support::forms::assert_no_form;

    const NAMES: [&str; 12] = [
        "retry-after",
        "retry-after-ms",
        "date",
        "ratelimit",
        "ratelimit-remaining",
        "ratelimit-reset",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
        "www-authenticate",
        "location",
        "x-request-id",
        "x-echo",
    ];
    let value = prop_oneof![
        "[ -~]{0,40}",
        "[0-9]{1,40}",
        Just(HUGE.to_owned()),
        Just(format!("\"d\";r=0;t={HUGE}")),
        Just("Sun, 06 Nov 1994 08:49:37 GMT".to_owned()),
        Just("6m0s".to_owned()),
        Just("0".to_owned()),
        Just(format!(
            "Bearer error=\"invalid_token\", error_description=\"{TOKEN}\""
        )),
        Just(TOKEN.to_owned()),
        Just(format!("https://{TOKEN}.example/?t={TOKEN}")),
    ];
    let header = (prop::sample::select(NAMES.to_vec()), value);
    let status = prop::sample::select(vec![
        200u16, 204, 301, 400, 401, 402, 403, 404, 407, 408, 429, 500, 503,
    ]);
    let strategy = (status, prop::collection::vec(header, 0..10), "[ -~]{0,64}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut runner = TestRunner::new(Config::with_cases(48));
    let result = runner.run(&strategy, |(status, headers, body)| {
        let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
        for (name, value) in &headers {
            head.push_str(&format!("{name}: {}\r\n", value.trim()));
        }
        head.push_str("\r\n");
        head.push_str(&body);
        let outcome = runtime.block_on(async {
            let wire = head.clone().into_bytes();
            let address = answering(1, move |mut stream| {
                let wire = wire.clone();
                async move {
                    let _ = stream.write_all(&wire).await;
                    let _ = stream.flush().await;
                }
            })
            .await;
            let transport = builder_for(&address, SCOPE)
                .max_hold(Duration::from_secs(5))
                .build()
                .expect("builds");
            let first = tokio::time::timeout(GUARD, transport.send("{}")).await;
            // What the first left behind (a hold, nothing) is met by the
            // next send without a panic either.
            let second = tokio::time::timeout(GUARD, transport.send("{}")).await;
            (first, second)
        });
        for outcome in [outcome.0, outcome.1] {
            let outcome = outcome.expect("the send ends by itself");
            let context = format!("HTTP {status}, {headers:?}");
            match outcome {
                Ok(answer) => {
                    assert_no_form(TOKEN, &context, answer.text());
                    assert_no_form(TOKEN, &context, &format!("{answer:?}"));
                }
                Err(refusal) => {
                    assert_refusal_shape(&refusal);
                    for shown in [
                        refusal.to_string(),
                        format!("{refusal:?}"),
                        refusal.report().to_json(),
                    ] {
                        assert_no_form(TOKEN, &context, &shown);
                    }
                }
            }
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

#[tokio::test]
async fn the_deadline_covers_the_concealment_of_the_answer() {
    // A highly repetitive token, echoed back to back for 4 MiB: every
    // offset is a hit. The answer arrives at once; concealing it is the
    // work, and the deadline covers it, piece by piece.
    let token = "ab".repeat(4000);
    let echo = token.repeat(512);
    let server = engine_expecting(1, ResponseTemplate::new(200).set_body_string(echo)).await;
    let transport = HttpTransport::builder(SCOPE)
        .env(meterwire::Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", token.clone()),
        ]))
        .deadline(Duration::from_millis(1500))
        .build()
        .expect("builds");
    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(GUARD, transport.send("{}"))
        .await
        .expect("the send ends by itself");
    let elapsed = started.elapsed();
    // The deadline, and one piece's concealment past it at most, with room
    // for a loaded machine; concealed whole after the body, this took
    // minutes.
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
    match outcome {
        Ok(answer) => assert_eq!(answer.text(), "[redacted]"),
        Err(refusal) => assert!(
            refusal.reason().contains("no answer within 1500 ms"),
            "{}",
            refusal.reason()
        ),
    }
}

/// An error body longer than the 64 KiB read of it, whose token is
/// hard-wrapped with its second line running past the cut: what is kept of
/// the head holds neither line of it (cut back at the last whitespace, it
/// would have held the first line whole, a form no concealer sees).
#[tokio::test]
async fn an_error_head_cut_inside_a_wrapped_token_keeps_no_part_of_it() {
    let (first, second) = TOKEN.split_at(12);
    let body = format!("rejected {first}\n{second}{}", "z".repeat(100 * 1024));
    let server = engine_expecting(1, ResponseTemplate::new(401).set_body_string(body)).await;
    let refusal = refused(&transport_for(&server.uri(), SCOPE)).await;
    assert_eq!(refusal.cause(), Cause::NoEngine);
    let report = refusal.report().to_json();
    assert!(!report.contains(first), "{report}");
    assert!(!report.contains(second), "{report}");
    assert_refusal_shape(&refusal);
}
