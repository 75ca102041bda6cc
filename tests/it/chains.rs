//! The two chains of variables (the README's configuration section): each is read most specific
//! first, blanks are skipped, values are trimmed, the winner's name is the
//! refusal's `variable`, scopes fold into names, the chains never cross, and a naming
//! that would let one variable feed both is rejected when it is built.
//!
//! All of it is seen from outside, as an operator sees it: which engine on
//! loopback a send reaches, which variable its refusal names, and what a
//! transport holds before it sends anything.

use meterwire::{BuildError, Cause, Env, HttpTransport, Naming};
use wiremock::matchers::{header, path};
use wiremock::{MockServer, ResponseTemplate};

use crate::support::TOKEN;
use crate::support::engines::{self, engine_with, posts};

/// The address chain of the default naming for the scope `acme`, in order.
const ADDRESS_CHAIN: [&str; 3] = [
    "CHANT_BEHAVIOUR_ENGINE_ACME",
    "CHANT_BEHAVIOUR_ENGINE",
    "BEHAVIOUR_ENGINE",
];

/// The token chain of the default naming for the scope `acme`, in order.
const TOKEN_CHAIN: [&str; 3] = [
    "CHANT_BEHAVIOUR_TOKEN_ACME",
    "CHANT_BEHAVIOUR_TOKEN",
    "BEHAVIOUR_TOKEN",
];

/// An address nothing is ever sent to: the tests that use it only look at
/// what the transport decided when it was built.
const UNUSED_ADDRESS: &str = "http://127.0.0.1:9/";

fn transport_with(scope: &str, pairs: &[(&str, &str)]) -> HttpTransport {
    HttpTransport::builder(scope)
        .env(Env::from_pairs(pairs.iter().copied()))
        .build()
        .expect("the configuration is valid")
}

/// An engine failing every request with a 503, expecting exactly `requests`
/// of them: the engine whose variable won receives the one send, the others
/// nothing, and the refusal names the winner.
async fn engine_expecting(requests: u64) -> MockServer {
    engines::engine_expecting(requests, ResponseTemplate::new(503)).await
}

/// An engine rejecting with a 401 the one request that carries `token`: the
/// refusal names the token variable that won. A request with another token
/// matches no mock, so it gets wiremock's 404 and the expectation fails.
async fn engine_rejecting(token: &str) -> MockServer {
    engine_with([posts()
        .and(header("authorization", format!("Bearer {token}").as_str()))
        .respond_with(ResponseTemplate::new(401))
        .expect(1)])
    .await
}

/// Sends once and returns the variable the refusal traces back to.
async fn variable_named_by_a_send(transport: &HttpTransport) -> Option<String> {
    let refusal = transport
        .send("{}")
        .await
        .expect_err("the engine refuses every request");
    refusal.variable().map(str::to_owned)
}

// ---------------------------------------------------------------------------
// Most specific first.

#[tokio::test]
async fn the_scoped_address_variable_wins_over_the_prefix_and_the_stem() {
    let scoped = engine_expecting(1).await;
    let prefix = engine_expecting(0).await;
    let stem = engine_expecting(0).await;
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE_ACME", &scoped.uri()),
            ("CHANT_BEHAVIOUR_ENGINE", &prefix.uri()),
            ("BEHAVIOUR_ENGINE", &stem.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ],
    );

    let variable = variable_named_by_a_send(&transport).await;

    assert_eq!(variable.as_deref(), Some("CHANT_BEHAVIOUR_ENGINE_ACME"));
}

#[tokio::test]
async fn the_prefix_address_variable_wins_over_the_stem() {
    let prefix = engine_expecting(1).await;
    let stem = engine_expecting(0).await;
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE", &prefix.uri()),
            ("BEHAVIOUR_ENGINE", &stem.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ],
    );

    let variable = variable_named_by_a_send(&transport).await;

    assert_eq!(variable.as_deref(), Some("CHANT_BEHAVIOUR_ENGINE"));
}

#[tokio::test]
async fn the_stem_address_variable_is_read_when_nothing_more_specific_is_set() {
    let stem = engine_expecting(1).await;
    let transport = transport_with(
        "acme",
        &[
            ("BEHAVIOUR_ENGINE", &stem.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ],
    );

    let variable = variable_named_by_a_send(&transport).await;

    assert_eq!(variable.as_deref(), Some("BEHAVIOUR_ENGINE"));
}

#[tokio::test]
async fn the_scoped_token_variable_wins_over_the_prefix_and_the_stem() {
    let engine = engine_rejecting("mw-scoped-0001").await;
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE", &engine.uri()),
            ("CHANT_BEHAVIOUR_TOKEN_ACME", "mw-scoped-0001"),
            ("CHANT_BEHAVIOUR_TOKEN", "mw-prefix-0002"),
            ("BEHAVIOUR_TOKEN", "mw-stem-0003"),
        ],
    );

    let variable = variable_named_by_a_send(&transport).await;

    assert_eq!(variable.as_deref(), Some("CHANT_BEHAVIOUR_TOKEN_ACME"));
}

#[tokio::test]
async fn the_prefix_token_variable_wins_over_the_stem() {
    let engine = engine_rejecting("mw-prefix-0002").await;
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE", &engine.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", "mw-prefix-0002"),
            ("BEHAVIOUR_TOKEN", "mw-stem-0003"),
        ],
    );

    let variable = variable_named_by_a_send(&transport).await;

    assert_eq!(variable.as_deref(), Some("CHANT_BEHAVIOUR_TOKEN"));
}

#[tokio::test]
async fn the_stem_token_variable_is_read_when_nothing_more_specific_is_set() {
    let engine = engine_rejecting("mw-stem-0003").await;
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE", &engine.uri()),
            ("BEHAVIOUR_TOKEN", "mw-stem-0003"),
        ],
    );

    let variable = variable_named_by_a_send(&transport).await;

    assert_eq!(variable.as_deref(), Some("BEHAVIOUR_TOKEN"));
}

// ---------------------------------------------------------------------------
// Blank values and whitespace.

#[tokio::test]
async fn blank_address_variables_are_skipped() {
    let stem = engine_expecting(1).await;
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE_ACME", ""),
            ("CHANT_BEHAVIOUR_ENGINE", " \t\n "),
            ("BEHAVIOUR_ENGINE", &stem.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ],
    );

    let variable = variable_named_by_a_send(&transport).await;

    assert_eq!(variable.as_deref(), Some("BEHAVIOUR_ENGINE"));
}

#[tokio::test]
async fn blank_token_variables_are_skipped() {
    let engine = engine_rejecting("mw-stem-0003").await;
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE", &engine.uri()),
            ("CHANT_BEHAVIOUR_TOKEN_ACME", "   "),
            ("CHANT_BEHAVIOUR_TOKEN", ""),
            ("BEHAVIOUR_TOKEN", "mw-stem-0003"),
        ],
    );

    let variable = variable_named_by_a_send(&transport).await;

    assert_eq!(variable.as_deref(), Some("BEHAVIOUR_TOKEN"));
}

#[test]
fn a_chain_of_only_blank_variables_resolves_nothing() {
    let only_blanks = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE_ACME", " "),
            ("CHANT_BEHAVIOUR_ENGINE", "\t"),
            ("BEHAVIOUR_ENGINE", ""),
            ("CHANT_BEHAVIOUR_TOKEN_ACME", " "),
            ("CHANT_BEHAVIOUR_TOKEN", "\n"),
            ("BEHAVIOUR_TOKEN", ""),
        ],
    );
    // An address in the stem's variable, so the token chain is read too.
    let only_blank_tokens = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE_ACME", " "),
            ("CHANT_BEHAVIOUR_ENGINE", "\t"),
            ("BEHAVIOUR_ENGINE", UNUSED_ADDRESS),
            ("CHANT_BEHAVIOUR_TOKEN_ACME", " "),
            ("CHANT_BEHAVIOUR_TOKEN", "\n"),
            ("BEHAVIOUR_TOKEN", ""),
        ],
    );

    let no_address = only_blanks.refusal().expect("nothing can be sent");
    let no_token = only_blank_tokens.refusal().expect("nothing can be sent");

    assert_eq!(no_address.cause(), Cause::NoEngine);
    assert!(
        no_address.reason().contains("no engine address"),
        "{no_address}"
    );
    assert_eq!(no_token.cause(), Cause::NoEngine);
    assert!(no_token.reason().contains("no bearer token"), "{no_token}");
}

/// The value of the winning variable is what reaches the wire: an address
/// padded with whitespace still names its engine.
#[tokio::test]
async fn an_address_value_is_trimmed() {
    let engine = engine_with([posts()
        .and(path("/v1"))
        .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"ok":true}"#))
        .expect(1)])
    .await;
    let padded = format!("  {}/v1 \n", engine.uri());
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_ENGINE", &padded),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ],
    );

    let answer = transport
        .send("{}")
        .await
        .expect("the engine at the trimmed address answers");

    assert_eq!(answer.text(), r#"{"ok":true}"#);
}

/// The token's value is reachable only on the wire, so the trim is checked
/// where it matters: the header the engine receives.
#[tokio::test]
async fn a_token_value_is_trimmed_before_it_is_sent() {
    let engine = engine_with([posts()
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"ok":true}"#))
        .expect(1)])
    .await;
    let transport = HttpTransport::builder("acme")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", engine.uri()),
            ("CHANT_BEHAVIOUR_TOKEN", format!(" \t{TOKEN}  \n")),
        ]))
        .build()
        .expect("the configuration is valid");
    let answer = transport.send("{}").await.expect("the engine answers");
    assert_eq!(answer.text(), r#"{"ok":true}"#);
}

// ---------------------------------------------------------------------------
// Scopes fold into names.

/// Fails unless a transport for `scope` takes its address from `variable`
/// when that is the only address variable set. Only the scoped variable
/// depends on the scope, so this is the scope's folded name seen from
/// outside; a failure shows the remedy, which names the scoped variable the
/// transport did read.
#[track_caller]
fn assert_reads_its_address_from(scope: &str, variable: &str) {
    let transport = transport_with(
        scope,
        &[(variable, UNUSED_ADDRESS), ("CHANT_BEHAVIOUR_TOKEN", TOKEN)],
    );
    if let Some(refusal) = transport.refusal() {
        panic!(
            "scope {scope:?} does not read {variable}: {}",
            refusal.remedy()
        );
    }
}

/// As [`assert_reads_its_address_from`], for the token chain.
#[track_caller]
fn assert_reads_its_token_from(scope: &str, variable: &str) {
    let transport = transport_with(
        scope,
        &[
            ("CHANT_BEHAVIOUR_ENGINE", UNUSED_ADDRESS),
            (variable, TOKEN),
        ],
    );
    if let Some(refusal) = transport.refusal() {
        panic!(
            "scope {scope:?} does not read {variable}: {}",
            refusal.remedy()
        );
    }
}

#[test]
fn a_scope_folds_to_upper_case_with_runs_of_other_characters_as_one_underscore() {
    assert_reads_its_address_from("my-lexicon.v2", "CHANT_BEHAVIOUR_ENGINE_MY_LEXICON_V2");
    assert_reads_its_address_from("a__b", "CHANT_BEHAVIOUR_ENGINE_A_B");
    assert_reads_its_address_from("a - . b", "CHANT_BEHAVIOUR_ENGINE_A_B");
    assert_reads_its_address_from("acme", "CHANT_BEHAVIOUR_ENGINE_ACME");
    assert_reads_its_address_from("ACME2", "CHANT_BEHAVIOUR_ENGINE_ACME2");
}

#[test]
fn a_scope_folds_with_no_underscore_left_at_either_end() {
    assert_reads_its_address_from("  acme  ", "CHANT_BEHAVIOUR_ENGINE_ACME");
    assert_reads_its_address_from("--acme--", "CHANT_BEHAVIOUR_ENGINE_ACME");
    assert_reads_its_address_from("_a_", "CHANT_BEHAVIOUR_ENGINE_A");
}

#[test]
fn a_scope_outside_ascii_keeps_only_its_ascii_letters_and_digits() {
    assert_reads_its_address_from("Ünïcode", "CHANT_BEHAVIOUR_ENGINE_N_CODE");
    assert_reads_its_address_from("café-2", "CHANT_BEHAVIOUR_ENGINE_CAF_2");
    // Folds to nothing, so it names no variable at all.
    let built = HttpTransport::builder("日本")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", UNUSED_ADDRESS),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ]))
        .build();
    assert!(matches!(built, Err(BuildError::Scope(_))), "{built:?}");
}

#[test]
fn the_folded_scope_names_the_scoped_variable_of_both_chains() {
    assert_reads_its_address_from("my-lexicon.v2", "CHANT_BEHAVIOUR_ENGINE_MY_LEXICON_V2");
    assert_reads_its_token_from("my-lexicon.v2", "CHANT_BEHAVIOUR_TOKEN_MY_LEXICON_V2");
}

#[test]
fn a_scope_with_no_letter_or_digit_cannot_build_a_transport() {
    let built = HttpTransport::builder("--")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", "http://127.0.0.1:9/"),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ]))
        .build();
    assert!(built.is_err());
}

/// The error quotes the scope concealed: a scope of punctuation alone can
/// still be a credential of the environment.
#[test]
fn a_scope_with_no_letter_or_digit_is_quoted_concealed() {
    let secret = "!!-~~-^^-**";
    let error = HttpTransport::builder(secret)
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", "http://127.0.0.1:9/"),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
            ("DEPLOY_PASSWORD", secret),
        ]))
        .build()
        .expect_err("a scope with no letter or digit");
    assert!(matches!(error, BuildError::Scope(_)), "{error:?}");
    for shown in [error.to_string(), format!("{error:?}")] {
        assert!(!shown.contains(secret), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}

// ---------------------------------------------------------------------------
// The chains never cross.

#[test]
fn a_value_set_only_in_token_variables_is_never_an_address() {
    let transport = transport_with(
        "acme",
        &[
            ("CHANT_BEHAVIOUR_TOKEN_ACME", UNUSED_ADDRESS),
            ("CHANT_BEHAVIOUR_TOKEN", UNUSED_ADDRESS),
            ("BEHAVIOUR_TOKEN", UNUSED_ADDRESS),
        ],
    );

    let refusal = transport.refusal().expect("nothing can be sent");

    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert!(refusal.reason().contains("no engine address"), "{refusal}");
}

#[test]
fn a_transport_with_its_address_only_in_token_variables_refuses_for_no_address() {
    let transport = HttpTransport::builder("acme")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_TOKEN_ACME", "http://127.0.0.1:9/"),
            ("CHANT_BEHAVIOUR_TOKEN", "http://127.0.0.1:9/"),
        ]))
        .build()
        .expect("the configuration is valid");
    let refusal = transport.refusal().expect("nothing can be sent");
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert!(
        refusal.reason().contains("no engine address"),
        "{}",
        refusal.reason()
    );
    for variable in ADDRESS_CHAIN {
        assert!(refusal.reason().contains(variable), "{refusal}");
    }
    assert!(!refusal.to_string().contains("127.0.0.1:9"), "{refusal}");
}

#[test]
fn a_transport_with_its_token_only_in_engine_variables_refuses_for_no_token() {
    // The address wins the address chain; a token-looking value further down
    // the same chain must not be promoted into the token chain.
    let transport = HttpTransport::builder("acme")
        .env(Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", "http://127.0.0.1:9/"),
            ("BEHAVIOUR_ENGINE", TOKEN),
        ]))
        .build()
        .expect("the configuration is valid");
    let refusal = transport.refusal().expect("nothing can be sent");
    assert_eq!(refusal.cause(), Cause::NoEngine);
    assert!(
        refusal.reason().contains("no bearer token"),
        "{}",
        refusal.reason()
    );
    for variable in TOKEN_CHAIN {
        assert!(refusal.reason().contains(variable), "{refusal}");
    }
    assert!(!refusal.report().to_json().contains(TOKEN));
}

// ---------------------------------------------------------------------------
// Namings.

#[test]
fn a_naming_whose_stem_equals_its_prefix_is_rejected() {
    assert!(Naming::new("ACME", "ACME").is_err());
}

#[test]
fn a_naming_whose_stem_starts_with_the_prefix_engine_variable_is_rejected() {
    // With scope `token`, ACME_ENGINE_TOKEN would be both the scoped address
    // variable and the stem's token variable.
    assert!(Naming::new("ACME", "ACME_ENGINE").is_err());
    assert!(Naming::new("ACME", "ACME_ENGINE_X").is_err());
}

#[test]
fn a_naming_whose_stem_starts_with_the_prefix_token_variable_is_rejected() {
    assert!(Naming::new("ACME", "ACME_TOKEN").is_err());
    assert!(Naming::new("ACME", "ACME_TOKEN_X").is_err());
}

#[test]
fn a_prefix_or_stem_that_is_not_a_variable_name_is_rejected() {
    for bad in ["acme", "", "A__B", "_A", "A_", "1A", "A-B", "A B", "ÄCME"] {
        assert!(Naming::new(bad, "BEHAVIOUR").is_err(), "prefix {bad:?}");
        assert!(Naming::new("CHANT_BEHAVIOUR", bad).is_err(), "stem {bad:?}");
    }
}

/// The chains are seen where an operator reads them: a transport with
/// nothing set lists the address chain in order, one with only an address
/// lists the token chain.
#[test]
fn the_deployment_naming_is_accepted_and_is_the_default() {
    let naming = Naming::new("CHANT_BEHAVIOUR", "BEHAVIOUR").expect("a valid naming");
    assert_eq!(naming, Naming::default());
    let build = |pairs: &[(&str, &str)]| {
        HttpTransport::builder("acme")
            .naming(naming.clone())
            .env(Env::from_pairs(pairs.iter().copied()))
            .build()
            .expect("the configuration is valid")
    };
    let nothing_set = build(&[]);
    let address_only = build(&[("BEHAVIOUR_ENGINE", UNUSED_ADDRESS)]);

    let no_address = nothing_set.refusal().expect("no address is refused");
    let no_token = address_only.refusal().expect("no token is refused");

    let address_chain = ADDRESS_CHAIN.join(", ");
    assert!(
        no_address.reason().contains(&address_chain),
        "the reason does not list {address_chain}: {no_address}"
    );
    let token_chain = TOKEN_CHAIN.join(", ");
    assert!(
        no_token.reason().contains(&token_chain),
        "the reason does not list {token_chain}: {no_token}"
    );
}
