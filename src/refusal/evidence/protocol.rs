//! What the protocol on the wire says about a refusal, where the engine's
//! code and words said nothing: a payment asked per request, a ban that
//! ends, a gateway relaying its upstream's refusal.
//!
//! - **x402**: a `402` that carries `PAYMENT-REQUIRED` (x402 version 2,
//!   <https://github.com/coinbase/x402/blob/main/specs/transports-v2/http.md>)
//!   or a body with an `x402Version` (version 1) asks for a payment with
//!   each request, which no bearer token makes: "fund the account" is not
//!   the fix.
//! - **A ban that ends**: a `401` or `403` with a `Retry-After` (fakeai
//!   bans an address this way, `fakeai/app.py`) holds an address or a key
//!   back for a while; the token is not what is wrong.
//! - **A relay**: LiteLLM's proxy passes its upstream's headers on with the
//!   prefix `llm_provider-` (`litellm/litellm_core_utils/llm_response_utils/get_headers.py`)
//!   and names the upstream's exception in its words (`OpenAIException -
//!   Incorrect API key provided`): a rejection it relays is of the
//!   gateway's own credentials, not the caller's.
//!
//! Everything here is read from what the door concealed; no value is
//! parsed, only looked for.

use reqwest::header::HeaderMap;

use crate::conceal::{Concealer, Shown};

/// The header an x402 (version 2) engine asks for its payment in.
const PAYMENT_REQUIRED: &str = "payment-required";

/// The prefix LiteLLM puts on each of its upstream's headers.
const RELAYED_PREFIX: &str = "llm_provider-";

/// What LiteLLM writes after the upstream's exception's name.
const EXCEPTION_MARK: &str = "Exception - ";

/// How much of an exception's name a reason quotes.
const EXCEPTION_LIMIT: usize = 64;

/// Whether an answer speaks x402: `Some(true)` for a `PAYMENT-REQUIRED`
/// header, `Some(false)` for a body that says its `x402Version`.
pub(crate) fn x402(headers: &HeaderMap, speaks_in_body: bool) -> Option<bool> {
    if headers.contains_key(PAYMENT_REQUIRED) {
        Some(true)
    } else {
        speaks_in_body.then_some(false)
    }
}

/// What marked an answer as a gateway's relay of its upstream's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Relay {
    /// Headers the gateway prefixed to its upstream's (`llm_provider-…`).
    /// Their names are not quoted: a name is lower-cased on the wire, so
    /// a secret in one is a form the concealer may not know.
    Headers,
    /// Words naming the upstream's exception (`OpenAIException`).
    Exception(Shown),
}

/// Whether an answer is a gateway's relay of its upstream's: a header
/// with LiteLLM's prefix, or the engine's words (concealed) naming an
/// upstream exception as LiteLLM does, the name shown by `concealer`.
pub(crate) fn relayed(
    headers: &HeaderMap,
    words: Option<&str>,
    concealer: &Concealer,
) -> Option<Relay> {
    if headers
        .keys()
        .any(|name| name.as_str().starts_with(RELAYED_PREFIX))
    {
        return Some(Relay::Headers);
    }
    words
        .and_then(exception)
        .map(|name| Relay::Exception(concealer.show_all(&name)))
}

/// The name of the first `…Exception - ` in `words`: a run of letters,
/// digits and `_` right before the mark.
fn exception(words: &str) -> Option<String> {
    let mut from = 0;
    while let Some(at) = words.get(from..)?.find(EXCEPTION_MARK) {
        let end = from + at;
        let name_start = words[..end]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || *c == '_')
            .last()
            .map_or(end, |(i, _)| i);
        if name_start < end {
            let name: String = words[name_start..end]
                .chars()
                .take(EXCEPTION_LIMIT)
                .collect();
            return Some(format!("{name}Exception"));
        }
        from = end + EXCEPTION_MARK.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::evidence::header_map;

    #[test]
    fn a_payment_required_header_or_an_x402_body_is_x402() {
        let with = header_map(&[("payment-required", "eyJ4NDAyVmVyc2lvbiI6Mn0=")]);
        assert_eq!(x402(&with, false), Some(true));
        assert_eq!(x402(&HeaderMap::new(), true), Some(false));
        assert_eq!(x402(&HeaderMap::new(), false), None);
    }

    #[test]
    fn a_relay_is_marked_by_a_prefixed_header_or_an_upstream_exception() {
        let headers = header_map(&[("llm_provider-x-request-id", "req-1")]);
        let concealer = Concealer::new([]);
        assert_eq!(relayed(&headers, None, &concealer), Some(Relay::Headers));
        let words = "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided";
        assert_eq!(
            relayed(&HeaderMap::new(), Some(words), &concealer),
            Some(Relay::Exception(Shown::from("OpenAIException")))
        );
        for words in [
            "Authentication Error, Invalid proxy server token passed.",
            "Exception - with no name",
            "",
        ] {
            assert_eq!(
                relayed(&HeaderMap::new(), Some(words), &concealer),
                None,
                "{words}"
            );
        }
    }
}
