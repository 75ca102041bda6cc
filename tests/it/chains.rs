//! The two chains of variables (the README's configuration section): each is read most specific
//! first, blanks are skipped, values are trimmed, the winner's name is the
//! `source`, scopes fold into names, the chains never cross, and a naming
//! that would let one variable feed both is rejected when it is built.

use meterwire::{Cause, Env, HttpTransport, Naming, fold_scope};
use proptest::prelude::*;
use wiremock::matchers::{header, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "mw-live-4f9c2a7e1b3d5f60";

fn naming() -> Naming {
    Naming::default()
}

fn address_source(pairs: &[(&str, &str)]) -> Option<(String, String)> {
    naming()
        .address_chain("acme")
        .resolve(&Env::from_pairs(pairs.iter().copied()))
        .map(|found| (found.value().to_owned(), found.source().to_owned()))
}

fn token_source(pairs: &[(&str, &str)]) -> Option<String> {
    naming()
        .token_chain("acme")
        .resolve(&Env::from_pairs(pairs.iter().copied()))
        .expect("every token in these tests is visible ASCII")
        .map(|token| token.source().to_owned())
}

#[test]
fn the_scoped_address_variable_wins_over_the_prefix_and_the_stem() {
    let found = address_source(&[
        ("CHANT_BEHAVIOUR_ENGINE_ACME", "https://scoped.example/"),
        ("CHANT_BEHAVIOUR_ENGINE", "https://prefix.example/"),
        ("BEHAVIOUR_ENGINE", "https://stem.example/"),
    ]);
    assert_eq!(
        found,
        Some((
            "https://scoped.example/".to_owned(),
            "CHANT_BEHAVIOUR_ENGINE_ACME".to_owned()
        ))
    );
}

#[test]
fn the_prefix_address_variable_wins_over_the_stem() {
    let found = address_source(&[
        ("CHANT_BEHAVIOUR_ENGINE", "https://prefix.example/"),
        ("BEHAVIOUR_ENGINE", "https://stem.example/"),
    ]);
    assert_eq!(
        found,
        Some((
            "https://prefix.example/".to_owned(),
            "CHANT_BEHAVIOUR_ENGINE".to_owned()
        ))
    );
}

#[test]
fn the_stem_address_variable_is_read_when_nothing_more_specific_is_set() {
    let found = address_source(&[("BEHAVIOUR_ENGINE", "https://stem.example/")]);
    assert_eq!(
        found,
        Some((
            "https://stem.example/".to_owned(),
            "BEHAVIOUR_ENGINE".to_owned()
        ))
    );
}

#[test]
fn the_scoped_token_variable_wins_over_the_prefix_and_the_stem() {
    let found = token_source(&[
        ("CHANT_BEHAVIOUR_TOKEN_ACME", "mw-scoped-0001"),
        ("CHANT_BEHAVIOUR_TOKEN", "mw-prefix-0002"),
        ("BEHAVIOUR_TOKEN", "mw-stem-0003"),
    ]);
    assert_eq!(found.as_deref(), Some("CHANT_BEHAVIOUR_TOKEN_ACME"));
}

#[test]
fn the_prefix_token_variable_wins_over_the_stem() {
    let found = token_source(&[
        ("CHANT_BEHAVIOUR_TOKEN", "mw-prefix-0002"),
        ("BEHAVIOUR_TOKEN", "mw-stem-0003"),
    ]);
    assert_eq!(found.as_deref(), Some("CHANT_BEHAVIOUR_TOKEN"));
}

#[test]
fn the_stem_token_variable_is_read_when_nothing_more_specific_is_set() {
    let found = token_source(&[("BEHAVIOUR_TOKEN", "mw-stem-0003")]);
    assert_eq!(found.as_deref(), Some("BEHAVIOUR_TOKEN"));
}

#[test]
fn blank_address_variables_are_skipped() {
    let found = address_source(&[
        ("CHANT_BEHAVIOUR_ENGINE_ACME", ""),
        ("CHANT_BEHAVIOUR_ENGINE", " \t\n "),
        ("BEHAVIOUR_ENGINE", "https://stem.example/"),
    ]);
    assert_eq!(
        found.map(|(_, source)| source).as_deref(),
        Some("BEHAVIOUR_ENGINE")
    );
}

#[test]
fn blank_token_variables_are_skipped() {
    let found = token_source(&[
        ("CHANT_BEHAVIOUR_TOKEN_ACME", "   "),
        ("CHANT_BEHAVIOUR_TOKEN", ""),
        ("BEHAVIOUR_TOKEN", "mw-stem-0003"),
    ]);
    assert_eq!(found.as_deref(), Some("BEHAVIOUR_TOKEN"));
}

#[test]
fn a_chain_of_only_blank_variables_resolves_nothing() {
    let env = Env::from_pairs([
        ("CHANT_BEHAVIOUR_ENGINE_ACME", " "),
        ("CHANT_BEHAVIOUR_ENGINE", "\t"),
        ("BEHAVIOUR_ENGINE", ""),
        ("CHANT_BEHAVIOUR_TOKEN_ACME", " "),
        ("CHANT_BEHAVIOUR_TOKEN", "\n"),
        ("BEHAVIOUR_TOKEN", ""),
    ]);
    assert!(naming().address_chain("acme").resolve(&env).is_none());
    assert!(matches!(
        naming().token_chain("acme").resolve(&env),
        Ok(None)
    ));
}

#[test]
fn an_address_value_is_trimmed() {
    let found = address_source(&[("CHANT_BEHAVIOUR_ENGINE", "  https://engine.example/v1 \n")]);
    assert_eq!(
        found.map(|(value, _)| value).as_deref(),
        Some("https://engine.example/v1")
    );
}

/// The token's value is reachable only on the wire, so the trim is checked
/// where it matters: the header the engine receives.
#[tokio::test]
async fn a_token_value_is_trimmed_before_it_is_sent() {
    let engine = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"ok":true}"#))
        .expect(1)
        .mount(&engine)
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

#[test]
fn a_scope_folds_to_upper_case_with_runs_of_other_characters_as_one_underscore() {
    assert_eq!(fold_scope("my-lexicon.v2"), "MY_LEXICON_V2");
    assert_eq!(fold_scope("a__b"), "A_B");
    assert_eq!(fold_scope("a - . b"), "A_B");
    assert_eq!(fold_scope("acme"), "ACME");
    assert_eq!(fold_scope("ACME2"), "ACME2");
}

#[test]
fn a_scope_folds_with_no_underscore_left_at_either_end() {
    assert_eq!(fold_scope("  acme  "), "ACME");
    assert_eq!(fold_scope("--acme--"), "ACME");
    assert_eq!(fold_scope("_a_"), "A");
}

#[test]
fn a_scope_outside_ascii_keeps_only_its_ascii_letters_and_digits() {
    assert_eq!(fold_scope("Ünïcode"), "N_CODE");
    assert_eq!(fold_scope("日本"), "");
    assert_eq!(fold_scope("café-2"), "CAF_2");
}

#[test]
fn the_folded_scope_names_the_scoped_variable_of_both_chains() {
    let naming = naming();
    assert_eq!(
        naming.address_chain("my-lexicon.v2").variables()[0],
        "CHANT_BEHAVIOUR_ENGINE_MY_LEXICON_V2"
    );
    assert_eq!(
        naming.token_chain("my-lexicon.v2").variables()[0],
        "CHANT_BEHAVIOUR_TOKEN_MY_LEXICON_V2"
    );
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

#[test]
fn a_value_set_only_in_engine_variables_is_never_a_token() {
    let env = Env::from_pairs([
        ("CHANT_BEHAVIOUR_ENGINE_ACME", TOKEN),
        ("CHANT_BEHAVIOUR_ENGINE", TOKEN),
        ("BEHAVIOUR_ENGINE", TOKEN),
    ]);
    assert!(matches!(
        naming().token_chain("acme").resolve(&env),
        Ok(None)
    ));
}

#[test]
fn a_value_set_only_in_token_variables_is_never_an_address() {
    let env = Env::from_pairs([
        ("CHANT_BEHAVIOUR_TOKEN_ACME", "http://127.0.0.1:9/"),
        ("CHANT_BEHAVIOUR_TOKEN", "http://127.0.0.1:9/"),
        ("BEHAVIOUR_TOKEN", "http://127.0.0.1:9/"),
    ]);
    assert!(naming().address_chain("acme").resolve(&env).is_none());
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
    for variable in naming().address_chain("acme").variables() {
        assert!(refusal.reason().contains(variable.as_str()), "{refusal}");
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
    for variable in naming().token_chain("acme").variables() {
        assert!(refusal.reason().contains(variable.as_str()), "{refusal}");
    }
    assert!(!refusal.report().to_json().contains(TOKEN));
}

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

#[test]
fn the_deployment_naming_is_accepted_and_is_the_default() {
    let naming = Naming::new("CHANT_BEHAVIOUR", "BEHAVIOUR").expect("a valid naming");
    assert_eq!(naming, Naming::default());
    assert_eq!(
        naming.address_chain("acme").variables(),
        [
            "CHANT_BEHAVIOUR_ENGINE_ACME",
            "CHANT_BEHAVIOUR_ENGINE",
            "BEHAVIOUR_ENGINE"
        ]
    );
    assert_eq!(
        naming.token_chain("acme").variables(),
        [
            "CHANT_BEHAVIOUR_TOKEN_ACME",
            "CHANT_BEHAVIOUR_TOKEN",
            "BEHAVIOUR_TOKEN"
        ]
    );
}

/// Names built from a few segments, weighted towards the words that make
/// chains collide, so the property meets the dangerous namings often.
fn name() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        Just("ENGINE".to_owned()),
        Just("TOKEN".to_owned()),
        Just("ACME".to_owned()),
        Just("A".to_owned()),
        "[A-Z][A-Z0-9]{0,3}",
        "[0-9][A-Z0-9]{0,2}",
    ];
    proptest::collection::vec(segment, 1..=4).prop_map(|parts| parts.join("_"))
}

fn scope() -> impl Strategy<Value = String> {
    prop_oneof![
        name().prop_map(|s| s.to_lowercase()),
        name(),
        "[a-zA-Z0-9 ._-]{0,12}",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn an_accepted_naming_never_shares_a_variable_between_its_chains(
        prefix in name(),
        stem in name(),
        scope in scope(),
    ) {
        if let Ok(naming) = Naming::new(&prefix, &stem) {
            let addresses = naming.address_chain(&scope);
            let tokens = naming.token_chain(&scope);
            for variable in addresses.variables() {
                prop_assert!(
                    !tokens.variables().contains(variable),
                    "{variable} is in both chains of ({prefix}, {stem}) for scope {scope:?}"
                );
            }
        }
    }
}
