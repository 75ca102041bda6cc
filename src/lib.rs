//! meterwire
mod address;
mod child;
mod conceal;
mod detail;
mod env;
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
pub use wire::{Failure, Site, refusal_for_failure, refusal_for_status};
