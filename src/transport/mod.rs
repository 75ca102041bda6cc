//! The HTTP transport: one scope, one engine, one account.
//!
//! Everything that can be decided without the network is decided when the
//! transport is built (the `config` module): a configuration that cannot
//! send becomes a stored [`Refusal`] that every send returns without opening
//! a connection.
//!
//! The client underneath is configured against the three ways a bearer
//! header leaks in transit:
//!
//! - **Redirects are never followed.** A `3xx` would carry the header to
//!   whatever host the engine (or anyone who can rewrite its answers) named.
//! - **No ambient proxy.** `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` are
//!   ignored; a proxy sees plain `http` traffic, header and all, so one is
//!   used only when the caller names it.
//! - **TLS for the token.** Plain `http` is allowed to loopback alone unless
//!   the caller opts in with [`HttpTransportBuilder::danger_allow_plaintext_http`]
//!   (RFC 6750 §5.3 requires TLS for bearer tokens).
//!
//! And against an engine that sends too much: one deadline covers connect,
//! headers and the whole body; an error body is read only as far as its
//! first 64 KiB; an answer over the cap is refused without holding more than
//! the cap.
//!
//! The files follow the client's own seams: the handle ([`HttpTransport`],
//! `handle.rs`), its builder (`builder.rs`), one call with options of its
//! own (`call.rs`), the send loop (`run.rs`), what one attempt's reply
//! becomes (`reply.rs`, reading any `Incoming` answer), the door every
//! header enters through (`door.rs`), the bounded reads of a body
//! (`body.rs`), what a caller may add to the request (`headers.rs`) and the
//! one deadline of a send (`deadline.rs`).

mod body;
mod builder;
mod call;
pub(crate) mod deadline;
mod door;
mod handle;
pub(crate) mod headers;
pub(crate) mod incoming;
pub(crate) mod post;
pub(crate) mod reply;
pub(crate) mod run;
mod short;
pub(crate) mod tls;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

pub use builder::{BuildError, HttpTransportBuilder};
pub use call::Call;
pub use handle::HttpTransport;

use crate::answer::Answer;
use crate::meter::MeterSnapshot;
use crate::refusal::Refusal;
use crate::refusal::failure::unserializable_unaddressed;
use crate::request::Request;
use crate::stream::AnswerStream;

/// What a [`Transport`] method returns: its outcome, to be awaited, boxed
/// so that the trait is object safe (`Arc<dyn Transport>`). Not public: the
/// trait's documentation shows the type it stands for, which is what an
/// implementation outside the crate writes.
pub(crate) type Sending<'a, T> = Pin<Box<dyn Future<Output = Result<T, Refusal>> + Send + 'a>>;

/// The deadline when none is set: 30 seconds for connect, headers and body.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(30_000);

/// The answer cap when none is set: 32 MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 32 * 1024 * 1024;

/// The `user-agent` every request carries: the crate and its version.
pub const USER_AGENT: &str = concat!("meterwire/", env!("CARGO_PKG_VERSION"));

/// What a predictor depends on: send a body (or a [`Request`], a body with
/// options of its own), get an answer or a refusal.
///
/// [`HttpTransport`] is the real one. It is implemented for `&T`, `Arc<T>`
/// and `Box<T>` too, so a predictor can hold `Arc<dyn Transport>`, give
/// each send its deadline, key and headers through [`Transport::execute`],
/// read the meter, and its tests can pass a fake that checks what it was
/// given:
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::sync::{Arc, Mutex};
/// use meterwire::{Answer, Bytes, Refusal, Request, Transport};
///
/// /// Answers every request, and keeps the keys it was given.
/// #[derive(Default)]
/// struct Fake {
///     keys: Mutex<Vec<Option<String>>>,
/// }
///
/// impl Transport for Fake {
///     fn send(
///         &self,
///         body: Bytes,
///     ) -> Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
///         self.execute(Request::new(body))
///     }
///
///     fn execute(
///         &self,
///         request: Request,
///     ) -> Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
///         let key = request.get_idempotency_key().map(str::to_owned);
///         self.keys.lock().unwrap().push(key);
///         Box::pin(async { Ok(Answer::new(200, r#"{"next": "mat"}"#).with_request_id("req-1")) })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let fake = Arc::new(Fake::default());
/// let transport: Arc<dyn Transport> = fake.clone();
/// let answer = transport
///     .execute(Request::new("{}").idempotency_key("order-7"))
///     .await
///     .expect("the fake answers");
/// assert_eq!(answer.request_id(), Some("req-1"));
/// assert_eq!(*fake.keys.lock().unwrap(), [Some("order-7".to_owned())]);
/// assert!(transport.meter().is_none(), "a fake keeps no meter");
/// # }
/// ```
pub trait Transport: Send + Sync {
    /// Sends `body` and returns the engine's answer or a refusal.
    fn send(&self, body: Bytes) -> Sending<'_, Answer>;

    /// Sends `request`, with its options: its headers, deadline and
    /// idempotency key. The default sends the body alone (a fake need only
    /// write [`send`](Transport::send)); a body [`Request::json`] could not
    /// serialize is refused with nothing sent.
    fn execute(&self, request: Request) -> Sending<'_, Answer> {
        match request.unserializable() {
            Some(category) => {
                let refusal = unserializable_unaddressed(category);
                Box::pin(async move { Err(refusal) })
            }
            None => self.send(request.into_body()),
        }
    }

    /// Sends `request` and reads the answer as a stream, piece by piece.
    /// The default executes the request and yields the whole answer as one
    /// chunk (its events and lines read from it like any others, and
    /// [`Request::expect_done`] honoured), with the answer's request id and
    /// `content-type`, so a fake need only write [`send`](Transport::send)
    /// or [`execute`](Transport::execute).
    fn stream(&self, request: Request) -> Sending<'_, AnswerStream> {
        let expect_done = request.get_expect_done();
        let executed = self.execute(request);
        Box::pin(async move {
            let answer = executed.await?;
            let request_id = answer.request_id().map(str::to_owned);
            let content_type = answer.header("content-type").map(str::to_owned);
            let usage = answer.usage();
            let mut stream =
                AnswerStream::from_chunks(answer.status(), [answer.into_text()]).with_usage(usage);
            if expect_done {
                stream = stream.expecting_done();
            }
            if let Some(id) = request_id {
                stream = stream.with_request_id(id);
            }
            if let Some(content_type) = content_type {
                stream = stream.with_content_type(content_type);
            }
            Ok(stream)
        })
    }

    /// What the transport has done so far, when it keeps a meter;
    /// [`HttpTransport`] does, a fake need not (the default is `None`).
    fn meter(&self) -> Option<MeterSnapshot> {
        None
    }
}

/// A transport behind a reference or a pointer is the transport: every
/// method forwards, defaults included, so a wrapper never loses an option.
macro_rules! forward {
    ($($pointer:ty),+) => {$(
        impl<T: Transport + ?Sized> Transport for $pointer {
            fn send(&self, body: Bytes) -> Sending<'_, Answer> {
                (**self).send(body)
            }

            fn execute(&self, request: Request) -> Sending<'_, Answer> {
                (**self).execute(request)
            }

            fn stream(&self, request: Request) -> Sending<'_, AnswerStream> {
                (**self).stream(request)
            }

            fn meter(&self) -> Option<MeterSnapshot> {
                (**self).meter()
            }
        }
    )+};
}

forward!(&T, Arc<T>, Box<T>);

impl Transport for HttpTransport {
    fn send(&self, body: Bytes) -> Sending<'_, Answer> {
        Box::pin(HttpTransport::send(self, body))
    }

    fn execute(&self, request: Request) -> Sending<'_, Answer> {
        Box::pin(self.execute_request(request))
    }

    fn stream(&self, request: Request) -> Sending<'_, AnswerStream> {
        Box::pin(self.stream_request(request))
    }

    fn meter(&self) -> Option<MeterSnapshot> {
        Some(HttpTransport::meter(self))
    }
}
