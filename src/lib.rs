//! The transport a *predictor* uses to ask a metered HTTP engine a question.
//!
//! A metered engine takes a JSON `POST` at one address, answers JSON, and
//! bills an account named by a bearer token. `meterwire` makes every call to
//! one end in exactly one of two honest outcomes:
//!
//! - an [`Answer`]: the engine's `2xx` body, as text; or
//! - a [`Refusal`], with one of four [`Cause`]s, each a different remedy an
//!   operator can apply: `no-engine` (set a variable), `engine-unreachable`
//!   (check an address), `engine-out-of-credit` (fund an account),
//!   `engine-over-quota` (wait for a window).
//!
//! Nothing is guessed, retried behind the caller's back, or reported as an
//! empty success. And **the token appears in no string the crate produces,
//! in any encoding**: every reason, remedy, error and answer passes through
//! one [`Concealer`] that knows the token raw, JSON-escaped,
//! percent-encoded, as HTML character references and as base64, because
//! refusals get pasted into public merge-request comments. How it does that
//! in linear time is told in [`DESIGN.md`](https://github.com/meterwire/meterwire/blob/main/DESIGN.md).
//!
//! # Where the configuration comes from
//!
//! In code ([`HttpTransportBuilder::address`], [`HttpTransportBuilder::token`]),
//! or from two chains of environment variables, most specific first, read
//! from an [`Env`] snapshot ([`Env::from_process`] by default). A value given
//! in code wins over its chain. With the default [`Naming`] and the scope
//! `acme`:
//!
//! | chain | variables, in order |
//! |---|---|
//! | address | `CHANT_BEHAVIOUR_ENGINE_ACME`, `CHANT_BEHAVIOUR_ENGINE`, `BEHAVIOUR_ENGINE` |
//! | token | `CHANT_BEHAVIOUR_TOKEN_ACME`, `CHANT_BEHAVIOUR_TOKEN`, `BEHAVIOUR_TOKEN` |
//!
//! # Sending
//!
//! ```no_run
//! use std::time::Duration;
//! use meterwire::{Cause, HttpTransport, SecretString};
//!
//! #[derive(serde::Serialize)]
//! struct Question<'a> {
//!     prompt: &'a str,
//! }
//!
//! # async fn run(key: String) -> Result<(), meterwire::BuildError> {
//! let transport = HttpTransport::builder("acme")          // the scope: the predictor's name
//!     .address("https://engine.example/v1/predict")        // optional: wins over the address chain
//!     .token(SecretString::from(key))                      // optional: wins over the token chain
//!     .header("engine-version", "2025-01-01")              // optional: on every request
//!     .build()?;
//!
//! let answer = transport.send_json(&Question { prompt: "the cat sat on the" }).await;
//! let again = transport
//!     .call(r#"{"prompt": "the cat sat on the"}"#)
//!     .header("x-trace", "t-1")
//!     .deadline(Duration::from_secs(5))
//!     .send()
//!     .await;
//! # drop(again);
//! match answer {
//!     Ok(answer) => println!("{}", answer.text()),
//!     Err(refusal) if refusal.cause() == Cause::EngineOverQuota => {
//!         eprintln!("later: {}", refusal.remedy());
//!     }
//!     Err(refusal) => eprintln!("{}", refusal.report().to_json()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # What the wire becomes
//!
//! | the wire | cause |
//! |---|---|
//! | `2xx` | an answer |
//! | `401`, `403` | `no-engine` (the token was rejected) |
//! | `402` | `engine-out-of-credit` |
//! | `429` | `engine-over-quota`, `retry-after` echoed |
//! | any other status, or the request failed | `engine-unreachable`, its remedy pointing at the request, the path, the engine's health or the address |
//! | from `400` up, an error code or words that name a cause (`API_KEY_INVALID`, "credit balance is too low", `overloaded_error`) | the cause they name, quoted in the reason |
//! | a `402` asking for an x402 payment; a `401`/`403` with `Retry-After`; a `401`/`403` a gateway relays from its upstream | `engine-out-of-credit` (a payment per request); `engine-over-quota` (a ban); `engine-unreachable` (the gateway's credentials) |
//! | no address, no token, an unusable token | `no-engine`, nothing sent |
//! | plain `http` to a remote host, userinfo, not `http(s)` | `engine-unreachable`, nothing sent |
//!
//! # Retries, limits and what the transport reports
//!
//! Retries are opt-in ([`HttpTransportBuilder::retries`] with a
//! [`RetryPolicy`]) and, without an idempotency key, made only where they
//! cannot double a bill: the request never reached the engine, or the
//! engine asked for the retry with a hint. A request that was sent and
//! failed is retried only with an `Idempotency-Key`
//! ([`RetryPolicy::idempotency_keys`]), for an engine that honours it: one
//! that ignores the header may bill each attempt. A `429` or
//! `503` with a hint holds every clone of the transport until the window
//! ends ([`HttpTransportBuilder::respect_limits`], on by default). Each send
//! is a `tracing` span `meterwire.send`, and [`HttpTransport::meter`] counts
//! sends, attempts, outcomes, bytes and latency, and sums what the engines
//! said they billed: the [`Usage`] of every answer and stream that said it,
//! read in the shapes of OpenAI, Anthropic, Gemini and Ollama.
//!
//! # What the transport will not do
//!
//! Follow a redirect (the header would reach a host the engine named), use a
//! proxy from the environment, send the token over plain `http` to a host
//! that is not loopback (unless [`HttpTransportBuilder::danger_allow_plaintext_http`]),
//! wait past its deadline (30 s by default, covering the whole body), read
//! more than 64 KiB of an error body, or hold more than the answer cap
//! (32 MiB by default) of an answer.

#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`, on nightly) marks each item that needs a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod answer;
#[cfg(feature = "blocking")]
pub mod blocking;
mod clock;
mod conceal;
mod config;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod hint;
mod limits;
mod lock;
mod meter;
mod refusal;
mod request;
mod retry;
mod stream;
mod text;
mod transport;
mod usage;

pub use answer::Answer;
pub use bytes::Bytes;
pub use conceal::{Concealer, REDACTED};
pub use config::env::Env;
pub use config::naming::{Naming, NamingError};
pub use meter::MeterSnapshot;
pub use refusal::{Cause, Refusal, Report, UnknownCause};
pub use request::Request;
pub use retry::RetryPolicy;
pub use secrecy::SecretString;
pub use stream::{AnswerStream, Delta, Ending, Event, Part};
pub use transport::{
    BuildError, Call, DEFAULT_DEADLINE, DEFAULT_MAX_ANSWER_BYTES, HttpTransport,
    HttpTransportBuilder, Transport, USER_AGENT,
};
pub use usage::Usage;

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Every public type can cross threads and be held across an `.await`, and
/// none hides from `{:?}`: checked when the crate compiles.
#[allow(dead_code)]
fn _assert_impls() {
    fn public<T: Send + Sync + Unpin + std::fmt::Debug>() {}
    public::<HttpTransport>();
    public::<HttpTransportBuilder>();
    public::<Call>();
    public::<Request>();
    public::<AnswerStream>();
    public::<Event>();
    public::<Ending>();
    public::<Delta>();
    public::<Part>();
    public::<Answer>();
    public::<Refusal>();
    public::<Cause>();
    public::<UnknownCause>();
    public::<Report>();
    public::<Concealer>();
    public::<Env>();
    public::<Naming>();
    public::<NamingError>();
    public::<BuildError>();
    public::<RetryPolicy>();
    public::<MeterSnapshot>();
    public::<Usage>();
    #[cfg(feature = "blocking")]
    {
        public::<blocking::HttpTransport>();
        public::<blocking::HttpTransportBuilder>();
        public::<blocking::Call>();
        public::<blocking::AnswerStream>();
    }
    fn object_safe(_: &dyn Transport) {}
}
