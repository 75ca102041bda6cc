//! What the crate may print, as types: the one file that says how the
//! token is kept out of every string the crate puts out, and how to check.
//!
//! Refusals are pasted into public merge-request comments, and spans and
//! log lines go wherever a subscriber sends them: a token in any of them,
//! in any encoding, is a bill anyone can run up. So "the token is printed
//! nowhere" is not left to each place that writes words: it is kept by
//! three types, as rustls keeps its guarantees in its types, and they are
//! made here.
//!
//! - [`Shown`]: text that may be printed. A refusal holds nothing else
//!   (reason, remedy, variable, request id, host, idempotency key), nor does
//!   the evidence it is written from (the engine's words and codes, a wait
//!   as sent, a challenge, a redirect's host, a hold's cause and field),
//!   nor what a span records of the scope and the engine, nor the crate's
//!   log lines and `BuildError` messages.
//! - [`Unshown`]: text from outside the crate kept before it is shown (the
//!   caller's scope). No `Display`, a `Debug` that shows nothing of it, and
//!   its text only by name, [`Unshown::unshown`], for a reader that derives
//!   something from it: the variables a scope names (which are shown in
//!   turn when a refusal names them), a Redis key checked for secrets.
//! - [`Concealed`]: engine text concealed as it entered (an error body's
//!   head, a redirect's `location`). Every parser may read it
//!   ([`Concealed::as_str`]); what is quoted of it becomes a `Shown`
//!   through the concealer again, since a part a parser cuts out can spell
//!   a form the whole did not (`\\u0041` cut after its first backslash
//!   reads as `\u0041`).
//!
//! # The invariant
//!
//! A [`Shown`] is made in this file alone, in one of four ways:
//!
//! 1. by the concealer, from outside text: [`Concealer::show`] (concealed,
//!    then cut by the escape-aware bound, so no cut leaves part of a token
//!    or half an escape), [`Concealer::show_all`] (concealed, not cut: a
//!    name, a key, a log line whose parts are the crate's),
//!    [`Concealer::show_engine`] (a piece of an engine's text: also
//!    scrubbed of credentials by shape, tamed, trimmed, then cut),
//!    [`Concealer::show_tamed`] (a name a caller gave: concealed, tamed,
//!    cut) and [`Concealer::show_unchanged`] (text in which the concealer
//!    finds nothing: an idempotency key);
//! 2. from `Shown`s and the crate's own words, with [`shown!`] (or
//!    `Shown::from` a literal): a format string whose every piece is a
//!    [`Show`]. `Show` is sealed, and implemented here for `Shown`,
//!    `&'static str` (the crate's literals), integers and a UUID the crate
//!    drew; a delay or a time becomes a `Shown` through [`Shown::seconds`]
//!    and [`Shown::date`]. The string is written in a nested function,
//!    which sees none of the caller's locals: only a constant (an item, so
//!    the crate's own words) can be named in it;
//! 3. from a `Shown`: [`Shown::push`], [`Shown::join`], [`Shown::quoted`],
//!    [`Shown::after`], and [`Shown::seal`], the last defence every
//!    refusal the crate writes passes on its way out (each string concealed
//!    once more, then bounded: `refusal/render/mod.rs`);
//! 4. as a predictor gave it to a public constructor for its own tests and
//!    fakes, or as a report read back holds it: [`Shown::given`]. The
//!    crate writes its own refusals with `Refusal::written`, which takes
//!    `Shown`s.
//!
//! What does not compile, then (each tried when this was written; a
//! `compile_fail` doctest of a private item is never run):
//! `shown!("{secret}")` with a local `secret` ("can't capture dynamic
//! environment in a fn item"); `shown!("{}", secret)` with a `String`
//! ("`String: Show` is not satisfied"); `shown!("{}", secret.as_str())`
//! ("borrowed value does not live long enough": a piece that is a `&str`
//! must be `'static`); `shown!("{:?}", shown)` (a piece has no `Debug`:
//! [`Shown::quoted`] says what the quotes escape).
//!
//! # How a reviewer checks it
//!
//! - Read this file: every way a `Shown` is made is above, and every
//!   implementation of [`Show`] and of [`Outside`] is here (both traits
//!   are sealed).
//! - `grep -rn 'Shown::given' src/` finds only the public constructors of
//!   fakes: `Refusal::new` and `Refusal::with_request_id`
//!   (`refusal/mod.rs`) and `AnswerStream::with_request_id`
//!   (`stream/mod.rs`). `Shown::written` is called by [`shown!`] alone.
//! - `grep -rn '\.unshown()' src/` finds each reader of an `Unshown`, none
//!   of which prints what it reads.
//! - The sinks that are not the crate's own types take any text, and are
//!   fed a `Shown` (or a number) by hand: `tracing`'s spans and events, and
//!   `BuildError`'s public `String` fields (`.into_string()` of a `Shown`).
//!   `grep -rnE 'tracing::(info|warn|debug)!|\.record\(|BuildError::[A-Z][a-z]+\(' src/`
//!   lists them.
//!
//! Not kept by these types: the answer itself (the engine's body, concealed
//! as it streams in, is the caller's text, not the crate's words), and the
//! public errors made before any concealer exists (`NamingError` quotes a
//! rejected prefix or stem, as `Naming::new` was given it).

use std::fmt;
use std::ops::Deref;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Concealer;
use crate::text::{bound_whole, tame};

/// Text that may be printed: concealed (and, where it quotes outside text,
/// bounded) by the concealer, or the crate's own words around such text.
/// Made only in this file (see the module docs).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Shown(String);

impl Shown {
    /// The text, to read or print.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, for a public field that holds a `String`.
    pub(crate) fn into_string(self) -> String {
        self.0
    }

    /// Text a caller gave a public constructor, for their own tests and
    /// fakes, kept as they gave it (`Refusal::new`, a report read back).
    /// The crate's own text never comes this way.
    pub(crate) fn given(text: String) -> Shown {
        Shown(text)
    }

    /// `piece` added at the end.
    pub(crate) fn push(&mut self, piece: impl Show) {
        use fmt::Write as _;
        // Writing to a `String` cannot fail.
        let _ = write!(self.0, "{piece}");
    }

    /// The pieces, with `separator` between each two.
    pub(crate) fn join<'a>(
        pieces: impl IntoIterator<Item = &'a Shown>,
        separator: &'static str,
    ) -> Shown {
        let mut joined = Shown::default();
        for (at, piece) in pieces.into_iter().enumerate() {
            if at > 0 {
                joined.push(separator);
            }
            joined.push(piece);
        }
        joined
    }

    /// The text in double quotes, escaped as Rust's `Debug` escapes a
    /// string (`scope "acme"`).
    pub(crate) fn quoted(&self) -> Shown {
        Shown(format!("{:?}", self.0))
    }

    /// The text after `prefix`, when it starts with it.
    pub(crate) fn after(&self, prefix: &Shown) -> Option<Shown> {
        self.0
            .strip_prefix(prefix.as_str())
            .map(|rest| Shown(rest.to_owned()))
    }

    /// The last pass over a string about to leave the crate: concealed once
    /// more, then bounded, so no bound can cut a token the concealer has
    /// not seen.
    pub(crate) fn seal(self, concealer: &Concealer, max_chars: usize) -> Shown {
        let concealed = match concealer.conceal(&self.0) {
            std::borrow::Cow::Borrowed(_) => self.0,
            std::borrow::Cow::Owned(concealed) => concealed,
        };
        match bound_whole(&concealed, max_chars) {
            kept if kept.len() == concealed.len() => Shown(concealed),
            kept => Shown(kept.to_owned()),
        }
    }

    /// A delay as a reason states it: `15 s`, `1.500 s`, `15 min`,
    /// `2 h 5 min`.
    pub(crate) fn seconds(delay: Duration) -> Shown {
        Shown(crate::text::seconds_phrase(delay))
    }

    /// A time as an HTTP date, or in words past what one can name.
    pub(crate) fn date(at: SystemTime) -> Shown {
        Shown(crate::clock::http_date(at))
    }

    /// What [`shown!`] writes: `write` is the macro's nested function,
    /// which sees only `pieces`. Called by [`shown!`] alone.
    #[doc(hidden)]
    pub(crate) fn written(write: Write, pieces: &[&dyn fmt::Display]) -> Shown {
        struct Writing<'a> {
            write: Write,
            pieces: &'a [&'a dyn fmt::Display],
        }
        impl fmt::Display for Writing<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                (self.write)(f, self.pieces)
            }
        }
        Shown(Writing { write, pieces }.to_string())
    }
}

/// The nested function a [`shown!`] writes with.
pub(crate) type Write = fn(&mut fmt::Formatter<'_>, &[&dyn fmt::Display]) -> fmt::Result;

/// The crate's own words.
impl From<&'static str> for Shown {
    fn from(words: &'static str) -> Shown {
        Shown(words.to_owned())
    }
}

impl Deref for Shown {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl PartialEq<str> for Shown {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Shown {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl Serialize for Shown {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// A report read back holds what it held when it was written.
impl<'de> Deserialize<'de> for Shown {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Shown, D::Error> {
        String::deserialize(deserializer).map(Shown::given)
    }
}

mod sealed {
    /// Implemented in this file alone: what may be a piece of a `Shown`.
    pub trait Sealed {}
    /// Implemented in this file alone: what the concealer shows.
    pub trait Outside {}
}

/// What a [`shown!`] may write: a [`Shown`], the crate's literals, numbers,
/// and a UUID the crate drew. Sealed: only this file implements it.
pub(crate) trait Show: sealed::Sealed + fmt::Display {}

macro_rules! show {
    ($($piece:ty),* $(,)?) => {
        $(
            impl sealed::Sealed for $piece {}
            impl Show for $piece {}
        )*
    };
}

show!(
    Shown,
    &Shown,
    &'static str,
    u16,
    u32,
    u64,
    usize,
    uuid::Uuid
);

/// One piece of a [`shown!`], checked to be a [`Show`].
#[doc(hidden)]
pub(crate) fn piece<T: Show>(piece: &T) -> &dyn fmt::Display {
    piece
}

/// The next piece, in the order the format string names them.
#[doc(hidden)]
pub(crate) fn next<'p>(
    pieces: &mut std::slice::Iter<'_, &'p dyn fmt::Display>,
    _named: &str,
) -> &'p dyn fmt::Display {
    pieces.next().copied().unwrap_or(&"")
}

/// A [`Shown`] written from a format string and pieces that are each a
/// [`Show`]: `shown!("{}: the engine at {} answered HTTP {}", scope, host, 429)`.
///
/// Every piece is an argument; a `{name}` captured from the caller's scope
/// does not compile, since the string is written in a nested function
/// that sees none of the caller's locals (a constant of the crate's own
/// words does: it is an item).
macro_rules! shown {
    ($format:literal $(,)?) => {{
        fn write(
            out: &mut ::std::fmt::Formatter<'_>,
            _: &[&dyn ::std::fmt::Display],
        ) -> ::std::fmt::Result {
            ::std::write!(out, $format)
        }
        $crate::conceal::shown::Shown::written(write, &[])
    }};
    ($format:literal $(, $piece:expr)+ $(,)?) => {{
        fn write(
            out: &mut ::std::fmt::Formatter<'_>,
            pieces: &[&dyn ::std::fmt::Display],
        ) -> ::std::fmt::Result {
            let mut pieces = pieces.iter();
            ::std::write!(
                out,
                $format
                $(, $crate::conceal::shown::next(&mut pieces, ::std::stringify!($piece)))+
            )
        }
        $crate::conceal::shown::Shown::written(
            write,
            &[$($crate::conceal::shown::piece(&$piece)),+],
        )
    }};
}
pub(crate) use shown;

/// Text from outside the crate, kept before it is shown: no `Display`, a
/// `Debug` that shows nothing of it, and its text only by name.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Unshown(String);

impl Unshown {
    pub(crate) fn new(text: impl Into<String>) -> Unshown {
        Unshown(text.into())
    }

    /// The text, for a reader that derives from it what is not printed
    /// (the variables a scope names, a key checked for secrets): printed,
    /// it goes through [`Concealer::show`].
    pub(crate) fn unshown(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Unshown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Unshown(..)")
    }
}

/// Engine text concealed as it came in: any parser may read it, nothing
/// may print it (a part of it is quoted through the concealer again).
pub(crate) struct Concealed(String);

impl Concealed {
    /// The concealed text, for a parser.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Concealed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Concealed({} bytes)", self.0.len())
    }
}

/// Outside text the concealer shows: a `str`, a `String`, an [`Unshown`].
pub(crate) trait Outside: sealed::Outside {
    #[doc(hidden)]
    fn outside(&self) -> &str;
}

impl sealed::Outside for str {}
impl sealed::Outside for String {}
impl sealed::Outside for Unshown {}

impl Outside for str {
    fn outside(&self) -> &str {
        self
    }
}

impl Outside for String {
    fn outside(&self) -> &str {
        self
    }
}

impl Outside for Unshown {
    fn outside(&self) -> &str {
        &self.0
    }
}

impl Concealer {
    /// `text` concealed, then cut to at most `max_chars` characters by the
    /// escape-aware bound: concealment first, so no cut can leave part of a
    /// token behind.
    pub(crate) fn show<T: Outside + ?Sized>(&self, text: &T, max_chars: usize) -> Shown {
        let text = text.outside();
        let concealed = self.conceal(text);
        Shown(bound_whole(&concealed, max_chars).to_owned())
    }

    /// `text` concealed, and not cut: a Redis key or address, a message
    /// the crate's own limits keep short.
    pub(crate) fn show_all<T: Outside + ?Sized>(&self, text: &T) -> Shown {
        Shown(self.conceal(text.outside()).into_owned())
    }

    /// A name a caller gave (a header's): concealed, its control characters
    /// turned into spaces, then cut to at most `max_chars` characters.
    pub(crate) fn show_tamed<T: Outside + ?Sized>(&self, text: &T, max_chars: usize) -> Shown {
        let concealed = self.conceal(text.outside());
        Shown(bound_whole(&tame(&concealed), max_chars).to_owned())
    }

    /// One short piece of engine text a reason quotes (a header value, a
    /// code, the engine's words): scrubbed of every credential's shape as
    /// well as concealed, before anything reshapes it (a line break JSON
    /// decoded is one of a token's forms, which a space in its place would
    /// hide), and again once control characters are tamed into spaces, for
    /// any shape that made; then trimmed and cut.
    pub(crate) fn show_engine(&self, value: &[u8], max_chars: usize) -> Shown {
        let text = String::from_utf8_lossy(value);
        let scrubbed = self.scrub(&text);
        let tamed = tame(&scrubbed);
        let scrubbed = self.scrub(&tamed);
        let kept = bound_whole(scrubbed.trim(), max_chars).trim_end();
        // Most values (a request id) are kept whole: no copy is made of them.
        if kept.len() == scrubbed.len() {
            return Shown(scrubbed);
        }
        Shown(kept.to_owned())
    }

    /// `text` itself, when the concealer finds no secret in it (a caller's
    /// idempotency key); `None` when it finds one.
    pub(crate) fn show_unchanged<T: Outside + ?Sized>(&self, text: &T) -> Option<Shown> {
        let text = text.outside();
        (!self.finds(text)).then(|| Shown(text.to_owned()))
    }

    /// Whether the concealer finds a secret in `text` (it would change it).
    pub(crate) fn finds<T: Outside + ?Sized>(&self, text: &T) -> bool {
        let text = text.outside();
        self.conceal(text) != text
    }

    /// The head of an engine's body, read whole, concealed as it enters:
    /// the text itself when nothing in it was concealed (no copy).
    pub(crate) fn admit(&self, text: String) -> Concealed {
        match self.conceal(&text) {
            std::borrow::Cow::Borrowed(_) => Concealed(text),
            std::borrow::Cow::Owned(concealed) => Concealed(concealed),
        }
    }

    /// The head of an engine's body cut before its end, where a form of a
    /// secret may be cut too (a token hard-wrapped across two lines, cut
    /// after its first): concealed as a stream conceals it, keeping only
    /// what the stream releases, never what it holds back because it could
    /// be part of a form.
    pub(crate) fn admit_cut(&self, text: &str) -> Concealed {
        let mut released = String::with_capacity(text.len());
        self.stream().push(text, &mut released);
        Concealed(released)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "mw-shown-Q7vX2kP9zR4tL8wN";

    fn concealer() -> Concealer {
        Concealer::new([TOKEN])
    }

    #[test]
    fn outside_text_is_shown_concealed_then_cut() {
        let concealer = concealer();
        // The cut at 20 characters would fall inside the token.
        let text = format!("error: {TOKEN} was refused");
        assert_eq!(concealer.show(&text, 20), "error: [redacted] wa");
        assert_eq!(
            concealer.show_all(&text),
            "error: [redacted] was refused".to_owned().as_str()
        );
        // The escape-aware bound drops an escape it would cut.
        assert_eq!(concealer.show("abc%41def", 5), "abc");
        assert_eq!(concealer.show_tamed("x-a\nb", 64), "x-a b");
    }

    #[test]
    fn engine_text_loses_credentials_by_shape_and_control_characters() {
        let concealer = concealer();
        let shown = concealer.show_engine(
            format!("  sent Bearer abc.def to https://u:p@h.example/x?k={TOKEN}\r\n").as_bytes(),
            200,
        );
        assert_eq!(
            shown,
            "sent Bearer [redacted] to https://h.example"
                .to_owned()
                .as_str()
        );
        assert_eq!(concealer.show_engine(b"req-7", 100), "req-7");
    }

    #[test]
    fn an_engine_value_is_concealed_before_its_line_breaks_are_tamed() {
        // A token hard-wrapped by one line break (as a JSON string decodes
        // it) is one of its forms; a space in the break's place is none.
        let token = "mw-words-Q7vX2kP9zR4tL8wN";
        let concealer = Concealer::new([token]);
        let (first, second) = token.split_at(12);
        let value = concealer.show_engine(format!("key {first}\n{second} refused").as_bytes(), 200);
        assert!(!value.contains(first) && !value.contains(second), "{value}");
        assert!(value.contains("[redacted]"), "{value}");
    }

    #[test]
    fn only_text_without_a_secret_is_shown_unchanged() {
        let concealer = concealer();
        assert_eq!(
            concealer.show_unchanged("order-7"),
            Some(Shown::from("order-7"))
        );
        assert_eq!(concealer.show_unchanged(TOKEN), None);
        assert!(concealer.finds(&format!("x{TOKEN}y")));
        assert!(!concealer.finds("nothing"));
    }

    #[test]
    fn pieces_are_written_in_order_and_indexed_ones_once() {
        let host = concealer().show(&format!("{TOKEN}.example"), 200);
        let shown = shown!(
            "the engine at {} answered HTTP {}: {}",
            host,
            429u16,
            "wait"
        );
        assert_eq!(
            shown,
            "the engine at [redacted].example answered HTTP 429: wait"
        );
        let twice = shown!("{0} and {0}, then {1}", "one", 2u64);
        assert_eq!(twice, "one and one, then 2");
        assert_eq!(shown!("no {{pieces}}"), "no {pieces}");
        /// The crate's own words, as an item, may be named in the string.
        const WORDS: &str = "the crate's words";
        assert_eq!(shown!("{WORDS}: {}", 1usize), "the crate's words: 1");
    }

    #[test]
    fn a_shown_built_from_shown_pieces_stays_shown() {
        let concealer = concealer();
        let scope = concealer.show(&format!("acme-{TOKEN}"), 64).quoted();
        assert_eq!(scope, "\"acme-[redacted]\"");
        let joined = Shown::join(
            [
                &Shown::from("HTTP 503"),
                &Shown::seconds(Duration::from_secs(90)),
            ],
            ", ",
        );
        assert_eq!(joined, "HTTP 503, 1 min 30 s");
        let mut words = Shown::from("a\tb");
        words.push(7u32);
        assert_eq!(words, "a\tb7");
        assert_eq!(
            Shown::from("scope: rest").after(&Shown::from("scope: ")),
            Some(Shown::from("rest"))
        );
    }

    #[test]
    fn the_seal_conceals_what_a_given_text_held_then_bounds_it() {
        let given = Shown::given(format!("the engine said {TOKEN} and more"));
        assert_eq!(
            given.seal(&concealer(), 24),
            "the engine said [redacte".to_owned().as_str()
        );
    }

    #[test]
    fn outside_and_concealed_text_print_nothing_of_themselves() {
        let unshown = Unshown::new(TOKEN);
        assert_eq!(format!("{unshown:?}"), "Unshown(..)");
        assert_eq!(unshown.unshown(), TOKEN);
        let concealer = concealer();
        let head = concealer.admit(format!("{{\"echo\":\"{TOKEN}\"}}"));
        assert_eq!(head.as_str(), "{\"echo\":\"[redacted]\"}");
        assert_eq!(format!("{head:?}"), "Concealed(21 bytes)");
        // A head cut inside a form keeps only what a stream releases.
        let cut = concealer.admit_cut(&format!("ok {}", &TOKEN[..12]));
        assert!(!cut.as_str().contains(&TOKEN[..12]), "{cut:?}");
    }
}
