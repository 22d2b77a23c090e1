//! Signatures made by the real cosign (v3.1.3; `tests/fixtures/oci/cosign/README.md`): the bytes it
//! wrote, pushed unchanged to the real registry, verified by addonctl in both of cosign's forms
//! (the legacy `.sig` tag, and the Sigstore bundle found through the referrers fallback tag);
//! another key, and a chart swapped under the signatures, are refused.

use std::path::{Path, PathBuf};

use addonctl::source::oci::client::{sha256_digest, Login};
use addonctl::source::oci::verify::Mode;
use addonctl::source::oci::{OciReader, Policy};
use addonctl::source::{AddonRef, AsyncReader, Error};
use p256::ecdsa::VerifyingKey;
use p256::pkcs8::DecodePublicKey as _;
use serde_json::Value;

use crate::support::oci::{keygen, prefix, put_blob, put_manifest, reader, registries};
use crate::support::root;

fn fixture() -> PathBuf {
    root().join("tests/fixtures/oci/cosign")
}

fn layout() -> Value {
    serde_json::from_slice(&std::fs::read(fixture().join("layout.json")).unwrap()).unwrap()
}

/// The signed chart's manifest digest.
fn signed_digest() -> String {
    layout()["digest"].as_str().unwrap().to_owned()
}

/// Pushes the fixture's blobs and manifests to `<prefix>/signed-demo`, byte for byte; the legacy
/// `.sig` tag only when `legacy`.
async fn push_fixture(prefix: &str, legacy: bool) -> String {
    let repository = format!("{prefix}/signed-demo");
    for entry in std::fs::read_dir(fixture().join("blobs")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        put_blob(&repository, &bytes).await;
    }
    for manifest in layout()["manifests"].as_array().unwrap() {
        let digest = manifest["digest"].as_str().unwrap();
        let tag = manifest["tag"].as_str();
        if !legacy && tag.is_some_and(|t| t.ends_with(".sig")) {
            continue;
        }
        let bytes =
            std::fs::read(fixture().join("manifests").join(digest.replace(':', "-"))).unwrap();
        assert_eq!(sha256_digest(&bytes), digest, "the fixture is unchanged");
        let media_type = manifest["mediaType"].as_str().unwrap();
        put_manifest(&repository, tag.unwrap_or(digest), media_type, &bytes).await;
    }
    repository
}

fn policy_with(key: &Path) -> Policy {
    let pem = std::fs::read_to_string(key).unwrap();
    let key = VerifyingKey::from_public_key_pem(&pem).unwrap();
    Policy::new(
        Mode::Enforce,
        vec![("cosign.pub".to_owned(), key)],
        Vec::new(),
    )
}

fn enforcing(prefix: &str, key: &Path) -> OciReader {
    reader(
        &registries().anonymous,
        prefix,
        Login::Anonymous,
        Some(policy_with(key)),
    )
}

fn demo() -> AddonRef {
    AddonRef::latest("signed-demo")
}

#[tokio::test]
async fn real_cosign_signatures_verify_in_both_forms_with_the_committed_key() {
    let key = fixture().join("cosign.pub");
    let both = prefix("cosign-both");
    push_fixture(&both, true).await;
    let reader = enforcing(&both, &key);
    let pinned = reader.pinned(&demo()).await.unwrap();
    assert_eq!(pinned.manifest_digest, signed_digest());
    assert!(pinned.verification.verified, "{:?}", pinned.verification);
    assert_eq!(pinned.verification.method.as_deref(), Some("cosign-key"));
    let text = reader.read_file(&demo(), "metadata.yaml").await.unwrap();
    assert!(String::from_utf8_lossy(&text).contains("signed-demo"));

    // Without the legacy tag, cosign v3's bundle verifies on its own.
    let bundle_only = prefix("cosign-bundle");
    push_fixture(&bundle_only, false).await;
    let pinned = enforcing(&bundle_only, &key).pinned(&demo()).await.unwrap();
    assert!(pinned.verification.verified, "{:?}", pinned.verification);
    assert_eq!(pinned.verification.method.as_deref(), Some("cosign-bundle"));
    assert_eq!(pinned.verification.key.as_deref(), Some("cosign.pub"));
}

#[tokio::test]
async fn real_cosign_signatures_are_refused_with_another_key_or_a_swapped_chart() {
    let keys = tempfile::tempdir().unwrap();
    let (_, other) = keygen(keys.path(), "other");
    let prefix = prefix("cosign-refused");
    let repository = push_fixture(&prefix, true).await;
    let err = enforcing(&prefix, &other)
        .list_files(&demo())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unverified { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&signed_digest()), "{text}");
    assert!(
        text.contains("signature layer") && text.contains("bundle"),
        "{text}"
    );
    assert!(text.contains("signed by no trusted key"), "{text}");

    // Another chart archive under the same tag, the signatures copied to its digest's tags: they
    // name the signed manifest, not this one.
    let key = fixture().join("cosign.pub");
    let (signed, _) = crate::support::oci::get_manifest(&repository, "0.1.0").await;
    let mut manifest: Value = serde_json::from_slice(&signed).unwrap();
    let other_chart = addonctl::source::archive::write_tgz(
        Some("signed-demo"),
        &[(
            "Chart.yaml".to_owned(),
            b"apiVersion: v2\nname: signed-demo\nversion: 0.1.0\n".to_vec(),
        )],
    )
    .unwrap();
    let chart_digest = put_blob(&repository, &other_chart).await;
    manifest["layers"][0]["digest"] = chart_digest.into();
    manifest["layers"][0]["size"] = other_chart.len().into();
    let swapped = serde_json::to_vec(&manifest).unwrap();
    let swapped_digest = sha256_digest(&swapped);
    let oci_manifest = "application/vnd.oci.image.manifest.v1+json";
    put_manifest(&repository, "0.1.0", oci_manifest, &swapped).await;
    let hex = signed_digest().replace(':', "-");
    let new_hex = swapped_digest.replace(':', "-");
    for (tag, media_type) in [
        (format!("{hex}.sig"), oci_manifest),
        (hex.clone(), "application/vnd.oci.image.index.v1+json"),
    ] {
        let (bytes, _) = crate::support::oci::get_manifest(&repository, &tag).await;
        put_manifest(
            &repository,
            &tag.replace(&hex, &new_hex),
            media_type,
            &bytes,
        )
        .await;
    }
    let err = enforcing(&prefix, &key)
        .list_files(&demo())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unverified { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&swapped_digest), "{text}");
    assert!(
        text.contains(&format!("the payload names {}", signed_digest()))
            && text.contains(&format!("the statement names {}", signed_digest())),
        "{text}"
    );
}
