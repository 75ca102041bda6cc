//! placeholder (replaced by the real concealer)
#![allow(missing_docs)]
use crate::Env;
use std::borrow::Cow;
pub const REDACTED: &str = "[redacted]";
#[derive(Clone, Debug)]
pub struct Concealer(Vec<String>);
impl Concealer {
    pub fn new<'a>(s: impl IntoIterator<Item = &'a str>) -> Concealer {
        Concealer(
            s.into_iter()
                .filter(|s| s.len() >= 4)
                .map(str::to_owned)
                .collect(),
        )
    }
    pub fn with_env<'a>(s: impl IntoIterator<Item = &'a str>, _env: &Env) -> Concealer {
        Concealer::new(s)
    }
    pub fn conceal<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut t = text.to_owned();
        for s in &self.0 {
            t = t.replace(s.as_str(), REDACTED);
        }
        Cow::Owned(t)
    }
    pub fn scrub(&self, text: &str) -> String {
        self.conceal(text).into_owned()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
pub fn bound(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
pub(crate) fn is_credential_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase().replace('-', "_");
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "PRIVATE_KEY",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
        "SESSION_KEY",
        "AUTH",
    ]
    .iter()
    .any(|k| n.contains(k))
}
