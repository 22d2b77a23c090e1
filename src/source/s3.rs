//! A registry in an S3 bucket, or in any S3-compatible store (Alibaba OSS, MinIO, …).
//!
//! The bucket (below an optional prefix) holds either one addon (`metadata.yaml` at the top), a
//! directory per addon (`<name>/metadata.yaml`), or a directory per addon and version
//! (`<name>/<version>/metadata.yaml`); the last layout reports every version.
//!
//! Expected flow: one `ListObjectsV2` walk of the prefix (every page, following continuation
//! tokens, so there is no 1,000-key limit), then one `GetObject` per addon for its
//! `metadata.yaml` (at most [`S3Options::concurrency`] at a time). The listing and those metadata
//! files are kept in memory for the life of the reader; every other file is fetched when read.
//!
//! With a disk cache ([`S3Reader::with_cache`]), every object downloaded is kept under the `ETag`
//! the listing gave it (modification time and size for a store that lists no `ETag`s); the next
//! run lists the bucket again and downloads only the objects whose listed `ETag` differs (the
//! listing alone, one request per 1,000 keys, when nothing changed). `--refresh` downloads
//! everything again.
//!
//! Guarantees: anonymous access (no credentials) sends unsigned requests; a file over
//! [`MAX_FILE_SIZE`] is refused before it is downloaded (and again while reading, should the
//! listing have lied); failures map onto [`Error`]'s semantic variants and never carry the secret
//! key. Listings without the S3 XML namespace (as OSS returns them) parse as well: the SDK's
//! decoder matches element names without looking at namespaces.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region, SharedHttpClient};
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use futures::{StreamExt, TryStreamExt};
use tokio::sync::{OnceCell, Semaphore};

use crate::model::registry::{Credentials as RegistryCredentials, RegistrySpec};
use crate::model::secret::{masked, ExposeSecret as _, SecretString};
use crate::model::{AddonMeta, AddonVersion};
use crate::source::cache::{key_hash, CacheOptions, CachedEntry, DiskCache};
use crate::source::OpenOptions;
use crate::source::{
    check_relative_path, serve_version, AddonRef, AddonSummary, AsyncReader, Error, FileEntry,
    IndexedVersion, Result, MAX_FILES_PER_ADDON, MAX_FILE_SIZE,
};

mod layout;

use layout::{files_below, Candidate, Layout};

/// The most keys one listing may return before the reader gives up (a runaway prefix).
pub const MAX_KEYS: usize = 200_000;

/// How to reach a bucket.
#[derive(Clone)]
pub struct S3Options {
    /// The service endpoint, e.g. `https://s3.eu-west-1.example.com` or an OSS endpoint.
    pub endpoint: String,
    /// The signing region (any value works for most S3-compatible stores).
    pub region: String,
    /// The bucket.
    pub bucket: String,
    /// The directory inside the bucket that holds the registry (`""` for the whole bucket).
    pub prefix: String,
    /// Path-style addressing (`endpoint/bucket/key`) instead of virtual-host style
    /// (`bucket.endpoint/key`).
    pub path_style: bool,
    /// Access key and secret; `None` for a public bucket (requests are then not signed).
    pub credentials: Option<S3Credentials>,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Time allowed for one request, body included, across retries.
    pub request_timeout: Duration,
    /// How many requests may run at once.
    pub concurrency: usize,
    /// The disk cache of objects across runs; off unless set (a stored registry gets the run's
    /// cache settings).
    pub cache: CacheOptions,
}

impl S3Options {
    /// Options for `bucket` at `endpoint`: anonymous, virtual-host style, region `us-east-1`,
    /// 10 s to connect, 60 s per request, 8 requests at a time.
    pub fn new(endpoint: impl Into<String>, bucket: impl Into<String>) -> Self {
        S3Options {
            endpoint: endpoint.into(),
            region: "us-east-1".to_owned(),
            bucket: bucket.into(),
            prefix: String::new(),
            path_style: false,
            credentials: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            concurrency: 8,
            cache: CacheOptions::off(),
        }
    }

    /// The SDK configuration for these options, with the default HTTPS client (rustls).
    pub fn sdk_config(&self) -> aws_sdk_s3::Config {
        // The smithy connector sets TCP_NODELAY on every connection by default
        // (`ConnectorBuilder::enable_tcp_nodelay`, true unless turned off).
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        self.sdk_config_with_http_client(http)
    }

    /// The SDK configuration for these options over a given HTTP client (a custom DNS resolver,
    /// a proxy, a test transport).
    pub fn sdk_config_with_http_client(&self, http: SharedHttpClient) -> aws_sdk_s3::Config {
        let mut builder = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .http_client(http)
            .endpoint_url(self.endpoint.trim_end_matches('/'))
            .region(Region::new(self.region.clone()))
            .force_path_style(self.path_style)
            .retry_config(RetryConfig::standard().with_max_attempts(3))
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(self.connect_timeout)
                    .operation_timeout(self.request_timeout)
                    .build(),
            );
        match &self.credentials {
            Some(c) => {
                builder = builder.credentials_provider(Credentials::new(
                    c.access_key_id.clone(),
                    c.secret_access_key.expose_secret(),
                    None,
                    None,
                    "addonctl-registry",
                ));
            }
            None => builder = builder.allow_no_auth(),
        }
        builder.build()
    }
}

impl fmt::Debug for S3Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Options")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("path_style", &self.path_style)
            .field("credentials", &self.credentials)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("concurrency", &self.concurrency)
            .field("cache", &self.cache)
            .finish()
    }
}

/// An access key pair. `Debug` shows the key id only.
#[derive(Clone)]
pub struct S3Credentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: SecretString,
}

impl fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &masked(Some(&self.secret_access_key)))
            .finish()
    }
}

/// Reads addons from a bucket.
#[derive(Debug, Clone)]
pub struct S3Reader {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: aws_sdk_s3::Client,
    bucket: String,
    /// The prefix, empty or ending in `/`.
    prefix: String,
    registry: String,
    concurrency: usize,
    permits: Semaphore,
    listing: OnceCell<Listing>,
    cache: DiskCache,
}

/// What the bucket holds, built once.
#[derive(Debug, Default)]
struct Listing {
    addons: BTreeMap<String, Addon>,
    /// Key (relative to the prefix) → what tells its version apart, as listed.
    etags: BTreeMap<String, String>,
}

/// What one listing page says of the objects below the prefix.
#[derive(Debug, Default)]
struct Keys {
    /// Key (relative to the prefix) → size.
    sizes: BTreeMap<String, u64>,
    /// Key (relative to the prefix) → its `ETag` (or modification time and size, for a store
    /// that lists no `ETag`s).
    etags: BTreeMap<String, String>,
}

#[derive(Debug)]
struct Addon {
    /// Highest first.
    versions: Vec<Version>,
    description: Option<String>,
    tags: Vec<String>,
}

impl IndexedVersion for Version {
    fn version(&self) -> &AddonVersion {
        &self.number
    }
}

#[derive(Debug)]
struct Version {
    number: AddonVersion,
    /// The addon version's directory relative to the prefix (`""` or ending in `/`).
    dir: String,
    /// Files relative to `dir`, with sizes.
    files: BTreeMap<String, u64>,
    /// `metadata.yaml`, when it was fetched for the listing.
    metadata: Option<Vec<u8>>,
}

impl S3Reader {
    /// The reader of a stored S3 or OSS registry: bucket, prefix, region, path style and the
    /// access key (user name) and secret (password).
    pub fn from_spec(
        spec: &RegistrySpec,
        credentials: &RegistryCredentials,
        options: &OpenOptions,
    ) -> Result<Self> {
        let bucket = spec.bucket.clone().ok_or_else(|| Error::InvalidContent {
            registry: spec.name.clone(),
            message: "an S3/OSS registry needs `--bucket`".to_owned(),
        })?;
        let mut s3 = S3Options::new(spec.endpoint.clone(), bucket);
        if let Some(path) = &spec.path {
            s3.prefix.clone_from(path);
        }
        if let Some(region) = spec.options.get("region") {
            s3.region.clone_from(region);
        }
        if let Some(path_style) = spec.options.get("pathStyle") {
            s3.path_style = path_style == "true";
        }
        if let (Some(id), Some(secret)) = (&credentials.username, &credentials.password) {
            s3.credentials = Some(S3Credentials {
                access_key_id: id.clone(),
                secret_access_key: secret.clone(),
            });
        }
        s3.cache = options.cache.clone();
        Ok(Self::from_options(&s3, spec.name.clone()))
    }

    /// A reader over `bucket` (below `prefix`) through an SDK client the caller built.
    pub fn new(
        client: aws_sdk_s3::Client,
        bucket: impl Into<String>,
        prefix: &str,
        registry: impl Into<String>,
    ) -> Self {
        Self::with_concurrency(client, bucket, prefix, registry, 8)
    }

    /// Like [`S3Reader::new`] with a bound on concurrent requests.
    pub fn with_concurrency(
        client: aws_sdk_s3::Client,
        bucket: impl Into<String>,
        prefix: &str,
        registry: impl Into<String>,
        concurrency: usize,
    ) -> Self {
        let prefix = prefix.trim_matches('/');
        S3Reader {
            inner: Arc::new(Inner {
                client,
                bucket: bucket.into(),
                prefix: if prefix.is_empty() {
                    String::new()
                } else {
                    format!("{prefix}/")
                },
                registry: registry.into(),
                concurrency: concurrency.max(1),
                permits: Semaphore::new(concurrency.max(1)),
                listing: OnceCell::new(),
                cache: DiskCache::disabled(),
            }),
        }
    }

    /// The same reader keeping objects in a disk cache across runs, under their `ETag`s: the
    /// next run lists the bucket (one request per 1,000 keys) and downloads only the objects
    /// whose `ETag` changed. `endpoint` tells buckets of the same name on different services
    /// apart. Nothing read so far is kept.
    #[must_use]
    pub fn with_cache(self, cache: &CacheOptions, endpoint: &str) -> Self {
        let inner = &self.inner;
        let identity = format!("s3 {endpoint} {} {}", inner.bucket, inner.prefix);
        S3Reader {
            inner: Arc::new(Inner {
                client: inner.client.clone(),
                bucket: inner.bucket.clone(),
                prefix: inner.prefix.clone(),
                registry: inner.registry.clone(),
                concurrency: inner.concurrency,
                permits: Semaphore::new(inner.concurrency),
                listing: OnceCell::new(),
                cache: DiskCache::new(cache, "registries", &identity),
            }),
        }
    }

    /// A reader built from options (the SDK client is made here).
    pub fn from_options(options: &S3Options, registry: impl Into<String>) -> Self {
        let client = aws_sdk_s3::Client::from_conf(options.sdk_config());
        Self::with_concurrency(
            client,
            options.bucket.clone(),
            &options.prefix,
            registry,
            options.concurrency,
        )
        .with_cache(&options.cache, &options.endpoint)
    }

    async fn listing(&self) -> Result<&Listing> {
        self.inner
            .listing
            .get_or_try_init(|| self.inner.build_listing())
            .await
    }
}

impl Inner {
    fn not_found(&self, what: String) -> Error {
        Error::NotFound {
            registry: self.registry.clone(),
            what,
        }
    }

    /// Every key below the prefix (relative to it) with its size and `ETag`, over all pages.
    async fn list_keys(&self) -> Result<Keys> {
        let mut keys = Keys::default();
        let mut token: Option<String> = None;
        loop {
            let mut request = self.client.list_objects_v2().bucket(&self.bucket);
            if !self.prefix.is_empty() {
                request = request.prefix(&self.prefix);
            }
            if let Some(t) = &token {
                request = request.continuation_token(t);
            }
            let page = {
                let _permit = self.permits.acquire().await.map_err(|e| {
                    backend(&self.registry, "the reader was shut down".to_owned(), e)
                })?;
                request
                    .send()
                    .await
                    .map_err(|e| self.sdk_error(e, "the bucket listing"))?
            };
            for object in page.contents() {
                let Some(key) = object.key() else { continue };
                let Some(rel) = key.strip_prefix(&self.prefix) else {
                    continue;
                };
                // Directory markers and hidden entries are not files of an addon.
                if rel.is_empty()
                    || rel.ends_with('/')
                    || rel.split('/').any(|s| s.starts_with('.'))
                {
                    continue;
                }
                let size = object
                    .size()
                    .and_then(|s| u64::try_from(s).ok())
                    .unwrap_or(0);
                keys.sizes.insert(rel.to_owned(), size);
                // What tells this version of the object from another: its `ETag`, else (a
                // store that lists none) its modification time and size.
                let validator = match (object.e_tag(), object.last_modified()) {
                    (Some(etag), _) => Some(etag.to_owned()),
                    (None, Some(modified)) => Some(format!("modified {modified} size {size}")),
                    (None, None) => None,
                };
                if let Some(validator) = validator {
                    keys.etags.insert(rel.to_owned(), validator);
                }
                if keys.sizes.len() > MAX_KEYS {
                    return Err(Error::InvalidContent {
                        registry: self.registry.clone(),
                        message: format!(
                            "the bucket holds more than {MAX_KEYS} objects below `{}`",
                            self.prefix
                        ),
                    });
                }
            }
            let next = page
                .next_continuation_token()
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            if page.is_truncated() == Some(true) && next.is_none() {
                return Err(Error::InvalidContent {
                    registry: self.registry.clone(),
                    message: "the bucket listing is truncated but carries no continuation token"
                        .to_owned(),
                });
            }
            match next {
                Some(next) if token.as_deref() == Some(next.as_str()) => {
                    return Err(Error::InvalidContent {
                        registry: self.registry.clone(),
                        message: "the bucket listing repeats the same continuation token"
                            .to_owned(),
                    });
                }
                Some(next) => token = Some(next),
                None => break,
            }
        }
        Ok(keys)
    }

    async fn build_listing(&self) -> Result<Listing> {
        let Keys { sizes: keys, etags } = self.list_keys().await?;
        let layout = Layout::detect(&keys);
        let keys_ref = &keys;
        let etags_ref = &etags;
        // Fetch the metadata of every addon (the newest version of versioned ones), bounded.
        let fetched: Vec<(String, Candidate, Vec<u8>)> =
            futures::stream::iter(layout.candidates.into_iter().map(
                |(name, candidate)| async move {
                    let newest = &candidate.versions[0];
                    let key = format!("{}metadata.yaml", newest.0);
                    let size = keys_ref.get(&key).copied().unwrap_or(0);
                    let etag = etags_ref.get(&key).map(String::as_str);
                    let bytes = self.get_object(&key, size, etag).await?;
                    Ok::<_, Error>((name, candidate, bytes))
                },
            ))
            .buffer_unordered(16)
            .try_collect()
            .await?;

        let mut listing = Listing::default();
        let mut fetched = fetched;
        listing.etags.clone_from(&etags);
        fetched.sort_by(|a, b| a.0.cmp(&b.0));
        for (dir_name, candidate, bytes) in fetched {
            let shown = candidate.versions[0].0.clone();
            let meta = match std::str::from_utf8(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|text| AddonMeta::parse(text).map_err(|e| e.to_string()))
            {
                Ok((meta, _)) => meta,
                Err(e) => {
                    tracing::warn!(registry = %self.registry, "skipping `{shown}`: {e}");
                    continue;
                }
            };
            let name = if candidate.versioned {
                if meta.name != dir_name {
                    tracing::warn!(
                        registry = %self.registry,
                        "`{shown}metadata.yaml` names the addon `{}`; using the directory name `{dir_name}`",
                        meta.name
                    );
                }
                dir_name
            } else {
                meta.name.clone()
            };
            if listing.addons.contains_key(&name) {
                tracing::warn!(registry = %self.registry, "addon `{name}` appears twice; skipping `{shown}`");
                continue;
            }
            let mut versions = Vec::new();
            for (index, (dir, version)) in candidate.versions.into_iter().enumerate() {
                let files = files_below(&keys, &dir);
                let version = if candidate.versioned {
                    AddonVersion::parse(&version)
                } else {
                    meta.version.clone()
                };
                versions.push(Version {
                    number: version,
                    dir,
                    files,
                    metadata: (index == 0).then(|| bytes.clone()),
                });
            }
            listing.addons.insert(
                name,
                Addon {
                    versions,
                    description: meta.description.clone(),
                    tags: meta.tags.clone(),
                },
            );
        }
        Ok(listing)
    }

    /// One object: from the disk cache when it holds the object under the validator the listing
    /// gave (its `ETag`, or modification time and size), else downloaded and cached under it.
    async fn get_object(&self, key: &str, listed_size: u64, etag: Option<&str>) -> Result<Vec<u8>> {
        if listed_size > MAX_FILE_SIZE {
            return Err(self.too_large(key, listed_size));
        }
        let cache_key = format!("object-{}", key_hash(key));
        if let Some(etag) = etag {
            if let Some(entry) = self.cache.load(&cache_key) {
                if entry.etag.as_deref() == Some(etag) && entry.body.len() as u64 <= MAX_FILE_SIZE {
                    return Ok(entry.body);
                }
            }
        }
        let bytes = self.download_object(key).await?;
        if let (Some(etag), Some(_)) = (etag, self.cache.dir()) {
            self.cache.store(
                &cache_key,
                &CachedEntry {
                    body: bytes.clone(),
                    etag: Some(etag.to_owned()),
                    last_modified: None,
                },
            );
        }
        Ok(bytes)
    }

    /// Downloads one object, refusing it when it turns out to be over the size limit.
    async fn download_object(&self, key: &str) -> Result<Vec<u8>> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| backend(&self.registry, "the reader was shut down".to_owned(), e))?;
        let output = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(format!("{}{key}", self.prefix))
            .send()
            .await
            .map_err(|e| self.sdk_error(e, &format!("`{key}`")))?;
        if let Some(length) = output.content_length().and_then(|l| u64::try_from(l).ok()) {
            if length > MAX_FILE_SIZE {
                return Err(self.too_large(key, length));
            }
        }
        let mut body = output.body;
        let mut bytes = Vec::new();
        while let Some(chunk) = body.try_next().await.map_err(|e| {
            backend(
                &self.registry,
                format!("reading `{key}` failed: {}", DisplayErrorContext(&e)),
                e,
            )
        })? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > MAX_FILE_SIZE {
                return Err(self.too_large(key, bytes.len() as u64));
            }
        }
        Ok(bytes)
    }

    fn too_large(&self, key: &str, size: u64) -> Error {
        Error::TooLarge {
            registry: self.registry.clone(),
            path: key.to_owned(),
            size,
            limit: MAX_FILE_SIZE,
        }
    }

    /// Maps an SDK failure onto the semantic variants. `what` names the object, already quoted.
    fn sdk_error<E>(
        &self,
        err: SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
        what: &str,
    ) -> Error
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let status = err.raw_response().map(|r| r.status().as_u16());
        let code = err.code().unwrap_or_default().to_owned();
        let message = err.message().unwrap_or_default().to_owned();
        let detail = match (code.is_empty(), message.is_empty()) {
            (false, false) => format!("{code}: {message}"),
            (false, true) => code.clone(),
            (true, false) => message.clone(),
            (true, true) => status.map_or_else(String::new, |s| format!("HTTP {s}")),
        };
        let registry = self.registry.clone();
        match (status, code.as_str()) {
            (_, "NoSuchBucket") => Error::NotFound {
                registry,
                what: format!("bucket `{}`", self.bucket),
            },
            (_, "NoSuchKey") | (Some(404), _) => Error::NotFound {
                registry,
                what: what.to_owned(),
            },
            (
                _,
                "AccessDenied"
                | "InvalidAccessKeyId"
                | "SignatureDoesNotMatch"
                | "ExpiredToken"
                | "InvalidToken"
                | "AllAccessDisabled",
            )
            | (Some(401 | 403), _) => Error::Unauthorized {
                registry,
                message: format!("reading {what} was refused ({detail})"),
            },
            (_, "SlowDown" | "Throttling" | "ThrottlingException" | "RequestLimitExceeded")
            | (Some(429), _) => Error::RateLimited {
                registry,
                message: format!("{detail}; try again later"),
            },
            _ => {
                let reason = match &err {
                    SdkError::TimeoutError(_) => "the request timed out".to_owned(),
                    SdkError::DispatchFailure(_) => {
                        format!("cannot reach the endpoint: {}", DisplayErrorContext(&err))
                    }
                    SdkError::ResponseError(_) => {
                        format!("the answer cannot be read: {}", DisplayErrorContext(&err))
                    }
                    _ if !detail.is_empty() => detail,
                    _ => DisplayErrorContext(&err).to_string(),
                };
                backend(
                    &self.registry,
                    format!("reading {what} failed: {reason}"),
                    err,
                )
            }
        }
    }

    fn lookup<'a>(&self, listing: &'a Listing, addon: &AddonRef) -> Result<&'a Version> {
        let entry = listing
            .addons
            .get(&addon.name)
            .ok_or_else(|| self.not_found(format!("addon `{}`", addon.name)))?;
        serve_version(&addon.name, &entry.versions, addon.version.as_deref())
            .map_err(|what| self.not_found(what))
    }
}

fn backend(
    registry: &str,
    message: String,
    e: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::Backend {
        registry: registry.to_owned(),
        message,
        source: Some(Box::new(e)),
    }
}

impl fmt::Display for S3Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bucket `{}`", self.inner.bucket)?;
        if !self.inner.prefix.is_empty() {
            write!(f, " under `{}`", self.inner.prefix.trim_end_matches('/'))?;
        }
        Ok(())
    }
}

#[async_trait]
impl AsyncReader for S3Reader {
    fn registry(&self) -> &str {
        &self.inner.registry
    }

    async fn list_addons(&self) -> Result<Vec<AddonSummary>> {
        let listing = self.listing().await?;
        Ok(listing
            .addons
            .iter()
            .map(|(name, addon)| AddonSummary {
                name: name.clone(),
                versions: addon
                    .versions
                    .iter()
                    .map(|v| v.number.raw().to_owned())
                    .collect(),
                description: addon.description.clone(),
                tags: addon.tags.clone(),
            })
            .collect())
    }

    async fn list_files(&self, addon: &AddonRef) -> Result<Vec<FileEntry>> {
        let listing = self.listing().await?;
        let version = self.inner.lookup(listing, addon)?;
        if version.files.len() > MAX_FILES_PER_ADDON {
            return Err(Error::InvalidContent {
                registry: self.inner.registry.clone(),
                message: format!("an addon may have at most {MAX_FILES_PER_ADDON} files"),
            });
        }
        Ok(version
            .files
            .iter()
            .map(|(path, size)| FileEntry {
                path: path.clone(),
                size: *size,
            })
            .collect())
    }

    async fn read_file(&self, addon: &AddonRef, path: &str) -> Result<Vec<u8>> {
        check_relative_path(&self.inner.registry, path)?;
        let listing = self.listing().await?;
        let version = self.inner.lookup(listing, addon)?;
        let Some(size) = version.files.get(path) else {
            return Err(self
                .inner
                .not_found(format!("file `{path}` of addon `{addon}`")));
        };
        if path == "metadata.yaml" {
            if let Some(bytes) = &version.metadata {
                return Ok(bytes.clone());
            }
        }
        let key = format!("{}{path}", version.dir);
        let etag = listing.etags.get(&key).map(String::as_str);
        self.inner.get_object(&key, *size, etag).await
    }
}

#[cfg(test)]
mod tests;
