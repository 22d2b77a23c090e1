//! Sigstore bundles attached as OCI 1.1 referrers, the form cosign v3 (and v2 with
//! `--new-bundle-format`) writes: a manifest whose `subject` is the signed manifest, whose
//! `artifactType` and only layer are `application/vnd.dev.sigstore.bundle.v0.3+json`.
//!
//! Found with the referrers API (`GET /v2/<name>/referrers/<digest>?artifactType=…`, an image
//! index), or, when the registry has none (404), through the tag-schema fallback: the index at
//! tag `sha256-<hex>`. Only the entries whose `artifactType` is a bundle are read.
//!
//! A bundle counts when its signature verifies with a trusted key and it names the digest being
//! installed:
//! - a DSSE envelope (what `cosign sign` writes): the signature is over the envelope's
//!   pre-authentication encoding, the payload is an in-toto statement of predicate type
//!   `https://sigstore.dev/cosign/sign/v1` whose `subject` has a `sha256` digest equal to the
//!   manifest's (another predicate type is an attestation, not a signature);
//! - a `messageSignature`: the signature is over the artifact, and its `messageDigest` (SHA2_256)
//!   must be the manifest's digest.
//!
//! Key-based only: the verification material's public key hint is reported, not trusted;
//! transparency-log entries and certificates (keyless) are not checked.

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use super::super::client::{pull_scope, OciClient, MAX_MANIFEST_BYTES};
use super::cosign::{decode_signature, short, signed_by, Signed};
use super::evidence::Evidence;
use super::{Policy, MAX_SIGNATURES};
use crate::source::http::Call;
use crate::source::Error;

/// The media type (and referrer artifact type) of a Sigstore bundle v0.3.
pub const BUNDLE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The older bundle media types, read the same way.
const BUNDLE_OLDER: [&str; 2] = [
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
];
/// The in-toto payload type of a DSSE envelope.
pub const IN_TOTO: &str = "application/vnd.in-toto+json";
/// The predicate type of `cosign sign`'s statement.
pub const COSIGN_SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// The largest bundle read.
const MAX_BUNDLE_BYTES: u64 = 1024 * 1024;

fn is_bundle(media_type: &str) -> bool {
    media_type == BUNDLE_V03 || BUNDLE_OLDER.contains(&media_type)
}

/// An image index (a referrers answer, or the fallback tag).
#[derive(Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Vec<IndexEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexEntry {
    digest: String,
    #[serde(default)]
    artifact_type: Option<String>,
}

/// A Sigstore bundle (protobuf-specs `Bundle`, in its JSON form).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    #[serde(default)]
    verification_material: Option<Value>,
    #[serde(default)]
    message_signature: Option<MessageSignature>,
    #[serde(default)]
    dsse_envelope: Option<Envelope>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature {
    message_digest: Option<HashOutput>,
    signature: String,
}

#[derive(Deserialize)]
struct HashOutput {
    algorithm: String,
    digest: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    #[serde(default)]
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Deserialize)]
struct EnvelopeSignature {
    sig: String,
}

/// DSSE's pre-authentication encoding: what an envelope's signatures are over.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

impl Policy {
    /// The bundles referring to `digest`: `Ok((key, evidence))` when a trusted one names it,
    /// else every check that failed.
    pub(super) async fn cosign_bundle(
        &self,
        client: &OciClient,
        repository: &str,
        digest: &str,
    ) -> std::result::Result<(String, Evidence), Vec<String>> {
        let index = referrers(client, repository, digest)
            .await
            .map_err(|e| vec![e])?;
        let entries: Vec<&IndexEntry> = index
            .manifests
            .iter()
            .filter(|m| m.artifact_type.as_deref().is_some_and(is_bundle))
            .take(MAX_SIGNATURES)
            .collect();
        if entries.is_empty() {
            return Err(vec![
                "no cosign bundle (no referrer of type `application/vnd.dev.sigstore.bundle…`)"
                    .to_owned(),
            ]);
        }
        let mut failures = Vec::new();
        for entry in entries {
            match self.check_referrer(client, repository, digest, entry).await {
                Ok(key) => return Ok(key),
                Err(failure) => failures.push(failure),
            }
        }
        Err(failures)
    }

    async fn check_referrer(
        &self,
        client: &OciClient,
        repository: &str,
        digest: &str,
        entry: &IndexEntry,
    ) -> std::result::Result<(String, Evidence), String> {
        let at = short(&entry.digest);
        let fetched = client
            .manifest(repository, &entry.digest)
            .await
            .map_err(|e| format!("bundle {at}…: cannot read its manifest: {e}"))?;
        let Some(layer) = fetched
            .manifest
            .layers
            .iter()
            .find(|l| is_bundle(&l.media_type))
        else {
            return Err(format!("bundle {at}…: the manifest holds no bundle layer"));
        };
        let bytes = client
            .blob(repository, layer, MAX_BUNDLE_BYTES)
            .await
            .map_err(|e| format!("bundle {at}…: cannot read it: {e}"))?;
        let key = self
            .check_bundle(&bytes, digest)
            .map_err(|why| format!("bundle {at}…: {why}"))?;
        Ok((key, Evidence::cosign_bundle(&bytes)))
    }

    /// Checks one bundle's bytes: `Ok(key)` when a trusted key signed it and it names `digest`.
    pub fn check_bundle(&self, bytes: &[u8], digest: &str) -> std::result::Result<String, String> {
        let bundle: Bundle =
            serde_json::from_slice(bytes).map_err(|e| format!("not a Sigstore bundle: {e}"))?;
        if !is_bundle(&bundle.media_type) {
            return Err(format!("unknown bundle media type `{}`", bundle.media_type));
        }
        let hint = bundle
            .verification_material
            .as_ref()
            .and_then(|m| m.pointer("/publicKey/hint"))
            .and_then(Value::as_str)
            .map(|h| format!(" (its key hint is `{h}`)"))
            .unwrap_or_default();
        let hex = digest
            .strip_prefix("sha256:")
            .ok_or_else(|| format!("`{digest}` is not a sha256 digest"))?;
        match (&bundle.dsse_envelope, &bundle.message_signature) {
            (Some(envelope), _) => self.check_envelope(envelope, hex, &hint),
            (None, Some(message)) => self.check_message(message, hex, &hint),
            (None, None) => Err("neither a DSSE envelope nor a message signature".to_owned()),
        }
    }

    fn check_envelope(
        &self,
        envelope: &Envelope,
        hex: &str,
        hint: &str,
    ) -> std::result::Result<String, String> {
        if envelope.payload_type != IN_TOTO {
            return Err(format!(
                "the DSSE payload type is `{}`, not `{IN_TOTO}`",
                envelope.payload_type
            ));
        }
        let payload = base64::engine::general_purpose::STANDARD
            .decode(envelope.payload.trim())
            .map_err(|_| "the DSSE payload is not base64".to_owned())?;
        let signed = pae(&envelope.payload_type, &payload);
        let key = envelope
            .signatures
            .iter()
            .take(MAX_SIGNATURES)
            .filter_map(|s| decode_signature(&s.sig).ok())
            .find_map(|s| signed_by(&self.keys, &Signed::Message(&signed), &s))
            .ok_or_else(|| format!("signed by no trusted key{hint}"))?;
        let statement: Value = serde_json::from_slice(&payload)
            .map_err(|_| "the in-toto statement is not JSON".to_owned())?;
        let predicate = statement
            .get("predicateType")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if predicate != COSIGN_SIGN_PREDICATE {
            return Err(format!(
                "an attestation of predicate type `{predicate}`, not a signature \
                 (`{COSIGN_SIGN_PREDICATE}`)"
            ));
        }
        let subjects: Vec<&str> = statement
            .get("subject")
            .and_then(Value::as_array)
            .map(|s| {
                s.iter()
                    .filter_map(|s| s.pointer("/digest/sha256").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if !subjects.contains(&hex) {
            let named = subjects
                .iter()
                .map(|s| format!("sha256:{s}"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(format!(
                "the statement names {}, not sha256:{hex}",
                if named.is_empty() {
                    "no digest"
                } else {
                    &named
                }
            ));
        }
        Ok(key)
    }

    fn check_message(
        &self,
        message: &MessageSignature,
        hex: &str,
        hint: &str,
    ) -> std::result::Result<String, String> {
        let Some(hashed) = &message.message_digest else {
            return Err("the message signature has no digest".to_owned());
        };
        if hashed.algorithm != "SHA2_256" {
            return Err(format!(
                "the message digest is `{}`, not SHA2_256",
                hashed.algorithm
            ));
        }
        let named = base64::engine::general_purpose::STANDARD
            .decode(hashed.digest.trim())
            .map_err(|_| "the message digest is not base64".to_owned())?;
        let named_hex = crate::source::cache::hex(&named);
        let signature = decode_signature(&message.signature)?;
        let key = signed_by(&self.keys, &Signed::Digest(&named), &signature)
            .ok_or_else(|| format!("signed by no trusted key{hint}"))?;
        if named_hex != hex {
            return Err(format!(
                "the message signature names sha256:{named_hex}, not sha256:{hex}"
            ));
        }
        Ok(key)
    }
}

/// The referrers of `digest`: the referrers API, else (404) the fallback tag's index.
async fn referrers(
    client: &OciClient,
    repository: &str,
    digest: &str,
) -> std::result::Result<Index, String> {
    // Percent-encoded: a `+` left as is reads as a space in a query.
    let filter = BUNDLE_V03.replace('/', "%2F").replace('+', "%2B");
    let path = format!("v2/{repository}/referrers/{digest}?artifactType={filter}");
    let url = client.base_url(&path).map_err(|e| e.to_string())?;
    let headers = [("accept", super::super::client::OCI_INDEX)];
    let response = client
        .send(
            &pull_scope(repository),
            Call {
                headers: &headers,
                limit: MAX_MANIFEST_BYTES,
                answers: &[404],
                ..Call::get(url.as_str())
            },
        )
        .await
        .map_err(|e| format!("cannot list the referrers of {digest}: {e}"))?;
    if response.status != 404 {
        return serde_json::from_slice(&response.body)
            .map_err(|e| format!("the referrers of {digest} are not an image index: {e}"));
    }
    let tag = digest.replace(':', "-");
    match client.manifest(repository, &tag).await {
        Ok(fetched) => serde_json::from_slice(&fetched.bytes)
            .map_err(|e| format!("the referrers tag `{tag}` is not an image index: {e}")),
        Err(Error::NotFound { .. }) => Ok(Index {
            manifests: Vec::new(),
        }),
        Err(e) => Err(format!("cannot read the referrers tag `{tag}`: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use p256::pkcs8::DecodePublicKey as _;

    use super::*;
    use crate::model::provenance::Mode;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/oci/cosign");
    /// The chart the real cosign signed, and its bundle's blob.
    const SIGNED: &str = "sha256:fbf5ea235be541c2dd1267d8cb341aa3a554dbb6620652c841891930f91d3ebf";
    const BUNDLE_BLOB: &str =
        "blobs/sha256-1e36b3fb7bde647500ad4e319ea7828f3a8b8a7c0077b4c91b60edf0d2075189";

    fn fixture_policy() -> Policy {
        let pem = fs_err::read_to_string(format!("{FIXTURE}/cosign.pub")).unwrap();
        let key = p256::ecdsa::VerifyingKey::from_public_key_pem(&pem).unwrap();
        Policy::new(Mode::Enforce, vec![("cosign.pub".into(), key)], Vec::new())
    }

    #[test]
    fn the_pre_authentication_encoding_is_dsse_s() {
        // The example of the DSSE specification.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }

    #[test]
    fn the_real_cosign_bundle_verifies_for_its_digest_only() {
        let bytes = fs_err::read(format!("{FIXTURE}/{BUNDLE_BLOB}")).unwrap();
        let policy = fixture_policy();
        assert_eq!(policy.check_bundle(&bytes, SIGNED).unwrap(), "cosign.pub");
        let other = format!("sha256:{}", "0".repeat(64));
        let err = policy.check_bundle(&bytes, &other).unwrap_err();
        assert!(err.contains(&format!("names {SIGNED}")), "{err}");
        // Another payload type, a changed payload, no signature form, another media type.
        let mut value: Value = serde_json::from_slice(&bytes).unwrap();
        value["dsseEnvelope"]["payloadType"] = "text/plain".into();
        let err = policy
            .check_bundle(&serde_json::to_vec(&value).unwrap(), SIGNED)
            .unwrap_err();
        assert!(err.contains("payload type"), "{err}");
        let mut value: Value = serde_json::from_slice(&bytes).unwrap();
        let payload = value["dsseEnvelope"]["payload"]
            .as_str()
            .unwrap()
            .to_owned();
        value["dsseEnvelope"]["payload"] = payload.replacen('e', "f", 1).into();
        let err = policy
            .check_bundle(&serde_json::to_vec(&value).unwrap(), SIGNED)
            .unwrap_err();
        assert!(
            err.contains("signed by no trusted key (its key hint is"),
            "{err}"
        );
        let mut value: Value = serde_json::from_slice(&bytes).unwrap();
        value.as_object_mut().unwrap().remove("dsseEnvelope");
        let err = policy
            .check_bundle(&serde_json::to_vec(&value).unwrap(), SIGNED)
            .unwrap_err();
        assert!(err.contains("neither"), "{err}");
        value["mediaType"] = "application/json".into();
        let err = policy
            .check_bundle(&serde_json::to_vec(&value).unwrap(), SIGNED)
            .unwrap_err();
        assert!(err.contains("unknown bundle media type"), "{err}");
        assert!(policy.check_bundle(b"{", SIGNED).is_err());
    }

    #[test]
    fn a_message_signature_needs_a_sha256_digest() {
        let policy = fixture_policy();
        let bundle = serde_json::json!({
            "mediaType": BUNDLE_V03,
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_384", "digest": "AAAA"},
                "signature": "AAAA",
            },
        });
        let err = policy
            .check_bundle(&serde_json::to_vec(&bundle).unwrap(), SIGNED)
            .unwrap_err();
        assert!(err.contains("not SHA2_256"), "{err}");
    }
}
