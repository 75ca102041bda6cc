//! Conceal at the door: whatever the engine sends is concealed
//! as it enters, and everything the crate derives from engine text (a retry
//! delay, a redirect's host, a challenge's parameters, the engine's words)
//! is derived from concealed text. Each test is a path by which a token once
//! got through a parser, a cut or a reshaping, through `send` against a
//! loopback engine.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use meterwire::{Cause, Env, HttpTransport, REDACTED, Refusal};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::engines::engine_expecting;
use crate::support::forms::wrap;
use crate::support::{ADDRESS_VAR, SCOPE, TOKEN, TOKEN_VAR};

async fn refusal_with(token: &str, response: ResponseTemplate) -> Refusal {
    let engine = engine_expecting(1, response).await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            (ADDRESS_VAR, engine.uri().as_str()),
            (TOKEN_VAR, token),
        ]))
        .build()
        .expect("builds");
    transport.send("{}").await.expect_err("refused")
}

fn shown(refusal: &Refusal) -> String {
    format!("{}\n{}\n{refusal:?}", refusal.report().to_json(), refusal)
}

#[tokio::test]
async fn a_digits_only_token_in_a_retry_hint_is_never_a_delay() {
    let token = "83920174650193";
    let hex: String = token.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(
        hex.bytes().all(|b| b.is_ascii_digit()),
        "the token's hex is digits too"
    );
    for (header, value) in [
        ("retry-after", token.to_owned()),
        ("retry-after-ms", token.to_owned()),
        ("ratelimit", format!("\"default\";r=0;t={token}")),
        ("ratelimit-reset", token.to_owned()),
        ("retry-after", hex.clone()),
    ] {
        let refusal = refusal_with(
            token,
            ResponseTemplate::new(429).insert_header(header, value.as_str()),
        )
        .await;
        assert_eq!(refusal.cause(), Cause::EngineOverQuota);
        assert_eq!(
            refusal.retry_after(),
            None,
            "{header}: {value} became a number"
        );
        let text = shown(&refusal);
        assert!(
            !text.contains(token) && !text.contains(&hex),
            "{header}: {text}"
        );
        assert!(!text.contains("retryAfter"), "{text}");
        if header == "retry-after" {
            assert!(
                refusal
                    .reason()
                    .contains(&format!("retry after {REDACTED}")),
                "{}",
                refusal.reason()
            );
        }
    }
}

#[tokio::test]
async fn a_token_holding_a_less_than_sign_is_not_cut_by_the_html_reader() {
    let token = "mw-ab<cd-9f3k2Q7";
    for page in [
        format!("<html><body><p>bad token {token} rejected</p></body></html>"),
        format!(
            "<!DOCTYPE html><html><head><title>bad token {token} rejected</title></head></html>"
        ),
    ] {
        let refusal = refusal_with(
            token,
            ResponseTemplate::new(403).set_body_raw(page, "text/html"),
        )
        .await;
        assert!(
            refusal
                .reason()
                .contains(&format!("\"bad token {REDACTED} rejected\"")),
            "{}",
            refusal.reason()
        );
        assert!(!shown(&refusal).contains("mw-ab"), "{}", shown(&refusal));
    }
}

#[tokio::test]
async fn a_token_in_a_redirects_host_is_not_lower_cased_into_the_reason() {
    let refusal = refusal_with(
        TOKEN,
        ResponseTemplate::new(302)
            .insert_header("location", format!("https://{TOKEN}.example/next").as_str()),
    )
    .await;
    let text = shown(&refusal);
    assert!(!text.contains(&TOKEN.to_lowercase()), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
    assert!(refusal.reason().contains(REDACTED), "{}", refusal.reason());
}

#[tokio::test]
async fn an_unquoted_challenge_parameter_is_not_cut_before_it_is_concealed() {
    // A token with the characters that end an unquoted parameter, and one
    // whose base64 ends in padding.
    for token in ["mw-long-prefix-7Qx,9z-Ab", "mw-long-prefix-7Qx=9z-Ab"] {
        let challenge = format!("Bearer error=invalid_token, error_description={token}");
        let refusal = refusal_with(
            token,
            ResponseTemplate::new(401).insert_header("www-authenticate", challenge.as_str()),
        )
        .await;
        let text = shown(&refusal);
        assert!(!text.contains("mw-long-prefix"), "{text}");
        assert!(refusal.reason().contains(REDACTED), "{}", refusal.reason());
    }

    let token = "mw-padded-token-0123456";
    let encoded = STANDARD.encode(token);
    assert!(encoded.ends_with('='), "{encoded}");
    let challenge = format!("Bearer error=invalid_token, error_description={encoded}");
    let refusal = refusal_with(
        token,
        ResponseTemplate::new(401).insert_header("www-authenticate", challenge.as_str()),
    )
    .await;
    let text = shown(&refusal);
    let core = encoded.trim_end_matches('=');
    assert!(!text.contains(&core[..core.len() - 2]), "{text}");
    assert!(refusal.reason().contains(REDACTED), "{}", refusal.reason());
}

#[tokio::test]
async fn no_bound_cuts_inside_an_escape() {
    for escape in ["&#655;", "\\u00e9", "%41", "&amp;"] {
        for pad in 194..200 {
            let body = format!("{}{escape} and more words after it", "x".repeat(pad));
            let refusal =
                refusal_with(TOKEN, ResponseTemplate::new(500).set_body_string(body)).await;
            let reason = refusal.reason();
            let said = reason
                .split("the engine said: \"")
                .nth(1)
                .expect("the engine's words")
                .trim_end_matches('"');
            for cut in 1..escape.len() {
                assert!(
                    !said.ends_with(&escape[..cut]),
                    "{escape} at {pad}: the words end in a cut escape: {said:?}"
                );
            }
        }
    }
}

/// Random tokens over the whole visible-ASCII alphabet (and digits-only
/// ones), echoed in a random form into every header the crate reads and
/// into JSON, HTML and plain bodies at random offsets, across the bounds of
/// the engine's words (200 characters) and of a reason (999): no output
/// holds any form of the token, and no number is read from it.
#[test]
fn random_tokens_echoed_anywhere_come_out_nowhere() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    use reqwest::header::HeaderValue;

    use crate::support::forms::{assert_no_form, forms};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let engine = runtime.block_on(MockServer::start());
    let token = prop_oneof!["[!-~]{8,28}", "[0-9]{8,16}", "[a-zA-Z0-9<,=\"\\\\%&]{8,20}",];
    let status = prop::sample::select(vec![200u16, 302, 401, 402, 403, 429, 500, 503]);
    let strategy = (
        token,
        status,
        any::<prop::sample::Index>(),
        0usize..1100,
        0usize..3,
    );
    let mut runner = TestRunner::new(Config::with_cases(64));
    let result = runner.run(&strategy, |(token, status, pick, offset, shape)| {
        let all = forms(&token);
        let (form_name, echo) = all[pick.index(all.len())].clone();
        let filler = "lorem ipsum dolor sit amet ".repeat(offset / 27 + 1);
        let filler = &filler[..offset];
        let body = match shape {
            0 => {
                serde_json::json!({"error": {"message": format!("{filler}{echo} end")}}).to_string()
            }
            1 => format!("<html><body><p>{filler}{echo} end</p></body></html>"),
            _ => format!("{filler}{echo} end"),
        };
        let mut response = ResponseTemplate::new(status).set_body_string(body);
        for (name, value) in [
            ("x-request-id", echo.clone()),
            ("request-id", echo.clone()),
            ("retry-after", echo.clone()),
            ("retry-after-ms", echo.clone()),
            ("ratelimit", format!("\"default\";r=0;t={echo}")),
            ("x-ratelimit-remaining-requests", "0".to_owned()),
            ("x-ratelimit-reset-requests", echo.clone()),
            (
                "www-authenticate",
                // The scope is quoted, so the echo goes in without its
                // quotes and backslashes, each replaced: removed, a token
                // ending in `\` would leave its own prefix before the
                // report's `\"`, and the report would spell the token.
                format!(
                    "Bearer error=invalid_token, error_description={echo}, scope=\"{}\"",
                    echo.replace(['"', '\\'], "_")
                ),
            ),
            ("location", format!("https://{echo}.example/{echo}")),
        ] {
            if HeaderValue::from_str(&value).is_ok() {
                response = response.insert_header(name, value.as_str());
            }
        }
        let outcome = runtime.block_on(async {
            engine.reset().await;
            Mock::given(method("POST"))
                .respond_with(response)
                .mount(&engine)
                .await;
            let transport = HttpTransport::builder(SCOPE)
                .env(Env::from_pairs([
                    (ADDRESS_VAR, engine.uri().as_str()),
                    (TOKEN_VAR, token.as_str()),
                ]))
                .respect_limits(false)
                .build()
                .expect("builds");
            transport.send("{}").await
        });
        let context = format!("HTTP {status}, {form_name}, offset {offset}, shape {shape}");
        match outcome {
            Ok(answer) => {
                assert_no_form(&token, &context, answer.text());
                if let Some(id) = answer.request_id() {
                    assert_no_form(&token, &context, id);
                }
            }
            Err(refusal) => {
                assert_no_form(&token, &context, &shown(&refusal));
                if token.bytes().all(|b| b.is_ascii_digit()) && echo == token {
                    prop_assert_eq!(refusal.retry_after(), None, "{}", context);
                }
            }
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

/// Forms across lines, through `send`: base64 wrapped at any
/// width (MIME 76, PEM 64, others) with `LF`, `CRLF` or JSON's `\n`, and the
/// token hard-wrapped by one line break. The whole broken occurrence is one
/// `[redacted]` (of base64, from the first to the last character that
/// carries the token's bits), in an answer and in the engine's words alike.
#[tokio::test]
async fn a_token_broken_across_lines_is_concealed_whole_in_answers_and_refusals() {
    let engine = MockServer::start().await;
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            (ADDRESS_VAR, engine.uri().as_str()),
            (TOKEN_VAR, TOKEN),
        ]))
        .build()
        .expect("builds");
    let mut echoes = Vec::new();
    for prefix in ["", "Bearer ", "user:"] {
        let encoded = STANDARD.encode(format!("{prefix}{TOKEN}"));
        for (width, line_break) in [(76, "\n"), (64, "\r\n"), (5, "\\n"), (13, "\\r\\n")] {
            echoes.push(wrap(&encoded, width, line_break));
        }
    }
    for at in [1, 7, TOKEN.len() - 1] {
        let (head, tail) = TOKEN.split_at(at);
        for line_break in ["\n", "\r\n", "\\n"] {
            echoes.push(format!("{head}{line_break}{tail}"));
        }
    }
    for echo in echoes {
        for status in [200, 402] {
            engine.reset().await;
            Mock::given(method("POST"))
                .respond_with(
                    ResponseTemplate::new(status).set_body_string(format!("said: {echo} (end)")),
                )
                .expect(1)
                .mount(&engine)
                .await;
            let text = match transport.send("{}").await {
                Ok(answer) => answer.into_text(),
                Err(refusal) => refusal.reason().to_owned(),
            };
            let concealed = crate::support::forms::concealed(&echo, TOKEN);
            assert!(
                text.contains(&format!("said: {concealed} (end)")),
                "{echo:?}: {text}"
            );
            crate::support::forms::assert_no_form(TOKEN, &format!("{echo:?}"), &text);
        }
    }
}

/// A lenient reader drops the backslash of an escape it does not know, so
/// `m\w-test-…` and `\x41…` read as the token to it.
#[tokio::test]
async fn unknown_escapes_are_read_as_a_lenient_reader_reads_them() {
    let token = "mw-x41-Q7vX2kP9zR4t";
    for echo in [
        r"m\w-x41-Q7vX2kP9zR4t",
        r"mw-\x41-Q7vX2kP9zR4t",
        r"mw\-x41-Q7v\X2kP9zR4t",
    ] {
        let refusal = refusal_with(
            token,
            ResponseTemplate::new(402).set_body_string(format!("account {echo} is empty")),
        )
        .await;
        assert!(
            refusal
                .reason()
                .contains(&format!("\"account {REDACTED} is empty\"")),
            "{echo}: {}",
            refusal.reason()
        );
    }
}

/// A token hard-wrapped by a line break that is itself escaped (`\u000a`,
/// `%0A`, `&#10;`, a raw CR beside a JSON `\n`) reads, to a JSON, URL or
/// HTML reader, as the token broken by one line break: through `send`, in
/// a `401`'s words and in an answer alike, the whole occurrence is one
/// `[redacted]`.
#[tokio::test]
async fn a_token_broken_by_an_escaped_line_break_never_reaches_a_reader() {
    use crate::support::forms::{ESCAPED_BREAKS, MIXED_TOKEN, assert_no_form};

    let refusal = refusal_with(
        MIXED_TOKEN,
        ResponseTemplate::new(401)
            .set_body_string(r"key mw_live_4f+\u000aAb/9zQ7vX2kP9zR4tL8wN rejected"),
    )
    .await;
    assert!(
        refusal
            .reason()
            .contains(&format!("key {REDACTED} rejected")),
        "{}",
        refusal.reason()
    );
    assert!(
        !shown(&refusal).contains("mw_live_4f"),
        "{}",
        shown(&refusal)
    );

    let engine = MockServer::start().await;
    let transport = crate::support::builder_for(&engine.uri(), SCOPE)
        .env(Env::from_pairs([
            (ADDRESS_VAR, engine.uri().as_str()),
            (TOKEN_VAR, MIXED_TOKEN),
        ]))
        .build()
        .expect("builds");
    let (head, tail) = MIXED_TOKEN.split_at(11);
    for line_break in ESCAPED_BREAKS {
        engine.reset().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_string(format!("{{\"key\":\"{head}{line_break}{tail}\"}}")),
            )
            .expect(1)
            .mount(&engine)
            .await;
        let answer = transport.send("{}").await.expect("an answer");
        assert_eq!(
            answer.text(),
            format!("{{\"key\":\"{REDACTED}\"}}"),
            "{line_break:?}"
        );
        assert_no_form(MIXED_TOKEN, line_break, answer.text());
    }
}
