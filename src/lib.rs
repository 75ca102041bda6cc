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
//! refusals get pasted into public merge-request comments.
//!
//! # Where the configuration comes from
//!
//! Two chains of environment variables, most specific first, read from an
//! [`Env`] snapshot ([`Env::from_process`] by default). With the default
//! [`Naming`] and the scope `acme`:
//!
//! | chain | variables, in order |
//! |---|---|
//! | address | `CHANT_BEHAVIOUR_ENGINE_ACME`, `CHANT_BEHAVIOUR_ENGINE`, `BEHAVIOUR_ENGINE` |
//! | token | `CHANT_BEHAVIOUR_TOKEN_ACME`, `CHANT_BEHAVIOUR_TOKEN`, `BEHAVIOUR_TOKEN` |
//!
//! # Sending
//!
//! ```no_run
//! use meterwire::{Cause, HttpTransport};
//!
//! # async fn run() -> Result<(), meterwire::BuildError> {
//! let transport = HttpTransport::builder("acme").build()?;
//! match transport.send(r#"{"prompt": "the cat sat on the"}"#).await {
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
//! | any other status, or the request failed | `engine-unreachable` |
//! | no address, no token, an unusable token | `no-engine`, nothing sent |
//! | plain `http` to a remote host, userinfo, not `http(s)` | `engine-unreachable`, nothing sent |
//!
//! [`refusal_for_status`] is that table as one pure function.
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
mod child;
mod conceal;
mod detail;
mod env;
mod hints;
mod naming;
mod refusal;
mod token;
mod transport;
mod wire;

pub use address::{Address, AddressError, redact_address};
pub use child::{child_command, child_env};
pub use conceal::{Concealer, REDACTED, bound};
pub use env::Env;
pub use naming::{AddressChain, Naming, NamingError, Resolved, TokenChain, fold_scope};
pub use refusal::{Cause, Refusal, Report};
pub use token::{Token, UnusableToken};
pub use transport::{
    Answer, BoxFuture, BuildError, DEFAULT_DEADLINE, DEFAULT_MAX_ANSWER_BYTES, HttpTransport,
    HttpTransportBuilder, Transport, USER_AGENT,
};
pub use wire::{Failure, Site, refusal_for_failure, refusal_for_status, refusal_for_status_at};
