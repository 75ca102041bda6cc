//! What engines say in their own dialect: the codes and the phrases that
//! name a refusal's cause better than its status.
//!
//! Real engines state their cause in the body, not always in the status:
//! Anthropic says "Your credit balance is too low" on a `400
//! invalid_request_error`, Google rejects a key as `400 INVALID_ARGUMENT`
//! with the reason `API_KEY_INVALID`, LiteLLM answers a spent budget with
//! `budget_exceeded` on a `400`, `422` or `429`, TGI and Moonshot report an
//! overloaded engine as a `429`. Read by the status alone, each sends an
//! operator to the wrong fix. So a refusal's cause is read from the
//! engine's code first, then from its words, and the status decides only
//! where neither names one.
//!
//! These are two tables of data, each entry naming the engine whose
//! documented answer it reads. A code is compared case-folded, with `-`
//! and space read as `_`; most must match whole, and the few marked
//! `within` may sit inside a longer code (`account_insufficient_funds`). A
//! phrase is at least two words, found case-insensitively in the engine's
//! words after they were concealed. A code that names no cause
//! (`invalid_request_error`, `INVALID_ARGUMENT`, `PRECONDITION_FAILED`,
//! `PERMISSION_DENIED`, which xAI also sends for an empty account) is not
//! here: it decides nothing.

use crate::refusal::Cause;

/// What a code or phrase names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Names {
    /// The token: rejected, invalid, expired.
    Token,
    /// The account's credit or spending limit: no wait refills it.
    Credit,
    /// A rate or usage limit that a wait lifts.
    Limit,
    /// The engine's own trouble (overloaded, failing): waiting helps,
    /// another token does not.
    Trouble,
}

impl Names {
    /// The cause of a refusal this names.
    pub(crate) fn cause(self) -> Cause {
        match self {
            Names::Token => Cause::NoEngine,
            Names::Credit => Cause::EngineOutOfCredit,
            Names::Limit => Cause::EngineOverQuota,
            Names::Trouble => Cause::EngineUnreachable,
        }
    }
}

/// One code an engine sends, folded.
pub(crate) struct Code {
    pub(crate) code: &'static str,
    pub(crate) names: Names,
    /// Found inside a longer code too, not only whole.
    pub(crate) within: bool,
}

const fn code(code: &'static str, names: Names) -> Code {
    Code {
        code,
        names,
        within: false,
    }
}

const fn within(code: &'static str, names: Names) -> Code {
    Code {
        code,
        names,
        within: true,
    }
}

/// The codes that name a cause, folded (lower case, `_` for `-` and
/// space).
pub(crate) const CODES: &[Code] = &[
    // OpenAI, https://platform.openai.com/docs/guides/error-codes: a key
    // that is wrong, an account whose quota or hard limit is spent or whose
    // billing is not active, a window's limit, and the engine's own
    // failures.
    code("invalid_api_key", Names::Token),
    within("insufficient_quota", Names::Credit),
    within("billing_hard_limit_reached", Names::Credit),
    code("billing_not_active", Names::Credit),
    code("rate_limit_exceeded", Names::Limit),
    code("server_error", Names::Trouble),
    code("server_is_overloaded", Names::Trouble),
    code("service_unavailable_error", Names::Trouble),
    // Anthropic, https://docs.anthropic.com/en/api/errors: its error
    // types, and the monthly spend limit of a usage tier
    // (`error.details.error_code`), which a wait within the month does not
    // lift.
    code("authentication_error", Names::Token),
    code("permission_error", Names::Token),
    code("rate_limit_error", Names::Limit),
    code("api_error", Names::Trouble),
    code("overloaded_error", Names::Trouble),
    code("enforced_spend_limit_reached", Names::Credit),
    // Google (Gemini, Vertex AI), https://cloud.google.com/apis/design/errors
    // and https://ai.google.dev/gemini-api/docs/troubleshooting: an
    // `ErrorInfo` reason for a bad key, a status for a spent
    // quota, an unauthenticated call and an unavailable model, and the
    // reason that names the model's capacity rather than the account's
    // quota.
    code("api_key_invalid", Names::Token),
    code("unauthenticated", Names::Token),
    code("resource_exhausted", Names::Limit),
    code("model_capacity_exhausted", Names::Trouble),
    code("unavailable", Names::Trouble),
    // AWS Bedrock (`x-amzn-ErrorType`),
    // https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html
    // and https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html.
    code("throttlingexception", Names::Limit),
    code("servicequotaexceededexception", Names::Limit),
    code("unrecognizedclientexception", Names::Token),
    code("invalidsignatureexception", Names::Token),
    code("expiredtokenexception", Names::Token),
    code("modelnotreadyexception", Names::Trouble),
    code("serviceunavailableexception", Names::Trouble),
    // OAuth 2.0 bearer tokens, RFC 6750 §3.1, as engines put the
    // challenge's error in their body.
    code("invalid_token", Names::Token),
    // Moonshot (Kimi), https://platform.moonshot.ai/docs/api/chat: its
    // error types; a spent balance is `exceeded_current_quota_error`.
    code("invalid_authentication_error", Names::Token),
    code("exceeded_current_quota_error", Names::Credit),
    code("rate_limit_reached_error", Names::Limit),
    code("engine_overloaded_error", Names::Trouble),
    // LiteLLM's proxy, https://docs.litellm.ai/docs/proxy/users: a key's,
    // team's or user's budget, spent.
    code("budget_exceeded", Names::Credit),
    // Hugging Face text-generation-inference
    // (router/src/server.rs, `ErrorResponse.error_type`): a queue that is
    // full.
    code("overloaded", Names::Trouble),
    // DeepSeek, https://api-docs.deepseek.com/quick_start/error_codes, and
    // OpenRouter, https://openrouter.ai/docs/api-reference/errors: an
    // empty balance.
    within("insufficient_balance", Names::Credit),
    within("insufficient_credit", Names::Credit),
    // HTTP's own name for 402 (RFC 9110 §15.5.3) and the generic credit
    // names, as problem types and codes spell them.
    code("payment_required", Names::Credit),
    within("insufficient_funds", Names::Credit),
    within("out_of_credit", Names::Credit),
    within("credit_balance", Names::Credit),
    // Generic names of a window's limit and of an engine's trouble.
    code("too_many_requests", Names::Limit),
    code("service_unavailable", Names::Trouble),
];

/// One phrase that names a cause, in lower case.
pub(crate) struct Phrase {
    pub(crate) phrase: &'static str,
    pub(crate) names: Names,
}

const fn phrase(phrase: &'static str, names: Names) -> Phrase {
    Phrase { phrase, names }
}

/// The phrases that name a cause unmistakably, in lower case.
pub(crate) const PHRASES: &[Phrase] = &[
    // Anthropic, https://docs.anthropic.com/en/api/errors: "Your credit
    // balance is too low to access the Anthropic API. Please go to Plans &
    // Billing to upgrade or purchase credits." (a `400
    // invalid_request_error`).
    phrase("credit balance is too low", Names::Credit),
    phrase("purchase credits", Names::Credit),
    // xAI, https://docs.x.ai/docs/overview (its answers as users pasted
    // them: https://github.com/warpdotdev/warp/issues/14863,
    // https://github.com/griptape-ai/griptape-nodes-engine/issues/1079):
    // "has either used all available credits or reached its monthly
    // spending limit. To continue making API requests, please purchase
    // more credits or raise your spending limit." (a `403` or a `429`),
    // and a new team's "doesn't have any credits yet".
    phrase("purchase more credits", Names::Credit),
    phrase("used all available credits", Names::Credit),
    phrase("have any credits", Names::Credit),
    // Fireworks, https://docs.fireworks.ai/ (its answer as a user pasted
    // it: https://github.com/pollinations/pollinations/issues/12136):
    // "Account … is suspended, possibly due to reaching the monthly
    // spending limit or failure to pay past invoices." (a `412
    // PRECONDITION_FAILED`); xAI says "spending limit" too.
    phrase("spending limit", Names::Credit),
    // LiteLLM's proxy, https://docs.litellm.ai/docs/proxy/users: "Budget has
    // been exceeded! Current cost: …".
    phrase("budget has been exceeded", Names::Credit),
    // DeepSeek, https://api-docs.deepseek.com/quick_start/error_codes:
    // "Insufficient Balance" (a `402`).
    phrase("insufficient balance", Names::Credit),
    // OpenRouter, https://openrouter.ai/docs/api-reference/errors:
    // "Insufficient credits. Add more using https://openrouter.ai/credits".
    phrase("insufficient credit", Names::Credit),
    // Google, https://ai.google.dev/gemini-api/docs/troubleshooting: "API
    // key not valid. Please pass a valid API key." and "API key expired.
    // Please renew the API key."
    phrase("api key not valid", Names::Token),
    phrase("api key expired", Names::Token),
    // OpenAI, https://platform.openai.com/docs/guides/error-codes, and xAI
    // (on a `400`): "Incorrect API key provided"; Groq,
    // https://console.groq.com/docs/errors, Together,
    // https://docs.together.ai/docs/error-codes, and fakeai
    // (`fakeai/app.py`): "Invalid API Key"; Cohere,
    // https://docs.cohere.com/reference/errors: "invalid api token".
    phrase("incorrect api key", Names::Token),
    phrase("invalid api key", Names::Token),
    phrase("invalid api token", Names::Token),
    // AWS, https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html:
    // "The security token included in the request is invalid."
    phrase(
        "security token included in the request is invalid",
        Names::Token,
    ),
    // Rate limits in words: Mistral's "Requests rate limit exceeded"
    // (https://docs.mistral.ai/deployment/laplateforme/tier/), OpenAI's
    // "Rate limit reached for requests"
    // (https://platform.openai.com/docs/guides/error-codes).
    phrase("rate limit exceeded", Names::Limit),
    phrase("rate limit reached", Names::Limit),
    // An engine's trouble in words: OpenAI's "That model is currently
    // overloaded" (https://platform.openai.com/docs/guides/error-codes)
    // and Moonshot's "The engine is currently overloaded, please try again
    // later" (https://platform.moonshot.ai/docs/api/chat), TGI's "Model is
    // overloaded" (router/src/infer/mod.rs) and Gemini's "The model is
    // overloaded" and "No capacity available for model"
    // (https://ai.google.dev/gemini-api/docs/troubleshooting).
    phrase("currently overloaded", Names::Trouble),
    phrase("model is overloaded", Names::Trouble),
    phrase("no capacity available", Names::Trouble),
];

/// `text` case-folded, with `-` and space read as `_`: how a code is
/// compared.
pub(crate) fn fold(text: &str) -> String {
    text.trim()
        .chars()
        .map(|c| match c {
            '-' | ' ' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// What a code names, if the table knows it. `code` as sent; a problem
/// type's URI is read by its last segment.
pub(crate) fn code_names(code: &str) -> Option<Names> {
    let folded = fold(code);
    CODES
        .iter()
        .find(|entry| {
            if entry.within {
                folded.contains(entry.code)
            } else {
                folded == entry.code
            }
        })
        .map(|entry| entry.names)
}

/// The first phrase of the table in `words` (the engine's words, concealed),
/// and what it names.
pub(crate) fn phrase_in(words: &str) -> Option<&'static Phrase> {
    let lowered: String = words
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    PHRASES.iter().find(|entry| lowered.contains(entry.phrase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phrase_is_two_words_or_more_in_lower_case() {
        for entry in PHRASES {
            assert!(entry.phrase.split(' ').count() >= 2, "{}", entry.phrase);
            assert_eq!(entry.phrase, entry.phrase.to_lowercase());
        }
    }

    #[test]
    fn every_code_is_folded_and_listed_once() {
        for (at, entry) in CODES.iter().enumerate() {
            assert_eq!(fold(entry.code), entry.code, "{}", entry.code);
            assert!(
                CODES[..at].iter().all(|other| other.code != entry.code),
                "{} twice",
                entry.code
            );
        }
    }

    #[test]
    fn codes_are_compared_folded_and_whole_unless_marked_within() {
        assert_eq!(code_names("API_KEY_INVALID"), Some(Names::Token));
        assert_eq!(code_names("Rate-Limit-Error"), Some(Names::Limit));
        assert_eq!(code_names("overloaded"), Some(Names::Trouble));
        assert_eq!(code_names("not_overloaded_at_all"), None);
        assert_eq!(
            code_names("account_insufficient_funds"),
            Some(Names::Credit)
        );
        assert_eq!(code_names("credit_window"), None);
        assert_eq!(code_names("invalid_request_error"), None);
        assert_eq!(code_names("PERMISSION_DENIED"), None);
    }

    #[test]
    fn a_phrase_is_found_across_case_and_spacing() {
        let found = phrase_in("Your credit  balance is TOO low to access the API");
        assert_eq!(found.map(|p| p.names), Some(Names::Credit));
        assert!(phrase_in("'messages' is a required property").is_none());
        assert!(phrase_in("quota exceeded for this month").is_none());
    }
}
