//! The concealer: the one place that keeps the bearer token out of every
//! string this crate produces.
//!
//! The engine is metered and bills whoever owns the token, so a token that
//! reaches a log line, an error message or a panic report is a bill anyone
//! can run up. Engines echo what they were sent, and echo it encoded:
//! JSON-escaped, percent-encoded, as HTML character references, inside
//! base64, often several layers at once. Searching for the token as itself
//! catches none of those, so every string that leaves the crate goes through
//! [`Concealer::conceal`], which decodes the text into [`views`] that remember
//! where each byte came from ([`maps`]), searches each view once for the
//! token, its hex and its base64 cores ([`patterns`], [`scan`](mod@scan)),
//! and conceals the source spans the hits map back to. [`escapes`] holds the
//! decoders (their shapes are read by the escape syntax beside `text.rs`'s
//! bound, which must cut no escape either), [`breaks`] the line breaks a
//! joined view drops, and [`shapes`] the credential shapes
//! [`Concealer::scrub`] also removes. Callers conceal before they bound a
//! string (`text.rs`): half a token no longer matches, but is still half a
//! secret. The concealer is local (whether a byte is concealed depends only
//! on the bytes near it), so a text arriving in pieces is concealed by a
//! [`stream::ConcealStream`] exactly as whole, piece by piece.
//!
//! What the crate may print is a [`Shown`], made only by the showing
//! methods and the `shown!` writer of [`shown`](mod@shown), which says how a reviewer
//! checks that no other text reaches a refusal, a span or a log line.
//!
//! Concealing is linear in the length of the text: the decoders read each
//! escape a bounded number of times, the views are decoded only around
//! the escapes that can matter and only where a hit fits, each view is
//! searched once by an automaton built in time linear in the secrets, and
//! the spans are merged once.

mod alike;
mod arch;
mod breaks;
pub(crate) mod escapes;
mod gate;
mod grams;
pub(crate) mod joined;
mod listed;
mod maps;
mod patterns;
mod positions;
mod reach;
mod scan;
mod shapes;
pub(crate) mod shown;
pub(crate) mod stream;
mod stretch;
mod survey;
mod views;
mod windows;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use secrecy::{ExposeSecret, SecretString};

#[cfg(any(test, fuzzing))]
use maps::{Raw, Window};
use patterns::{Matcher, compile};
#[cfg(any(test, fuzzing))]
use scan::scan;
use scan::{Spans, replace};
use shapes::scrub_shapes;
use stretch::{Buffers, conceal_stretch};
#[cfg(any(test, fuzzing))]
use stretch::{scan_joined, views_of};
#[cfg(any(test, fuzzing))]
use views::Holds;

pub(crate) use shown::{Concealed, Shown, Unshown, shown};

/// What every concealed secret, and every scrubbed credential, is replaced by.
///
/// ```
/// use meterwire::{Concealer, REDACTED};
///
/// let concealer = Concealer::new(["sk-test-0123456789abcdef"]);
/// assert_eq!(
///     concealer.conceal("token sk-test-0123456789abcdef here"),
///     format!("token {REDACTED} here"),
/// );
/// ```
pub const REDACTED: &str = "[redacted]";

/// Whether a variable or flag name marks its value as a credential: it
/// holds one of the credential markers, in any case, with `-` read as `_`
/// (so the flag `--api-key` counts like the variable `API_KEY`).
///
/// A name that ends in `_FILE` names a file, not a secret (the `_FILE`
/// twins of the token variables): its value is a path.
///
/// `AUTH` counts only as a whole word of the name (`BASIC_AUTH`,
/// `AUTH_HEADER`, `OAUTH_CODE`, `AUTHORIZATION`): as a bare substring it
/// would take `GIT_AUTHOR_NAME`, and every answer naming the author would
/// lose the name.
pub(crate) fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase().replace('-', "_");
    // `CHANT_BEHAVIOUR_TOKEN_FILE` holds a path, not a secret: the file's
    // content is concealed when it is read, and a refusal names the path.
    if name.ends_with("_FILE") {
        return false;
    }
    CREDENTIAL_MARKERS
        .iter()
        .any(|marker| name.contains(marker))
        || name
            .split('_')
            .any(|word| matches!(word, "AUTH" | "OAUTH" | "AUTHORIZATION"))
}

/// Shorter secrets are ignored: concealing them would blank ordinary words.
const MIN_SECRET_CHARS: usize = 4;

/// A value read from a credential-named variable must be at least this long:
/// such names also hold flags and modes (`AUTH_MODE=oidc`), which are not
/// secret and would otherwise blank common words.
const MIN_ENV_SECRET_CHARS: usize = 8;

/// A base64 core shorter than this matches ordinary text too often.
const MIN_CORE_LEN: usize = 4;

/// Substrings of a variable name that mark its value as a credential.
const CREDENTIAL_MARKERS: [&str; 10] = [
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
];

/// Finds configured secrets, in every encoded form, and replaces them with
/// [`REDACTED`].
///
/// Cloning is cheap: the compiled automaton is shared.
///
/// ```
/// use meterwire::Concealer;
///
/// let concealer = Concealer::new(["mw_live_4f+Ab/9z"]);
/// // As itself, JSON-escaped, and percent-encoded.
/// assert_eq!(concealer.conceal("a mw_live_4f+Ab/9z b"), "a [redacted] b");
/// assert_eq!(concealer.conceal(r#"{"t":"mw_live_4f\u002BAb\/9z"}"#), r#"{"t":"[redacted]"}"#);
/// assert_eq!(concealer.conceal("?t=mw_live_4f%2BAb%2F9z&x=1"), "?t=[redacted]&x=1");
/// ```
#[derive(Clone)]
pub struct Concealer {
    /// Shared by every clone, and swapped whole when the concealer learns
    /// a secret (a token file that rotated): a reader loads it without a
    /// lock, and every clone conceals every secret learned since.
    inner: Arc<ArcSwap<Inner>>,
}

/// What every clone of a concealer shares.
struct Inner {
    /// How many distinct secrets are concealed; all `Debug` may reveal.
    secrets: usize,
    matcher: Matcher,
    /// The secrets it was built with and those it learned since: kept for
    /// as long as it lives.
    sources: Vec<SecretString>,
    /// The tokens a file that rotates held last, which [`Concealer::hold`]
    /// replaces as a whole: a bounded set, however often the file rotates.
    held: Vec<SecretString>,
}

/// The secrets a concealer knew at one moment ([`Concealer::known`]), for
/// a reader that derives bounds from them to see when to derive them anew.
pub(crate) struct Known(Arc<Inner>);

impl PartialEq for Known {
    fn eq(&self, other: &Known) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Inner {
    fn build(sources: Vec<&str>, held: Vec<&str>) -> Inner {
        let mut secrets: Vec<&str> = sources.iter().chain(&held).copied().collect();
        secrets.sort_unstable();
        secrets.dedup();
        let matcher = if secrets.is_empty() {
            Matcher::Nothing
        } else {
            compile(&secrets)
        };
        let keep = |secrets: Vec<&str>| secrets.into_iter().map(SecretString::from).collect();
        Inner {
            secrets: secrets.len(),
            matcher,
            sources: keep(sources),
            held: keep(held),
        }
    }

    fn sources(&self) -> Vec<&str> {
        self.sources.iter().map(|s| s.expose_secret()).collect()
    }

    fn held(&self) -> Vec<&str> {
        self.held.iter().map(|s| s.expose_secret()).collect()
    }
}

/// The parts of each secret that are at least `min_chars` long: cut at
/// every blank line, or at every line break when `lines` says (a
/// variable's value, whose lines are trimmed too: the whitespace around
/// them is the file's or the shell's, not the secret's), and without line
/// breaks at either end.
///
/// No form of a secret may span a blank line, so that a stream can release
/// an event the moment its blank line arrives (`stream.rs`); nor begin or
/// end inside one. A value read from the environment that holds line breaks
/// (a PEM key) is concealed line by line, so each of its long lines is
/// concealed wherever it appears, in any form, together or apart; a secret
/// given in code keeps its single line breaks (`tab\there\nnew…`).
fn parts_of<'a>(
    secrets: impl IntoIterator<Item = &'a str>,
    min_chars: usize,
    lines: bool,
) -> impl Iterator<Item = &'a str> {
    let line_break = |c: char| matches!(c, '\n' | '\r');
    secrets
        .into_iter()
        .flat_map(move |secret| {
            let mut parts = Vec::new();
            let mut from = 0;
            let bytes = secret.as_bytes();
            for (at, &b) in bytes.iter().enumerate() {
                let next = bytes.get(at + 1).copied();
                let blank = matches!(
                    (b, next),
                    (b'\n', Some(b'\n' | b'\r')) | (b'\r', Some(b'\r'))
                ) || (b == b'\r'
                    && next == Some(b'\n')
                    && bytes.get(at + 2).is_some_and(|&c| c == b'\n' || c == b'\r'));
                if (lines && (b == b'\n' || b == b'\r')) || blank {
                    parts.push(secret.get(from..at).unwrap_or_default());
                    from = at + 1;
                }
            }
            parts.push(secret.get(from..).unwrap_or_default());
            parts
        })
        .map(move |part| {
            if lines {
                part.trim()
            } else {
                part.trim_matches(line_break)
            }
        })
        .filter(move |part| part.chars().count() >= min_chars)
}

impl Concealer {
    /// A concealer for these secrets. Each is concealed as itself and in
    /// every encoded form (see [`Concealer::conceal`]); a secret shorter than 4
    /// characters is ignored. A secret that holds a blank line is concealed
    /// as the parts between its blank lines (no form spans a blank line).
    ///
    /// ```
    /// use meterwire::Concealer;
    ///
    /// let concealer = Concealer::new(["sk-test-0123456789abcdef", "abc"]);
    /// assert_eq!(
    ///     concealer.conceal("key sk-test-0123456789abcdef, word abc"),
    ///     "key [redacted], word abc",
    /// );
    /// ```
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Concealer {
        Concealer::build(parts_of(secrets, MIN_SECRET_CHARS, false).collect())
    }

    /// As [`Concealer::new`], plus the value of every variable of
    /// `variables` whose name is credential-shaped ([`is_credential_name`])
    /// and whose value, trimmed, is at least 8 characters long, line by
    /// line: what `Concealer::with_env` conceals of an environment.
    pub(crate) fn with_variables<'a, 'v>(
        secrets: impl IntoIterator<Item = &'a str>,
        variables: impl IntoIterator<Item = (&'v str, &'v str)>,
    ) -> Concealer {
        let mut all: Vec<&str> = parts_of(secrets, MIN_SECRET_CHARS, false).collect();
        let values = variables
            .into_iter()
            .filter(|(name, _)| is_credential_name(name))
            .map(|(_, value)| value);
        all.extend(parts_of(values, MIN_ENV_SECRET_CHARS, true));
        Concealer::build(all)
    }

    fn build(secrets: Vec<&str>) -> Concealer {
        Concealer {
            inner: Arc::new(ArcSwap::from_pointee(Inner::build(secrets, Vec::new()))),
        }
    }

    /// Conceals `secret` too, from now on, in this concealer and every
    /// clone of it, besides every secret it knew, for as long as it lives
    /// (a Redis password read from the hold's address).
    #[cfg(feature = "redis")]
    pub(crate) fn learn(&self, secret: &str) {
        let parts: Vec<&str> = parts_of([secret], MIN_SECRET_CHARS, false).collect();
        if parts.is_empty() {
            return;
        }
        self.inner.rcu(|inner| {
            let known = |part: &&str| inner.sources.iter().any(|s| s.expose_secret() == *part);
            if parts.iter().all(known) {
                return Arc::clone(inner);
            }
            let mut all = inner.sources();
            all.extend(parts.iter().copied());
            Arc::new(Inner::build(all, inner.held()))
        });
    }

    /// Conceals exactly `tokens` besides the secrets it was built with and
    /// learned, in this concealer and every clone of it, from the next
    /// text on (a stream already open included): the tokens a file that
    /// rotates held last, which replace those held before. The caller keeps
    /// the set bounded (the current token and the eight before it), so each
    /// rotation rebuilds over a bounded number of secrets, however many
    /// rotations came before.
    pub(crate) fn hold<'a>(&self, tokens: impl IntoIterator<Item = &'a str>) {
        let parts: Vec<&str> = parts_of(tokens, MIN_SECRET_CHARS, false).collect();
        self.inner.rcu(|inner| {
            if inner.held() == parts {
                return Arc::clone(inner);
            }
            Arc::new(Inner::build(inner.sources(), parts.clone()))
        });
    }

    /// Which secrets this concealer knows now: equal to what a later call
    /// gives while it learns or drops none.
    pub(crate) fn known(&self) -> Known {
        Known(self.inner.load_full())
    }

    /// The state every method reads, loaded once per call.
    fn state(&self) -> arc_swap::Guard<Arc<Inner>> {
        self.inner.load()
    }

    /// The text with every secret, in every encoded form, replaced by
    /// [`REDACTED`]. Overlapping or touching hits become one marker.
    /// Borrowed when nothing was found.
    ///
    /// The forms, also mixed within one occurrence and up to two layers
    /// deep (JSON quoted in JSON, a JSON-escaped token percent-encoded):
    /// - the secret as itself, and its hex in either case;
    /// - JSON / JavaScript escapes: `\/ \" \\ \' \n \t \r \b \f \v`,
    ///   `\uXXXX` for any character in either hex case, surrogate pairs,
    ///   `\xHH` and `\u{X…}`;
    /// - percent-encoding in either hex case, any character or none;
    /// - HTML / XML references: `&#43;` and `&#x2B;` (either case of `x` and
    ///   digits, `;` optional), the HTML5 names of ASCII punctuation, the
    ///   Latin-1 names, and `&amp` `&lt` `&gt` `&quot` `&nbsp` without `;`;
    /// - backslashes also as a lenient reader of strict JSON reads them:
    ///   a backslash before a character JSON does not escape is dropped
    ///   (`\x41` is also `x41`, `m\w-te\st` is `mw-test`);
    /// - base64 and base64url, padded or not, at any alignment inside a
    ///   longer run (`Bearer <secret>`, `user:<secret>`): from the first to
    ///   the last character that carries the secret's bits, and the padding
    ///   right after them;
    /// - broken across lines: base64 wrapped at any width, and the secret
    ///   hard-wrapped, by `LF` or `CRLF`, raw or JSON-escaped (`\n`,
    ///   `\r\n`): the whole occurrence, breaks included, goes.
    ///
    /// ```
    /// use meterwire::Concealer;
    /// use std::borrow::Cow;
    ///
    /// let concealer = Concealer::new(["sk-test-0123456789abcdef"]);
    /// // `Bearer sk-test-0123456789abcdef`, base64-encoded: the characters
    /// // that carry the token's bits go, and those of `Bearer ` stay.
    /// let header = "Authorization: Basic QmVhcmVyIHNrLXRlc3QtMDEyMzQ1Njc4OWFiY2RlZg==";
    /// assert_eq!(concealer.conceal(header), "Authorization: Basic QmVhcmVyI[redacted]");
    /// assert!(matches!(concealer.conceal("nothing here"), Cow::Borrowed(_)));
    /// ```
    pub fn conceal<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.conceal_by(text, Decoding::Windows)
    }

    /// [`Concealer::conceal`] as it was before views were decoded in
    /// windows: every view over the whole text. The fuzz targets hold the
    /// two to the same output.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn conceal_whole<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.conceal_by(text, Decoding::Whole)
    }

    fn conceal_by<'t>(&self, text: &'t str, decoding: Decoding) -> Cow<'t, str> {
        replace(text, &self.spans_by(text, decoding))
    }

    /// The length in bytes below which [`Concealer::conceal`] returns any
    /// text unchanged (no form of a secret is shorter), so a caller with
    /// many short texts, an answer's headers, loads the secrets once for
    /// all of them rather than once for each.
    pub(crate) fn leaves_shorter_than(&self) -> usize {
        match &self.state().matcher {
            Matcher::Nothing => usize::MAX,
            Matcher::FailClosed => 1,
            Matcher::Automaton(search) => search.shortest,
        }
    }

    /// What [`Concealer::conceal`] replaces in `text`: sorted, disjoint
    /// spans, each one marker.
    pub(super) fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        self.spans_by(text, Decoding::Windows)
    }

    fn spans_by(&self, text: &str, decoding: Decoding) -> Vec<(usize, usize)> {
        let inner = self.state();
        let search = match &inner.matcher {
            Matcher::Nothing => return Vec::new(),
            Matcher::FailClosed if text.is_empty() => return Vec::new(),
            Matcher::FailClosed => return vec![(0, text.len())],
            Matcher::Automaton(search) => search,
        };
        // Every hit's source is at least as long as the shortest pattern (a
        // view or a joined view never decodes to more bytes than it
        // reads): a header value, a short field, is answered at once.
        if text.len() < search.shortest && matches!(decoding, Decoding::Windows) {
            return Vec::new();
        }
        let mut spans = Spans::new(text);
        let bytes = text.as_bytes();
        match decoding {
            Decoding::Windows => match &search.gate {
                Some(gate) => {
                    let mut buffers = Buffers::new();
                    gate.each_stretch(bytes, |start, end| {
                        let stretch = bytes.get(start..end).unwrap_or_default();
                        conceal_stretch(search, stretch, start, &mut spans, &mut buffers);
                    });
                }
                None => conceal_stretch(search, bytes, 0, &mut spans, &mut Buffers::new()),
            },
            #[cfg(any(test, fuzzing))]
            Decoding::Whole => {
                // Every view, whatever the survey found: the reference the
                // gate and the survey's seeds are checked against too.
                scan(search, bytes, &Raw(0), &mut spans);
                for escaped in [false, true] {
                    scan_joined(search, bytes, escaped, &Window(0), &mut spans);
                }
                let holds = Holds::of(bytes);
                views_of(
                    search,
                    bytes,
                    holds,
                    0,
                    &mut spans,
                    &mut Buffers::new(),
                    false,
                );
            }
        }
        spans.finish()
    }

    /// [`Concealer::conceal`], then also the shapes of credentials in text
    /// an engine wrote, whoever's they are: every URL is cut to
    /// `scheme://host[:port]` (userinfo, path, query and fragment dropped),
    /// `Bearer <credential>` / `Basic <credential>` become
    /// `Bearer [redacted]` / `Basic [redacted]`, and JWTs and PEM private
    /// keys (to their END line, or to the end of the text if it is missing)
    /// become `[redacted]`.
    ///
    /// ```
    /// use meterwire::Concealer;
    ///
    /// let concealer = Concealer::new(["sk-test-0123456789abcdef"]);
    /// assert_eq!(
    ///     concealer.scrub("GET https://u:p@engine.example:8443/v1?key=k failed; sent Bearer abc.def"),
    ///     "GET https://engine.example:8443 failed; sent Bearer [redacted]",
    /// );
    /// ```
    ///
    /// Text the reshaping joins (a host, with the path that followed it
    /// gone, now touching what came after the path) is concealed again, so
    /// no secret can form where two pieces meet.
    pub fn scrub(&self, text: &str) -> String {
        let concealed = self.conceal(text);
        match scrub_shapes(&concealed) {
            Cow::Borrowed(unchanged) => unchanged.to_owned(),
            Cow::Owned(reshaped) => self.conceal(&reshaped).into_owned(),
        }
    }

    /// True when no secret is held: [`Concealer::conceal`] is then the
    /// identity.
    ///
    /// ```
    /// use meterwire::Concealer;
    ///
    /// assert!(Concealer::new([]).is_empty());
    /// assert!(Concealer::new(["abc"]).is_empty()); // too short to conceal
    /// assert!(!Concealer::new(["abcd"]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.state().secrets == 0
    }
}

/// Where the views are decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Decoding {
    /// Only in windows around the escapes that can matter.
    Windows,
    /// Over the whole text: the reference the windows are checked against.
    #[cfg(any(test, fuzzing))]
    Whole,
}

/// Prints how many secrets are held, never any of them.
///
/// ```
/// use meterwire::Concealer;
///
/// let concealer = Concealer::new(["sk-test-0123456789abcdef", "mw_live_4f+Ab/9z"]);
/// assert_eq!(format!("{concealer:?}"), "Concealer { secrets: 2 }");
/// ```
impl fmt::Debug for Concealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Concealer")
            .field("secrets", &self.state().secrets)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The windowed concealer and the whole-text decoding agree, and
    /// borrow alike, on texts whose windows once read differently from the
    /// whole text (the `conceal` fuzz target holds them to it on every
    /// text it makes).
    #[test]
    fn windows_find_what_the_whole_text_finds() {
        let cases: [(&str, &str); 6] = [
            ("a)D%", "&\\i\\u0061)%44%ca)D%"),
            (
                "mw_live_4f+Ab/9z",
                r#"{"a":"mw_live_4f\u002BAb\/9z","b":"x"}"#,
            ),
            ("mw_live_4f+Ab/9z", r"\\\\\u006dw_live_4f+Ab/9z, %%6Dw"),
            ("abc%", "%61bc%abc%"),
            ("0123456789", "plain text, nothing to find"),
            // Found by `conceal_differential`: broken by a raw break and a
            // JSON one, which only the JSON view's joined view drops both
            // of; no escape of the text decodes to a relevant byte.
            ("/-F,", "cS/'R6 Q/-\nF\\r,Ll x"),
        ];
        for (secret, text) in cases {
            let concealer = Concealer::new([secret]);
            let windowed = concealer.conceal(text);
            let whole = concealer.conceal_whole(text);
            assert_eq!(windowed, whole, "{text:?}");
            assert_eq!(
                matches!(windowed, Cow::Borrowed(_)),
                matches!(whole, Cow::Borrowed(_)),
                "{text:?}"
            );
        }
    }

    /// Found by a 4 MiB answer echoing an 8,000-character `abab…` token:
    /// the search was restarted one byte past every hit, and every restart
    /// read a whole token again. However many hits a text holds, the
    /// automata read a few times the bytes of the views scanned.
    #[test]
    fn a_secret_that_repeats_itself_is_read_a_few_times_not_once_per_hit() {
        let secret = "ab".repeat(4000);
        let concealer = Concealer::new([secret.as_str()]);
        for text in [
            format!("x {} y", secret.repeat(16)),
            format!(r#"{{"k":"\u0061{}"}}"#, &secret.repeat(16)[1..]),
            format!("x {secret} y {secret} z {secret}"),
        ] {
            scan::SEARCHED.with(|searched| searched.set(0));
            scan::SCANNED.with(|scanned| scanned.set(0));
            let concealed = concealer.conceal(&text);
            let searched = scan::SEARCHED.with(std::cell::Cell::get);
            let scanned = scan::SCANNED.with(std::cell::Cell::get);
            assert!(concealed.contains(REDACTED));
            assert!(!concealed.contains(&secret));
            assert!(
                searched <= 3 * scanned,
                "{searched} bytes searched for {scanned} bytes of views"
            );
        }
    }

    #[test]
    fn secrets_are_cut_at_blank_lines_and_values_line_by_line() {
        let parts = |secret: &'static str, min: usize, lines: bool| -> Vec<&'static str> {
            parts_of([secret], min, lines).collect()
        };
        assert_eq!(parts("tab\there\nnew", 4, false), ["tab\there\nnew"]);
        assert_eq!(
            parts("\none1\r\n\r\ntwo2\n\nab\n", 4, false),
            ["one1", "two2"]
        );
        assert_eq!(parts("abcd\r\rwxyz", 4, false), ["abcd", "wxyz"]);
        let pem = "-----BEGIN KEY-----\n  MIIEvQIBADANBgkq \nshort\n-----END KEY-----\n";
        assert_eq!(
            parts(pem, 8, true),
            [
                "-----BEGIN KEY-----",
                "MIIEvQIBADANBgkq",
                "-----END KEY-----"
            ]
        );
        // Each line of a value is concealed wherever it stands, and no
        // form spans the blank line of the secret given in code.
        let concealer =
            Concealer::with_variables(["first-part\n\nsecond-part"], [("PRIVATE_KEY", pem)]);
        assert_eq!(
            concealer.conceal("MIIEvQIBADANBgkq and first-part\n\nsecond-part"),
            format!("{REDACTED} and {REDACTED}\n\n{REDACTED}")
        );
    }
}
