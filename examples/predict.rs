//! A predictor in a page: a typed question and answer, one transport shared
//! by every task, and every cause handled. It starts its own engine on
//! 127.0.0.1, so `cargo run --example predict` needs nothing else.
use meterwire::{Cause, Env, HttpTransport, SecretString};
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
async fn predict(transport: &HttpTransport, prompt: &str) -> Option<Prediction> {
    let refusal = match transport.send_json(&Question { prompt }).await {
        Ok(answer) => match answer.json::<Prediction>() {
            Ok(prediction) => return Some(prediction),
            Err(error) => {
                eprintln!("{prompt:?}: the engine answered, but not a prediction: {error}");
                return None;
            }
        },
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
    let transport = HttpTransport::builder("predict-example")
        .address(format!("{}/v1/predict", engine.uri()))
        .token(SecretString::from("mw-example-0123456789"))
        .header("engine-version", "2025-01-01")
        .build()?;
    let prompts = ["the cat sat on", "spend it", "hurry up", "crash now"];
    let tasks = prompts.map(|prompt| {
        let transport = transport.clone(); // clones share one pool
        tokio::spawn(async move { (prompt, predict(&transport, prompt).await) })
    });
    for task in tasks {
        if let Ok((prompt, Some(prediction))) = task.await {
            let sure = prediction.confidence * 100.0;
            println!("{prompt:?} -> {:?} ({sure:.0}% sure)", prediction.next);
        }
    }
    // No address and no token anywhere: refused before anything is sent.
    let unset = HttpTransport::builder("predict-example").env(Env::new());
    predict(&unset.build()?, "the cat sat on").await;
    Ok(())
}
