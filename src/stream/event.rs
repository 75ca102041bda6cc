//! [`Event`]: one server-sent event as a stream yields it.

use serde::de::DeserializeOwned;

/// One server-sent event: its type, its data (multi-line data joined with
/// `\n`) and its id, each concealed.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut stream = meterwire::AnswerStream::from_chunks(200, ["event: delta\nid: 7\ndata: a\ndata: b\n\n"]);
/// let event = stream.next_event().await.expect("an event").expect("not a refusal");
/// assert_eq!(event.event(), Some("delta"));
/// assert_eq!(event.data(), "a\nb");
/// assert_eq!(event.id(), Some("7"));
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub(super) event: Option<String>,
    pub(super) data: String,
    pub(super) id: Option<String>,
}

impl Event {
    /// The event's type, when it carried a non-empty `event` field; none
    /// is the default type, `message` (an empty `event:` field names it
    /// too).
    pub fn event(&self) -> Option<&str> {
        self.event.as_deref()
    }

    /// The event's data, its lines joined with `\n`.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// The `id` field this event carried (none carried forward from an
    /// earlier one).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The event's data parsed as JSON into `T`, as
    /// [`Answer::json`](crate::Answer::json) parses an answer: the data is
    /// concealed text, so whatever the error quotes is too. The predictor
    /// validates the shape; an event that is not the `T` it expects is its
    /// to judge (skip it, or stop), not a refusal of the engine.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// #[derive(serde::Deserialize)]
    /// struct Delta {
    ///     content: String,
    /// }
    /// let mut stream = meterwire::AnswerStream::from_chunks(200, ["data: {\"content\":\"the\"}\n\n"]);
    /// let event = stream.next_event().await.expect("an event").expect("not a refusal");
    /// let delta: Delta = event.json().expect("a delta");
    /// assert_eq!(delta.content, "the");
    /// # }
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.data)
    }
}
