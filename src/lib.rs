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
//! in linear time is told in `DESIGN.md`, beside the crate's sources.
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
//! | `402`, or a `429` whose error code names the account's credit | `engine-out-of-credit` |
//! | `429` | `engine-over-quota`, `retry-after` echoed |
//! | any other status, or the request failed | `engine-unreachable`, its remedy pointing at the request, the path, the engine's health or the address |
//! | no address, no token, an unusable token | `no-engine`, nothing sent |
//! | plain `http` to a remote host, userinfo, not `http(s)` | `engine-unreachable`, nothing sent |
//!
//! # Retries, limits and what the transport reports
//!
//! Retries are opt-in ([`HttpTransportBuilder::retries`] with a
//! [`RetryPolicy`]) and made only where they cannot double a bill: the
//! request never reached the engine, the engine asked for the retry with a
//! hint, or an `Idempotency-Key` lets it recognise the repeat. A `429` or
//! `503` with a hint holds every clone of the transport until the window
//! ends ([`HttpTransportBuilder::respect_limits`], on by default). Each send
//! is a `tracing` span `meterwire.send`, and [`HttpTransport::meter`] counts
//! sends, attempts, outcomes, bytes and latency.
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
#![warn(missing_docs)]

mod address;
mod answer;
mod conceal;
mod config;
mod env;
mod limits;
mod meter;
mod naming;
mod refusal;
mod retry;
mod text;
mod token;
mod transport;

pub use answer::Answer;
pub use bytes::Bytes;
pub use conceal::{Concealer, REDACTED};
pub use env::Env;
pub use meter::MeterSnapshot;
pub use naming::{Naming, NamingError};
pub use refusal::{Cause, Refusal, Report};
pub use retry::RetryPolicy;
pub use secrecy::SecretString;
pub use transport::{
    BuildError, Call, DEFAULT_DEADLINE, DEFAULT_MAX_ANSWER_BYTES, HttpTransport,
    HttpTransportBuilder, Transport, USER_AGENT,
};

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
    public::<Answer>();
    public::<Refusal>();
    public::<Cause>();
    public::<Report>();
    public::<Concealer>();
    public::<Env>();
    public::<Naming>();
    public::<NamingError>();
    public::<BuildError>();
    public::<RetryPolicy>();
    public::<MeterSnapshot>();
    fn object_safe(_: &dyn Transport) {}
}

/// The crate's private readers of engine text, for the fuzz targets in
/// `fuzz/` only: built with `--cfg fuzzing` (as `cargo fuzz` builds), never
/// part of the public API. Each wraps one reader, taking plain strings and
/// bytes; header readers take `(name, value)` pairs, and a pair whose name
/// or value is not a valid header is left out, as the HTTP stack would
/// refuse it.
#[cfg(fuzzing)]
#[doc(hidden)]
#[allow(missing_docs)]
pub mod fuzzing {
    use std::time::{Duration, SystemTime};

    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

    use crate::Concealer;
    use crate::refusal::evidence::{challenge, request_id as id, retry, words};

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_bytes(value),
            ) {
                map.append(name, value);
            }
        }
        map
    }

    pub fn retry_delay(pairs: &[(&str, &[u8])], now: SystemTime) -> Option<Duration> {
        retry::retry_delay(&headers(pairs), now)
    }

    pub fn exhausted(pairs: &[(&str, &[u8])]) -> Option<Duration> {
        crate::limits::exhausted(&headers(pairs))
    }

    /// `(error, error_description, scope)` of the `Bearer` challenge among
    /// these `www-authenticate` values.
    #[allow(clippy::type_complexity)]
    pub fn bearer_challenge(
        values: &[&[u8]],
    ) -> Option<(Option<String>, Option<String>, Option<String>)> {
        let pairs: Vec<(&str, &[u8])> = values.iter().map(|v| ("www-authenticate", *v)).collect();
        challenge::bearer_challenge(&headers(&pairs)).map(|c| (c.error, c.description, c.scope))
    }

    pub fn request_id(pairs: &[(&str, &[u8])]) -> Option<Vec<u8>> {
        id::request_id(&headers(pairs)).map(<[u8]>::to_vec)
    }

    pub fn engine_words(text: &str, concealer: &Concealer) -> Option<String> {
        words::engine_words(text, concealer)
    }

    pub fn engine_value(value: &[u8], concealer: &Concealer, limit: usize) -> String {
        words::engine_value(value, concealer, limit)
    }

    pub fn credit_code(text: &str, concealer: &Concealer) -> Option<String> {
        words::credit_code(text, concealer)
    }

    pub fn json_message(text: &str) -> Option<String> {
        words::json_message(text)
    }

    pub fn html_text(text: &str) -> Option<String> {
        words::html_text(text)
    }

    pub fn bound_whole(text: &str, max_chars: usize) -> &str {
        crate::text::bound_whole(text, max_chars)
    }

    /// The concealer's decoding over the whole text, which the windowed
    /// one must match.
    pub fn conceal_whole(concealer: &Concealer, text: &str) -> String {
        concealer.conceal_whole(text).into_owned()
    }

    /// The concealment of `pieces` pushed one after another into a
    /// `ConcealStream`, which must be `conceal` of them joined; and the
    /// most bytes it held after a push, and its reach, which that must not
    /// pass.
    pub fn conceal_in_pieces(concealer: &Concealer, pieces: &[&str]) -> (String, usize, usize) {
        let mut stream = concealer.stream();
        let mut out = String::new();
        let mut most = 0;
        for piece in pieces {
            stream.push(piece, &mut out);
            most = most.max(stream.held());
        }
        stream.finish(&mut out);
        (out, most, concealer.reach())
    }
}
