//! Every row of the README's wire table, through `HttpTransport::send`
//! against a wiremock engine on loopback: an answer for a `2xx`, and for
//! every other status, and for a request that fails, the refusal the table
//! names. Also the report's JSON shape, and reasons that stay bounded
//! whatever the engine sends.

use std::time::Duration;

use meterwire::{Answer, Cause, Env, HttpTransport, Refusal, Report};
use serde_json::Value;
use wiremock::matchers::path;
use wiremock::{MockServer, ResponseTemplate};

use crate::support::engines::{engine_with, posts};
use crate::support::{
    ADDRESS_VAR, SCOPE, TOKEN, TOKEN_VAR, assert_refusal_shape, builder_for, transport_for,
};

const PATH: &str = "/v1/predict";
const BODY: &str = r#"{"question":"next word?"}"#;

/// A wiremock engine answering a POST to [`PATH`] with `template`, and
/// expecting exactly one: every test here sends once, and one send is one
/// request.
async fn engine(template: ResponseTemplate) -> MockServer {
    engine_with([posts().and(path(PATH)).respond_with(template).expect(1)]).await
}

fn address_of(server: &MockServer) -> String {
    format!("{}{PATH}", server.uri())
}

/// One send to an engine answering with `template`.
async fn outcome(template: ResponseTemplate) -> Result<Answer, Refusal> {
    let server = engine(template).await;
    transport_for(&address_of(&server), SCOPE).send(BODY).await
}

/// One send that the contract says must be refused.
async fn refusal(template: ResponseTemplate) -> Refusal {
    match outcome(template).await {
        Ok(answer) => panic!("expected a refusal, got an answer: {answer:?}"),
        Err(refusal) => refusal,
    }
}

/// One send to an engine answering `status` with `body`.
async fn refusal_with_body(status: u16, body: &str) -> Refusal {
    refusal(ResponseTemplate::new(status).set_body_string(body)).await
}

fn lower(text: &str) -> String {
    text.to_lowercase()
}

/// The checks shared by every refusal the engine's status produced: the
/// contract's shape, the status recorded, and a reason naming the address
/// and the variable it came from.
#[track_caller]
fn assert_status_refusal(refusal: &Refusal, status: u16) {
    assert_refusal_shape(refusal);
    assert_eq!(refusal.status(), Some(status), "{refusal:?}");
    assert!(
        refusal.reason().contains(&format!("HTTP {status}")),
        "the reason does not name HTTP {status}: {:?}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains(ADDRESS_VAR),
        "the reason does not name the address variable: {:?}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains("127.0.0.1"),
        "the reason does not name the address: {:?}",
        refusal.reason()
    );
}

/// `engine-unreachable`: the remedy points at the request, the address's
/// path, the engine's health or the address, and names the
/// address variable.
#[track_caller]
fn assert_unreachable(refusal: &Refusal) {
    assert_eq!(refusal.cause(), Cause::EngineUnreachable, "{refusal:?}");
    assert_eq!(refusal.variable(), Some(ADDRESS_VAR));
    let remedy = refusal.remedy();
    assert!(
        remedy.contains(ADDRESS_VAR),
        "the remedy does not name the address variable: {remedy:?}"
    );
    let points = ["reachable", "fix the request", "try again later"];
    assert!(
        points.iter().any(|point| lower(remedy).contains(point))
            || remedy.contains(&format!("set {ADDRESS_VAR}")),
        "the remedy points nowhere the remedy table names (the request, the path, the engine's health, the address): {remedy:?}"
    );
}

// ---------------------------------------------------------------------------
// 2xx: an answer.

#[tokio::test]
async fn a_200_is_an_answer_holding_the_body_text_and_the_status() {
    let answer = outcome(ResponseTemplate::new(200).set_body_string(r#"{"score":0.5}"#))
        .await
        .expect("a 200 is an answer");
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text(), r#"{"score":0.5}"#);
}

#[tokio::test]
async fn a_201_is_an_answer_holding_the_body_text_and_the_status() {
    let answer = outcome(ResponseTemplate::new(201).set_body_string(r#"{"id":7}"#))
        .await
        .expect("a 201 is an answer");
    assert_eq!(answer.status(), 201);
    assert_eq!(answer.text(), r#"{"id":7}"#);
}

#[tokio::test]
async fn a_204_with_an_empty_body_is_an_empty_answer_not_a_refusal() {
    let answer = outcome(ResponseTemplate::new(204))
        .await
        .expect("a 204 is an answer");
    assert_eq!(answer.status(), 204);
    assert_eq!(answer.text(), "");
}

// ---------------------------------------------------------------------------
// 401 and 403: the token was rejected.

#[tokio::test]
async fn a_401_is_no_engine_naming_the_token_variable_it_rejected() {
    let refusal = refusal_with_body(401, "invalid api key").await;
    assert_rejected(&refusal, 401, TOKEN_VAR);
}

#[tokio::test]
async fn a_403_is_no_engine_naming_the_token_variable_it_rejected() {
    let refusal = refusal_with_body(403, "forbidden").await;
    assert_rejected(&refusal, 403, TOKEN_VAR);
}

#[tokio::test]
async fn a_rejected_token_names_the_variable_that_won_the_chain() {
    let server = engine(ResponseTemplate::new(401)).await;
    let scoped = "CHANT_BEHAVIOUR_TOKEN_ACME";
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([
            (ADDRESS_VAR, address_of(&server).as_str()),
            (scoped, TOKEN),
            (TOKEN_VAR, "mw-the-less-specific-token"),
        ]))
        .build()
        .expect("builds");
    let refusal = transport.send(BODY).await.expect_err("a 401 is refused");
    assert_rejected(&refusal, 401, scoped);
    assert!(
        !refusal.reason().replace(scoped, "").contains(TOKEN_VAR),
        "the reason names a variable that did not hold the token: {:?}",
        refusal.reason()
    );
}

#[track_caller]
fn assert_rejected(refusal: &Refusal, status: u16, token_var: &str) {
    assert_status_refusal(refusal, status);
    assert_eq!(refusal.cause(), Cause::NoEngine, "{refusal:?}");
    assert_eq!(refusal.variable(), Some(token_var));
    let reason = refusal.reason();
    assert!(reason.contains(token_var), "{reason:?}");
    assert!(lower(reason).contains("rejected"), "{reason:?}");
    let remedy = lower(refusal.remedy());
    assert!(
        refusal.remedy().contains(&format!("set {token_var}")),
        "the remedy does not say to set {token_var}: {remedy:?}"
    );
    for word in ["reachab", "unreachable", "credit", "fund"] {
        assert!(
            !remedy.contains(word),
            "the remedy mentions {word:?}: {remedy:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// 402: the account is out of credit.

#[tokio::test]
async fn a_402_is_out_of_credit_in_the_engines_own_first_line() {
    let refusal = refusal_with_body(
        402,
        "\n\n   balance is zero   \nsecond line is not quoted\n",
    )
    .await;
    assert_out_of_credit(&refusal);
    assert!(
        refusal.reason().contains("balance is zero"),
        "{:?}",
        refusal.reason()
    );
    assert!(
        !refusal.reason().contains("second line"),
        "the reason quotes more than the first non-empty line: {:?}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_402_with_a_json_error_body_quotes_its_message() {
    // Pretty-printed, so the first non-empty line is a lone `{` and the
    // message can only come from reading the JSON.
    let body = "{\n  \"error\": {\n    \"message\": \"your balance is zero, top up\",\n    \"code\": 7\n  }\n}\n";
    let refusal = refusal_with_body(402, body).await;
    assert_out_of_credit(&refusal);
    assert!(
        refusal.reason().contains("your balance is zero, top up"),
        "{:?}",
        refusal.reason()
    );
}

#[track_caller]
fn assert_out_of_credit(refusal: &Refusal) {
    assert_status_refusal(refusal, 402);
    assert_eq!(refusal.cause(), Cause::EngineOutOfCredit, "{refusal:?}");
    assert_eq!(refusal.variable(), Some(ADDRESS_VAR));
    let reason = refusal.reason();
    assert!(lower(reason).contains("out of credit"), "{reason:?}");
    assert!(reason.contains(TOKEN_VAR), "{reason:?}");
    for words in ["unreachable", "did not answer"] {
        assert!(
            !lower(reason).contains(words),
            "the reason says {words:?}: {reason:?}"
        );
    }
    let remedy = lower(refusal.remedy());
    assert!(
        remedy.contains("credit") || remedy.contains("fund"),
        "{remedy:?}"
    );
    assert!(!remedy.contains("reachab"), "{remedy:?}");
}

// ---------------------------------------------------------------------------
// 429: a limit is spent.

#[tokio::test]
async fn a_429_with_retry_after_seconds_echoes_the_value_as_sent() {
    let refusal = refusal(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "30")
            .set_body_string("rate limit reached for requests"),
    )
    .await;
    assert_over_quota(&refusal);
    assert!(
        refusal.reason().contains("retry after 30"),
        "{:?}",
        refusal.reason()
    );
    assert!(
        refusal.reason().contains("rate limit reached for requests"),
        "{:?}",
        refusal.reason()
    );
}

#[tokio::test]
async fn a_429_with_retry_after_as_an_http_date_echoes_the_date_as_sent() {
    let date = "Wed, 21 Oct 2015 07:28:00 GMT";
    let refusal = refusal(
        ResponseTemplate::new(429)
            .insert_header("retry-after", date)
            .set_body_string("slow down"),
    )
    .await;
    assert_over_quota(&refusal);
    assert!(
        refusal.reason().contains(&format!("retry after {date}")),
        "{:?}",
        refusal.reason()
    );
    assert!(refusal.reason().contains("slow down"));
}

#[tokio::test]
async fn a_429_without_retry_after_is_over_quota_with_no_retry_hint() {
    let refusal = refusal_with_body(429, "quota exceeded for this month").await;
    assert_over_quota(&refusal);
    assert!(
        !lower(refusal.reason()).contains("retry after"),
        "the reason invents a retry-after: {:?}",
        refusal.reason()
    );
    assert!(refusal.reason().contains("quota exceeded for this month"));
}

#[track_caller]
fn assert_over_quota(refusal: &Refusal) {
    assert_status_refusal(refusal, 429);
    assert_eq!(refusal.cause(), Cause::EngineOverQuota, "{refusal:?}");
    assert_eq!(refusal.variable(), Some(ADDRESS_VAR));
    assert!(
        refusal.reason().contains(TOKEN_VAR),
        "{:?}",
        refusal.reason()
    );
    let remedy = lower(refusal.remedy());
    assert!(
        ["quota", "limit", "window", "wait"]
            .iter()
            .any(|word| remedy.contains(word)),
        "{remedy:?}"
    );
    for word in ["credit", "fund"] {
        assert!(
            !remedy.contains(word),
            "the remedy mentions {word:?}: {remedy:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Any other status: the engine did not answer the question.

#[tokio::test]
async fn a_redirect_is_engine_unreachable_and_is_not_followed() {
    for status in [301, 302, 307, 308] {
        // The redirect's target expects no request (`no_redirect_is_followed`
        // tells the rest of that story).
        let (refusal, _target) = crate::no_redirect_is_followed::redirected_by(status).await;
        assert_status_refusal(&refusal, status);
        assert_unreachable(&refusal);
    }
}

#[tokio::test]
async fn a_4xx_other_than_401_402_403_429_is_engine_unreachable_naming_the_status() {
    for status in [400, 404, 418, 422] {
        let refusal = refusal_with_body(status, "not what I expected").await;
        assert_status_refusal(&refusal, status);
        assert_unreachable(&refusal);
    }
}

#[tokio::test]
async fn a_5xx_is_engine_unreachable_naming_the_status() {
    for status in [500, 502, 503] {
        let refusal = refusal_with_body(status, "upstream failed").await;
        assert_status_refusal(&refusal, status);
        assert_unreachable(&refusal);
    }
}

// ---------------------------------------------------------------------------
// The request failed.

#[tokio::test]
async fn a_closed_port_is_engine_unreachable_saying_connection_refused() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.local_addr().expect("local addr").port()
    };
    let refusal = transport_for(&format!("http://127.0.0.1:{port}/v1"), SCOPE)
        .send(BODY)
        .await
        .expect_err("nothing listens");
    assert_refusal_shape(&refusal);
    assert_unreachable(&refusal);
    assert_eq!(refusal.status(), None);
    assert!(
        lower(refusal.reason()).contains("connection refused"),
        "{:?}",
        refusal.reason()
    );
    assert!(refusal.reason().contains(&format!("127.0.0.1:{port}")));
}

#[tokio::test]
async fn an_engine_slower_than_the_deadline_is_engine_unreachable_naming_the_deadline() {
    let server = engine(ResponseTemplate::new(200).set_delay(Duration::from_secs(3))).await;
    let transport = builder_for(&address_of(&server), SCOPE)
        .deadline(Duration::from_millis(200))
        .build()
        .expect("builds");
    let refusal = tokio::time::timeout(Duration::from_secs(10), transport.send(BODY))
        .await
        .expect("refused within 10 s rather than hanging")
        .expect_err("the deadline passes first");
    assert_refusal_shape(&refusal);
    assert_unreachable(&refusal);
    assert_eq!(refusal.status(), None);
    assert!(
        refusal.reason().contains("no answer within 200 ms"),
        "{:?}",
        refusal.reason()
    );
}

// ---------------------------------------------------------------------------
// The report.

/// The report of an engine's `429` with `retry-after: 30`.
async fn over_quota_report() -> Report {
    refusal(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "30")
            .set_body_string("slow down"),
    )
    .await
    .report()
}

#[tokio::test]
async fn a_report_has_the_v1_shape() {
    let report = over_quota_report().await;
    let json: Value = serde_json::from_str(&report.to_json()).expect("the report is JSON");
    assert_eq!(json["behaviour"], "v1");
    let refusal = &json["refusal"];
    assert_eq!(refusal["cause"], "engine-over-quota");
    assert_eq!(refusal["source"], ADDRESS_VAR);
    assert_eq!(refusal["reason"], report.refusal().reason());
    assert_eq!(refusal["remedy"], report.refusal().remedy());
    assert!(
        refusal["reason"]
            .as_str()
            .is_some_and(|r| r.contains("HTTP 429"))
    );
}

#[tokio::test]
async fn a_report_round_trips_through_serde_to_an_equal_value() {
    let report = over_quota_report().await;
    let back: Report = serde_json::from_str(&report.to_json()).expect("deserializes");
    assert_eq!(back, report);
}

#[test]
fn a_refusal_with_no_source_has_no_source_key_at_all() {
    let transport = HttpTransport::builder(SCOPE)
        .env(Env::from_pairs([(TOKEN_VAR, TOKEN)]))
        .build()
        .expect("builds");
    let report = transport.refusal().expect("no address is refused").report();
    assert_eq!(report.refusal().variable(), None);
    let json: Value = serde_json::from_str(&report.to_json()).expect("the report is JSON");
    let refusal = json["refusal"].as_object().expect("refusal is an object");
    assert!(
        !refusal.contains_key("source"),
        "source is present rather than absent: {json}"
    );
    assert_eq!(refusal["cause"], "no-engine");
    let back: Report = serde_json::from_str(&report.to_json()).expect("deserializes");
    assert_eq!(back, report);
}

#[tokio::test]
async fn unknown_fields_in_a_report_are_ignored_when_it_is_read() {
    let report = over_quota_report().await;
    let mut json: Value = serde_json::from_str(&report.to_json()).expect("the report is JSON");
    json["producedBy"] = Value::from("a later version");
    json["refusal"]["traceParent"] = Value::from("00-abc-01");
    json["refusal"]["future"] = serde_json::json!({"nested": [1, 2, 3]});
    let back: Report = serde_json::from_value(json).expect("extra fields are ignored");
    assert_eq!(back, report);
}

// ---------------------------------------------------------------------------
// What the engine sends cannot break the reason.

/// Bodies whose characters are several bytes wide, including ones where the
/// 200th or 300th character straddles a multi-byte boundary.
fn multibyte_bodies() -> Vec<String> {
    vec![
        "é".repeat(300),
        "🦀".repeat(300),
        format!("{}é{}", "a".repeat(199), "b".repeat(50)),
        format!("{}🦀{}", "a".repeat(200), "b".repeat(50)),
        format!("{}{}", "a".repeat(198), "🦀".repeat(10)),
        format!("{}é{}", "a".repeat(299), "🦀".repeat(10)),
    ]
}

#[tokio::test]
async fn a_multibyte_engine_body_never_panics_and_keeps_the_reason_under_1000_chars() {
    for body in multibyte_bodies() {
        let refusal = refusal_with_body(402, &body).await;
        assert_out_of_credit(&refusal);
        let head: String = body.chars().take(100).collect();
        assert!(
            refusal.reason().contains(&head),
            "the engine's words are missing: {:?}",
            refusal.reason()
        );
        // The engine's words are bounded to 200 characters.
        let crabs = refusal.reason().matches('🦀').count();
        let accents = refusal.reason().matches('é').count();
        assert!(crabs <= 200 && accents <= 200, "{:?}", refusal.reason());
    }
}

#[tokio::test]
async fn a_multibyte_body_keeps_the_reason_of_every_refused_status_bounded() {
    for body in multibyte_bodies() {
        for status in [401, 402, 403, 404, 429, 500] {
            let refusal = refusal_with_body(status, &body).await;
            assert_refusal_shape(&refusal);
        }
    }
}

#[tokio::test]
async fn a_ten_thousand_character_error_line_yields_a_reason_under_1000_chars() {
    let line = "x".repeat(10_000);
    for status in [402, 429, 500] {
        let refusal = refusal_with_body(status, &line).await;
        assert_status_refusal(&refusal, status);
        assert!(
            refusal.reason().contains(&"x".repeat(100)),
            "the engine's words are missing: {:?}",
            refusal.reason()
        );
        // The engine's words are bounded to 200 characters.
        assert!(!refusal.reason().contains(&"x".repeat(201)));
    }
    let json_line = format!(r#"{{"error":{{"message":"{}"}}}}"#, "y".repeat(10_000));
    let refusal = refusal_with_body(402, &json_line).await;
    assert_out_of_credit(&refusal);
}
