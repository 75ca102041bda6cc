//! [`HttpTransportBuilder`]: every option of a transport, checked once,
//! when it is built.
//!
//! A configuration that is wrong in itself (an empty scope, a zero deadline,
//! a CA that is not PEM, a header the transport owns) fails `build()` with a
//! [`BuildError`]; one that is right but cannot send from this environment
//! (no address, no usable token) builds, and every send returns its stored
//! refusal without contacting anything.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Client, Proxy, redirect};
use secrecy::SecretString;

use super::handle::{HttpTransport, Inner, Named};
use super::headers::{header_map, shown_name};
use super::{DEFAULT_DEADLINE, DEFAULT_MAX_ANSWER_BYTES, USER_AGENT};

/// How often a token file is read again when nothing says sooner.
const DEFAULT_TOKEN_FILE_INTERVAL: Duration = Duration::from_secs(60);

/// A stream's idle timer when none is set.
const DEFAULT_IDLE: Duration = Duration::from_secs(30);

/// A stream's deadline when none is set.
const DEFAULT_STREAM_DEADLINE: Duration = Duration::from_secs(600);
use crate::conceal::{Shown, Unshown, shown};
use crate::config::env::Env;
use crate::config::naming::{Naming, NamingError};
use crate::config::{self, InCode, InCodeToken};
use crate::limits::{DEFAULT_MAX_HOLD, Limits, SCOUT_EVERY};
use crate::meter::Meter;
use crate::refusal::render;
use crate::retry::RetryPolicy;

/// A transport that cannot be built: the configuration itself is wrong, as
/// opposed to the environment (which gives a refusal at send time).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The scope folds to no variable name.
    #[error(transparent)]
    Scope(#[from] NamingError),
    /// A deadline (or a stream's idle timer or deadline) of zero would
    /// refuse every call.
    #[error(
        "a deadline is zero: give the engine at least 1 ms (the defaults: the deadline 30000 ms, a stream's idle timer 30000 ms and its deadline 600000 ms)"
    )]
    ZeroDeadline,
    /// An answer cap of zero would refuse every answer.
    #[error("the answer cap is zero: allow at least 1 byte (the default is 33554432)")]
    ZeroCap,
    /// The extra CA certificate is not a PEM certificate.
    #[error(
        "the extra CA certificate is not a PEM certificate ({0}): pass the authority's certificate as PEM text (-----BEGIN CERTIFICATE-----)"
    )]
    CaCertificate(&'static str),
    /// The proxy is not a URL of a proxy the transport can use.
    #[error(
        "the proxy {shown} is not a proxy URL this transport can use: give it as http://host:port, https://host:port, or socks5://host:port (socks5h:// to resolve the engine's name at the proxy)"
    )]
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
    /// The shared hold given with [`HttpTransportBuilder::shared_hold`]
    /// cannot be used: its URL is not a `redis://` or `rediss://` URL with a
    /// host, or its key or wait is not one a hold can keep (a key, or the
    /// scope a default key is made from, that holds a secret included). The
    /// message names what to fix, never the URL's password or the key.
    #[cfg(feature = "redis")]
    #[error("{0}")]
    SharedHold(String),
}

/// The proxies reqwest speaks: HTTP (a `CONNECT` tunnel for `https`
/// engines), and SOCKS.
const PROXY_SCHEMES: [&str; 6] = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"];

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
    scope: Unshown,
    naming: Naming,
    env: Option<Env>,
    address: Option<String>,
    token: Option<InCodeToken>,
    token_file_interval: Duration,
    headers: Vec<(String, String)>,
    deadline: Duration,
    max_answer_bytes: u64,
    idle: Duration,
    stream_deadline: Duration,
    ca_pems: Vec<Vec<u8>>,
    proxy: Option<String>,
    allow_plaintext: bool,
    retries: RetryPolicy,
    respect_limits: bool,
    max_hold: Duration,
    latch: Option<Duration>,
    /// How often a window an answer's fields closed lets a send through:
    /// a minute, shortened by the crate's own tests only.
    scout_every: Duration,
    /// The fleet's settings: the shared hold in Redis, with the `redis`
    /// feature.
    shared_hold: shared_hold::Settings,
}

/// The shared hold's settings and its builder methods (cargo feature
/// `redis`); without the feature a stand-in with nothing to set.
#[cfg_attr(not(feature = "redis"), path = "builder/no_shared_hold.rs")]
mod shared_hold;

/// Shows the configuration without a secret: the scope and header names
/// concealed (a caller may have built either from a secret), the address
/// and proxy redacted and concealed, whether a token was given (never what), and no header value.
impl fmt::Debug for HttpTransportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env = self.env.clone().unwrap_or_else(Env::from_process);
        let concealer = config::concealer_for(self.token.as_ref(), &env);
        let names: Vec<Shown> = self
            .headers
            .iter()
            .map(|(name, _)| shown_name(name, &concealer))
            .collect();
        let mut debug = f.debug_struct("HttpTransportBuilder");
        debug
            .field("scope", &concealer.show_all(&self.scope))
            .field("naming", &self.naming)
            .field("env", &self.env)
            .field(
                "address",
                &self.address.as_deref().map(|address| {
                    crate::refusal::site::shown_address(
                        &crate::config::address::redact_address(address),
                        &concealer,
                    )
                }),
            )
            .field(
                "token",
                &self.token.as_ref().map(|token| match token {
                    InCodeToken::Value(_) => Shown::from("given in code"),
                    InCodeToken::File(path) => shown!(
                        "in the file {} given in code",
                        concealer.show_all(&path.display().to_string())
                    ),
                }),
            )
            .field("headers", &names)
            .field("deadline", &self.deadline)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("idle_timeout", &self.idle)
            .field("stream_deadline", &self.stream_deadline)
            .field("ca_certificates", &self.ca_pems.len())
            .field(
                "proxy",
                &self.proxy.as_deref().map(|address| {
                    crate::refusal::site::shown_address(
                        &crate::config::address::redact_address(address),
                        &concealer,
                    )
                }),
            )
            .field("allow_plaintext", &self.allow_plaintext)
            .field("retries", &self.retries)
            .field("respect_limits", &self.respect_limits)
            .field("max_hold", &self.max_hold)
            .field("latch", &self.latch);
        self.shared_hold.show(&mut debug, &concealer);
        debug.finish()
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
    /// It replaces a [`token_file`](Self::token_file) given before.
    pub fn token(mut self, token: SecretString) -> Self {
        self.token = Some(InCodeToken::Value(token));
        self
    }

    /// The bearer token is in the file at `path`, which may be replaced
    /// while the transport runs (a Kubernetes projected token, a Vault agent
    /// sink, a Docker secret): it wins over the token chain, its content is
    /// trimmed and checked like any token, and it is read again, through its
    /// path, at most once a [`token_file_interval`](Self::token_file_interval)
    /// and at the first send after the engine rejects the token. A read
    /// that fails keeps the last good token. It replaces a
    /// [`token`](Self::token) given before. The chain's variables have file
    /// twins too: `CHANT_BEHAVIOUR_TOKEN_FILE` beside `CHANT_BEHAVIOUR_TOKEN`.
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.token = Some(InCodeToken::File(path.into()));
        self
    }

    /// How often a token file is read again, at most: a minute when not
    /// set. A send after the engine rejected the token reads it at once.
    pub fn token_file_interval(mut self, interval: Duration) -> Self {
        self.token_file_interval = interval;
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

    /// Retries: none when not set. Without an idempotency key a retry is
    /// made only where it cannot double a bill: the request never reached
    /// the engine, or the engine asked for it with a hint. With a key (see
    /// [`RetryPolicy::idempotency_keys`]), a request that was sent and
    /// failed is retried too, which is safe only against an engine that
    /// honours the header. Every attempt sends the same bytes and the same
    /// key, and one deadline covers every attempt and every wait.
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
    ///
    /// It also keeps a budget from every answer's rate-limit fields (IETF
    /// `RateLimit`/`RateLimit-Policy`, OpenAI's `x-ratelimit-*-requests`,
    /// Anthropic's `anthropic-ratelimit-requests-*`, `X-RateLimit-*`): what
    /// the latest said is left of its requests window, less the sends
    /// started since. A send starts only while something is left, else it
    /// waits for the reset or is refused as held, as above, its reason
    /// naming what the engine said was left of which limit until when. An
    /// engine that sends no fields costs nothing, and nothing waits while
    /// there is room.
    pub fn respect_limits(mut self, respect: bool) -> Self {
        self.respect_limits = respect;
        self
    }

    /// The longest the transport holds for the engine's limits, 24 hours
    /// when not set. A hint beyond it (an engine, or anyone on the path, can
    /// ask for years) holds for this long, and the held refusal says the
    /// engine asked for longer.
    pub fn max_hold(mut self, ceiling: Duration) -> Self {
        self.max_hold = ceiling;
        self
    }

    /// After a `402`, `401` or `403`, refuses every send of this transport
    /// and its clones for `duration` with the same cause, without sending;
    /// off by default. The latch belongs to the token it judged: a new
    /// token read from a [`token_file`](Self::token_file) clears it.
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
    /// not set. [`Call::deadline`](super::Call::deadline) replaces it for one call.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// For an answer read as a stream: the longest gap between bytes after
    /// the first (a comment counts as a byte); 30 s when not set. The
    /// deadline covers connect, the head and the first byte.
    /// [`Call::idle_timeout`](super::Call::idle_timeout) replaces it for
    /// one call.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle = idle;
        self
    }

    /// For an answer read as a stream: the deadline of the whole stream; 10
    /// minutes when not set, so a long generation is not cut off by the
    /// send's deadline, and one kept alive by comments still ends.
    pub fn stream_deadline(mut self, deadline: Duration) -> Self {
        self.stream_deadline = deadline;
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

    /// Sends through this proxy (`http://host:port`, `https://…`,
    /// `socks5://…`, `socks5h://…` to resolve the engine's name at the
    /// proxy). Without this call no proxy is used, whatever the environment
    /// says. A failure to reach or pass the proxy names it, redacted, and
    /// points the remedy at it.
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
        if crate::config::naming::fold_scope(self.scope.unshown()).is_empty() {
            let env = self.env.clone().unwrap_or_else(Env::from_process);
            let concealer = config::concealer_for(self.token.as_ref(), &env);
            return Err(BuildError::Scope(NamingError::EmptyScope {
                scope: concealer.show(&self.scope, 64).into_string(),
            }));
        }
        if self.deadline.is_zero() {
            return Err(BuildError::ZeroDeadline);
        }
        if self.max_answer_bytes == 0 {
            return Err(BuildError::ZeroCap);
        }
        if self.idle.is_zero() || self.stream_deadline.is_zero() {
            return Err(BuildError::ZeroDeadline);
        }
        let mut certs = Vec::new();
        for pem in &self.ca_pems {
            certs.extend(super::tls::pem_certificates(pem).map_err(BuildError::CaCertificate)?);
        }
        let tls = super::tls::client_config(certs).map_err(|_| BuildError::Client)?;
        // No client-wide timeout: each call's own deadline covers connect,
        // headers and body (the send loop's `Deadline`), and a call may be
        // given a longer one than the transport's.
        let mut client = Client::builder()
            .no_proxy()
            .redirect(redirect::Policy::none())
            .user_agent(USER_AGENT)
            .tls_backend_preconfigured(tls);
        if let Some(proxy) = &self.proxy {
            let refused = || BuildError::Proxy {
                shown: crate::refusal::site::shown_address(
                    &crate::config::address::redact_address(proxy),
                    &config::concealer_for(
                        self.token.as_ref(),
                        self.env.as_ref().unwrap_or(&Env::from_process()),
                    ),
                )
                .into_string(),
            };
            let parsed = url::Url::parse(proxy.trim()).map_err(|_| refused())?;
            // An `@` past the authority means a password with a `/`, `?`
            // or `#` in it cut the host short: the proxy named is not the
            // one meant.
            if !PROXY_SCHEMES.contains(&parsed.scheme())
                || crate::config::address::has_stray_at(&parsed)
            {
                return Err(refused());
            }
            client = client.proxy(Proxy::all(proxy.trim()).map_err(|_| refused())?);
        }
        let client = client.build().map_err(|_| BuildError::Client)?;
        self.finish(client)
    }

    /// The transport around a client already set up: the configuration
    /// settled, its headers checked. The fuzz targets reuse one client for
    /// every input, since setting up TLS costs more than the rest.
    pub(crate) fn finish(self, client: Client) -> Result<HttpTransport, BuildError> {
        let env = self.env.unwrap_or_else(Env::from_process);
        let in_code = InCode {
            address: self.address,
            token: self.token,
            proxy: self.proxy,
            file_interval: self.token_file_interval,
        };
        let settled = config::settle(
            &self.naming,
            self.scope.unshown(),
            &env,
            in_code,
            self.allow_plaintext,
        );
        let headers = header_map(&self.headers, &settled.concealer)
            .map_err(|problem| BuildError::Header(problem.describe().into_string()))?;
        let host = settled
            .target
            .as_ref()
            .map(|target| target.site.host())
            .unwrap_or_default();
        let fleet = self.shared_hold.open(
            self.scope.unshown(),
            &host,
            self.scout_every,
            &settled.concealer,
        )?;
        let limits = Limits::new(
            self.respect_limits,
            self.latch,
            self.max_hold,
            self.scout_every,
            fleet,
        );
        let named = Named {
            scope: settled.concealer.show_all(&self.scope),
            engine: host,
        };
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                client,
                target: settled.target.map_err(|unsent| {
                    render::unsent(unsent, &self.naming, &self.scope, &settled.concealer)
                }),
                concealer: settled.concealer,
                headers,
                retries: self.retries,
                limits,
                meter: Meter::default(),
                named,
                deadline: self.deadline,
                max_answer_bytes: self.max_answer_bytes,
                idle: self.idle,
                stream_deadline: self.stream_deadline,
            }),
        })
    }
}

impl HttpTransport {
    /// A builder for the predictor named `scope`.
    pub fn builder(scope: impl Into<String>) -> HttpTransportBuilder {
        HttpTransportBuilder {
            scope: Unshown::new(scope),
            naming: Naming::default(),
            env: None,
            address: None,
            token: None,
            token_file_interval: DEFAULT_TOKEN_FILE_INTERVAL,
            headers: Vec::new(),
            deadline: DEFAULT_DEADLINE,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            idle: DEFAULT_IDLE,
            stream_deadline: DEFAULT_STREAM_DEADLINE,
            ca_pems: Vec::new(),
            proxy: None,
            allow_plaintext: false,
            retries: RetryPolicy::none(),
            respect_limits: true,
            max_hold: DEFAULT_MAX_HOLD,
            latch: None,
            scout_every: SCOUT_EVERY,
            shared_hold: shared_hold::Settings::default(),
        }
    }
}
