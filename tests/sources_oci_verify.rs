//! Verifying OCI addons: cosign key-based signatures (made in the test by
//! `scripts/sources/cosign-sign.py` with Python's `cryptography`, in cosign's layouts: the legacy
//! `.sig` tag, and Sigstore bundles as referrers through the `sha256-<hex>` fallback tag, since
//! this registry has no referrers API) on the real registry, under the policies `enforce`, `warn`
//! and per-addon overrides.

use addonctl::model::ErrorKind;
use addonctl::source::oci::client::Login;
use addonctl::source::oci::verify::Mode;
use addonctl::source::oci::{OciReader, Policy};
use addonctl::source::{AddonRef, AsyncReader, Error};
use p256::ecdsa::VerifyingKey;
use p256::pkcs8::DecodePublicKey as _;

use crate::support::oci::{keygen, prefix, push_addons, reader, registries, sign, sign_bundle};

struct Setup {
    _keys: tempfile::TempDir,
    trusted: std::path::PathBuf,
    trusted_public: std::path::PathBuf,
    other: std::path::PathBuf,
    other_public: std::path::PathBuf,
}

fn setup() -> Setup {
    let keys = tempfile::tempdir().unwrap();
    let (trusted, trusted_public) = keygen(keys.path(), "trusted");
    let (other, other_public) = keygen(keys.path(), "other");
    Setup {
        _keys: keys,
        trusted,
        trusted_public,
        other,
        other_public,
    }
}

fn key(path: &std::path::Path) -> (String, VerifyingKey) {
    let pem = std::fs::read_to_string(path).unwrap();
    (
        path.file_name().unwrap().to_string_lossy().into_owned(),
        VerifyingKey::from_public_key_pem(&pem).unwrap(),
    )
}

fn policy(mode: Mode, keys: &[&std::path::Path], addons: &[(&str, Mode)]) -> Policy {
    Policy::new(
        mode,
        keys.iter().map(|k| key(k)).collect(),
        addons.iter().map(|(p, m)| ((*p).to_owned(), *m)).collect(),
    )
}

/// An addon `minimal` whose chart is unique to `tag` (its description), pushed under `prefix`;
/// returns the repository and the manifest digest.
async fn push_unique(prefix: &str, tag: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("minimal");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(
        target.join("metadata.yaml"),
        format!("name: minimal\nversion: 0.1.0\ndescription: chart {tag}\n"),
    )
    .unwrap();
    let digests = push_addons(dir.path(), prefix).await;
    (format!("{prefix}/minimal"), digests["minimal"].clone())
}

fn enforcing(prefix: &str, policy: Policy) -> OciReader {
    reader(
        &registries().anonymous,
        prefix,
        Login::Anonymous,
        Some(policy),
    )
}

fn minimal() -> AddonRef {
    AddonRef::latest("minimal")
}

#[tokio::test]
async fn a_valid_signature_verifies_and_costs_two_requests() {
    let keys = setup();
    let prefix = prefix("valid");
    let (repository, digest) = push_unique(&prefix, "valid").await;
    sign(&repository, &digest, &keys.trusted, &[]);
    // Key rotation: the old key and the new one are both trusted.
    let reader = enforcing(
        &prefix,
        policy(
            Mode::Enforce,
            &[&keys.other_public, &keys.trusted_public],
            &[],
        ),
    );
    let pinned = reader.pinned(&minimal()).await.unwrap();
    assert!(pinned.verification.verified, "{:?}", pinned.verification);
    assert_eq!(pinned.verification.method.as_deref(), Some("cosign-key"));
    assert_eq!(pinned.verification.key.as_deref(), Some("trusted.pub"));
    assert_eq!(pinned.verification.policy, Mode::Enforce);
    reader.read_file(&minimal(), "metadata.yaml").await.unwrap();
    let unverified =
        crate::support::oci::reader(&registries().anonymous, &prefix, Login::Anonymous, None);
    unverified.pinned(&minimal()).await.unwrap();
    assert_eq!(
        reader.http().request_count(),
        unverified.http().request_count() + 2,
        "the signature manifest and its payload"
    );
}

/// The cache files holding kept evidence, under `root`.
fn evidence_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                dirs.push(path);
            } else if name.starts_with("evidence-") && !name.ends_with(".meta.json") {
                found.push(path);
            }
        }
    }
    found
}

/// With a disk cache, the signature that verified a digest is kept and checked again on the
/// next read: no request for it, the same verdict; a key no longer trusted refuses it (and drops
/// it), and evidence copied to another digest proves nothing there.
#[tokio::test]
async fn a_warm_read_checks_the_kept_signature_again_without_the_registry() {
    let keys = setup();
    let prefix = prefix("kept");
    let (repository, digest) = push_unique(&prefix, "kept-1").await;
    sign(&repository, &digest, &keys.trusted, &[]);
    let cache = tempfile::tempdir().unwrap();
    let options = addonctl::source::cache::CacheOptions {
        root: Some(cache.path().to_path_buf()),
        ..addonctl::source::cache::CacheOptions::default()
    };
    let open = |keys: &[&std::path::Path]| {
        crate::support::oci::reader_with_cache(
            &registries().anonymous,
            &prefix,
            Login::Anonymous,
            Some(policy(Mode::Enforce, keys, &[])),
            &options,
        )
    };
    let cold = open(&[&keys.trusted_public]);
    assert!(cold.pinned(&minimal()).await.unwrap().verification.verified);
    let kept = evidence_files(cache.path());
    assert_eq!(kept.len(), 1, "{kept:?}");

    let warm = open(&[&keys.trusted_public]);
    let pinned = warm.pinned(&minimal()).await.unwrap();
    assert!(pinned.verification.verified, "{:?}", pinned.verification);
    assert_eq!(pinned.verification.method.as_deref(), Some("cosign-key"));
    assert_eq!(pinned.verification.key.as_deref(), Some("trusted.pub"));
    let unverified = crate::support::oci::reader_with_cache(
        &registries().anonymous,
        &prefix,
        Login::Anonymous,
        None,
        &options,
    );
    unverified.pinned(&minimal()).await.unwrap();
    assert_eq!(
        warm.http().request_count(),
        unverified.http().request_count(),
        "a warm read asks nothing more than an unverified one"
    );

    // Another key: the kept signature does not verify with it, and neither does the registry's.
    refused(
        &open(&[&keys.other_public]),
        &digest,
        "signed by no trusted key",
    )
    .await;
    assert!(evidence_files(cache.path()).is_empty(), "dropped");
    let again = open(&[&keys.trusted_public]);
    assert!(
        again
            .pinned(&minimal())
            .await
            .unwrap()
            .verification
            .verified
    );
    assert_eq!(
        again.http().request_count(),
        warm.http().request_count() + 2,
        "the signature manifest and its payload, read again"
    );

    // The tag moves to an unsigned chart; the kept evidence of the first digest, copied to the
    // second's place in the cache, names the first digest and is refused.
    let (_, moved) = push_unique(&prefix, "kept-2").await;
    let kept = evidence_files(cache.path());
    assert_eq!(kept.len(), 1, "{kept:?}");
    let hex = |d: &str| d.trim_start_matches("sha256:").to_owned();
    let copy = |from: &std::path::Path| {
        std::path::PathBuf::from(from.to_string_lossy().replace(&hex(&digest), &hex(&moved)))
    };
    for suffix in ["", ".meta.json"] {
        let from = std::path::PathBuf::from(format!("{}{suffix}", kept[0].display()));
        std::fs::copy(&from, copy(&from)).unwrap();
    }
    let err = open(&[&keys.trusted_public])
        .pinned(&minimal())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unverified { .. }), "{err}");
    assert!(err.to_string().contains(&moved), "{err}");
    assert_eq!(
        evidence_files(cache.path()).len(),
        1,
        "the copy was dropped"
    );
}

/// Asserts that `reader` refuses `minimal` with [`Error::Unverified`] naming `digest` and `why`.
async fn refused(reader: &OciReader, digest: &str, why: &str) {
    let err = reader.list_files(&minimal()).await.unwrap_err();
    assert!(matches!(err, Error::Unverified { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Denied);
    let text = err.to_string();
    assert!(text.contains(digest) && text.contains(why), "{text}");
    assert!(text.contains("enforce"), "{text}");
    // Nothing of the chart was read.
    let err = reader
        .read_file(&minimal(), "metadata.yaml")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unverified { .. }), "{err}");
}

#[tokio::test]
async fn enforce_refuses_a_wrong_key_another_digest_a_tampered_payload_and_no_signature() {
    let keys = setup();
    let trusting =
        |prefix: &str| enforcing(prefix, policy(Mode::Enforce, &[&keys.trusted_public], &[]));

    let wrong_key = prefix("wrong-key");
    let (repository, digest) = push_unique(&wrong_key, "wrong-key").await;
    sign(&repository, &digest, &keys.other, &[]);
    refused(&trusting(&wrong_key), &digest, "signed by no trusted key").await;

    let other_digest = prefix("other-digest");
    let (repository, digest) = push_unique(&other_digest, "other-digest").await;
    let elsewhere = format!("sha256:{}", "ab".repeat(32));
    sign(
        &repository,
        &digest,
        &keys.trusted,
        &["--names", &elsewhere],
    );
    refused(
        &trusting(&other_digest),
        &digest,
        &format!("names {elsewhere}"),
    )
    .await;

    let tampered = prefix("tampered");
    let (repository, digest) = push_unique(&tampered, "tampered").await;
    sign(&repository, &digest, &keys.trusted, &["--tamper"]);
    refused(&trusting(&tampered), &digest, "signed by no trusted key").await;

    let unsigned = prefix("unsigned");
    let (_, digest) = push_unique(&unsigned, "unsigned").await;
    refused(&trusting(&unsigned), &digest, "no cosign signature").await;

    // Trusting the other key, the first one verifies.
    let other_trusted = enforcing(
        &wrong_key,
        policy(Mode::Enforce, &[&keys.other_public], &[]),
    );
    assert!(
        other_trusted
            .pinned(&minimal())
            .await
            .unwrap()
            .verification
            .verified
    );
}

#[tokio::test]
async fn a_moved_tag_is_not_covered_by_the_old_signature() {
    let keys = setup();
    let prefix = prefix("moved");
    let (repository, signed) = push_unique(&prefix, "before").await;
    sign(&repository, &signed, &keys.trusted, &[]);
    let trusted = policy(Mode::Enforce, &[&keys.trusted_public], &[]);
    assert!(
        enforcing(&prefix, trusted)
            .pinned(&minimal())
            .await
            .unwrap()
            .verification
            .verified
    );
    // The same version pushed again with other content: the tag now names an unsigned manifest.
    let (_, moved) = push_unique(&prefix, "after").await;
    assert_ne!(moved, signed);
    let reader = enforcing(&prefix, policy(Mode::Enforce, &[&keys.trusted_public], &[]));
    refused(&reader, &moved, "no cosign signature").await;
    // The signed manifest is still installable by digest.
    let by_digest = reader
        .pinned(&AddonRef {
            name: "minimal".into(),
            version: Some(signed.clone()),
        })
        .await
        .unwrap();
    assert!(by_digest.verification.verified);
    assert_eq!(by_digest.manifest_digest, signed);
}

#[tokio::test]
async fn warn_serves_unverified_charts_saying_so_and_patterns_override_the_registry() {
    let keys = setup();
    let prefix = prefix("warn");
    let (_, digest) = push_unique(&prefix, "warn").await;
    let warn = enforcing(&prefix, policy(Mode::Warn, &[&keys.trusted_public], &[]));
    let pinned = warn.pinned(&minimal()).await.unwrap();
    assert_eq!(pinned.manifest_digest, digest);
    assert!(!pinned.verification.verified);
    assert_eq!(pinned.verification.policy, Mode::Warn);
    assert!(
        pinned.verification.failures[0].contains("no cosign signature"),
        "{:?}",
        pinned.verification
    );
    warn.read_file(&minimal(), "metadata.yaml").await.unwrap();
    // `enforce` for the registry, `off` for `mini*`: served, not checked.
    let off = enforcing(
        &prefix,
        policy(
            Mode::Enforce,
            &[&keys.trusted_public],
            &[("mini*", Mode::Off)],
        ),
    );
    let pinned = off.pinned(&minimal()).await.unwrap();
    assert_eq!(pinned.verification.policy, Mode::Off);
    // `warn` for the registry, `enforce` for `minimal`: refused.
    let strict = enforcing(
        &prefix,
        policy(
            Mode::Warn,
            &[&keys.trusted_public],
            &[("minimal", Mode::Enforce)],
        ),
    );
    refused(&strict, &digest, "no cosign signature").await;
}

#[tokio::test]
async fn the_policy_file_is_read_for_the_registry_and_a_broken_one_never_turns_checks_off() {
    let keys = setup();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("verification.yaml");
    std::fs::copy(&keys.trusted_public, dir.path().join("cosign.pub")).unwrap();
    let text = "registries:\n  oci-test:\n    policy: enforce\n    keys: [cosign.pub]\n";
    let parsed = Policy::parse("oci-test", &file, text).unwrap().unwrap();
    assert_eq!(parsed.mode_for("anything"), Mode::Enforce);
    let err = Policy::parse(
        "oci-test",
        &file,
        "registries:\n  oci-test:\n    policy: enforce\n    keys: [missing.pub]\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("missing.pub"), "{err}");
    let err = Policy::parse("oci-test", &file, "registries: [").unwrap_err();
    assert!(err.to_string().contains("not valid"), "{err}");
    let _ = keys.other_public;
}

#[tokio::test]
async fn bundles_found_through_the_fallback_tag_verify_as_dsse_and_as_message_signatures() {
    let keys = setup();
    let trusted = || {
        policy(
            Mode::Enforce,
            &[&keys.other_public, &keys.trusted_public],
            &[],
        )
    };

    let dsse = prefix("bundle-dsse");
    let (repository, digest) = push_unique(&dsse, "bundle-dsse").await;
    // An attestation of another predicate type by the same key is not a signature; then the
    // signature, added to the same fallback index.
    sign_bundle(
        &repository,
        &digest,
        &keys.trusted,
        &["--predicate", "https://slsa.dev/provenance/v1"],
    );
    let reader = enforcing(&dsse, trusted());
    refused(&reader, &digest, "an attestation of predicate type").await;
    sign_bundle(&repository, &digest, &keys.trusted, &[]);
    let reader = enforcing(&dsse, trusted());
    let pinned = reader.pinned(&minimal()).await.unwrap();
    assert!(pinned.verification.verified, "{:?}", pinned.verification);
    assert_eq!(pinned.verification.method.as_deref(), Some("cosign-bundle"));
    assert_eq!(pinned.verification.key.as_deref(), Some("trusted.pub"));
    reader.read_file(&minimal(), "metadata.yaml").await.unwrap();

    let message = prefix("bundle-message");
    let (repository, digest) = push_unique(&message, "bundle-message").await;
    sign_bundle(&repository, &digest, &keys.other, &["--message"]);
    let pinned = enforcing(&message, trusted())
        .pinned(&minimal())
        .await
        .unwrap();
    assert_eq!(pinned.verification.method.as_deref(), Some("cosign-bundle"));
    assert_eq!(pinned.verification.key.as_deref(), Some("other.pub"));
}

#[tokio::test]
async fn enforce_refuses_bundles_with_a_wrong_key_another_digest_or_tampered() {
    let keys = setup();
    let trusting =
        |prefix: &str| enforcing(prefix, policy(Mode::Enforce, &[&keys.trusted_public], &[]));
    let elsewhere = format!("sha256:{}", "cd".repeat(32));
    let cases: [(&str, &[&str], String); 5] = [
        ("b-wrong-key", &[], "signed by no trusted key".to_owned()),
        (
            "b-other",
            &["--names", &elsewhere],
            format!("names {elsewhere}"),
        ),
        (
            "b-tampered",
            &["--tamper"],
            "signed by no trusted key".to_owned(),
        ),
        (
            "b-msg-other",
            &["--message", "--names", &elsewhere],
            format!("names {elsewhere}"),
        ),
        (
            "b-msg-tampered",
            &["--message", "--tamper"],
            "signed by no trusted key".to_owned(),
        ),
    ];
    for (name, extra, why) in &cases {
        let prefix = prefix(name);
        let (repository, digest) = push_unique(&prefix, name).await;
        let key = if *name == "b-wrong-key" {
            &keys.other
        } else {
            &keys.trusted
        };
        sign_bundle(&repository, &digest, key, extra);
        refused(&trusting(&prefix), &digest, why).await;
    }
    // No signature of either form: both are reported.
    let unsigned = prefix("b-unsigned");
    let (_, digest) = push_unique(&unsigned, "b-unsigned").await;
    refused(&trusting(&unsigned), &digest, "no cosign bundle").await;
    refused(&trusting(&unsigned), &digest, "no cosign signature").await;
}
