//! The records both benches build their texts from, and the token they
//! echo: `benches/send.rs` serves them, `benches/conceal.rs` conceals them,
//! so the two measure the same answers.

/// Has `+` and `/`, so its JSON, percent, HTML and base64 forms all differ
/// from the raw token.
pub const TOKEN: &str = "mw_live_4f+Ab/9zQ7vX2kP9zR4tL8wN";

/// The token JSON-escaped as PHP escapes it, and with `\/` only: the forms
/// the generated text echoes, in turn.
pub const JSON_FORMS: [&str; 2] = [
    r"mw_live_4f\u002BAb\/9zQ7vX2kP9zR4tL8wN",
    r"mw_live_4f+Ab\/9zQ7vX2kP9zR4tL8wN",
];

/// JSON as an engine answers it, with none of `\ % &` and no token.
pub fn plain(i: usize) -> String {
    format!(
        r#"{{"id":{i},"word":"lorem","score":0.{:03},"tags":["alpha","beta"],"done":true}},"#,
        i % 1000
    )
}

/// A plain JSON record quoting `token` back, as an engine's error does.
pub fn echo(i: usize, token: &str) -> String {
    format!(r#"{{"id":{i},"error":"invalid token","token":"{token}"}},"#)
}

/// A record of generated text, its strings escaping newlines, quotes and
/// non-ASCII characters; with `echo`, it also quotes that form of the token.
pub fn generated(i: usize, echo: Option<&str>) -> String {
    let text = r#"The caf\u00e9 was warm.\nShe said \"stay\" \u2014 and he did."#;
    let score = i % 1000;
    match echo {
        None => format!(r#"{{"index":{i},"text":"{text}","score":0.{score:03}}},"#),
        Some(form) => format!(
            r#"{{"index":{i},"text":"{text}\nYour key {form} was refused.","score":0.{score:03}}},"#
        ),
    }
}

/// The form of the token generated record `i` echoes: every `every`th
/// record echoes one, the two JSON forms in turn.
pub fn generated_echo(i: usize, every: usize) -> Option<&'static str> {
    (i % every == every - 1).then(|| JSON_FORMS[i / every % 2])
}
