//! The TLS every transport speaks: rustls with the *ring* provider, the
//! platform's trusted roots plus any CA the builder was given, TLS 1.2 and
//! 1.3, and ALPN offering HTTP/2 then HTTP/1.1.
//!
//! reqwest is built without a provider of its own (`rustls-no-provider`):
//! its default, aws-lc-rs, compiles a C library that was the longest step
//! of a cold build, where ring's build is a fraction of it. The
//! configuration is handed to reqwest whole, so the choice stays with this
//! client: nothing is installed process-wide, and a program that installs
//! a provider of its own (`CryptoProvider::install_default`) still can.

use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The certificates of one PEM text, or why it holds none: the words
/// `BuildError::CaCertificate` carries.
pub(crate) fn pem_certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, &'static str> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "it does not parse")?;
    if certificates.is_empty() {
        return Err("it holds no certificate");
    }
    Ok(certificates)
}

/// The client's TLS configuration, verifying the engine's certificate
/// against the platform's roots and `extra_roots` (the one verifier reqwest
/// itself would have chosen, given the same provider).
pub(crate) fn client_config(
    extra_roots: Vec<CertificateDer<'static>>,
) -> Result<ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra_roots, provider.clone())?;
    // `dangerous()` is only rustls's door to a verifier of one's choosing;
    // this one verifies the chain and the name as the default does.
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The versions are proven on the wire, against engines speaking only
    // one (`tests/it/tls_is_verified.rs`).
    #[test]
    fn the_client_offers_http_2_then_http_1_1() {
        let config = client_config(Vec::new()).expect("a configuration");
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn a_pem_text_without_a_certificate_says_so() {
        assert_eq!(
            pem_certificates(b"").unwrap_err(),
            "it holds no certificate"
        );
        assert_eq!(
            pem_certificates(b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n")
                .unwrap_err(),
            "it does not parse"
        );
    }
}
