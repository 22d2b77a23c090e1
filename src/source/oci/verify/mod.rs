//! Verifying OCI addons: cosign key-based signatures (ECDSA P-256), checked against a policy
//! kept in addonctl's own configuration (never in `vela-addon-registry`, which KubeVela
//! rewrites).
//!
//! The policy file is `$ADDONCTL_VERIFY_FILE`, else `$XDG_CONFIG_HOME/addonctl/verification.yaml`
//! (`~/.config/addonctl/verification.yaml`):
//!
//! ```yaml
//! registries:
//!   my-registry:
//!     policy: enforce          # enforce | warn | off
//!     keys: [cosign.pub]       # PEM public keys (paths relative to this file, or `k8s://ns/name`
//!                              # Secrets' `cosign.pub`); several for rotation
//!     keyring: pubring.gpg     # OpenPGP keyring for Helm provenance (`.prov`)
//!     addons:                  # overrides by addon name pattern (`*` matches any run of characters)
//!       - pattern: "experimental-*"
//!         policy: warn
//!         keyring: other.gpg   # optional: this pattern's own keyring
//! ```
//!
//! **Expected flow.** The manifest digest being installed is known (the tag was resolved once).
//! Cosign's signature manifest is read from tag `sha256-<hex>.sig`; each layer's payload (a
//! "simple signing" JSON document) is fetched by digest and checked against its descriptor, the
//! signature in the layer's `dev.cosignproject.cosign/signature` annotation is checked over the
//! payload bytes with each trusted key, and the payload must name the digest being installed
//! (`critical.image.docker-manifest-digest`) ([`cosign`]). When that does not verify, the Sigstore
//! bundles referring to the digest (OCI 1.1 referrers, or the `sha256-<hex>` fallback tag) are
//! read ([`bundle`]). The form that verified is the verification's `method`: `cosign-key` or
//! `cosign-bundle`. With a keyring, the chart's Helm provenance layer ([`prov`]): `helm-prov`.
//!
//! **Guarantees.** Never fail open: a missing signature tag, a registry error, a payload that does
//! not parse, names another digest or is signed by no trusted key all count as unverified, and
//! each is reported. Under `enforce`, an unverified chart is refused with
//! [`Error::Unverified`] before any of its files is read; under `warn` it is served and its
//! [`Verification`] says `verified: false`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use p256::ecdsa::VerifyingKey;
use p256::pkcs8::DecodePublicKey as _;
use serde::Deserialize;
use serde_json::Value;

use super::client::{Fetched, Login, OciClient};
use crate::model::secret::SecretString;
use crate::source::cache::DiskCache;
use crate::source::{Error, Result};

mod bundle;
mod cosign;
mod evidence;
mod prov;

pub use bundle::{pae, BUNDLE_V03, COSIGN_SIGN_PREDICATE, IN_TOTO};
pub use cosign::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING};
pub use prov::Keyring;

/// The largest signature payload read.
const MAX_PAYLOAD_BYTES: u64 = 64 * 1024;
/// The most signature layers looked at.
const MAX_SIGNATURES: usize = 16;

pub use crate::model::provenance::{Mode, Verification};

/// A registry's verification policy.
#[derive(Debug)]
pub struct Policy {
    mode: Mode,
    keys: Vec<(String, VerifyingKey)>,
    addons: Vec<(String, Mode)>,
    /// The registry's keyring for Helm provenance.
    keyring: Option<Keyring>,
    /// Keyrings by addon name pattern (before the registry's).
    addon_keyrings: Vec<(String, Keyring)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    #[serde(default)]
    registries: std::collections::BTreeMap<String, RegistryShape>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryShape {
    policy: Mode,
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    keyring: Option<String>,
    #[serde(default)]
    addons: Vec<AddonShape>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddonShape {
    pattern: String,
    policy: Mode,
    #[serde(default)]
    keyring: Option<String>,
}

/// The policy file: `$ADDONCTL_VERIFY_FILE`, else `verification.yaml` in addonctl's config
/// directory.
pub fn policy_file() -> PathBuf {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(file) = non_empty("ADDONCTL_VERIFY_FILE") {
        return PathBuf::from(file);
    }
    non_empty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("addonctl/verification.yaml")
}

/// The scheme of a key kept in a Kubernetes Secret, as cosign names one: `k8s://NAMESPACE/NAME`
/// (the Secret's `cosign.pub`).
pub const SECRET_KEY_SCHEME: &str = "k8s://";
/// The key of such a Secret holding the public key, as `cosign generate-key-pair k8s://…` writes it.
pub const SECRET_KEY_FIELD: &str = "cosign.pub";

/// Keys kept in Secrets, read by whoever has the cluster: by reference (`k8s://ns/name`), the
/// PEM text or why it could not be read.
pub type SecretKeys = std::collections::BTreeMap<String, std::result::Result<String, String>>;

/// The entry of `registry` in the policy file, with the file's path; `None` when either is absent.
fn entry_of(registry: &str) -> Result<Option<(PathBuf, RegistryShape)>> {
    let file = policy_file();
    if !file.exists() {
        return Ok(None);
    }
    let text =
        fs_err::read_to_string(&file).map_err(|e| bad_policy(registry, &file, &e.to_string()))?;
    Ok(entry_in(registry, &file, &text)?.map(|entry| (file, entry)))
}

fn entry_in(registry: &str, file: &Path, text: &str) -> Result<Option<RegistryShape>> {
    let shape: FileShape =
        serde_yaml::from_str(text).map_err(|e| bad_policy(registry, file, &e.to_string()))?;
    Ok(shape
        .registries
        .into_iter()
        .find_map(|(name, entry)| (name == registry).then_some(entry)))
}

/// The keys the policy of `registry` keeps in Secrets (`k8s://NAMESPACE/NAME`), as
/// `(reference, namespace, name)`; none when there is no policy for it.
pub fn secret_key_refs(registry: &str) -> Result<Vec<(String, String, String)>> {
    let Some((file, entry)) = entry_of(registry)? else {
        return Ok(Vec::new());
    };
    entry
        .keys
        .iter()
        .filter_map(|key| key.strip_prefix(SECRET_KEY_SCHEME).map(|rest| (key, rest)))
        .map(|(key, rest)| match rest.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok((key.clone(), namespace.to_owned(), name.to_owned()))
            }
            _ => Err(bad_policy(
                registry,
                &file,
                &format!("key `{key}`: a key in a Secret is written `k8s://NAMESPACE/NAME`"),
            )),
        })
        .collect()
}

/// The policy mode of `addon` from `registry`, without reading any key; `None` without a policy.
pub fn mode_of(registry: &str, addon: &str) -> Result<Option<Mode>> {
    Ok(entry_of(registry)?.map(|(_, entry)| {
        entry
            .addons
            .iter()
            .find(|a| glob(&a.pattern, addon))
            .map_or(entry.policy, |a| a.policy)
    }))
}

impl Policy {
    /// The policy of `registry` in the policy file; `None` when the file or its entry is absent.
    /// A file that cannot be read or parsed, or a key that is not a P-256 public key, is an
    /// error: a broken policy never turns verification off.
    pub fn for_registry(registry: &str) -> Result<Option<Arc<Policy>>> {
        Policy::for_registry_with(registry, &SecretKeys::new())
    }

    /// [`Policy::for_registry`], with the keys kept in Secrets as the caller read them.
    pub fn for_registry_with(registry: &str, secrets: &SecretKeys) -> Result<Option<Arc<Policy>>> {
        let Some((file, entry)) = entry_of(registry)? else {
            return Ok(None);
        };
        Policy::of_entry(registry, &file, entry, secrets)
    }

    /// Parses the policy file's text for `registry`; `file` names it (and relative key paths).
    pub fn parse(registry: &str, file: &Path, text: &str) -> Result<Option<Arc<Policy>>> {
        match entry_in(registry, file, text)? {
            Some(entry) => Policy::of_entry(registry, file, entry, &SecretKeys::new()),
            None => Ok(None),
        }
    }

    fn of_entry(
        registry: &str,
        file: &Path,
        entry: RegistryShape,
        secrets: &SecretKeys,
    ) -> Result<Option<Arc<Policy>>> {
        let base = file.parent().unwrap_or_else(|| Path::new("."));
        let mut keys = Vec::new();
        for key in &entry.keys {
            let pem = if key.starts_with(SECRET_KEY_SCHEME) {
                match secrets.get(key) {
                    Some(Ok(pem)) => pem.clone(),
                    Some(Err(why)) => return Err(bad_policy(registry, file, &format!("key `{key}`: {why}"))),
                    None => {
                        return Err(bad_policy(
                            registry,
                            file,
                            &format!("key `{key}` is kept in a Secret, and this command reads registries without a cluster; give the key as a file"),
                        ))
                    }
                }
            } else {
                fs_err::read_to_string(base.join(key))
                    .map_err(|e| bad_policy(registry, file, &format!("key `{key}`: {e}")))?
            };
            let parsed = VerifyingKey::from_public_key_pem(pem.trim()).map_err(|e| {
                bad_policy(
                    registry,
                    file,
                    &format!("key `{key}` is not an ECDSA P-256 public key (PEM): {e}"),
                )
            })?;
            keys.push((key.clone(), parsed));
        }
        let read_keyring = |name: &str| {
            let bytes = fs_err::read(base.join(name))
                .map_err(|e| bad_policy(registry, file, &format!("keyring `{name}`: {e}")))?;
            Keyring::parse(name, &bytes).map_err(|why| bad_policy(registry, file, &why))
        };
        let keyring = entry.keyring.as_deref().map(read_keyring).transpose()?;
        let mut addon_keyrings = Vec::new();
        for addon in &entry.addons {
            if let Some(name) = &addon.keyring {
                addon_keyrings.push((addon.pattern.clone(), read_keyring(name)?));
            }
        }
        let policy = Policy {
            mode: entry.policy,
            keys,
            addons: entry
                .addons
                .into_iter()
                .map(|a| (a.pattern, a.policy))
                .collect(),
            keyring,
            addon_keyrings,
        };
        let checked = |pattern: Option<&str>, mode: Mode| {
            mode == Mode::Off
                || !policy.keys.is_empty()
                || pattern.map_or(policy.keyring.is_some(), |p| {
                    policy.keyring_for(p).is_some()
                })
        };
        let unchecked = !checked(None, policy.mode)
            || policy
                .addons
                .iter()
                .any(|(pattern, mode)| !checked(Some(pattern), *mode));
        if unchecked {
            return Err(bad_policy(
                registry,
                file,
                "a policy other than `off` needs at least one key (`keys`) or a `keyring`",
            ));
        }
        Ok(Some(Arc::new(policy)))
    }

    /// A policy from parts (tests, front ends with their own configuration).
    pub fn new(mode: Mode, keys: Vec<(String, VerifyingKey)>, addons: Vec<(String, Mode)>) -> Self {
        Policy {
            mode,
            keys,
            addons,
            keyring: None,
            addon_keyrings: Vec::new(),
        }
    }

    /// With a keyring for Helm provenance: the registry's, or for the addons matching `pattern`.
    #[must_use]
    pub fn with_keyring(mut self, pattern: Option<&str>, keyring: Keyring) -> Self {
        match pattern {
            None => self.keyring = Some(keyring),
            Some(pattern) => self.addon_keyrings.push((pattern.to_owned(), keyring)),
        }
        self
    }

    /// The keyring for `addon`: the first matching pattern's, else the registry's.
    fn keyring_for(&self, addon: &str) -> Option<&Keyring> {
        self.addon_keyrings
            .iter()
            .find(|(pattern, _)| glob(pattern, addon))
            .map(|(_, keyring)| keyring)
            .or(self.keyring.as_ref())
    }

    /// The mode for `addon`: the first matching pattern's, else the registry's.
    pub fn mode_for(&self, addon: &str) -> Mode {
        self.addons
            .iter()
            .find(|(pattern, _)| glob(pattern, addon))
            .map_or(self.mode, |(_, mode)| *mode)
    }

    /// Checks the signatures of `digest` in `repository`; refuses under `enforce`. The
    /// material that verified is kept in `cache` and checked again on the next read of the
    /// same digest instead of reading it from the registry ([`evidence`]).
    pub async fn check(
        &self,
        client: &OciClient,
        cache: &DiskCache,
        registry: &str,
        repository: &str,
        addon: &str,
        fetched: &Fetched,
    ) -> Result<Verification> {
        let mode = self.mode_for(addon);
        if mode == Mode::Off {
            return Ok(Verification::default());
        }
        let digest = fetched.digest.as_str();
        let mut failures = Vec::new();
        let mut verified = self.kept(cache, repository, addon, fetched);
        // With cosign keys, the legacy tag first (two requests when it verifies), then the
        // bundles; with a keyring, the chart's provenance layer.
        let mut evidence = None;
        if verified.is_none() && !self.keys.is_empty() {
            match self.cosign_tag(client, repository, digest).await {
                Ok(found) => evidence = Some(found),
                Err(mut more) => failures.append(&mut more),
            }
        }
        if verified.is_none() && evidence.is_none() && !self.keys.is_empty() {
            match self.cosign_bundle(client, repository, digest).await {
                Ok(found) => evidence = Some(found),
                Err(mut more) => failures.append(&mut more),
            }
        }
        if verified.is_none() && evidence.is_none() {
            if let Some(keyring) = self.keyring_for(addon) {
                match keyring.check_layer(client, repository, fetched).await {
                    Ok(found) => evidence = Some(found),
                    Err(failure) => failures.push(failure),
                }
            }
        }
        if let Some((key, evidence)) = evidence {
            Policy::keep(cache, repository, fetched, &evidence);
            verified = Some((evidence.method(), key));
        }
        let verification = match verified {
            Some((method, key)) => Verification {
                policy: mode,
                verified: true,
                method: Some(method.to_owned()),
                key: Some(key),
                failures: Vec::new(),
            },
            None => Verification {
                policy: mode,
                verified: false,
                failures,
                ..Verification::default()
            },
        };
        if verification.verified {
            return Ok(verification);
        }
        let reference = format!("{}/{repository}@{digest}", client.location_host());
        if mode == Mode::Enforce {
            return Err(Error::Unverified {
                registry: registry.to_owned(),
                message: format!(
                    "`{reference}` is not verified and the registry's policy is `enforce`: {}; \
                     sign it with a trusted key (`cosign sign --key …`, or `helm package --sign` \
                     for a keyring) or change the policy in \
                     `{}`",
                    verification.failures.join("; "),
                    policy_file().display()
                ),
            });
        }
        tracing::warn!(
            registry,
            "`{reference}` is not verified ({}); installing it because the policy is `warn`",
            verification.failures.join("; ")
        );
        Ok(verification)
    }
}

fn bad_policy(registry: &str, file: &Path, why: &str) -> Error {
    Error::InvalidContent {
        registry: registry.to_owned(),
        message: format!(
            "the verification policy file `{}` is not valid: {why}",
            file.display()
        ),
    }
}

/// Whether `name` matches `pattern` (`*` any run of characters).
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == name;
    };
    if parts.len() == 1 {
        return pattern == name;
    }
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        let Some(at) = rest.find(part) else {
            return false;
        };
        rest = &rest[at + part.len()..];
    }
    rest.ends_with(last)
}

/// The login for `host` in a Docker config file's text (`auths`: `auth` as base64
/// `user:password`, or `username`/`password`, or `identitytoken`).
pub fn docker_config_login(registry: &str, host: &str, text: &str) -> Result<super::client::Login> {
    let invalid = |why: String| Error::InvalidContent {
        registry: registry.to_owned(),
        message: format!("the Docker config file is not valid: {why}"),
    };
    let value: Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let Some(auths) = value.get("auths").and_then(Value::as_object) else {
        return Ok(Login::Anonymous);
    };
    let key_host = |key: &str| {
        let key = key.trim();
        let key = key.split_once("://").map_or(key, |(_, rest)| rest);
        key.split('/').next().unwrap_or_default().to_owned()
    };
    let Some(entry) = auths
        .iter()
        .find_map(|(k, v)| (key_host(k) == host).then_some(v))
    else {
        return Ok(Login::Anonymous);
    };
    let text_of = |key: &str| {
        entry
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let Some(token) = text_of("identitytoken") {
        return Ok(Login::Token(SecretString::from(token)));
    }
    if let (Some(username), Some(password)) = (text_of("username"), text_of("password")) {
        return Ok(Login::Basic {
            username: username.to_owned(),
            password: SecretString::from(password),
        });
    }
    if let Some(auth) = text_of("auth") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| invalid(format!("the `auth` of `{host}` is not base64 text")))?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| invalid(format!("the `auth` of `{host}` is not `user:password`")))?;
        return Ok(Login::Basic {
            username: username.to_owned(),
            password: SecretString::from(password),
        });
    }
    Ok(Login::Anonymous)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_names() {
        assert!(glob("team-*", "team-a"));
        assert!(glob("*", "x"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
        assert!(glob("exact", "exact"));
        assert!(!glob("exact", "exactly"));
    }

    #[test]
    fn docker_config_files_give_logins() {
        let auth = base64::engine::general_purpose::STANDARD.encode("me:s3cret");
        let text = format!(
            r#"{{"auths": {{"https://127.0.0.1:5000/v1/": {{"auth": "{auth}"}}, "other:1": {{"identitytoken": "tok"}}}}}}"#
        );
        let Login::Basic { username, .. } =
            docker_config_login("r", "127.0.0.1:5000", &text).unwrap()
        else {
            panic!("basic");
        };
        assert_eq!(username, "me");
        assert!(matches!(
            docker_config_login("r", "other:1", &text).unwrap(),
            Login::Token(_)
        ));
        assert!(matches!(
            docker_config_login("r", "none:1", &text).unwrap(),
            Login::Anonymous
        ));
        assert!(docker_config_login("r", "h", "{").is_err());
    }

    #[test]
    fn a_policy_without_keys_or_with_a_bad_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("verification.yaml");
        let err =
            Policy::parse("r", &file, "registries:\n  r:\n    policy: enforce\n").unwrap_err();
        assert!(err.to_string().contains("at least one key"), "{err}");
        fs_err::write(dir.path().join("bad.pub"), "not a key").unwrap();
        let err = Policy::parse(
            "r",
            &file,
            "registries:\n  r:\n    policy: warn\n    keys: [bad.pub]\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("P-256"), "{err}");
        assert!(Policy::parse("r", &file, "registries:\n  r:\n    policy: maybe\n").is_err());
        assert!(
            Policy::parse("other", &file, "registries:\n  r:\n    policy: off\n")
                .unwrap()
                .is_none()
        );
        let policy = Policy::parse("r", &file, "registries:\n  r:\n    policy: off\n")
            .unwrap()
            .unwrap();
        assert_eq!(policy.mode_for("x"), Mode::Off);
    }
}
