//! Registries as readers: the [`AsyncReader`] trait and one implementation per kind of source.
//!
//! Every source answers three questions: which addons (and versions) do you hold, which files
//! does one addon version have, and what is in one of them. Paths are relative to the addon's
//! root and `/`-separated. Each backend maps its own failures onto the few semantic variants of
//! [`Error`] so that callers match on meaning, never on backend details.
//!
//! Implementations: [`local::LocalReader`] (a directory holding one addon or many),
//! [`builtin::BuiltinReader`] (this repository's `addons/`, embedded in the binary),
//! [`helm::HelmReader`] (a Helm chart repository) and [`git::GitReader`] (any git repository).
//! Shared plumbing: [`http`] (the one HTTP layer: limits, retries, status mapping), [`archive`]
//! (safe `.tgz` reading) and [`cache`] (the on-disk cache).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::model::AddonVersion;

pub mod archive;
pub mod builtin;
pub mod cache;
mod forge;
pub mod git;
pub mod gitee;
pub mod github;
pub mod gitlab;
pub mod helm;
pub mod http;
pub mod local;
pub mod s3;
mod tree;

/// The largest single file a reader returns (4 MiB).
pub const MAX_FILE_SIZE: u64 = 4 * 1024 * 1024;
/// The most files one addon may have.
pub const MAX_FILES_PER_ADDON: usize = 10_000;

/// What a registry holds for one addon.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AddonSummary {
    /// The addon's name (from its `metadata.yaml`).
    pub name: String,
    /// Every version available, highest first.
    pub versions: Vec<String>,
    /// The description of the newest version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One addon version to read: a name and, optionally, a version (`None` = the newest).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AddonRef {
    /// The addon's name.
    pub name: String,
    /// A version; `None` picks the newest the source has.
    pub version: Option<String>,
}

impl AddonRef {
    /// The newest version of `name`.
    pub fn latest(name: impl Into<String>) -> Self {
        AddonRef {
            name: name.into(),
            version: None,
        }
    }
}

/// One version in a reader's index of an addon (versions listed highest first).
pub(crate) trait IndexedVersion {
    /// Its version.
    fn version(&self) -> &AddonVersion;
}

/// The version of `versions` (highest first) a reader serves for `wanted`: that version (a
/// leading `v` ignored), or without one the newest stable version, else the newest. `Err` holds
/// what was not found, for the reader's not-found error.
pub(crate) fn choose_version<'a, V: IndexedVersion>(
    name: &str,
    versions: &'a [V],
    wanted: Option<&str>,
) -> std::result::Result<&'a V, String> {
    let chosen = match wanted {
        Some(wanted) => versions.iter().find(|v| v.version().same_as(wanted)),
        None => versions
            .iter()
            .find(|v| !v.version().is_prerelease())
            .or_else(|| versions.first()),
    };
    chosen.ok_or_else(|| {
        let available: Vec<&str> = versions.iter().map(|v| v.version().raw()).collect();
        format!(
            "version `{}` of addon `{name}` (available: `{}`)",
            wanted.unwrap_or("latest"),
            available.join("`, `")
        )
    })
}

/// The summary of an addon whose `versions` are listed highest first, with the description of
/// the version served by default.
pub(crate) fn summarize<V: IndexedVersion>(
    name: &str,
    versions: &[V],
    description: impl Fn(&V) -> Option<String>,
) -> AddonSummary {
    AddonSummary {
        name: name.to_owned(),
        versions: versions.iter().map(|v| v.version().to_string()).collect(),
        description: choose_version(name, versions, None)
            .ok()
            .and_then(description),
    }
}

impl fmt::Display for AddonRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}@{v}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// One file of an addon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Path relative to the addon root, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
}

/// A reader over one registry. Object-safe; used as `Arc<dyn AsyncReader>`.
#[async_trait]
pub trait AsyncReader: fmt::Debug + fmt::Display + Send + Sync + 'static {
    /// The registry's name as it appears in the `addons.oam.dev/registry` label.
    fn registry(&self) -> &str;

    /// Every addon the registry holds, sorted by name.
    async fn list_addons(&self) -> Result<Vec<AddonSummary>>;

    /// The files of one addon version, sorted by path.
    async fn list_files(&self, addon: &AddonRef) -> Result<Vec<FileEntry>>;

    /// The contents of one file of an addon version (at most [`MAX_FILE_SIZE`] bytes).
    async fn read_file(&self, addon: &AddonRef, path: &str) -> Result<Vec<u8>>;
}

/// A shared reader.
pub type Reader = Arc<dyn AsyncReader>;

/// Why a source could not answer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The addon, version or file does not exist.
    #[error("{what} was not found in registry `{registry}`")]
    NotFound {
        /// The registry asked.
        registry: String,
        /// What was missing (an addon, a version, a file), already quoted.
        what: String,
    },
    /// The registry refused the credentials (or their absence).
    #[error("registry `{registry}` refused access: {message}")]
    Unauthorized {
        /// The registry asked.
        registry: String,
        /// What the server said, without credentials.
        message: String,
    },
    /// The registry is rate limiting.
    #[error("registry `{registry}` is rate limiting requests: {message}")]
    RateLimited {
        /// The registry asked.
        registry: String,
        /// When the limit resets, if known, and what to do.
        message: String,
    },
    /// A path is not allowed (absolute, `..`, a symlink leaving the root).
    #[error("registry `{registry}`: path `{path}` is not allowed: {reason}")]
    InvalidPath {
        /// The registry asked.
        registry: String,
        /// The offending path.
        path: String,
        /// Why it is refused.
        reason: String,
    },
    /// A file or archive is larger than allowed.
    #[error("registry `{registry}`: `{path}` is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// The registry asked.
        registry: String,
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The registry answered with something that cannot be used.
    #[error("registry `{registry}`: {message}")]
    InvalidContent {
        /// The registry asked.
        registry: String,
        /// What is wrong, naming the file.
        message: String,
    },
    /// The backend failed for another reason (I/O, network, server error).
    #[error("registry `{registry}`: {message}")]
    Backend {
        /// The registry asked.
        registry: String,
        /// What failed.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl Error {
    /// Whether the user can fix this by changing what they asked for or what the registry holds.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, Error::Backend { .. })
    }
}

/// `Result` with the source [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks a relative path given to [`AsyncReader::read_file`]: no absolute paths, no `..`, no
/// empty or `.` segments, no backslashes.
pub fn check_relative_path(registry: &str, path: &str) -> Result<()> {
    let bad = |reason: &str| Error::InvalidPath {
        registry: registry.to_owned(),
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    if path.is_empty() {
        return Err(bad("it is empty"));
    }
    if path.starts_with('/') || path.contains('\\') || path.contains(':') {
        return Err(bad("it must be a relative path with `/` separators"));
    }
    if path
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(bad("it must not contain empty, `.` or `..` segments"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_checked() {
        for ok in ["metadata.yaml", "resources/a.yaml", "lib/k8s/x.rhai"] {
            check_relative_path("r", ok).unwrap();
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a\\b",
            "C:/x",
        ] {
            assert!(check_relative_path("r", bad).is_err(), "{bad}");
        }
    }
}
