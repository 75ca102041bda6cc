//! The windowed concealer held to the whole-text decoding, on texts built
//! from fragments of every encoding a window could read wrong.
//!
//! `Concealer::conceal` decodes its views only in windows around the
//! escapes that can matter; the whole-text decoding (`conceal_whole`,
//! reached through the fuzzing shim) decodes every view over the whole
//! text and is the reference. The two must give the same output, byte for
//! byte, for every text and every set of secrets.
//!
//! What a window can get wrong is whatever reads across its edges, so the
//! texts are built from fragments that reach those:
//! - every form of a secret the concealer knows (raw, hex, JSON and
//!   JavaScript escapes, lenient backslashes, percent-encoding, HTML
//!   references with leading zeros and legacy names, base64 behind a
//!   prefix, of the secret or of it cut short, two layers), whole,
//!   partial or mutated;
//! - runs of triggers and half escapes (`\\\u002B`, `%%41`, `&&#43;`,
//!   `\u00`), whose reading depends on where the decoding starts;
//! - base64 runs that a core hit reaches into: long, wrapped at any width,
//!   and with a few escapes far apart inside them (`%2B`, `\/`);
//! - secrets broken across lines, raw or escaped, which joined views put
//!   back together;
//! - escapes of different families far apart, separated by long plain
//!   runs: the families present decide which views (combined, lenient) the
//!   whole text gets, where a window may see only one of them.
//!
//! The stream is held to the same output too, given the text in pieces of
//! a length the input's seventeenth byte sets.
//!
//! The fuzzer's input is two seeds, one for the secrets and one for the
//! text: the generator is a splitmix64, so an input is the same case on
//! every machine, and the fuzzer's mutations walk the generator's space
//! rather than the bytes of a text. Every [`TALLY_EVERY`] cases the run is
//! held to a floor on the share of cases whose text holds an escape
//! trigger and of those that conceal something, so that a generator that
//! drifted into producing nothing to conceal cannot pass for a check.

#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::{
    GeneralPurpose, STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
};
use libfuzzer_sys::fuzz_target;
use meterwire::Concealer;
use std::sync::Mutex;

/// How many cases a tally covers before its shares are held to the floor.
const TALLY_EVERY: u64 = 1_000;

/// Every share the run is held to is at least one case in this many.
const SHARE_FLOOR: u64 = 5;

/// Mixed into the seed of the secrets, and of the text.
const SECRETS_SEED: u64 = 0x6d65_7465_7277_6972;
const TEXT_SEED: u64 = 0x636f_6e63_6561_6c21;

static TALLY: Mutex<Tally> = Mutex::new(Tally::new());

fuzz_target!(|data: &[u8]| {
    let seed = |at: usize| {
        let mut bytes = [0u8; 8];
        for (slot, b) in bytes.iter_mut().zip(data.iter().skip(at)) {
            *slot = *b;
        }
        u64::from_le_bytes(bytes)
    };
    let (secrets_seed, text_seed) = (seed(0), seed(8));
    let secrets = secrets(secrets_seed);
    let concealer = Concealer::new(secrets.iter().map(String::as_str));
    let text = text(text_seed, &secrets);
    let windowed = concealer.conceal(&text);
    let whole = meterwire::fuzzing::conceal_whole(&concealer, &text);
    assert_eq!(
        windowed, whole,
        "conceal (left) and conceal_whole (right) differ\n \
         secrets: {secrets:?}\n text: {text:?}",
    );
    // The same text in pieces (cut every `step` bytes, the step chosen by
    // the input), through a stream, is concealed exactly as whole.
    let step = 1 + usize::from(data.get(16).copied().unwrap_or(0));
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut cut = (at + step).min(text.len());
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        pieces.push(&text[at..cut]);
        at = cut;
    }
    let (streamed, held, reach) = meterwire::fuzzing::conceal_in_pieces(&concealer, &pieces);
    assert_eq!(
        streamed, windowed,
        "the stream (left) and the whole text (right) differ\n \
         secrets: {secrets:?}\n pieces: {pieces:?}",
    );
    assert!(held <= reach, "the stream held {held} bytes, past its reach {reach}");
    // The two decodings share the patterns, so a pattern wrong in both (a
    // base64 core cut short, one alignment missing) passes the comparison:
    // the cores are computed here as well, from the base64 crate, and no
    // text the concealer kept holds one, or a secret as itself.
    for secret in secrets.iter().filter(|s| s.chars().count() >= 4 && !s.contains(['\n', '\r'])) {
        for kept in windowed.split(meterwire::REDACTED) {
            assert!(
                !kept.contains(secret.as_str()),
                "{secret:?} kept as itself in {windowed:?}\n text: {text:?}"
            );
            for core in cut_cores(secret.as_bytes()) {
                assert!(
                    !kept.contains(core.as_str()),
                    "the base64 core {core:?} of {secret:?}, or of it cut short, kept in \
                     {windowed:?}\n text: {text:?}"
                );
            }
        }
    }
    if let Ok(mut tally) = TALLY.lock() {
        tally.count(&secrets, &text, &windowed);
    }
});

/// The base64 cores of `secret` and of every cut of it by up to three
/// bytes at either end that keeps five: what the base64 of an echo cut
/// short holds.
fn cut_cores(secret: &[u8]) -> Vec<String> {
    let mut all = Vec::new();
    for front in 0..=3 {
        for back in 0..=3 {
            let end = secret.len().saturating_sub(back);
            if let Some(cut) = secret.get(front..end)
                && (cut.len() >= 5 || front + back == 0)
            {
                all.extend(cores(cut));
            }
        }
    }
    all
}

/// The base64 cores of `secret`, as the concealer's contract defines
/// them and computed apart from it: at each alignment (0, 1 or 2 bytes of
/// a 3-byte group before it), in both alphabets, the characters of its
/// encoding from the first that carries only its bits to the last; the
/// ones of 4 characters or more.
fn cores(secret: &[u8]) -> Vec<String> {
    let mut cores = Vec::new();
    for align in 0..3 {
        let mut data = vec![0u8; align];
        data.extend_from_slice(secret);
        let head = [0, 2, 3][align];
        let tail = 4 * (data.len() / 3) + [0, 1, 2][data.len() % 3];
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            if let Some(core) = engine.encode(&data).get(head..tail)
                && core.len() >= 4
            {
                cores.push(core.to_owned());
            }
        }
    }
    cores
}

/// What the run generated, counted so the generator is held to doing
/// something.
struct Tally {
    cases: u64,
    /// Cases whose text holds a `\`, `%` or `&`.
    triggered: u64,
    /// Cases where `conceal` changed the text.
    concealed: u64,
    /// Cases that did both: an escape trigger in the text, and something
    /// concealed.
    both: u64,
    /// Cases where something was concealed though no secret was in the
    /// text as itself: only an encoded or broken form was there.
    encoded_only: u64,
}

impl Tally {
    const fn new() -> Tally {
        Tally {
            cases: 0,
            triggered: 0,
            concealed: 0,
            both: 0,
            encoded_only: 0,
        }
    }

    fn count(&mut self, secrets: &[String], text: &str, output: &str) {
        let triggered = text.contains(['\\', '%', '&']);
        let concealed = output != text;
        self.cases += 1;
        self.triggered += u64::from(triggered);
        self.concealed += u64::from(concealed);
        self.both += u64::from(triggered && concealed);
        self.encoded_only +=
            u64::from(concealed && !secrets.iter().any(|secret| text.contains(secret.as_str())));
        if self.cases == TALLY_EVERY {
            self.hold_to_floor();
            *self = Tally::new();
        }
    }

    fn hold_to_floor(&self) {
        let cases = self.cases;
        for (share, what) in [
            (self.triggered, "held a `\\`, `%` or `&`"),
            (self.concealed, "were changed by conceal"),
            (self.both, "held a trigger and were changed"),
            (
                self.encoded_only,
                "were changed with no secret there as itself",
            ),
        ] {
            assert!(
                share * SHARE_FLOOR >= cases,
                "the generator is too tame: only {share} of the {cases} cases run {what}, \
                 under one in {SHARE_FLOOR}"
            );
        }
    }
}

/// splitmix64: small, fast, and good enough to pick fragments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`; 0 when `n` is 0.
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // usize is at most 64 bits, and the remainder is below `n`.
        (self.next() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with this chance, in percent.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items`, which is never empty here.
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// A random char of `alphabet`, which is ASCII and never empty here.
    fn char_of(&mut self, alphabet: &str) -> char {
        char::from(self.pick(alphabet.as_bytes()))
    }

    /// `value` as `width` hex digits (more if it needs them), each digit's
    /// case chosen by a style picked per call: lower, upper, or mixed.
    fn hex(&mut self, value: u32, width: usize) -> String {
        let lower = format!("{value:0width$x}");
        match self.below(3) {
            0 => lower,
            1 => lower.to_ascii_uppercase(),
            _ => lower
                .chars()
                .map(|c| {
                    if self.chance(50) {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect(),
        }
    }

    /// How many leading zeros a numeric reference gets: mostly none, some
    /// a few, rarely many (they are unbounded).
    fn zeros(&mut self) -> String {
        let n = match self.below(10) {
            0..=5 => 0,
            6..=8 => self.range(1, 6),
            _ => self.range(7, 40),
        };
        "0".repeat(n)
    }
}

/// The alphabets secrets are drawn from.
const DIGITS: &str = "0123456789";
const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALPHANUMERIC: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
/// Letters and digits, with every character the escapes treat specially.
const MIXED: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\
                     +/=_-.%&\\#;\"':,! ";
/// What a secret's tail might be in a token with a prefix (`sk-`, `mw_`).
const TOKENISH: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_-.";
/// Not ASCII: one of each UTF-8 length, and a char with an HTML name.
const NON_ASCII: [&str; 6] = ["é", "日", "😀", "ß", "\u{a0}", "Ω"];

/// Junk heavy in the bytes escapes are made of.
const TRIGGERY: &str = "\\\\\\%%%&&&##;;{}uuxx0123456789abcdefABCDEFnnrr\"' ,:.=+/-_\
                        ghijklmopqstvwyzGHIJKLMNOPQRSTUVWXYZ";
/// Text with no trigger and no line break.
const PLAIN: &str =
    "abcdefghijklmnopqrstuvwxyz      ABCDEFGHIJ0123456789.,:;!?()[]<>*@$^|~'\"=+-_/#{}";
const BASE64_STD: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Line breaks a secret or its encoding can be broken by: raw, JSON, and
/// (read only in a view) percent, HTML and `\u` ones, and breaks written
/// half raw and half escaped; a blank line, raw or escaped, and an
/// indented one, which join nothing.
const BREAKS: [&str; 26] = [
    "\n",
    "\r\n",
    "\\n",
    "\\r\\n",
    "\n",
    "\\n",
    "\r",
    "\\r",
    "%0A",
    "%0D%0A",
    "&#10;",
    "&#xA;",
    "\\u000A",
    "\\u000a",
    "\\u000d\\u000a",
    "&#13;&#10;",
    "&NewLine;",
    "\\x0a",
    "\r\\n",
    "\\r\n",
    "\r%0A",
    "%0D\n",
    "\n\n",
    "\n  ",
    "\\u000a\\u000a",
    "%0A%0A",
];

/// Line breaks base64 is wrapped with.
const WRAPS: [&str; 4] = ["\n", "\r\n", "\\n", "\\r\\n"];

/// Escapes cut short, or that are no escape, runs of triggers before real
/// ones, and a few whole escapes of characters no secret here is made of.
const HALF_ESCAPES: [&str; 39] = [
    "%",
    "%4",
    "&#5",
    "&#56",
    "&#x3",
    "&amp;#5",
    "%g1",
    "%%41",
    "%%%",
    "\\",
    "\\u",
    "\\u00",
    "\\u002",
    "\\u{",
    "\\u{2B",
    "\\u{}",
    "\\u{0000002B}",
    "\\x",
    "\\x4",
    "\\ud83d",
    "\\ud83d\\u0041",
    "\\udc00",
    "\\ud83d\\ude00",
    "\\uD83D\\uDE00",
    "\\u{1F600}",
    "\\\\u002B",
    "\\\\\\u002B",
    "\\\\\\\\",
    "&",
    "&#",
    "&#x",
    "&am",
    "&amp",
    "&ampx",
    "&&#43;",
    "&#xD800;",
    "&#99999999999;",
    "&nosuch;",
    "&&&",
];

/// Named references of the characters that have one.
fn names_of(c: char) -> &'static [&'static str] {
    match c {
        '+' => &["plus"],
        '/' => &["sol"],
        '&' => &["amp", "AMP"],
        '<' => &["lt", "LT"],
        '>' => &["gt", "GT"],
        '"' => &["quot", "QUOT"],
        '\'' => &["apos"],
        '=' => &["equals"],
        '#' => &["num"],
        ';' => &["semi"],
        '!' => &["excl"],
        ',' => &["comma"],
        ':' => &["colon"],
        '.' => &["period"],
        '_' => &["lowbar", "UnderBar"],
        '-' => &["hyphen"],
        '%' => &["percnt"],
        '\\' => &["bsol"],
        '{' => &["lcub", "lbrace"],
        '}' => &["rcub", "rbrace"],
        '\t' => &["Tab"],
        '\n' => &["NewLine"],
        '\u{a0}' => &["nbsp"],
        'é' => &["eacute"],
        'ß' => &["szlig"],
        _ => &[],
    }
}

/// Names HTML still reads without their `;`.
const LEGACY: [&str; 9] = ["amp", "AMP", "lt", "LT", "gt", "GT", "quot", "QUOT", "nbsp"];

/// One escaping layer.
#[derive(Clone, Copy, Debug)]
enum Layer {
    /// JSON and JavaScript escapes, some characters escaped by choice.
    Json,
    /// JSON, with a backslash before some characters that need none.
    Lenient,
    Percent,
    Refs,
    /// Each character in a family of its own.
    Mixed,
}

const LAYERS: [Layer; 5] = [
    Layer::Json,
    Layer::Lenient,
    Layer::Percent,
    Layer::Refs,
    Layer::Mixed,
];

/// The layers a second one can be: what an engine wraps an echo in.
const OUTER_LAYERS: [Layer; 3] = [Layer::Json, Layer::Percent, Layer::Refs];

/// How a secret (or a piece of one) is written into the text.
#[derive(Clone, Copy, Debug)]
enum Form {
    Raw,
    Hex {
        upper: bool,
    },
    /// One layer, each character escaped with this chance, in percent.
    Once(Layer, usize),
    /// Two layers, the inner one first.
    Twice(Layer, usize, Layer, usize),
}

/// The secrets of a case: one, or two.
fn secrets(seed: u64) -> Vec<String> {
    let mut rng = Rng(SECRETS_SEED ^ seed);
    let first = secret(&mut rng);
    let mut secrets = vec![first.clone()];
    if rng.chance(45) {
        secrets.push(second_secret(&mut rng, &first));
    }
    secrets
}

/// The text of a case.
fn text(seed: u64, secrets: &[String]) -> String {
    Generator {
        rng: Rng(TEXT_SEED ^ seed),
        secrets,
    }
    .text()
}

/// 4 to 24 chars from one alphabet, sometimes behind a token prefix, and
/// sometimes with a char that is not ASCII.
fn secret(rng: &mut Rng) -> String {
    let len = rng.range(4, 24);
    let (mut secret, alphabet) = match rng.below(10) {
        0 | 1 => (String::new(), DIGITS),
        2 => (String::new(), LETTERS),
        3 => (String::new(), ALPHANUMERIC),
        4 => (
            rng.pick(&["sk-", "mw_live_", "ghp_", "tok."]).to_owned(),
            TOKENISH,
        ),
        _ => (String::new(), MIXED),
    };
    while secret.chars().count() < len {
        secret.push(rng.char_of(alphabet));
    }
    if rng.chance(10) {
        let at = rng.below(len);
        let mut chars: Vec<char> = secret.chars().collect();
        chars.insert(at, rng.pick(&NON_ASCII).chars().next().unwrap_or('é'));
        chars.pop();
        secret = chars.into_iter().collect();
    }
    secret
}

/// A second secret: unrelated, or sharing a prefix, a suffix or all of the
/// first, so that patterns overlap and one hit hides another.
fn second_secret(rng: &mut Rng, first: &str) -> String {
    let chars: Vec<char> = first.chars().collect();
    let n = chars.len();
    match rng.below(6) {
        0 if n > 4 => chars[..rng.range(4, n - 1)].iter().collect(),
        1 => {
            let mut longer = first.to_owned();
            for _ in 0..rng.range(1, 6) {
                longer.push(rng.char_of(MIXED));
            }
            longer
        }
        2 if n > 4 => {
            let mut other: String = (0..rng.range(1, 6)).map(|_| rng.char_of(MIXED)).collect();
            other.extend(&chars[rng.range(1, n - 4)..]);
            other
        }
        3 => first.to_owned(),
        _ => secret(rng),
    }
}

/// Builds one text from fragments.
struct Generator<'s> {
    rng: Rng,
    secrets: &'s [String],
}

impl Generator<'_> {
    /// About 0 to 400 bytes of fragments (a tenth of the texts under 24),
    /// most often with one whole secret, in some form, planted at a random
    /// place among them, cutting through whatever is there.
    fn text(&mut self) -> String {
        let target = match self.rng.below(10) {
            0 => self.rng.below(24),
            _ => self.rng.below(321),
        };
        let mut text = String::new();
        while text.len() < target {
            self.fragment(&mut text);
        }
        if self.rng.chance(70) {
            let secret = self.secret();
            let planted = self.occurrence(&secret);
            let mut at = self.rng.below(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.insert_str(at, &planted);
        }
        text
    }

    /// One of the case's secrets.
    fn secret(&mut self) -> String {
        let i = self.rng.below(self.secrets.len());
        self.secrets.get(i).cloned().unwrap_or_default()
    }

    /// One fragment, of a kind chosen at random, onto the end of `text`.
    fn fragment(&mut self, text: &mut String) {
        let secret = self.secret();
        match self.rng.below(32) {
            0..=6 => {
                let occurrence = self.occurrence(&secret);
                text.push_str(&occurrence);
            }
            7..=8 => {
                let piece = self.partial(&secret);
                let form = self.form();
                text.push_str(&self.encode(form, &piece));
            }
            9..=11 => text.push_str(&self.broken(&secret)),
            12..=13 => text.push_str(&self.base64(&secret)),
            14..=16 => {
                for _ in 0..self.rng.range(1, 30) {
                    text.push(self.rng.char_of(TRIGGERY));
                }
            }
            17 => {
                let trigger = self.rng.pick(&["\\", "%", "&", "\\\\", "%25", "&amp;"]);
                text.push_str(&trigger.repeat(self.rng.range(2, 12)));
                if self.rng.chance(50) {
                    let occurrence = self.occurrence(&secret);
                    text.push_str(&occurrence);
                }
            }
            18..=19 => {
                text.push_str(self.rng.pick(&HALF_ESCAPES));
                if self.rng.chance(40) {
                    text.push(self.rng.char_of("0123456789abcdefABCDEF;{}"));
                }
            }
            20 => text.push_str(self.rng.pick(&BREAKS)),
            21..=22 => {
                let separator = self
                    .rng
                    .pick(&[" ", "\"", "'", ",", ":", ", ", "\": \"", "=", "\t"]);
                text.push_str(&separator.repeat(self.rng.range(1, 3)));
            }
            23 => {
                for _ in 0..self.rng.range(1, 3) {
                    text.push_str(self.rng.pick(&NON_ASCII));
                }
            }
            24..=25 => text.push_str(&self.json_text(&secret)),
            26..=28 => {
                // Far from everything else: a window around one escape
                // does not reach the next.
                let alphabet = if self.rng.chance(25) {
                    ALPHANUMERIC
                } else {
                    PLAIN
                };
                for _ in 0..self.rng.range(50, 200) {
                    text.push(self.rng.char_of(alphabet));
                }
            }
            29..=30 => {
                let len = self.rng.range(50, 200);
                text.push_str(&self.base64_run(len));
            }
            _ => text.push_str(self.rng.pick(&[
                "[redacted]",
                "Bearer ",
                "Basic ",
                "Authorization: ",
                "?token=",
                "user:",
            ])),
        }
    }

    /// A form, most of them escaping something.
    fn form(&mut self) -> Form {
        let chance = match self.rng.below(4) {
            0 => 100,
            1 => self.rng.range(1, 20),
            _ => self.rng.range(20, 90),
        };
        match self.rng.below(10) {
            0 => Form::Raw,
            1 => Form::Hex {
                upper: self.rng.chance(50),
            },
            2..=6 => Form::Once(self.rng.pick(&LAYERS), chance),
            _ => Form::Twice(
                self.rng.pick(&LAYERS),
                chance,
                self.rng.pick(&OUTER_LAYERS),
                self.rng.range(0, 40),
            ),
        }
    }

    /// A whole secret in some form, base64 included.
    fn occurrence(&mut self, secret: &str) -> String {
        if self.rng.chance(15) {
            return self.base64(secret);
        }
        let form = self.form();
        self.encode(form, secret)
    }

    /// `text` written in `form`.
    fn encode(&mut self, form: Form, text: &str) -> String {
        match form {
            Form::Raw => text.to_owned(),
            Form::Hex { upper } => {
                let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
                if upper { hex.to_ascii_uppercase() } else { hex }
            }
            Form::Once(layer, chance) => self.layer(layer, text, chance, chance),
            Form::Twice(inner, chance, outer, outer_chance) => {
                let once = self.layer(inner, text, chance, chance);
                // The outer layer escapes the inner one's triggers, as an
                // engine quoting an echo does.
                self.layer(outer, &once, outer_chance, 90)
            }
        }
    }

    /// `text` with one escaping layer: each character escaped with
    /// `chance`, or `trigger_chance` for `\`, `%` and `&`.
    fn layer(&mut self, layer: Layer, text: &str, chance: usize, trigger_chance: usize) -> String {
        let mut out = String::with_capacity(text.len() * 3);
        if matches!(layer, Layer::Json) && chance < 10 && self.rng.chance(50) {
            // What most JSON writers write.
            let quoted = serde_json::to_string(text).expect("a string serializes to JSON");
            return quoted
                .get(1..quoted.len() - 1)
                .unwrap_or_default()
                .replace('/', if self.rng.chance(50) { "\\/" } else { "/" });
        }
        for c in text.chars() {
            let chance = if matches!(c, '\\' | '%' | '&') {
                trigger_chance
            } else {
                chance
            };
            let layer = match layer {
                Layer::Mixed => self.rng.pick(&[Layer::Json, Layer::Percent, Layer::Refs]),
                layer => layer,
            };
            match layer {
                Layer::Json | Layer::Mixed => self.json_char(&mut out, c, chance),
                Layer::Lenient => self.lenient_char(&mut out, c, chance),
                Layer::Percent => self.percent_char(&mut out, c, chance),
                Layer::Refs => self.ref_char(&mut out, c, chance),
            }
        }
        out
    }

    /// `c` in a JSON or JavaScript string: escaped by choice with `chance`,
    /// else only if it must be.
    fn json_char(&mut self, out: &mut String, c: char, chance: usize) {
        let cp = u32::from(c);
        if self.rng.chance(chance) {
            let short = match c {
                '/' => Some("\\/"),
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\'' => Some("\\'"),
                '\n' => Some("\\n"),
                _ => None,
            };
            match (self.rng.below(6), short) {
                (0, Some(short)) => out.push_str(short),
                (1, _) if cp < 0x100 => {
                    out.push_str("\\x");
                    out.push_str(&self.rng.hex(cp, 2));
                }
                (2, _) => {
                    let digits = self.rng.range(1, 6);
                    out.push_str("\\u{");
                    out.push_str(&self.rng.hex(cp, digits));
                    out.push('}');
                }
                _ => self.utf16_escape(out, c),
            }
            return;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => self.utf16_escape(out, c),
            c => out.push(c),
        }
    }

    /// `\uXXXX`, or a surrogate pair of them.
    fn utf16_escape(&mut self, out: &mut String, c: char) {
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            out.push_str("\\u");
            out.push_str(&self.rng.hex(u32::from(*unit), 4));
        }
    }

    /// `c` as a lenient JSON reader still reads it: a backslash before a
    /// character JSON does not escape, with `chance`; else as JSON.
    fn lenient_char(&mut self, out: &mut String, c: char, chance: usize) {
        let needs_none = c.is_ascii_graphic() && !matches!(c, 'n' | 'r' | 't' | 'b' | 'f' | 'u');
        if needs_none && self.rng.chance(chance) {
            out.push('\\');
            out.push(c);
        } else {
            self.json_char(out, c, chance / 4);
        }
    }

    /// `c` percent-encoded, every byte of it, with `chance`.
    fn percent_char(&mut self, out: &mut String, c: char, chance: usize) {
        if !self.rng.chance(chance) {
            out.push(c);
            return;
        }
        let mut buf = [0u8; 4];
        for b in c.encode_utf8(&mut buf).bytes() {
            out.push('%');
            out.push_str(&self.rng.hex(u32::from(b), 2));
        }
    }

    /// `c` as an HTML reference, with `chance`: named, decimal or hex, with
    /// leading zeros, the `;` sometimes left off.
    fn ref_char(&mut self, out: &mut String, c: char, chance: usize) {
        if !self.rng.chance(chance) {
            out.push(c);
            return;
        }
        let names = names_of(c);
        let cp = u32::from(c);
        let semicolon = self.rng.chance(80);
        match self.rng.below(5) {
            0 | 1 if !names.is_empty() => {
                let name = self.rng.pick(names);
                out.push('&');
                out.push_str(name);
                if semicolon || !LEGACY.contains(&name) {
                    out.push(';');
                }
                return;
            }
            2 | 3 => {
                out.push_str("&#");
                out.push_str(&self.rng.zeros());
                out.push_str(&cp.to_string());
            }
            _ => {
                out.push_str(if self.rng.chance(50) { "&#x" } else { "&#X" });
                out.push_str(&self.rng.zeros());
                out.push_str(&self.rng.hex(cp, 1));
            }
        }
        if semicolon {
            out.push(';');
        }
    }

    /// A piece of a secret, or a near miss of it.
    fn partial(&mut self, secret: &str) -> String {
        let chars: Vec<char> = secret.chars().collect();
        let n = chars.len();
        match self.rng.below(5) {
            0 => chars[..self.rng.range(1, n - 1)].iter().collect(),
            1 => chars[self.rng.range(1, n - 1)..].iter().collect(),
            2 => {
                let start = self.rng.below(n - 1);
                chars[start..self.rng.range(start + 1, n)].iter().collect()
            }
            3 => {
                let mut mutated = chars;
                let at = self.rng.below(n);
                mutated[at] = self.rng.char_of(MIXED);
                mutated.into_iter().collect()
            }
            // Overlapping itself: `abcabcd`.
            _ => {
                let head: String = chars[..self.rng.range(1, n - 1)].iter().collect();
                format!("{head}{secret}")
            }
        }
    }

    /// A secret broken across lines: in pieces each in the same form,
    /// joined by line breaks; or a whole form broken anywhere, escapes
    /// included.
    fn broken(&mut self, secret: &str) -> String {
        let chars: Vec<char> = secret.chars().collect();
        let form = self.form();
        if self.rng.chance(20) {
            let mut encoded = self.encode(form, secret);
            let mut at = self.rng.range(1, encoded.len().saturating_sub(1));
            while !encoded.is_char_boundary(at) {
                at -= 1;
            }
            encoded.insert_str(at, self.rng.pick(&BREAKS));
            return encoded;
        }
        let mut cuts: Vec<usize> = (0..self.rng.range(1, 3))
            .map(|_| self.rng.range(1, chars.len() - 1))
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let line_break = self.rng.pick(&BREAKS);
        let mut out = String::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([chars.len()]) {
            if from > 0 {
                out.push_str(if self.rng.chance(85) {
                    line_break
                } else {
                    self.rng.pick(&BREAKS)
                });
            }
            let piece: String = chars[from..cut].iter().collect();
            out.push_str(&self.encode(form, &piece));
            from = cut;
        }
        out
    }

    /// The base64 or base64url of a secret behind a prefix, padded or not;
    /// sometimes inside a longer run, wrapped, or with its `+ / =`
    /// escaped, a few or all, the way a URL or a JSON writer escapes them.
    fn base64(&mut self, secret: &str) -> String {
        let engines: [GeneralPurpose; 4] = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD];
        let engine = &engines[self.rng.below(engines.len())];
        // An echo cut short: up to three bytes less at either end, five
        // kept, at the characters' boundaries.
        let mut secret = secret;
        if self.rng.chance(25) {
            let (front, back) = (self.rng.range(0, 3), self.rng.range(0, 3));
            let end = secret.len().saturating_sub(back);
            if let Some(cut) = secret.get(front..end)
                && cut.len() >= 5
            {
                secret = cut;
            }
        }
        let mut data = match self.rng.below(8) {
            0 | 1 => String::new(),
            2 => "Bearer ".to_owned(),
            3 => "user:".to_owned(),
            4 => "{\"k\":\"".to_owned(),
            _ => (0..self.rng.range(1, 3))
                .map(|_| self.rng.char_of(MIXED))
                .collect(),
        };
        data.push_str(secret);
        if self.rng.chance(30) {
            data.push_str(self.rng.pick(&["\"}", "\n", ":x", "!"]));
        }
        let mut encoded = engine.encode(&data);
        if self.rng.chance(35) {
            // Inside a longer run: the whole run goes, however far it
            // reaches.
            let (before, after) = (self.rng.range(1, 150), self.rng.range(0, 150));
            let (before, after) = (self.base64_chars(before), self.base64_chars(after));
            let padding = encoded.trim_start_matches(|c| c != '=').len();
            encoded.truncate(encoded.len() - padding);
            encoded = format!("{before}{encoded}{after}");
        }
        if self.rng.chance(30) {
            let width = self.rng.range(1, 80);
            let wrap = self.rng.pick(&WRAPS);
            let lines: Vec<String> = encoded
                .chars()
                .collect::<Vec<char>>()
                .chunks(width)
                .map(|line| line.iter().collect())
                .collect();
            encoded = lines.join(wrap);
        }
        let chance = if self.rng.chance(50) {
            100
        } else {
            self.rng.range(5, 60)
        };
        match self.rng.below(6) {
            0 => self.escape_base64(&encoded, chance, |rng, c| {
                format!("%{}", rng.hex(u32::from(c), 2))
            }),
            1 => self.escape_base64(&encoded, chance, |_, c| {
                if c == '/' {
                    "\\/".to_owned()
                } else {
                    c.to_string()
                }
            }),
            2 => self.escape_base64(&encoded, chance, |rng, c| {
                format!("\\u{}", rng.hex(u32::from(c), 4))
            }),
            3 => self.escape_base64(&encoded, chance, |rng, c| match names_of(c).first() {
                Some(name) if rng.chance(50) => format!("&{name};"),
                _ => format!("&#{};", u32::from(c)),
            }),
            _ => encoded,
        }
    }

    /// `encoded` with each of its `+ / =` escaped by `escape`, with `chance`.
    fn escape_base64(
        &mut self,
        encoded: &str,
        chance: usize,
        escape: impl Fn(&mut Rng, char) -> String,
    ) -> String {
        let mut out = String::with_capacity(encoded.len() * 2);
        for c in encoded.chars() {
            if matches!(c, '+' | '/' | '=') && self.rng.chance(chance) {
                out.push_str(&escape(&mut self.rng, c));
            } else {
                out.push(c);
            }
        }
        out
    }

    /// `len` base64 characters, mostly letters and digits, so the run's
    /// own `+` and `/` (and their escapes) are few and far apart.
    fn base64_chars(&mut self, len: usize) -> String {
        let alphabet = match self.rng.below(4) {
            0 => BASE64_STD,
            1 => BASE64_URL,
            _ => ALPHANUMERIC,
        };
        (0..len).map(|_| self.rng.char_of(alphabet)).collect()
    }

    /// A long base64 run with no secret: sometimes padded, wrapped, or
    /// escaped like [`Generator::base64`].
    fn base64_run(&mut self, len: usize) -> String {
        let mut run = self.base64_chars(len);
        if self.rng.chance(30) {
            run.push_str(self.rng.pick(&["=", "=="]));
        }
        if self.rng.chance(30) {
            let wrap = self.rng.pick(&WRAPS);
            let width = self.rng.range(16, 76);
            let lines: Vec<&str> = run
                .as_bytes()
                .chunks(width)
                .map(|line| std::str::from_utf8(line).unwrap_or_default())
                .collect();
            run = lines.join(wrap);
        }
        if self.rng.chance(30) {
            run = self.escape_base64(&run, 20, |rng, c| format!("%{}", rng.hex(u32::from(c), 2)));
        }
        run
    }

    /// JSON-looking text, its string value sometimes a secret's JSON form.
    fn json_text(&mut self, secret: &str) -> String {
        let value = if self.rng.chance(50) {
            let form = Form::Once(Layer::Json, self.rng.range(0, 60));
            self.encode(form, secret)
        } else {
            (0..self.rng.range(0, 20))
                .map(|_| self.rng.char_of(TRIGGERY))
                .collect()
        };
        match self.rng.below(3) {
            0 => format!("{{\"a\":\"{value}\",\"b\":1}}"),
            1 => format!("{{\"error\":{{\"message\":\"{value}\",\"code\":400}}}}"),
            _ => format!("[\"{value}\", 2, null]"),
        }
    }
}
