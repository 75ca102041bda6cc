//! The engine's own words: one short, scrubbed line from an error body.
//!
//! An error body is whatever the engine (or a proxy in front of it) chose to
//! send: a JSON error, an HTML page, a stack trace with the request echoed
//! back, a 300 MB log. The refusal quotes one line of it, because "the
//! account is out of credit" in the engine's words is evidence an operator
//! can act on. The line is scrubbed whole (concealment before any
//! truncation, so a bound can never keep half a token) and only then bounded,
//! and control characters are turned into spaces so a quoted line cannot
//! drive a terminal.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::conceal::escapes::decode_char_refs;
use crate::conceal::{Concealer, Shown};

/// How much of an error body is ever read: enough for any error message,
/// far less than a page that should never have been sent.
pub(crate) const DETAIL_READ_LIMIT: usize = 64 * 1024;

/// How many characters of the engine's words a reason quotes.
pub(crate) const WORDS_LIMIT: usize = 200;

/// The line an error body's reader should see, shown (scrubbed and
/// bounded, `Concealer::show_engine`); `None` when the body says nothing.
/// `text` is the head of the body, already concealed.
pub(crate) fn engine_words(text: &str, concealer: &Concealer) -> Option<Shown> {
    let line = json_message(text)
        .or_else(|| html_text(text))
        .unwrap_or_else(|| first_line(text).to_owned());
    let words = concealer.show_engine(line.as_bytes(), WORDS_LIMIT);
    (!words.is_empty()).then_some(words)
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// The fields of a JSON error body the crate reads, borrowed from the text.
/// Every other field is skipped without being built, and these are parsed
/// only when read: a 64 KiB body costs the few strings kept, not a tree of
/// values (256 sends at once each holding one was most of a fault soak's
/// memory).
#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error_description: Option<&'a RawValue>,
    #[serde(borrow, default)]
    title: Option<&'a RawValue>,
    #[serde(borrow, default)]
    detail: Option<&'a RawValue>,
    #[serde(borrow, default, alias = "Message")]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    code: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    /// Google's `error.status` (`RESOURCE_EXHAUSTED`).
    #[serde(borrow, default)]
    status: Option<&'a RawValue>,
    /// Google's `error.details[]` (each `ErrorInfo` has a `reason`), or
    /// Anthropic's `error.details` (an `error_code`).
    #[serde(borrow, default)]
    details: Option<&'a RawValue>,
    /// TGI's `error_type` (`overloaded`, `validation`).
    #[serde(borrow, default)]
    error_type: Option<&'a RawValue>,
    /// The x402 payment protocol's version, in a body that asks for a
    /// payment.
    #[serde(borrow, default, rename = "x402Version")]
    x402_version: Option<&'a RawValue>,
}

impl<'a> ErrorBody<'a> {
    /// The body as a JSON object of the error shapes, when it is one.
    fn parse(text: &'a str) -> Option<ErrorBody<'a>> {
        let trimmed = text.trim_start();
        if !trimmed.starts_with('{') {
            return None;
        }
        serde_json::from_str(trimmed).ok()
    }

    /// `error`, when it is an object (`{"error": {"message": …, "code": …,
    /// "type": …}}`): read with the body's own fields, of which its
    /// message, code and type are used.
    fn error_object(&self) -> Option<ErrorBody<'a>> {
        self.error
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }
}

/// A field's string value, trimmed; `None` when it is absent, not a
/// string, or blank.
fn text(raw: Option<&RawValue>) -> Option<String> {
    let value: String = serde_json::from_str(raw?.get()).ok()?;
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_owned())
}

/// The message of the common JSON error shapes: RFC 9457 problem details
/// (`title`, `detail`), `{"error": {"message": …}}`, `{"error": "<code>",
/// "error_description" | "message": "…"}` (OAuth, Express), `{"error":
/// "…"}`, `{"message": …}`, `{"detail": …}`.
pub(crate) fn json_message(text_in: &str) -> Option<String> {
    let body = ErrorBody::parse(text_in)?;
    if let Some(message) = body.error_object().and_then(|error| text(error.message)) {
        return Some(message);
    }
    if let Some(code) = text(body.error) {
        // A string `error` is a code (OAuth's `invalid_token`, RFC 6749
        // §5.2; an Express app's `SyntaxError`); the sentence beside it is
        // what the engine said.
        let beside = [body.error_description, body.message, body.detail]
            .into_iter()
            .find_map(text);
        return Some(match beside {
            Some(sentence) => format!("{sentence} ({code})"),
            None => code,
        });
    }
    match (text(body.title), text(body.detail)) {
        (Some(title), Some(detail)) => return Some(format!("{title}: {detail}")),
        (None, Some(detail)) => return Some(detail),
        _ => {}
    }
    text(body.message).or_else(|| text(body.title))
}

/// The words of an HTML error page: its `<title>`, else its first line of
/// text outside markup, `<script>` and `<style>`. Hand-written rather than a
/// parser dependency: only the first words of at most 64 KiB are wanted, and
/// a malformed page must still yield something or nothing, never an error.
pub(crate) fn html_text(text: &str) -> Option<String> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with('<') {
        return None;
    }
    let looks_html = [
        "<!doctype html",
        "<html",
        "<head",
        "<body",
        "<title",
        "<h1",
        "<p>",
        "<div",
    ]
    .iter()
    .any(|tag| starts_with_ci(trimmed, tag));
    if !looks_html {
        return None;
    }
    if let Some(start) = find_ci(trimmed, 0, "<title") {
        let open_end = trimmed[start..].find('>').map(|i| start + i + 1);
        if let Some(open_end) = open_end {
            let close = find_ci(trimmed, open_end, "</title").unwrap_or(trimmed.len());
            let title = decode_char_refs(trimmed.get(open_end..close).unwrap_or(""));
            let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
            if !title.is_empty() {
                return Some(title);
            }
        }
    }
    // The first text outside tags. Every search is case-insensitive in
    // place (tags are ASCII), so no lowered copy of the page is made and
    // the walk stays linear.
    let mut at = 0;
    loop {
        let open = trimmed[at..].find('<').map_or(trimmed.len(), |i| at + i);
        let line = decode_char_refs(first_line(trimmed.get(at..open).unwrap_or("")));
        if !line.is_empty() {
            return Some(line);
        }
        if open >= trimmed.len() {
            return None;
        }
        let from = match ["script", "style"]
            .into_iter()
            .find(|name| starts_with_ci(&trimmed[open + 1..], name))
        {
            // An unclosed script runs to the end of what was read.
            Some(name) => find_ci(trimmed, open, &format!("</{name}"))? + 2,
            None => open + 1,
        };
        at = trimmed[from..]
            .find('>')
            .map_or(trimmed.len(), |close| from + close + 1);
    }
}

/// Whether `text` starts with `prefix` (ASCII, lower case), case ignored.
fn starts_with_ci(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// Where `needle` (ASCII, lower case, starting with `<`) first occurs in
/// `text` at or after `from`, case ignored.
fn find_ci(text: &str, from: usize, needle: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(offset) = memchr::memchr(b'<', bytes.get(at..)?) {
        let start = at + offset;
        if starts_with_ci(&text[start..], needle) {
            return Some(start);
        }
        at = start + 1;
    }
    None
}

/// The `type` and `code` of an error an engine sent inside a stream it had
/// answered `200` (OpenAI's `data: {"error": {"type": …, "code": …}}`,
/// Anthropic's `{"type": "error", "error": {"type": "overloaded_error"}}`),
/// trimmed; `None` when `text` is not a JSON object with a top-level
/// `error` member. `text` is already concealed.
pub(crate) fn stream_error(text: &str) -> Option<(Option<String>, Option<String>)> {
    let body = ErrorBody::parse(text)?;
    body.error?;
    let error = body.error_object();
    let kind = error.as_ref().and_then(|error| self::text(error.kind));
    let code = error
        .as_ref()
        .and_then(|error| self::text(error.code))
        .or_else(|| self::text(body.error));
    Some((kind, code))
}

/// The most codes read from one body: a body that lists more is not an
/// error any engine sends.
const MOST_CODES: usize = 16;

/// The codes of a JSON error body, most specific first, as sent
/// (trimmed): each `reason` of Google's `error.details[]` and Anthropic's
/// `error.details.error_code`; the error object's `code`, `type` and
/// `status`; TGI's `error_type`; the top-level `code`, `type` (a problem
/// type's URI) and `error` string. Strings only: a numeric code (Azure's
/// `"429"` aside) names a status, not a cause. `text` is already
/// concealed.
pub(crate) fn codes(body_text: &str) -> Vec<String> {
    let Some(body) = ErrorBody::parse(body_text) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let error = body.error_object();
    if let Some(details) = error.as_ref().and_then(|error| error.details) {
        found.extend(detail_codes(details));
    }
    if let Some(error) = &error {
        found.extend(
            [error.code, error.kind, error.status]
                .into_iter()
                .filter_map(text),
        );
    }
    found.extend(
        [body.error_type, body.code, body.kind, body.error]
            .into_iter()
            .filter_map(text),
    );
    found.truncate(MOST_CODES);
    found
}

/// One entry of `details`, of which only these are read.
#[derive(Deserialize)]
struct Detail<'a> {
    #[serde(borrow, default)]
    reason: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error_code: Option<&'a RawValue>,
}

/// The `reason`s of a `details` array, or the `error_code` of a
/// `details` object.
fn detail_codes(details: &RawValue) -> Vec<String> {
    if let Ok(list) = serde_json::from_str::<Vec<&RawValue>>(details.get()) {
        return list
            .into_iter()
            .take(MOST_CODES)
            .filter_map(|detail| serde_json::from_str::<Detail<'_>>(detail.get()).ok())
            .filter_map(|detail| text(detail.reason))
            .collect();
    }
    serde_json::from_str::<Detail<'_>>(details.get())
        .ok()
        .and_then(|detail| text(detail.error_code))
        .into_iter()
        .collect()
}

/// Whether a JSON body says which version of the x402 payment protocol it
/// speaks: the body of a `402` that asks for a payment.
pub(crate) fn speaks_x402(body_text: &str) -> bool {
    ErrorBody::parse(body_text).is_some_and(|body| body.x402_version.is_some())
}

/// An error's `type` or `code` as a reason quotes it and a cause is read
/// from it: a problem type is a URI, whose last segment is the code (the
/// rest would be scrubbed to a host, and the code lost), scrubbed and
/// bounded.
pub(crate) fn engine_code(code: &str, concealer: &Concealer) -> Shown {
    concealer.show_engine(last_segment(code).as_bytes(), CODE_LIMIT)
}

/// A code as it is compared: a problem type's URI by its last segment.
pub(crate) fn last_segment(code: &str) -> &str {
    code.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(code)
}

/// How many characters of an error's `type` or `code` a reason quotes.
const CODE_LIMIT: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    /// What `engine_words` makes of `body`, with no secret to conceal.
    fn words(body: &str) -> Option<String> {
        engine_words(body, &Concealer::new([])).map(Shown::into_string)
    }

    #[test]
    fn the_first_non_empty_line_is_the_words() {
        let words = words("\n\n  out of credit  \nsecond line");
        assert_eq!(words.as_deref(), Some("out of credit"));
    }

    #[test]
    fn a_json_error_message_is_preferred_over_the_raw_line() {
        let body = r#"{"error": {"message": "balance is zero", "code": 7}}"#;
        assert_eq!(words(body).as_deref(), Some("balance is zero"));
        let problem = r#"{"type": "about:blank", "title": "Payment Required", "detail": "top up"}"#;
        assert_eq!(words(problem).as_deref(), Some("Payment Required: top up"));
    }

    #[test]
    fn the_sentence_beside_a_string_error_is_the_words_with_the_code() {
        for (body, said) in [
            (
                r#"{"error": "invalid_token", "error_description": "The access token expired"}"#,
                "The access token expired (invalid_token)",
            ),
            (
                r#"{"error": "SyntaxError", "message": "Unexpected token } in JSON at position 12"}"#,
                "Unexpected token } in JSON at position 12 (SyntaxError)",
            ),
            (r#"{"error": "quota exceeded"}"#, "quota exceeded"),
        ] {
            assert_eq!(words(body).as_deref(), Some(said), "{body}");
        }
    }

    #[test]
    fn an_html_page_yields_its_title() {
        let page = "<!DOCTYPE html><html><head><title>502 Bad Gateway &amp; more</title></head><body><h1>502</h1></body></html>";
        assert_eq!(words(page).as_deref(), Some("502 Bad Gateway & more"));
    }

    #[test]
    fn an_html_page_without_a_title_yields_its_first_text() {
        let page = "<html><head><style>h1 { color: red }</style><script>var x = 1;</script></head>\n<body>\n<h1>Payment required</h1><p>Top up.</p></body></html>";
        assert_eq!(words(page).as_deref(), Some("Payment required"));
    }

    #[test]
    fn broken_html_yields_the_text_it_has_else_its_first_line() {
        for (page, text) in [
            ("<html>é<", Some("é")),
            ("<html><title>🦀", Some("🦀")),
            ("<html><title></title><p>after</p>", Some("after")),
            ("<html><title>", None),
            ("<html><script>", None),
            ("<html", None),
        ] {
            assert_eq!(html_text(page).as_deref(), text, "{page:?}");
            // A page with no text is quoted as its first line, markup and
            // all: the engine said that, and nothing else.
            assert_eq!(
                words(page).as_deref(),
                Some(text.unwrap_or(page)),
                "{page:?}"
            );
        }
    }

    #[test]
    fn control_characters_become_spaces() {
        assert_eq!(words("bad\x1b[31m red").as_deref(), Some("bad [31m red"));
    }

    #[test]
    fn codes_are_read_most_specific_first() {
        for (body, expected) in [
            (
                r#"{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}"#,
                &["insufficient_quota", "insufficient_quota"][..],
            ),
            (
                r#"{"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}"#,
                &["API_KEY_INVALID", "INVALID_ARGUMENT"][..],
            ),
            (
                r#"{"type": "error", "error": {"type": "rate_limit_error", "details": {"error_code": "enforced_spend_limit_reached"}}}"#,
                &["enforced_spend_limit_reached", "rate_limit_error", "error"][..],
            ),
            (
                r#"{"type": "https://engine.example/problems/insufficient-credit", "title": "no credit"}"#,
                &["https://engine.example/problems/insufficient-credit"][..],
            ),
            (
                r#"{"error": "Model is overloaded", "error_type": "overloaded"}"#,
                &["overloaded", "Model is overloaded"][..],
            ),
            ("insufficient_quota", &[][..]),
            ("<html>insufficient_quota</html>", &[][..]),
            ("{not json", &[][..]),
        ] {
            assert_eq!(codes(body), expected, "{body}");
        }
    }

    #[test]
    fn a_problem_type_is_read_by_its_last_segment() {
        assert_eq!(
            last_segment("https://x.example/p/insufficient-credit/"),
            "insufficient-credit"
        );
        assert_eq!(last_segment("rate_limit_error"), "rate_limit_error");
    }

    #[test]
    fn an_x402_body_says_its_version() {
        assert!(speaks_x402(
            r#"{"x402Version": 1, "error": "X-PAYMENT header is required", "accepts": []}"#
        ));
        assert!(!speaks_x402(r#"{"error": {"message": "no credit"}}"#));
    }

    #[test]
    fn an_empty_body_has_no_words() {
        assert_eq!(words("  \n \n"), None);
    }
}
