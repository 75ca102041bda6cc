//! [`HttpTransport`], the handle a predictor holds: cheap to clone, every
//! clone sharing one connection pool, one meter and one hold.
//!
//! Its constructor lives beside the builder (`builder.rs`), `call` beside
//! [`Call`](super::Call) (`call.rs`), and the send loop in `run.rs`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::Client;
use reqwest::header::{HeaderMap, HeaderName};
use serde::Serialize;

use crate::answer::Answer;
use crate::conceal::{Concealer, Shown};
use crate::config::Target;
use crate::limits::Limits;
use crate::meter::{Meter, MeterSnapshot};
use crate::refusal::Refusal;
use crate::refusal::render::origin::{address_origin, token_origin};
use crate::request::Request;
use crate::retry::RetryPolicy;
use crate::stream::{AnswerStream, Ended};

/// Sends JSON bodies to one engine for one scope, and turns what comes back
/// into an [`Answer`] or a [`Refusal`].
///
/// `Clone` is cheap and every clone shares one connection pool.
///
/// ```no_run
/// use meterwire::HttpTransport;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // Reads CHANT_BEHAVIOUR_ENGINE_ACME / CHANT_BEHAVIOUR_ENGINE / BEHAVIOUR_ENGINE
/// // and CHANT_BEHAVIOUR_TOKEN_ACME / CHANT_BEHAVIOUR_TOKEN / BEHAVIOUR_TOKEN.
/// let transport = HttpTransport::builder("acme").build()?;
/// match transport.send(r#"{"question": "next word?"}"#).await {
///     Ok(answer) => println!("{}", answer.text()),
///     Err(refusal) => eprintln!("{}", refusal.report().to_json()),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct HttpTransport {
    pub(super) inner: Arc<Inner>,
}

/// What every clone of a transport shares.
pub(super) struct Inner {
    pub(super) client: Client,
    pub(super) target: Result<Target, Refusal>,
    pub(super) concealer: Concealer,
    pub(super) headers: HeaderMap,
    pub(super) retries: RetryPolicy,
    pub(super) limits: Limits<Refusal>,
    pub(super) meter: Meter,
    pub(super) named: Named,
    pub(super) deadline: Duration,
    pub(super) max_answer_bytes: u64,
    /// A stream's idle timer and deadline, unless a call sets its own.
    pub(super) idle: Duration,
    pub(super) stream_deadline: Duration,
}

/// The scope and the engine's host as every span and `Debug` shows them,
/// concealed once, when the transport is built.
pub(super) struct Named {
    pub(super) scope: Shown,
    pub(super) engine: Shown,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("HttpTransport");
        debug.field("scope", &self.inner.named.scope);
        match &self.inner.target {
            Ok(target) => debug
                .field("address", &target.site.shown_address())
                .field("address_origin", &address_origin(&target.site).provenance())
                .field("token_origin", &token_origin(&target.site).provenance()),
            Err(refusal) => debug.field("refusal", &refusal.cause()),
        };
        let names: Vec<&str> = self.inner.headers.keys().map(HeaderName::as_str).collect();
        debug
            .field("headers", &names)
            .field("deadline", &self.inner.deadline)
            .field("max_answer_bytes", &self.inner.max_answer_bytes)
            .finish()
    }
}

impl HttpTransport {
    /// The refusal every send returns without contacting anything, when the
    /// configuration cannot send (no address, no usable token, a forbidden
    /// address); `None` when sends go to the wire.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.inner.target.as_ref().err()
    }

    /// The concealer this transport passes every outward string through,
    /// for a predictor that wants its own logs scrubbed the same way.
    pub fn concealer(&self) -> &Concealer {
        &self.inner.concealer
    }

    /// The deadline of one send, unless a call sets its own.
    pub fn deadline(&self) -> Duration {
        self.inner.deadline
    }

    /// What this transport and its clones have done so far: sends,
    /// attempts, answers, refusals by cause, held sends, bytes and latency.
    pub fn meter(&self) -> MeterSnapshot {
        self.inner.meter.snapshot()
    }

    /// The answer cap, in bytes.
    pub(crate) fn max_answer_bytes(&self) -> u64 {
        self.inner.max_answer_bytes
    }

    /// `bytes` of a stream's body arrived.
    pub(crate) fn received(&self, bytes: usize) {
        self.inner.meter.received(bytes);
    }

    /// A stream's first byte arrived `after` its send began.
    pub(crate) fn first_byte_after(&self, after: Duration) {
        self.inner.meter.first_byte(after);
    }

    /// The meter and the span of a stream that ended in a refusal after
    /// its head.
    pub(crate) fn streamed_refusal(
        &self,
        span: &tracing::Span,
        refusal: &Refusal,
        elapsed: Duration,
    ) {
        self.inner
            .meter
            .sent(Err(refusal.cause()), Some(elapsed), false);
        self.refused_in(span, refusal, elapsed);
    }

    /// Sends `body`, byte for byte, and reads the answer as a stream, piece
    /// by piece as it arrives: the refusal, if any, comes before the first
    /// piece (a status outside `2xx` is refused as the crate's
    /// [wire table](crate#what-the-wire-becomes) says), and once
    /// the engine has answered `2xx` the request is never sent again.
    ///
    /// ```no_run
    /// # async fn run(transport: meterwire::HttpTransport) {
    /// match transport.stream(r#"{"prompt": "the cat sat on the", "stream": true}"#).await {
    ///     Ok(mut stream) => {
    ///         while let Some(event) = stream.next_event().await {
    ///             match event {
    ///                 Ok(event) => print!("{}", event.data()),
    ///                 Err(refusal) => eprintln!("{}", refusal.remedy()),
    ///             }
    ///         }
    ///     }
    ///     Err(refusal) => eprintln!("{}", refusal.report().to_json()),
    /// }
    /// # }
    /// ```
    pub async fn stream(&self, body: impl Into<Bytes>) -> Result<AnswerStream, Refusal> {
        self.stream_request(Request::new(body)).await
    }

    /// Serializes `request` with `serde_json` and reads the answer as a
    /// stream, as [`HttpTransport::stream`].
    pub async fn stream_json<T: Serialize + ?Sized>(
        &self,
        request: &T,
    ) -> Result<AnswerStream, Refusal> {
        self.stream_request(Request::json(request)).await
    }

    /// Sends `body`, byte for byte, as a JSON `POST`, and returns the
    /// engine's answer or a refusal.
    pub async fn send(&self, body: impl Into<Bytes>) -> Result<Answer, Refusal> {
        self.run(body.into(), Default::default()).await
    }

    /// Serializes `request` with `serde_json` and sends it. A value that
    /// cannot be serialized (a map with non-string keys, a `Serialize`
    /// implementation that fails) is `engine-unreachable` with nothing
    /// sent, like any malformed request.
    ///
    /// ```no_run
    /// # async fn run(transport: meterwire::HttpTransport) {
    /// #[derive(serde::Serialize)]
    /// struct Question<'a> {
    ///     prompt: &'a str,
    /// }
    /// let answer = transport.send_json(&Question { prompt: "the cat sat on the" }).await;
    /// # drop(answer);
    /// # }
    /// ```
    pub async fn send_json<T: Serialize + ?Sized>(&self, request: &T) -> Result<Answer, Refusal> {
        self.execute_request(Request::json(request)).await
    }
}

impl crate::stream::Upstream for HttpTransport {
    fn concealer(&self) -> &Concealer {
        HttpTransport::concealer(self)
    }

    fn max_answer_bytes(&self) -> u64 {
        HttpTransport::max_answer_bytes(self)
    }

    fn received(&self, bytes: usize) {
        HttpTransport::received(self, bytes);
    }

    fn first_byte_after(&self, after: Duration) {
        HttpTransport::first_byte_after(self, after);
    }

    fn streamed_refusal(&self, span: &tracing::Span, refusal: &Refusal, elapsed: Duration) {
        HttpTransport::streamed_refusal(self, span, refusal, elapsed);
    }

    fn billed(&self, span: &tracing::Span, usage: Option<crate::usage::Usage>) {
        self.inner.meter.billed(span, usage);
    }

    fn answered(&self, span: &tracing::Span, ended: Ended<'_>) {
        HttpTransport::answered(self, span, ended);
    }
}
