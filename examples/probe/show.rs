//! Prose for a person: colour when stdout is a terminal, words that fit.
//!
//! Everything shown here is already concealed by the library; this module
//! only lays it out. It never truncates what `--json` prints, and it tames
//! control characters in engine text, because an answer is whatever the
//! engine sent and an escape sequence in it could drive the reader's
//! terminal.

use std::io::IsTerminal;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use meterwire::{Answer, Cause, Refusal, Usage};

/// How much of an answer prose shows; `--json` carries it whole.
const ANSWER_SHOWN: usize = 2_000;

/// Whether to colour stdout.
pub struct Style {
    colour: bool,
}

impl Style {
    /// Colour only on a terminal, and never when `NO_COLOR` is set to
    /// anything non-empty (<https://no-color.org>).
    pub fn for_stdout() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        Style {
            colour: std::io::stdout().is_terminal() && !no_color,
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    pub fn good(&self, text: &str) -> String {
        self.paint("1;32", text)
    }

    pub fn bad(&self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// A cause in its own colour, so a column of them reads at a glance.
    pub fn cause(&self, cause: Cause, text: &str) -> String {
        let code = match cause {
            Cause::NoEngine => "1;35",
            Cause::EngineUnreachable => "1;31",
            Cause::EngineOutOfCredit => "1;33",
            Cause::EngineOverQuota => "1;36",
        };
        self.paint(code, text)
    }
}

pub fn print_answer(answer: &Answer, elapsed_ms: u64, style: &Style) {
    let attempts = match answer.attempts() {
        1 => String::new(),
        n => format!(" after {n} attempts"),
    };
    out!(
        "{}  HTTP {} in {elapsed_ms} ms{attempts}",
        style.good("answer"),
        answer.status()
    );
    if let Some(usage) = answer.usage() {
        out!("  {}  {}", style.bold("usage"), usage_words(&usage));
    }
    let text = answer.text();
    let shown = cut_whole(text, ANSWER_SHOWN);
    out!("{}", tame(shown, false));
    if shown.len() < text.len() {
        let more = text.len() - shown.len();
        out!(
            "{}",
            style.dim(&format!("… {more} more bytes (--json prints it whole)"))
        );
    }
}

/// A remedy in the probe's words: where the library names the builder
/// method that raises a timer, the probe names its own flag.
pub fn in_probe_words(remedy: &str) -> String {
    [
        (
            "HttpTransportBuilder::deadline or Call::deadline",
            "--timeout-ms",
        ),
        (
            "HttpTransportBuilder::idle_timeout or Call::idle_timeout",
            "--idle-ms",
        ),
        (
            "HttpTransportBuilder::stream_deadline or Call::stream_deadline",
            "--stream-deadline-ms",
        ),
    ]
    .iter()
    .fold(remedy.to_owned(), |remedy, (method, flag)| {
        remedy.replace(method, flag)
    })
}

pub fn print_refusal(refusal: &Refusal, style: &Style) {
    let cause = refusal.cause();
    out!(
        "{}  {}",
        style.cause(cause, cause.as_str()),
        style.dim(&format!("(a refusal: {})", meaning(cause)))
    );
    out!("  {}  {}", style.bold("reason"), refusal.reason());
    out!(
        "  {}  {}",
        style.bold("remedy"),
        in_probe_words(refusal.remedy())
    );
    if let Some(source) = refusal.variable() {
        out!("  {}  {source}", style.bold("source"));
    }
    if let Some(delay) = refusal.retry_after() {
        let at = match clock_after(SystemTime::now(), delay) {
            Some(clock) => format!("at {clock} UTC"),
            None => "past any date a calendar shows".to_owned(),
        };
        out!(
            "  {}   in {} ({at})",
            style.bold("retry"),
            human_delay(delay)
        );
    }
    if let Some(id) = refusal.request_id() {
        out!("  {}  {id}", style.bold("request id"));
    }
    out!(
        "  {}  {}",
        style.bold("attempts"),
        match refusal.attempts() {
            0 => "0 (nothing was sent)".to_owned(),
            n => n.to_string(),
        }
    );
}

/// What the engine billed, in words: `1117 in (1024 cached) · 46 out (12
/// reasoning) · 1163 in all`, each part only when the engine said it.
pub fn usage_words(usage: &Usage) -> String {
    let part = |count: Option<u64>, what: &str, of: Option<u64>, of_what: &str| {
        count.map(|count| match of {
            Some(of) => format!("{count} {what} ({of} {of_what})"),
            None => format!("{count} {what}"),
        })
    };
    let parts: Vec<String> = [
        part(usage.input(), "in", usage.cached(), "cached"),
        part(usage.output(), "out", usage.reasoning(), "reasoning"),
        usage.total().map(|total| format!("{total} in all")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        // Only a cached or a reasoning count, with no input or output.
        let part = |count: Option<u64>, what: &str| count.map(|count| format!("{count} {what}"));
        let parts: Vec<String> = [
            part(usage.cached(), "cached"),
            part(usage.reasoning(), "reasoning"),
        ]
        .into_iter()
        .flatten()
        .collect();
        return parts.join(" · ");
    }
    parts.join(" · ")
}

/// A delay as a person reads it: `800 ms`, `30 s`, `15 min`, `2 h 5 min`.
pub fn human_delay(delay: Duration) -> String {
    let secs = delay.as_secs();
    match secs {
        0 => format!("{} ms", delay.subsec_millis()),
        1..60 if delay.subsec_millis() != 0 => format!("{:.1} s", delay.as_secs_f64()),
        1..60 => format!("{secs} s"),
        60..3600 if secs.is_multiple_of(60) => format!("{} min", secs / 60),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        3600..86400 => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
        _ => format!("{} d {} h", secs / 86400, secs % 86400 / 3600),
    }
}

/// The UTC wall-clock time `delay` after `now`, as `HH:MM` (with the date
/// when it is not today); `None` past the year 9999, which no HTTP date
/// can name (an engine can ask for any number of seconds).
pub fn clock_after(now: SystemTime, delay: Duration) -> Option<String> {
    const YEAR_10000: Duration = Duration::from_secs(253_402_300_800);
    let at = now.checked_add(delay)?;
    if at.duration_since(UNIX_EPOCH).unwrap_or_default() >= YEAR_10000 {
        return None;
    }
    let secs_at = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let secs_now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let clock = format!("{:02}:{:02}", secs_at % 86_400 / 3600, secs_at % 3600 / 60);
    if secs_at / 86_400 == secs_now / 86_400 {
        Some(clock)
    } else {
        // `Sun, 29 Nov 2026 07:28:00 GMT` → `Sun, 29 Nov 2026 07:28`.
        let date = httpdate::fmt_http_date(at);
        Some(
            date.get(..date.len().saturating_sub(7))
                .unwrap_or(&date)
                .to_owned(),
        )
    }
}

/// What a cause asks of the operator, in a few words.
pub fn meaning(cause: Cause) -> &'static str {
    match cause {
        Cause::NoEngine => "set a variable",
        Cause::EngineUnreachable => "the engine did not answer; see the remedy",
        Cause::EngineOutOfCredit => "fund the account",
        Cause::EngineOverQuota => "wait for the window",
    }
}

/// Control characters turned into spaces rather than obeyed, as the
/// library tames engine text; line breaks kept unless `one_line`. Never
/// into escapes: a raw CR written as `\r` beside a JSON `\n` would make a
/// hard-wrapped form of the token the concealer never saw.
pub fn tame(text: &str, one_line: bool) -> String {
    if one_line {
        return tame_line(text);
    }
    let lines: Vec<_> = text.split('\n').map(tame_line).collect();
    lines.join("\n")
}

/// One line with every control character (a line break, an escape, NUL)
/// turned into a space.
fn tame_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `text` cut to at most `max_chars` characters, at a character boundary.
fn bound(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `text` cut to at most `max_chars` characters, never inside an escape:
/// cut to `&#65`, an answer's `&#655;` would read as `A` to an HTML reader,
/// and the echo before it as the token the library concealed. An escape
/// the cut may have broken (a `&`, `%` or `\` followed to the end by
/// nothing but letters, digits, `#` and braces) is dropped whole, until
/// none is. Written here, not taken from the library, because the probe
/// uses only the library's public API; it drops more than it must at
/// times (a complete `%41` at the end), never less.
fn cut_whole(text: &str, max_chars: usize) -> &str {
    let mut kept = bound(text, max_chars);
    if kept.len() == text.len() {
        return kept;
    }
    // The longest escape a lenient reader may decode without its end.
    const LONGEST: usize = 40;
    while let Some(at) = kept.rfind(['&', '%', '\\']) {
        let body = &kept[at + 1..];
        let broken = kept.len() - at <= LONGEST
            && body
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '#' | '{' | '}'));
        if !broken {
            break;
        }
        kept = &kept[..at];
    }
    kept
}

/// `text` broken at spaces into lines of at most `width` characters (a word
/// longer than that is split), and at most `max_lines` of them: the last one
/// kept ends in `…` when some were left out.
pub fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut line_chars = 0;
    for word in text.split(' ').filter(|word| !word.is_empty()) {
        let mut word = word;
        loop {
            let word_chars = word.chars().count();
            let gap = usize::from(line_chars > 0);
            if line_chars + gap + word_chars <= width {
                if gap == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                line_chars += gap + word_chars;
                break;
            }
            if line_chars > 0 {
                lines.push(std::mem::take(&mut line));
                line_chars = 0;
                continue;
            }
            // A word wider than the whole line: split it.
            let head = bound(word, width);
            lines.push(head.to_owned());
            word = &word[head.len()..];
            if word.is_empty() {
                break;
            }
        }
    }
    if line_chars > 0 {
        lines.push(line);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            let kept = bound(last, width.saturating_sub(2)).trim_end();
            *last = format!("{kept} …");
        }
    }
    lines
}

/// `text` padded with spaces to `width` characters (never cut).
pub fn pad(text: &str, width: usize) -> String {
    format!("{text:<width$}")
}
