//! Real engines' error answers, as they sent them, through `send` against
//! a loopback engine that answers each one: the cause and the remedy an
//! operator needs, and the evidence the reason names.
//!
//! The answers are data, `data/real_answers.json`: each one's engine,
//! status, headers and body as the engine sent them, the public source it
//! was taken from (the engine's documentation, an SDK's or a gateway's
//! source, an issue where a user pasted what they got), the cause and a
//! phrase of the remedy an operator needs, and which evidence decides it:
//! `status` (the status alone is right, and no code or words are named),
//! `code`, `words`, `x402`, `ban` or `relay`. The table holds answers where
//! the status alone misleads, and answers where it is right, so that the
//! tables of codes and phrases are held to both.

use std::collections::BTreeSet;

use meterwire::{Cause, Refusal};
use serde::Deserialize;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{ADDRESS_VAR, SCOPE, TOKEN_VAR, assert_refusal_shape, transport_for};

/// One engine's answer, and what it must become.
#[derive(Debug, Deserialize)]
struct RealAnswer {
    engine: String,
    answer: String,
    status: u16,
    headers: std::collections::BTreeMap<String, String>,
    body: String,
    source: String,
    cause: Cause,
    decided: String,
    remedy: String,
    why: String,
}

fn answers() -> Vec<RealAnswer> {
    serde_json::from_str(include_str!("data/real_answers.json")).expect("the table is JSON")
}

/// What the reason says for each kind of evidence that decided.
fn evidence_named(decided: &str) -> &'static str {
    match decided {
        "code" => "with the code \"",
        "words" => "the engine's words name",
        "x402" => "x402",
        "ban" => "a ban that ends",
        "relay" => "relayed by a gateway",
        other => panic!("no evidence called {other:?}"),
    }
}

#[test]
fn the_table_holds_sixty_answers_of_fifteen_engines_each_with_its_source() {
    let answers = answers();
    assert!(answers.len() >= 60, "{} answers", answers.len());
    let engines: BTreeSet<&str> = answers.iter().map(|a| a.engine.as_str()).collect();
    assert!(engines.len() >= 15, "{engines:?}");
    for answer in &answers {
        assert!(!answer.source.trim().is_empty(), "{answer:?}");
        assert!(!answer.why.trim().is_empty(), "{answer:?}");
        assert!(!answer.remedy.trim().is_empty(), "{answer:?}");
    }
    // Every cause, every kind of evidence, and answers the status alone
    // decides, of each cause.
    for cause in Cause::ALL {
        assert!(
            answers
                .iter()
                .any(|a| a.cause == cause && a.decided == "status"),
            "no answer of {cause} the status decides"
        );
        assert!(
            answers
                .iter()
                .any(|a| a.cause == cause && a.decided != "status"),
            "no answer of {cause} evidence decides"
        );
    }
    for decided in ["code", "words", "x402", "ban", "relay"] {
        assert!(answers.iter().any(|a| a.decided == decided), "{decided}");
    }
}

#[tokio::test]
async fn each_real_answer_becomes_the_cause_and_remedy_an_operator_needs() {
    let answers = answers();
    let server = MockServer::start().await;
    for (at, answer) in answers.iter().enumerate() {
        let mut response = ResponseTemplate::new(answer.status).set_body_string(&answer.body);
        for (name, value) in &answer.headers {
            response = response.insert_header(name.as_str(), value.as_str());
        }
        Mock::given(method("POST"))
            .and(path(format!("/engine/{at}")))
            .respond_with(response)
            .expect(1)
            .mount(&server)
            .await;
    }
    let mut wrong = Vec::new();
    for (at, answer) in answers.iter().enumerate() {
        let address = format!("{}/engine/{at}", server.uri());
        let refusal = transport_for(&address, SCOPE)
            .send("{}")
            .await
            .expect_err("an error answer is a refusal");
        if let Err(why) = check(answer, &refusal) {
            wrong.push(format!(
                "{} ({}), HTTP {}: {why}\n  reason: {}\n  remedy: {}",
                answer.engine,
                answer.answer,
                answer.status,
                refusal.reason(),
                refusal.remedy()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Whether `refusal` is what `answer` must become, and why not.
fn check(answer: &RealAnswer, refusal: &Refusal) -> Result<(), String> {
    assert_refusal_shape(refusal);
    if refusal.cause() != answer.cause {
        return Err(format!(
            "{} where {} is needed",
            refusal.cause(),
            answer.cause
        ));
    }
    if refusal.status() != Some(answer.status) {
        return Err(format!("the status {:?}", refusal.status()));
    }
    let reason = refusal.reason();
    if !reason.contains(&format!("HTTP {}", answer.status)) {
        return Err("the reason does not name the status".to_owned());
    }
    let evidence = ["code", "words", "x402", "ban", "relay"];
    match answer.decided.as_str() {
        "status" => {
            if let Some(named) = evidence
                .iter()
                .find(|decided| reason.contains(evidence_named(decided)))
            {
                return Err(format!(
                    "the reason names {named} evidence where the status decides"
                ));
            }
        }
        decided => {
            if !reason.contains(evidence_named(decided)) {
                return Err(format!("the reason does not say the {decided} decided"));
            }
        }
    }
    if !refusal.remedy().contains(&answer.remedy) {
        return Err(format!("the remedy does not say {:?}", answer.remedy));
    }
    let variable = match answer.cause {
        Cause::NoEngine => TOKEN_VAR,
        _ => ADDRESS_VAR,
    };
    if refusal.variable() != Some(variable) {
        return Err(format!("the variable {:?}", refusal.variable()));
    }
    let remedy = refusal.remedy().to_lowercase();
    let strays: &[&str] = match answer.cause {
        Cause::NoEngine | Cause::EngineOverQuota => &["credit", "fund"],
        Cause::EngineOutOfCredit => &["reachable", "wait for"],
        Cause::EngineUnreachable => &[],
    };
    if let Some(stray) = strays.iter().find(|word| remedy.contains(*word)) {
        return Err(format!("the remedy mentions {stray:?}"));
    }
    Ok(())
}
