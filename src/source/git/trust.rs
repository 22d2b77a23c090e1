//! The CA bundle of a self-hosted git server over https.

use super::{Error, Result};

/// The certificates of a CA bundle, as trust anchors (and as intermediates, so that a bundle may
/// carry the chain of a server that does not send it).
pub(super) struct Trust {
    anchors: Vec<rustls_pki_types::TrustAnchor<'static>>,
    certificates: Vec<rustls_pki_types::CertificateDer<'static>>,
}

impl Trust {
    pub(super) fn from_pem(registry: &str, pem: &[u8]) -> Result<Self> {
        use rustls_pki_types::pem::PemObject;
        let invalid = |why: String| Error::InvalidContent {
            registry: registry.to_owned(),
            message: format!("the CA bundle {why}"),
        };
        let certificates: Vec<rustls_pki_types::CertificateDer<'static>> =
            rustls_pki_types::CertificateDer::pem_slice_iter(pem)
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| invalid(format!("is not valid PEM: {e}")))?;
        if certificates.is_empty() {
            return Err(invalid("holds no certificate".to_owned()));
        }
        let anchors = certificates
            .iter()
            .map(|c| webpki::anchor_from_trusted_cert(c).map(|a| a.to_owned()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| invalid(format!("holds a certificate that cannot be read: {e}")))?;
        Ok(Trust {
            anchors,
            certificates,
        })
    }

    /// Whether `der` (a server's certificate) chains to the bundle and names `host`.
    pub(super) fn accepts(&self, der: &[u8], host: &str) -> bool {
        let certificate = rustls_pki_types::CertificateDer::from(der);
        let Ok(end_entity) = webpki::EndEntityCert::try_from(&certificate) else {
            return false;
        };
        let Ok(name) = rustls_pki_types::ServerName::try_from(host) else {
            return false;
        };
        end_entity
            .verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &self.anchors,
                &self.certificates,
                rustls_pki_types::UnixTime::now(),
                webpki::KeyUsage::server_auth(),
                None,
                None,
            )
            .is_ok()
            && end_entity.verify_is_valid_for_subject_name(&name).is_ok()
    }
}
