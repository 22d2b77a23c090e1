//! Cosign's legacy signature form: the manifest at tag `sha256-<hex>.sig`, each layer a "simple
//! signing" payload naming the signed digest, its signature in the layer's
//! `dev.cosignproject.cosign/signature` annotation. Also the signature helpers the bundle form
//! shares.

use base64::Engine as _;
use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature, VerifyingKey};
use serde_json::Value;

use super::super::client::{Descriptor, OciClient};
use super::evidence::Evidence;
use super::{Policy, MAX_PAYLOAD_BYTES, MAX_SIGNATURES};
use crate::source::Error;

/// The media type of cosign's simple-signing payload layers.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding a layer's base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// What an ECDSA signature is checked over.
pub(super) enum Signed<'a> {
    /// The message itself (hashed with SHA-256 here).
    Message(&'a [u8]),
    /// The SHA-256 digest of the message (a bundle's `messageSignature`).
    Digest(&'a [u8]),
}

/// A base64 ECDSA P-256 signature (ASN.1 DER, or the raw 64 bytes).
pub(super) fn decode_signature(encoded: &str) -> std::result::Result<Signature, String> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| "the signature is not base64".to_owned())?;
    Signature::from_der(&raw)
        .or_else(|_| Signature::from_slice(&raw))
        .map_err(|_| "not an ECDSA P-256 signature".to_owned())
}

/// The name of the first trusted key `signature` verifies with.
pub(super) fn signed_by(
    keys: &[(String, VerifyingKey)],
    signed: &Signed<'_>,
    signature: &Signature,
) -> Option<String> {
    keys.iter()
        .find(|(_, key)| match signed {
            Signed::Message(message) => key.verify(message, signature).is_ok(),
            Signed::Digest(digest) => key.verify_prehash(digest, signature).is_ok(),
        })
        .map(|(name, _)| name.clone())
}

/// The first 19 characters of a digest (`sha256:` and 12 hex digits), for messages.
pub(super) fn short(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

impl Policy {
    /// The legacy signature tag: `Ok((key, evidence))` when a trusted signature names `digest`,
    /// else every check that failed.
    pub(super) async fn cosign_tag(
        &self,
        client: &OciClient,
        repository: &str,
        digest: &str,
    ) -> std::result::Result<(String, Evidence), Vec<String>> {
        let tag = format!("{}.sig", digest.replace(':', "-"));
        let fetched = match client.manifest(repository, &tag).await {
            Ok(fetched) => fetched,
            Err(Error::NotFound { .. }) => {
                return Err(vec![format!(
                    "no cosign signature (tag `{tag}` does not exist)"
                )])
            }
            Err(e) => return Err(vec![format!("cannot read the signature tag `{tag}`: {e}")]),
        };
        let mut failures = Vec::new();
        let layers: Vec<&Descriptor> = fetched
            .manifest
            .layers
            .iter()
            .filter(|l| l.media_type == SIMPLE_SIGNING)
            .take(MAX_SIGNATURES)
            .collect();
        if layers.is_empty() {
            failures.push(format!(
                "the signature tag `{tag}` holds no cosign signature layer"
            ));
        }
        for layer in layers {
            match self.check_layer(client, repository, digest, layer).await {
                Ok(key) => return Ok(key),
                Err(failure) => failures.push(failure),
            }
        }
        Err(failures)
    }

    async fn check_layer(
        &self,
        client: &OciClient,
        repository: &str,
        digest: &str,
        layer: &Descriptor,
    ) -> std::result::Result<(String, Evidence), String> {
        let short = short(&layer.digest);
        let Some(encoded) = layer.annotations.get(SIGNATURE_ANNOTATION) else {
            return Err(format!(
                "signature layer {short}… has no `{SIGNATURE_ANNOTATION}`"
            ));
        };
        // The signature is decoded before the payload is fetched: junk costs no request.
        decode_signature(encoded).map_err(|why| format!("signature layer {short}…: {why}"))?;
        let payload = client
            .blob(repository, layer, MAX_PAYLOAD_BYTES)
            .await
            .map_err(|e| format!("signature layer {short}…: cannot read the payload: {e}"))?;
        let key = self
            .check_payload(&payload, encoded, digest)
            .map_err(|why| format!("signature layer {short}…: {why}"))?;
        Ok((key, Evidence::cosign_key(&payload, encoded)))
    }

    /// A simple-signing payload and its base64 signature: `Ok(key)` when a trusted key signed
    /// it and it names `digest`.
    pub(super) fn check_payload(
        &self,
        payload: &[u8],
        encoded: &str,
        digest: &str,
    ) -> std::result::Result<String, String> {
        let signature = decode_signature(encoded)?;
        let Some(key) = signed_by(&self.keys, &Signed::Message(payload), &signature) else {
            return Err("signed by no trusted key".to_owned());
        };
        let value: Value =
            serde_json::from_slice(payload).map_err(|_| "the payload is not JSON".to_owned())?;
        let named = value
            .pointer("/critical/image/docker-manifest-digest")
            .and_then(Value::as_str);
        if named != Some(digest) {
            return Err(format!(
                "the payload names {}, not {digest}",
                named.unwrap_or("no digest")
            ));
        }
        Ok(key)
    }
}
