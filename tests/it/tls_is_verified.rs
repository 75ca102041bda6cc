//! TLS is verified (the README's security properties): an engine whose certificate no trusted
//! authority signed, or that names another host, or that does not speak TLS
//! at all, is `engine-unreachable` with a reason naming TLS, and the token is
//! never sent to it; trusting the private authority explicitly makes the same
//! engine answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use meterwire::{Answer, Cause, Env, HttpTransport, Refusal};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_rustls::TlsAcceptor;
use wiremock::ResponseTemplate;

use crate::support::engines::{any_request, engine_with};
use crate::support::raw_http::read_request;
use crate::support::{GUARD, TOKEN};

const BODY: &str = r#"{"from":"tls-engine","score":0.5}"#;
/// The server stops accepting after this many connections.
const MAX_CONNECTIONS: usize = 8;

/// A private certificate authority, made fresh for each test.
struct Authority {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    fn new() -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names to parse");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "meterwire test authority");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("a key pair");
        let cert = params.self_signed(&key).expect("a self-signed authority");
        Authority {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server configuration presenting a certificate for `names`, signed
    /// by this authority.
    fn server_config(&self, names: &[&str]) -> Arc<ServerConfig> {
        self.server_config_speaking(names, rustls::DEFAULT_VERSIONS)
    }

    /// The same, speaking only `versions` of TLS.
    fn server_config_speaking(
        &self,
        names: &[&str],
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> Arc<ServerConfig> {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("valid names");
        params
            .distinguished_name
            .push(DnType::CommonName, "meterwire test engine");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("a key pair");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a certificate signed by the authority");
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        // The transport speaks rustls on ring; the server names it too, so
        // the test does not depend on a process-wide default.
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .expect("the provider supports the versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .expect("the key matches the certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// A TLS engine on loopback answering every request `200` with [`BODY`].
struct TlsEngine {
    port: u16,
    /// Requests read in full, after a completed handshake: the only way a
    /// bearer header reaches this server.
    requests: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for TlsEngine {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsEngine {
    async fn start(config: Arc<ServerConfig>) -> TlsEngine {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("local address").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let acceptor = TlsAcceptor::from(config);
        let served = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            for _ in 0..MAX_CONNECTIONS {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let served = Arc::clone(&served);
                tokio::spawn(async move {
                    // A client that rejects the certificate ends the
                    // handshake here; that is the case under test.
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    if read_request(&mut tls).await.is_none() {
                        return;
                    }
                    served.fetch_add(1, Ordering::SeqCst);
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
                        BODY.len()
                    );
                    let _ = tls.write_all(response.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        TlsEngine {
            port,
            requests,
            task,
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn env(address: String) -> Env {
    Env::from_pairs([
        ("CHANT_BEHAVIOUR_ENGINE", address),
        ("CHANT_BEHAVIOUR_TOKEN", TOKEN.to_owned()),
    ])
}

async fn send(transport: &HttpTransport) -> Result<Answer, Refusal> {
    timeout(GUARD, transport.send(r#"{"question":"next word?"}"#))
        .await
        .expect("the send ends instead of hanging")
}

fn assert_token_absent(refusal: &Refusal) {
    for shown in [
        refusal.to_string(),
        format!("{refusal:?}"),
        refusal.report().to_json(),
    ] {
        assert!(!shown.contains(TOKEN), "the token leaked: {shown}");
    }
}

#[tokio::test]
async fn an_engine_whose_authority_is_not_trusted_is_refused_as_a_tls_failure() {
    let authority = Authority::new();
    let engine = TlsEngine::start(authority.server_config(&["localhost", "127.0.0.1"])).await;
    let transport = HttpTransport::builder("acme")
        .env(env(format!("https://localhost:{}/v1", engine.port)))
        .build()
        .expect("the configuration is valid");

    let refusal = send(&transport)
        .await
        .expect_err("an untrusted certificate is refused");

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(engine.requests(), 0, "a request crossed an unverified TLS");
    assert_token_absent(&refusal);
    assert_eq!(refusal.variable(), Some("CHANT_BEHAVIOUR_ENGINE"));
    assert!(refusal.reason().contains("TLS"), "{}", refusal.reason());
    assert!(
        refusal.reason().contains("certificate"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn an_engine_signed_by_an_added_authority_answers() {
    let authority = Authority::new();
    let engine = TlsEngine::start(authority.server_config(&["localhost", "127.0.0.1"])).await;
    let transport = HttpTransport::builder("acme")
        .env(env(format!("https://localhost:{}/v1", engine.port)))
        .add_ca_certificate_pem(authority.pem.as_bytes())
        .build()
        .expect("the configuration is valid");

    let answer = send(&transport).await.expect("a trusted engine answers");

    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text(), BODY);
    assert_eq!(engine.requests(), 1);
}

#[tokio::test]
async fn an_engine_speaking_only_tls_1_2_or_only_tls_1_3_answers() {
    let authority = Authority::new();
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let config = authority.server_config_speaking(&["localhost"], &[version]);
        let engine = TlsEngine::start(config).await;
        let transport = HttpTransport::builder("acme")
            .env(env(format!("https://localhost:{}/v1", engine.port)))
            .add_ca_certificate_pem(authority.pem.as_bytes())
            .build()
            .expect("the configuration is valid");

        let answer = send(&transport).await.expect("a trusted engine answers");

        assert_eq!(answer.text(), BODY, "{:?}", version.version);
        assert_eq!(engine.requests(), 1, "{:?}", version.version);
    }
}

#[tokio::test]
async fn an_engine_addressed_by_ip_is_verified_against_the_ip_in_its_certificate() {
    let authority = Authority::new();
    let engine = TlsEngine::start(authority.server_config(&["localhost", "127.0.0.1"])).await;
    let transport = HttpTransport::builder("acme")
        .env(env(format!("https://127.0.0.1:{}/v1", engine.port)))
        .add_ca_certificate_pem(authority.pem.as_bytes())
        .build()
        .expect("the configuration is valid");

    let answer = send(&transport).await.expect("a trusted engine answers");

    assert_eq!(answer.text(), BODY);
}

#[tokio::test]
async fn a_trusted_certificate_for_another_host_is_refused() {
    let authority = Authority::new();
    let engine = TlsEngine::start(authority.server_config(&["engine.invalid"])).await;
    let transport = HttpTransport::builder("acme")
        .env(env(format!("https://localhost:{}/v1", engine.port)))
        .add_ca_certificate_pem(authority.pem.as_bytes())
        .build()
        .expect("the configuration is valid");

    let refusal = send(&transport)
        .await
        .expect_err("a certificate for another name is refused");

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_eq!(engine.requests(), 0, "a request crossed an unverified TLS");
    assert_token_absent(&refusal);
    assert!(refusal.reason().contains("TLS"), "{}", refusal.reason());
    assert!(
        refusal.reason().contains("certificate"),
        "{}",
        refusal.reason()
    );
}

#[tokio::test]
async fn https_to_a_plain_http_server_is_refused_as_a_tls_failure() {
    let plain = engine_with([any_request()
        .respond_with(ResponseTemplate::new(200).set_body_string(BODY))
        .expect(0)])
    .await;
    let port = plain.address().port();
    let transport = HttpTransport::builder("acme")
        .env(env(format!("https://127.0.0.1:{port}/v1")))
        .build()
        .expect("the configuration is valid");

    let refusal = send(&transport)
        .await
        .expect_err("a server that does not speak TLS is refused");

    assert_eq!(refusal.cause(), Cause::EngineUnreachable);
    assert_token_absent(&refusal);
    assert!(refusal.reason().contains("TLS"), "{}", refusal.reason());
}
