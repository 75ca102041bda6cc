//! Every form an echo of a token can take, and the checks that none of them
//! survives in what the crate printed (the README's security properties).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use meterwire::{REDACTED, Refusal};

/// A token with `+`, `/`, `_` and `-`: its two base64 alphabets differ, and
/// its JSON form (PHP's `\/`, .NET's `\u002B`) differs from it.
pub const MIXED_TOKEN: &str = "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN";

/// Line breaks as engines write them: raw, and JSON-escaped.
pub const BREAKS: [&str; 4] = ["\n", "\r\n", r"\n", r"\r\n"];

/// Line breaks written in the other escapings the concealer reads, and
/// half raw, half escaped: each is one break to some reader.
pub const ESCAPED_BREAKS: [&str; 12] = [
    r"\u000a",
    r"\u000A",
    r"\u000d\u000a",
    "%0A",
    "%0d%0a",
    "&#10;",
    "&#xA;",
    "&#13;&#10;",
    "&NewLine;",
    "\r\\n",
    "\\r\n",
    "\r%0A",
];

/// `encoded` broken into lines of `width` bytes (at least 1) by
/// `line_break`, as MIME (76) and PEM (64) wrap base64. `encoded` is ASCII.
pub fn wrap(encoded: &str, width: usize, line_break: &str) -> String {
    let lines: Vec<&str> = encoded
        .as_bytes()
        .chunks(width.max(1))
        .map(|line| std::str::from_utf8(line).unwrap_or_default())
        .collect();
    lines.join(line_break)
}

/// The body of the JSON string `text` becomes, as serde_json writes it
/// (without the quotes).
pub fn json(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
}

/// [`json`] with `/` and `+` escaped too, as PHP and .NET write them.
pub fn json_php(text: &str) -> String {
    json(text).replace('/', r"\/").replace('+', r"\u002B")
}

/// `c` as JSON writes it with `\uXXXX`: one escape per UTF-16 unit, so a
/// character outside the BMP becomes a surrogate pair.
pub fn unicode_escape(c: char, upper: bool) -> String {
    let mut units = [0u16; 2];
    c.encode_utf16(&mut units)
        .iter()
        .map(|u| {
            if upper {
                format!("\\u{u:04X}")
            } else {
                format!("\\u{u:04x}")
            }
        })
        .collect()
}

fn json_escape_every_char(token: &str, upper: bool) -> String {
    token.chars().map(|c| unicode_escape(c, upper)).collect()
}

/// The escaping a JSON encoder applies, configurable per character class.
fn json_escape_some(token: &str, slash: bool, html: bool, plus: bool) -> String {
    let mut out = String::new();
    for c in token.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if slash => out.push_str("\\/"),
            '<' | '>' | '&' | '\'' if html => out.push_str(&format!("\\u{:04x}", c as u32)),
            '+' if plus => out.push_str("\\u002B"),
            _ => out.push(c),
        }
    }
    out
}

fn percent_every_byte(token: &str, upper: bool) -> String {
    token
        .bytes()
        .map(|b| {
            if upper {
                format!("%{b:02X}")
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

/// What `encodeURIComponent` does: unreserved characters stay literal.
fn percent_component(token: &str) -> String {
    token
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn html_decimal(token: &str) -> String {
    token.chars().map(|c| format!("&#{};", c as u32)).collect()
}

fn html_hex(token: &str, upper: bool) -> String {
    token
        .chars()
        .map(|c| {
            if upper {
                format!("&#X{:X};", c as u32)
            } else {
                format!("&#x{:x};", c as u32)
            }
        })
        .collect()
}

fn html_named(token: &str) -> String {
    let mut out = String::new();
    for c in token.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Half the characters JSON-escaped, half percent-encoded: one occurrence,
/// two families.
fn mixture(token: &str) -> String {
    token
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                format!("\\u{:04X}", c as u32)
            } else {
                format!("%{:02x}", c as u32)
            }
        })
        .collect()
}

/// Every form of the token an echo can take, named for failure messages.
pub fn forms(token: &str) -> Vec<(String, String)> {
    let forms: Vec<(&str, String)> = vec![
        ("raw", token.to_owned()),
        (
            "json as serde writes it",
            json_escape_some(token, false, false, false),
        ),
        (
            "json, PHP style",
            json_escape_some(token, true, false, false),
        ),
        (
            "json, Go style",
            json_escape_some(token, false, true, false),
        ),
        (".NET style", json_escape_some(token, false, true, true)),
        (
            "json, every char, upper hex",
            json_escape_every_char(token, true),
        ),
        (
            "json, every char, lower hex",
            json_escape_every_char(token, false),
        ),
        (
            "percent, every byte, upper",
            percent_every_byte(token, true),
        ),
        (
            "percent, every byte, lower",
            percent_every_byte(token, false),
        ),
        ("percent, component", percent_component(token)),
        ("html decimal", html_decimal(token)),
        ("html hex lower", html_hex(token, false)),
        ("html hex upper", html_hex(token, true)),
        ("html named", html_named(token)),
        ("json and percent mixed", mixture(token)),
    ];
    let mut base64_forms = Vec::new();
    for (prefix_name, prefix) in [
        ("", ""),
        ("Bearer ", "Bearer "),
        ("user:", "user:"),
        ("x", "x"),
        ("xy", "xy"),
    ] {
        let plain = format!("{prefix}{token}");
        for (kind, encoded) in [
            ("base64", STANDARD.encode(&plain)),
            ("base64 unpadded", STANDARD_NO_PAD.encode(&plain)),
            ("base64url", URL_SAFE.encode(&plain)),
            ("base64url unpadded", URL_SAFE_NO_PAD.encode(&plain)),
        ] {
            base64_forms.push((format!("{kind} of {prefix_name:?}+token"), encoded));
        }
    }
    forms
        .into_iter()
        .map(|(name, form)| (name.to_owned(), form))
        .chain(base64_forms)
        .collect()
}

/// What `form`, an echo of `token`, becomes when concealed: one marker;
/// or, for base64 (wrapped or not) of data that holds the token, the data's
/// base64 with the characters that carry the token's bits (and the padding
/// right after them) replaced by one marker each, and the characters of
/// what precedes and follows it (`Bearer `, `user:`), which carry none of
/// them, kept (base64 is concealed from the first to the last character
/// that carries the secret's bits).
pub fn concealed(form: &str, token: &str) -> String {
    // The base64 characters of the form, with where each stands in it: a
    // wrapped form has line breaks between them, raw or JSON-escaped.
    let bytes = form.as_bytes();
    let mut chars: Vec<(usize, u8)> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match &bytes[at..] {
            [b'\\', b'n' | b'r', ..] => at += 2,
            [b'\n' | b'\r', ..] => at += 1,
            [b, ..] => {
                chars.push((at, *b));
                at += 1;
            }
            [] => break,
        }
    }
    let bare: Vec<u8> = chars.iter().map(|&(_, b)| b).collect();
    let data_chars = bare.iter().take_while(|&&b| b != b'=').count();
    for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
        let Ok(data) = engine.decode(&bare) else {
            continue;
        };
        let hits: Vec<(usize, usize)> = (0..data.len())
            .filter(|&p| data[p..].starts_with(token.as_bytes()))
            .map(|p| (p * 8 / 6, ((p + token.len()) * 8).div_ceil(6)))
            .collect();
        if hits.is_empty() {
            continue;
        }
        let mut out = String::new();
        let mut kept_from = 0;
        let mut last_end = 0;
        for (first, end) in hits {
            // Overlapping or touching spans are one marker.
            if last_end > 0 && chars[first].0 <= chars[last_end - 1].0 + 1 {
                last_end = last_end.max(end);
                continue;
            }
            if last_end > 0 {
                kept_from = chars[last_end - 1].0 + 1;
            }
            out.push_str(&form[kept_from..chars[first].0]);
            out.push_str(REDACTED);
            last_end = end;
        }
        if last_end < data_chars {
            out.push_str(&form[chars[last_end - 1].0 + 1..]);
        }
        return out;
    }
    REDACTED.to_owned()
}

/// Fails naming the form when `text` holds any form of the token, or the
/// token's base64 core (what survives of an encoded token wherever it sat).
#[track_caller]
pub fn assert_no_form(token: &str, what: &str, text: &str) {
    for (name, form) in forms(token) {
        assert!(
            !text.contains(&form),
            "{what} holds the token as {name}:\n{text}"
        );
    }
    for core in [STANDARD_NO_PAD.encode(token), URL_SAFE_NO_PAD.encode(token)] {
        let core = &core[..core.len() - 2];
        assert!(
            !text.contains(core),
            "{what} holds the token's base64 core:\n{text}"
        );
    }
}

#[track_caller]
pub fn assert_refusal_clean(token: &str, context: &str, refusal: &Refusal) {
    assert_no_form(token, &format!("{context}: reason"), refusal.reason());
    assert_no_form(token, &format!("{context}: remedy"), refusal.remedy());
    assert_no_form(token, &format!("{context}: Display"), &refusal.to_string());
    assert_no_form(token, &format!("{context}: Debug"), &format!("{refusal:?}"));
    assert_no_form(
        token,
        &format!("{context}: report"),
        &refusal.report().to_json(),
    );
}

/// The other half of a leak check: the echo did reach `text`, as the
/// marker. Without it, an output that dropped the engine's words altogether
/// would pass every check that the token is absent.
#[track_caller]
pub fn assert_echo_redacted(what: &str, text: &str) {
    assert!(
        text.contains(REDACTED),
        "{what} does not show the echo as {REDACTED}:\n{text}"
    );
}

/// [`assert_echo_redacted`] for every output of a refusal whose reason quotes
/// the echo: the reason, `Display`, `Debug` and the report. (The remedy
/// quotes the engine only in a few places; the tests that reach one check it
/// themselves.)
#[track_caller]
pub fn assert_refusal_echo_redacted(context: &str, refusal: &Refusal) {
    assert_echo_redacted(&format!("{context}: reason"), refusal.reason());
    assert_echo_redacted(&format!("{context}: Display"), &refusal.to_string());
    assert_echo_redacted(&format!("{context}: Debug"), &format!("{refusal:?}"));
    assert_echo_redacted(&format!("{context}: report"), &refusal.report().to_json());
}

/// The base64 cores of `token`, computed here and not by the crate: at
/// each alignment (0, 1 or 2 bytes of a 3-byte group before it), in both
/// alphabets, the characters of its encoding that no byte around it
/// changes, from the first that carries only its bits to the last.
pub fn cores(token: &str) -> Vec<String> {
    let mut cores = Vec::new();
    for align in 0..3 {
        let mut data = vec![0u8; align];
        data.extend_from_slice(token.as_bytes());
        // The first character after the bytes before the token that holds
        // none of their bits, and the last that holds none of what follows.
        let head = [0, 2, 3][align];
        let tail = 4 * (data.len() / 3) + [0, 1, 2][data.len() % 3];
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            let core = engine.encode(&data)[head..tail].to_owned();
            if !cores.contains(&core) {
                cores.push(core);
            }
        }
    }
    cores
}

/// Every form an echo of `token` can take, named: [`forms`] (raw, each
/// JSON escaping, percent in both cases, each HTML reference, base64 and
/// base64url of the token behind prefixes that set each alignment, and of
/// `Bearer <token>`), each base64 core alone, the base64 of the token cut
/// short by up to three bytes at either end (five of them kept), base64
/// wrapped at MIME's and PEM's widths and a narrow one by every line
/// break, and the token hard-wrapped by every line break, raw or escaped.
pub fn every_form(token: &str) -> Vec<(String, String)> {
    let mut all = forms(token);
    for (at, core) in cores(token).into_iter().enumerate() {
        all.push((format!("base64 core {at} alone"), core));
    }
    // The base64 of an echo cut short: the token less up to one group of
    // three bytes at either end, alone (so at each alignment), as long as
    // five of its bytes remain.
    let bytes = token.as_bytes();
    for front in 0..=3 {
        for back in 0..=3 {
            let Some(cut) = bytes.get(front..bytes.len().saturating_sub(back)) else {
                continue;
            };
            if front + back == 0 || cut.len() < 5 {
                continue;
            }
            for (alphabet, encoded) in [
                ("base64", STANDARD_NO_PAD.encode(cut)),
                ("base64url", URL_SAFE_NO_PAD.encode(cut)),
            ] {
                all.push((
                    format!("{alphabet} of the token less {front} bytes before and {back} after"),
                    encoded,
                ));
            }
        }
    }
    let encoded = STANDARD.encode(format!("user:{token}"));
    for width in [76, 64, 10] {
        for line_break in BREAKS {
            all.push((
                format!("base64 wrapped at {width} by {line_break:?}"),
                wrap(&encoded, width, line_break),
            ));
        }
    }
    let (head, tail) = token.split_at(token.len() / 2);
    for line_break in BREAKS.iter().chain(&ESCAPED_BREAKS) {
        all.push((
            format!("token hard-wrapped by {line_break:?}"),
            format!("{head}{line_break}{tail}"),
        ));
    }
    all
}

/// Where an echo stands in what the engine wrote, named: alone, at the
/// start, at the end, inside a JSON string, and between base64 characters.
pub fn placed(form: &str) -> [(&'static str, String); 5] {
    [
        ("alone", form.to_owned()),
        ("at the start", format!("{form} was sent")),
        ("at the end", format!("the engine saw {form}")),
        ("inside a JSON string", format!("{{\"echo\": \"{form}\"}}")),
        ("between base64 characters", format!("QUJD{form}RUZH")),
    ]
}

/// Fails naming the form when `text` holds any of `forms` (as
/// [`every_form`] gives them) or the token's base64 prefix
/// [`assert_no_form`] looks for.
#[track_caller]
pub fn assert_none_of(forms: &[(String, String)], token: &str, what: &str, text: &str) {
    for (name, form) in forms {
        assert!(
            !text.contains(form.as_str()),
            "{what} holds the token as {name}:\n{text}"
        );
    }
    for core in [STANDARD_NO_PAD.encode(token), URL_SAFE_NO_PAD.encode(token)] {
        let core = &core[..core.len() - 2];
        assert!(
            !text.contains(core),
            "{what} holds the token's base64 core:\n{text}"
        );
    }
}
