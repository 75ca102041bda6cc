//! An address or proxy whose userinfo the URL parser cannot find (a `/`,
//! `?`, `#` or `\` in the password ends the host early, or no scheme makes
//! the user a scheme) is shown with everything before its last `@` as
//! `[redacted]`: in the refusal's reason, remedy, Display, Debug and report,
//! in the transport's and the builder's Debug, and in `BuildError::Proxy`.
//! Nothing here is sent: every address is refused when the transport is
//! built.

use meterwire::{BuildError, Cause, HttpTransport, HttpTransportBuilder};
use proptest::prelude::*;

use crate::support::{ADDRESS_VAR, SCOPE, TOKEN, TOKEN_VAR, env};

/// Every string a transport built from `address` in the address chain, its
/// builder and its refusal can be printed as.
fn outputs_of_address(address: &str) -> Vec<(&'static str, String)> {
    let builder =
        || HttpTransport::builder(SCOPE).env(env(&[(ADDRESS_VAR, address), (TOKEN_VAR, TOKEN)]));
    let mut outputs = vec![
        ("builder Debug", format!("{:?}", builder())),
        (
            "builder Debug, given in code",
            format!("{:?}", HttpTransport::builder(SCOPE).address(address)),
        ),
    ];
    let transport = builder()
        .build()
        .expect("an address that cannot send still builds");
    outputs.push(("transport Debug", format!("{transport:?}")));
    if let Some(refusal) = transport.refusal() {
        outputs.extend([
            ("reason", refusal.reason().to_owned()),
            ("remedy", refusal.remedy().to_owned()),
            ("Display", refusal.to_string()),
            ("Debug", format!("{refusal:?}")),
            ("JSON", refusal.report().to_json()),
        ]);
    }
    outputs
}

/// Every string a builder given `proxy`, and what it builds or the error it
/// fails with, can be printed as.
fn outputs_of_proxy(proxy: &str) -> Vec<(&'static str, String)> {
    let builder = || {
        HttpTransport::builder(SCOPE)
            .env(env(&[
                (ADDRESS_VAR, "https://127.0.0.1:9/v1"),
                (TOKEN_VAR, TOKEN),
            ]))
            .proxy(proxy)
    };
    let mut outputs = vec![("builder Debug", format!("{:?}", builder()))];
    match builder().build() {
        Ok(transport) => outputs.push(("transport Debug", format!("{transport:?}"))),
        Err(error) => outputs.extend([
            ("BuildError Display", error.to_string()),
            ("BuildError Debug", format!("{error:?}")),
        ]),
    }
    outputs
}

#[track_caller]
fn assert_shown_nowhere(outputs: &[(&'static str, String)], value: &str, secret: &str) {
    for (what, text) in outputs {
        assert!(
            !text.contains(secret),
            "the {what} for {value:?} shows {secret:?}: {text}"
        );
    }
}

/// The shapes the parser gets wrong: each with its password, and what the
/// reason must show in its place.
const SHAPES: [(&str, &str, &str); 7] = [
    (
        "https://user:s3cret/Passw0rdXYZ@engine.example/v1",
        "s3cret/Passw0rdXYZ",
        "https://[redacted]@engine.example/v1",
    ),
    (
        "https://user:s3cret#Passw0rdXYZ@engine.example/v1",
        "s3cret#Passw0rdXYZ",
        "https://[redacted]@engine.example/v1",
    ),
    (
        "https://user:s3cret?Passw0rdXYZ@engine.example/v1",
        "s3cret?Passw0rdXYZ",
        "https://[redacted]@engine.example/v1",
    ),
    (
        "user:s3cretPassw0rdXYZ@engine.example/v1",
        "s3cretPassw0rdXYZ",
        "[redacted]@engine.example/v1",
    ),
    // These parse, with `user` as the host: the password's tail is in the
    // path or the query.
    (
        "https://user:8443/Passw0rdXYZ@engine.example/v1",
        "Passw0rdXYZ",
        "https://[redacted]@engine.example/v1",
    ),
    (
        "https://user:p@ss?w0rdXYZ@engine.example/v1",
        "ss?w0rdXYZ",
        "https://[redacted]@engine.example/v1",
    ),
    (
        "https://a@b:c/Passw0rdXYZ@d?e@engine.example/v1#frag",
        "Passw0rdXYZ",
        "https://[redacted]@engine.example/v1#[redacted]",
    ),
];

#[test]
fn a_password_that_ends_the_host_early_is_shown_nowhere() {
    for (address, password, shown) in SHAPES {
        let outputs = outputs_of_address(address);
        assert_shown_nowhere(&outputs, address, password);
        // Nor any piece of it the parser took for a host or a port.
        for piece in password.split(['/', '#', '?', '@']) {
            if piece.len() >= 4 {
                assert_shown_nowhere(&outputs, address, piece);
            }
        }
        let refusal = HttpTransport::builder(SCOPE)
            .env(env(&[(ADDRESS_VAR, address), (TOKEN_VAR, TOKEN)]))
            .build()
            .expect("builds")
            .refusal()
            .cloned()
            .unwrap_or_else(|| panic!("{address} is refused"));
        assert_eq!(refusal.cause(), Cause::EngineUnreachable, "{address}");
        assert_eq!(refusal.variable(), Some(ADDRESS_VAR), "{address}");
        assert!(
            refusal.reason().contains(&format!("the address {shown} ")),
            "{address}: {}",
            refusal.reason()
        );
    }
}

#[test]
fn an_at_after_the_host_is_refused_with_a_remedy_that_says_how_to_write_it() {
    let refusal = HttpTransport::builder(SCOPE)
        .env(env(&[(TOKEN_VAR, TOKEN)]))
        .address("https://user:8443/Passw0rdXYZ@engine.example/v1")
        .build()
        .expect("builds")
        .refusal()
        .cloned()
        .expect("refused");
    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert!(
        refusal.reason().contains("given in code"),
        "{}",
        refusal.reason()
    );
    assert!(refusal.reason().contains("%40"), "{}", refusal.reason());
    assert!(
        !refusal.to_string().contains("user:8443"),
        "the parser's host is not shown as the engine's: {refusal}"
    );
}

#[test]
fn a_proxy_whose_password_ends_the_host_early_fails_to_build_showing_it_nowhere() {
    for (proxy, password) in [
        (
            "http://user:s3cret/Passw0rdXYZ@127.0.0.1:3128",
            "s3cret/Passw0rdXYZ",
        ),
        (
            "http://user:s3cret#Passw0rdXYZ@127.0.0.1:3128",
            "s3cret#Passw0rdXYZ",
        ),
        ("user:s3cretPassw0rdXYZ@127.0.0.1:3128", "s3cretPassw0rdXYZ"),
        // Parses, as the proxy `user:3128`: not the proxy meant.
        ("http://user:3128/Passw0rdXYZ@127.0.0.1:3128", "Passw0rdXYZ"),
    ] {
        assert_shown_nowhere(&outputs_of_proxy(proxy), proxy, password);
        let builder: HttpTransportBuilder = HttpTransport::builder(SCOPE)
            .env(env(&[
                (ADDRESS_VAR, "https://127.0.0.1:9/v1"),
                (TOKEN_VAR, TOKEN),
            ]))
            .proxy(proxy);
        match builder.build() {
            Err(BuildError::Proxy { shown }) => {
                assert!(
                    shown.contains("[redacted]@127.0.0.1:3128"),
                    "{proxy}: {shown}"
                );
            }
            other => panic!("{proxy}: not refused as a proxy: {other:?}"),
        }
    }
}

/// How a random password is wrapped into an address or a proxy.
const TEMPLATES: [&str; 5] = [
    "https://user:{}@engine.example/v1",
    "user:{}@engine.example/v1",
    "https://{}@engine.example:8443/v1?key=1",
    "http://a@b:{}@engine.example/v1#x",
    "socks5://user:{}@127.0.0.1:1080",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_random_password_in_an_address_or_a_proxy_is_shown_nowhere(
        password in "[!-~]{10,24}",
        template in 0..TEMPLATES.len(),
    ) {
        let value = TEMPLATES[template].replace("{}", &password);
        for (what, text) in outputs_of_address(&value).into_iter().chain(outputs_of_proxy(&value)) {
            prop_assert!(
                !text.contains(&password),
                "the {} for {:?} shows the password: {}", what, value, text
            );
        }
    }
}
