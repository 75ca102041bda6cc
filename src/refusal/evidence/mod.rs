//! The evidence an engine attaches to a refusal: when to retry
//! ([`retry`]), which request it was ([`request_id`]), why it rejected the
//! token ([`challenge`]), and what it said ([`words`]).
//!
//! A cause says *what* to do; these say *when* and *with what*. An operator
//! who reads "over quota" still has to know whether to wait a second or an
//! hour, and the support desk asks for the request id. Every value here
//! comes from the engine, so every value that is printed passes through the
//! concealer.

pub(crate) mod challenge;
pub(crate) mod request_id;
pub(crate) mod retry;
pub(crate) mod words;

// Read as the limits read their fields: one reader of header text.
/// A header map from `(name, value)` pairs, for the readers' unit tests.
#[cfg(test)]
pub(crate) use crate::hint::header_map;
use crate::hint::header_text;
