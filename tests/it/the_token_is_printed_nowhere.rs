//! The token appears in no string the crate produces, in any encoding.
//!
//! An engine (or anything in front of it) can echo the token back in its
//! body or headers, in whatever escaping its framework applies. These tests
//! make a wiremock engine do exactly that, in every form the concealer must catch,
//! into every kind of refusal and into an answer, and check that nothing the
//! caller can print (reason, remedy, `Display`, `Debug`, the JSON report,
//! the answer text) holds any of those forms.

use std::time::Duration;

use meterwire::{Cause, Env, HttpTransport};
use wiremock::{MockServer, Request, ResponseTemplate};

use crate::support::engines::engine;
use crate::support::forms::{
    assert_no_form, assert_refusal_clean, assert_refusal_echo_redacted, concealed, forms,
};

/// Every character a framework might escape: `+` (.NET), `/` (PHP), `<>&`
/// (Go), quotes (HTML), `=` (base64 padding lookalike), `%` and `\`.
const TOKEN: &str = r#"mw_live_4f+Ab/9z=Q&x<y>"z'%5\T"#;

/// An engine that answers whatever the request body asks for: the status,
/// and which form of the token to echo into the body and headers.
async fn echoing_engine() -> MockServer {
    engine(|request: &Request| {
        let ask: serde_json::Value =
            serde_json::from_slice(&request.body).unwrap_or(serde_json::Value::Null);
        let status = ask["status"].as_u64().unwrap_or(500) as u16;
        let index = ask["form"].as_u64().unwrap_or(0) as usize;
        let form = forms(TOKEN)
            .into_iter()
            .nth(index)
            .map(|(_, form)| form)
            .unwrap_or_default();
        let body = match ask["shape"].as_str() {
            Some("json") => {
                serde_json::json!({ "error": { "message": format!("token {form} refused") } })
                    .to_string()
            }
            _ => format!("the engine saw the token {form} and said no\nsecond line {form}"),
        };
        ResponseTemplate::new(status)
            .insert_header("retry-after", form.as_str())
            .insert_header(
                "location",
                format!("https://elsewhere.example/callback?t={form}").as_str(),
            )
            .insert_header("x-request-id", form.as_str())
            .insert_header(
                "www-authenticate",
                format!("Bearer error=\"invalid_token\", error_description=\"{form}\"").as_str(),
            )
            .set_body_string(body)
    })
    .await
}

fn transport(server: &MockServer) -> HttpTransport {
    HttpTransport::builder("leaks")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
        ]))
        .deadline(Duration::from_secs(10))
        .build()
        .expect("a valid configuration builds")
}

#[tokio::test]
async fn no_refusal_holds_the_token_in_any_form_the_engine_echoes() {
    let server = echoing_engine().await;
    let transport = transport(&server);
    let statuses = [
        (401, Cause::NoEngine),
        (403, Cause::NoEngine),
        (402, Cause::EngineOutOfCredit),
        (429, Cause::EngineOverQuota),
        (302, Cause::EngineUnreachable),
        (404, Cause::EngineUnreachable),
        (500, Cause::EngineUnreachable),
        (503, Cause::EngineUnreachable),
    ];
    for (index, (name, form)) in forms(TOKEN).iter().enumerate() {
        // What the echo becomes (base64 keeps the characters of what
        // precedes the token, which carry none of its bits).
        let echo = concealed(form, TOKEN);
        for (status, cause) in statuses {
            for shape in ["text", "json"] {
                let ask = serde_json::json!({ "status": status, "form": index, "shape": shape });
                let refusal = transport
                    .send(ask.to_string())
                    .await
                    .expect_err("a non-2xx status is a refusal");
                let context = format!("HTTP {status}, {shape} body, token as {name}");
                assert_eq!(refusal.cause(), cause, "HTTP {status}");
                assert_refusal_clean(TOKEN, &context, &refusal);
                // The echo did reach the refusal, concealed: the body's first
                // line is quoted whatever the status...
                let said = match shape {
                    "json" => format!("token {echo} refused"),
                    _ => format!("the engine saw the token {echo} and said no"),
                };
                assert!(
                    refusal.reason().contains(&said),
                    "{context}: the reason does not quote {said:?}: {}",
                    refusal.reason()
                );
                assert_refusal_echo_redacted(&context, &refusal);
                // ...and so is the request id.
                assert_eq!(refusal.request_id(), Some(echo.as_str()), "{context}");
                // `retry-after` is echoed for the statuses that read it.
                if matches!(status, 429 | 503) {
                    assert!(
                        refusal.reason().contains(&format!("retry after {echo}")),
                        "{context}: {}",
                        refusal.reason()
                    );
                }
                // The challenge's `error_description` of a 401 or 403: this
                // engine writes the form into the quoted string unescaped,
                // so a form holding a `"` or a `\` would reach a parser cut
                // short; concealed at the door, it is whole `[redacted]`.
                if matches!(status, 401 | 403) {
                    assert!(
                        refusal
                            .reason()
                            .contains(&format!("(invalid_token): \"{echo}\"")),
                        "{context}: {}",
                        refusal.reason()
                    );
                }
                // Not checked, because the refusal does not quote them at
                // all: the `location` of the 302, reduced to its host, so the
                // form in its query never reaches the reason; and the remedy,
                // which quotes an engine only for a challenge's `scope`, and
                // this challenge has none.
            }
        }
    }
}

#[tokio::test]
async fn an_answer_that_echoes_the_token_holds_none_of_its_forms() {
    let server = echoing_engine().await;
    let transport = transport(&server);
    for (index, (name, form)) in forms(TOKEN).iter().enumerate() {
        let echo = concealed(form, TOKEN);
        let ask = serde_json::json!({ "status": 200, "form": index, "shape": "json" });
        let answer = transport
            .send(ask.to_string())
            .await
            .expect("a 200 is an answer");
        assert_no_form(
            TOKEN,
            &format!("answer echoing the token as {name}"),
            answer.text(),
        );
        assert!(
            answer.text().contains(&format!("token {echo} refused")),
            "the echo was replaced: {}",
            answer.text()
        );
        assert_no_form(
            TOKEN,
            &format!("answer Debug, token as {name}"),
            &format!("{answer:?}"),
        );
    }
}

/// A token cut by a bound would leave its first characters behind; the
/// concealer runs first, so no prefix of four or more characters survives.
#[tokio::test]
async fn a_token_straddling_the_bounds_leaves_no_part_of_itself() {
    let server = engine(|request: &Request| {
        let text = String::from_utf8_lossy(&request.body).into_owned();
        let (filler, count) = text.split_once(':').unwrap_or(("a", "0"));
        let count: usize = count.parse().unwrap_or(0);
        ResponseTemplate::new(402).set_body_string(format!(
            "{}{TOKEN} and more words after it",
            filler.repeat(count)
        ))
    })
    .await;
    let transport = transport(&server);
    let prefixes: Vec<&str> = (4..TOKEN.len()).map(|n| &TOKEN[..n]).collect();
    for filler in ["a", "é", "🦀"] {
        for count in (180..=220).chain(280..=320) {
            let refusal = transport
                .send(format!("{filler}:{count}"))
                .await
                .expect_err("402 is a refusal");
            assert!(refusal.reason().chars().count() < 1000);
            for prefix in &prefixes {
                assert!(
                    !refusal.reason().contains(prefix),
                    "{count} × {filler:?} then the token left {prefix:?} behind:\n{}",
                    refusal.reason()
                );
            }
        }
    }
}

/// The head of an error body is read only so far; an echo cut at that limit
/// must not leave the token's first characters behind either.
#[tokio::test]
async fn a_token_cut_by_the_read_limit_leaves_no_part_of_itself() {
    let server = engine(|request: &Request| {
        let count: usize = String::from_utf8_lossy(&request.body).parse().unwrap_or(0);
        ResponseTemplate::new(500).set_body_string(format!(
            "{}{TOKEN}{}",
            "\n".repeat(count),
            "z".repeat(70_000)
        ))
    })
    .await;
    let transport = transport(&server);
    for count in [65_536 - 10, 65_536 - 6, 65_536 - 4, 65_536 - 1] {
        let refusal = transport
            .send(count.to_string())
            .await
            .expect_err("500 is a refusal");
        assert!(refusal.reason().contains("HTTP 500"));
        for n in 4..TOKEN.len() {
            assert!(
                !refusal.reason().contains(&TOKEN[..n]),
                "{count} line breaks then the token left {:?} behind:\n{}",
                &TOKEN[..n],
                refusal.reason()
            );
        }
    }
}

#[test]
fn nothing_built_from_the_token_prints_it() {
    let env = Env::from_pairs([
        (
            "CHANT_BEHAVIOUR_ENGINE",
            "https://engine.example/v1".to_owned(),
        ),
        ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
    ]);
    assert_no_form(TOKEN, "Env Debug", &format!("{env:?}"));
    let transport = HttpTransport::builder("leaks")
        .env(env)
        .build()
        .expect("builds");
    assert_no_form(TOKEN, "HttpTransport Debug", &format!("{transport:?}"));
    assert_no_form(
        TOKEN,
        "Concealer Debug",
        &format!("{:?}", transport.concealer()),
    );
}

/// A credential-named variable in the snapshot is as secret as the token:
/// an engine echoing it gets it concealed too.
#[tokio::test]
async fn a_credential_named_variable_echoed_by_the_engine_is_concealed() {
    const OTHER: &str = "db-password-0123456789";
    let server =
        engine(ResponseTemplate::new(500).set_body_string(format!("connect failed: {OTHER}")))
            .await;
    let transport = HttpTransport::builder("leaks")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", server.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
            ("DATABASE_PASSWORD", OTHER.to_owned()),
        ]))
        .build()
        .expect("builds");
    let refusal = transport.send("{}").await.expect_err("500 is a refusal");
    assert!(!refusal.to_string().contains(OTHER), "{refusal}");
    assert!(
        refusal.reason().contains("connect failed: [redacted]"),
        "{refusal}"
    );
}
