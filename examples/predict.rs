//! A predictor in a page: typed questions and answers, one `Arc<dyn
//! Transport>` shared by every task with options per call, every cause
//! handled. Its engine runs on 127.0.0.1, so it needs nothing else.
use std::{sync::Arc, time::Duration};

use meterwire::{Cause, Env, HttpTransport, Request, SecretString, Transport};
use serde::{Deserialize, Serialize};
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[derive(Serialize)]
struct Question<'a> {
    prompt: &'a str,
}
#[derive(Deserialize)]
struct Prediction {
    next: String,
    confidence: f64,
}

/// One prediction, or `None` with the operator told what to do.
async fn predict(transport: &dyn Transport, prompt: &str, n: usize) -> Option<Prediction> {
    let request = Request::json(&Question { prompt })
        .deadline(Duration::from_secs(5)) // this call's own deadline
        .idempotency_key(format!("predict-{n}")); // an engine that honours it bills a repeat once
    let refusal = match transport.execute(request).await {
        Ok(answer) => return answer.json().ok(), // the predictor validates the shape
        Err(refusal) => refusal,
    };
    let what = match refusal.cause() {
        Cause::NoEngine => "not configured; fix it and restart",
        Cause::EngineUnreachable => "no answer; this question may be retried later",
        Cause::EngineOutOfCredit => "out of credit; stop sending until it is funded",
        Cause::EngineOverQuota => "over quota; hold this predictor until the window passes",
    };
    let (cause, remedy) = (refusal.cause(), refusal.remedy());
    eprintln!("{prompt:?}: {cause} ({what})\n  remedy: {remedy}");
    None
}

#[tokio::main]
async fn main() -> Result<(), meterwire::BuildError> {
    let engine = MockServer::start().await;
    for (asked, status, body) in [
        ("the cat", 200, r#"{"next": "mat", "confidence": 0.93}"#),
        ("spend", 402, r#"{"error": {"message": "balance is zero"}}"#),
        ("hurry", 429, r#"{"error": {"message": "slow down"}}"#),
        ("crash", 503, "upstream failed"),
    ] {
        let mock = Mock::given(method("POST")).and(body_string_contains(asked));
        let reply = ResponseTemplate::new(status).set_body_raw(body, "application/json");
        mock.respond_with(reply).mount(&engine).await;
    }
    let transport: Arc<dyn Transport> = Arc::new(
        HttpTransport::builder("predict-example")
            .address(format!("{}/v1/predict", engine.uri()))
            .token(SecretString::from("mw-example-0123456789"))
            .header("engine-version", "2025-01-01")
            .build()?,
    );
    let prompts = ["the cat sat on", "spend it", "hurry up", "crash now"];
    let tasks = prompts.into_iter().enumerate().map(|(n, prompt)| {
        let transport = transport.clone(); // clones share one pool and one meter
        tokio::spawn(async move { (prompt, predict(&*transport, prompt, n).await) })
    });
    for task in Vec::from_iter(tasks) {
        if let Ok((prompt, Some(Prediction { next, confidence }))) = task.await {
            println!("{prompt:?} -> {next:?} ({:.0}% sure)", confidence * 100.0);
        }
    }
    if let Some(meter) = transport.meter() {
        println!("{} sends, {} answers", meter.sends(), meter.answers());
    }
    // No address and no token anywhere: refused before anything is sent.
    let unset = HttpTransport::builder("predict-example").env(Env::new());
    predict(&unset.build()?, "the cat sat on", 9).await;
    Ok(())
}
