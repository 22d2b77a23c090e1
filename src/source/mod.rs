//! Registries as readers: the [`AsyncReader`] trait and one implementation per kind of source.
//!
//! Every source answers three questions: which addons (and versions) do you hold, which files
//! does one addon version have, and what is in one of them. Paths are relative to the addon's
//! root and `/`-separated. Each backend maps its own failures onto the few semantic variants of
//! [`Error`] so that callers match on meaning, never on backend details.
//!
//! Implementations: [`local::LocalReader`] (a directory holding one addon or many),
//! [`builtin::BuiltinReader`] (this repository's `addons/`, embedded in the binary),
//! [`helm::HelmReader`] (a Helm chart repository), [`oci::OciReader`] (an OCI registry of Helm
//! charts) and [`git::GitReader`] (any git repository).
//! Shared plumbing: [`http`] (the one HTTP layer: limits, retries, status mapping), [`archive`]
//! (safe `.tgz` reading) and [`cache`] (the on-disk cache).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::model::registry::{Credentials, RegistrySpec, RegistryType};
use crate::model::{AddonVersion, Constraint, ErrorKind};

pub mod archive;
pub mod builtin;
pub mod cache;
pub mod catalog;
mod forge;
pub mod git;
pub mod gitee;
pub mod github;
pub mod gitlab;
pub mod helm;
pub mod http;
pub mod local;
pub mod oci;
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
    /// The tags of the newest version (`metadata.yaml` `tags`; a Helm chart's `keywords`):
    /// `system` marks an addon only those who manage addons see in the app store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
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

/// One version in a list of versions (a reader's index, a registry's listing).
pub trait IndexedVersion {
    /// Its version.
    fn version(&self) -> &AddonVersion;
}

impl IndexedVersion for AddonVersion {
    fn version(&self) -> &AddonVersion {
        self
    }
}

/// Which version of an addon to take.
#[derive(Debug, Clone, Copy)]
pub enum Choice<'a> {
    /// That version exactly (a leading `v` ignored).
    Exact(&'a str),
    /// The highest version the constraint accepts.
    Matching(&'a Constraint),
    /// The highest stable semver version; none when there is none.
    NewestStable,
    /// The highest stable version, else the highest of any kind (what `enable x` takes).
    Default,
}

impl<'a> Choice<'a> {
    /// `version` exactly when given, else the highest version matching `constraint` when
    /// given, else [`Choice::Default`].
    pub fn of(version: Option<&'a str>, constraint: Option<&'a Constraint>) -> Self {
        match (version, constraint) {
            (Some(version), _) => Choice::Exact(version),
            (None, Some(constraint)) => Choice::Matching(constraint),
            (None, None) => Choice::Default,
        }
    }
}

impl fmt::Display for Choice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Exact(version) => write!(f, "version `{version}`"),
            Choice::Matching(constraint) => write!(f, "a version matching `{constraint}`"),
            Choice::NewestStable => f.write_str("a stable version"),
            Choice::Default => f.write_str("version `latest`"),
        }
    }
}

/// The one version chooser: the version of `versions` (listed highest first) that `choice`
/// names. Readers, the catalogue and the planner all choose through it.
pub fn choose_version<'a, V: IndexedVersion>(
    versions: &'a [V],
    choice: Choice<'_>,
) -> Option<&'a V> {
    let mut all = versions.iter();
    match choice {
        Choice::Exact(wanted) => all.find(|v| v.version().same_as(wanted)),
        Choice::Matching(constraint) => all.find(|v| constraint.matches(v.version())),
        Choice::NewestStable => all.find(|v| {
            let v = v.version();
            !v.is_prerelease() && v.semver().is_some()
        }),
        Choice::Default => all
            .clone()
            .find(|v| !v.version().is_prerelease())
            .or_else(|| versions.first()),
    }
}

/// Versions as a registry lists them, parsed and sorted highest first (for [`choose_version`]).
pub fn sorted_versions<S: AsRef<str>>(listed: &[S]) -> Vec<AddonVersion> {
    let mut versions: Vec<AddonVersion> = listed
        .iter()
        .map(|v| AddonVersion::parse(v.as_ref()))
        .collect();
    versions.sort();
    versions.reverse();
    versions
}

/// The version of `versions` (highest first) a reader serves for `wanted`: that version, or
/// without one [`Choice::Default`]. `Err` holds what was not found, for the reader's not-found
/// error.
pub(crate) fn serve_version<'a, V: IndexedVersion>(
    name: &str,
    versions: &'a [V],
    wanted: Option<&str>,
) -> std::result::Result<&'a V, String> {
    choose_version(versions, Choice::of(wanted, None)).ok_or_else(|| {
        let available: Vec<&str> = versions.iter().map(|v| v.version().raw()).collect();
        format!(
            "version `{}` of addon `{name}` (available: `{}`)",
            wanted.unwrap_or("latest"),
            available.join("`, `")
        )
    })
}

/// The summary of an addon whose `versions` are listed highest first, with the description and
/// tags of the version served by default.
pub(crate) fn summarize<V: IndexedVersion>(
    name: &str,
    versions: &[V],
    description: impl Fn(&V) -> Option<String>,
    tags: impl Fn(&V) -> Vec<String>,
) -> AddonSummary {
    let default = choose_version(versions, Choice::Default);
    AddonSummary {
        name: name.to_owned(),
        versions: versions.iter().map(|v| v.version().to_string()).collect(),
        description: default.and_then(description),
        tags: default.map(tags).unwrap_or_default(),
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

impl FileEntry {
    /// The listing of files held in memory (an unpacked archive, a kept package), by path.
    pub fn listing<'a>(files: impl IntoIterator<Item = (&'a String, &'a Vec<u8>)>) -> Vec<Self> {
        files
            .into_iter()
            .map(|(path, bytes)| FileEntry {
                path: path.clone(),
                size: bytes.len() as u64,
            })
            .collect()
    }
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

    /// Where an addon version comes from, pinned by digest and with its verification, when
    /// the source can say (an OCI registry); `None` otherwise.
    async fn provenance(
        &self,
        _addon: &AddonRef,
    ) -> Result<Option<crate::model::provenance::Provenance>> {
        Ok(None)
    }
}

/// A shared reader.
pub type Reader = Arc<dyn AsyncReader>;

/// How [`open`] builds readers: the run's disk cache and HTTP settings.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// The disk cache.
    pub cache: cache::CacheOptions,
    /// HTTP settings (timeouts, retries, …); credentials and TLS come from the registry.
    pub http: Option<http::HttpOptions>,
}

impl OpenOptions {
    /// The HTTP settings for `spec`: the run's, with the registry's TLS settings (a
    /// self-hosted server with its own CA).
    pub(crate) fn http_for(&self, spec: &RegistrySpec) -> http::HttpOptions {
        let mut http = self.http.clone().unwrap_or_default();
        http.insecure_skip_tls = spec.insecure_skip_tls;
        http.ca_bundle = spec.ca_bundle.as_ref().map(|pem| pem.as_bytes().to_vec());
        http
    }
}

/// The reader of a stored registry: one `from_spec` per kind.
pub fn open(
    spec: &RegistrySpec,
    credentials: &Credentials,
    options: &OpenOptions,
) -> Result<Reader> {
    Ok(match spec.kind {
        RegistryType::Helm => Arc::new(helm::HelmReader::from_spec(spec, credentials, options)?),
        RegistryType::Git => Arc::new(git::GitReader::from_spec(spec, credentials, options)?),
        RegistryType::Local => Arc::new(local::LocalReader::from_spec(spec)?),
        RegistryType::Github => {
            Arc::new(github::GithubReader::from_spec(spec, credentials, options)?)
        }
        RegistryType::Gitee => Arc::new(gitee::GiteeReader::from_spec(spec, credentials, options)?),
        RegistryType::Gitlab => {
            Arc::new(gitlab::GitlabReader::from_spec(spec, credentials, options)?)
        }
        RegistryType::S3 | RegistryType::Oss => {
            Arc::new(s3::S3Reader::from_spec(spec, credentials, options)?)
        }
        RegistryType::Oci => Arc::new(oci::OciReader::from_spec(spec, credentials, options)?),
    })
}

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
    /// An addon's signatures do not satisfy the registry's verification policy (`enforce`).
    #[error("registry `{registry}`: {message}")]
    Unverified {
        /// The registry asked.
        registry: String,
        /// The reference, the digest and each check that failed.
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
    /// What kind of failure it is: a missing addon, version or file is
    /// [`ErrorKind::NotFound`], refused credentials [`ErrorKind::Denied`], a path, size or
    /// content the registry should not hold [`ErrorKind::Invalid`]; a registry that rate limits
    /// or cannot be read (I/O, network, server error) is [`ErrorKind::Unavailable`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Unauthorized { .. } | Error::Unverified { .. } => ErrorKind::Denied,
            Error::InvalidPath { .. } | Error::TooLarge { .. } | Error::InvalidContent { .. } => {
                ErrorKind::Invalid
            }
            Error::RateLimited { .. } | Error::Backend { .. } => ErrorKind::Unavailable,
        }
    }

    /// A copy of this error for a second reader of a listing kept once: the same variant and
    /// text, the underlying error (not cloneable) kept as its text.
    #[must_use]
    pub fn detached(&self) -> Error {
        match self {
            Error::NotFound { registry, what } => Error::NotFound {
                registry: registry.clone(),
                what: what.clone(),
            },
            Error::Unauthorized { registry, message } => Error::Unauthorized {
                registry: registry.clone(),
                message: message.clone(),
            },
            Error::RateLimited { registry, message } => Error::RateLimited {
                registry: registry.clone(),
                message: message.clone(),
            },
            Error::InvalidPath {
                registry,
                path,
                reason,
            } => Error::InvalidPath {
                registry: registry.clone(),
                path: path.clone(),
                reason: reason.clone(),
            },
            Error::TooLarge {
                registry,
                path,
                size,
                limit,
            } => Error::TooLarge {
                registry: registry.clone(),
                path: path.clone(),
                size: *size,
                limit: *limit,
            },
            Error::InvalidContent { registry, message } => Error::InvalidContent {
                registry: registry.clone(),
                message: message.clone(),
            },
            Error::Unverified { registry, message } => Error::Unverified {
                registry: registry.clone(),
                message: message.clone(),
            },
            Error::Backend {
                registry,
                message,
                source,
            } => Error::Backend {
                registry: registry.clone(),
                message: message.clone(),
                source: source.as_deref().map(|e| {
                    Box::new(Detached(crate::chain::chain(e)))
                        as Box<dyn std::error::Error + Send + Sync>
                }),
            },
        }
    }
}

/// The text of an error that cannot be cloned.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Detached(String);

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

    #[test]
    fn an_s3_registry_without_a_bucket_is_refused() {
        let spec = RegistrySpec {
            name: "s".into(),
            kind: RegistryType::S3,
            endpoint: "https://s3.example.invalid".into(),
            ..RegistrySpec::default()
        };
        let err = open(&spec, &Credentials::default(), &OpenOptions::default()).unwrap_err();
        assert!(err.to_string().contains("needs `--bucket`"), "{err}");
    }
}
