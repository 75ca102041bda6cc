//! The concealer: the one place that keeps the bearer token out of every
//! string this crate produces.
//!
//! # Why it exists
//!
//! The engine we call is metered and bills whoever owns the token, so a token
//! that reaches a log line, an error message or a panic report is a bill
//! anyone can run up. Engines echo what they were sent: a request body in a
//! validation error, a header in a debug dump, a URL in a redirect. They echo
//! it *encoded* — JSON-escaped (`\/`, `\u002B`), percent-encoded, as HTML
//! character references, or inside base64 (`Authorization: Basic …`, a
//! `Bearer <token>` blob) — and often in a mixture, because one layer escapes
//! `/` and another escapes `+`. Searching for the token as itself catches
//! none of those, so every string that leaves the crate goes through
//! [`Concealer::conceal`], which finds the token in each form.
//!
//! # Why views
//!
//! Decoding the text and searching the result would lose the way back to the
//! source text, and *encoding* the token every possible way is impossible:
//! with per-character choices (escaped or literal, upper or lower hex, named
//! or numeric reference) a 32-character token has astronomically many
//! encodings. So the text is decoded into *views* instead, and each decoded
//! byte remembers the span of source text it came from. The token is then
//! searched for once per view, and a hit conceals the source span it maps
//! back to. There is one view per escaping family (JSON/JavaScript escapes,
//! percent-encoding, HTML/XML character references), each built only when
//! its trigger byte (`\`, `%`, `&`) occurs at all, plus one *combined* view
//! decoding all families in one pass, for a token whose characters were
//! escaped by different layers (`ab%2Fcd\u002Bef`). The per-family views stay
//! because the combined view mis-decodes a token that itself contains a
//! literal `%41` and was then JSON-escaped. Each view decodes one layer,
//! like a real decoder (`%252F` is `%2F`, not `/`), so that it shows what a
//! reader of that layer sees. Text encoded twice is common all the same (an
//! engine error quoting an upstream JSON error as a JSON string writes
//! `\\u002B`), so every view that still holds a trigger byte gets views of
//! its own, chosen the same way. Two layers, not a recursion: the cost stays
//! a constant multiple of the text (at most 4 views, each with at most 4
//! more), and since views only ever add hits, an extra view can
//! over-conceal but never hide one.
//!
//! # Why base64 cores
//!
//! Base64 cannot be decoded into a view: where a run starts relative to the
//! token decides which characters it produces, and the bytes before the token
//! (`Bearer `, `user:`) are unknown. But base64 maps each 3 bytes to 4
//! characters, so at each of the three alignments the encoding of the token
//! has a *core* — every character except the first few (which mix in the
//! preceding bytes) and the last one (which mixes in the following bytes or
//! padding) — that only the token determines. Whatever surrounds the token
//! inside the encoded data, one of the three cores (six, with the url-safe
//! alphabet) appears verbatim, so the cores are searched for like the token,
//! in every view, and a hit conceals the whole base64 run around it: the
//! rest of the run can still carry a few of the token's bits. A token of 4+
//! characters yields cores of 4+ characters at every alignment; a shorter
//! core would blank ordinary words, so none is ever searched for.
//!
//! Hex, in either case, costs two more patterns per secret and is searched
//! for the same way; it conceals exactly the hit.
//!
//! # Why conceal first
//!
//! Callers conceal *before* truncating a string to a length (see [`bound`]):
//! truncation could cut a token in half, and half a token no longer matches
//! but is still half a secret.
//!
//! # Cost
//!
//! Everything is linear in the length of the text: the secrets and their
//! cores are compiled once into a single Aho-Corasick automaton, searched
//! leftmost-longest so that its vectorized prefilter skips ahead (overlaps
//! are found by restarting one byte past each hit), and a decoder examines
//! each byte a bounded number of times (an escape that turns out invalid is
//! rescanned only as plain text). A body with none of `\ % &` costs one
//! `memchr` pass plus one automaton scan. A body whose escapes all decode
//! to bytes no pattern holds (`\n`, `\"`, `%20`, `&lt;`: most escaped
//! text) costs one visit per escape more, and no view. Only the rest is
//! decoded into views, whose maps back to the text hold 17 bytes per decoded
//! escape. `cargo bench --bench conceal` measures all of this.

use crate::Env;
use aho_corasick::{AhoCorasick, Input, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use memchr::{memchr, memchr2, memchr3};
use regex::{Captures, Regex};
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

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
/// `AUTH` counts only as a whole word of the name (`BASIC_AUTH`,
/// `AUTH_HEADER`, `OAUTH_CODE`, `AUTHORIZATION`): as a bare substring it
/// would take `GIT_AUTHOR_NAME`, and every answer naming the author would
/// lose the name.
pub(crate) fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase().replace('-', "_");
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
    inner: Arc<Inner>,
}

struct Inner {
    /// How many distinct secrets are concealed; all `Debug` may reveal.
    secrets: usize,
    matcher: Matcher,
}

enum Matcher {
    /// No secret: concealing is the identity.
    Nothing,
    Automaton(Box<Search>),
    /// The automaton could not be built (only past size limits no real
    /// token set reaches). Concealing everything is the only answer that
    /// keeps the promise.
    FailClosed,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// The secret itself, or its hex: conceal exactly the hit.
    Exact,
    /// A base64 core: conceal the whole base64 run around the hit.
    Base64Core,
}

impl Concealer {
    /// A concealer for these secrets. Each is concealed as itself and in
    /// every encoded form (see the module docs); a secret shorter than 4
    /// characters is ignored.
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
        Concealer::build(secrets.into_iter().collect())
    }

    /// As [`Concealer::new`], plus the value of every variable in `env` whose
    /// name is credential-shaped (contains `TOKEN`, `SECRET`, `PASSWORD`,
    /// `PASSWD`, `CREDENTIAL`, `PRIVATE_KEY`, `API_KEY`, `APIKEY`,
    /// `ACCESS_KEY`, `SESSION_KEY`, or the word `AUTH`, in any case) and whose value,
    /// trimmed, is at least 8 characters long. The trimmed value is what gets
    /// concealed.
    ///
    /// ```
    /// use meterwire::{Concealer, Env};
    ///
    /// let env = Env::from_pairs([
    ///     ("GITHUB_TOKEN", "ghp_0123456789abcdefghij"),
    ///     ("HOME", "/home/predictor"),
    /// ]);
    /// let concealer = Concealer::with_env([], &env);
    /// assert_eq!(
    ///     concealer.conceal("ghp_0123456789abcdefghij in /home/predictor"),
    ///     "[redacted] in /home/predictor",
    /// );
    /// ```
    pub fn with_env<'a>(secrets: impl IntoIterator<Item = &'a str>, env: &Env) -> Concealer {
        let mut all: Vec<&str> = secrets.into_iter().collect();
        all.extend(env.iter().filter_map(|(name, value)| {
            let value = value.trim();
            (is_credential_name(name) && value.chars().count() >= MIN_ENV_SECRET_CHARS)
                .then_some(value)
        }));
        Concealer::build(all)
    }

    fn build(mut secrets: Vec<&str>) -> Concealer {
        secrets.retain(|s| s.chars().count() >= MIN_SECRET_CHARS);
        secrets.sort_unstable();
        secrets.dedup();
        let matcher = if secrets.is_empty() {
            Matcher::Nothing
        } else {
            compile(&secrets)
        };
        Concealer {
            inner: Arc::new(Inner {
                secrets: secrets.len(),
                matcher,
            }),
        }
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
    /// - base64 and base64url, padded or not, at any alignment inside a
    ///   longer run (`Bearer <secret>`, `user:<secret>`): the whole run goes.
    ///
    /// ```
    /// use meterwire::Concealer;
    /// use std::borrow::Cow;
    ///
    /// let concealer = Concealer::new(["sk-test-0123456789abcdef"]);
    /// // `Bearer sk-test-0123456789abcdef`, base64-encoded.
    /// let header = "Authorization: Basic QmVhcmVyIHNrLXRlc3QtMDEyMzQ1Njc4OWFiY2RlZg==";
    /// assert_eq!(concealer.conceal(header), "Authorization: Basic [redacted]");
    /// assert!(matches!(concealer.conceal("nothing here"), Cow::Borrowed(_)));
    /// ```
    pub fn conceal<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let search = match &self.inner.matcher {
            Matcher::Nothing => return Cow::Borrowed(text),
            Matcher::FailClosed if text.is_empty() => return Cow::Borrowed(text),
            Matcher::FailClosed => return Cow::Owned(REDACTED.to_owned()),
            Matcher::Automaton(search) => search,
        };
        let mut spans = Spans::new(text);
        let bytes = text.as_bytes();
        scan(search, bytes, &Raw, &mut spans);
        let present = Families::present_in(bytes);
        if !search.any_relevant_escape(bytes, present) {
            return spans.replace();
        }
        for families in present.views() {
            let view = View::decode(bytes, families);
            // Triggers that start no escape (`%%%%`, `&&&&`) leave the text
            // as it is: its scan and its own views are the ones above.
            if view.decoded() == 0 {
                continue;
            }
            scan(search, &view.bytes, &view, &mut spans);
            // One layer more, the same way, for what was encoded twice: an
            // error quoting upstream JSON as a JSON string (`\\u002B`), a
            // percent-encoded JSON body (`%5Cu002B`).
            for inner in Families::present_in(&view.bytes).views() {
                let nested = View::decode(&view.bytes, inner);
                if nested.decoded() == 0 {
                    continue;
                }
                let map = Nested {
                    outer: &view,
                    inner: &nested,
                };
                scan(search, &nested.bytes, &map, &mut spans);
            }
        }
        spans.replace()
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
    pub fn scrub(&self, text: &str) -> String {
        scrub_shapes(&self.conceal(text))
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
        self.inner.secrets == 0
    }
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
            .field("secrets", &self.inner.secrets)
            .finish()
    }
}

/// The longest prefix of `text` holding at most `max_chars` characters.
///
/// Counts characters, not bytes, and cuts only between characters, so the
/// result is always valid UTF-8 and never panics. Conceal first, then bound:
/// a bound applied first could leave half a token, which no longer matches.
///
/// ```
/// use meterwire::bound;
///
/// assert_eq!(bound("héllo", 2), "hé");
/// assert_eq!(bound("héllo", 10), "héllo");
/// assert_eq!(bound("日本語", 0), "");
/// ```
pub fn bound(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// Builds the one automaton that serves every view.
fn compile(secrets: &[&str]) -> Matcher {
    // A pattern that is both exact and a core conceals as a core: the run
    // around it contains the exact hit.
    let mut patterns: BTreeMap<Vec<u8>, Kind> = BTreeMap::new();
    for secret in secrets {
        patterns.insert(secret.as_bytes().to_vec(), Kind::Exact);
        let lower: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        patterns.insert(lower.to_ascii_uppercase().into_bytes(), Kind::Exact);
        patterns.insert(lower.into_bytes(), Kind::Exact);
    }
    for secret in secrets {
        for core in base64_cores(secret.as_bytes()) {
            patterns.insert(core.into_bytes(), Kind::Base64Core);
        }
    }
    let kinds: Vec<Kind> = patterns.values().copied().collect();
    // A hit at one start hides the shorter patterns starting there too; of
    // those only a core conceals more than the hit (its whole run), and any
    // one core does, since every core is all base64.
    let core_prefix = patterns
        .iter()
        .map(|(pattern, kind)| {
            let shorter_core = |(other, k): (&Vec<u8>, &Kind)| {
                (*k == Kind::Base64Core
                    && other.len() < pattern.len()
                    && pattern.starts_with(other))
                .then_some(other.len())
            };
            (*kind == Kind::Exact)
                .then(|| patterns.iter().find_map(shorter_core))
                .flatten()
        })
        .collect();
    let mut relevant = [false; 256];
    // The base64 characters and padding too: a view extends a base64 run
    // over them.
    for byte in patterns.keys().flatten().copied().chain(*b"\\%&#;{}+/-_=") {
        relevant[usize::from(byte)] = true;
    }
    for byte in (b'0'..=b'9').chain(b'A'..=b'Z').chain(b'a'..=b'z') {
        relevant[usize::from(byte)] = true;
    }
    // Leftmost-longest rather than overlapping semantics: it lets the
    // automaton skip ahead with a vectorized prefilter (Teddy) instead of
    // stepping through every byte, about ten times faster on text with
    // nothing to find. Overlaps are recovered by `scan`, which restarts one
    // byte after each hit's start.
    match AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(patterns.keys())
    {
        Ok(automaton) => Matcher::Automaton(Box::new(Search {
            automaton,
            kinds,
            core_prefix,
            relevant,
        })),
        Err(_) => Matcher::FailClosed,
    }
}

/// The compiled automaton and what each of its patterns conceals.
struct Search {
    automaton: AhoCorasick,
    /// What a hit of each pattern conceals, by pattern id.
    kinds: Vec<Kind>,
    /// For an exact pattern, the length of a core that is a prefix of it,
    /// if any: the core matches wherever the pattern does.
    core_prefix: Vec<Option<usize>>,
    /// The bytes an escape must decode to for a view to matter: any byte
    /// of a pattern, a trigger, and any byte that can continue an escape of
    /// the next layer (letters, digits, `#`, `;`, `{`, `}`), and what a
    /// base64 run is made of.
    relevant: [bool; 256],
}

impl Search {
    /// Whether any escape, wherever a trigger starts one, decodes to a
    /// relevant byte. When none does, no view can add a hit: a hit in a
    /// view is all pattern bytes, so it holds no decoded byte and is a copy
    /// of the text, which the raw scan has searched; and a second layer
    /// finds only triggers the text itself holds, starting escapes that are
    /// the text's own or that would need a relevant decoded byte to go on.
    /// Every view parses its escapes at trigger positions with the same
    /// decoders, so checking every trigger once covers them all. Text
    /// whose escapes are newlines and quotes (`\n`, `\"`) then costs one
    /// visit per escape instead of decoded views.
    fn any_relevant_escape(&self, text: &[u8], present: Families) -> bool {
        let relevant = |p: usize| {
            let decoded = match text.get(p) {
                Some(b'\\') => json_escape(text, p),
                Some(b'%') => percent_escape(text, p),
                _ => char_ref(text, p),
            };
            match decoded {
                None => false,
                Some((_, Decoded::Byte(b))) => self.relevant[usize::from(b)],
                Some((_, Decoded::Char(c))) => {
                    let mut buf = [0u8; 4];
                    c.encode_utf8(&mut buf)
                        .bytes()
                        .any(|b| self.relevant[usize::from(b)])
                }
            }
        };
        // Every trigger of a present family, once: `at` moves past each.
        // `next_trigger` rather than an iterator, for its fast path in a
        // run of triggers.
        let mut at = 0;
        while let Some(p) = present.next_trigger(text, at) {
            if relevant(p) {
                return true;
            }
            at = p + 1;
        }
        false
    }
}

/// The characters of the secret's base64 that only the secret determines,
/// at each alignment (0, 1 or 2 bytes of the same 3-byte group before it),
/// in both alphabets.
fn base64_cores(secret: &[u8]) -> Vec<String> {
    let mut cores = Vec::with_capacity(6);
    for align in 0..3 {
        let mut data = vec![0u8; align];
        data.extend_from_slice(secret);
        let n = data.len();
        // With 1 byte before it, the group's 2nd character mixes that byte
        // in; with 2, the 3rd does. Everything after is the secret's own.
        let head = [0, 2, 3][align];
        // A final partial group of 1 or 2 bytes: its last non-padding
        // character mixes in whatever follows the secret.
        let tail = 4 * (n / 3) + [0, 1, 2][n % 3];
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&data);
            if let Some(core) = encoded.get(head..tail)
                && core.len() >= MIN_CORE_LEN
                && !cores.iter().any(|c: &String| c == core)
            {
                cores.push(core.to_owned());
            }
        }
    }
    cores
}

/// Searches one view and records the source span of every hit.
fn scan(search: &Search, hay: &[u8], map: &dyn SourceMap, spans: &mut Spans) {
    // Hits arrive in order of their start, and a core lies inside one run,
    // so the run last expanded is the only one a later hit can fall in
    // again; skipping those keeps a long run with many hits linear.
    let mut run: Option<(usize, usize)> = None;
    let mut conceal = |kind: Kind, start: usize, end: usize| {
        let (start, end) = match kind {
            Kind::Exact => (start, end),
            Kind::Base64Core => {
                if let Some((a, b)) = run
                    && start >= a
                    && end <= b
                {
                    return;
                }
                let expanded = base64_run(hay, start, end);
                run = Some(expanded);
                expanded
            }
        };
        if map.copied(start, end) {
            return;
        }
        match map.source(start, end) {
            Some((a, b)) => spans.push(a, b),
            None => spans.everything(),
        }
    };
    // Every start that has a hit, in order: the leftmost-longest hit from
    // `at`, then again from one byte past its start, so a hit overlapping
    // the previous one is found too. `at` only grows, and each search finds
    // the next start or ends the loop.
    let mut at = 0;
    while at < hay.len() {
        let hit = match search.automaton.try_find(Input::new(hay).range(at..)) {
            Ok(Some(hit)) => hit,
            Ok(None) => return,
            Err(_) => return spans.everything(),
        };
        let id = hit.pattern().as_usize();
        let kind = search.kinds.get(id).copied().unwrap_or(Kind::Base64Core);
        conceal(kind, hit.start(), hit.end());
        if let Some(Some(len)) = search.core_prefix.get(id) {
            conceal(Kind::Base64Core, hit.start(), hit.start() + len);
        }
        at = hit.start() + 1;
    }
}

/// Either alphabet, since a run may be either.
fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// The maximal base64 run around `start..end`, with up to two `=` of padding.
fn base64_run(hay: &[u8], start: usize, end: usize) -> (usize, usize) {
    let mut a = start;
    while a > 0 && hay.get(a - 1).copied().is_some_and(is_base64) {
        a -= 1;
    }
    let mut b = end;
    while hay.get(b).copied().is_some_and(is_base64) {
        b += 1;
    }
    for _ in 0..2 {
        if hay.get(b) == Some(&b'=') {
            b += 1;
        }
    }
    (a, b)
}

/// Maps a byte range of a view back to the source text.
trait SourceMap {
    /// `None` only if the view is inconsistent, which the caller treats as
    /// "conceal everything".
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)>;

    /// Whether the range is a copy of contiguous text, no escape decoded in
    /// it: the scan of the text itself finds whatever lies there, so a view
    /// need not record it again (in text full of the token, most hits of
    /// every view are such copies).
    fn copied(&self, start: usize, end: usize) -> bool;
}

/// The text itself.
struct Raw;

impl SourceMap for Raw {
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        Some((start, end))
    }

    /// The text's own hits are the ones that must be recorded.
    fn copied(&self, _: usize, _: usize) -> bool {
        false
    }
}

/// A view of a view: maps through both.
struct Nested<'v> {
    outer: &'v View,
    inner: &'v View,
}

impl SourceMap for Nested<'_> {
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let (start, end) = self.inner.source(start, end)?;
        self.outer.source(start, end)
    }

    fn copied(&self, start: usize, end: usize) -> bool {
        self.inner.copied(start, end)
            && self
                .inner
                .source(start, end)
                .is_some_and(|(a, b)| self.outer.copied(a, b))
    }
}

/// Which escaping families a view decodes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Families {
    /// JSON / JavaScript backslash escapes.
    escapes: bool,
    /// `%XX`.
    percent: bool,
    /// HTML / XML character references.
    refs: bool,
}

impl Families {
    const ESCAPES: Families = Families {
        escapes: true,
        percent: false,
        refs: false,
    };
    const PERCENT: Families = Families {
        escapes: false,
        percent: true,
        refs: false,
    };
    const REFS: Families = Families {
        escapes: false,
        percent: false,
        refs: true,
    };

    /// The families whose trigger byte occurs, in at most one pass: each
    /// search looks only for the triggers not yet seen, from where the last
    /// new one was found, so text dense with one trigger (`%%%%…`) costs a
    /// vectorized scan rather than a step per trigger.
    fn present_in(text: &[u8]) -> Families {
        let mut present = Families::default();
        let mut at = 0;
        // Each round finds a family not yet present, or ends: at most four.
        for _ in 0..4 {
            let missing = Families {
                escapes: !present.escapes,
                percent: !present.percent,
                refs: !present.refs,
            };
            let Some(p) = missing.next_trigger(text, at) else {
                break;
            };
            match text.get(p) {
                Some(b'\\') => present.escapes = true,
                Some(b'%') => present.percent = true,
                _ => present.refs = true,
            }
            at = p + 1;
        }
        present
    }

    /// One view per present family, plus the combined one when it differs
    /// from each of those (two or more families present).
    fn views(self) -> Vec<Families> {
        let singles = [
            (self.escapes, Families::ESCAPES),
            (self.percent, Families::PERCENT),
            (self.refs, Families::REFS),
        ];
        let mut views: Vec<Families> = singles
            .iter()
            .filter(|(present, _)| *present)
            .map(|(_, f)| *f)
            .collect();
        if views.len() >= 2 {
            views.push(self);
        }
        views
    }

    fn triggered_by(self, b: u8) -> bool {
        match b {
            b'\\' => self.escapes,
            b'%' => self.percent,
            b'&' => self.refs,
            _ => false,
        }
    }

    fn next_trigger(self, hay: &[u8], from: usize) -> Option<usize> {
        // A failed escape leaves the scan right after its trigger, which in
        // a run of triggers is the next one: skip the search set-up.
        if hay.get(from).is_some_and(|&b| self.triggered_by(b)) {
            return Some(from);
        }
        let rest = hay.get(from..)?;
        let found = match (self.escapes, self.percent, self.refs) {
            (true, true, true) => memchr3(b'\\', b'%', b'&', rest),
            (true, true, false) => memchr2(b'\\', b'%', rest),
            (true, false, true) => memchr2(b'\\', b'&', rest),
            (false, true, true) => memchr2(b'%', b'&', rest),
            (true, false, false) => memchr(b'\\', rest),
            (false, true, false) => memchr(b'%', rest),
            (false, false, true) => memchr(b'&', rest),
            (false, false, false) => None,
        };
        found.map(|k| from + k)
    }
}

/// A decoded view of the text.
///
/// Hand-written: no decoding crate reports which source bytes each decoded
/// byte came from, and that is the whole point here.
///
/// The map back to the text records only the escapes, 17 bytes each: a
/// literal run between two escapes is a plain copy, so where it came from
/// follows from the escape after it. Text dense with escapes still costs a
/// few bytes of map per byte of text, not dozens.
struct View {
    bytes: Vec<u8>,
    /// Where each decoded escape starts, in the view and in the source, in
    /// order, then one more mark at the ends of both.
    marks: Vec<Mark>,
    /// How many view bytes each escape decoded to (1 to 4).
    widths: Vec<u8>,
    /// Where the last lookup of a hit's start, and of its end, landed.
    start_hint: Cell<usize>,
    end_hint: Cell<usize>,
}

#[derive(Clone, Copy, Debug)]
struct Mark {
    out: usize,
    src: usize,
}

/// Where a view byte lies: in a literal run, which ends at the mark with
/// this index, or in the escape with this index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    Literal(usize),
    Escape(usize),
}

/// What one escape decodes to.
enum Decoded {
    Byte(u8),
    Char(char),
}

impl View {
    fn decode(src: &[u8], families: Families) -> View {
        let mut view = View {
            bytes: Vec::with_capacity(src.len()),
            marks: Vec::new(),
            widths: Vec::new(),
            start_hint: Cell::new(0),
            end_hint: Cell::new(0),
        };
        let mut literal_from = 0;
        let mut at = 0;
        while let Some(p) = families.next_trigger(src, at) {
            let decoded = match src.get(p) {
                Some(b'\\') => json_escape(src, p),
                Some(b'%') => percent_escape(src, p),
                _ => char_ref(src, p),
            };
            match decoded {
                Some((len, decoded)) => {
                    view.bytes
                        .extend_from_slice(src.get(literal_from..p).unwrap_or_default());
                    view.escape(p, decoded);
                    at = p + len;
                    literal_from = at;
                }
                // Not an escape after all: the trigger stays literal, and
                // what follows it is scanned again as ordinary text.
                None => at = p + 1,
            }
        }
        view.bytes
            .extend_from_slice(src.get(literal_from..).unwrap_or_default());
        view.marks.push(Mark {
            out: view.bytes.len(),
            src: src.len(),
        });
        view
    }

    fn escape(&mut self, src: usize, decoded: Decoded) {
        let out = self.bytes.len();
        match decoded {
            Decoded::Byte(b) => self.bytes.push(b),
            Decoded::Char(c) => {
                let mut buf = [0u8; 4];
                self.bytes
                    .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        self.marks.push(Mark { out, src });
        // At most 4: one char.
        self.widths
            .push(u8::try_from(self.bytes.len() - out).unwrap_or(u8::MAX));
    }

    /// How many escapes were decoded; none means the view is its source.
    fn decoded(&self) -> usize {
        self.widths.len()
    }

    /// Where view byte `k` lies, starting the search at `hint`, where the
    /// previous lookup ended.
    fn place(&self, k: usize, hint: &Cell<usize>) -> Option<Place> {
        let marks = &self.marks;
        let after = |i: usize| marks.get(i).is_some_and(|m| m.out > k);
        let before = |i: usize| i == 0 || marks.get(i - 1).is_some_and(|m| m.out <= k);
        // The first mark past `k`. Hits come in order, so it is usually the
        // hinted one or a few after it: step forward a little, and only
        // then search.
        let mut next = hint.get();
        let mut steps = 0;
        while !(before(next) && after(next)) {
            steps += 1;
            if !before(next) || steps > 8 {
                next = marks.partition_point(|m| m.out <= k);
                break;
            }
            next += 1;
        }
        if !after(next) {
            return None;
        }
        hint.set(next);
        if let Some(e) = next.checked_sub(1)
            && let (Some(mark), Some(&width)) = (marks.get(e), self.widths.get(e))
            && k < mark.out + usize::from(width)
        {
            return Some(Place::Escape(e));
        }
        Some(Place::Literal(next))
    }

    /// The source span of view byte `k`.
    fn source_of(&self, k: usize, hint: &Cell<usize>) -> Option<(usize, usize)> {
        match self.place(k, hint)? {
            Place::Literal(next) => {
                let mark = self.marks.get(next)?;
                let at = mark.src.checked_sub(mark.out.checked_sub(k)?)?;
                Some((at, at + 1))
            }
            Place::Escape(e) => {
                let (mark, next) = (self.marks.get(e)?, self.marks.get(e + 1)?);
                let width = usize::from(*self.widths.get(e)?);
                // The literal run after the escape is as long in the source
                // as in the view.
                let run = next.out.checked_sub(mark.out + width)?;
                Some((mark.src, next.src.checked_sub(run)?))
            }
        }
    }
}

impl SourceMap for View {
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let (a, _) = self.source_of(start, &self.start_hint)?;
        let (_, b) = self.source_of(end.checked_sub(1)?, &self.end_hint)?;
        Some((a, b))
    }

    fn copied(&self, start: usize, end: usize) -> bool {
        let Some(last) = end.checked_sub(1) else {
            return false;
        };
        match self.place(start, &self.start_hint) {
            Some(Place::Literal(next)) => {
                self.place(last, &self.end_hint) == Some(Place::Literal(next))
            }
            _ => false,
        }
    }
}

fn hex_digit(b: u8) -> Option<u32> {
    char::from(b).to_digit(16)
}

/// `n` hex digits at `at`, either case.
fn hex_at(src: &[u8], at: usize, n: usize) -> Option<u32> {
    let digits = src.get(at..at + n)?;
    digits
        .iter()
        .try_fold(0u32, |v, &b| Some(v * 16 + hex_digit(b)?))
}

/// A JSON or JavaScript escape at `p` (a backslash): its length and value.
fn json_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let byte = |b| Some((2, Decoded::Byte(b)));
    match *src.get(p + 1)? {
        c @ (b'/' | b'"' | b'\\' | b'\'') => byte(c),
        b'n' => byte(b'\n'),
        b't' => byte(b'\t'),
        b'r' => byte(b'\r'),
        b'b' => byte(0x08),
        b'f' => byte(0x0C),
        b'v' => byte(0x0B),
        // JavaScript's `\xHH` is a code point below 256, not a byte.
        b'x' => {
            let cp = hex_at(src, p + 2, 2)?;
            Some((4, Decoded::Char(char::from_u32(cp)?)))
        }
        b'u' => unicode_escape(src, p),
        _ => None,
    }
}

/// `\uXXXX`, a surrogate pair of them, or JavaScript's `\u{X…}`.
fn unicode_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    if src.get(p + 2) == Some(&b'{') {
        let digits_at = p + 3;
        let mut k = digits_at;
        let mut cp = 0u32;
        // At most 6 digits: the lookahead stays bounded and `cp` cannot
        // overflow.
        while k < digits_at + 6 {
            match src.get(k).copied().and_then(hex_digit) {
                Some(d) => cp = cp * 16 + d,
                None => break,
            }
            k += 1;
        }
        if k == digits_at || src.get(k) != Some(&b'}') {
            return None;
        }
        return Some((k + 1 - p, Decoded::Char(char::from_u32(cp)?)));
    }
    let first = hex_at(src, p + 2, 4)?;
    if (0xD800..=0xDBFF).contains(&first) {
        // A high surrogate means nothing without its low half; a lone one
        // stays literal (no secret, being a `&str`, can contain one).
        if src.get(p + 6..p + 8) != Some(b"\\u") {
            return None;
        }
        let second = hex_at(src, p + 8, 4)?;
        if !(0xDC00..=0xDFFF).contains(&second) {
            return None;
        }
        let cp = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return Some((12, Decoded::Char(char::from_u32(cp)?)));
    }
    // A lone low surrogate is not a char either: `from_u32` refuses it.
    Some((6, Decoded::Char(char::from_u32(first)?)))
}

/// `%XX`, either case.
fn percent_escape(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let b = hex_at(src, p + 1, 2)?;
    Some((3, Decoded::Byte(u8::try_from(b).ok()?)))
}

/// Longer than any name in the table: a bounded lookahead per `&`.
const MAX_REF_NAME: usize = 32;

/// An HTML / XML character reference at `p` (an ampersand).
fn char_ref(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    if src.get(p + 1) == Some(&b'#') {
        return numeric_ref(src, p);
    }
    let start = p + 1;
    let mut end = start;
    while end < start + MAX_REF_NAME && src.get(end).is_some_and(u8::is_ascii_alphanumeric) {
        end += 1;
    }
    let name = src.get(start..end)?;
    if name.is_empty() {
        return None;
    }
    if src.get(end) == Some(&b';')
        && let Some(c) = named_char(name)
    {
        return Some((end + 1 - p, Decoded::Char(c)));
    }
    // HTML still decodes these few without their `;`, even when letters
    // follow (`&ampx` is `&x`), because old pages relied on it.
    const LEGACY: [(&[u8], char); 9] = [
        (b"amp", '&'),
        (b"AMP", '&'),
        (b"lt", '<'),
        (b"LT", '<'),
        (b"gt", '>'),
        (b"GT", '>'),
        (b"quot", '"'),
        (b"QUOT", '"'),
        (b"nbsp", '\u{a0}'),
    ];
    LEGACY
        .iter()
        .find(|(legacy, _)| name.starts_with(legacy))
        .map(|(legacy, c)| (1 + legacy.len(), Decoded::Char(*c)))
}

/// `&#DDD;` or `&#xHHH;` (either case of `x` and the digits); the `;` may be
/// missing, as HTML tolerates.
fn numeric_ref(src: &[u8], p: usize) -> Option<(usize, Decoded)> {
    let (radix, digits_at) = match src.get(p + 2) {
        Some(b'x' | b'X') => (16, p + 3),
        _ => (10, p + 2),
    };
    let mut k = digits_at;
    let mut cp = 0u32;
    // Leading zeros are legal, so the digits are unbounded; saturating keeps
    // a huge number a non-char instead of wrapping into a real one.
    while let Some(d) = src.get(k).and_then(|&b| char::from(b).to_digit(radix)) {
        cp = cp.saturating_mul(radix).saturating_add(d);
        k += 1;
    }
    if k == digits_at {
        return None;
    }
    if src.get(k) == Some(&b';') {
        k += 1;
    }
    Some((k - p, Decoded::Char(char::from_u32(cp)?)))
}

/// The HTML5 names of printable ASCII punctuation (the list of ASCII punctuation, with
/// `&tilde;` as `~`), tab, newline, and the Latin-1 names of HTML 4.
fn named_char(name: &[u8]) -> Option<char> {
    Some(match name {
        b"excl" => '!',
        b"quot" | b"QUOT" => '"',
        b"num" => '#',
        b"dollar" => '$',
        b"percnt" => '%',
        b"amp" | b"AMP" => '&',
        b"apos" => '\'',
        b"lpar" => '(',
        b"rpar" => ')',
        b"ast" | b"midast" => '*',
        b"plus" => '+',
        b"comma" => ',',
        b"hyphen" => '-',
        b"period" => '.',
        b"sol" => '/',
        b"colon" => ':',
        b"semi" => ';',
        b"lt" | b"LT" => '<',
        b"equals" => '=',
        b"gt" | b"GT" => '>',
        b"quest" => '?',
        b"commat" => '@',
        b"lsqb" | b"lbrack" => '[',
        b"bsol" => '\\',
        b"rsqb" | b"rbrack" => ']',
        b"Hat" => '^',
        b"lowbar" | b"UnderBar" => '_',
        b"grave" | b"DiacriticalGrave" => '`',
        b"lcub" | b"lbrace" => '{',
        b"verbar" | b"vert" | b"VerticalLine" => '|',
        b"rcub" | b"rbrace" => '}',
        b"tilde" => '~',
        b"Tab" => '\t',
        b"NewLine" => '\n',
        _ => {
            let at = LATIN1.iter().position(|n| n.as_bytes() == name)?;
            char::from_u32(0xA0 + u32::try_from(at).ok()?)?
        }
    })
}

/// U+00A0 to U+00FF, in order.
const LATIN1: [&str; 96] = [
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro",
    "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
    "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute",
    "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute",
    "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute",
    "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
    "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde",
    "ograve", "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc",
    "uuml", "yacute", "thorn", "yuml",
];

/// The source spans to conceal, widened to char boundaries.
struct Spans<'t> {
    text: &'t str,
    spans: Vec<(usize, usize)>,
}

impl<'t> Spans<'t> {
    fn new(text: &'t str) -> Spans<'t> {
        Spans {
            text,
            spans: Vec::new(),
        }
    }

    fn push(&mut self, start: usize, end: usize) {
        let (start, end) = (self.floor(start), self.ceil(end));
        // Hits within one view come nearly in order, so folding into the
        // last span keeps a text made of one repeated secret from growing a
        // span per byte.
        if let Some(last) = self.spans.last_mut()
            && start <= last.1
            && end >= last.0
        {
            *last = (last.0.min(start), last.1.max(end));
            return;
        }
        self.spans.push((start, end));
    }

    fn everything(&mut self) {
        self.spans.push((0, self.text.len()));
    }

    /// A view may map into the middle of a multi-byte char (a percent
    /// escape of one of its bytes next to a literal one): widen to the
    /// whole char, so that no part of it survives and slicing stays valid.
    fn floor(&self, mut at: usize) -> usize {
        at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn ceil(&self, mut at: usize) -> usize {
        at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at += 1;
        }
        at
    }

    /// Merges overlapping and touching spans, then replaces each with one
    /// marker. Built left to right into a fresh string, which gives the same
    /// result as replacing right to left in place, in linear time.
    fn replace(mut self) -> Cow<'t, str> {
        let text = self.text;
        if self.spans.is_empty() {
            return Cow::Borrowed(text);
        }
        self.spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(self.spans.len());
        for (start, end) in self.spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in merged {
            out.push_str(text.get(at..start).unwrap_or_default());
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(text.get(at..).unwrap_or_default());
        Cow::Owned(out)
    }
}

/// Compiles one of the constant patterns below; a typo fails every test.
fn constant(pattern: &str) -> Regex {
    match Regex::new(pattern) {
        Ok(regex) => regex,
        Err(error) => panic!("constant scrub pattern does not compile: {error}"),
    }
}

/// From BEGIN to its END line, or to the end of the text: a truncated key is
/// still a key.
static PEM: LazyLock<Regex> = LazyLock::new(|| {
    constant(
        r"(?s)-----BEGIN [^\r\n]*?PRIVATE KEY-----.*?(?:-----END [^\r\n]*?PRIVATE KEY-----|\z)",
    )
});

/// Scheme, separator (also JSON-escaped `:\/\/`), authority, then the rest,
/// which stops where a quote or an escape other than `\/` would end a string.
static URL: LazyLock<Regex> = LazyLock::new(|| {
    constant(
        r#"\b([A-Za-z][A-Za-z0-9+.\-]*)(://|:\\/\\/)([^\s/?#"'<>\\]*)((?:[/?#]|\\/)(?:[^\s"'<>\\]|\\/)*)?"#,
    )
});

/// The scheme word, in any case, then the credential up to a delimiter; a
/// marker already in place (`[`) is left alone.
static AUTH: LazyLock<Regex> =
    LazyLock::new(|| constant(r#"\b((?i-u:bearer|basic))[ \t]+[^\s"'<>,;(){}\[\]]+"#));

/// A JWS (three parts, the last possibly empty) or a JWE (five).
static JWT: LazyLock<Regex> = LazyLock::new(|| {
    constant(r"eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+){0,2}")
});

/// Sentence punctuation right after a URL is prose, not URL.
const TRAILING_PROSE: &[char] = &['.', ',', ';', ':', '!', '?', ')'];

fn scrub_shapes(text: &str) -> String {
    let text = PEM.replace_all(text, REDACTED);
    let text = URL.replace_all(&text, |caps: &Captures| url_origin(caps));
    let text = AUTH.replace_all(&text, |caps: &Captures| auth_credential(caps, &text));
    let text = JWT.replace_all(&text, REDACTED);
    text.into_owned()
}

/// `Bearer [redacted]`, except for an auth-param of a challenge
/// (`Basic realm="engine"`), which names no credential.
fn auth_credential(caps: &Captures, text: &str) -> String {
    let whole = caps.get(0).map_or("", |m| m.as_str());
    let quoted_param = caps
        .get(0)
        .is_some_and(|m| whole.ends_with('=') && text[m.end()..].starts_with('"'));
    if quoted_param {
        return whole.to_owned();
    }
    let scheme = caps.get(1).map_or("", |m| m.as_str());
    // "a basic check", "Bearer token required": a word of prose after the
    // scheme name is not a credential. Credentials carry digits, mixed case
    // or token68 punctuation; the token itself is concealed exactly anyway.
    let credential = whole[scheme.len()..].trim_start();
    let mut letters = credential.chars();
    let prose = letters.next().is_some_and(|c| c.is_ascii_alphabetic())
        && letters.all(|c| c.is_ascii_lowercase());
    if prose {
        return whole.to_owned();
    }
    format!("{scheme} {REDACTED}")
}

/// `scheme://host[:port]`, keeping trailing sentence punctuation.
fn url_origin(caps: &Captures) -> String {
    let group = |i| caps.get(i).map_or("", |m: regex::Match| m.as_str());
    let (scheme, separator, authority, rest) = (group(1), group(2), group(3), group(4));
    let tail = if rest.is_empty() { authority } else { rest };
    let prose = &tail[tail.trim_end_matches(TRAILING_PROSE).len()..];
    let authority = if rest.is_empty() {
        &authority[..authority.len() - prose.len()]
    } else {
        authority
    };
    // The last `@` ends the userinfo: a password may hold a raw `@`.
    let host = authority.rsplit('@').next().unwrap_or(authority);
    // A password holding a raw `/` ends the authority early, leaving
    // `user:pass`: a port is digits, anything else after `:` goes.
    let host = match host.rsplit_once(':') {
        Some((name, port)) if !port.bytes().all(|b| b.is_ascii_digit()) && !port.ends_with(']') => {
            name
        }
        _ => host,
    };
    format!("{scheme}{separator}{host}{prose}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_of_a_four_char_secret_are_all_long_enough() {
        let cores = base64_cores(b"abcd");
        assert_eq!(cores.len(), 3, "{cores:?}");
        assert!(cores.iter().all(|c| c.len() >= MIN_CORE_LEN));
    }

    #[test]
    fn every_core_is_in_the_encoding_whatever_precedes_and_follows() {
        let secret = b"mw_live_4f+Ab/9z";
        let cores = base64_cores(secret);
        for before in 0..6 {
            for after in 0..4 {
                let mut data = vec![0xA5u8; before];
                data.extend_from_slice(secret);
                data.extend(std::iter::repeat_n(0x5Au8, after));
                let std = base64::engine::general_purpose::STANDARD.encode(&data);
                let url = URL_SAFE_NO_PAD.encode(&data);
                assert!(
                    cores.iter().any(|c| std.contains(c.as_str())),
                    "{before} {after}"
                );
                assert!(
                    cores.iter().any(|c| url.contains(c.as_str())),
                    "{before} {after}"
                );
            }
        }
    }

    #[test]
    fn a_view_maps_an_escape_back_to_its_whole_source() {
        let text = br"a\u00e9%41&amp;b";
        let all = Families {
            escapes: true,
            percent: true,
            refs: true,
        };
        let view = View::decode(text, all);
        assert_eq!(view.bytes, "aéA&b".as_bytes());
        assert_eq!(view.source(1, 3), Some((1, 7)));
        assert_eq!(view.source(3, 4), Some((7, 10)));
        assert_eq!(view.source(4, 5), Some((10, 15)));
        assert_eq!(view.source(5, 6), Some((15, 16)));
    }

    #[test]
    fn a_span_inside_a_multibyte_char_widens_to_the_whole_char() {
        let text = "aé日b";
        let mut spans = Spans::new(text);
        // Into the middle of `é` and of `日`.
        spans.push(2, 5);
        assert_eq!(spans.replace(), "a[redacted]b");
    }

    #[test]
    fn a_nested_view_maps_through_both_layers() {
        let text = br"x%5Cu0041y";
        let outer = View::decode(text, Families::PERCENT);
        assert_eq!(outer.bytes, br"x\u0041y");
        let inner = View::decode(&outer.bytes, Families::ESCAPES);
        assert_eq!(inner.bytes, b"xAy");
        let nested = Nested {
            outer: &outer,
            inner: &inner,
        };
        assert_eq!(nested.source(1, 2), Some((1, 9)));
        assert_eq!(nested.source(0, 3), Some((0, 10)));
    }

    #[test]
    fn only_present_families_get_views() {
        assert!(Families::present_in(b"plain").views().is_empty());
        assert_eq!(Families::present_in(b"a%b").views(), [Families::PERCENT]);
        assert_eq!(Families::present_in(br"a\b&c").views().len(), 3);
    }
}
