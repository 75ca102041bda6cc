//! The HTTP transport: one scope, one engine, one account.
//!
//! Everything that can be decided without the network is decided when the
//! transport is built (see the `config` module): a configuration that
//! cannot send becomes a stored [`Refusal`] that every send returns without
//! opening a connection.
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

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Certificate, Client, Proxy, Response, redirect};
use secrecy::SecretString;
use serde::Serialize;
use tokio::time::{Instant, timeout_at};

use tracing::Instrument;

use crate::config::{self, Armed, Given, HeaderProblem};
use crate::limits::Limits;
use crate::meter::{Meter, MeterSnapshot};
use crate::refusal::before_send as held;
use crate::refusal::evidence::request_id::{REQUEST_ID_HEADERS, request_id};
use crate::refusal::evidence::words::{DETAIL_READ_LIMIT, engine_value};
use crate::refusal::failure::{self, Failure, classify, refusal_for_failure};
use crate::refusal::status::refusal_for_status;
use crate::retry::{self, Outcome, Retry, RetryPolicy};
use crate::{Answer, Cause, Concealer, Env, Naming, NamingError, Refusal};

/// The deadline when none is set: 30 seconds for connect, headers and body.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(30_000);

/// The answer cap when none is set: 32 MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 32 * 1024 * 1024;

/// The `user-agent` every request carries: the crate and its version.
pub const USER_AGENT: &str = concat!("meterwire/", env!("CARGO_PKG_VERSION"));

/// How many characters of a request id an answer keeps.
const REQUEST_ID_LIMIT: usize = 100;

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

/// A transport that cannot be built: the configuration itself is wrong, as
/// opposed to the environment (which gives a refusal at send time).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The scope folds to no variable name.
    #[error(transparent)]
    Scope(#[from] NamingError),
    /// A deadline of zero would refuse every call.
    #[error("the deadline is zero: give the engine at least 1 ms (the default is 30000 ms)")]
    ZeroDeadline,
    /// An answer cap of zero would refuse every answer.
    #[error("the answer cap is zero: allow at least 1 byte (the default is 33554432)")]
    ZeroCap,
    /// The extra CA certificate is not a PEM certificate.
    #[error(
        "the extra CA certificate is not a PEM certificate ({0}): pass the authority's certificate as PEM text (-----BEGIN CERTIFICATE-----)"
    )]
    CaCertificate(&'static str),
    /// The proxy is not a URL reqwest can use.
    #[error("the proxy {shown} is not a proxy URL: give it as http://host:port")]
    Proxy {
        /// The proxy as given, redacted.
        shown: String,
    },
    /// A header given with [`HttpTransportBuilder::header`] cannot be sent:
    /// its name is not a header name or is one the transport sets itself,
    /// or its value is not header-safe or holds a secret. The message names
    /// the header, never its value.
    #[error("{0}: fix or drop it where the predictor calls HttpTransportBuilder::header")]
    Header(String),
    /// The HTTP client could not be set up (the TLS backend failed to load).
    #[error(
        "the HTTP client could not be set up: the TLS backend or its trust store failed to load"
    )]
    Client,
}

/// Configures an [`HttpTransport`].
///
/// ```
/// use std::time::Duration;
/// use meterwire::{Env, HttpTransport, SecretString};
///
/// let transport = HttpTransport::builder("acme")
///     .address("http://127.0.0.1:9/v1/predict")
///     .token(SecretString::from("mw-0123456789"))
///     .header("engine-version", "2025-01-01")
///     .env(Env::new())
///     .deadline(Duration::from_millis(500))
///     .max_answer_bytes(1 << 20)
///     .build()?;
/// assert!(transport.refusal().is_none());
/// # Ok::<(), meterwire::BuildError>(())
/// ```
#[must_use]
pub struct HttpTransportBuilder {
    scope: String,
    naming: Naming,
    env: Option<Env>,
    address: Option<String>,
    token: Option<SecretString>,
    headers: Vec<(String, String)>,
    deadline: Duration,
    max_answer_bytes: u64,
    ca_pems: Vec<Vec<u8>>,
    proxy: Option<String>,
    allow_plaintext: bool,
    retries: RetryPolicy,
    respect_limits: bool,
    latch: Option<Duration>,
}

/// Shows the configuration without a secret: the address redacted, whether
/// a token was given (never what), header names without their values.
impl fmt::Debug for HttpTransportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("HttpTransportBuilder")
            .field("scope", &self.scope)
            .field("naming", &self.naming)
            .field("env", &self.env)
            .field(
                "address",
                &self.address.as_deref().map(crate::address::redact_address),
            )
            .field("token", &self.token.as_ref().map(|_| "given in code"))
            .field("headers", &names)
            .field("deadline", &self.deadline)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("ca_certificates", &self.ca_pems.len())
            .field(
                "proxy",
                &self.proxy.as_deref().map(crate::address::redact_address),
            )
            .field("allow_plaintext", &self.allow_plaintext)
            .field("retries", &self.retries)
            .field("respect_limits", &self.respect_limits)
            .field("latch", &self.latch)
            .finish()
    }
}

impl HttpTransportBuilder {
    /// The engine's address, given in code: it wins over the address chain
    /// and is checked exactly like a chain's value. Refusals then say "given
    /// in code" and their remedies name this method and the chain's
    /// variable.
    pub fn address(mut self, address: impl Into<String>) -> Self {
        self.address = Some(address.into());
        self
    }

    /// The bearer token, given in code: it wins over the token chain and is
    /// checked exactly like a chain's value (visible ASCII, no line breaks).
    pub fn token(mut self, token: SecretString) -> Self {
        self.token = Some(token);
        self
    }

    /// A non-secret header on every request, such as an engine's version
    /// header. [`build`](Self::build) fails with [`BuildError::Header`] for
    /// a name that is not a header name, a value that is not header-safe,
    /// a header the transport sets itself (`authorization`,
    /// `proxy-authorization`, `cookie`, `host`, `content-length`,
    /// `transfer-encoding`, `connection`, `keep-alive`, `te`, `upgrade`,
    /// `idempotency-key`), and a value in which the concealer finds a
    /// secret. A later header of the same name replaces an earlier one.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Retries (§9 of the contract): none when not set. A retry is made only
    /// where it cannot double a bill: the request never reached the engine,
    /// the engine asked for it with a hint, or an idempotency key makes it
    /// safe. Every attempt sends the same bytes and the same key, and one
    /// deadline covers every attempt and every wait.
    pub fn retries(mut self, policy: RetryPolicy) -> Self {
        self.retries = policy;
        self
    }

    /// Whether a `429` or `503` with a retry hint, or an answer whose
    /// rate-limit fields say nothing is left, holds every send of this
    /// transport and its clones until the window ends; on by default. A
    /// held send is not sent: with a retry policy (more than one attempt)
    /// whose `max_wait` and the deadline cover the time left it waits, then
    /// sends; else it is refused at once as `engine-over-quota`, its
    /// `retry_after` the time left.
    pub fn respect_limits(mut self, respect: bool) -> Self {
        self.respect_limits = respect;
        self
    }

    /// After a `402`, `401` or `403`, refuses every send of this transport
    /// and its clones for `duration` with the same cause, without sending;
    /// off by default. A different token is a different transport, so the
    /// latch never outlives the token it judged.
    pub fn latch(mut self, duration: Duration) -> Self {
        self.latch = Some(duration).filter(|duration| !duration.is_zero());
        self
    }

    /// The naming of the chains; [`Naming::default`] when not set.
    pub fn naming(mut self, naming: Naming) -> Self {
        self.naming = naming;
        self
    }

    /// The environment snapshot the chains are read from;
    /// [`Env::from_process`] when not set.
    pub fn env(mut self, env: Env) -> Self {
        self.env = Some(env);
        self
    }

    /// The deadline for connect, headers and the whole body; 30 000 ms when
    /// not set. [`Call::deadline`] replaces it for one call.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The largest answer body accepted, in bytes; 32 MiB when not set. A
    /// larger answer is refused and never held whole.
    pub fn max_answer_bytes(mut self, cap: u64) -> Self {
        self.max_answer_bytes = cap;
        self
    }

    /// Trusts one more certificate authority (PEM; a bundle of several is
    /// fine), besides the platform's.
    pub fn add_ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pems.push(pem.into());
        self
    }

    /// Sends through this proxy (`http://host:port`). Without this call no
    /// proxy is used, whatever the environment says.
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = Some(url.into());
        self
    }

    /// **Dangerous:** allows sending the bearer token over plain `http` to a
    /// host that is not loopback, where anyone on the path can read it and
    /// spend the account. Off by default; RFC 6750 §5.3 requires TLS.
    pub fn danger_allow_plaintext_http(mut self, allow: bool) -> Self {
        self.allow_plaintext = allow;
        self
    }

    /// Builds the transport, resolving the address and the token now.
    ///
    /// Fails only for a configuration that is wrong in itself (an empty
    /// scope, a zero deadline or cap, a CA that is not PEM, a bad proxy URL,
    /// a header that cannot be sent). An environment that cannot send (no
    /// address, no usable token, a forbidden address) still builds:
    /// [`HttpTransport::refusal`] holds the refusal every send returns.
    pub fn build(self) -> Result<HttpTransport, BuildError> {
        if crate::naming::fold_scope(&self.scope).is_empty() {
            return Err(BuildError::Scope(NamingError::EmptyScope {
                scope: crate::text::bound(&self.scope, 64).to_owned(),
            }));
        }
        if self.deadline.is_zero() {
            return Err(BuildError::ZeroDeadline);
        }
        if self.max_answer_bytes == 0 {
            return Err(BuildError::ZeroCap);
        }
        let mut certs = Vec::new();
        for pem in &self.ca_pems {
            let bundle = Certificate::from_pem_bundle(pem)
                .map_err(|_| BuildError::CaCertificate("it does not parse"))?;
            if bundle.is_empty() {
                return Err(BuildError::CaCertificate("it holds no certificate"));
            }
            certs.extend(bundle);
        }
        // No client-wide timeout: each call's own deadline covers connect,
        // headers and body (`timeout_at` in `execute`), and a call may be
        // given a longer one than the transport's.
        let mut client = Client::builder()
            .no_proxy()
            .redirect(redirect::Policy::none())
            .user_agent(USER_AGENT)
            .tls_certs_merge(certs);
        if let Some(proxy) = &self.proxy {
            let proxy = Proxy::all(proxy.as_str()).map_err(|_| BuildError::Proxy {
                shown: crate::address::redact_address(proxy),
            })?;
            client = client.proxy(proxy);
        }
        let client = client.build().map_err(|_| BuildError::Client)?;

        let env = self.env.unwrap_or_else(Env::from_process);
        let given = Given {
            address: self.address,
            token: self.token,
        };
        let plan = config::plan(&self.naming, &self.scope, &env, given, self.allow_plaintext);
        let headers = header_map(&self.headers, &plan.concealer)
            .map_err(|problem| BuildError::Header(problem.describe()))?;
        let shown = (
            plan.concealer.conceal(&self.scope).into_owned(),
            plan.armed
                .as_ref()
                .map(|armed| armed.site.host())
                .unwrap_or_default(),
        );
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                client,
                armed: plan.armed,
                concealer: plan.concealer,
                headers,
                retries: self.retries,
                respect_limits: self.respect_limits,
                latch: self.latch,
                limits: Limits::default(),
                meter: Meter::default(),
                shown,
                scope: self.scope,
                deadline: self.deadline,
                max_answer_bytes: self.max_answer_bytes,
            }),
        })
    }
}

/// Checks caller headers and gathers them; a later one of the same name
/// replaces an earlier one.
fn header_map(
    headers: &[(String, String)],
    concealer: &Concealer,
) -> Result<HeaderMap, HeaderProblem> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let (name, value) = config::check_header(name, value, concealer)?;
        map.insert(name, value);
    }
    Ok(map)
}

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
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    armed: Result<Armed, Refusal>,
    concealer: Concealer,
    headers: HeaderMap,
    retries: RetryPolicy,
    respect_limits: bool,
    latch: Option<Duration>,
    limits: Limits,
    meter: Meter,
    /// The scope and the engine's host as every span shows them, concealed
    /// once, when the transport is built.
    shown: (String, String),
    scope: String,
    deadline: Duration,
    max_answer_bytes: u64,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("HttpTransport");
        debug.field("scope", &self.inner.scope);
        match &self.inner.armed {
            Ok(armed) => debug
                .field("address", &armed.site.shown_address())
                .field("address_origin", armed.site.address().origin())
                .field("token_origin", armed.site.token()),
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
    /// A builder for the predictor named `scope`.
    pub fn builder(scope: impl Into<String>) -> HttpTransportBuilder {
        HttpTransportBuilder {
            scope: scope.into(),
            naming: Naming::default(),
            env: None,
            address: None,
            token: None,
            headers: Vec::new(),
            deadline: DEFAULT_DEADLINE,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            ca_pems: Vec::new(),
            proxy: None,
            allow_plaintext: false,
            retries: RetryPolicy::none(),
            respect_limits: true,
            latch: None,
        }
    }

    /// The refusal every send returns without contacting anything, when the
    /// configuration cannot send (no address, no usable token, a forbidden
    /// address); `None` when sends go to the wire.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.inner.armed.as_ref().err()
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

    /// Sends `body`, byte for byte, as a JSON `POST`, and returns the
    /// engine's answer or a refusal.
    pub async fn send(&self, body: impl Into<Bytes>) -> Result<Answer, Refusal> {
        self.execute(body.into(), None, None, None).await
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
        match serde_json::to_vec(request) {
            Ok(body) => self.execute(Bytes::from(body), None, None, None).await,
            Err(error) => {
                Err(self
                    .refuse_unsent(Failure::Unserializable(failure::serialize_category(&error))))
            }
        }
    }

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
            body: body.into(),
            headers: Vec::new(),
            deadline: None,
            idempotency_key: None,
        }
    }

    /// A refusal for a call that could not be sent: the configuration's own
    /// refusal when it has one, else `failure` (nothing sent, no attempt).
    fn refuse_unsent(&self, failure: Failure) -> Refusal {
        let refusal = match &self.inner.armed {
            Ok(armed) => refusal_for_failure(&armed.site, &failure),
            Err(refusal) => refusal.clone(),
        };
        self.inner.meter.sent(Err(refusal.cause()), None, false);
        let span = self.span();
        span.record("attempts", 0);
        span.record("cause", refusal.cause().as_str());
        refused(&span, &refusal);
        refusal
    }

    /// One send: the latch, the hold, then as many attempts as the policy
    /// and §9's table allow, all within one deadline; metered and traced.
    async fn execute(
        &self,
        body: Bytes,
        extra: Option<HeaderMap>,
        deadline: Option<Duration>,
        key: Option<String>,
    ) -> Result<Answer, Refusal> {
        let started = Instant::now();
        let span = self.span();
        let (outcome, reach) = self
            .attempts(body, extra, deadline, key, started, &span)
            .instrument(span.clone())
            .await;
        let elapsed = started.elapsed();
        let meter = &self.inner.meter;
        let reached = reach == Reach::Wire;
        match &outcome {
            Ok(answer) => {
                meter.sent(Ok(()), Some(elapsed), false);
                span.record("attempts", answer.attempts());
                span.record("status", answer.status());
                if let Some(id) = answer.request_id() {
                    span.record("request_id", id);
                }
            }
            Err(refusal) => {
                let held = reach == Reach::Held;
                meter.sent(Err(refusal.cause()), reached.then_some(elapsed), held);
                span.record("attempts", refusal.attempts());
                span.record("cause", refusal.cause().as_str());
                if let Some(status) = refusal.status() {
                    span.record("status", status);
                }
                if let Some(id) = refusal.request_id() {
                    span.record("request_id", id);
                }
                if let Some(wait) = refusal.retry_after() {
                    span.record("retry_after_s", wait.as_secs_f64());
                }
                refused(&span, refusal);
            }
        }
        span.record(
            "elapsed_ms",
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        );
        outcome
    }

    /// The `meterwire.send` span, its fields recorded as the send ends.
    fn span(&self) -> tracing::Span {
        let (scope, engine) = &self.inner.shown;
        tracing::info_span!(
            "meterwire.send",
            scope = %scope,
            engine = %engine,
            attempts = tracing::field::Empty,
            status = tracing::field::Empty,
            cause = tracing::field::Empty,
            elapsed_ms = tracing::field::Empty,
            request_id = tracing::field::Empty,
            retry_after_s = tracing::field::Empty,
            idempotency_key = tracing::field::Empty,
        )
    }

    /// The attempts of one send. Also says whether any request reached the
    /// wire, for the meter's latency and its count of held sends.
    async fn attempts(
        &self,
        body: Bytes,
        extra: Option<HeaderMap>,
        deadline: Option<Duration>,
        key: Option<String>,
        started: Instant,
        span: &tracing::Span,
    ) -> (Result<Answer, Refusal>, Reach) {
        let armed = match &self.inner.armed {
            Ok(armed) => armed,
            Err(refusal) => return (Err(refusal.clone()), Reach::Unsent),
        };
        let limits = &self.inner.limits;
        if let Some(latched) = limits.latched(Instant::now()) {
            let refusal = held::latched(&armed.site, &latched, Instant::now());
            return (Err(refusal), Reach::Held);
        }
        let budget = deadline.unwrap_or(self.inner.deadline);
        let deadline = started + budget;
        let ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
        let policy = &self.inner.retries;
        let key = key.or_else(|| policy.keys().then(|| uuid::Uuid::new_v4().to_string()));
        if let Some(key) = &key {
            span.record("idempotency_key", key.as_str());
        }

        let mut headers = HeaderMap::with_capacity(5 + self.inner.headers.len());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        for (name, value) in self.inner.headers.iter().chain(extra.iter().flatten()) {
            headers.insert(name.clone(), value.clone());
        }
        if let Some(key) = &key {
            // Checked when given; a generated UUID is always a header value.
            if let Ok(value) = HeaderValue::from_str(&format!("\"{key}\"")) {
                headers.insert(HeaderName::from_static("idempotency-key"), value);
            }
        }
        headers.insert(AUTHORIZATION, armed.authorization.clone());

        let mut history: Vec<String> = Vec::new();
        let mut attempt = 0;
        loop {
            if self.inner.respect_limits
                && let Some(hold) = limits.hold(Instant::now())
            {
                let now = Instant::now();
                let left = hold.until - now;
                let may_wait =
                    policy.attempts() > 1 && left <= policy.waits_for() && hold.until < deadline;
                if !may_wait {
                    let refusal = held::holding(&armed.site, &hold, now).with_attempts(attempt);
                    let reach = if attempt > 0 {
                        Reach::Wire
                    } else {
                        Reach::Held
                    };
                    return (Err(self.finish(refusal, &history, key.as_deref())), reach);
                }
                tokio::time::sleep_until(hold.until).await;
                continue;
            }
            attempt += 1;
            self.inner.meter.attempt(body.len());
            let sent = self
                .attempt(armed, body.clone(), headers.clone(), deadline, ms)
                .await;
            match sent {
                Ok(answer) => {
                    tracing::debug!(attempt, status = answer.status, "answered");
                    if self.inner.respect_limits
                        && let Some(wait) = answer.exhausted
                    {
                        limits.hold_for(
                            Instant::now(),
                            wait,
                            "the rate-limit fields of an answer, which said none was left"
                                .to_owned(),
                        );
                    }
                    let elapsed = started.elapsed();
                    let answer = Answer::received(
                        answer.status,
                        answer.text,
                        answer.request_id,
                        attempt,
                        elapsed,
                    );
                    return (Ok(answer), Reach::Wire);
                }
                Err((refusal, outcome, what)) => {
                    tracing::debug!(attempt, status = refusal.status(), what = %what, "refused");
                    history.push(what);
                    let now = Instant::now();
                    if let (true, Some(wait), Some(status @ (429 | 503))) = (
                        self.inner.respect_limits,
                        refusal.retry_after(),
                        refusal.status(),
                    ) && refusal.cause() != Cause::EngineOutOfCredit
                    {
                        limits.hold_for(now, wait, format!("HTTP {status}"));
                    }
                    if let Some(duration) = self.inner.latch
                        && refusal.status().is_some()
                        && matches!(refusal.cause(), Cause::NoEngine | Cause::EngineOutOfCredit)
                    {
                        limits.latch(now, duration, &refusal);
                    }
                    let wait = match retry::decide(outcome, key.is_some(), policy.waits_for()) {
                        Retry::No => None,
                        Retry::After(hint) => Some(hint),
                        Retry::Backoff => Some(policy.backoff(attempt)),
                    };
                    let refusal = refusal.with_attempts(attempt);
                    match wait {
                        Some(wait) if attempt < policy.attempts() && now + wait < deadline => {
                            tokio::time::sleep(wait).await;
                        }
                        _ => {
                            let refusal = self.finish(refusal, &history, key.as_deref());
                            return (Err(refusal), Reach::Wire);
                        }
                    }
                }
            }
        }
    }

    /// The refusal a send ends in: after more than one attempt, or with an
    /// idempotency key, its reason says so after the scope, and it is sealed
    /// again.
    fn finish(&self, refusal: Refusal, history: &[String], key: Option<&str>) -> Refusal {
        let mut said = String::new();
        if history.len() > 1 {
            said.push_str(&format!(
                "after {} attempts ({}), ",
                history.len(),
                history.join(", ")
            ));
        }
        if let Some(key) = key {
            said.push_str(&format!("with idempotency key \"{key}\", "));
        }
        if said.is_empty() {
            return refusal;
        }
        let said = said.trim_end_matches(", ");
        let scope = crate::refusal::site::scope_phrase(&self.inner.scope);
        refusal.insert_after(
            &format!("{scope}: "),
            &format!("{said}: "),
            &self.inner.concealer,
        )
    }

    /// One request, its answer read or refused.
    async fn attempt(
        &self,
        armed: &Armed,
        body: Bytes,
        headers: HeaderMap,
        deadline: Instant,
        ms: u64,
    ) -> Result<Received, (Refusal, Outcome, String)> {
        let failed = |failure: Failure| {
            let what = failure.short();
            (
                refusal_for_failure(&armed.site, &failure),
                failure.outcome(),
                what,
            )
        };
        let request = self
            .inner
            .client
            .post(armed.site.address().url().clone())
            .headers(headers)
            .body(body);
        let response = match timeout_at(deadline, request.send()).await {
            Err(_) => return Err(failed(Failure::Deadline { ms })),
            Ok(Err(error)) => return Err(failed(classify(&error, ms))),
            Ok(Ok(response)) => response,
        };

        let status = response.status().as_u16();
        // Concealed as they enter: everything read from the headers (a
        // retry delay, a request id, a challenge, a redirect's host,
        // rate-limit figures) is read from these, so no parser can cut a
        // token in half, fold its case, or turn a digits-only token into a
        // number.
        let headers = at_the_door(response.headers(), &self.inner.concealer);
        if !response.status().is_success() {
            let head = read_head(response, deadline).await;
            self.inner.meter.received(head.len());
            let refusal =
                refusal_for_status(&armed.site, status, &headers, &head, SystemTime::now())
                    .unwrap_or_else(|| failed(Failure::Other).0);
            let outcome = Outcome::Status(status, refusal.retry_after());
            return Err((refusal, outcome, format!("HTTP {status}")));
        }

        let cap = self.inner.max_answer_bytes;
        if let Some(declared) = response.content_length().filter(|len| *len > cap) {
            return Err(failed(Failure::AnswerTooLarge {
                cap,
                declared: Some(declared),
            }));
        }
        let request_id = request_id(&headers)
            .map(|id| engine_value(id, &self.inner.concealer, REQUEST_ID_LIMIT))
            .filter(|id| !id.is_empty());
        let exhausted = crate::limits::exhausted(&headers);
        let body = read_capped(response, cap, deadline, ms, &self.inner.meter)
            .await
            .map_err(failed)?;
        let text = String::from_utf8(body).map_err(|_| failed(Failure::AnswerNotUtf8))?;
        let text = match self.inner.concealer.conceal(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(concealed) => concealed,
        };
        Ok(Received {
            status,
            text,
            request_id,
            exhausted,
        })
    }
}

/// Every header the crate reads besides the request ids (whose list is
/// `request_id::REQUEST_ID_HEADERS`): retry hints and their clock,
/// rate-limit fields, the challenge and a redirect's target.
const READ_HEADERS: [&str; 10] = [
    "retry-after",
    "retry-after-ms",
    "date",
    "ratelimit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "www-authenticate",
    "location",
];

/// The headers the crate reads, with every value concealed. A value the
/// concealer changed keeps its `[redacted]` (still a valid header value), so
/// a parser that reads it finds no number and no token. Headers the crate
/// does not read are left out: nothing could quote them.
fn at_the_door(headers: &HeaderMap, concealer: &Concealer) -> HeaderMap {
    let mut concealed = HeaderMap::new();
    // One pass over the answer's few headers: a lookup of each name the
    // crate reads would parse and hash twenty names per send.
    let read = headers.iter().filter(|(name, _)| {
        let name = name.as_str();
        READ_HEADERS.contains(&name) || REQUEST_ID_HEADERS.contains(&name)
    });
    for (name, value) in read {
        let text = String::from_utf8_lossy(value.as_bytes());
        let value = match concealer.conceal(&text) {
            std::borrow::Cow::Borrowed(_) => value.clone(),
            std::borrow::Cow::Owned(text) => match HeaderValue::from_bytes(text.as_bytes()) {
                Ok(value) => value,
                // Only a value that was not text can fail here; it held a
                // secret, so it is dropped rather than kept raw.
                Err(_) => HeaderValue::from_static(crate::REDACTED),
            },
        };
        concealed.append(name.clone(), value);
    }
    concealed
}

/// The refusal event, at `INFO`, in the send's span. Its strings are the
/// refusal's own, concealed and bounded.
fn refused(span: &tracing::Span, refusal: &Refusal) {
    span.in_scope(|| {
        tracing::info!(
            cause = refusal.cause().as_str(),
            reason = refusal.reason(),
            remedy = refusal.remedy(),
            "refused"
        );
    });
}

/// How far a send got, for the meter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// At least one request went to the wire.
    Wire,
    /// Refused by a hold or a latch, nothing sent.
    Held,
    /// Refused before sending for what the configuration or the call is.
    Unsent,
}

/// An answer as one attempt read it.
struct Received {
    status: u16,
    text: String,
    request_id: Option<String>,
    /// How long the answer's rate-limit fields say nothing is left.
    exhausted: Option<Duration>,
}

/// One send with options of its own, from [`HttpTransport::call`]. Nothing
/// happens until [`Call::send`].
#[must_use = "a call sends nothing until `send().await`"]
pub struct Call {
    transport: HttpTransport,
    body: Bytes,
    headers: Vec<(String, String)>,
    deadline: Option<Duration>,
    idempotency_key: Option<String>,
}

/// Shows the call without its body or header values.
impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Call")
            .field("transport", &self.transport)
            .field("body_bytes", &self.body.len())
            .field("headers", &names)
            .field("deadline", &self.deadline)
            .field("idempotency_key", &self.idempotency_key.is_some())
            .finish()
    }
}

impl Call {
    /// A non-secret header on this request, besides the transport's own
    /// (replacing one of the same name). Checked as
    /// [`HttpTransportBuilder::header`] checks; a header that cannot be sent
    /// makes [`send`](Self::send) refuse with `engine-unreachable`, nothing
    /// sent, the reason naming the header but never its value.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The deadline of this call, in place of the transport's: connect,
    /// headers and the whole body.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sends `Idempotency-Key: "<key>"` (the IETF draft's quoted string), so
    /// an engine that honours it can tell a repeat of this request from a
    /// new one. The key is not a secret: it must be visible ASCII without
    /// quotes or backslashes, and a key in which the concealer finds a
    /// secret is refused like a bad header.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Sends the call and returns the engine's answer or a refusal.
    pub async fn send(self) -> Result<Answer, Refusal> {
        let transport = &self.transport;
        let concealer = transport.concealer();
        let extra = match header_map(&self.headers, concealer) {
            Ok(map) => map,
            Err(problem) => {
                return Err(transport.refuse_unsent(Failure::Unsendable(problem.describe())));
            }
        };
        if let Some(key) = &self.idempotency_key
            && let Err(problem) = config::idempotency_header(key, concealer)
        {
            return Err(transport.refuse_unsent(Failure::Unsendable(problem.describe())));
        }
        if self.deadline.is_some_and(|deadline| deadline.is_zero()) {
            return Err(transport.refuse_unsent(Failure::Unsendable(
                "the call's deadline is zero, which no engine can meet".to_owned(),
            )));
        }
        transport
            .execute(self.body, Some(extra), self.deadline, self.idempotency_key)
            .await
    }
}

/// Reads at most the first 64 KiB of an error body, and stops at the
/// deadline with what has arrived: the status already says what happened,
/// so a body that drips forever costs the detail, not the refusal. The rest
/// is never read; dropping the response closes the connection.
///
/// A head that did not reach the end of the body may end in the middle of a
/// token, where no concealer can recognise it; it is cut back to its last
/// whitespace, since no form of a token holds any.
async fn read_head(mut response: Response, deadline: Instant) -> Vec<u8> {
    let mut head = Vec::new();
    let complete = loop {
        if head.len() >= DETAIL_READ_LIMIT {
            break false;
        }
        match timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = DETAIL_READ_LIMIT - head.len();
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(Ok(None)) => break true,
            Ok(Err(_)) | Err(_) => break false,
        }
    };
    if !complete {
        let keep = head.iter().rposition(u8::is_ascii_whitespace).unwrap_or(0);
        head.truncate(keep);
    }
    head
}

/// Reads an answer body of at most `cap` bytes; one byte more and it is
/// refused, having never held more than `cap`.
async fn read_capped(
    mut response: Response,
    cap: u64,
    deadline: Instant,
    ms: u64,
    meter: &Meter,
) -> Result<Vec<u8>, Failure> {
    let cap_bytes = usize::try_from(cap).unwrap_or(usize::MAX);
    let expected = response
        .content_length()
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(8 * 1024);
    let mut body = Vec::with_capacity(expected.min(cap_bytes));
    // One timer for the whole body, not one per chunk: a timer is set and
    // cleared in the runtime's wheel each time.
    let read = async {
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| classify(&error, ms))?
        {
            meter.received(chunk.len());
            if chunk.len() > cap_bytes - body.len() {
                return Err(Failure::AnswerTooLarge {
                    cap,
                    declared: None,
                });
            }
            // Doubling, as a `Vec` grows, but never past the cap: from just
            // over half the cap, doubling would allocate nearly twice it.
            if body.capacity() - body.len() < chunk.len() {
                let wanted = body
                    .capacity()
                    .saturating_mul(2)
                    .max(body.len() + chunk.len())
                    .min(cap_bytes);
                body.reserve_exact(wanted - body.len());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(())
    };
    match timeout_at(deadline, read).await {
        Err(_) => Err(Failure::Deadline { ms }),
        Ok(Err(failure)) => Err(failure),
        Ok(Ok(())) => Ok(body),
    }
}
