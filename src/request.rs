//! A request: a body and the options of one send, as a value that crosses
//! the [`Transport`](crate::Transport) trait.
//!
//! A predictor that holds `Arc<dyn Transport>` must be able to give one
//! send a deadline, an idempotency key and a header of its own, and its
//! tests must be able to see what it gave; so the options travel with the
//! body instead of living on a builder only the real transport has. The
//! accessors are named as `std::process::Command`'s (`get_…`), whose
//! builder methods hold the plain names.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;

use crate::refusal::failure::serialize_category;

/// A body and the options of one send: headers, a deadline, an
/// idempotency key. Nothing is checked until it is sent: a transport
/// refuses a header or key it cannot send, naming the option.
///
/// ```
/// use std::time::Duration;
/// use meterwire::Request;
///
/// let request = Request::new(r#"{"prompt": "the cat sat on the"}"#)
///     .header("x-trace", "t-1")
///     .deadline(Duration::from_secs(5))
///     .idempotency_key("order-7");
/// assert_eq!(request.get_header("X-Trace"), Some("t-1"));
/// assert_eq!(request.get_deadline(), Some(Duration::from_secs(5)));
/// assert_eq!(request.get_idempotency_key(), Some("order-7"));
/// assert_eq!(&request.get_body()[..], br#"{"prompt": "the cat sat on the"}"#);
/// ```
#[derive(Clone, PartialEq, Eq)]
#[must_use = "a request sends nothing until a transport executes it"]
pub struct Request {
    body: Bytes,
    /// Why the value given to [`Request::json`] could not be serialized,
    /// in the serializer's words for the kind of error (never its message,
    /// which a `Serialize` implementation may fill with data).
    unserializable: Option<&'static str>,
    headers: Vec<(String, String)>,
    deadline: Option<Duration>,
    idempotency_key: Option<String>,
    idle_timeout: Option<Duration>,
    stream_deadline: Option<Duration>,
    expect_done: bool,
}

impl Request {
    /// A request that sends `body`, byte for byte.
    pub fn new(body: impl Into<Bytes>) -> Request {
        Request {
            body: body.into(),
            unserializable: None,
            headers: Vec::new(),
            deadline: None,
            idempotency_key: None,
            idle_timeout: None,
            stream_deadline: None,
            expect_done: false,
        }
    }

    /// A request whose body is `value` serialized with `serde_json`. A value
    /// that cannot be serialized (a map whose keys are not strings, a
    /// `Serialize` implementation that fails) is refused when the request is
    /// sent, as `engine-unreachable` with nothing sent.
    ///
    /// ```
    /// #[derive(serde::Serialize)]
    /// struct Question<'a> {
    ///     prompt: &'a str,
    /// }
    /// let request = meterwire::Request::json(&Question { prompt: "hi" });
    /// assert_eq!(&request.get_body()[..], br#"{"prompt":"hi"}"#);
    /// ```
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Request {
        let mut request = Request::new(Bytes::new());
        request.set_json(value);
        request
    }

    /// Replaces the body with `value` serialized, as [`Request::json`].
    pub(crate) fn set_json<T: Serialize + ?Sized>(&mut self, value: &T) {
        match serde_json::to_vec(value) {
            Ok(body) => {
                self.body = Bytes::from(body);
                self.unserializable = None;
            }
            Err(error) => {
                self.body = Bytes::new();
                self.unserializable = Some(serialize_category(&error));
            }
        }
    }

    /// A non-secret header on this request, besides the transport's own
    /// (a later one of the same name replaces an earlier one). The
    /// transport refuses a name it sets itself (`authorization`, `cookie`,
    /// `host`, framing headers, `idempotency-key`), a value that is not
    /// header-safe, and a value in which its concealer finds a secret.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The deadline of this send, in place of the transport's: connect,
    /// headers and the whole body.
    pub fn deadline(mut self, deadline: Duration) -> Request {
        self.deadline = Some(deadline);
        self
    }

    /// Sends `Idempotency-Key: "<key>"` (the IETF draft's quoted string) on
    /// every attempt of this send, so an engine that honours it can tell a
    /// repeat from a new request. The key is not a secret: visible ASCII
    /// without quotes or backslashes. With a retry policy, a send that
    /// carries a key is tried again after it was sent and failed (a `408`,
    /// a `5xx` without a hint, a reset): give one only to an engine that
    /// honours `Idempotency-Key`, since one that ignores it may bill each
    /// attempt.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Request {
        self.idempotency_key = Some(key.into());
        self
    }

    /// For an answer read as a stream: the longest gap between bytes after
    /// the first, in place of the transport's idle timer (30 s).
    pub fn idle_timeout(mut self, idle: Duration) -> Request {
        self.idle_timeout = Some(idle);
        self
    }

    /// For an answer read as a stream: the deadline of the whole stream, in
    /// place of the transport's (10 min).
    pub fn stream_deadline(mut self, deadline: Duration) -> Request {
        self.stream_deadline = Some(deadline);
        self
    }

    /// For an answer read as a stream: the engine must end it with an SSE
    /// `data: [DONE]` (or an NDJSON line `[DONE]`). A stream whose body
    /// ends without it, cleanly or inside an event, is then refused as
    /// `engine-unreachable` (`"ended without [DONE] after N events"`) and
    /// metered as a refusal; it is never sent again (the engine has
    /// billed). A generation the engine cut short would otherwise read as a
    /// finished one. The chunk reader parses nothing and ignores it.
    ///
    /// ```
    /// let request = meterwire::Request::new("{}").expect_done();
    /// assert!(request.get_expect_done());
    /// ```
    pub fn expect_done(mut self) -> Request {
        self.expect_done = true;
        self
    }

    /// The body, as it will be sent (empty when [`Request::json`] could
    /// not serialize its value).
    pub fn get_body(&self) -> &Bytes {
        &self.body
    }

    /// The value of the header `name` (case ignored) this request adds, the
    /// last one given when it was given twice.
    pub fn get_header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .rev()
            .find(|(given, _)| given.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The deadline this request sets, if any.
    pub fn get_deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// The idempotency key this request sets, if any.
    pub fn get_idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// The idle timer this request sets for a stream, if any.
    pub fn get_idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    /// The stream deadline this request sets, if any.
    pub fn get_stream_deadline(&self) -> Option<Duration> {
        self.stream_deadline
    }

    /// Whether this request asks a stream for `[DONE]`.
    pub fn get_expect_done(&self) -> bool {
        self.expect_done
    }

    /// Every header this request adds, in the order given.
    pub(crate) fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// Why the body could not be serialized, when [`Request::json`] failed.
    pub(crate) fn unserializable(&self) -> Option<&'static str> {
        self.unserializable
    }

    /// The body, given up.
    pub(crate) fn into_body(self) -> Bytes {
        self.body
    }
}

/// Shows the shape of the request, never its body or a header's value, nor
/// a header's name (a caller may build one from a secret): how many
/// bytes, how many headers, the deadline, and whether a key is set.
impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("body_bytes", &self.body.len())
            .field("serializable", &self.unserializable.is_none())
            .field("headers", &self.headers.len())
            .field("deadline", &self.deadline)
            .field("idempotency_key", &self.idempotency_key.is_some())
            .field("expect_done", &self.expect_done)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_cannot_be_serialized_is_kept_as_its_category() {
        let mut map = std::collections::HashMap::new();
        map.insert((1, 2), "a map whose keys are not strings");
        let request = Request::json(&map);
        assert!(request.get_body().is_empty());
        assert!(request.unserializable().is_some());
    }

    #[test]
    fn debug_shows_no_body_and_no_header() {
        let request = Request::new("secret-body")
            .header("x-secret-name", "secret-value")
            .idempotency_key("k");
        let shown = format!("{request:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("body_bytes: 11"), "{shown}");
    }
}
