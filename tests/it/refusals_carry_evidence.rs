//! A refusal carries the evidence an operator acts on: when to retry, the
//! engine's request id, the engine's own words from its error shape, and why
//! a token was rejected. Every piece of it is concealed like the rest.

use std::time::{Duration, SystemTime};

use meterwire::{Cause, Refusal};
use serde_json::Value;
use wiremock::{MockServer, Request, ResponseTemplate};

use crate::support::engines::{engine, engine_expecting};
use crate::support::forms::{assert_refusal_clean, assert_refusal_echo_redacted, concealed, forms};
use crate::support::{SCOPE, TOKEN, TOKEN_VAR, assert_refusal_shape, transport_for};

/// The refusal of one send to an engine answering with `template`; the
/// engine expects exactly that one request.
async fn refusal_for(template: ResponseTemplate) -> Refusal {
    let server = engine_expecting(1, template).await;
    let refusal = transport_for(&server.uri(), SCOPE)
        .send("{}")
        .await
        .expect_err("a non-2xx status is a refusal");
    assert_refusal_shape(&refusal);
    refusal
}

fn report(refusal: &Refusal) -> Value {
    serde_json::from_str(&refusal.report().to_json()).expect("the report is JSON")
}

// ---------------------------------------------------------------------------
// Retry hints.

#[tokio::test]
async fn retry_after_in_seconds_is_a_delay_and_a_number_in_the_report() {
    let refusal = refusal_for(ResponseTemplate::new(429).insert_header("retry-after", "30")).await;
    assert_eq!(refusal.cause(), Cause::EngineOverQuota);
    assert_eq!(refusal.retry_after(), Some(Duration::from_secs(30)));
    assert_eq!(report(&refusal)["refusal"]["retryAfter"], 30);
    assert!(
        refusal.reason().contains("retry after 30"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn retry_after_as_a_future_http_date_is_the_time_until_then() {
    let at = SystemTime::now() + Duration::from_secs(900);
    let date = httpdate::fmt_http_date(at);
    let refusal =
        refusal_for(ResponseTemplate::new(429).insert_header("retry-after", date.as_str())).await;
    let delay = refusal.retry_after().expect("a date parses");
    // Whole seconds on both sides of the wire, and a moment in between.
    assert!(
        (Duration::from_secs(895)..=Duration::from_secs(901)).contains(&delay),
        "{delay:?}"
    );
    assert!(
        refusal.reason().contains(&format!("retry after {date}")),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn retry_after_as_a_past_http_date_is_zero() {
    let refusal = refusal_for(
        ResponseTemplate::new(429).insert_header("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
    )
    .await;
    assert_eq!(refusal.retry_after(), Some(Duration::ZERO));
    assert_eq!(report(&refusal)["refusal"]["retryAfter"], 0);
}

#[tokio::test]
async fn retry_after_ms_is_a_delay_in_milliseconds() {
    let refusal =
        refusal_for(ResponseTemplate::new(429).insert_header("retry-after-ms", "1500")).await;
    assert_eq!(refusal.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(report(&refusal)["refusal"]["retryAfter"], 1.5);
    assert!(
        refusal.reason().contains("retry after 1.500 s"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_ratelimit_reset_is_the_delay_when_there_is_no_retry_after() {
    let refusal = refusal_for(
        ResponseTemplate::new(429)
            .insert_header("ratelimit", "\"default\";r=0;t=42")
            .insert_header("ratelimit-policy", "\"default\";q=100;w=60"),
    )
    .await;
    assert_eq!(refusal.retry_after(), Some(Duration::from_secs(42)));
    assert!(
        refusal.reason().contains("retry after 42 s"),
        "{}",
        refusal.reason()
    );
    assert!(refusal.remedy().contains("42 s"), "{}", refusal.remedy());
}

#[tokio::test]
async fn a_malformed_retry_after_is_echoed_but_not_parsed() {
    let refusal =
        refusal_for(ResponseTemplate::new(429).insert_header("retry-after", "soon-ish")).await;
    assert_eq!(refusal.retry_after(), None);
    assert!(report(&refusal)["refusal"].get("retryAfter").is_none());
    assert!(
        refusal.reason().contains("retry after soon-ish"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_503_with_retry_after_carries_the_hint_too() {
    let refusal = refusal_for(ResponseTemplate::new(503).insert_header("retry-after", "120")).await;
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(refusal.retry_after(), Some(Duration::from_secs(120)));
}

// ---------------------------------------------------------------------------
// Request ids.

#[tokio::test]
async fn each_request_id_header_is_quoted_and_reported() {
    for header in [
        "x-request-id",
        "request-id",
        "x-amzn-requestid",
        "x-correlation-id",
        "cf-ray",
    ] {
        let refusal = refusal_for(ResponseTemplate::new(402).insert_header(header, "r-1")).await;
        assert_eq!(refusal.request_id(), Some("r-1"), "{header}");
        assert!(
            refusal.reason().contains("request id r-1"),
            "{header}: {}",
            refusal.reason()
        );
        assert_eq!(report(&refusal)["refusal"]["requestId"], "r-1", "{header}");
    }
}

#[tokio::test]
async fn a_refusal_without_a_request_id_has_no_request_id_key() {
    let refusal = refusal_for(ResponseTemplate::new(500)).await;
    assert_eq!(refusal.request_id(), None);
    assert!(report(&refusal)["refusal"].get("requestId").is_none());
}

// ---------------------------------------------------------------------------
// The engine's own words.

#[tokio::test]
async fn each_json_error_shape_yields_its_message() {
    let shapes = [
        (
            r#"{"type":"https://engine.example/probs/credit","title":"Out of credit","detail":"balance is 0","status":402}"#,
            "Out of credit: balance is 0",
        ),
        (
            r#"{"error":{"message":"balance is zero","type":"billing"}}"#,
            "balance is zero",
        ),
        (r#"{"error":"balance is zero"}"#, "balance is zero"),
        (
            r#"{"message":"balance is zero","code":7}"#,
            "balance is zero",
        ),
        (r#"{"detail":"balance is zero"}"#, "balance is zero"),
    ];
    for (body, words) in shapes {
        let refusal =
            refusal_for(ResponseTemplate::new(402).set_body_raw(body, "application/problem+json"))
                .await;
        assert!(
            refusal
                .reason()
                .contains(&format!("the engine said: \"{words}\"")),
            "{body}: {}",
            refusal.reason()
        );
    }
}

#[tokio::test]
async fn an_html_error_page_yields_its_title_not_its_markup() {
    let page = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>";
    let refusal = refusal_for(ResponseTemplate::new(502).set_body_raw(page, "text/html")).await;
    assert!(
        refusal
            .reason()
            .contains("the engine said: \"502 Bad Gateway\""),
        "{}",
        refusal.reason()
    );
    assert!(!refusal.reason().contains('<'), "{}", refusal.reason());
}

#[tokio::test]
async fn an_html_page_without_a_title_yields_its_first_text() {
    let page = "<html><body>\n<h1>Payment Required</h1><p>Top up your account.</p></body></html>";
    let refusal = refusal_for(ResponseTemplate::new(402).set_body_raw(page, "text/html")).await;
    assert!(
        refusal
            .reason()
            .contains("the engine said: \"Payment Required\""),
        "{}",
        refusal.reason()
    );
}

// ---------------------------------------------------------------------------
// Token diagnoses.

async fn rejected_with(challenge: &str) -> Refusal {
    let refusal =
        refusal_for(ResponseTemplate::new(401).insert_header("www-authenticate", challenge)).await;
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert_eq!(refusal.variable(), Some(TOKEN_VAR));
    assert!(refusal.remedy().contains(TOKEN_VAR), "{}", refusal.remedy());
    refusal
}

#[tokio::test]
async fn an_invalid_token_challenge_says_the_token_is_expired_or_revoked() {
    let refusal = rejected_with(
        r#"Bearer realm="engine", error="invalid_token", error_description="The access token expired""#,
    )
    .await;
    assert!(
        refusal
            .reason()
            .contains("invalid, expired or revoked (invalid_token)"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains("The access token expired"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn an_insufficient_scope_challenge_names_the_missing_scope() {
    let refusal = rejected_with(r#"Bearer error="insufficient_scope", scope="predict""#).await;
    assert!(
        refusal
            .reason()
            .contains("lacks the scope \"predict\" (insufficient_scope)"),
        "{}",
        refusal.reason()
    );
    assert!(
        refusal.remedy().contains("scope \"predict\""),
        "{}",
        refusal.remedy()
    );
}

#[tokio::test]
async fn an_invalid_request_challenge_says_the_credentials_are_malformed() {
    let refusal = rejected_with(r#"Bearer error="invalid_request""#).await;
    assert!(
        refusal.reason().contains("malformed (invalid_request)"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_rejection_without_a_challenge_says_no_more_than_rejected() {
    let refusal = refusal_for(ResponseTemplate::new(403)).await;
    assert!(
        refusal.reason().contains("rejected the token"),
        "{}",
        refusal.reason()
    );
    assert!(
        !refusal.reason().contains("invalid_token"),
        "{}",
        refusal.reason()
    );
}

// ---------------------------------------------------------------------------
// The leak matrix, extended to every new field.

/// An engine that echoes the form of the token named by the request body
/// into every field a refusal now quotes.
async fn echoing_engine() -> MockServer {
    engine(|request: &Request| {
        let ask: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let status = ask["status"].as_u64().unwrap_or(500) as u16;
        let index = ask["form"].as_u64().unwrap_or(0) as usize;
        let form = forms(TOKEN)
            .into_iter()
            .nth(index)
            .map(|(_, f)| f)
            .unwrap_or_default();
        let body = match ask["shape"].as_str() {
            Some("problem") => serde_json::json!({ "title": form, "detail": form }).to_string(),
            Some("html") => format!("<html><head><title>{form}</title></head></html>"),
            _ => serde_json::json!({ "error": form }).to_string(),
        };
        ResponseTemplate::new(status)
            .insert_header("retry-after", form.as_str())
            .insert_header("cf-ray", form.as_str())
            .insert_header("request-id", form.as_str())
            .insert_header(
                "www-authenticate",
                format!(
                    r#"Bearer error="insufficient_scope", scope="{}", error_description="{}""#,
                    form.replace('\\', "\\\\").replace('"', "\\\""),
                    form.replace('\\', "\\\\").replace('"', "\\\"")
                )
                .as_str(),
            )
            .set_body_string(body)
    })
    .await
}

#[tokio::test]
async fn no_hint_request_id_or_diagnosis_carries_the_token_in_any_form() {
    let server = echoing_engine().await;
    let transport = transport_for(&server.uri(), SCOPE);
    for (index, (name, form)) in forms(TOKEN).iter().enumerate() {
        // What the echo becomes (base64 keeps the characters of what
        // precedes the token, which carry none of its bits).
        let echo = concealed(form, TOKEN);
        for status in [401, 402, 429, 503] {
            for shape in ["problem", "html", "error"] {
                let ask = serde_json::json!({ "status": status, "form": index, "shape": shape });
                let refusal = transport
                    .send(ask.to_string())
                    .await
                    .expect_err("a refusal");
                let context = format!("HTTP {status}, {shape}, token as {name}");
                assert_refusal_clean(TOKEN, &context, &refusal);
                if let Some(id) = refusal.request_id() {
                    assert!(!id.contains(TOKEN), "request id {id}");
                }
                // The echo did reach every field that quotes it, concealed:
                // the engine's words, whatever the status and shape...
                assert_refusal_echo_redacted(&context, &refusal);
                let said = format!("the engine said: \"{echo}");
                assert!(
                    refusal.reason().contains(&said),
                    "{context}: {}",
                    refusal.reason()
                );
                // ...the request id...
                assert_eq!(refusal.request_id(), Some(echo.as_str()), "{context}");
                // ...the retry hint, for the statuses that read one (a 401
                // and a 402 do not quote `retry-after` at all)...
                if matches!(status, 429 | 503) {
                    let retry = format!("retry after {echo}");
                    assert!(
                        refusal.reason().contains(&retry),
                        "{context}: {}",
                        refusal.reason()
                    );
                }
                // ...and the challenge's scope and description, which only a
                // 401 reads, in the reason and in the remedy.
                if status == 401 {
                    let lacks =
                        format!("lacks the scope \"{echo}\" (insufficient_scope): \"{echo}\"");
                    assert!(
                        refusal.reason().contains(&lacks),
                        "{context}: {}",
                        refusal.reason()
                    );
                    let with_scope = format!("one with the scope \"{echo}\"");
                    assert!(
                        refusal.remedy().contains(&with_scope),
                        "{context}: {}",
                        refusal.remedy()
                    );
                }
            }
        }
    }
}

#[test]
fn a_report_with_every_new_field_round_trips() {
    let refusal = Refusal::new(
        Cause::EngineOverQuota,
        "scope \"acme\": HTTP 429; retry after 1.5",
        "wait for the window, or set CHANT_BEHAVIOUR_TOKEN to another token",
        Some("CHANT_BEHAVIOUR_ENGINE".to_owned()),
    )
    .with_status(429)
    .with_retry_after(Duration::from_millis(1500))
    .with_request_id("r-1");
    let json = refusal.report().to_json();
    let value: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(value["refusal"]["status"], 429);
    assert_eq!(value["refusal"]["retryAfter"], 1.5);
    assert_eq!(value["refusal"]["requestId"], "r-1");
    let back: meterwire::Report = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back.refusal(), &refusal);
}
