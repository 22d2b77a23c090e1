//! What verified a digest, kept in the registry's disk cache: the signed material itself (a
//! simple-signing payload and its signature, a Sigstore bundle, a `.prov` file), never a bare
//! "verified" mark. A later read of the same digest checks that material again with the policy
//! of the day — the same keys, keyring and digest checks as over the network — without asking
//! the registry; material that no longer verifies (a key removed from the policy) is dropped and
//! the registry is read again. Like a cached blob, an entry proves nothing by being there.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::super::client::{sha256_digest, Fetched};
use super::Policy;
use crate::source::cache::{CachedEntry, DiskCache};

/// The largest evidence kept (a bundle is at most 1 MiB).
const MAX_EVIDENCE_BYTES: usize = 2 * 1024 * 1024;

/// The signed material that verified a digest, by the method that verified it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub(super) enum Evidence {
    /// The legacy tag's simple-signing payload (base64) and the signature of its layer.
    CosignKey { payload: String, signature: String },
    /// A Sigstore bundle's bytes (base64).
    CosignBundle { bundle: String },
    /// The chart's `.prov` text.
    HelmProv { prov: String },
}

impl Evidence {
    /// The method's name, as [`super::Verification::method`] records it.
    pub(super) fn method(&self) -> &'static str {
        match self {
            Evidence::CosignKey { .. } => "cosign-key",
            Evidence::CosignBundle { .. } => "cosign-bundle",
            Evidence::HelmProv { .. } => "helm-prov",
        }
    }

    pub(super) fn cosign_key(payload: &[u8], signature: &str) -> Evidence {
        Evidence::CosignKey {
            payload: base64::engine::general_purpose::STANDARD.encode(payload),
            signature: signature.to_owned(),
        }
    }

    pub(super) fn cosign_bundle(bundle: &[u8]) -> Evidence {
        Evidence::CosignBundle {
            bundle: base64::engine::general_purpose::STANDARD.encode(bundle),
        }
    }
}

/// The cache key of the evidence for `digest` in `repository`.
fn key(repository: &str, digest: &str) -> String {
    let repository = sha256_digest(repository.as_bytes());
    let repository = repository.trim_start_matches("sha256:");
    format!(
        "evidence-{}-{}",
        repository.get(..16).unwrap_or(repository),
        digest.trim_start_matches("sha256:")
    )
}

impl Policy {
    /// The evidence kept for `fetched`, checked again: `Some((method, key))` when it verifies
    /// under this policy; an entry that does not is removed.
    pub(super) fn kept(
        &self,
        cache: &DiskCache,
        repository: &str,
        addon: &str,
        fetched: &Fetched,
    ) -> Option<(&'static str, String)> {
        let key = key(repository, &fetched.digest);
        let entry = cache.load(&key)?;
        let checked = serde_json::from_slice::<Evidence>(&entry.body)
            .map_err(|e| format!("unreadable: {e}"))
            .and_then(|evidence| {
                let signer = self.check_evidence(&evidence, addon, fetched)?;
                Ok((evidence.method(), signer))
            });
        match checked {
            Ok(verified) => Some(verified),
            Err(why) => {
                tracing::debug!(
                    "the kept evidence of `{repository}@{}` is dropped: {why}",
                    fetched.digest
                );
                cache.remove(&key);
                None
            }
        }
    }

    /// Keeps the evidence that verified `fetched` (best effort: a cache that cannot be written
    /// only means the registry is read again next time).
    pub(super) fn keep(
        cache: &DiskCache,
        repository: &str,
        fetched: &Fetched,
        evidence: &Evidence,
    ) {
        let Ok(body) = serde_json::to_vec(evidence) else {
            return;
        };
        if body.len() > MAX_EVIDENCE_BYTES {
            return;
        }
        cache.store(
            &key(repository, &fetched.digest),
            &CachedEntry {
                body,
                ..CachedEntry::default()
            },
        );
    }

    /// Checks evidence as the network path checks the same material: `Ok(signer)`.
    fn check_evidence(
        &self,
        evidence: &Evidence,
        addon: &str,
        fetched: &Fetched,
    ) -> std::result::Result<String, String> {
        let b64 = |text: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| "not base64".to_owned())
        };
        match evidence {
            Evidence::CosignKey { payload, signature } if !self.keys.is_empty() => {
                self.check_payload(&b64(payload)?, signature, &fetched.digest)
            }
            Evidence::CosignBundle { bundle } if !self.keys.is_empty() => {
                self.check_bundle(&b64(bundle)?, &fetched.digest)
            }
            Evidence::HelmProv { prov } => {
                let keyring = self
                    .keyring_for(addon)
                    .ok_or("the policy has no keyring for it")?;
                keyring.check(prov, super::prov::chart_digest(fetched)?)
            }
            _ => Err("the policy has no cosign key".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_by_repository_and_digest() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let other = format!("sha256:{}", "cd".repeat(32));
        assert_ne!(key("a/x", &digest), key("a/y", &digest));
        assert_ne!(key("a/x", &digest), key("a/x", &other));
        assert!(key("a/x", &digest).ends_with(&"ab".repeat(32)));
        assert!(!key("a/x", &digest).contains(['/', ':']));
    }

    #[test]
    fn evidence_keeps_its_method() {
        let evidence = Evidence::cosign_key(b"{}", "c2ln");
        let text = serde_json::to_string(&evidence).unwrap();
        assert!(text.contains("\"method\":\"cosign-key\""), "{text}");
        assert_eq!(serde_json::from_str::<Evidence>(&text).unwrap(), evidence);
        assert_eq!(Evidence::cosign_bundle(b"{}").method(), "cosign-bundle");
    }
}
