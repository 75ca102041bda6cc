//! The engine's answer: a `2xx` body, as concealed text.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// The engine's answer: a `2xx` body, as text, with the token concealed in
/// every form.
///
/// ```
/// let answer = meterwire::Answer::new(200, r#"{"score": 0.5}"#);
/// let value: serde_json::Value = answer.json()?;
/// assert_eq!(value["score"], 0.5);
/// assert_eq!(answer.attempts(), 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    status: u16,
    text: String,
    request_id: Option<String>,
    attempts: u32,
    elapsed: Duration,
}

impl Answer {
    /// An answer from its parts, for a predictor's tests and fakes: one
    /// attempt, no request id, no time elapsed.
    pub fn new(status: u16, text: impl Into<String>) -> Answer {
        Answer {
            status,
            text: text.into(),
            request_id: None,
            attempts: 1,
            elapsed: Duration::ZERO,
        }
    }

    pub(crate) fn received(
        status: u16,
        text: String,
        request_id: Option<String>,
        attempts: u32,
        elapsed: Duration,
    ) -> Answer {
        Answer {
            status,
            text,
            request_id,
            attempts,
            elapsed,
        }
    }

    /// The HTTP status, a `2xx`.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The body, with the token concealed in every form.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The body, owned.
    pub fn into_text(self) -> String {
        self.text
    }

    /// The body parsed as JSON into `T`. The predictor validates the shape;
    /// the transport only promises it is UTF-8 text.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.text)
    }

    /// The engine's id for the request (`x-request-id`, `request-id`, …),
    /// concealed and bounded, when it sent one.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// How many requests went to the wire for this answer.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// How long the send took, from the call to the end of the body.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }
}
