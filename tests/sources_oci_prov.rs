//! Helm provenance on the real registry: a gpg key made in the test (temporary `GNUPGHOME`, the
//! legacy `pubring.gpg`/`secring.gpg` Helm reads), charts signed by the real `helm package --sign`
//! and pushed by `helm push` (which uploads the `.prov` as a layer); `helm pull --verify` as the
//! cross-check. Valid, another keyring, a tampered chart and a missing `.prov` under `enforce`.

use std::path::{Path, PathBuf};
use std::process::Command;

use addonctl::source::oci::client::Login;
use addonctl::source::oci::verify::{Keyring, Mode};
use addonctl::source::oci::{OciReader, Policy};
use addonctl::source::{AddonRef, AsyncReader, Error};

use crate::support::helm_repo::Helm;
use crate::support::oci::{helm_push, prefix, reader, registries};

/// A gpg key pair in its own `GNUPGHOME` under `dir`: (public keyring, secret keyring).
fn gpg_key(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let home = dir.join(format!("gnupg-{name}"));
    std::fs::create_dir_all(&home).unwrap();
    let gpg = |args: &[&str]| {
        let output = Command::new("gpg")
            .env("GNUPGHOME", &home)
            .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
            .args(args)
            .output()
            .expect("gpg");
        assert!(
            output.status.success(),
            "gpg {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    // RSA: Helm's OpenPGP library signs with RSA keys, not with gpg's default EdDSA.
    let user = format!("{name} <{name}@addons.test>");
    gpg(&["--quick-gen-key", &user, "rsa2048", "sign", "never"]);
    let public = dir.join(format!("{name}-pubring.gpg"));
    let secret = dir.join(format!("{name}-secring.gpg"));
    std::fs::write(&public, gpg(&["--export"])).unwrap();
    std::fs::write(&secret, gpg(&["--export-secret-keys"])).unwrap();
    let _ = std::fs::remove_dir_all(&home);
    (public, secret)
}

/// A chart `provchart` 0.1.0 whose description is `label`, packaged by `helm package` (signed
/// with `secret` when given) into `out`; returns the archive's path.
fn package(out: &Path, label: &str, secret: Option<(&Path, &str)>) -> PathBuf {
    let chart = out.join(format!("src-{label}/provchart"));
    std::fs::create_dir_all(&chart).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        format!("apiVersion: v2\nname: provchart\nversion: 0.1.0\ndescription: {label}\n"),
    )
    .unwrap();
    std::fs::write(
        chart.join("metadata.yaml"),
        format!("name: provchart\nversion: 0.1.0\ndescription: {label}\n"),
    )
    .unwrap();
    let dest = out.join(label);
    let home = tempfile::tempdir().unwrap();
    let mut args = vec![
        "package".to_owned(),
        chart.display().to_string(),
        "-d".to_owned(),
        dest.display().to_string(),
    ];
    if let Some((keyring, user)) = secret {
        args.extend(["--sign", "--key", user, "--keyring"].map(str::to_owned));
        args.push(keyring.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = Helm::V3.run(home.path(), &args);
    assert!(
        output.status.success(),
        "helm package: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    dest.join("provchart-0.1.0.tgz")
}

/// `helm pull --verify --keyring` of `<prefix>/provchart`: whether Helm verifies it.
fn helm_verifies(prefix: &str, keyring: &Path) -> bool {
    let home = tempfile::tempdir().unwrap();
    let dest = home.path().join("pulled");
    std::fs::create_dir_all(&dest).unwrap();
    let target = format!("oci://{}/{prefix}/provchart", registries().anonymous);
    let output = Helm::V3.run(
        home.path(),
        &[
            "pull",
            &target,
            "--version",
            "0.1.0",
            "--plain-http",
            "--verify",
            "--keyring",
            keyring.to_str().unwrap(),
            "-d",
            dest.to_str().unwrap(),
        ],
    );
    output.status.success()
}

fn enforcing(prefix: &str, keyring: &Path) -> OciReader {
    let bytes = std::fs::read(keyring).unwrap();
    let keyring = Keyring::parse("pubring.gpg", &bytes).unwrap();
    let policy = Policy::new(Mode::Enforce, Vec::new(), Vec::new()).with_keyring(None, keyring);
    reader(
        &registries().anonymous,
        prefix,
        Login::Anonymous,
        Some(policy),
    )
}

fn provchart() -> AddonRef {
    AddonRef::latest("provchart")
}

async fn refused(reader: &OciReader, digest: &str, why: &str) {
    let err = reader.list_files(&provchart()).await.unwrap_err();
    assert!(matches!(err, Error::Unverified { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(digest) && text.contains(why), "{text}");
}

#[tokio::test]
async fn helm_provenance_verifies_with_the_keyring_and_is_refused_otherwise() {
    let keys = tempfile::tempdir().unwrap();
    let (public, secret) = gpg_key(keys.path(), "signer");
    let (other_public, _) = gpg_key(keys.path(), "other");
    let out = tempfile::tempdir().unwrap();

    // Signed: Helm and addonctl both verify it with the signer's keyring.
    let signed = prefix("prov-signed");
    let tgz = package(out.path(), "signed", Some((&secret, "signer")));
    assert!(tgz.with_extension("tgz.prov").exists());
    let digest = helm_push(&tgz, &signed);
    assert!(helm_verifies(&signed, &public), "helm pull --verify");
    let reader = enforcing(&signed, &public);
    let pinned = reader.pinned(&provchart()).await.unwrap();
    assert_eq!(pinned.manifest_digest, digest);
    assert!(pinned.verification.verified, "{:?}", pinned.verification);
    assert_eq!(pinned.verification.method.as_deref(), Some("helm-prov"));
    let key = pinned.verification.key.clone().unwrap();
    assert!(key.starts_with("pubring.gpg ("), "{key}");
    reader
        .read_file(&provchart(), "metadata.yaml")
        .await
        .unwrap();

    // Another keyring: neither verifies.
    assert!(!helm_verifies(&signed, &other_public));
    refused(
        &enforcing(&signed, &other_public),
        &digest,
        "signed by no key of the keyring",
    )
    .await;

    // A tampered chart: another archive pushed with the signed one's provenance.
    let tampered = prefix("prov-tampered");
    let other = package(out.path(), "tampered", None);
    std::fs::copy(
        tgz.with_extension("tgz.prov"),
        other.with_extension("tgz.prov"),
    )
    .unwrap();
    let digest = helm_push(&other, &tampered);
    assert!(!helm_verifies(&tampered, &public));
    refused(
        &enforcing(&tampered, &public),
        &digest,
        "not the chart archive's",
    )
    .await;

    // No provenance at all.
    let unsigned = prefix("prov-unsigned");
    let bare = package(out.path(), "unsigned", None);
    let digest = helm_push(&bare, &unsigned);
    refused(
        &enforcing(&unsigned, &public),
        &digest,
        "no Helm provenance",
    )
    .await;
}

#[tokio::test]
async fn keyrings_are_named_per_registry_or_addon_pattern_in_the_policy_file() {
    let dir = tempfile::tempdir().unwrap();
    let (public, _) = gpg_key(dir.path(), "team");
    std::fs::copy(&public, dir.path().join("pubring.gpg")).unwrap();
    let file = dir.path().join("verification.yaml");
    let text = "registries:\n  r:\n    policy: enforce\n    keyring: pubring.gpg\n";
    assert!(Policy::parse("r", &file, text).unwrap().is_some());
    // `enforce` for one pattern with its own keyring, `off` for the registry.
    let text = "registries:\n  r:\n    policy: off\n    addons:\n      - pattern: \"team-*\"\n        policy: enforce\n        keyring: pubring.gpg\n";
    assert!(Policy::parse("r", &file, text).unwrap().is_some());
    // `enforce` without a key or a keyring for it, a missing keyring, a keyring that is not one.
    let text = "registries:\n  r:\n    policy: off\n    addons:\n      - pattern: \"team-*\"\n        policy: enforce\n";
    let err = Policy::parse("r", &file, text).unwrap_err();
    assert!(err.to_string().contains("`keyring`"), "{err}");
    let text = "registries:\n  r:\n    policy: enforce\n    keyring: missing.gpg\n";
    let err = Policy::parse("r", &file, text).unwrap_err();
    assert!(err.to_string().contains("missing.gpg"), "{err}");
    std::fs::write(dir.path().join("junk.gpg"), "not a keyring").unwrap();
    let text = "registries:\n  r:\n    policy: enforce\n    keyring: junk.gpg\n";
    let err = Policy::parse("r", &file, text).unwrap_err();
    assert!(err.to_string().contains("junk.gpg"), "{err}");
}
