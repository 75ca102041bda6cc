//! The HTTP transport: one scope, one engine, one account.
//!
//! Everything that can be decided without the network is decided when the
//! transport is built: the chains are resolved, the address is parsed and
//! checked, the token is checked and armed. A configuration that cannot send
//! becomes a stored [`Refusal`] that every [`HttpTransport::send`] returns
//! without opening a connection: a missing token must never cost a request,
//! and a token with a line break must never reach a socket.
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
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{Certificate, Client, Proxy, Response, redirect};
use serde::de::DeserializeOwned;
use tokio::time::{Instant, timeout_at};

use crate::detail::DETAIL_READ_LIMIT;
use crate::wire::{self, Failure, Site, refusal_for_failure, refusal_for_status};
use crate::{Address, Concealer, Env, Naming, NamingError, Refusal};

/// The deadline when none is set: 30 seconds for connect, headers and body.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(30_000);

/// The answer cap when none is set: 32 MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 32 * 1024 * 1024;

/// The `user-agent` every request carries: the crate and its version.
pub const USER_AGENT: &str = concat!("meterwire/", env!("CARGO_PKG_VERSION"));

/// A boxed, sendable future, as [`Transport::send`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a predictor depends on: send a body, get an answer or a refusal.
///
/// [`HttpTransport`] is the real one; a predictor's own tests can implement
/// this with canned answers and refusals.
///
/// ```
/// use meterwire::{Answer, BoxFuture, Cause, Refusal, Transport};
///
/// struct OutOfCredit;
///
/// impl Transport for OutOfCredit {
///     fn send(&self, _body: bytes::Bytes) -> BoxFuture<'_, Result<Answer, Refusal>> {
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
/// let transport: Box<dyn Transport> = Box::new(OutOfCredit);
/// # drop(transport);
/// ```
pub trait Transport: Send + Sync {
    /// Sends `body` and returns the engine's answer or a refusal.
    fn send(&self, body: Bytes) -> BoxFuture<'_, Result<Answer, Refusal>>;
}

/// The engine's answer: a `2xx` body, as concealed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    status: u16,
    text: String,
}

impl Answer {
    /// An answer from its parts, for a predictor's tests and fakes.
    pub fn new(status: u16, text: impl Into<String>) -> Answer {
        Answer {
            status,
            text: text.into(),
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
    ///
    /// ```
    /// let answer = meterwire::Answer::new(200, r#"{"score": 0.5}"#);
    /// let value: serde_json::Value = answer.json()?;
    /// assert_eq!(value["score"], 0.5);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.text)
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
/// use meterwire::{Env, HttpTransport};
///
/// let transport = HttpTransport::builder("acme")
///     .env(Env::from_pairs([
///         ("CHANT_BEHAVIOUR_ENGINE", "http://127.0.0.1:9/v1"),
///         ("CHANT_BEHAVIOUR_TOKEN", "mw-0123456789"),
///     ]))
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
    deadline: Duration,
    max_answer_bytes: u64,
    ca_pems: Vec<Vec<u8>>,
    proxy: Option<String>,
    allow_plaintext: bool,
}

impl HttpTransportBuilder {
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
    /// not set.
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

    /// Builds the transport, resolving the chains now.
    ///
    /// Fails only for a configuration that is wrong in itself (an empty
    /// scope, a zero deadline or cap, a CA that is not PEM, a bad proxy URL).
    /// An environment that cannot send (no address, no token, a forbidden
    /// address) still builds: [`HttpTransport::refusal`] holds the refusal
    /// every send returns.
    pub fn build(self) -> Result<HttpTransport, BuildError> {
        if crate::fold_scope(&self.scope).is_empty() {
            return Err(BuildError::Scope(NamingError::EmptyScope {
                scope: crate::conceal::bound(&self.scope, 64).to_owned(),
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
        let mut client = Client::builder()
            .no_proxy()
            .redirect(redirect::Policy::none())
            .timeout(self.deadline)
            .connect_timeout(self.deadline)
            .user_agent(USER_AGENT)
            .tls_certs_merge(certs);
        if let Some(proxy) = &self.proxy {
            let proxy = Proxy::all(proxy.as_str()).map_err(|_| BuildError::Proxy {
                shown: crate::redact_address(proxy),
            })?;
            client = client.proxy(proxy);
        }
        let client = client.build().map_err(|_| BuildError::Client)?;

        let env = self.env.unwrap_or_else(Env::from_process);
        let (token, concealer) = arm(&self.naming, &self.scope, &env);
        let plan = plan(
            &self.naming,
            &self.scope,
            &env,
            self.allow_plaintext,
            token,
            &concealer,
        );
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                client,
                plan,
                concealer,
                scope: self.scope,
                deadline: self.deadline,
                max_answer_bytes: self.max_answer_bytes,
            }),
        })
    }
}

/// The token chain's outcome, with the token armed (its header and the
/// concealer built from it) when there is one; the concealer conceals the
/// snapshot's credential-named values either way.
fn arm(naming: &Naming, scope: &str, env: &Env) -> (TokenOutcome, Concealer) {
    match naming.token_chain(scope).resolve(env) {
        Ok(Some(token)) => {
            let (authorization, concealer) = token.arm(env);
            (TokenOutcome::Armed(token, authorization), concealer)
        }
        Ok(None) => (TokenOutcome::Missing, Concealer::with_env([], env)),
        Err(unusable) => (
            TokenOutcome::Unusable(unusable),
            Concealer::with_env([], env),
        ),
    }
}

enum TokenOutcome {
    Armed(crate::Token, HeaderValue),
    Missing,
    Unusable(crate::UnusableToken),
}

/// Resolves the address and decides, before any connection, whether a send
/// can happen at all: address problems first, since a token refusal names
/// the address.
fn plan(
    naming: &Naming,
    scope: &str,
    env: &Env,
    allow_plaintext: bool,
    token: TokenOutcome,
    concealer: &Concealer,
) -> Result<Armed, Refusal> {
    let resolved = naming
        .address_chain(scope)
        .resolve(env)
        .ok_or_else(|| wire::no_address(naming, scope, concealer))?;
    let address = Address::parse(resolved.value(), resolved.source())
        .map_err(|error| wire::bad_address(scope, &error, concealer))?;
    if !address.is_https() && !address.is_loopback() && !allow_plaintext {
        return Err(wire::plaintext(scope, &address, concealer));
    }
    match token {
        TokenOutcome::Armed(token, authorization) => Ok(Armed {
            site: Site::new(scope, address, token.source()).with_concealer(concealer.clone()),
            authorization,
        }),
        TokenOutcome::Missing => Err(wire::no_token(naming, scope, &address, concealer)),
        TokenOutcome::Unusable(unusable) => {
            Err(wire::unusable_token(scope, &address, &unusable, concealer))
        }
    }
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
    plan: Result<Armed, Refusal>,
    concealer: Concealer,
    scope: String,
    deadline: Duration,
    max_answer_bytes: u64,
}

struct Armed {
    site: Site,
    authorization: HeaderValue,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("HttpTransport");
        debug.field("scope", &self.inner.scope);
        match &self.inner.plan {
            Ok(armed) => debug
                .field(
                    "address",
                    &self
                        .inner
                        .concealer
                        .conceal(&armed.site.address().to_string()),
                )
                .field("token_source", &armed.site.token_source()),
            Err(refusal) => debug.field("refusal", &refusal.cause()),
        };
        debug
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
            deadline: DEFAULT_DEADLINE,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            ca_pems: Vec::new(),
            proxy: None,
            allow_plaintext: false,
        }
    }

    /// The refusal every send returns without contacting anything, when the
    /// environment cannot send (no address, no usable token, a forbidden
    /// address); `None` when sends go to the wire.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.inner.plan.as_ref().err()
    }

    /// The concealer this transport passes every outward string through,
    /// for a predictor that wants its own logs scrubbed the same way.
    pub fn concealer(&self) -> &Concealer {
        &self.inner.concealer
    }

    /// The deadline of one send.
    pub fn deadline(&self) -> Duration {
        self.inner.deadline
    }

    /// Sends `body`, byte for byte, as a JSON `POST`, and returns the
    /// engine's answer or a refusal. Never retries.
    pub async fn send(&self, body: impl Into<Bytes>) -> Result<Answer, Refusal> {
        let armed = match &self.inner.plan {
            Ok(armed) => armed,
            Err(refusal) => return Err(refusal.clone()),
        };
        let deadline = Instant::now() + self.inner.deadline;
        let ms = u64::try_from(self.inner.deadline.as_millis()).unwrap_or(u64::MAX);
        let failed = |failure: Failure| refusal_for_failure(&armed.site, &failure);

        let request = self
            .inner
            .client
            .post(armed.site.address().url().clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(AUTHORIZATION, armed.authorization.clone())
            .body(body.into());
        let response = match timeout_at(deadline, request.send()).await {
            Err(_) => return Err(failed(Failure::Deadline { ms })),
            Ok(Err(error)) => return Err(failed(classify(&error, ms))),
            Ok(Ok(response)) => response,
        };

        let status = response.status().as_u16();
        if !response.status().is_success() {
            let headers = response.headers().clone();
            let head = read_head(response, deadline).await;
            return Err(refusal_for_status(&armed.site, status, &headers, &head)
                .unwrap_or_else(|| failed(Failure::Other)));
        }

        let cap = self.inner.max_answer_bytes;
        if let Some(declared) = response.content_length().filter(|len| *len > cap) {
            return Err(failed(Failure::AnswerTooLarge {
                cap,
                declared: Some(declared),
            }));
        }
        let body = read_capped(response, cap, deadline, ms)
            .await
            .map_err(failed)?;
        let text = String::from_utf8(body).map_err(|_| failed(Failure::AnswerNotUtf8))?;
        let text = match self.inner.concealer.conceal(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(concealed) => concealed,
        };
        Ok(Answer { status, text })
    }
}

impl Transport for HttpTransport {
    fn send(&self, body: Bytes) -> BoxFuture<'_, Result<Answer, Refusal>> {
        Box::pin(HttpTransport::send(self, body))
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
) -> Result<Vec<u8>, Failure> {
    let cap_bytes = usize::try_from(cap).unwrap_or(usize::MAX);
    let expected = response
        .content_length()
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(8 * 1024);
    let mut body = Vec::with_capacity(expected.min(cap_bytes));
    loop {
        match timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(Failure::Deadline { ms }),
            Ok(Err(error)) => return Err(classify(&error, ms)),
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(chunk))) => {
                if chunk.len() > cap_bytes - body.len() {
                    return Err(Failure::AnswerTooLarge {
                        cap,
                        declared: None,
                    });
                }
                // Doubling, as a `Vec` grows, but never past the cap: from
                // just over half the cap, doubling would allocate nearly
                // twice it.
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
        }
    }
}

/// Names what failed from the error's causes, never from its `Display`
/// (which carries the full URL, query and all).
fn classify(error: &reqwest::Error, ms: u64) -> Failure {
    if error.is_timeout() {
        return Failure::Deadline { ms };
    }
    // Walk every cause. `io::Error::source` skips the error it wraps, and
    // reqwest wraps a TLS error in two of them, so look inside those too.
    // The depth bound keeps a pathological chain from looping.
    let mut pending: Vec<&(dyn std::error::Error + 'static)> =
        std::error::Error::source(error).into_iter().collect();
    let mut visited = 0;
    while let Some(current) = pending.pop() {
        visited += 1;
        if visited > 32 {
            break;
        }
        if let Some(failure) = classify_one(current) {
            return failure;
        }
        if let Some(next) = current.source() {
            pending.push(next);
        }
        if let Some(inner) = current
            .downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
        {
            pending.push(inner);
        }
    }
    if error.is_dns() {
        Failure::HostNotFound
    } else if error.is_connect() {
        Failure::Connect
    } else if error.is_body() || error.is_decode() {
        Failure::ConnectionReset
    } else {
        Failure::Other
    }
}

fn classify_one(error: &(dyn std::error::Error + 'static)) -> Option<Failure> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(Failure::Tls(describe_tls(tls).to_owned()));
    }
    if let Some(io) = error.downcast_ref::<io::Error>() {
        return match io.kind() {
            io::ErrorKind::ConnectionRefused => Some(Failure::ConnectionRefused),
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof => Some(Failure::ConnectionReset),
            _ => None,
        };
    }
    if let Some(hyper) = error.downcast_ref::<hyper::Error>()
        && (hyper.is_incomplete_message() || hyper.is_closed() || hyper.is_canceled())
    {
        return Some(Failure::ConnectionReset);
    }
    let text = error.to_string();
    if text.starts_with("dns error") {
        return Some(Failure::HostNotFound);
    }
    None
}

fn describe_tls(error: &rustls::Error) -> &'static str {
    use rustls::CertificateError as C;
    match error {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => {
            "the engine's certificate is not signed by an authority this client trusts"
        }
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => "the engine's certificate does not name this host",
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "the engine's certificate has expired"
        }
        rustls::Error::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            "the engine's certificate is not valid yet"
        }
        rustls::Error::InvalidCertificate(C::Revoked) => "the engine's certificate is revoked",
        rustls::Error::InvalidCertificate(_) => "the engine's certificate was rejected",
        rustls::Error::AlertReceived(_) => "the engine ended the handshake with an alert",
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the engine did not speak TLS at that address (is it plain http?)"
        }
        _ => "the handshake with the engine failed",
    }
}
