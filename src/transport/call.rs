//! [`Call`]: one send with options of its own, a [`Request`] bound to the
//! transport that sends it.
//!
//! A request's options are checked when it is sent, with the transport's
//! concealer: a header or key that cannot be sent refuses the call with
//! `engine-unreachable` and nothing sent, naming the option but never a
//! header's value.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;

use serde::Serialize;

use super::handle::HttpTransport;
use super::headers::{IdempotencyKey, header_map, shown_name};
use super::run::{Options, StreamTimers};
use crate::answer::Answer;
use crate::conceal::Shown;
use crate::refusal::Refusal;
use crate::refusal::failure::Failure;
use crate::request::Request;
use crate::stream::AnswerStream;

/// One send with options of its own, from [`HttpTransport::call`]: a
/// [`Request`] bound to the transport that will send it. Nothing happens
/// until [`Call::send`].
#[must_use = "a call sends nothing until `send().await`"]
pub struct Call {
    // Seen by the blocking `Call`, which holds this one and sends its
    // request on a runtime of its own.
    pub(crate) transport: HttpTransport,
    pub(crate) request: Request,
}

/// Shows the call without its body or header values, and its header names
/// concealed.
impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let concealer = self.transport.concealer();
        let names: Vec<Shown> = self
            .request
            .headers()
            .iter()
            .map(|(name, _)| shown_name(name, concealer))
            .collect();
        f.debug_struct("Call")
            .field("transport", &self.transport)
            .field("body_bytes", &self.request.get_body().len())
            .field("headers", &names)
            .field("deadline", &self.request.get_deadline())
            .field(
                "idempotency_key",
                &self.request.get_idempotency_key().is_some(),
            )
            .finish()
    }
}

impl HttpTransport {
    /// One send with options of its own: headers, a deadline, an
    /// idempotency key.
    ///
    /// ```no_run
    /// # async fn run(transport: meterwire::HttpTransport) {
    /// use std::time::Duration;
    ///
    /// let answer = transport
    ///     .call(r#"{"prompt": "the cat sat on the"}"#)
    ///     .header("x-trace", "t-1")
    ///     .deadline(Duration::from_secs(5))
    ///     .idempotency_key("order-7")
    ///     .send()
    ///     .await;
    /// # drop(answer);
    /// # }
    /// ```
    pub fn call(&self, body: impl Into<Bytes>) -> Call {
        Call {
            transport: self.clone(),
            request: Request::new(body),
        }
    }

    /// Checks a request's options with this transport's concealer and
    /// sends it: a header or key that cannot be sent, a zero deadline or a
    /// body that could not be serialized refuses it with nothing sent,
    /// naming the option but never a header's value.
    pub(super) async fn execute_request(&self, request: Request) -> Result<Answer, Refusal> {
        let options = self.options(&request)?;
        self.run(request.into_body(), options).await
    }

    /// The same checks, then the answer read as a stream.
    pub(super) async fn stream_request(&self, request: Request) -> Result<AnswerStream, Refusal> {
        let options = self.options(&request)?;
        self.open(request.into_body(), options).await
    }

    /// A request's options, checked.
    fn options(&self, request: &Request) -> Result<Options, Refusal> {
        if let Some(category) = request.unserializable() {
            return Err(self.refuse_unsent(Failure::Unserializable(category)));
        }
        let concealer = self.concealer();
        let unsendable = |why: Shown| self.refuse_unsent(Failure::Unsendable(why));
        let extra = header_map(request.headers(), concealer)
            .map_err(|problem| unsendable(problem.describe()))?;
        let key = match request.get_idempotency_key() {
            Some(key) => Some(
                IdempotencyKey::given(key, concealer)
                    .map_err(|problem| unsendable(problem.describe()))?,
            ),
            None => None,
        };
        let zero = |duration: Option<Duration>| duration.is_some_and(|duration| duration.is_zero());
        if zero(request.get_deadline()) {
            return Err(unsendable(Shown::from(
                "the call's deadline is zero, which no engine can meet",
            )));
        }
        if zero(request.get_idle_timeout()) || zero(request.get_stream_deadline()) {
            return Err(unsendable(Shown::from(
                "the call's idle timer or stream deadline is zero, which no stream can meet",
            )));
        }
        Ok(Options {
            extra,
            deadline: request.get_deadline(),
            key,
            timers: StreamTimers {
                idle: request.get_idle_timeout(),
                stream: request.get_stream_deadline(),
            },
            expect_done: request.get_expect_done(),
        })
    }
}

impl Call {
    /// A non-secret header on this request, besides the transport's own
    /// (replacing one of the same name). Checked as
    /// [`HttpTransportBuilder::header`](super::HttpTransportBuilder::header)
    /// checks; a header that cannot be sent makes [`send`](Self::send)
    /// refuse with `engine-unreachable`, nothing sent, the reason naming the
    /// header but never its value.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.request = self.request.header(name, value);
        self
    }

    /// The deadline of this call, in place of the transport's: connect,
    /// headers and the whole body.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.request = self.request.deadline(deadline);
        self
    }

    /// Sends `Idempotency-Key: "<key>"` (the IETF draft's quoted string), so
    /// an engine that honours it can tell a repeat of this request from a
    /// new one. The key is not a secret: it must be visible ASCII without
    /// quotes or backslashes, and a key in which the concealer finds a
    /// secret is refused like a bad header. With a retry policy, a send
    /// that carries a key is tried again after it was sent and failed (a
    /// `408`, a `5xx` without a hint, a reset): give one only to an engine
    /// that honours `Idempotency-Key`, since one that ignores it may bill
    /// each attempt.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.request = self.request.idempotency_key(key);
        self
    }

    /// Replaces the body with `value` serialized with `serde_json`, as
    /// reqwest's `RequestBuilder::json` does; a value that cannot be
    /// serialized makes [`send`](Self::send) refuse with nothing sent.
    ///
    /// ```no_run
    /// # async fn run(transport: meterwire::HttpTransport) {
    /// #[derive(serde::Serialize)]
    /// struct Question<'a> {
    ///     prompt: &'a str,
    /// }
    /// let answer = transport
    ///     .call("")
    ///     .json(&Question { prompt: "the cat sat on the" })
    ///     .idempotency_key("order-7")
    ///     .send()
    ///     .await;
    /// # drop(answer);
    /// # }
    /// ```
    pub fn json<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        self.request.set_json(value);
        self
    }

    /// The idle timer of this call's stream, in place of the transport's:
    /// the longest gap between bytes after the first.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.request = self.request.idle_timeout(idle);
        self
    }

    /// The deadline of this call's whole stream, in place of the
    /// transport's.
    pub fn stream_deadline(mut self, deadline: Duration) -> Self {
        self.request = self.request.stream_deadline(deadline);
        self
    }

    /// The engine must end this call's stream with `[DONE]`, as
    /// [`Request::expect_done`] says: a stream whose body ends without it
    /// is refused as `engine-unreachable`, metered as a refusal, and never
    /// sent again.
    pub fn expect_done(mut self) -> Self {
        self.request = self.request.expect_done();
        self
    }

    /// Sends the call and returns the engine's answer or a refusal.
    pub async fn send(self) -> Result<Answer, Refusal> {
        self.transport.execute_request(self.request).await
    }

    /// Sends the call and reads the answer as a stream, as
    /// [`HttpTransport::stream`].
    pub async fn stream(self) -> Result<AnswerStream, Refusal> {
        self.transport.stream_request(self.request).await
    }
}
