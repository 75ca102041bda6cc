//! What is searched for: each secret as itself, its hex in either case, and
//! the base64 cores of its encodings, all compiled into one automaton.

use super::MIN_CORE_LEN;
use super::escapes::{
    Decoded, char_ref, json_escape, json_unicode_escape, lenient_escape, percent_escape,
};
use super::gate::Gate;
use super::grams::Grams;
use super::views::{Families, Runs};
use crate::text::syntax::hex_at;
use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use memchr::memmem::Finder;
use std::collections::BTreeMap;

/// What a concealer searches with.
pub(super) enum Matcher {
    /// No secret: concealing is the identity.
    Nothing,
    Automaton(Box<Search>),
    /// The automaton could not be built (only past size limits no real
    /// token set reaches). Concealing everything is the only answer that
    /// keeps the promise.
    FailClosed,
}

/// What a hit of a pattern conceals.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    /// The secret itself, or its hex: conceal exactly the hit.
    Exact,
    /// A base64 core: conceal the hit and the characters beside it that
    /// share its secret's bits, `before` it and `after` it (0 or 1 each),
    /// with the padding that follows. A core of a piece of the secret (what
    /// an echo cut short at either end still holds, [`cut_cores`]) names
    /// in `outer` the rest of the whole secret's core ([`Search::outers`]),
    /// and `before` and `after` are the whole core's.
    Base64Core { before: u8, after: u8, outer: u32 },
}

/// No [`Outer`]: the core is a whole secret's.
pub(super) const NO_OUTER: u32 = u32::MAX;

/// How many bytes, at each end of a secret, the base64 of an echo cut
/// short may leave out and still be concealed: one group of three. An
/// engine that echoes a token's base64 but drops its last characters (a
/// cut field, a width limit) shows all but those bytes, and 30 of a
/// token's 33 characters are as good as the token.
const MARGIN: usize = 3;

/// How many of a secret's bytes an echo cut short must keep to be
/// concealed: fewer say too little of the secret to be one. Five bytes
/// are six base64 characters at every alignment, above [`MIN_CORE_LEN`],
/// so no core of a cut secret is short enough to blank ordinary words.
const MIN_KEPT: usize = 5;

/// The characters of a whole secret's core on either side of the core of
/// one of its pieces ([`cut_cores`]): a hit of the piece's core is
/// concealed with the characters beside it that spell these (so the whole
/// core of the secret, when it is there), then the one that shares their
/// bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Outer {
    /// The whole core's characters before the piece's, in order.
    pub(super) head: Vec<u8>,
    /// The whole core's characters after the piece's, in order.
    pub(super) tail: Vec<u8>,
}

/// Up to this many bytes of patterns, the automaton is a DFA (see
/// [`compile`]): a 64-character token makes about 800 bytes.
const MAX_DFA_BYTES: usize = 2048;

/// Builds the one automaton that serves every view.
pub(super) fn compile(secrets: &[&str]) -> Matcher {
    // A pattern that is both exact and a core conceals as a core, which
    // conceals the hit and maybe more; a core of two alignments, as the
    // one that shares more.
    let mut patterns: BTreeMap<Vec<u8>, Kind> = BTreeMap::new();
    for secret in secrets {
        patterns.insert(secret.as_bytes().to_vec(), Kind::Exact);
        let lower: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        patterns.insert(lower.to_ascii_uppercase().into_bytes(), Kind::Exact);
        patterns.insert(lower.into_bytes(), Kind::Exact);
    }
    for secret in secrets {
        for (core, before, after) in base64_cores(secret.as_bytes()) {
            let kind = patterns.entry(core.into_bytes()).or_insert(Kind::Exact);
            *kind = match *kind {
                Kind::Base64Core {
                    before: was_before,
                    after: was_after,
                    outer,
                } => Kind::Base64Core {
                    before: before.max(was_before),
                    after: after.max(was_after),
                    outer,
                },
                Kind::Exact => Kind::Base64Core {
                    before,
                    after,
                    outer: NO_OUTER,
                },
            };
        }
    }
    // A cut core goes in only where no other pattern is the same text (a
    // secret's whole core, or another cut core, conceals it as well).
    let mut outers: Vec<Outer> = Vec::new();
    for secret in secrets {
        for (core, before, after, outer) in cut_cores(secret.as_bytes()) {
            if let std::collections::btree_map::Entry::Vacant(entry) =
                patterns.entry(core.into_bytes())
            {
                let id = u32::try_from(outers.len()).unwrap_or(NO_OUTER);
                outers.push(outer);
                entry.insert(Kind::Base64Core {
                    before,
                    after,
                    outer: id,
                });
            }
        }
    }
    let kinds: Vec<Kind> = patterns.values().copied().collect();
    let texts: Vec<Vec<u8>> = patterns.keys().cloned().collect();
    let mut pairs = vec![0u64; 256 * 256 / 64];
    for pattern in patterns.keys() {
        for pair in pattern.windows(2) {
            if let [a, b] = *pair {
                let at = usize::from(a) << 8 | usize::from(b);
                if let Some(word) = pairs.get_mut(at / 64) {
                    *word |= 1 << (at % 64);
                }
            }
        }
    }
    let mut relevant = [false; 256];
    // The base64 characters and padding too: a view extends a base64 run
    // over them.
    for byte in patterns.keys().flatten().copied().chain(*b"\\%&#;{}+/-_=") {
        relevant[usize::from(byte)] = true;
    }
    for byte in (b'0'..=b'9').chain(b'A'..=b'Z').chain(b'a'..=b'z') {
        relevant[usize::from(byte)] = true;
    }
    let backslash = backslash_table(&relevant);
    let relevant_high = relevant.iter().skip(0x80).any(|&r| r);
    let quiet_next: [bool; 256] = std::array::from_fn(|next| {
        !matches!(u8::try_from(next), Ok(b'u' | b'x' | b'n' | b'r')) && backslash[next] == 0
    });
    let separator: [bool; 256] = std::array::from_fn(|b| {
        b < 0x80 && !relevant[b] && b != usize::from(b'\r') && b != usize::from(b'\n')
    });
    let mut in_pattern = [false; 256];
    for &byte in patterns.keys().flatten() {
        in_pattern[usize::from(byte)] = true;
    }
    let closes: [bool; 256] = std::array::from_fn(|b| {
        !in_pattern[b] && matches!(u8::try_from(b), Ok(b';' | b'}' | b'{' | b'#'))
    });
    // Two automata over the same patterns, in the same order (so a pattern
    // has one id in both). A leftmost-longest one finds where hits are: it
    // lets the vectorized prefilter (Teddy) confirm matches by itself and
    // skip ahead, about ten times faster than walking the automaton on
    // text with nothing to find. An overlapping one then reports every
    // occurrence of every pattern in a window from each hit found that
    // way (see `scan`), in one pass, whatever the patterns repeat: a
    // leftmost search restarted one byte past each hit, as this was,
    // reads a whole secret again at every restart, and an 8,000-character
    // `abab…` echoed all through an answer cost about 1,300 ns a byte.
    //
    // The automaton's kind is chosen by the patterns' total length, not
    // left to the crate: it builds a DFA for few patterns, filling each
    // missing transition by walking failure links, which costs the square
    // of the length for a secret that repeats itself (`aaaa…`: every state
    // fails to the one before). Up to `MAX_DFA_BYTES` that square is a
    // bounded cost for the fastest search; past it the contiguous NFA,
    // built in linear time (what the crate picks for many patterns).
    let total: usize = patterns.keys().map(Vec::len).sum();
    let kind = if total <= MAX_DFA_BYTES {
        AhoCorasickKind::DFA
    } else {
        AhoCorasickKind::ContiguousNFA
    };
    let longest = patterns.keys().map(Vec::len).max().unwrap_or(0);
    let shortest = patterns.keys().map(Vec::len).min().unwrap_or(0);
    let gate = Gate::new(shortest, &separator);
    let grams = Grams::new(patterns.keys().map(Vec::as_slice));
    // Twice the longest secret (each of its backslashes is two in an
    // escaped run), and even, so that pairs from a run's start land on it.
    let run_reach = 2 * secrets.iter().map(|s| s.len()).max().unwrap_or(0) + 2;
    let long_run = Finder::new(&vec![b'\\'; 2 * run_reach + 2]).into_owned();
    let build = |match_kind| {
        AhoCorasick::builder()
            .match_kind(match_kind)
            .kind(Some(kind))
            .build(patterns.keys())
    };
    match (
        build(MatchKind::LeftmostLongest),
        build(MatchKind::Standard),
    ) {
        (Ok(leftmost), Ok(overlapping)) => Matcher::Automaton(Box::new(Search {
            leftmost,
            overlapping,
            patterns: texts,
            longest,
            shortest,
            gate,
            grams,
            run_reach,
            long_run,
            kinds,
            outers,
            relevant,
            relevant_high,
            quiet_next,
            backslash,
            separator,
            closes,
            pairs,
        })),
        _ => Matcher::FailClosed,
    }
}

/// The compiled automaton and what each of its patterns conceals.
pub(super) struct Search {
    /// Finds the next hit, skipping fast over text with none.
    pub(super) leftmost: AhoCorasick,
    /// Finds every hit in a window, overlapping ones included.
    pub(super) overlapping: AhoCorasick,
    /// The patterns themselves, by pattern id: of every secret the
    /// concealer holds, for the readers that test an end of text against
    /// them (`joined.rs`).
    pub(super) patterns: Vec<Vec<u8>>,
    /// The length of the longest pattern: how far a hit can reach past
    /// where it starts.
    pub(super) longest: usize,
    /// The length of the shortest pattern: no hit's source is shorter.
    pub(super) shortest: usize,
    /// Where a hit can be at all, when the patterns are long enough for
    /// that to narrow the text down.
    pub(super) gate: Option<Gate>,
    /// Where the patterns' pieces stand, to find the hits of a short view
    /// without the automaton, when the patterns allow it.
    pub(super) grams: Option<Grams>,
    /// How many backslashes of a long run are read from each of its ends
    /// ([`Runs`]).
    pub(super) run_reach: usize,
    /// Finds a run of backslashes long enough to be read both ways.
    pub(super) long_run: Finder<'static>,
    /// What a hit of each pattern conceals, by pattern id.
    pub(super) kinds: Vec<Kind>,
    /// The rest of the whole core around each cut core, by the index a
    /// [`Kind::Base64Core`] names.
    pub(super) outers: Vec<Outer>,
    /// The bytes an escape must decode to for a view to matter: any byte
    /// of a pattern, a trigger, and any byte that can continue an escape of
    /// the next layer (letters, digits, `#`, `;`, `{`, `}`), and what a
    /// base64 run is made of.
    relevant: [bool; 256],
    /// Whether any byte of a character that is not ASCII is relevant.
    relevant_high: bool,
    /// The bytes after which a backslash is quiet ([`Search::quiet_backslash`])
    /// whatever follows: a two-byte escape that means nothing to a view.
    quiet_next: [bool; 256],
    /// What [`Search::seed_at`] makes of a backslash before each byte other
    /// than `u` and `x` (whose escapes run on): [`RELEVANT`] and [`BREAK`]
    /// flags.
    backslash: [u8; 256],
    /// The bytes two of which, side by side, no hit and no escape can
    /// span: ASCII that is not relevant (so in no pattern, no escape's
    /// body and no base64 run) and no line break. See [`windows`].
    pub(super) separator: [bool; 256],
    /// The bytes in no pattern that are a separator wherever no escape can
    /// hold them (`;`, `{`, `}`, `#`: the body of a reference or of
    /// `\u{…}`): no hit holds one unless an escape ends at it.
    pub(super) closes: [bool; 256],
    /// Which two bytes stand next to each other in some pattern, one bit
    /// per pair: only a line break between such neighbours can lie inside
    /// a hit.
    pairs: Vec<u64>,
}

impl Search {
    /// Whether some byte of `c` is relevant: only ASCII ones are, unless a
    /// secret holds a character that is not.
    fn relevant_char(&self, c: char) -> bool {
        if let Ok(b) = u8::try_from(c)
            && b.is_ascii()
        {
            return self.relevant[usize::from(b)];
        }
        self.relevant_high && decodes_relevant(&self.relevant, Decoded::Char(c))
    }

    /// Whether the backslash at `p` starts an escape that means nothing for
    /// the views and no line break: `\"` and `\t` (one lookup), and a
    /// `\uXXXX` of an accented letter or a dash when no secret holds a
    /// character that is not ASCII. Most backslashes of generated text are
    /// these; the rest go to [`Search::seed_at`].
    #[inline]
    pub(super) fn quiet_backslash(&self, text: &[u8], p: usize) -> bool {
        let Some(&next) = text.get(p + 1) else {
            return false;
        };
        if self.quiet_next[usize::from(next)] {
            return true;
        }
        if next != b'u' || self.relevant_high {
            return false;
        }
        // Four hex digits of a character that is not ASCII and no
        // surrogate (whose pair `seed_at` reads in full).
        let Some(cp) = hex_at(text, p + 2, 4) else {
            return false;
        };
        cp >= 0x80 && !(0xD800..0xE000).contains(&cp)
    }

    /// What the trigger at `p` means for the views: whether its escape
    /// decodes to a relevant byte, whether it is a line break a view joins
    /// that the text's own joined views do not, and where it ends. See
    /// [`survey`](super::survey) for why those two decide where views are
    /// decoded.
    pub(super) fn seed_at(&self, text: &[u8], p: usize) -> Seed {
        let relevant = |decoded: Option<(usize, Decoded)>| match decoded {
            None => false,
            Some((_, Decoded::Byte(b))) => self.relevant[usize::from(b)],
            Some((_, Decoded::Char(c))) => self.relevant_char(c),
        };
        let line_break =
            |decoded: Option<(usize, Decoded)>| decoded.is_some_and(|(_, d)| decodes_break(d));
        let len = |decoded: Option<(usize, Decoded)>| decoded.map_or(1, |(len, _)| len);
        match text.get(p) {
            // A two-byte escape, which the byte after the backslash alone
            // decides: one lookup.
            Some(b'\\')
                if let Some(&next) = text.get(p + 1)
                    && !matches!(next, b'u' | b'x') =>
            {
                let flags = self.backslash[usize::from(next)];
                Seed {
                    relevant: flags & RELEVANT != 0,
                    line_break: flags & BREAK != 0,
                    end: p + 2,
                }
            }
            // JSON's `\uXXXX` (or a pair of them), which both readings
            // decode alike; without four hex digits, the lenient reading's
            // `u`. Generated text writes one per accented letter or dash.
            Some(b'\\') if text.get(p + 1) == Some(&b'u') && text.get(p + 2) != Some(&b'{') => {
                match json_unicode_escape(text, p) {
                    Some(decoded) => Seed {
                        relevant: relevant(Some(decoded)),
                        line_break: line_break(Some(decoded)),
                        end: p + decoded.0,
                    },
                    None => Seed {
                        relevant: self.relevant[usize::from(b'u')],
                        line_break: false,
                        end: p + 2,
                    },
                }
            }
            // A backslash is read two ways, JavaScript's and a lenient JSON
            // reader's (`\x41` is `A` or `x41`).
            Some(b'\\') => {
                let (js, lenient) = (json_escape(text, p), lenient_escape(text, p));
                let json_break = matches!(text.get(p + 1), Some(b'n' | b'r'));
                Seed {
                    relevant: relevant(js) || relevant(lenient),
                    line_break: !json_break && (line_break(js) || line_break(lenient)),
                    end: p + len(js).max(len(lenient)),
                }
            }
            Some(b'%') => Seed::of(percent_escape(text, p), p, relevant, line_break),
            _ => Seed::of(char_ref(text, p), p, relevant, line_break),
        }
    }
}

/// Whether some byte of what an escape decodes to is relevant.
fn decodes_relevant(relevant: &[bool; 256], decoded: Decoded) -> bool {
    match decoded {
        Decoded::Byte(b) => relevant[usize::from(b)],
        Decoded::Char(c) => {
            let mut buf = [0u8; 4];
            c.encode_utf8(&mut buf)
                .bytes()
                .any(|b| relevant[usize::from(b)])
        }
    }
}

/// Whether an escape decodes to a line break.
fn decodes_break(decoded: Decoded) -> bool {
    matches!(
        decoded,
        Decoded::Byte(b'\n' | b'\r') | Decoded::Char('\n' | '\r')
    )
}

/// What one trigger means for the views ([`Search::seed_at`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Seed {
    /// Its escape decodes to a relevant byte.
    pub(super) relevant: bool,
    /// Its escape decodes to a line break that a view joins and the text's
    /// own joined views do not (anything but JSON's `\n` and `\r`).
    pub(super) line_break: bool,
    /// Where its escape ends (one byte past the trigger when it starts
    /// none).
    pub(super) end: usize,
}

impl Seed {
    /// The seed of a single decoded escape (or none) at `p`.
    fn of(
        decoded: Option<(usize, Decoded)>,
        p: usize,
        relevant: impl Fn(Option<(usize, Decoded)>) -> bool,
        line_break: impl Fn(Option<(usize, Decoded)>) -> bool,
    ) -> Seed {
        Seed {
            relevant: relevant(decoded),
            line_break: line_break(decoded),
            end: p + decoded.map_or(1, |(len, _)| len),
        }
    }
}

/// The flags of a backslash escape in [`Search::seed_at`]'s table: it
/// decodes to a relevant byte.
const RELEVANT: u8 = 1;
/// It decodes to a line break, and is not JSON's `\n` or `\r`.
const BREAK: u8 = 2;

/// [`Search::seed_at`]'s reading of a backslash before each byte, for the
/// two-byte escapes, whose meaning the byte alone decides: one lookup per
/// backslash in text that escapes a newline or a quote every few dozen
/// bytes. The decoders themselves fill it, so the two cannot disagree.
fn backslash_table(relevant: &[bool; 256]) -> [u8; 256] {
    std::array::from_fn(|next| {
        let Ok(next) = u8::try_from(next) else {
            return 0;
        };
        let escape = [b'\\', next];
        let mut seed = 0;
        let readings = [json_escape(&escape, 0), lenient_escape(&escape, 0)];
        for (_, decoded) in readings.into_iter().flatten() {
            if decodes_relevant(relevant, decoded) {
                seed |= RELEVANT;
            }
            if decodes_break(decoded) && !matches!(next, b'n' | b'r') {
                seed |= BREAK;
            }
        }
        seed
    })
}

impl Search {
    /// The readings of long backslash runs a view of `families` is decoded
    /// with: both parities when it reads backslashes and `long` says the
    /// text holds such a run, else the one that never applies.
    pub(super) fn readings(&self, families: Families, long: bool) -> impl Iterator<Item = Runs> {
        let even = Runs {
            reach: self.run_reach,
            odd: false,
        };
        let both = long && families.has_escapes();
        [even, Runs { odd: true, ..even }]
            .into_iter()
            .take(if both { 2 } else { 1 })
    }

    /// Whether `b` follows `a` somewhere in some pattern.
    pub(super) fn adjacent(&self, a: u8, b: u8) -> bool {
        let at = usize::from(a) << 8 | usize::from(b);
        self.pairs
            .get(at / 64)
            .is_some_and(|word| word & (1 << (at % 64)) != 0)
    }
}

/// The base64 of a secret behind `align` bytes of the same 3-byte group,
/// in one alphabet, and where its core stands in it.
struct Encoding {
    text: String,
    align: usize,
    url: bool,
    /// The core is `text[head..tail]`: every character but those that
    /// mix in the bytes before the secret (with 1 byte before it, the
    /// group's 2nd character; with 2, the 3rd) and the one that mixes in
    /// the bytes after it (in a final group of 1 or 2 bytes).
    head: usize,
    tail: usize,
    /// How many characters beside the core share its bits with what
    /// surrounds the secret, before it and after it (0 or 1 each).
    before: u8,
    after: u8,
}

impl Encoding {
    /// The core, when it is long enough to search for.
    fn core(&self) -> Option<&str> {
        self.text
            .get(self.head..self.tail)
            .filter(|core| core.len() >= MIN_CORE_LEN)
    }
}

/// The base64 of `secret` at each alignment (0, 1 or 2 bytes of the same
/// group before it), in both alphabets.
fn encodings(secret: &[u8]) -> Vec<Encoding> {
    let mut all = Vec::with_capacity(6);
    for align in 0..3 {
        let mut data = vec![0u8; align];
        data.extend_from_slice(secret);
        let n = data.len();
        for (url, engine) in [(false, STANDARD_NO_PAD), (true, URL_SAFE_NO_PAD)] {
            all.push(Encoding {
                text: engine.encode(&data),
                align,
                url,
                head: [0, 2, 3][align],
                tail: 4 * (n / 3) + [0, 1, 2][n % 3],
                before: u8::from(align != 0),
                after: u8::from(n % 3 != 0),
            });
        }
    }
    all
}

/// The characters of the secret's base64 that only the secret determines,
/// at each alignment, in both alphabets, each once; each with how many
/// characters beside it, before and after, mix the secret's bits with
/// those of what surrounds it.
fn base64_cores(secret: &[u8]) -> Vec<(String, u8, u8)> {
    let mut cores: Vec<(String, u8, u8)> = Vec::with_capacity(6);
    for encoding in encodings(secret) {
        if let Some(core) = encoding.core()
            && !cores.iter().any(|(c, ..)| c == core)
        {
            cores.push((core.to_owned(), encoding.before, encoding.after));
        }
    }
    cores
}

/// The pieces of a secret of `len` bytes that the echoes cut short hold
/// whole: the secret less up to [`MARGIN`] bytes at either end, when it
/// keeps at least [`MIN_KEPT`] bytes, holds one of these. A secret of 11
/// bytes or more has one, its middle, without [`MARGIN`] bytes at each
/// end; a shorter one has the pieces of [`MIN_KEPT`] bytes such cuts keep
/// (for 8 bytes, the four that start at 0 to 3). None for a secret too
/// short to be cut and keep enough (its only piece would be itself).
fn pieces(len: usize) -> Vec<std::ops::Range<usize>> {
    let keep = MIN_KEPT.max(len.saturating_sub(2 * MARGIN));
    if len <= keep {
        return Vec::new();
    }
    (len.saturating_sub(keep + MARGIN)..=MARGIN.min(len - keep))
        .map(|start| start..start + keep)
        .collect()
}

/// The cores of the pieces of `secret` an echo cut short still holds
/// ([`pieces`]), each with the characters of the whole secret's core
/// around it: what the base64 of a cut echo holds, at any alignment. A
/// piece's core at each alignment is a part of the whole secret's core at
/// the alignment that puts the piece's bytes in the same place in their
/// groups, whole groups further on.
fn cut_cores(secret: &[u8]) -> Vec<(String, u8, u8, Outer)> {
    let mut found = Vec::new();
    let whole = encodings(secret);
    for range in pieces(secret.len()) {
        let start = range.start;
        let Some(piece) = secret.get(range) else {
            continue;
        };
        for cut in encodings(piece) {
            let Some(core) = cut.core() else {
                continue;
            };
            let Some(outer) = whole
                .iter()
                .find(|w| w.url == cut.url && (w.align + start) % 3 == cut.align)
            else {
                continue;
            };
            // The piece's groups start this many whole groups into the
            // secret's: four characters each.
            let shift = 4 * (outer.align + start - cut.align) / 3;
            let (at, end) = (cut.head + shift, cut.tail + shift);
            let (Some(head), Some(tail)) = (
                outer.text.get(outer.head..at),
                outer.text.get(end..outer.tail),
            ) else {
                continue;
            };
            debug_assert_eq!(outer.text.get(at..end), Some(core));
            // Where the whole core is there, what shares its bits beside
            // it is the whole secret's (and where it is not, the first
            // character that differs, which `base64_shared` takes).
            let (before, after) = (outer.before, outer.after);
            let outer = Outer {
                head: head.as_bytes().to_vec(),
                tail: tail.as_bytes().to_vec(),
            };
            found.push((core.to_owned(), before, after, outer));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the base64 of `data`, in either alphabet, holds one of
    /// `secret`'s cores, whole or cut.
    fn holds_a_core(secret: &[u8], data: &[u8]) -> bool {
        let cores: Vec<String> = base64_cores(secret)
            .into_iter()
            .map(|(core, ..)| core)
            .chain(cut_cores(secret).into_iter().map(|(core, ..)| core))
            .collect();
        [STANDARD_NO_PAD.encode(data), URL_SAFE_NO_PAD.encode(data)]
            .iter()
            .all(|encoded| cores.iter().any(|core| encoded.contains(core.as_str())))
    }

    #[test]
    fn an_echo_cut_short_holds_a_core_at_every_length_and_alignment() {
        let token = b"acme/9f8e+7d6c=not-for-print-0042";
        for len in 5..=token.len() {
            let secret = &token[..len];
            for front in 0..=MARGIN {
                for back in 0..=MARGIN {
                    let Some(cut) = secret.get(front..len.saturating_sub(back)) else {
                        continue;
                    };
                    if cut.len() < MIN_KEPT {
                        continue;
                    }
                    for before in 0..3 {
                        for after in 0..3 {
                            let mut data = vec![0xA5u8; before];
                            data.extend_from_slice(cut);
                            data.extend(std::iter::repeat_n(0x5Au8, after));
                            assert!(
                                holds_a_core(secret, &data),
                                "{len} bytes less {front} and {back}, {before} before"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_cut_core_stands_in_the_whole_core_between_its_outer_characters() {
        let token = b"acme/9f8e+7d6c=not-for-print-0042";
        for len in 6..=token.len() {
            let secret = &token[..len];
            let cut = cut_cores(secret);
            assert!(!cut.is_empty(), "{len}");
            let whole: Vec<String> = base64_cores(secret)
                .into_iter()
                .map(|(core, ..)| core)
                .collect();
            for (core, _, _, outer) in &cut {
                assert!(core.len() > MIN_CORE_LEN, "{core}");
                let spelled = [
                    outer.head.as_slice(),
                    core.as_bytes(),
                    outer.tail.as_slice(),
                ]
                .concat();
                assert!(
                    whole.iter().any(|c| c.as_bytes() == spelled),
                    "{len}: {core}"
                );
            }
        }
        // Too short to be cut and keep five bytes: its whole cores alone.
        assert!(cut_cores(b"abcd").is_empty());
        assert!(cut_cores(b"abcde").is_empty());
    }

    #[test]
    fn the_pieces_are_the_middle_or_every_five_bytes_a_cut_keeps() {
        assert!(pieces(4).is_empty());
        assert!(pieces(5).is_empty());
        assert_eq!(pieces(6), [0..5, 1..6]);
        assert_eq!(pieces(8), [0..5, 1..6, 2..7, 3..8]);
        assert_eq!(pieces(10), [2..7, 3..8]);
        assert_eq!(pieces(11), vec![3..8]);
        assert_eq!(pieces(33), vec![3..30]);
    }

    #[test]
    fn cores_of_a_four_char_secret_are_all_long_enough() {
        let cores = base64_cores(b"abcd");
        assert_eq!(cores.len(), 3, "{cores:?}");
        assert!(cores.iter().all(|(c, ..)| c.len() >= MIN_CORE_LEN));
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
                    cores.iter().any(|(c, ..)| std.contains(c.as_str())),
                    "{before} {after}"
                );
                assert!(
                    cores.iter().any(|(c, ..)| url.contains(c.as_str())),
                    "{before} {after}"
                );
            }
        }
    }
}
