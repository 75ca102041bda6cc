//! Raw chunks: the text as the concealer released it, parsed not at all.
//! No `[DONE]` is looked for, so a stream read so ends at the end of its
//! body, whatever the call asked for.

use super::Framing;
use crate::stream::Ending;

/// Text as it arrives.
#[derive(Debug, Default)]
pub(crate) struct Chunks;

impl Framing for Chunks {
    type Frame = String;
    const PARSED: bool = false;
    const EVENTS: bool = false;

    fn next(
        &mut self,
        text: &str,
        at: &mut usize,
        _cap: usize,
    ) -> Result<Option<String>, &'static str> {
        let chunk = text.get(*at..).filter(|rest| !rest.is_empty());
        let chunk = chunk.map(str::to_owned);
        *at = text.len();
        Ok(chunk)
    }

    fn end(&mut self, _rest: &str) -> (Option<String>, Ending) {
        (None, Ending::Body)
    }
}
