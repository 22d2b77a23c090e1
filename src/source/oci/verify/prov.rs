//! Helm provenance: the `.prov` file `helm package --sign` writes and `helm push` uploads as a
//! layer of the chart's manifest (`application/vnd.cncf.helm.chart.provenance.v1.prov`).
//!
//! It is an OpenPGP cleartext-signed message: the chart's `Chart.yaml`, a `...` line, then YAML
//! whose `files:` maps the archive's name to `sha256:<hex>`. It counts when one of its signatures
//! verifies with a key of the configured keyring (a primary key or a subkey; a binary keyring
//! such as gpg's legacy `pubring.gpg`, or an armored export) and a `files:` entry gives the
//! sha256 of the chart layer being installed.

use std::sync::Arc;

use pgp::composed::{CleartextSignedMessage, PublicOrSecret, SignedPublicKey};
use pgp::types::KeyDetails as _;
use serde_yaml::Value;

use super::super::client::{Fetched, OciClient, HELM_CHART, HELM_PROVENANCE};
use super::cosign::short;
use super::evidence::Evidence;
use super::MAX_PAYLOAD_BYTES;

/// The most keys read from one keyring.
const MAX_KEYS: usize = 1000;

/// A keyring: its name (as the policy gives it) and its public keys.
#[derive(Debug, Clone)]
pub struct Keyring {
    name: String,
    keys: Arc<Vec<SignedPublicKey>>,
}

impl Keyring {
    /// Reads a keyring's bytes (binary or armored; secret keys count for their public part).
    pub fn parse(name: &str, bytes: &[u8]) -> std::result::Result<Keyring, String> {
        let (parsed, _) = PublicOrSecret::from_reader_many(bytes)
            .map_err(|e| format!("the keyring `{name}` is not an OpenPGP keyring: {e}"))?;
        let keys: Vec<SignedPublicKey> = parsed
            .take(MAX_KEYS)
            .filter_map(std::result::Result::ok)
            .map(|key| match key {
                PublicOrSecret::Public(key) => key,
                PublicOrSecret::Secret(key) => key.to_public_key(),
            })
            .collect();
        if keys.is_empty() {
            return Err(format!("the keyring `{name}` holds no OpenPGP public key"));
        }
        Ok(Keyring {
            name: name.to_owned(),
            keys: Arc::new(keys),
        })
    }

    /// The fingerprint of the key (primary or subkey) one of `message`'s signatures verifies
    /// with.
    fn signer(&self, message: &CleartextSignedMessage) -> Option<String> {
        self.keys.iter().find_map(|key| {
            if message.verify(key).is_ok() {
                return Some(format!("{:x}", key.fingerprint()));
            }
            key.public_subkeys
                .iter()
                .find(|sub| message.verify(*sub).is_ok())
                .map(|sub| format!("{:x}", sub.key.fingerprint()))
        })
    }

    /// Checks a `.prov` file's text against the chart archive's digest: `Ok(key)` naming the
    /// keyring and the signing key's fingerprint.
    pub fn check(&self, text: &str, chart_digest: &str) -> std::result::Result<String, String> {
        let (message, _) = CleartextSignedMessage::from_string(text)
            .map_err(|e| format!("not an OpenPGP cleartext-signed message: {e}"))?;
        let fingerprint = self
            .signer(&message)
            .ok_or_else(|| format!("signed by no key of the keyring `{}`", self.name))?;
        let signed = message.signed_text().replace("\r\n", "\n");
        let Some((_, files)) = signed.split_once("\n...\n") else {
            return Err("the signed text has no `...` line before its `files:`".to_owned());
        };
        let files: Value = serde_yaml::from_str(files)
            .map_err(|e| format!("its `files:` section is not YAML: {e}"))?;
        let named: Vec<&str> = files
            .get("files")
            .and_then(Value::as_mapping)
            .map(|m| m.values().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !named.contains(&chart_digest) {
            let named = if named.is_empty() {
                "no file".to_owned()
            } else {
                named.join(", ")
            };
            return Err(format!(
                "its `files:` give {named}, not the chart archive's {chart_digest}"
            ));
        }
        Ok(format!("{} ({fingerprint})", self.name))
    }

    /// Checks the provenance layer of `fetched`: `Ok((key, evidence))`.
    pub(super) async fn check_layer(
        &self,
        client: &OciClient,
        repository: &str,
        fetched: &Fetched,
    ) -> std::result::Result<(String, Evidence), String> {
        let layers = &fetched.manifest.layers;
        let Some(prov) = layers.iter().find(|l| l.media_type == HELM_PROVENANCE) else {
            return Err(format!(
                "no Helm provenance (the manifest has no `{HELM_PROVENANCE}` layer)"
            ));
        };
        let chart = chart_digest(fetched)?;
        let at = short(&prov.digest);
        let bytes = client
            .blob(repository, prov, MAX_PAYLOAD_BYTES)
            .await
            .map_err(|e| format!("provenance {at}…: cannot read it: {e}"))?;
        let text =
            String::from_utf8(bytes).map_err(|_| format!("provenance {at}…: not UTF-8 text"))?;
        let key = self
            .check(&text, chart)
            .map_err(|why| format!("provenance {at}…: {why}"))?;
        Ok((key, Evidence::HelmProv { prov: text }))
    }
}

/// The digest of the chart layer of `fetched`.
pub(super) fn chart_digest(fetched: &Fetched) -> std::result::Result<&str, String> {
    fetched
        .manifest
        .layers
        .iter()
        .find(|l| l.media_type == HELM_CHART)
        .map(|l| l.digest.as_str())
        .ok_or_else(|| "the manifest has no chart layer".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keyring_without_keys_or_a_text_that_is_not_signed_is_refused() {
        let err = Keyring::parse("junk.gpg", b"not a keyring").unwrap_err();
        assert!(err.contains("junk.gpg"), "{err}");
        let err = Keyring::parse("empty.gpg", b"").unwrap_err();
        assert!(err.contains("empty.gpg"), "{err}");
    }
}
