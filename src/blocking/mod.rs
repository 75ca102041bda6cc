//! The transport for a program with no async runtime (cargo feature
//! `blocking`), as `reqwest::blocking` is reqwest's.
//!
//! The async [`HttpTransport`](crate::HttpTransport) needs a tokio runtime
//! to drive its connections; calling it from plain code (say, with
//! `futures::executor::block_on`) fails inside the HTTP stack. This one
//! keeps a runtime of its own, on one background thread shared by every
//! clone, and runs each send there while the calling thread waits, parked.
//! It never enters the caller's runtime and never starts one on the
//! caller's thread, so it cannot panic the way `Runtime::block_on` does
//! inside a runtime. Called from a thread that is driving an async runtime
//! (inside a task, or a `block_on`), it refuses, saying to use the async
//! transport there, because waiting would stall that runtime; a thread of
//! tokio's blocking pool (`spawn_blocking`) is where blocking belongs, and
//! it sends from there.
//!
//! An answer read as a stream is an iterator of its generated text, its
//! events, lines or chunks ([`AnswerStream`]), each piece read on the
//! background runtime while the caller waits.
//!
//! ```no_run
//! use meterwire::blocking::HttpTransport;
//!
//! # fn run() -> Result<(), meterwire::BuildError> {
//! let transport = HttpTransport::builder("acme").build()?;
//! match transport.send(r#"{"prompt": "the cat sat on the"}"#) {
//!     Ok(answer) => println!("{}", answer.text()),
//!     Err(refusal) => eprintln!("{}", refusal.report().to_json()),
//! }
//! # Ok(())
//! # }
//! ```

mod stream;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use bytes::Bytes;
use secrecy::SecretString;
use serde::Serialize;

use crate::answer::Answer;
use crate::config::env::Env;
use crate::config::naming::Naming;
use crate::meter::MeterSnapshot;
use crate::refusal::Refusal;
use crate::refusal::failure::Failure;
use crate::request::Request;
use crate::retry::RetryPolicy;
use crate::transport::BuildError;
pub use stream::AnswerStream;

/// The blocking transport: the async one, and a runtime of its own to run
/// it on. `Clone` is cheap; every clone shares one pool, one meter, one
/// hold and one background thread.
#[derive(Clone)]
pub struct HttpTransport {
    inner: crate::HttpTransport,
    runtime: Arc<Background>,
}

/// Configures a blocking [`HttpTransport`]: every option of the async
/// [`HttpTransportBuilder`](crate::HttpTransportBuilder), which documents
/// each.
#[must_use]
pub struct HttpTransportBuilder {
    inner: crate::HttpTransportBuilder,
}

/// One send with options of its own, from [`HttpTransport::call`]: the
/// async [`Call`](crate::Call), and the runtime to send it on.
#[must_use = "a call sends nothing until `send()`"]
pub struct Call {
    inner: crate::Call,
    runtime: Arc<Background>,
}

/// The background runtime. Dropped last by the last clone, it shuts down
/// without waiting, which never panics, whatever thread drops it.
struct Background(Option<tokio::runtime::Runtime>);

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("blocking::HttpTransport")
            .field(&self.inner)
            .finish()
    }
}

impl fmt::Debug for HttpTransportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("blocking::HttpTransportBuilder")
            .field(&self.inner)
            .finish()
    }
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("blocking::Call").field(&self.inner).finish()
    }
}

/// Builder methods that hand their arguments on to the async builder or
/// call this one holds.
macro_rules! forward {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $($arg: $ty),*) -> Self {
                self.inner = self.inner.$name($($arg),*);
                self
            }
        )*
    };
}

impl HttpTransportBuilder {
    forward! {
        /// The engine's address, given in code.
        address(address: impl Into<String>);
        /// The bearer token, given in code.
        token(token: SecretString);
        /// The bearer token is in the file at `path`, read again as it
        /// rotates.
        token_file(path: impl Into<PathBuf>);
        /// How often a token file is read again, at most; a minute when not
        /// set.
        token_file_interval(interval: Duration);
        /// A non-secret header on every request.
        header(name: impl Into<String>, value: impl Into<String>);
        /// Retries that cannot double a bill; none when not set.
        retries(policy: RetryPolicy);
        /// Whether the engine's limits hold sends; on by default.
        respect_limits(respect: bool);
        /// The longest hold; 24 hours when not set.
        max_hold(ceiling: Duration);
        /// Refuses sends for `duration` after a `402`, `401` or `403`.
        latch(duration: Duration);
        /// Keeps the engine's hold in the Redis at `url` as well, shared by
        /// every process that names it (cargo feature `redis`).
        #[cfg(feature = "redis")]
        shared_hold(url: impl Into<String>);
        /// The Redis key of the shared hold.
        #[cfg(feature = "redis")]
        shared_hold_key(key: impl Into<String>);
        /// The longest a send waits on the shared hold's Redis; 50 ms when
        /// not set.
        #[cfg(feature = "redis")]
        shared_hold_wait(wait: Duration);
        /// The naming of the chains.
        naming(naming: Naming);
        /// The environment snapshot the chains are read from.
        env(env: Env);
        /// The deadline of one send; 30 000 ms when not set.
        deadline(deadline: Duration);
        /// For an answer read as a stream: the longest gap between bytes
        /// after the first; 30 s when not set.
        idle_timeout(idle: Duration);
        /// For an answer read as a stream: the deadline of the whole
        /// stream; 10 minutes when not set.
        stream_deadline(deadline: Duration);
        /// The largest answer accepted, in bytes; 32 MiB when not set.
        max_answer_bytes(cap: u64);
        /// Trusts one more certificate authority (PEM).
        add_ca_certificate_pem(pem: impl Into<Vec<u8>>);
        /// Sends through this proxy.
        proxy(url: impl Into<String>);
        /// **Dangerous:** allows the token over plain `http` to a host that
        /// is not loopback.
        danger_allow_plaintext_http(allow: bool);
    }

    /// Builds the transport, and starts its background thread. Fails as
    /// the async builder does, and with [`BuildError::Client`] when the
    /// thread cannot start.
    pub fn build(self) -> Result<HttpTransport, BuildError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("meterwire-blocking")
            .enable_all()
            .build()
            .map_err(|_| BuildError::Client)?;
        Ok(HttpTransport {
            inner: self.inner.build()?,
            runtime: Arc::new(Background(Some(runtime))),
        })
    }
}

impl HttpTransport {
    /// A builder for the predictor named `scope`.
    pub fn builder(scope: impl Into<String>) -> HttpTransportBuilder {
        HttpTransportBuilder {
            inner: crate::HttpTransport::builder(scope),
        }
    }

    /// Sends `body`, byte for byte, and waits for the engine's answer or a
    /// refusal.
    pub fn send(&self, body: impl Into<Bytes>) -> Result<Answer, Refusal> {
        self.execute(Request::new(body))
    }

    /// Serializes `value` with `serde_json` and sends it; a value that
    /// cannot be serialized is refused with nothing sent.
    pub fn send_json<T: Serialize + ?Sized>(&self, value: &T) -> Result<Answer, Refusal> {
        self.execute(Request::json(value))
    }

    /// One send with options of its own: headers, a deadline, an
    /// idempotency key.
    pub fn call(&self, body: impl Into<Bytes>) -> Call {
        Call {
            inner: self.inner.call(body),
            runtime: Arc::clone(&self.runtime),
        }
    }

    /// What this transport and its clones have done so far.
    pub fn meter(&self) -> MeterSnapshot {
        self.inner.meter()
    }

    /// The refusal every send returns without contacting anything, when the
    /// configuration cannot send.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.inner.refusal()
    }

    /// Sends `body`, byte for byte, and reads the answer as a stream: its
    /// generated text, events, lines or chunks as they arrive, each as the
    /// async [`AnswerStream`](crate::AnswerStream) yields it. Retries apply
    /// only until a `2xx` head arrives; from then on the request is never
    /// sent again.
    ///
    /// ```no_run
    /// # fn run(transport: meterwire::blocking::HttpTransport) -> Result<(), meterwire::Refusal> {
    /// let mut stream = transport.stream(r#"{"prompt": "the cat sat on the", "stream": true}"#)?;
    /// for delta in stream.deltas() {
    ///     print!("{}", delta?.text());
    /// }
    /// println!("\n{:?}, {:?}", stream.ending(), stream.usage());
    /// # Ok(())
    /// # }
    /// ```
    pub fn stream(&self, body: impl Into<Bytes>) -> Result<AnswerStream, Refusal> {
        self.open(Request::new(body))
    }

    /// Serializes `value` with `serde_json` and reads the answer as a
    /// stream, as [`stream`](Self::stream).
    pub fn stream_json<T: Serialize + ?Sized>(&self, value: &T) -> Result<AnswerStream, Refusal> {
        self.open(Request::json(value))
    }

    /// Sends `request` on the background runtime and waits, parked.
    fn execute(&self, request: Request) -> Result<Answer, Refusal> {
        self.on_background(|transport| async move {
            crate::Transport::execute(&transport, request).await
        })
    }

    /// Opens `request`'s stream on the background runtime and waits for
    /// its head, parked.
    fn open(&self, request: Request) -> Result<AnswerStream, Refusal> {
        let stream = self.on_background(|transport| async move {
            crate::Transport::stream(&transport, request).await
        })?;
        Ok(AnswerStream::new(stream, Arc::clone(&self.runtime)))
    }

    /// Runs what `start` starts on the background runtime, and waits for
    /// it here; refused, with nothing sent, on a thread that is driving an
    /// async runtime.
    fn on_background<T, F>(
        &self,
        start: impl FnOnce(crate::HttpTransport) -> F,
    ) -> Result<T, Refusal>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Refusal>> + Send + 'static,
    {
        if driving_a_runtime() {
            return Err(self.inner.refuse_unsent(Failure::BlockingInRuntime));
        }
        let Some(runtime) = self.runtime.0.as_ref() else {
            return Err(self.inner.refuse_unsent(Failure::Other));
        };
        let sending = runtime.spawn(start(self.inner.clone()));
        match wait(sending) {
            Ok(outcome) => outcome,
            // Only a panic inside the send ends its task without an
            // outcome; it is a refusal here, never a panic.
            Err(_) => Err(self.inner.refuse_unsent(Failure::Other)),
        }
    }
}

/// Whether this thread is driving an async runtime: polling one of its
/// tasks, or the future of a `block_on`, where waiting here would stall
/// every task that runtime has (a current-thread one wholly). A thread of
/// the blocking pool (`spawn_blocking`), or one that only entered a
/// runtime's context, drives none, and may wait.
///
/// Tokio has no public question for this (`Handle::try_current` answers
/// yes on a blocking-pool thread too, and the runtime's flavour is the
/// same on both). What tells them apart is the cooperative budget: tokio
/// gives one to every poll of a task or a `block_on`, and none on a
/// blocking-pool thread or outside a poll, where the budget never runs
/// out. So the budget is spent here, at most its largest size (a `u8`):
/// if it runs out, a runtime is polling this thread. The refusal that
/// follows ends the poll's work anyway, so what the poll loses is one
/// yield at its next await. A future wrapped in `unconstrained` is
/// polled without a budget, and is not told apart: it stalls its worker,
/// but the send runs on the transport's own runtime, so it still ends.
fn driving_a_runtime() -> bool {
    if tokio::runtime::Handle::try_current().is_err() {
        return false;
    }
    let mut context = Context::from_waker(Waker::noop());
    for _ in 0..=u8::MAX {
        match tokio::task::coop::poll_proceed(&mut context) {
            Poll::Ready(spent) => spent.made_progress(),
            Poll::Pending => return true,
        }
    }
    false
}

impl Call {
    forward! {
        /// A non-secret header on this request.
        header(name: impl Into<String>, value: impl Into<String>);
        /// The deadline of this call, in place of the transport's.
        deadline(deadline: Duration);
        /// Sends `Idempotency-Key: "<key>"` on every attempt of this send.
        idempotency_key(key: impl Into<String>);
        /// For an answer read as a stream: the longest gap between bytes
        /// after the first, in place of the transport's idle timer.
        idle_timeout(idle: Duration);
        /// For an answer read as a stream: the deadline of the whole
        /// stream, in place of the transport's.
        stream_deadline(deadline: Duration);
        /// The engine must end this call's stream with `[DONE]`, as
        /// [`Request::expect_done`] says.
        expect_done();
    }

    /// Replaces the body with `value` serialized with `serde_json`.
    pub fn json<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        self.inner = self.inner.json(value);
        self
    }

    /// Sends the call and waits for the engine's answer or a refusal.
    pub fn send(self) -> Result<Answer, Refusal> {
        let (transport, request) = self.into_parts();
        transport.execute(request)
    }

    /// Sends the call and reads the answer as a stream, as
    /// [`HttpTransport::stream`].
    pub fn stream(self) -> Result<AnswerStream, Refusal> {
        let (transport, request) = self.into_parts();
        transport.open(request)
    }

    /// The blocking transport that sends the request, and the request.
    fn into_parts(self) -> (HttpTransport, Request) {
        let crate::Call { transport, request } = self.inner;
        let transport = HttpTransport {
            inner: transport,
            runtime: self.runtime,
        };
        (transport, request)
    }
}

/// Wakes the parked thread that waits for a send.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Waits on this thread for `future`, which runs elsewhere (its waker
/// unparks this thread); no runtime is entered here. The send's own
/// deadline bounds the wait.
fn wait<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}
