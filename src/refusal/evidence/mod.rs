//! The evidence an engine attaches to a refusal: when to retry
//! ([`retry`]), which request it was ([`request_id`]), why it rejected the
//! token ([`challenge`]), what it said ([`words`]), which of its codes and
//! phrases name a cause ([`dialect`]), and what the protocol on the wire
//! says ([`protocol`]: x402, a ban that ends, a gateway's relay).
//!
//! A cause says *what* to do; these say *why*, *when* and *with what*. An
//! operator who reads "over quota" still has to know whether to wait a
//! second or an hour, and the support desk asks for the request id. Every
//! value here comes from the engine, so every value is read from what the
//! door concealed, and every value that is printed passes through the
//! concealer again.

pub(crate) mod challenge;
pub(crate) mod dialect;
pub(crate) mod protocol;
pub(crate) mod request_id;
pub(crate) mod retry;
pub(crate) mod words;

// Read as the limits read their fields: one reader of header text.
/// A header map from `(name, value)` pairs, for the readers' unit tests.
#[cfg(test)]
pub(crate) use crate::hint::header_map;
use crate::hint::header_text;
