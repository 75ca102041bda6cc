//! The engine's answer: a `2xx` body, as concealed text.

use std::fmt;
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde::de::DeserializeOwned;

use crate::usage::Usage;

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
#[derive(Clone)]
pub struct Answer {
    status: u16,
    text: String,
    request_id: Option<String>,
    attempts: u32,
    elapsed: Duration,
    /// The response's headers as the door kept them: concealed values, each
    /// UTF-8 text, none that carries a credential. Kept as the map the door
    /// built rather than copied out into strings (most answers' headers
    /// are never read), and boxed, so an answer held by value (in a
    /// `Result`, in a caller's enum) stays small; an answer that received
    /// none holds none.
    received: Option<Box<HeaderMap>>,
    /// Headers given with [`Answer::with_header`], read before those
    /// received.
    headers: Vec<(String, String)>,
    usage: Option<Usage>,
}

impl Answer {
    /// An answer from its parts, for a predictor's tests and fakes: one
    /// attempt, no request id, no header, no time elapsed.
    ///
    /// ```
    /// use meterwire::Answer;
    ///
    /// let answer = Answer::new(200, "{}")
    ///     .with_request_id("req-7")
    ///     .with_attempts(2)
    ///     .with_header("X-Model", "small");
    /// assert_eq!(answer.request_id(), Some("req-7"));
    /// assert_eq!(answer.attempts(), 2);
    /// assert_eq!(answer.header("x-model"), Some("small"));
    /// ```
    pub fn new(status: u16, text: impl Into<String>) -> Answer {
        Answer {
            status,
            text: text.into(),
            request_id: None,
            attempts: 1,
            elapsed: Duration::ZERO,
            received: None,
            headers: Vec::new(),
            usage: None,
        }
    }

    /// The same answer, with the engine's id for the request.
    pub fn with_request_id(mut self, id: impl Into<String>) -> Answer {
        self.request_id = Some(id.into());
        self
    }

    /// The same answer, as if it took `attempts` requests.
    pub fn with_attempts(mut self, attempts: u32) -> Answer {
        self.attempts = attempts;
        self
    }

    /// The same answer, with one more response header (a later one of the
    /// same name is read first).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Answer {
        self.headers
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// The same answer, as if the engine said it billed `usage` (a usage
    /// with no count is none). An answer from [`Answer::new`] says nothing
    /// of usage, whatever its text holds.
    ///
    /// ```
    /// use meterwire::{Answer, Usage};
    ///
    /// let answer = Answer::new(200, "{}").with_usage(Usage::new().with_input(9).with_output(2));
    /// assert_eq!(answer.usage().and_then(|usage| usage.total()), Some(11));
    /// assert_eq!(Answer::new(200, "{}").with_usage(Usage::new()).usage(), None);
    /// ```
    pub fn with_usage(mut self, usage: Usage) -> Answer {
        self.usage = usage.some();
        self
    }

    /// How the transport builds an answer from what one send received.
    pub(crate) fn received(
        status: u16,
        text: String,
        request_id: Option<String>,
        received: HeaderMap,
    ) -> Answer {
        Answer {
            status,
            // Read once, from the concealed text, as it arrives.
            usage: crate::usage::whole(&text),
            text,
            request_id,
            attempts: 1,
            elapsed: Duration::ZERO,
            received: (!received.is_empty()).then(|| Box::new(received)),
            headers: Vec::new(),
        }
    }

    /// The same answer, after `elapsed`.
    pub(crate) fn after(mut self, elapsed: Duration) -> Answer {
        self.elapsed = elapsed;
        self
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

    /// A response header (name in any case), as the transport received
    /// it: concealed, as every string the crate produces is. Headers that
    /// carry a credential (`set-cookie`, `authorization`, `x-api-key`, names
    /// ending in `-token` or `-secret`, …) are not kept, and a value that is
    /// not text reads with its invalid bytes replaced.
    pub fn header(&self, name: &str) -> Option<&str> {
        let given = self
            .headers
            .iter()
            .rev()
            .find(|(kept, _)| kept.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str());
        // The door kept every value as UTF-8 text (a value that was not
        // has its invalid bytes replaced), so none fails here.
        given.or_else(|| {
            self.received
                .as_ref()?
                .get_all(name)
                .iter()
                .next_back()
                .and_then(|value| std::str::from_utf8(value.as_bytes()).ok())
        })
    }

    /// Every header, received first, then given, as `(name, value)`.
    fn all_headers(&self) -> impl Iterator<Item = (&str, &str)> {
        let received = self
            .received
            .iter()
            .flat_map(|map| map.iter())
            .map(|(name, value)| {
                let value = std::str::from_utf8(value.as_bytes()).unwrap_or_default();
                (name.as_str(), value)
            });
        let given = self
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        received.chain(given)
    }

    /// How many requests went to the wire for this answer.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// What the engine said it billed for this answer, read from its
    /// concealed text in the shape of OpenAI (chat, completions and
    /// Responses), Anthropic, Gemini or Ollama; `None` when it said
    /// nothing, or nothing readable. See [`Usage`].
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// How long the send took, from the call to the end of the body.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

/// As a derived `Debug` would print it, the headers as one list of
/// `(name, value)` pairs, received first: every value is concealed.
impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Headers<'a>(&'a Answer);
        impl fmt::Debug for Headers<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list().entries(self.0.all_headers()).finish()
            }
        }
        f.debug_struct("Answer")
            .field("status", &self.status)
            .field("text", &self.text)
            .field("request_id", &self.request_id)
            .field("attempts", &self.attempts)
            .field("elapsed", &self.elapsed)
            .field("headers", &Headers(self))
            .field("usage", &self.usage)
            .finish()
    }
}

/// Two answers are equal when their parts are, the headers compared as
/// one list, received first, as the answer reads them.
impl PartialEq for Answer {
    fn eq(&self, other: &Answer) -> bool {
        self.status == other.status
            && self.text == other.text
            && self.request_id == other.request_id
            && self.attempts == other.attempts
            && self.elapsed == other.elapsed
            && self.usage == other.usage
            && self.all_headers().eq(other.all_headers())
    }
}

impl Eq for Answer {}
