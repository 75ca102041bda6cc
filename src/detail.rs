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

use crate::Concealer;
use crate::conceal::bound;

/// How much of an error body is ever read: enough for any error message,
/// far less than a page that should never have been sent.
pub(crate) const DETAIL_READ_LIMIT: usize = 64 * 1024;

/// How many characters of the engine's words a reason quotes.
pub(crate) const WORDS_LIMIT: usize = 200;

/// The line an error body's reader should see, scrubbed and bounded; `None`
/// when the body says nothing.
pub(crate) fn engine_words(body: &[u8], concealer: &Concealer) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let line = json_message(&text).unwrap_or_else(|| first_line(&text).to_owned());
    let line = tame(&line);
    let scrubbed = concealer.scrub(&line);
    let words = bound(scrubbed.trim(), WORDS_LIMIT).trim_end();
    (!words.is_empty()).then(|| words.to_owned())
}

/// Scrubs and bounds one short piece of engine text that is not a body: a
/// header value echoed in a reason.
pub(crate) fn engine_value(value: &[u8], concealer: &Concealer, limit: usize) -> String {
    let text = tame(&String::from_utf8_lossy(value));
    let scrubbed = concealer.scrub(&text);
    bound(scrubbed.trim(), limit).trim_end().to_owned()
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// The message of the common JSON error shapes: RFC 9457 problem details
/// (`title`, `detail`), `{"error": {"message": …}}`, `{"error": "…"}`,
/// `{"message": …}`, `{"detail": …}`.
fn json_message(text: &str) -> Option<String> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(trimmed).ok()?;
    let text_at = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    if let Some(error) = value.get("error") {
        if let Some(message) = text_at(error, "message") {
            return Some(message);
        }
        if let Some(message) = error.as_str().filter(|s| !s.trim().is_empty()) {
            return Some(message.trim().to_owned());
        }
    }
    match (text_at(&value, "title"), text_at(&value, "detail")) {
        (Some(title), Some(detail)) => return Some(format!("{title}: {detail}")),
        (None, Some(detail)) => return Some(detail),
        _ => {}
    }
    text_at(&value, "message").or_else(|| text_at(&value, "title"))
}

/// Control characters (line breaks, escapes, NUL) become spaces.
fn tame(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_non_empty_line_is_the_words() {
        let words = engine_words(b"\n\n  out of credit  \nsecond line", &Concealer::new([]));
        assert_eq!(words.as_deref(), Some("out of credit"));
    }

    #[test]
    fn a_json_error_message_is_preferred_over_the_raw_line() {
        let concealer = Concealer::new([]);
        let body = br#"{"error": {"message": "balance is zero", "code": 7}}"#;
        assert_eq!(
            engine_words(body, &concealer).as_deref(),
            Some("balance is zero")
        );
        let problem =
            br#"{"type": "about:blank", "title": "Payment Required", "detail": "top up"}"#;
        assert_eq!(
            engine_words(problem, &concealer).as_deref(),
            Some("Payment Required: top up")
        );
    }

    #[test]
    fn control_characters_become_spaces() {
        let words = engine_words(b"bad\x1b[31m red", &Concealer::new([]));
        assert_eq!(words.as_deref(), Some("bad [31m red"));
    }

    #[test]
    fn an_empty_body_has_no_words() {
        assert_eq!(engine_words(b"  \n \n", &Concealer::new([])), None);
    }
}
