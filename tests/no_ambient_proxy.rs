//! No ambient proxy (the README's security properties): with `HTTP_PROXY`, `ALL_PROXY` and friends
//! set in the process environment, the request still goes straight to the
//! engine and the proxy they name sees nothing; a proxy the caller
//! configures explicitly is used.
//!
//! This file is its own test binary with a single test, because it sets
//! process-wide variables that would race with, and leak into, any other
//! test in the same process.

#[path = "it/support/mod.rs"]
mod support;

use meterwire::{Env, HttpTransport};
use wiremock::{MockServer, ResponseTemplate};

use support::engines::{any_request, engine_with};
use support::{GUARD, TOKEN};

const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// Binds a listener on loopback and hands back its port, so the proxy's
/// address is known before any runtime (and so any thread) exists.
fn reserve_port() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port")
}

#[test]
fn only_a_proxy_the_caller_configures_is_ever_used() {
    let proxy_listener = reserve_port();
    let proxy_address = proxy_listener.local_addr().expect("local address");
    let proxy_uri = format!("http://{proxy_address}");

    // SAFETY: this is the only test in this binary and no runtime has been
    // built yet, so no other thread of this test reads the environment
    // while it changes.
    unsafe {
        for name in PROXY_VARIABLES {
            std::env::set_var(name, &proxy_uri);
        }
        // A bypass list would make the control below pass for the wrong
        // reason.
        std::env::remove_var("NO_PROXY");
        std::env::remove_var("no_proxy");
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let proxy = MockServer::builder().listener(proxy_listener).start().await;
        any_request()
            .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"from":"proxy"}"#))
            .mount(&proxy)
            .await;
        // The control below reaches the proxy, not the engine, so the one
        // request the engine expects is the transport's first send.
        let engine = engine_with([any_request()
            .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"from":"engine"}"#))
            .expect(1)])
        .await;
        let env = Env::from_pairs([
            ("CHANT_BEHAVIOUR_ENGINE", format!("{}/v1", engine.uri())),
            ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
        ]);

        // Control: an ordinary client does pick the variables up, so the
        // proxy below receiving nothing is the transport's doing.
        // reqwest is built without a TLS provider of its own; name one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ordinary = reqwest::Client::new()
            .post(format!("{}/v1", engine.uri()))
            .body("{}")
            .send()
            .await
            .expect("the proxy answers the ordinary client");
        assert_eq!(
            ordinary.text().await.expect("a body"),
            r#"{"from":"proxy"}"#,
            "the environment's proxy is not in effect, so this test proves nothing"
        );
        proxy.reset().await;
        // From here on the proxy expects exactly the send made through it
        // explicitly; none through the ambient variables.
        any_request()
            .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"from":"proxy"}"#))
            .expect(1)
            .mount(&proxy)
            .await;
        let engine_before = engine.received_requests().await.unwrap_or_default().len();

        // The ambient variables are ignored.
        let transport = HttpTransport::builder("acme")
            .env(env.clone())
            .build()
            .expect("the configuration is valid");
        let answer = tokio::time::timeout(GUARD, transport.send("{}"))
            .await
            .expect("the send ends instead of hanging")
            .expect("the engine answers");
        assert_eq!(answer.text(), r#"{"from":"engine"}"#);
        let through_proxy = proxy.received_requests().await.unwrap_or_default();
        assert!(
            through_proxy.is_empty(),
            "the ambient proxy received {} request(s)",
            through_proxy.len()
        );
        let at_engine = engine.received_requests().await.unwrap_or_default();
        assert_eq!(at_engine.len(), engine_before + 1);

        // A proxy named by the caller is used.
        let transport = HttpTransport::builder("acme")
            .env(env)
            .proxy(proxy.uri())
            .build()
            .expect("the configuration is valid");
        let answer = tokio::time::timeout(GUARD, transport.send("{}"))
            .await
            .expect("the send ends instead of hanging")
            .expect("the proxy answers");
        assert_eq!(answer.text(), r#"{"from":"proxy"}"#);
        let through_proxy = proxy.received_requests().await.unwrap_or_default();
        assert_eq!(through_proxy.len(), 1, "the explicit proxy was not used");
        assert_eq!(
            through_proxy[0].url.port(),
            Some(engine.address().port()),
            "the proxy was asked for something other than the engine"
        );
        let at_engine = engine.received_requests().await.unwrap_or_default();
        assert_eq!(
            at_engine.len(),
            engine_before + 1,
            "the request bypassed the explicit proxy"
        );
    });
}
