//! Bounds, taming and phrases: how any text the crate quotes is kept short
//! and inert, and how a delay reads.
//!
//! Private to the crate and used by every module that quotes outside text.
//! Bounds count characters, never bytes, so a cut always falls on a
//! character boundary; taming turns control characters into spaces, so a
//! quoted line cannot move a terminal's cursor or forge a log line.

use std::borrow::Cow;

/// The shapes of escapes, which the bound must not cut and the concealer's
/// decoders read: kept in one place for both.
pub(crate) mod syntax;

/// Text from bytes that arrive in pieces, a character cut between two
/// pieces read as one.
pub(crate) mod utf8;

/// `text` cut to at most `max_chars` characters.
pub(crate) fn bound(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `text` cut to at most `max_chars` characters, never inside an escape
/// sequence: a cut `\u00`, `%4` or `&#65` is read by lenient decoders as a
/// different character than the whole escape was, which could complete a
/// secret the concealer saw no trace of. An escape the cut would break is
/// dropped whole. Every bound on concealed outside text is this one.
pub(crate) fn bound_whole(text: &str, max_chars: usize) -> &str {
    let mut kept = bound(text, max_chars);
    if kept.len() == text.len() {
        return kept;
    }
    // Dropping an escape can leave another one broken at the new end (`\&`
    // and `amp` cut after the `a`: dropping `&a` leaves `\`), so cut until
    // none is. Each cut shortens the text, and each look is bounded.
    while let Some(at) = broken_escape(kept.as_bytes()) {
        // `at` is an ASCII byte, so a character boundary.
        kept = &kept[..at];
    }
    kept
}

/// Where the escape that the end of `bytes` cuts in two starts, if one is:
/// read with the escape syntax the concealer's decoders read.
fn broken_escape(bytes: &[u8]) -> Option<usize> {
    syntax::broken_escape(bytes)
}

/// `text` with every control character (line breaks, escapes, NUL) turned
/// into a space.
pub(crate) fn tame(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_control) {
        Cow::Owned(
            text.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

/// `15 s`, `1.500 s`, `15 min`, `2 h 5 min`: a delay as a reason or remedy
/// states it when there is no header value "as sent" to echo.
pub(crate) fn seconds_phrase(delay: std::time::Duration) -> String {
    let secs = delay.as_secs();
    match secs {
        0..60 if delay.subsec_millis() != 0 => format!("{:.3} s", delay.as_secs_f64()),
        0..60 => format!("{secs} s"),
        60..3600 if secs.is_multiple_of(60) => format!("{} min", secs / 60),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_counts_characters_not_bytes() {
        assert_eq!(bound("héllo", 2), "hé");
        assert_eq!(bound("🦀🦀🦀", 1), "🦀");
        assert_eq!(bound("short", 64), "short");
        assert_eq!(bound("", 0), "");
    }

    #[test]
    fn a_bound_cuts_only_between_characters() {
        for (max, kept) in [
            (0, ""),
            (2, "aé"),
            (3, "aé日"),
            (4, "aé日😀"),
            (5, "aé日😀b"),
            (99, "aé日😀b"),
        ] {
            assert_eq!(bound("aé日😀b", max), kept);
        }
    }

    #[test]
    fn concealing_before_bounding_leaves_no_half_token() {
        let concealer = crate::Concealer::new(["sk-test-0123456789abcdef"]);
        let text = "error: sk-test-0123456789abcdef was refused";
        assert_eq!(bound(&concealer.conceal(text), 20), "error: [redacted] wa");
        assert_eq!(
            bound(text, 20),
            "error: sk-test-01234",
            "the cut a bound first would make"
        );
    }

    #[test]
    fn a_whole_bound_never_cuts_inside_an_escape() {
        for (text, max, kept) in [
            ("abc&#655;def", 7, "abc"),
            ("abc&#655;def", 9, "abc&#655;"),
            ("abc&amp;def", 6, "abc"),
            ("abc\\u0041def", 7, "abc"),
            ("abc\\u0041def", 9, "abc\\u0041"),
            ("abc\\x41def", 5, "abc"),
            ("abc%41def", 5, "abc"),
            ("abc%41def", 6, "abc%41"),
            ("abc\\", 4, "abc\\"),
            ("ab\\\\cd", 4, "ab\\\\"),
            ("ab\\\\cd", 3, "ab"),
            ("ab\\\\\\u0041", 7, "ab\\\\"),
            ("abc\\ndef", 4, "abc"),
            ("a & b and more", 4, "a & "),
            ("plain text here", 5, "plain"),
            ("short", 99, "short"),
        ] {
            assert_eq!(bound_whole(text, max), kept, "{text:?} at {max}");
        }
    }

    /// Found by the `words` fuzz target: a cut right after an escaped
    /// backslash (`\\`) took its second half for a backslash that starts an
    /// escape, and kept a lone `\`.
    #[test]
    fn a_whole_bound_keeps_an_escaped_backslash_whole() {
        let text =
            "0%\u{fffd}1<22 &amp; \\\\1u70\x181%?4</hea &amp; \\\\1u70\x181%?4</head></htMl>";
        assert_eq!(bound_whole(text, 16), "0%\u{fffd}1<22 &amp; \\\\");
        assert_eq!(bound_whole(text, 15), "0%\u{fffd}1<22 &amp; ");
    }

    /// Found by the `words` fuzz target: the cut broke `&heap`, and dropping
    /// it left the `\` of the `\&` before it alone at the end.
    #[test]
    fn a_whole_bound_leaves_no_escape_broken_by_its_own_cut() {
        let text = "2\u{1}\0b \0;2 &amp; \\&heap\u{fffd}\u{fffd}\u{fffd}\u{fffd} \u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\\&heap\u{fffd};";
        let kept = bound_whole(text, 53);
        assert!(!kept.ends_with('\\'), "{kept:?}");
        assert_eq!(kept.chars().count(), 47);
        assert_eq!(bound_whole("ab\\&amp;cd", 4), "ab");
    }

    #[test]
    fn a_delay_reads_in_the_largest_unit_that_keeps_it_exact() {
        use std::time::Duration;
        assert_eq!(seconds_phrase(Duration::from_secs(15)), "15 s");
        assert_eq!(seconds_phrase(Duration::from_millis(1500)), "1.500 s");
        assert_eq!(seconds_phrase(Duration::from_secs(900)), "15 min");
        assert_eq!(seconds_phrase(Duration::from_secs(905)), "15 min 5 s");
        assert_eq!(seconds_phrase(Duration::from_secs(7500)), "2 h 5 min");
        assert!(seconds_phrase(Duration::MAX).ends_with(" min"));
    }

    #[test]
    fn control_characters_become_spaces() {
        assert_eq!(tame("a\nb\x1b[31mc\0"), "a b [31mc ");
        assert!(matches!(tame("plain"), Cow::Borrowed("plain")));
    }
}
