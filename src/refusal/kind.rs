//! A refusal as a value: what happened, and the evidence for it, before a
//! word of it is written.
//!
//! A refusal used to be assembled as prose where it was found, and
//! everything else (its cause, whether a retry was safe) was read back
//! from whatever had been written. So asking "may this be retried?" wrote
//! every sentence of the reason, and a remedy existed in as many copies as
//! there were places that refused. Here a refusal is first a [`Kind`], as
//! reqwest keeps one `Kind` behind its error: what the engine said (a
//! status with its code, words and fields), how a request failed and how
//! far the answer got, a hold, a latch or a spent window, an error inside
//! a stream, or what kept a configuration from sending. Its cause, its
//! status, its wait and the retry table's outcome are read from the value;
//! `render` writes its reason and remedy, in one place.

use std::time::{Duration, SystemTime};

use super::Cause;
use super::evidence::dialect::Names;
use super::evidence::protocol::Relay;
use crate::conceal::{Shown, shown};
use crate::config::Unsent;
use crate::config::naming::Naming;
use crate::config::token::content::FileProblem;
use crate::retry::Outcome;

/// What a refusal is about.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// The engine answered a status that is not an answer.
    Status(Box<Said>),
    /// The request failed: before any answer, or (`answered`) after the
    /// engine's head arrived.
    Failed {
        failure: Failure,
        answered: Option<Answered>,
    },
    /// One of a stream's timers ran out after its head arrived.
    Timer { timer: Timer, answered: Answered },
    /// The engine sent an error inside an answer it had begun.
    InStream {
        answered: Answered,
        error: Box<StreamError>,
    },
    /// A stream ended without `[DONE]`, which the caller asked for;
    /// `unfinished` counts the bytes of an event the end cut off.
    Undone {
        answered: Answered,
        unfinished: Option<u64>,
    },
    /// A stream whose joined text outgrew what its channels hold back to
    /// conceal it; `why` names the bound, in the channels' words.
    Unjoined { answered: Answered, why: Shown },
    /// Held, not sent: the engine asked to wait, and `left` of it is left.
    Held { hold: Box<Asked>, left: Duration },
    /// Latched, not sent, for `left` more, after the engine refused as
    /// `original` at `at`.
    Latched {
        original: Box<Kind>,
        at: SystemTime,
        left: Duration,
    },
    /// Held, not sent: the requests window the answers described is spent.
    Spent { spent: Box<Counted>, left: Duration },
    /// No good token was ever read from the token file at `path`.
    TokenFile { path: Shown, problem: FileProblem },
    /// The configuration cannot send; `naming` names its chains.
    Unsent {
        unsent: Box<Unsent>,
        naming: Box<Naming>,
    },
}

impl Kind {
    /// The cause, from the value alone.
    pub(crate) fn cause(&self) -> Cause {
        match self {
            Kind::Status(said) => said.cause,
            Kind::InStream { error, .. } => error.cause(),
            Kind::Latched { original, .. } => original.cause(),
            Kind::Held { .. } | Kind::Spent { .. } => Cause::EngineOverQuota,
            Kind::TokenFile { .. } => Cause::NoEngine,
            Kind::Unsent { unsent, .. } => match **unsent {
                Unsent::BadAddress(_) | Unsent::Plaintext(_) => Cause::EngineUnreachable,
                Unsent::NoAddress
                | Unsent::NoToken(_)
                | Unsent::Unusable(..)
                | Unsent::Both { .. } => Cause::NoEngine,
            },
            Kind::Failed { .. }
            | Kind::Timer { .. }
            | Kind::Undone { .. }
            | Kind::Unjoined { .. } => Cause::EngineUnreachable,
        }
    }

    /// What the attempt came to, for the retry table: a status (with the
    /// wait it asked for, when waiting can help), a failure's, or nothing
    /// to retry.
    pub(crate) fn outcome(&self) -> Outcome {
        match self {
            Kind::Status(said) => Outcome::Status(said.status, said.retry_after()),
            Kind::Failed { failure, .. } => failure.outcome(),
            _ => Outcome::Final,
        }
    }

    /// The HTTP status the engine answered, when it answered one.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            Kind::Status(said) => Some(said.status),
            Kind::Failed { answered, .. } => answered.map(|answered| answered.status),
            Kind::Timer { answered, .. }
            | Kind::InStream { answered, .. }
            | Kind::Undone { answered, .. }
            | Kind::Unjoined { answered, .. } => Some(answered.status),
            Kind::Latched { original, .. } => original.status(),
            _ => None,
        }
    }

    /// How long the caller should wait before sending again, when waiting
    /// helps.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            Kind::Status(said) => said.retry_after(),
            Kind::Held { left, .. } | Kind::Spent { left, .. } => Some(*left),
            _ => None,
        }
    }

    /// The engine's id for the request, when its answer named one.
    pub(crate) fn request_id(&self) -> Option<&Shown> {
        match self {
            Kind::Status(said) => said.request_id.as_ref(),
            Kind::Latched { original, .. } => original.request_id(),
            _ => None,
        }
    }
}

/// What the engine's answer said: its status, read with the evidence of
/// its headers and the head of its body, each piece shown (concealed and
/// bounded) when it was read.
#[derive(Clone, Debug)]
pub(crate) struct Said {
    pub(crate) status: u16,
    /// The cause the strongest evidence names.
    pub(crate) cause: Cause,
    /// Which evidence decided it.
    pub(crate) by: By,
    /// The engine's words: one line of its body.
    pub(crate) words: Option<Shown>,
    /// The wait it asked for, as it asked.
    pub(crate) wait: Option<Wait>,
    pub(crate) request_id: Option<Shown>,
    /// A `Bearer` challenge's error, description and scope.
    pub(crate) challenge: Option<Challenge>,
    /// Where a redirect pointed.
    pub(crate) location: Option<Shown>,
}

impl Said {
    /// The wait the engine asked for, unless the cause is an empty account,
    /// which no wait refills.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self.cause {
            Cause::EngineOutOfCredit => None,
            _ => self.wait.as_ref().and_then(|wait| wait.delay),
        }
    }

    /// Where the remedy of an `engine-unreachable` answer points.
    pub(crate) fn fix(&self) -> Fix {
        match &self.by {
            By::Relayed(_) => Fix::Gateway,
            By::Code { names, .. } | By::Words { names, .. } if *names == Names::Trouble => {
                Fix::Health
            }
            _ => fix_for_status(self.status),
        }
    }
}

/// A wait an engine asked for: the header it was read from and its value
/// as sent, and the delay it gave, when it gave one.
#[derive(Clone, Debug)]
pub(crate) struct Wait {
    pub(crate) delay: Option<Duration>,
    pub(crate) header: &'static str,
    pub(crate) value: Shown,
}

/// What a `Bearer` challenge said about a rejected token.
#[derive(Clone, Debug, Default)]
pub(crate) struct Challenge {
    pub(crate) error: Option<Shown>,
    pub(crate) description: Option<Shown>,
    pub(crate) scope: Option<Shown>,
}

/// The evidence that decided an answer's cause, strongest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum By {
    /// The engine's code (as quoted), which names this.
    Code { code: Shown, names: Names },
    /// A phrase of the engine's words, which names this.
    Words { phrase: &'static str, names: Names },
    /// The x402 payment protocol: a `PAYMENT-REQUIRED` header, or a body
    /// with an `x402Version`.
    X402 { header: bool },
    /// A `401` or `403` with a retry hint: a ban that ends.
    Ban,
    /// A gateway relaying its upstream's refusal, as this marked it.
    Relayed(Relay),
    /// The status alone, or evidence that agreed with it.
    Status,
}

/// Where the remedy of an `engine-unreachable` refusal points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fix {
    /// The request the predictor sends: the engine answered, and refused it.
    Request,
    /// The address's path: the engine does not serve it.
    Path,
    /// The engine's health: it failed, or did not finish in time.
    Health,
    /// The address and whether it can be reached from here.
    Reach,
    /// The address the engine answers at itself, without a redirect.
    Redirect,
    /// The address, and trusting a private authority's certificate.
    Trust,
    /// Raising the cap, or an engine that answers within it.
    Cap,
    /// An engine that answers JSON as UTF-8 text.
    Utf8,
    /// The request type the predictor serializes.
    Serializer,
    /// The per-call option that cannot be used.
    Option,
    /// The configured proxy: up, reachable, and letting this host through.
    Proxy,
    /// The configured proxy's credentials.
    ProxyCredentials,
    /// The async transport, in async code.
    Async,
    /// Whoever runs the gateway whose upstream refused it.
    Gateway,
}

/// Where the remedy for a status outside `2xx`, `401`, `402`, `403` and
/// `429` points. The wire table names `400`, `413`, `415`, `422` (the
/// request), `404`, `405`, `410` (the path), `408`, `500`, `502`, `503`,
/// `504` (health) and `3xx` (reachability, without a redirect); the rest of
/// each class follows its class: a `4xx` is the request's, a `5xx` the
/// engine's health, except `501` (the method is not served at that path),
/// `421` (the request reached a server that is not the engine) and `407`
/// (a proxy asks for credentials).
pub(crate) fn fix_for_status(status: u16) -> Fix {
    match status {
        300..=399 => Fix::Redirect,
        404 | 405 | 410 | 501 => Fix::Path,
        407 => Fix::ProxyCredentials,
        408 | 425 | 500..=599 => Fix::Health,
        421 => Fix::Reach,
        400..=499 => Fix::Request,
        _ => Fix::Reach,
    }
}

/// What a hold says: when and for how long the engine asked to wait,
/// what asked (`HTTP 429`, or an answer's rate-limit fields), the ceiling
/// it was cut to when the engine asked for longer, and the shared hold it
/// came from when another process saw it.
#[derive(Clone, Debug)]
pub(crate) struct Asked {
    pub(crate) asked_at: SystemTime,
    pub(crate) asked: Duration,
    pub(crate) ceiling: Option<Duration>,
    pub(crate) why: Shown,
    /// The rate-limit field that started the hold, as sent, when an
    /// answer that was not refused did: such a hold is checked once a
    /// minute.
    pub(crate) field: Option<Shown>,
    pub(crate) fleet: Option<Shown>,
}

/// What a spent requests window says: when an answer said how many were
/// left (of which limit, in which header), how many sends started since,
/// and the shared budget it came from when the fleet spent it.
#[derive(Clone, Debug)]
pub(crate) struct Counted {
    pub(crate) said_at: SystemTime,
    pub(crate) what: &'static str,
    pub(crate) remaining: u64,
    pub(crate) limit: Option<u64>,
    /// The field whose reset ends the window, as sent (none when the
    /// fleet's budget did not record it).
    pub(crate) field: Option<Shown>,
    pub(crate) started: u64,
    pub(crate) fleet: Option<Shown>,
}

/// Which of a stream's timers ended it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// No first byte of the body by the send's deadline, which covers
    /// connect, the head and the first byte.
    FirstByte { ms: u64 },
    /// A gap between bytes longer than the idle timer.
    Idle { ms: u64 },
    /// The stream ran past its own deadline.
    Whole { ms: u64 },
}

/// What an error inside a stream said: its `type` and `code`, the engine's
/// words, each shown, and what they name.
#[derive(Clone, Debug)]
pub(crate) struct StreamError {
    pub(crate) kind: Option<Shown>,
    pub(crate) code: Option<Shown>,
    pub(crate) words: Option<Shown>,
    /// The evidence that named its cause, if any did: else the engine's
    /// health.
    pub(crate) by: By,
}

impl StreamError {
    pub(crate) fn cause(&self) -> Cause {
        match &self.by {
            By::Code { names, .. } | By::Words { names, .. } => names.cause(),
            _ => Cause::EngineUnreachable,
        }
    }
}

/// How a request failed without an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Nothing listens at the address's port.
    ConnectionRefused,
    /// The host name does not resolve.
    HostNotFound,
    /// The TLS handshake failed; the text says why in the crate's own
    /// words (for example "the engine's certificate is not signed by a
    /// trusted authority").
    Tls(&'static str),
    /// The connection was reset or closed before the answer was complete.
    ConnectionReset,
    /// No complete answer within the deadline.
    Deadline {
        /// The deadline, in milliseconds.
        ms: u64,
    },
    /// The connection could not be made for another reason.
    Connect,
    /// The answer is larger than the cap.
    AnswerTooLarge {
        /// The cap, in bytes.
        cap: u64,
        /// The length the engine declared, when it declared one.
        declared: Option<u64>,
    },
    /// The answer is not UTF-8 text.
    AnswerNotUtf8,
    /// One piece, event or line of a stream is larger than the cap.
    PieceTooLarge {
        /// `piece`, `event` or `line`.
        what: &'static str,
        /// The cap, in bytes.
        cap: u64,
    },
    /// The request failed in a way none of the above names.
    Other,
    /// The proxy the caller configured could not be reached or passed: the
    /// request never reached the engine.
    Proxy(ProxyFailure),
    /// The blocking transport was called from a thread of an async runtime,
    /// where waiting would stall the runtime; nothing was sent.
    #[cfg_attr(not(feature = "blocking"), allow(dead_code))]
    BlockingInRuntime,
    /// The body could not be serialized as JSON; nothing was sent. The text
    /// is the serializer's category of error, never its message (which a
    /// `Serialize` implementation may fill with data).
    Unserializable(&'static str),
    /// A per-call option (a header, the idempotency key, the deadline)
    /// cannot be used; nothing was sent. The text names the option, never a
    /// header's value.
    Unsendable(Shown),
}

/// How the configured proxy failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProxyFailure {
    /// Nothing listens at the proxy's port.
    Refused,
    /// The proxy's host name does not resolve.
    NotFound,
    /// The connection to the proxy could not be made, for a reason its
    /// connector does not tell (a SOCKS connector keeps the socket's error
    /// to itself).
    Unreachable,
    /// The connection through the proxy to the engine could not be made.
    Connect,
    /// The proxy asked for credentials (`407`).
    AuthRequired,
    /// The proxy refused to open a tunnel (`CONNECT`) to the engine.
    Tunnel,
}

/// How far an answer got before it failed: the engine answered this
/// status, and this much of its body (and of a stream, these events)
/// arrived. A refusal after a `2xx` head keeps its status and says so, so
/// it never reads as an engine that did not answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Answered {
    pub(crate) status: u16,
    pub(crate) bytes: u64,
    pub(crate) events: Option<u64>,
}

impl Answered {
    /// `11 bytes`, or `11 bytes and 3 events`.
    pub(crate) fn so_far(&self) -> Shown {
        let bytes = match self.bytes {
            1 => Shown::from("1 byte"),
            n => shown!("{} bytes", n),
        };
        match self.events {
            Some(1) => shown!("{} and 1 event", bytes),
            Some(events) => shown!("{} and {} events", bytes, events),
            None => bytes,
        }
    }
}

impl Failure {
    /// What the failure means for a retry: whether the request can have
    /// reached the engine.
    ///
    /// Read from reqwest's and hyper's errors, as [`classify`] sorts them: a
    /// refused connection, an unknown host and any error of the connect
    /// phase (reqwest's `is_connect`), or a proxy that could not be passed,
    /// come before a byte of the request is written, so the engine never
    /// saw it. A reset, a closed connection or an incomplete answer cannot
    /// be told apart from an engine that read the request and then failed
    /// (a pooled connection the engine closed may or may not have taken the
    /// request), so they count as sent. TLS, the deadline, an answer over
    /// the cap or not UTF-8 and anything refused before sending are final.
    pub(crate) fn outcome(&self) -> Outcome {
        match self {
            Failure::ConnectionRefused
            | Failure::HostNotFound
            | Failure::Connect
            | Failure::Proxy(_) => Outcome::NotSent,
            Failure::ConnectionReset | Failure::Other => Outcome::Lost,
            Failure::Tls(_)
            | Failure::Deadline { .. }
            | Failure::AnswerTooLarge { .. }
            | Failure::PieceTooLarge { .. }
            | Failure::AnswerNotUtf8
            | Failure::BlockingInRuntime
            | Failure::Unserializable(_)
            | Failure::Unsendable(_) => Outcome::Final,
        }
    }
}
