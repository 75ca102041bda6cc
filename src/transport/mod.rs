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
pub(crate) mod reply;
pub(crate) mod run;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

pub use builder::{BuildError, HttpTransportBuilder};
pub use call::Call;
pub use handle::HttpTransport;

use crate::answer::Answer;
use crate::refusal::Refusal;

/// The deadline when none is set: 30 seconds for connect, headers and body.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(30_000);

/// The answer cap when none is set: 32 MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 32 * 1024 * 1024;

/// The `user-agent` every request carries: the crate and its version.
pub const USER_AGENT: &str = concat!("meterwire/", env!("CARGO_PKG_VERSION"));

/// What a predictor depends on: send a body, get an answer or a refusal.
///
/// [`HttpTransport`] is the real one. It is implemented for `&T`, `Arc<T>`
/// and `Box<T>` too, so a predictor can hold `Arc<dyn Transport>` and its
/// tests can pass a fake with canned answers and refusals:
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::sync::Arc;
/// use meterwire::{Answer, Bytes, Cause, Refusal, Transport};
///
/// struct OutOfCredit;
///
/// impl Transport for OutOfCredit {
///     fn send(
///         &self,
///         _body: Bytes,
///     ) -> Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
///         Box::pin(async {
///             Err(Refusal::new(
///                 Cause::EngineOutOfCredit,
///                 "HTTP 402: out of credit",
///                 "fund the account of the token in CHANT_BEHAVIOUR_TOKEN",
///                 Some("CHANT_BEHAVIOUR_ENGINE".to_owned()),
///             ))
///         })
///     }
/// }
///
/// let shared: Arc<dyn Transport> = Arc::new(OutOfCredit);
/// # let _ = &shared;
/// ```
pub trait Transport: Send + Sync {
    /// Sends `body` and returns the engine's answer or a refusal.
    fn send(
        &self,
        body: Bytes,
    ) -> Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>>;
}

impl<T: Transport + ?Sized> Transport for &T {
    fn send(
        &self,
        body: Bytes,
    ) -> Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
        (**self).send(body)
    }
}

impl<T: Transport + ?Sized> Transport for Arc<T> {
    fn send(
        &self,
        body: Bytes,
    ) -> Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
        (**self).send(body)
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn send(
        &self,
        body: Bytes,
    ) -> Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
        (**self).send(body)
    }
}

impl Transport for HttpTransport {
    fn send(
        &self,
        body: Bytes,
    ) -> Pin<Box<dyn Future<Output = Result<Answer, Refusal>> + Send + '_>> {
        Box::pin(HttpTransport::send(self, body))
    }
}
