//! The design of `meterwire`, as a manual: why the crate is built the way
//! it is, for a reader who wants to know what it promises and how it keeps
//! it, or who changes it. Nothing here is API; the pages are the
//! repository's `DESIGN.md` and `DESIGN-TRANSPORT.md`, rendered here as
//! they stand there.
//!
//! - [`concealer`]: how the token is found in every form an echo can take
//!   (escaped, encoded, cut short, broken across lines, split across a
//!   stream's pieces or the strings a predictor joins), in linear time,
//!   and what it gives up.
//! - [`transport`]: the rest of the house: the rooms and the way a send
//!   goes, the refusal as a value and its one renderer, what may be sent
//!   again, the engine's limits, a fleet's Redis keys and script, and how
//!   a stream is read.
//!
//! How to report a leak, and what the crate promises and does not, is the
//! repository's `SECURITY.md`:
//! <https://github.com/meterwire/meterwire/blob/main/SECURITY.md>.

#[doc = include_str!("../DESIGN.md")]
pub mod concealer {}

#[doc = include_str!("../DESIGN-TRANSPORT.md")]
pub mod transport {}
