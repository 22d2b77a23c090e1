//! Where an installed addon version came from, pinned by digest, and how it was verified: what
//! an OCI registry tells ([`crate::source::AsyncReader::provenance`]), kept in the addon's
//! record and shown by `status`. Pure data.

use serde::{Deserialize, Serialize};

/// A verification policy: what to do with an addon whose signatures do not verify.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Refuse it before anything is rendered.
    Enforce,
    /// Install it, recording that it is not verified.
    Warn,
    /// Do not check.
    #[default]
    Off,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Enforce => "enforce",
            Mode::Warn => "warn",
            Mode::Off => "off",
        })
    }
}

/// How a chart was verified.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// The policy applied.
    pub policy: Mode,
    /// Whether a trusted signature names the digest.
    pub verified: bool,
    /// How (`cosign-key`), when verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Which key, when verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Each check that failed, when not verified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

/// What was read for one addon version, pinned by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// `oci://host/prefix/addon`.
    pub reference: String,
    /// The tag resolved, when a tag (a version) was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The chart's version.
    pub version: String,
    /// The manifest's digest: `reference@manifestDigest` reproduces the install.
    pub manifest_digest: String,
    /// The chart archive's digest.
    pub chart_digest: String,
    /// How it was verified.
    pub verification: Verification,
}

impl Verification {
    /// One line for people: `verified (cosign-key, key `k`)`, `not checked (policy `off`)`
    /// or `NOT verified (policy `warn`)`.
    pub fn describe(&self) -> String {
        match (self.verified, self.policy) {
            (true, _) => format!(
                "verified ({}, key `{}`)",
                self.method.as_deref().unwrap_or("signature"),
                self.key.as_deref().unwrap_or("?")
            ),
            (false, Mode::Off) => "not checked (policy `off`)".to_owned(),
            (false, policy) => format!("NOT verified (policy `{policy}`)"),
        }
    }

    /// One word for tables and badges: `verified`, `unchecked` or `unverified`.
    pub fn word(&self) -> &'static str {
        match (self.verified, self.policy) {
            (true, _) => "verified",
            (false, Mode::Off) => "unchecked",
            (false, _) => "unverified",
        }
    }
}

impl Provenance {
    /// The manifest digest shortened for tables: `sha256:` and its first 12 hex digits.
    pub fn short_digest(&self) -> &str {
        let end = "sha256:".len() + 12;
        self.manifest_digest
            .get(..end)
            .unwrap_or(&self.manifest_digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_reads_as_one_line_and_one_word() {
        let mut v = Verification {
            policy: Mode::Enforce,
            verified: true,
            method: Some("cosign-key".into()),
            key: Some("release".into()),
            failures: Vec::new(),
        };
        assert_eq!(v.describe(), "verified (cosign-key, key `release`)");
        assert_eq!(v.word(), "verified");
        v.verified = false;
        assert_eq!(v.describe(), "NOT verified (policy `enforce`)");
        assert_eq!(v.word(), "unverified");
        v.policy = Mode::Off;
        assert_eq!(v.describe(), "not checked (policy `off`)");
        assert_eq!(v.word(), "unchecked");
        let p = Provenance {
            reference: "oci://h/p/a".into(),
            tag: None,
            version: "1.0.0".into(),
            manifest_digest: format!("sha256:{}", "ab".repeat(32)),
            chart_digest: String::new(),
            verification: v,
        };
        assert_eq!(p.short_digest(), "sha256:abababababab");
    }
}
