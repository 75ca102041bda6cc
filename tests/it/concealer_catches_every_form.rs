//! One behaviour of the concealer per test: every form a token can be echoed
//! in is concealed, and the text around it survives.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use meterwire::{Concealer, Env, REDACTED};

use crate::support::forms::{concealed, unicode_escape};

/// Realistic: every character a JSON, URL or HTML encoder would touch.
const LIVE: &str = r#"mw_live_4f+Ab/9z=Q&x<y>"z'"#;
/// Plain: nothing an encoder needs to escape.
const PLAIN: &str = "sk-test-0123456789abcdef";

fn concealer() -> Concealer {
    Concealer::new([LIVE, PLAIN])
}

/// The encoded token, between words, comes back as exactly
/// `before [redacted] after`.
#[track_caller]
fn assert_conceals(concealer: &Concealer, secret: &str, encoded: &str) {
    let input = format!("before {encoded} after");
    let output = concealer.conceal(&input);
    assert!(!output.contains(secret), "secret survived: {output}");
    assert!(!output.contains(encoded), "encoded form survived: {output}");
    assert_eq!(output, "before [redacted] after", "input: {input}");
}

/// The encoded token, between words, comes back as `before {echo} after`.
#[track_caller]
fn assert_conceals_to(concealer: &Concealer, secret: &str, encoded: &str, echo: &str) {
    let input = format!("before {encoded} after");
    let output = concealer.conceal(&input);
    assert!(!output.contains(secret), "secret survived: {output}");
    assert!(!output.contains(encoded), "encoded form survived: {output}");
    assert_eq!(output, format!("before {echo} after"), "input: {input}");
}

/// Each of both tokens, in the base64 form `encode` gives it, comes back as
/// [`concealed`] says.
#[track_caller]
fn assert_conceals_both_to(encode: impl Fn(&str) -> String) {
    let concealer = concealer();
    for secret in [LIVE, PLAIN] {
        let encoded = encode(secret);
        assert_conceals_to(&concealer, secret, &encoded, &concealed(&encoded, secret));
    }
}

/// Each of both tokens, in the form `encode` gives it.
#[track_caller]
fn assert_conceals_both(encode: impl Fn(&str) -> String) {
    let concealer = concealer();
    for secret in [LIVE, PLAIN] {
        assert_conceals(&concealer, secret, &encode(secret));
    }
}

fn percent_encode(s: &str, which: impl Fn(usize) -> bool, upper: impl Fn(usize) -> bool) -> String {
    s.bytes()
        .enumerate()
        .map(|(i, b)| match (which(i), upper(i)) {
            (false, _) => char::from(b).to_string(),
            (true, true) => format!("%{b:02X}"),
            (true, false) => format!("%{b:02x}"),
        })
        .collect()
}

#[test]
fn the_token_as_itself_is_concealed() {
    assert_conceals_both(str::to_owned);
}

#[test]
fn json_escaped_slash_and_quote_are_concealed() {
    // What serde_json, and PHP with its `\/`, write.
    let concealer = concealer();
    let php = LIVE.replace('/', "\\/").replace('"', "\\\"");
    assert_eq!(php, r#"mw_live_4f+Ab\/9z=Q&x<y>\"z'"#);
    assert_conceals(&concealer, LIVE, &php);
    let serde = serde_json::to_string(LIVE).unwrap_or_default();
    assert_conceals(&concealer, LIVE, serde.trim_matches('"'));
}

#[test]
fn a_json_escaped_backslash_is_concealed() {
    let secret = r"C:\keys\mw_9f2k";
    let concealer = Concealer::new([secret]);
    assert_conceals(&concealer, secret, r"C:\\keys\\mw_9f2k");
}

#[test]
fn a_unicode_escape_in_either_hex_case_is_concealed() {
    // .NET escapes `+`.
    let concealer = concealer();
    assert_conceals(&concealer, LIVE, &LIVE.replace('+', r"\u002B"));
    assert_conceals(&concealer, LIVE, &LIVE.replace('+', r"\u002b"));
}

#[test]
fn go_escapes_of_angle_brackets_and_ampersand_are_concealed() {
    let go = LIVE
        .replace('&', r"\u0026")
        .replace('<', r"\u003c")
        .replace('>', r"\u003e")
        .replace('"', r#"\""#);
    assert_conceals(&concealer(), LIVE, &go);
}

#[test]
fn a_token_with_every_char_unicode_escaped_is_concealed() {
    for upper in [false, true] {
        assert_conceals_both(|s| s.chars().map(|c| unicode_escape(c, upper)).collect());
    }
}

#[test]
fn a_mixture_of_escaped_and_literal_chars_is_concealed() {
    // Alternate characters escaped, alternating the kind of escape too.
    assert_conceals_both(|s| {
        s.chars()
            .enumerate()
            .map(|(i, c)| match (i % 3, c) {
                (0, _) => unicode_escape(c, i % 2 == 0),
                (_, '/') => r"\/".to_owned(),
                (_, '"') => r#"\""#.to_owned(),
                _ => c.to_string(),
            })
            .collect()
    });
}

#[test]
fn short_escapes_inside_the_token_are_concealed() {
    let secret = "tab\there\nnew\rret\u{8}bs\u{c}ff";
    let concealer = Concealer::new([secret]);
    assert_conceals(&concealer, secret, r"tab\there\nnew\rret\bbs\fff");
}

#[test]
fn a_surrogate_pair_inside_the_token_is_concealed() {
    let secret = "tok\u{1F600}en-42";
    let concealer = Concealer::new([secret]);
    assert_conceals(&concealer, secret, r"tok\uD83D\uDE00en-42");
    assert_conceals(&concealer, secret, r"tok\ud83d\ude00en-42");
}

#[test]
fn the_token_in_a_json_document_leaves_the_document_valid() {
    let concealer = concealer();
    let document = serde_json::json!({ "error": "bad token", "token": LIVE, "n": 1 }).to_string();
    let concealed = concealer.conceal(&document);
    assert!(!concealed.contains(LIVE));
    let parsed: serde_json::Value = serde_json::from_str(&concealed).unwrap_or_default();
    assert_eq!(parsed["token"], REDACTED);
    assert_eq!(parsed["error"], "bad token");
}

#[test]
fn percent_encoding_in_upper_lower_and_mixed_case_is_concealed() {
    assert_conceals_both(|s| percent_encode(s, |_| true, |_| true));
    assert_conceals_both(|s| percent_encode(s, |_| true, |_| false));
    assert_conceals_both(|s| percent_encode(s, |_| true, |i| i % 2 == 0));
}

#[test]
fn partial_percent_encoding_is_concealed() {
    // The usual: only the reserved characters encoded.
    let concealer = concealer();
    let reserved = percent_encode(
        LIVE,
        |i| !LIVE.as_bytes()[i].is_ascii_alphanumeric(),
        |_| true,
    );
    assert_eq!(reserved, "mw%5Flive%5F4f%2BAb%2F9z%3DQ%26x%3Cy%3E%22z%27");
    assert_conceals(&concealer, LIVE, &reserved);
    assert_conceals_both(|s| percent_encode(s, |i| i % 3 == 1, |i| i % 2 == 1));
}

#[test]
fn a_percent_encoded_multibyte_char_is_concealed() {
    let secret = "clé-secrète-42";
    let concealer = Concealer::new([secret]);
    assert_conceals(&concealer, secret, "cl%C3%A9-secr%c3%A8te-42");
}

#[test]
fn decimal_character_references_are_concealed() {
    assert_conceals_both(|s| s.chars().map(|c| format!("&#{};", u32::from(c))).collect());
}

#[test]
fn hex_character_references_in_either_case_are_concealed() {
    assert_conceals_both(|s| {
        s.chars()
            .map(|c| format!("&#x{:x};", u32::from(c)))
            .collect()
    });
    assert_conceals_both(|s| {
        s.chars()
            .map(|c| format!("&#X{:X};", u32::from(c)))
            .collect()
    });
    assert_conceals_both(|s| {
        s.chars()
            .map(|c| format!("&#x{:X};", u32::from(c)))
            .collect()
    });
}

#[test]
fn numeric_references_without_their_semicolon_are_concealed() {
    let concealer = concealer();
    assert_conceals(
        &concealer,
        LIVE,
        &LIVE.replace('+', "&#43").replace('=', "&#x3d"),
    );
}

#[test]
fn named_character_references_are_concealed() {
    let html = "mw&lowbar;live&lowbar;4f&plus;Ab&sol;9z&equals;Q&amp;x&lt;y&gt;&quot;z&apos;";
    assert_conceals(&concealer(), LIVE, html);
}

#[test]
fn a_mixture_of_reference_kinds_is_concealed() {
    let html = "mw_live_4f&#43;Ab&#x2F;9z&equals;Q&amp;x&#X3c;y&gt;&#34z&apos;";
    assert_conceals(&concealer(), LIVE, html);
}

#[test]
fn every_listed_named_reference_decodes_to_its_char() {
    let names = [
        ("amp", '&'),
        ("lt", '<'),
        ("gt", '>'),
        ("quot", '"'),
        ("apos", '\''),
        ("sol", '/'),
        ("plus", '+'),
        ("equals", '='),
        ("colon", ':'),
        ("semi", ';'),
        ("period", '.'),
        ("comma", ','),
        ("lowbar", '_'),
        ("hyphen", '-'),
        ("num", '#'),
        ("excl", '!'),
        ("quest", '?'),
        ("percnt", '%'),
        ("dollar", '$'),
        ("lpar", '('),
        ("rpar", ')'),
        ("ast", '*'),
        ("commat", '@'),
        ("lsqb", '['),
        ("rsqb", ']'),
        ("lbrack", '['),
        ("rbrack", ']'),
        ("lcub", '{'),
        ("rcub", '}'),
        ("lbrace", '{'),
        ("rbrace", '}'),
        ("verbar", '|'),
        ("vert", '|'),
        ("Hat", '^'),
        ("grave", '`'),
        ("tilde", '~'),
        ("bsol", '\\'),
        ("nbsp", '\u{a0}'),
        ("eacute", 'é'),
        ("yuml", 'ÿ'),
    ];
    for (name, c) in names {
        let secret = format!("key{c}0123");
        let concealer = Concealer::new([secret.as_str()]);
        assert_conceals(&concealer, &secret, &format!("key&{name};0123"));
    }
}

#[test]
fn a_mixture_across_escaping_families_is_concealed() {
    // Percent, JSON and HTML escapes inside one occurrence.
    let mixed = r#"mw_live_4f%2BAb\/9z&#61;Q\u0026x&lt;y%3e\"z&apos;"#;
    assert_conceals(&concealer(), LIVE, mixed);
    assert_conceals(
        &concealer(),
        PLAIN,
        r"sk%2Dtest\u002d0123&#52;5678%39abcdef",
    );
}

#[test]
fn a_literal_percent_escape_inside_a_json_escaped_token_is_concealed() {
    // The combined view would decode the `%41`; the JSON view does not.
    let secret = "pct%41/and/more";
    let concealer = Concealer::new([secret]);
    assert_conceals(&concealer, secret, r"pct%41\/and\/more");
}

#[test]
fn a_token_in_json_quoted_inside_json_is_concealed() {
    // An engine error quoting an upstream JSON error as a string.
    let upstream = serde_json::json!({ "token": LIVE }).to_string();
    let quoted = serde_json::json!({ "error": upstream }).to_string();
    // The token's own quote, escaped once per layer.
    assert!(quoted.contains(r#">\\\"z'"#));
    let concealed = concealer().conceal(&quoted);
    assert!(!concealed.contains(LIVE));
    assert_eq!(concealed, r#"{"error":"{\"token\":\"[redacted]\"}"}"#);
    assert_conceals(
        &concealer(),
        LIVE,
        r#"mw_live_4f\\u002BAb\\/9z=Q&x<y>\\\"z'"#,
    );
}

#[test]
fn a_token_encoded_twice_across_families_is_concealed() {
    // A JSON-escaped token, percent-encoded in a query; and encoded twice.
    assert_conceals(
        &concealer(),
        LIVE,
        "mw_live_4f%5Cu002BAb%5C%2F9z%3DQ%26x%3Cy%3E%5C%22z%27",
    );
    assert_conceals(
        &concealer(),
        LIVE,
        "mw_live_4f%252BAb%252F9z%253DQ%2526x%253Cy%253E%2522z%2527",
    );
}

#[test]
fn base64_in_both_alphabets_padded_or_not_is_concealed() {
    for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
        assert_conceals_both(|s| engine.encode(s));
    }
}

/// A longer run keeps the characters that carry none of the token's bits,
/// before it and after it (base64 is concealed from the first to the last
/// character that carries the token's bits); those that do go, as one marker.
#[test]
fn base64_of_the_token_at_every_alignment_inside_a_longer_run_is_concealed() {
    for engine in [STANDARD, URL_SAFE_NO_PAD] {
        for offset in 0..3 {
            assert_conceals_both_to(|s| {
                let mut data = b"{\"k\":\""[..offset + 3].to_vec();
                data.extend_from_slice(s.as_bytes());
                data.extend_from_slice(b"\",\"more\":\"payload after the token\"}");
                engine.encode(data)
            });
        }
    }
}

#[test]
fn base64_of_a_bearer_header_value_is_concealed() {
    let encoded = STANDARD.encode(format!("Bearer {PLAIN}"));
    assert_eq!(encoded, "QmVhcmVyIHNrLXRlc3QtMDEyMzQ1Njc4OWFiY2RlZg==");
    // `Bearer ` is nine characters' worth of bits; the tenth mixes the
    // space with the token's first.
    assert_conceals_to(&concealer(), PLAIN, &encoded, "QmVhcmVyI[redacted]");
    assert_conceals_both_to(|s| STANDARD.encode(format!("Bearer {s}")));
}

#[test]
fn base64_of_basic_auth_credentials_is_concealed() {
    let encoded = STANDARD.encode(format!("user:{PLAIN}"));
    assert_eq!(encoded, "dXNlcjpzay10ZXN0LTAxMjM0NTY3ODlhYmNkZWY=");
    assert_conceals_to(&concealer(), PLAIN, &encoded, "dXNlcj[redacted]");
    assert_conceals_both_to(|s| URL_SAFE_NO_PAD.encode(format!("user:{s}")));
}

#[test]
fn base64_behind_escaped_slashes_in_json_is_concealed() {
    // PHP's json_encode escapes every `/` of a base64 value.
    let secret = "mw_live_????~~~~";
    let encoded = STANDARD.encode(format!("Bearer {secret}"));
    assert_eq!(encoded, "QmVhcmVyIG13X2xpdmVfPz8/P35+fn4=");
    let concealer = Concealer::new([secret]);
    assert_conceals_to(
        &concealer,
        secret,
        &encoded.replace('/', r"\/"),
        "QmVhcmVyI[redacted]",
    );
}

#[test]
fn hex_of_the_token_is_concealed() {
    assert_conceals_both(|s| s.bytes().map(|b| format!("{b:02x}")).collect());
    assert_conceals_both(|s| s.bytes().map(|b| format!("{b:02X}")).collect());
}

#[test]
fn two_occurrences_are_both_concealed() {
    let concealer = concealer();
    let input = format!("first {PLAIN} then {} end", STANDARD.encode(LIVE));
    let output = concealer.conceal(&input);
    assert_eq!(output, "first [redacted] then [redacted] end");
}

#[test]
fn touching_occurrences_merge_into_one_marker() {
    let concealer = concealer();
    let input = format!("before {PLAIN}{PLAIN}{} after", LIVE.replace('/', r"\/"));
    assert_eq!(concealer.conceal(&input), "before [redacted] after");
}

#[test]
fn overlapping_secrets_merge_into_one_marker() {
    let concealer = Concealer::new(["abcd1234", "1234wxyz"]);
    assert_eq!(
        concealer.conceal("before abcd1234wxyz after"),
        "before [redacted] after"
    );
}

#[test]
fn a_secret_shorter_than_four_chars_is_not_concealed() {
    let concealer = Concealer::new(["abc"]);
    assert!(concealer.is_empty());
    assert_eq!(concealer.conceal("before abc after"), "before abc after");
    // Four chars, even multi-byte ones, are enough.
    let concealer = Concealer::new(["日本語!"]);
    assert_eq!(
        concealer.conceal("before 日本語! after"),
        "before [redacted] after"
    );
}

#[test]
fn a_credential_named_variable_of_eight_chars_or_more_is_concealed() {
    let env = Env::from_pairs([
        ("CHANT_BEHAVIOUR_TOKEN", " tok-0123456789 \n"),
        ("db_password", "hunter2hunter2"),
        ("X_Api_Key", "ak_live_9999"),
        ("OAUTH_CLIENT", "clientsecret99"),
    ]);
    let concealer = Concealer::with_env([], &env);
    let output =
        concealer.conceal("a tok-0123456789 b hunter2hunter2 c ak_live_9999 d clientsecret99 e");
    assert_eq!(
        output,
        "a [redacted] b [redacted] c [redacted] d [redacted] e"
    );
}

#[test]
fn a_credential_named_variable_shorter_than_eight_chars_is_not_concealed() {
    let env = Env::from_pairs([("AUTH_MODE", " oidc77 ")]);
    let concealer = Concealer::with_env([], &env);
    assert!(concealer.is_empty());
    assert_eq!(concealer.conceal("mode oidc77 on"), "mode oidc77 on");
}

#[test]
fn auth_marks_a_credential_only_as_a_word_of_the_name() {
    let env = Env::from_pairs([
        ("PROXY_AUTH", "proxy-pass-0123"),
        ("GIT_AUTHOR_NAME", "Ada Lovelace"),
    ]);
    let concealer = Concealer::with_env([], &env);
    assert_eq!(
        concealer.conceal("proxy-pass-0123 by Ada Lovelace"),
        "[redacted] by Ada Lovelace"
    );
}

#[test]
fn a_variable_with_an_ordinary_name_is_not_concealed() {
    let env = Env::from_pairs([
        ("HOME", "/home/predictor"),
        ("ENGINE_URL", "https://engine"),
    ]);
    let concealer = Concealer::with_env([PLAIN], &env);
    assert_eq!(
        concealer.conceal("home /home/predictor key sk-test-0123456789abcdef"),
        "home /home/predictor key [redacted]"
    );
}

#[test]
fn text_without_a_secret_comes_back_borrowed() {
    let concealer = concealer();
    let text = r#"{"error":"rate limited","retry":"5s"} 100% &amp; \n"#;
    assert!(matches!(concealer.conceal(text), Cow::Borrowed(t) if t == text));
    assert!(matches!(Concealer::new([]).conceal(text), Cow::Borrowed(_)));
}

#[test]
fn debug_prints_no_secret_nor_any_part_of_one() {
    let debug = format!("{:?}", concealer());
    assert_eq!(debug, "Concealer { secrets: 2 }");
    for secret in [LIVE, PLAIN] {
        let chars: Vec<char> = secret.chars().collect();
        for window in chars.windows(4) {
            let part: String = window.iter().collect();
            assert!(!debug.contains(&part), "{debug} holds {part}");
        }
    }
}

#[test]
fn scrub_cuts_a_url_to_its_scheme_host_and_port() {
    let concealer = Concealer::new([]);
    let cases = [
        (
            "GET https://user:pw@engine.example:8443/v1/ask?key=k#frag failed",
            "GET https://engine.example:8443 failed",
        ),
        (
            "see http://engine.example/a/b.",
            "see http://engine.example.",
        ),
        (
            "ws://10.0.0.1:9/x and wss://h/y?z",
            "ws://10.0.0.1:9 and wss://h",
        ),
        ("ftp://anon:p@s@files.example/pub", "ftp://files.example"),
        (
            r#"{"url":"https:\/\/engine.example\/v1?t=1"}"#,
            r#"{"url":"https:\/\/engine.example"}"#,
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(concealer.scrub(input), expected);
    }
}

#[test]
fn scrub_replaces_bearer_and_basic_credentials() {
    let concealer = Concealer::new([]);
    assert_eq!(
        concealer.scrub("sent Authorization: Bearer abc.def-ghi, got 401"),
        "sent Authorization: Bearer [redacted], got 401"
    );
    assert_eq!(
        concealer.scrub("header basic dXNlcjpwYXNz=\nnext"),
        "header basic [redacted]\nnext"
    );
    assert_eq!(concealer.scrub("BEARER xyz9 end"), "BEARER [redacted] end");
    assert_eq!(
        concealer.scrub("Bearer AbcDef end"),
        "Bearer [redacted] end"
    );
}

#[test]
fn scrub_leaves_a_word_of_prose_after_the_scheme_name_alone() {
    let concealer = Concealer::new([]);
    assert_eq!(
        concealer.scrub("a basic check failed; Bearer token required"),
        "a basic check failed; Bearer token required"
    );
}

#[test]
fn scrub_leaves_a_challenge_parameter_alone() {
    let concealer = Concealer::new([]);
    assert_eq!(
        concealer.scrub(r#"WWW-Authenticate: Basic realm="engine", charset="UTF-8""#),
        r#"WWW-Authenticate: Basic realm="engine", charset="UTF-8""#
    );
}

#[test]
fn scrub_drops_a_password_that_holds_a_slash() {
    let concealer = Concealer::new([]);
    assert_eq!(
        concealer.scrub("dial https://user:pa/ss@engine.example/v1 failed"),
        "dial https://user failed"
    );
    assert_eq!(
        concealer.scrub("dial http://[::1]:8080/v1 and https://[fe80::1]/x"),
        "dial http://[::1]:8080 and https://[fe80::1]"
    );
}

#[test]
fn scrub_replaces_a_jwt() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwcmVkaWN0b3IifQ.c2lnbmF0dXJlLXNpZw";
    let concealer = Concealer::new([]);
    assert_eq!(
        concealer.scrub(&format!("token {jwt} rejected")),
        "token [redacted] rejected"
    );
    assert_eq!(
        concealer.scrub("unsigned eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0. rejected"),
        "unsigned [redacted] rejected"
    );
}

#[test]
fn scrub_replaces_a_pem_private_key_up_to_its_end_line() {
    let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----";
    let concealer = Concealer::new([]);
    assert_eq!(
        concealer.scrub(&format!("before\n{pem}\nafter")),
        "before\n[redacted]\nafter"
    );
}

#[test]
fn scrub_replaces_a_pem_private_key_without_end_line_to_the_end() {
    let concealer = Concealer::new([]);
    assert_eq!(
        concealer.scrub("before\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq"),
        "before\n[redacted]"
    );
}

#[test]
fn scrub_also_conceals_the_configured_secrets() {
    let output = concealer().scrub(&format!("engine said: unknown key {PLAIN}"));
    assert_eq!(output, "engine said: unknown key [redacted]");
}

/// Found by the `conceal` fuzz target: the token's raw hit began on the
/// second hex digit of `%ca`, and the `%c` left beside the marker read
/// as a literal `%`, completing `\u0061)%44%` (the token `a)D%`,
/// JSON- then percent-decoded) from the text before it.
#[test]
fn a_marker_never_leaves_half_an_escape_beside_it() {
    let concealer = Concealer::new(["a)D%"]);
    let text = "&\\i\\u0061)%44%ca)D%";
    let out = concealer.conceal(text);
    assert!(!out.contains("%c["), "{out:?}");
    assert!(out.ends_with(REDACTED), "{out:?}");
    // An escape straddling either edge goes whole; one that does not
    // stays.
    let concealer = Concealer::new(["abc-0123456789"]);
    assert_eq!(concealer.conceal("x %4abc-0123456789 y"), "x [redacted] y");
    assert_eq!(
        concealer.conceal("x %zabc-0123456789 y"),
        "x %z[redacted] y"
    );
    assert_eq!(
        concealer.conceal("x %41abc-0123456789 y"),
        "x %41[redacted] y"
    );
    // An echo whose last `%` read with the next occurrence's first
    // letters (`%ab`): once that occurrence is a marker, the echo would
    // read whole (`%61bc%` is `abc%`), so the escape goes with the span.
    let concealer = Concealer::new(["abc%"]);
    assert_eq!(concealer.conceal("%61bc%abc%"), "%61bc[redacted]");
    let concealer = Concealer::new(["mw-0123456789%4"]);
    assert_eq!(concealer.conceal("x mw-0123456789%41 y"), "x [redacted] y");
    assert_eq!(concealer.conceal("x mw-0123456789%4z y"), "x [redacted]z y");
}

/// A span that starts inside the digits of an escape takes the escape's
/// opening with it. `ivXwBlS`, `&#56` and the hex of `ivXwBlS8`: the
/// text's `&#5669765877426` is no character, but `&#56` left beside the
/// marker is `8` to an HTML reader, and the output read `ivXwBlS8`. So
/// with the opening escaped itself, in each family (read two layers
/// down), and a `\u` or `%` escape whose digits the hit went on with.
#[test]
fn a_marker_never_completes_an_escape_it_cut() {
    let concealer = Concealer::new(["ivXwBlS8"]);
    let hex = "69765877426c5338";
    for opening in [
        "&#56",
        "&#x38",
        "&#X038",
        r"\u0026#56",
        "%26%2356",
        "%26#x38",
        "&amp;#56",
        "&#38;#56",
    ] {
        let text = format!("<p>ivXwBlS{opening}{hex}</p>");
        assert_eq!(
            concealer.conceal(&text),
            "<p>ivXwBlS[redacted]</p>",
            "{text}"
        );
    }
    // The digits went on into the token, and the escape they began is
    // none (`\u004k`, `%4k`, `&#x4k`): it goes with the span all the
    // same, whatever the digits before made.
    let concealer = Concealer::new(["4k-secret-key"]);
    for opening in [
        r"\u00", r"\u", r"\u{1", r"\x", "%", "&#x", "&#x1", "&#", "&#99",
    ] {
        let text = format!("x {opening}4k-secret-key y");
        assert_eq!(concealer.conceal(&text), "x [redacted] y", "{text}");
    }
    // An escape that is whole before the span, or whose digits the span
    // does not go on with, stays.
    for text in [r"x \u00414k-secret-key y", r"x %414k-secret-key y"] {
        assert_eq!(
            concealer.conceal(text),
            text.replace("4k-secret-key", REDACTED)
        );
    }
    let concealer = Concealer::new(["Zk-secret-key"]);
    assert_eq!(
        concealer.conceal("x &#56Zk-secret-key y"),
        "x &#56[redacted] y"
    );
    // At a span's end, an escape the span opened leaves its digits after
    // the marker, which every reader reads as themselves, as the text's
    // own scan read them: nothing there to take.
    let concealer = Concealer::new(["key-secret-&#"]);
    assert_eq!(
        concealer.conceal("x key-secret-&#99999999; y"),
        "x [redacted]99999999; y"
    );
}

#[test]
fn unknown_escapes_read_as_a_lenient_json_reader_reads_them() {
    let concealer = Concealer::new(["mw-test-0123456789"]);
    for text in [
        r"m\w-te\st-0123456789",
        r"\m\w\-te\st-\0\1\2\3456789",
        r"m\w%2Dte\st-0123456789",
        r"m\w-te\st-\u00301234\5\6\7\8\9",
    ] {
        let text = format!("<{text}>");
        assert_eq!(concealer.conceal(&text), "<[redacted]>", "{text:?}");
    }
    // `\x` read both ways: JavaScript's code point, and the `x` itself.
    let concealer = Concealer::new(["x41-secret-key"]);
    assert_eq!(concealer.conceal(r"<\x41-secret-key>"), "<[redacted]>");
    assert_eq!(concealer.conceal(r"<\x78\x341-secret-key>"), "<[redacted]>");
    // A token holding a backslash, JSON-escaped, with unknown escapes
    // around it.
    let concealer = Concealer::new([r"ab\cd-1234"]);
    assert_eq!(concealer.conceal(r"<\ab\\c\d-1234>"), "<[redacted]>");
    assert_eq!(concealer.conceal(r"<\ab\\cd-\1234>"), "<[redacted]>");
}

#[test]
fn scrub_never_joins_a_reshaped_url_to_what_follows() {
    let concealer = Concealer::new(["hostKEY-0123"]);
    // The path keeps the host and `\u004BEY-0123` apart; cutting the
    // URL to its host would join them into the token's JSON form.
    let scrubbed = concealer.scrub(r"see https://host/path\u004BEY-0123 now");
    assert_eq!(concealer.conceal(&scrubbed), scrubbed);
    assert_eq!(scrubbed, "see https://[redacted] now");
}

#[test]
fn the_base64_of_an_echo_cut_short_at_either_end_is_concealed_with_the_characters_that_share_its_bits()
 {
    let token = "acme/9f8e+7d6c=not-for-print-0042";
    let concealer = Concealer::new([token]);
    // What an engine that cut its echo short wrote: the base64 of all but
    // the token's last three characters, and of all but one or two of its
    // first ones too.
    for echo in [
        "YWNtZS85ZjhlKzdkNmM9bm90LWZvci1wcmludC0w",
        "Y21lLzlmOGUrN2Q2Yz1ub3QtZm9yLXByaW50LTA",
        "bWUvOWY4ZSs3ZDZjPW5vdC1mb3ItcHJpbnQtMD",
    ] {
        for (text, kept) in [
            (echo.to_owned(), String::new()),
            (
                format!("{{\"echo\": \"{echo}\"}}"),
                "{\"echo\": \"\"}".to_owned(),
            ),
            (format!("said {echo}."), "said .".to_owned()),
        ] {
            let out = concealer.conceal(&text);
            assert_eq!(out.matches(REDACTED).count(), 1, "{out}");
            assert_eq!(out.replace(REDACTED, ""), kept, "{text} became {out}");
        }
    }
    // Between unrelated base64 characters, the one beside the echo that
    // shares its bits goes with it, and no more than that.
    let out = concealer.conceal("QUJDYWNtZS85ZjhlKzdkNmM9bm90LWZvci1wcmludC0wRUZH");
    assert!(out.starts_with("QUJD") && out.ends_with("UZH"), "{out}");
}

/// The base64 of a short token cut short at either end: an 8-character
/// token less its last character (`VEdNbWw1ZA==` is `TGMml5d`), and every
/// cut of tokens of 5 to 18 characters that keeps 5 of their bytes, in
/// both alphabets, padded or not, goes whole.
#[test]
fn the_base64_of_a_short_token_cut_short_is_concealed() {
    let concealer = Concealer::new(["TGMml5dK"]);
    assert_eq!(concealer.conceal("x VEdNbWw1ZA== y"), "x [redacted] y");
    let letters = "k+9/Qz=7Ab~c_d-e<f>";
    for len in [5, 6, 7, 8, 10, 11, 12, 16, 17, 18] {
        let token = &letters[..len];
        let concealer = Concealer::new([token]);
        for front in 0..=3 {
            for back in 0..=3 {
                let Some(cut) = token.get(front..len - back.min(len)) else {
                    continue;
                };
                if cut.len() < 5 {
                    continue;
                }
                for encoded in [
                    STANDARD.encode(cut),
                    STANDARD_NO_PAD.encode(cut),
                    URL_SAFE.encode(cut),
                    URL_SAFE_NO_PAD.encode(cut),
                ] {
                    let text = format!("x {encoded} y");
                    assert_eq!(
                        concealer.conceal(&text),
                        "x [redacted] y",
                        "{token:?} less {front} and {back}: {text}"
                    );
                }
            }
        }
    }
}
