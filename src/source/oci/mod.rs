//! An OCI registry as a registry of addons, as KubeVela and Helm keep them: each addon a Helm
//! chart in repository `<prefix>/<addon>`, its tags the versions, and the chart
//! `<prefix>/kubevela-addon-catalog` holding `catalog.json`, the list of addons.
//!
//! - **Where.** `oci://host[:port]/prefix`, stored in `vela-addon-registry` as a `helm` entry
//!   with that URL (KubeVela's shape). HTTPS, or plain HTTP with the option `plainHttp=true`
//!   for a loopback registry (`plainHttp=remote` for any other host, asked for explicitly).
//! - **Listing.** The catalog chart first (its highest version: tags, manifest, archive — the
//!   archive kept on disk under its digest, so a warm listing is two requests); without one,
//!   `/v2/_catalog` under the prefix, each repository's tags, and each newest chart's config
//!   for its description.
//! - **Versions.** A tag is a version when it is strict semver as Helm reads it (`_` read back
//!   as `+`; no leading `v`); `latest`, `sha256-…` signature tags and other names are skipped.
//!   A version may also be a manifest digest (`addon@sha256:…`).
//! - **Pinned by digest.** A version is resolved to its manifest digest once per reader; the
//!   chart archive is fetched by digest and checked against its descriptor (size and sha256).
//!   [`OciReader::pinned`] tells what was read: repository, tag, version, manifest and chart
//!   digests, and how it was verified ([`verify`]).
//! - **Verification.** When a policy applies ([`verify::Policy`]), the manifest's cosign
//!   signatures are checked before any file is returned: `enforce` refuses an unverified
//!   chart with [`Error::Unverified`], `warn` logs and serves it.

pub mod client;
pub mod push;
pub mod verify;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::model::registry::{Credentials, RegistrySpec};
use crate::model::secret::ExposeSecret as _;
use crate::model::AddonVersion;
use crate::source::archive::{self, ArchiveLimits};
use crate::source::cache::{CacheOptions, CachedEntry, DiskCache};
use crate::source::http::{redact, Auth, HttpClient, HttpOptions};
use crate::source::{
    check_relative_path, serve_version, AddonRef, AddonSummary, AsyncReader, Error, FileEntry,
    IndexedVersion, OpenOptions, Result,
};

use client::{check_digest, Fetched, Login, OciClient, HELM_CHART};
pub use verify::{Mode, Policy, SecretKeys, Verification};

/// The repository (under the prefix) of KubeVela's catalog chart.
pub const CATALOG_CHART: &str = "kubevela-addon-catalog";
/// The file of the catalog chart listing the addons.
pub const CATALOG_FILE: &str = "catalog.json";
/// The largest chart archive downloaded (compressed).
pub const MAX_ARCHIVE_BYTES: u64 = 16 * 1024 * 1024;
/// The largest config blob read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// The option allowing plain HTTP.
pub const PLAIN_HTTP_OPTION: &str = "plainHttp";
/// The option naming a Docker config file to take credentials from.
pub const DOCKER_CONFIG_OPTION: &str = "dockerConfig";
/// The option naming a `kubernetes.io/dockerconfigjson` Secret (in the system namespace) to
/// take credentials from.
pub const DOCKER_CONFIG_SECRET_OPTION: &str = "dockerConfigSecret";

/// A tag read as a version (strict semver, `_` as `+`), else `None`.
pub fn tag_version(tag: &str) -> Option<semver::Version> {
    if tag.starts_with("sha256-") {
        return None;
    }
    semver::Version::parse(&tag.replace('_', "+")).ok()
}

/// The tag of a version (`+` written `_`, as Helm pushes it).
pub fn version_tag(version: &str) -> String {
    version.replace('+', "_")
}

/// `oci://host[:port]/prefix`, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `http(s)://host:port/`.
    pub base: Url,
    /// `host[:port]`.
    pub host: String,
    /// The repository prefix (no leading or trailing `/`; may be empty).
    pub prefix: String,
}

impl Location {
    /// Parses `endpoint`; `plain_http` is the option's value (`true`, `remote` or nothing).
    pub fn parse(registry: &str, endpoint: &str, plain_http: Option<&str>) -> Result<Self> {
        let invalid = |message: String| Error::InvalidContent {
            registry: registry.to_owned(),
            message,
        };
        let rest = endpoint.trim().strip_prefix("oci://").ok_or_else(|| {
            invalid(format!(
                "`{}` is not an OCI registry URL; write it as `oci://host[:port]/prefix`",
                redact(endpoint)
            ))
        })?;
        let (host, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let prefix = prefix.trim_matches('/').to_owned();
        let valid_prefix = prefix.split('/').all(|segment| {
            segment.is_empty() && prefix.is_empty()
                || !segment.is_empty()
                    && segment.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)
                    })
        });
        if host.is_empty() || host.contains('@') || !valid_prefix {
            return Err(invalid(format!(
                "`{}` is not a valid OCI registry URL: write `oci://host[:port]/prefix` (lowercase \
                 repository names, no credentials in the URL)",
                redact(endpoint)
            )));
        }
        let loopback = {
            let name = host.rsplit_once(':').map_or(host, |(h, p)| {
                if p.bytes().all(|b| b.is_ascii_digit()) && !h.ends_with(':') {
                    h
                } else {
                    host
                }
            });
            let name = name.trim_start_matches('[').trim_end_matches(']');
            name == "localhost"
                || name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        };
        let scheme = match plain_http.map(str::trim) {
            None | Some("" | "false") => "https",
            Some("true") if loopback => "http",
            Some("true") => {
                return Err(invalid(format!(
                    "plain HTTP is allowed for a loopback registry only; `{host}` is not one (set \
                     `--option plainHttp=remote` to send requests unencrypted anyway)"
                )))
            }
            Some("remote") => "http",
            Some(other) => {
                return Err(invalid(format!(
                    "`plainHttp={other}`: use `true` (loopback registries) or `remote`"
                )))
            }
        };
        let base = Url::parse(&format!("{scheme}://{host}/"))
            .map_err(|e| invalid(format!("`{}` is not a valid URL: {e}", redact(endpoint))))?;
        Ok(Location {
            base,
            host: host.to_owned(),
            prefix,
        })
    }

    /// The repository of `name` under the prefix.
    pub fn repository(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.prefix)
        }
    }

    /// `oci://host/prefix`.
    pub fn url(&self) -> String {
        if self.prefix.is_empty() {
            format!("oci://{}", self.host)
        } else {
            format!("oci://{}/{}", self.host, self.prefix)
        }
    }
}

pub use crate::model::provenance::Provenance as Pinned;

/// One version in the index of an addon.
#[derive(Debug, Clone)]
struct TagVersion {
    version: AddonVersion,
    tag: String,
}

impl IndexedVersion for TagVersion {
    fn version(&self) -> &AddonVersion {
        &self.version
    }
}

type Files = BTreeMap<String, Vec<u8>>;
/// The charts read, by addon name and reference (tag or digest).
type Charts = HashMap<(String, String), Arc<OnceCell<Arc<Chart>>>>;

struct Chart {
    files: Files,
    pinned: Pinned,
}

/// One entry of `catalog.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    /// The addon's name (its repository under the prefix).
    pub name: String,
    /// Its versions.
    #[serde(default)]
    pub versions: Vec<String>,
    /// The newest version's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The newest version's tags (keywords).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// `catalog.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Catalog {
    /// The addons.
    #[serde(default)]
    pub addons: Vec<CatalogEntry>,
}

/// How an [`OciReader`] is built.
#[derive(Debug, Clone, Default)]
pub struct OciOptions {
    /// HTTP settings (TLS, limits; `auth` is ignored: see `login`).
    pub http: HttpOptions,
    /// How to log in.
    pub login: Login,
    /// The `plainHttp` option.
    pub plain_http: Option<String>,
    /// The verification policy, when one applies.
    pub policy: Option<Arc<Policy>>,
}

/// Reads addons from an OCI registry.
#[derive(Clone)]
pub struct OciReader {
    inner: Arc<Inner>,
}

struct Inner {
    registry: String,
    location: Location,
    client: OciClient,
    cache: DiskCache,
    policy: Option<Arc<Policy>>,
    listing: OnceCell<Vec<AddonSummary>>,
    versions: Mutex<HashMap<String, Arc<OnceCell<Vec<TagVersion>>>>>,
    charts: Mutex<Charts>,
}

impl fmt::Debug for OciReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OciReader")
            .field("registry", &self.inner.registry)
            .field("url", &self.inner.location.url())
            .finish_non_exhaustive()
    }
}

impl fmt::Display for OciReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OCI registry `{}`", self.inner.location.url())
    }
}

/// The login `credentials` give, else the entry for `host` in the Docker config of the Secret
/// they were linked to, else in the Docker config file `file`.
pub fn login_for(
    registry: &str,
    host: &str,
    credentials: &Credentials,
    docker_config: Option<&str>,
) -> Result<Login> {
    match (
        &credentials.username,
        &credentials.password,
        &credentials.token,
    ) {
        (Some(username), Some(password), _) | (Some(username), None, Some(password)) => {
            return Ok(Login::Basic {
                username: username.clone(),
                password: password.clone(),
            })
        }
        (None, _, Some(token)) => return Ok(Login::Token(token.clone())),
        _ => {}
    }
    if let Some(config) = &credentials.docker_config {
        return verify::docker_config_login(registry, host, config.expose_secret());
    }
    let Some(file) = docker_config else {
        return Ok(Login::Anonymous);
    };
    let text = fs_err::read_to_string(file).map_err(|e| Error::InvalidContent {
        registry: registry.to_owned(),
        message: format!("cannot read the Docker config file `{file}`: {e}"),
    })?;
    verify::docker_config_login(registry, host, &text)
}

impl OciReader {
    /// The reader of a stored `oci` registry.
    pub fn from_spec(
        spec: &RegistrySpec,
        credentials: &Credentials,
        options: &OpenOptions,
    ) -> Result<Self> {
        let plain_http = spec.options.get(PLAIN_HTTP_OPTION).cloned();
        let location = Location::parse(&spec.name, &spec.endpoint, plain_http.as_deref())?;
        let login = login_for(
            &spec.name,
            &location.host,
            credentials,
            spec.options.get(DOCKER_CONFIG_OPTION).map(String::as_str),
        )?;
        let policy = verify::Policy::for_registry_with(&spec.name, &credentials.policy_keys)?;
        Self::new(
            &spec.name,
            &spec.endpoint,
            OciOptions {
                http: options.http_for(spec),
                login,
                plain_http,
                policy,
            },
            &options.cache,
        )
    }

    /// A reader of `endpoint` (`oci://host[:port]/prefix`).
    pub fn new(
        registry: &str,
        endpoint: &str,
        options: OciOptions,
        cache: &CacheOptions,
    ) -> Result<Self> {
        let location = Location::parse(registry, endpoint, options.plain_http.as_deref())?;
        let mut http = options.http;
        http.auth = Auth::None;
        http.headers.clear();
        http.credentials_origin = Some(location.base.to_string());
        let plain = location.base.scheme() == "http";
        let client = OciClient::new(
            registry,
            location.base.clone(),
            HttpClient::new(registry, http)?,
            options.login,
            plain,
        );
        Ok(OciReader {
            inner: Arc::new(Inner {
                registry: registry.to_owned(),
                cache: DiskCache::new(cache, "registries", &location.url()),
                location,
                client,
                policy: options.policy,
                listing: OnceCell::new(),
                versions: Mutex::new(HashMap::new()),
                charts: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The HTTP client (for its request counter).
    pub fn http(&self) -> &HttpClient {
        self.inner.client.http()
    }

    /// The protocol client.
    pub fn client(&self) -> &OciClient {
        &self.inner.client
    }

    /// Where the registry is.
    pub fn location(&self) -> &Location {
        &self.inner.location
    }

    /// What `addon` resolves to: pinned by digest, verified as the policy says.
    pub async fn pinned(&self, addon: &AddonRef) -> Result<Pinned> {
        Ok(self.chart(addon).await?.pinned.clone())
    }

    async fn versions(&self, name: &str) -> Result<Vec<TagVersion>> {
        let cell = {
            let mut versions = self
                .inner
                .versions
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            Arc::clone(versions.entry(name.to_owned()).or_default())
        };
        cell.get_or_try_init(|| async {
            let repository = self.inner.location.repository(name);
            let tags = self.inner.client.tags(&repository).await?;
            Ok::<_, Error>(versions_of(tags))
        })
        .await
        .cloned()
    }

    /// The chart an addon reference means, read once.
    async fn chart(&self, addon: &AddonRef) -> Result<Arc<Chart>> {
        let inner = &self.inner;
        let repository = inner.location.repository(&addon.name);
        // A digest, or a version named exactly, goes straight to its manifest; anything else
        // is chosen from the tags.
        let (reference, tag) = match addon.version.as_deref() {
            Some(digest) if digest.starts_with("sha256:") => {
                if !check_digest(digest) {
                    return Err(inner.invalid(format!("`{digest}` is not a sha256 digest")));
                }
                (digest.to_owned(), None)
            }
            Some(version) if tag_version(version).is_some() => {
                let tag = version_tag(version);
                (tag.clone(), Some(tag))
            }
            wanted => {
                let versions = self.versions(&addon.name).await.map_err(|e| match e {
                    Error::NotFound { registry, .. } => Error::NotFound {
                        registry,
                        what: format!("addon `{}`", addon.name),
                    },
                    other => other,
                })?;
                let chosen = serve_version(&addon.name, &versions, wanted)
                    .map_err(|what| inner.not_found(what))?;
                (chosen.tag.clone(), Some(chosen.tag.clone()))
            }
        };
        let cell = {
            let mut charts = inner.charts.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(
                charts
                    .entry((addon.name.clone(), reference.clone()))
                    .or_default(),
            )
        };
        cell.get_or_try_init(|| async {
            let manifest = match inner.client.manifest(&repository, &reference).await {
                Ok(manifest) => manifest,
                Err(Error::NotFound { .. }) if tag.is_some() => {
                    // Name what exists: the tags, as versions.
                    let versions = self.versions(&addon.name).await.map_err(|e| match e {
                        Error::NotFound { registry, .. } => Error::NotFound {
                            registry,
                            what: format!("addon `{}`", addon.name),
                        },
                        other => other,
                    })?;
                    let Err(what) = serve_version(&addon.name, &versions, addon.version.as_deref())
                    else {
                        return Err(
                            inner.not_found(format!("the manifest of `{repository}:{reference}`"))
                        );
                    };
                    return Err(inner.not_found(what));
                }
                Err(e) => return Err(e),
            };
            inner
                .read_chart(&addon.name, &repository, tag, manifest)
                .await
                .map(Arc::new)
        })
        .await
        .cloned()
    }
}

/// Tags as versions, highest first.
fn versions_of(tags: Vec<String>) -> Vec<TagVersion> {
    let mut versions: Vec<TagVersion> = tags
        .into_iter()
        .filter_map(|tag| {
            let version = tag_version(&tag)?;
            Some(TagVersion {
                version: AddonVersion::parse(&version.to_string()),
                tag,
            })
        })
        .collect();
    versions.sort_by(|a, b| b.version.cmp(&a.version));
    versions.dedup_by(|a, b| a.version == b.version);
    versions
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

    /// The chart layer of a manifest.
    fn chart_layer<'m>(
        &self,
        repository: &str,
        fetched: &'m Fetched,
    ) -> Result<&'m client::Descriptor> {
        let manifest = &fetched.manifest;
        if manifest.media_type.as_deref() == Some(client::OCI_INDEX)
            || !manifest.manifests.is_empty()
        {
            return Err(self.invalid(format!(
                "`{repository}@{}` is an image index, not a Helm chart",
                fetched.digest
            )));
        }
        let charts: Vec<&client::Descriptor> = manifest
            .layers
            .iter()
            .filter(|l| l.media_type == HELM_CHART)
            .collect();
        match charts.as_slice() {
            [one] => Ok(one),
            [] => Err(self.invalid(format!(
                "`{repository}@{}` holds no Helm chart layer (`{HELM_CHART}`); is it a chart?",
                fetched.digest
            ))),
            _ => Err(self.invalid(format!(
                "`{repository}@{}` holds more than one Helm chart layer",
                fetched.digest
            ))),
        }
    }

    /// A blob, from the disk cache (content-addressed, checked again) or the registry.
    async fn cached_blob(
        &self,
        repository: &str,
        descriptor: &client::Descriptor,
        cap: u64,
    ) -> Result<Vec<u8>> {
        let key = format!("blob-{}", descriptor.digest.trim_start_matches("sha256:"));
        if let Some(entry) = self.cache.load(&key) {
            if client::sha256_digest(&entry.body) == descriptor.digest
                && entry.body.len() as u64 == descriptor.size
            {
                return Ok(entry.body);
            }
            self.cache.remove(&key);
        }
        let body = self.client.blob(repository, descriptor, cap).await?;
        self.cache.store(
            &key,
            &CachedEntry {
                body: body.clone(),
                ..CachedEntry::default()
            },
        );
        Ok(body)
    }

    /// Fetches, checks, verifies and unpacks the chart of a manifest.
    async fn read_chart(
        &self,
        name: &str,
        repository: &str,
        tag: Option<String>,
        fetched: Fetched,
    ) -> Result<Chart> {
        let layer = self.chart_layer(repository, &fetched)?.clone();
        // Verified before anything of the chart is read: `enforce` refuses here.
        let verification = match &self.policy {
            Some(policy) => {
                policy
                    .check(
                        &self.client,
                        &self.cache,
                        &self.registry,
                        repository,
                        name,
                        &fetched,
                    )
                    .await?
            }
            None => Verification::default(),
        };
        let body = self
            .cached_blob(repository, &layer, MAX_ARCHIVE_BYTES)
            .await?;
        let registry = self.registry.clone();
        let file_name = format!("{name}.tgz");
        let files = tokio::task::spawn_blocking(move || {
            archive::read_tgz(&registry, &file_name, &body, &ArchiveLimits::default())
        })
        .await
        .map_err(|e| Error::Backend {
            registry: self.registry.clone(),
            message: format!("unpacking failed: {e}"),
            source: None,
        })??;
        let mut files: Files = files.into_iter().collect();
        let chart_yaml = files.remove("Chart.yaml").ok_or_else(|| {
            self.invalid(format!(
                "`{repository}@{}` has no `Chart.yaml`",
                fetched.digest
            ))
        })?;
        let (chart, _) = std::str::from_utf8(&chart_yaml)
            .ok()
            .and_then(|text| crate::yaml::parse_single(text).ok())
            .ok_or_else(|| {
                self.invalid(format!("the `Chart.yaml` of `{repository}` is not YAML"))
            })?;
        let version = match chart.get("version") {
            Some(Value::String(v)) => v.clone(),
            _ => {
                return Err(self.invalid(format!(
                    "the `Chart.yaml` of `{repository}@{}` has no version",
                    fetched.digest
                )))
            }
        };
        if let Some(tag) = &tag {
            if tag_version(tag) != tag_version(&version) {
                return Err(self.invalid(format!(
                    "`{repository}:{tag}` holds chart version `{version}`; the tag and the chart \
                     disagree"
                )));
            }
        }
        Ok(Chart {
            files,
            pinned: Pinned {
                reference: format!("oci://{}/{repository}", self.location.host),
                tag,
                version,
                manifest_digest: fetched.digest,
                chart_digest: layer.digest,
                verification,
            },
        })
    }

    /// The catalog chart's `catalog.json`; `None` when the registry has no catalog chart.
    async fn catalog(&self) -> Result<Option<Catalog>> {
        let repository = self.location.repository(CATALOG_CHART);
        let tags = match self.client.tags(&repository).await {
            Ok(tags) => tags,
            Err(Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(newest) = versions_of(tags).into_iter().next() else {
            return Ok(None);
        };
        let fetched = self.client.manifest(&repository, &newest.tag).await?;
        let layer = self.chart_layer(&repository, &fetched)?.clone();
        let body = self
            .cached_blob(&repository, &layer, MAX_ARCHIVE_BYTES)
            .await?;
        let registry = self.registry.clone();
        let files = tokio::task::spawn_blocking(move || {
            archive::read_tgz(&registry, "catalog.tgz", &body, &ArchiveLimits::default())
        })
        .await
        .map_err(|e| Error::Backend {
            registry: self.registry.clone(),
            message: format!("unpacking failed: {e}"),
            source: None,
        })??;
        let json = files
            .into_iter()
            .find_map(|(path, bytes)| (path == CATALOG_FILE).then_some(bytes))
            .ok_or_else(|| {
                self.invalid(format!(
                    "the catalog chart `{repository}:{}` has no `{CATALOG_FILE}`",
                    newest.tag
                ))
            })?;
        serde_json::from_slice(&json).map(Some).map_err(|e| {
            self.invalid(format!(
                "`{CATALOG_FILE}` of `{repository}:{}` is not valid: {e}",
                newest.tag
            ))
        })
    }

    /// The listing without a catalog chart: `/v2/_catalog` under the prefix, then each
    /// repository's tags and newest chart's config.
    async fn listing_from_repositories(&self, reader: &OciReader) -> Result<Vec<AddonSummary>> {
        let prefix = if self.location.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", self.location.prefix)
        };
        let names: Vec<String> = self
            .client
            .repositories()
            .await?
            .into_iter()
            .filter_map(|r| r.strip_prefix(&prefix).map(str::to_owned))
            .filter(|n| !n.is_empty() && !n.contains('/') && n != CATALOG_CHART)
            .collect();
        let summaries = futures::future::join_all(names.iter().map(|name| async move {
            let versions = reader.versions(name).await?;
            let Some(default) =
                crate::source::choose_version(&versions, crate::source::Choice::Default)
            else {
                return Ok(None);
            };
            let repository = self.location.repository(name);
            let fetched = self.client.manifest(&repository, &default.tag).await?;
            let (description, tags) = match &fetched.manifest.config {
                Some(config) if config.media_type == client::HELM_CONFIG => {
                    let bytes = self
                        .client
                        .blob(&repository, config, MAX_CONFIG_BYTES)
                        .await?;
                    let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                    (
                        value
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        value
                            .get("keywords")
                            .and_then(Value::as_array)
                            .map(|k| {
                                k.iter()
                                    .filter_map(|s| s.as_str().map(str::to_owned))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    )
                }
                _ => (None, Vec::new()),
            };
            Ok::<_, Error>(Some(AddonSummary {
                name: name.clone(),
                versions: versions.iter().map(|v| v.version.to_string()).collect(),
                description,
                tags,
            }))
        }))
        .await;
        let mut listing = Vec::new();
        for summary in summaries {
            if let Some(summary) = summary? {
                listing.push(summary);
            }
        }
        listing.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(listing)
    }
}

#[async_trait]
impl AsyncReader for OciReader {
    fn registry(&self) -> &str {
        &self.inner.registry
    }

    async fn list_addons(&self) -> Result<Vec<AddonSummary>> {
        self.inner
            .listing
            .get_or_try_init(|| async {
                if let Some(catalog) = self.inner.catalog().await? {
                    let mut listing: Vec<AddonSummary> = catalog
                        .addons
                        .into_iter()
                        .filter(|entry| {
                            !entry.name.is_empty()
                                && entry.name.bytes().all(|b| {
                                    b.is_ascii_lowercase()
                                        || b.is_ascii_digit()
                                        || b"._-".contains(&b)
                                })
                        })
                        .filter_map(|entry| {
                            let versions = versions_of(
                                entry.versions.iter().map(|v| version_tag(v)).collect(),
                            );
                            (!versions.is_empty()).then(|| AddonSummary {
                                name: entry.name,
                                versions: versions.iter().map(|v| v.version.to_string()).collect(),
                                description: entry.description,
                                tags: entry.tags,
                            })
                        })
                        .collect();
                    listing.sort_by(|a, b| a.name.cmp(&b.name));
                    listing.dedup_by(|a, b| a.name == b.name);
                    return Ok(listing);
                }
                self.inner.listing_from_repositories(self).await
            })
            .await
            .cloned()
    }

    async fn list_files(&self, addon: &AddonRef) -> Result<Vec<FileEntry>> {
        let chart = self.chart(addon).await?;
        Ok(FileEntry::listing(&chart.files))
    }

    async fn provenance(&self, addon: &AddonRef) -> Result<Option<Pinned>> {
        self.pinned(addon).await.map(Some)
    }

    async fn read_file(&self, addon: &AddonRef, path: &str) -> Result<Vec<u8>> {
        check_relative_path(&self.inner.registry, path)?;
        let chart = self.chart(addon).await?;
        chart.files.get(path).cloned().ok_or_else(|| {
            self.inner
                .not_found(format!("file `{path}` of addon `{addon}`"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_read_as_strict_semver() {
        assert_eq!(
            tag_version("1.0.0_build.1").unwrap().to_string(),
            "1.0.0+build.1"
        );
        for skipped in ["v1.2.0", "latest", "1.0", "sha256-abc.sig", "sha256-1.0.0"] {
            assert!(tag_version(skipped).is_none(), "{skipped}");
        }
        let versions = versions_of(
            [
                "0.9.0",
                "v1.2.0",
                "1.0.0_build.1",
                "latest",
                "1.1.0-rc.1",
                "sha256-x.sig",
            ]
            .map(str::to_owned)
            .to_vec(),
        );
        let shown: Vec<String> = versions
            .iter()
            .map(|v| format!("{}={}", v.version, v.tag))
            .collect();
        assert_eq!(
            shown,
            [
                "1.1.0-rc.1=1.1.0-rc.1",
                "1.0.0+build.1=1.0.0_build.1",
                "0.9.0=0.9.0"
            ]
        );
        assert_eq!(version_tag("1.0.0+build.1"), "1.0.0_build.1");
    }

    #[test]
    fn locations_are_parsed_and_plain_http_kept_to_loopback() {
        let l = Location::parse("r", "oci://127.0.0.1:5000/addons/team/", Some("true")).unwrap();
        assert_eq!(l.base.as_str(), "http://127.0.0.1:5000/");
        assert_eq!(l.prefix, "addons/team");
        assert_eq!(l.repository("a"), "addons/team/a");
        assert_eq!(l.url(), "oci://127.0.0.1:5000/addons/team");
        let l = Location::parse("r", "oci://registry.example.invalid", None).unwrap();
        assert_eq!(l.base.as_str(), "https://registry.example.invalid/");
        assert_eq!(l.repository("a"), "a");
        assert!(Location::parse("r", "oci://registry.example.invalid/x", Some("true")).is_err());
        assert_eq!(
            Location::parse("r", "oci://registry.example.invalid/x", Some("remote"))
                .unwrap()
                .base
                .scheme(),
            "http"
        );
        for bad in [
            "https://h/x",
            "oci://",
            "oci://u:p@h/x",
            "oci://h/Upper",
            "oci://h/a//b",
        ] {
            assert!(Location::parse("r", bad, None).is_err(), "{bad}");
        }
        assert!(Location::parse("r", "oci://localhost:5000/x", Some("true")).is_ok());
        assert!(Location::parse("r", "oci://[::1]:5000/x", Some("true")).is_ok());
    }
}
