//! A Helm chart repository as a registry: `GET index.yaml`, then one chart archive per addon
//! version.
//!
//! - The index lists every version of every addon (highest first). It is read once per run and
//!   cached on disk with its `ETag`/`Last-Modified`, so the next run asks with `If-None-Match` /
//!   `If-Modified-Since` and usually gets an empty 304.
//! - A chart's URL may be relative (joined to the repository URL) or absolute. Credentials are
//!   only sent to the repository's own origin, as Helm does by default. When the index gives a
//!   `digest`, the archive must match it.
//! - Each archive is fetched at most once per version per run (concurrent readers share the
//!   download) and read with [`archive::read_tgz`]: size limits, no absolute or `..` paths, and
//!   the top directory (`<name>/` or `./<dir>/`) stripped. A root `Chart.yaml` is Helm packaging,
//!   not part of the addon, and is hidden. An archive the index gives a `digest` for is kept on
//!   disk under that digest, so a later run downloads it again only when the digest changes
//!   (`--refresh` ignores the disk).
//! - No version asked for means the highest version that is not a prerelease (or the highest of
//!   all when every version is a prerelease); a leading `v` is ignored when matching.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use reqwest::Url;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::model::registry::{Credentials, RegistrySpec};
use crate::model::secret::SecretString;
use crate::model::AddonVersion;
use crate::source::archive::{self, ArchiveLimits};
use crate::source::cache::{hex, CacheOptions, CachedEntry, DiskCache};
use crate::source::http::{redact, Auth, HttpClient, HttpOptions};
use crate::source::OpenOptions;
use crate::source::{
    check_relative_path, serve_version, summarize, AddonRef, AddonSummary, AsyncReader, Error,
    FileEntry, IndexedVersion, Result,
};

/// The largest chart archive downloaded (compressed).
pub const MAX_ARCHIVE_BYTES: u64 = 16 * 1024 * 1024;

/// The files a chart packs that are Helm's, not the addon's.
const HELM_FILES: &[&str] = &["Chart.yaml"];

/// One version of one chart in `index.yaml`.
#[derive(Debug, Clone)]
struct ChartVersion {
    version: AddonVersion,
    urls: Vec<String>,
    digest: Option<String>,
    description: Option<String>,
    keywords: Vec<String>,
}

impl IndexedVersion for ChartVersion {
    fn version(&self) -> &AddonVersion {
        &self.version
    }
}

/// The parsed index: chart name → versions, highest first.
#[derive(Debug, Default)]
struct HelmIndex {
    charts: BTreeMap<String, Vec<ChartVersion>>,
}

type Files = BTreeMap<String, Vec<u8>>;

/// Reads addons from a Helm chart repository.
#[derive(Clone)]
pub struct HelmReader {
    inner: Arc<Inner>,
}

struct Inner {
    registry: String,
    /// The repository URL, ending in `/`, without credentials.
    base: Url,
    http: HttpClient,
    cache: DiskCache,
    index: OnceCell<HelmIndex>,
    archives: Mutex<HashMap<String, Arc<OnceCell<Arc<Files>>>>>,
}

impl fmt::Debug for HelmReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HelmReader")
            .field("registry", &self.inner.registry)
            .field("url", &self.inner.base.as_str())
            .finish_non_exhaustive()
    }
}

impl fmt::Display for HelmReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Helm repository `{}`", self.inner.base)
    }
}

impl HelmReader {
    /// The reader of a stored Helm registry: its TLS settings, and basic auth (user name) or a
    /// bearer token.
    pub fn from_spec(
        spec: &RegistrySpec,
        credentials: &Credentials,
        options: &OpenOptions,
    ) -> Result<Self> {
        let mut http = options.http_for(spec);
        http.auth = match (
            &credentials.username,
            &credentials.password,
            &credentials.token,
        ) {
            (Some(username), password, _) => Auth::Basic {
                username: username.clone(),
                password: password.clone().unwrap_or_else(|| SecretString::from("")),
            },
            (None, _, Some(token)) => Auth::Bearer(token.clone()),
            _ => Auth::None,
        };
        Self::new(&spec.name, &spec.endpoint, http, &options.cache)
    }

    /// A reader of the repository at `url` (the directory holding `index.yaml`; a URL ending in
    /// `/index.yaml` is accepted too). Credentials embedded in the URL are used as basic auth
    /// when `http.auth` is [`Auth::None`].
    pub fn new(
        registry: &str,
        url: &str,
        mut http: HttpOptions,
        cache: &CacheOptions,
    ) -> Result<Self> {
        let mut base = Url::parse(url.trim()).map_err(|e| Error::InvalidContent {
            registry: registry.to_owned(),
            message: format!("`{}` is not a valid URL: {e}", redact(url)),
        })?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(Error::InvalidContent {
                registry: registry.to_owned(),
                message: format!(
                    "a Helm repository URL must be http or https, not `{}`",
                    base.scheme()
                ),
            });
        }
        if !base.username().is_empty() && matches!(http.auth, Auth::None) {
            http.auth = Auth::Basic {
                username: percent_decode(base.username()),
                password: percent_decode(base.password().unwrap_or_default()).into(),
            };
        }
        let _ = base.set_username("");
        let _ = base.set_password(None);
        base.set_query(None);
        base.set_fragment(None);
        let path = base.path().to_owned();
        let path = path.strip_suffix("index.yaml").unwrap_or(&path).to_owned();
        base.set_path(&if path.ends_with('/') {
            path
        } else {
            format!("{path}/")
        });
        http.credentials_origin = Some(base.to_string());
        let client = HttpClient::new(registry, http)?;
        Ok(HelmReader {
            inner: Arc::new(Inner {
                registry: registry.to_owned(),
                cache: DiskCache::new(cache, "registries", base.as_str()),
                base,
                http: client,
                index: OnceCell::new(),
                archives: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The HTTP client (for its request counter).
    pub fn http(&self) -> &HttpClient {
        &self.inner.http
    }

    /// The repository URL (ending in `/`, without credentials).
    pub fn url(&self) -> &str {
        self.inner.base.as_str()
    }

    async fn index(&self) -> Result<&HelmIndex> {
        self.inner
            .index
            .get_or_try_init(|| self.inner.fetch_index())
            .await
    }

    /// Finds the version of an addon a reference means.
    async fn chart(&self, addon: &AddonRef) -> Result<&ChartVersion> {
        let index = self.index().await?;
        let versions = index
            .charts
            .get(&addon.name)
            .ok_or_else(|| self.inner.not_found(format!("addon `{}`", addon.name)))?;
        serve_version(&addon.name, versions, addon.version.as_deref())
            .map_err(|what| self.inner.not_found(what))
    }

    /// The files of an addon version, downloading its archive once.
    async fn files(&self, addon: &AddonRef) -> Result<Arc<Files>> {
        let chart = self.chart(addon).await?;
        let key = format!("{}@{}", addon.name, chart.version);
        let cell = {
            let mut archives = self
                .inner
                .archives
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            Arc::clone(archives.entry(key).or_default())
        };
        cell.get_or_try_init(|| self.inner.fetch_archive(&addon.name, chart))
            .await
            .cloned()
    }
}

impl Inner {
    fn not_found(&self, what: String) -> Error {
        Error::NotFound {
            registry: self.registry.clone(),
            what,
        }
    }

    fn invalid(&self, message: String) -> Error {
        Error::InvalidContent {
            registry: self.registry.clone(),
            message,
        }
    }

    /// `index.yaml`, revalidated against the cached copy. A cached copy is trusted only once it
    /// parses: a corrupt one (the server answered 304 to its `ETag`) is dropped and the index is
    /// fetched again without condition. Only an index that parses is stored.
    async fn fetch_index(&self) -> Result<HelmIndex> {
        let url = self
            .base
            .join("index.yaml")
            .map_err(|e| self.invalid(format!("cannot build the index URL: {e}")))?;
        let cached = self.cache.load("index.yaml");
        let response = self.get_index(&url, cached.as_ref()).await?;
        if response.not_modified() {
            let Some(entry) = cached else {
                return Err(self.invalid(
                    "the server answered 304 Not Modified to an unconditional request".to_owned(),
                ));
            };
            match self.parse_index(&entry.body) {
                Ok(index) => {
                    tracing::debug!(registry = %self.registry, "index.yaml not modified; using the cache");
                    return Ok(index);
                }
                Err(e) => {
                    tracing::debug!(registry = %self.registry, "the cached index.yaml is unusable ({e}); fetching it again");
                    self.cache.remove("index.yaml");
                }
            }
            let response = self.get_index(&url, None).await?;
            if response.not_modified() {
                return Err(self.invalid(
                    "the server answered 304 Not Modified to an unconditional request".to_owned(),
                ));
            }
            return self.keep_index(response);
        }
        self.keep_index(response)
    }

    /// Parses a fresh `index.yaml` and caches it when it parses and has validators.
    fn keep_index(&self, response: crate::source::http::Response) -> Result<HelmIndex> {
        let index = self.parse_index(&response.body)?;
        let entry = CachedEntry {
            etag: response.header("etag").map(str::to_owned),
            last_modified: response.header("last-modified").map(str::to_owned),
            body: response.body,
        };
        if entry.etag.is_some() || entry.last_modified.is_some() {
            self.cache.store("index.yaml", &entry);
        }
        Ok(index)
    }

    /// `GET index.yaml`, conditional on `cached`'s validators when given.
    async fn get_index(
        &self,
        url: &Url,
        cached: Option<&CachedEntry>,
    ) -> Result<crate::source::http::Response> {
        let mut conditional: Vec<(&str, &str)> = Vec::new();
        if let Some(entry) = cached {
            if let Some(etag) = &entry.etag {
                conditional.push(("if-none-match", etag));
            }
            if let Some(modified) = &entry.last_modified {
                conditional.push(("if-modified-since", modified));
            }
        }
        self.http
            .get(url.as_str(), &conditional)
            .await
            .map_err(|e| match e {
                Error::NotFound { registry, .. } => Error::NotFound {
                    registry,
                    what: format!(
                        "`index.yaml` at `{}` (is this a Helm repository URL?)",
                        self.base
                    ),
                },
                other => other,
            })
    }

    fn parse_index(&self, body: &[u8]) -> Result<HelmIndex> {
        let text = std::str::from_utf8(body)
            .map_err(|_| self.invalid("`index.yaml` is not valid UTF-8".to_owned()))?;
        let (value, warnings) = crate::yaml::parse_single(text)
            .map_err(|e| self.invalid(format!("`index.yaml` is not valid YAML: {e}")))?;
        for warning in warnings {
            tracing::warn!(registry = %self.registry, "index.yaml: {warning}");
        }
        let entries = match value.get("entries") {
            Some(Value::Object(entries)) => entries,
            Some(Value::Null) => return Ok(HelmIndex::default()),
            _ => {
                return Err(self.invalid(
                    "`index.yaml` has no `entries` mapping; is this a Helm repository?".to_owned(),
                ))
            }
        };
        let mut charts = BTreeMap::new();
        for (name, versions) in entries {
            let Some(list) = versions.as_array() else {
                tracing::warn!(registry = %self.registry, "index.yaml: `{name}` is not a list of versions; skipped");
                continue;
            };
            let mut parsed: Vec<ChartVersion> = list
                .iter()
                .filter_map(|v| {
                    let version = match v.get("version") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Number(n)) => n.to_string(),
                        _ => {
                            tracing::warn!(registry = %self.registry, "index.yaml: a version of `{name}` has no `version`; skipped");
                            return None;
                        }
                    };
                    let urls: Vec<String> = v
                        .get("urls")
                        .and_then(Value::as_array)
                        .map(|u| u.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                        .unwrap_or_default();
                    if urls.is_empty() {
                        tracing::warn!(registry = %self.registry, "index.yaml: `{name}` {version} has no `urls`; skipped");
                        return None;
                    }
                    Some(ChartVersion {
                        version: AddonVersion::parse(&version),
                        urls,
                        digest: v.get("digest").and_then(Value::as_str).map(str::to_owned),
                        description: v
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        keywords: v
                            .get("keywords")
                            .and_then(Value::as_array)
                            .map(|k| {
                                k.iter()
                                    .filter_map(|s| s.as_str().map(str::to_owned))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                })
                .collect();
            if parsed.is_empty() {
                continue;
            }
            parsed.sort_by(|a, b| b.version.cmp(&a.version));
            parsed.dedup_by(|a, b| a.version == b.version);
            charts.insert(name.clone(), parsed);
        }
        Ok(HelmIndex { charts })
    }

    async fn fetch_archive(&self, name: &str, chart: &ChartVersion) -> Result<Arc<Files>> {
        let raw = &chart.urls[0];
        let url = self.base.join(raw).map_err(|e| {
            self.invalid(format!(
                "`{name}` {}: the chart URL `{}` is invalid: {e}",
                chart.version,
                redact(raw)
            ))
        })?;
        let file_name = url
            .path_segments()
            .and_then(Iterator::last)
            .unwrap_or("chart.tgz")
            .to_owned();
        let expected = chart
            .digest
            .as_deref()
            .map(|d| d.trim().trim_start_matches("sha256:").to_ascii_lowercase())
            .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()));
        // An archive with a digest never changes: the disk cache keeps it under the digest.
        let cache_key = expected.as_ref().map(|d| format!("chart-{d}.tgz"));
        let cached = cache_key
            .as_deref()
            .and_then(|k| self.cache.load(k))
            .map(|entry| entry.body)
            .filter(|body| Some(hex(&Sha256::digest(body))) == expected);
        let body = if let Some(body) = cached {
            tracing::debug!(registry = %self.registry, "`{file_name}` is cached");
            body
        } else {
            let response = self
                .http
                .get_limited(url.as_str(), &[], MAX_ARCHIVE_BYTES)
                .await?;
            if let Some(expected) = &chart.digest {
                let actual = hex(&Sha256::digest(&response.body));
                let expected = expected.trim().trim_start_matches("sha256:");
                if !actual.eq_ignore_ascii_case(expected) {
                    return Err(self.invalid(format!(
                        "`{file_name}` does not match the digest in `index.yaml` (sha256 {actual}, \
                         expected {expected})"
                    )));
                }
            }
            if let Some(key) = &cache_key {
                self.cache.store(
                    key,
                    &CachedEntry {
                        body: response.body.clone(),
                        ..CachedEntry::default()
                    },
                );
            }
            response.body
        };
        let registry = self.registry.clone();
        let files = tokio::task::spawn_blocking(move || {
            archive::read_tgz(&registry, &file_name, &body, &ArchiveLimits::default())
        })
        .await
        .map_err(|e| Error::Backend {
            registry: self.registry.clone(),
            message: format!("unpacking failed: {e}"),
            source: None,
        })??;
        Ok(Arc::new(
            files
                .into_iter()
                .filter(|(path, _)| !HELM_FILES.contains(&path.as_str()))
                .collect(),
        ))
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[async_trait]
impl AsyncReader for HelmReader {
    fn registry(&self) -> &str {
        &self.inner.registry
    }

    async fn list_addons(&self) -> Result<Vec<AddonSummary>> {
        let index = self.index().await?;
        Ok(index
            .charts
            .iter()
            .map(|(name, versions)| {
                summarize(
                    name,
                    versions,
                    |v| v.description.clone(),
                    |v| v.keywords.clone(),
                )
            })
            .collect())
    }

    async fn list_files(&self, addon: &AddonRef) -> Result<Vec<FileEntry>> {
        let files = self.files(addon).await?;
        Ok(FileEntry::listing(files.iter()))
    }

    async fn read_file(&self, addon: &AddonRef, path: &str) -> Result<Vec<u8>> {
        check_relative_path(&self.inner.registry, path)?;
        let files = self.files(addon).await?;
        files.get(path).cloned().ok_or_else(|| {
            self.inner
                .not_found(format!("file `{path}` of addon `{addon}`"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::secret::ExposeSecret as _;

    fn reader() -> HelmReader {
        HelmReader::new(
            "r",
            "https://u:p%40ss@charts.example.invalid/sub/index.yaml",
            HttpOptions::default(),
            &CacheOptions {
                disabled: true,
                ..CacheOptions::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn the_repository_url_is_normalised_and_credentials_moved() {
        let r = reader();
        assert_eq!(r.url(), "https://charts.example.invalid/sub/");
        let Auth::Basic { username, password } = &r.http().options().auth else {
            panic!("basic auth from the URL");
        };
        assert_eq!(username, "u");
        assert_eq!(password.expose_secret(), "p@ss");
        assert!(!r.to_string().contains("p@ss"));
    }

    #[test]
    fn index_versions_are_sorted_and_broken_entries_skipped() {
        let r = reader();
        let index = r
            .inner
            .parse_index(
                b"apiVersion: v1\nentries:\n  a:\n  - version: 1.0.0\n    urls: [a-1.0.0.tgz]\n  \
                  - version: v1.2.0-rc.1\n    urls: [a-rc.tgz]\n  - version: 1.1.0\n    urls: \
                  [a-1.1.0.tgz]\n    description: newest\n  - urls: [x.tgz]\n  b: oops\n  c:\n  - \
                  version: 1.0.0\n",
            )
            .unwrap();
        let versions: Vec<_> = index.charts["a"]
            .iter()
            .map(|v| v.version.to_string())
            .collect();
        assert_eq!(versions, ["v1.2.0-rc.1", "1.1.0", "1.0.0"]);
        assert!(!index.charts.contains_key("b") && !index.charts.contains_key("c"));
        for bad in [b"entries: [1, 2]".as_slice(), b"{{{", b"\xff\xfe"] {
            assert!(matches!(
                r.inner.parse_index(bad),
                Err(Error::InvalidContent { .. })
            ));
        }
    }
}
