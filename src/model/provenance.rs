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
