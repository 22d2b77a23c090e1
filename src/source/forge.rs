//! What the forge readers ([`github`](super::github), [`gitee`](super::gitee),
//! [`gitlab`](super::gitlab)) share: a snapshot of the registry directory taken from one
//! repository archive, the addon index over it, the disk cache of archives by commit, one
//! implementation of [`AsyncReader`](super::AsyncReader) over all of it, and how rate limits are
//! described. Each forge contributes only its [`ForgeApi`]: how to name the commit a ref points
//! at, how to download an archive, and how to read a tree when the archive is too large.
//!
//! Expected flow: the first question a reader is asked downloads one archive of the repository
//! at the wanted ref (1 API request, plus the redirect a forge answers it with); the files below
//! the registry's path are kept in memory and every later listing and read of the run is
//! answered from them, so listing a registry of any size and enabling one of its addons cost the
//! same 1–2 requests. A tree API alone would need one more request per addon for its
//! `metadata.yaml`. When the archive is over its size cap (a large monorepo), GitHub and Gitee
//! fall back to one recursive tree listing plus the `metadata.yaml` files (8 at a time), and
//! fetch any other file when it is read.
//!
//! With a disk cache (see [`cache`](super::cache)), the reader first asks which commit the ref
//! points at (one small request; GitHub's is conditional, and a `304` does not count against its
//! rate limit), then downloads the archive *at that commit* and keeps it under the commit's id.
//! The next run asks the same question and, when the commit has not moved, reads the archive
//! from disk: one request in all. `--refresh` ignores what is on disk. Without a disk cache the
//! commit is not asked for.
//!
//! Guarantees: the snapshot is one commit (listing and reading cannot disagree); files are
//! bounded by the archive limits and [`MAX_FILE_SIZE`]; nothing above the registry path is kept;
//! a truncated tree listing is an error, never a partial registry; a cached archive that cannot
//! be read is downloaded again; nothing in the cache holds a credential.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

use crate::source::archive::{read_tgz, ArchiveLimits};
use crate::source::cache::{CacheOptions, CachedEntry, DiskCache};
use crate::source::http::{rfc3339, HttpClient, HttpOptions};
use crate::source::tree::{join, Index};
use crate::source::{
    check_relative_path, AddonRef, AddonSummary, Error, FileEntry, Result, MAX_FILES_PER_ADDON,
    MAX_FILE_SIZE,
};

/// The files of a registry directory at one commit, and the addons among them.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    /// The registry directory relative to the repository root (`""` for the root).
    subdir: String,
    /// Paths relative to the registry directory.
    files: BTreeMap<String, Stored>,
    index: Index,
}

/// One file: its size, and its bytes when they are at hand (always from an archive; only the
/// `metadata.yaml` files from a tree listing).
#[derive(Debug)]
struct Stored {
    size: u64,
    bytes: Option<Vec<u8>>,
}

/// What [`Snapshot::read_file`] found.
#[derive(Debug)]
pub(crate) enum FileRead {
    /// The bytes.
    Ready(Vec<u8>),
    /// The file exists but must be fetched: its path relative to the repository root.
    Fetch(String),
}

/// The path of `path` relative to `subdir`, or `None` when it is outside it or hidden.
fn below<'a>(subdir: &str, path: &'a str) -> Option<&'a str> {
    let rel = if subdir.is_empty() {
        path
    } else {
        path.strip_prefix(subdir)?.strip_prefix('/')?
    };
    (!rel.is_empty() && !rel.split('/').any(|s| s.starts_with('.'))).then_some(rel)
}

/// Whether a path (relative to the registry directory) is where an addon's metadata lives.
fn is_metadata(rel: &str) -> bool {
    rel == "metadata.yaml"
        || rel
            .split_once('/')
            .is_some_and(|(_, rest)| rest == "metadata.yaml")
}

impl Snapshot {
    /// Builds the snapshot from `(path relative to the repository root, bytes)` pairs (an
    /// archive), keeping the files below `subdir` (`""` for the whole repository). Hidden entries
    /// are skipped.
    pub fn build(
        registry: &str,
        subdir: &str,
        entries: impl IntoIterator<Item = (String, Vec<u8>)>,
    ) -> Result<Self> {
        let subdir = subdir.trim_matches('/');
        let mut files = BTreeMap::new();
        for (path, bytes) in entries {
            let Some(rel) = below(subdir, &path) else {
                continue;
            };
            check_relative_path(registry, rel)?;
            files.insert(
                rel.to_owned(),
                Stored {
                    size: bytes.len() as u64,
                    bytes: Some(bytes),
                },
            );
        }
        Self::index(registry, subdir, files)
    }

    /// Builds the snapshot from a tree listing (`(path relative to the repository root, size)`
    /// pairs), fetching only the `metadata.yaml` files, at most 8 at a time.
    pub async fn from_tree<F, Fut>(
        registry: &str,
        subdir: &str,
        tree: Vec<(String, u64)>,
        fetch: F,
    ) -> Result<Self>
    where
        F: Fn(String) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<u8>>>,
    {
        let subdir = subdir.trim_matches('/');
        let mut files = BTreeMap::new();
        for (path, size) in tree {
            let Some(rel) = below(subdir, &path) else {
                continue;
            };
            check_relative_path(registry, rel)?;
            files.insert(rel.to_owned(), Stored { size, bytes: None });
        }
        let single = files.contains_key("metadata.yaml");
        let wanted: Vec<String> = files
            .keys()
            .filter(|rel| {
                if single {
                    rel.as_str() == "metadata.yaml"
                } else {
                    is_metadata(rel)
                }
            })
            .cloned()
            .collect();
        let fetched: Vec<(String, Vec<u8>)> =
            futures::stream::iter(wanted.into_iter().map(|rel| {
                let full = join(subdir, &rel);
                let fetched = fetch(full);
                async move { Ok::<_, Error>((rel, fetched.await?)) }
            }))
            .buffer_unordered(8)
            .try_collect()
            .await?;
        for (rel, bytes) in fetched {
            if let Some(stored) = files.get_mut(&rel) {
                stored.size = bytes.len() as u64;
                stored.bytes = Some(bytes);
            }
        }
        Self::index(registry, subdir, files)
    }

    fn index(registry: &str, subdir: &str, files: BTreeMap<String, Stored>) -> Result<Self> {
        if files.is_empty() {
            return Err(Error::NotFound {
                registry: registry.to_owned(),
                what: if subdir.is_empty() {
                    "any file".to_owned()
                } else {
                    format!("directory `{subdir}`")
                },
            });
        }
        let text = |path: &str| -> Option<String> {
            let bytes = files.get(path)?.bytes.as_ref()?;
            let text = String::from_utf8(bytes.clone()).ok();
            if text.is_none() {
                tracing::warn!(registry, "skipping `{path}`: it is not valid UTF-8");
            }
            text
        };
        let mut candidates = Vec::new();
        if let Some(root) = text("metadata.yaml") {
            candidates.push((String::new(), root));
        } else {
            for path in files.keys() {
                if let Some((dir, "metadata.yaml")) = path.split_once('/') {
                    if let Some(meta) = text(path) {
                        candidates.push((dir.to_owned(), meta));
                    }
                }
            }
        }
        let index = Index::build(registry, candidates);
        Ok(Snapshot {
            subdir: subdir.to_owned(),
            files,
            index,
        })
    }

    /// The listing, sorted by name.
    pub fn list_addons(&self) -> Vec<AddonSummary> {
        self.index.summaries()
    }

    /// The files of one addon version, sorted by path.
    pub fn list_files(&self, registry: &str, addon: &AddonRef) -> Result<Vec<FileEntry>> {
        let dir = &self.index.lookup(registry, addon)?.dir;
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let files: Vec<FileEntry> = self
            .files
            .range(prefix.clone()..)
            .take_while(|(path, _)| path.starts_with(&prefix))
            .map(|(path, stored)| FileEntry {
                path: path[prefix.len()..].to_owned(),
                size: stored.size,
            })
            .collect();
        if files.len() > MAX_FILES_PER_ADDON {
            return Err(Error::InvalidContent {
                registry: registry.to_owned(),
                message: format!("an addon may have at most {MAX_FILES_PER_ADDON} files"),
            });
        }
        Ok(files)
    }

    /// One file of an addon version: its bytes, or where to fetch them.
    pub fn read_file(&self, registry: &str, addon: &AddonRef, path: &str) -> Result<FileRead> {
        check_relative_path(registry, path)?;
        let dir = &self.index.lookup(registry, addon)?.dir;
        let rel = join(dir, path);
        let stored = self.files.get(&rel).ok_or_else(|| Error::NotFound {
            registry: registry.to_owned(),
            what: format!("file `{path}` of addon `{addon}`"),
        })?;
        if stored.size > MAX_FILE_SIZE {
            return Err(Error::TooLarge {
                registry: registry.to_owned(),
                path: path.to_owned(),
                size: stored.size,
                limit: MAX_FILE_SIZE,
            });
        }
        Ok(match &stored.bytes {
            Some(bytes) => FileRead::Ready(bytes.clone()),
            None => FileRead::Fetch(join(&self.subdir, &rel)),
        })
    }
}

/// The limits for a whole repository archive: 256 MiB uncompressed and 100,000 entries. Single
/// files may be large here (a repository can hold anything outside the registry directory); files
/// kept in the snapshot are held to [`MAX_FILE_SIZE`] when read.
pub(crate) const REPOSITORY_ARCHIVE_LIMITS: ArchiveLimits = ArchiveLimits {
    max_total_bytes: 256 * 1024 * 1024,
    max_file_bytes: 256 * 1024 * 1024,
    max_entries: 100_000,
};

/// Reads a repository archive (`.tar.gz`) off the async threads, with the top directory every
/// forge wraps the tree in (`<owner>-<repo>-<sha>/`, …) stripped. Gives the bytes back (to be
/// cached).
pub(crate) async fn read_archive(
    registry: &str,
    name: &str,
    bytes: Vec<u8>,
) -> Result<(Vec<(String, Vec<u8>)>, Vec<u8>)> {
    let (registry_owned, name_owned) = (registry.to_owned(), name.to_owned());
    tokio::task::spawn_blocking(move || {
        read_tgz(
            &registry_owned,
            &name_owned,
            &bytes,
            &REPOSITORY_ARCHIVE_LIMITS,
        )
        .map(|entries| (entries, bytes))
    })
    .await
    .map_err(|e| Error::Backend {
        registry: registry.to_owned(),
        message: format!("reading `{name}` failed: {e}"),
        source: Some(Box::new(e)),
    })?
}

/// Downloads a repository archive through the shared HTTP layer. `what` describes the
/// repository and ref for a not-found or too-large answer.
pub(crate) async fn archive_over_http(
    client: &HttpClient,
    url: &str,
    headers: &[(&str, &str)],
    max_archive_bytes: u64,
    what: &str,
) -> Result<Vec<u8>> {
    match client.get_limited(url, headers, max_archive_bytes).await {
        Ok(response) => Ok(response.body),
        Err(Error::NotFound { registry, .. }) => Err(Error::NotFound {
            registry,
            what: what.to_owned(),
        }),
        Err(Error::TooLarge {
            registry,
            size,
            limit,
            ..
        }) => Err(Error::TooLarge {
            registry,
            path: format!("archive of {what}"),
            size,
            limit,
        }),
        Err(e) => Err(e),
    }
}

/// What a forge answered for the snapshot.
pub(crate) enum Download {
    /// The repository archive (`.tar.gz`).
    Archive(Vec<u8>),
    /// A snapshot read from a tree listing (the archive was over its cap).
    Tree(Snapshot),
}

/// The part of a reader that is particular to one forge.
#[async_trait]
pub(crate) trait ForgeApi: fmt::Debug + fmt::Display + Send + Sync + 'static {
    /// The registry name, for errors.
    fn registry(&self) -> &str;
    /// The repository as errors name it (`repository `o/r` at ref `x``).
    fn describe(&self) -> String;
    /// The commit the wanted ref points at now, in one request. `cache` may keep what is needed
    /// for a conditional request.
    async fn resolve_commit(&self, cache: &DiskCache) -> Result<String>;
    /// The archive at `commit` (`None`: at the configured ref), or a tree snapshot when the
    /// archive is over its cap and the forge can list trees.
    async fn download(&self, commit: Option<&str>) -> Result<Download>;
    /// One file of a tree snapshot, by its path in the repository, at `commit` (`None`: the ref
    /// the tree was read at).
    async fn fetch(&self, path: String, commit: Option<&str>) -> Result<Vec<u8>>;
}

/// The shared half of every forge reader: the snapshot of the run, the disk cache, and the
/// answers to the [`AsyncReader`](super::AsyncReader) questions.
#[derive(Debug)]
pub(crate) struct ForgeCore<A> {
    pub api: A,
    cache: DiskCache,
    /// The registry directory inside the repository (`""` for the root).
    subdir: String,
    snapshot: OnceCell<Snapshot>,
    /// The commit the snapshot was taken at, when it was asked for.
    commit: OnceLock<Option<String>>,
}

/// The client of a forge's API over the shared HTTP layer (Gitee, GitLab): `http`, with
/// `headers` (credentials) sent to the API's origin `api_base` only.
pub(crate) fn api_client(
    registry: &str,
    http: &HttpOptions,
    api_base: &str,
    headers: Vec<(String, String)>,
) -> Result<HttpClient> {
    let mut http = http.clone();
    http.headers.extend(headers);
    http.credentials_origin = Some(api_base.to_owned());
    HttpClient::new(registry, http)
}

/// Where a forge reader's core finds its registry: the disk cache of its archives and the
/// registry directory inside the repository.
#[derive(Debug)]
pub(crate) struct Place {
    cache: DiskCache,
    subdir: String,
}

impl Place {
    /// The registry at `path` of `repository` (the forge, its API and the repository, as the
    /// reader names them) at `git_ref` (`None`: the default branch), its archives cached with
    /// `options`: one cache for each repository, ref and path.
    pub fn new(
        options: &CacheOptions,
        repository: fmt::Arguments<'_>,
        git_ref: Option<&str>,
        path: &str,
    ) -> Self {
        let key = format!("{repository} {} {path}", git_ref.unwrap_or("HEAD"));
        Place {
            cache: DiskCache::new(options, "registries", &key),
            subdir: path.trim_matches('/').to_owned(),
        }
    }
}

/// The disk cache's name for the archive of one commit.
fn archive_key(commit: &str) -> String {
    format!("archive-{commit}.tar.gz")
}

/// Checks that a commit id named by a server is one (it becomes part of a file name).
pub(crate) fn check_commit(registry: &str, commit: &str) -> Result<String> {
    let commit = commit.trim();
    if (7..=64).contains(&commit.len()) && commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(commit.to_ascii_lowercase())
    } else {
        Err(Error::InvalidContent {
            registry: registry.to_owned(),
            message: format!(
                "the server named `{}` as the commit, which is not a commit id",
                commit.chars().take(80).collect::<String>()
            ),
        })
    }
}

impl<A: ForgeApi> ForgeCore<A> {
    /// The core over `api`, for the registry at `place`.
    pub fn new(api: A, place: Place) -> Self {
        ForgeCore {
            api,
            cache: place.cache,
            subdir: place.subdir,
            snapshot: OnceCell::new(),
            commit: OnceLock::new(),
        }
    }

    async fn snapshot(&self) -> Result<&Snapshot> {
        self.snapshot.get_or_try_init(|| self.take_snapshot()).await
    }

    async fn read_snapshot(&self, bytes: Vec<u8>) -> Result<(Snapshot, Vec<u8>)> {
        let registry = self.api.registry();
        let name = format!("archive of {}", self.api.describe());
        let (entries, bytes) = read_archive(registry, &name, bytes).await?;
        Ok((Snapshot::build(registry, &self.subdir, entries)?, bytes))
    }

    async fn take_snapshot(&self) -> Result<Snapshot> {
        let registry = self.api.registry();
        let commit = if self.cache.dir().is_some() {
            let commit = self.api.resolve_commit(&self.cache).await?;
            Some(check_commit(registry, &commit)?)
        } else {
            None
        };
        let _ = self.commit.set(commit.clone());
        let key = commit.as_deref().map(archive_key);
        if let Some(entry) = key.as_deref().and_then(|k| self.cache.load(k)) {
            match self.read_snapshot(entry.body).await {
                Ok((snapshot, _)) => {
                    tracing::debug!(registry, "the archive of {} is cached", self.api.describe());
                    return Ok(snapshot);
                }
                Err(e) => tracing::warn!(
                    registry,
                    "the cached archive cannot be read ({e}); downloading it again"
                ),
            }
        }
        match self.api.download(commit.as_deref()).await? {
            Download::Archive(bytes) => {
                let (snapshot, bytes) = self.read_snapshot(bytes).await?;
                if let Some(key) = &key {
                    self.cache.store(
                        key,
                        &CachedEntry {
                            body: bytes,
                            ..CachedEntry::default()
                        },
                    );
                    self.cache.remove_others("archive-", key);
                }
                Ok(snapshot)
            }
            Download::Tree(snapshot) => Ok(snapshot),
        }
    }

    /// Every addon, sorted by name.
    pub async fn list_addons(&self) -> Result<Vec<AddonSummary>> {
        Ok(self.snapshot().await?.list_addons())
    }

    /// The files of one addon version.
    pub async fn list_files(&self, addon: &AddonRef) -> Result<Vec<FileEntry>> {
        self.snapshot()
            .await?
            .list_files(self.api.registry(), addon)
    }

    /// One file of an addon version.
    pub async fn read_file(&self, addon: &AddonRef, path: &str) -> Result<Vec<u8>> {
        let registry = self.api.registry();
        check_relative_path(registry, path)?;
        match self.snapshot().await?.read_file(registry, addon, path)? {
            FileRead::Ready(bytes) => Ok(bytes),
            FileRead::Fetch(full) => {
                let commit = self.commit.get().cloned().flatten();
                self.api.fetch(full, commit.as_deref()).await
            }
        }
    }
}

/// Implements [`AsyncReader`](crate::source::AsyncReader) and `Display` for a reader type whose
/// `core` field is a [`ForgeCore`]. A reader of a forge read through the shared HTTP layer (its
/// `Api` has an `HttpClient` as `client`, its options come from [`api_forge_options`]) also
/// gets `from_spec` (from its `new`) and `request_count`.
macro_rules! forge_reader {
    ($reader:ty, api: $options:ty) => {
        impl $reader {
            /// The reader of a stored registry, with the run's cache and HTTP settings.
            pub fn from_spec(
                spec: &crate::model::registry::RegistrySpec,
                credentials: &crate::model::registry::Credentials,
                options: &crate::source::OpenOptions,
            ) -> crate::source::Result<Self> {
                let mut forge: $options =
                    crate::source::forge::options_of(spec, credentials, options)?;
                forge.http = options.http_for(spec);
                Self::new(forge, &spec.name)
            }

            /// How many HTTP requests this reader sent (redirects and retries included).
            pub fn request_count(&self) -> u64 {
                self.core.api.client.request_count()
            }
        }

        crate::source::forge::forge_reader!($reader);
    };
    ($reader:ty) => {
        #[async_trait::async_trait]
        impl crate::source::AsyncReader for $reader {
            fn registry(&self) -> &str {
                crate::source::forge::ForgeApi::registry(&self.core.api)
            }

            async fn list_addons(&self) -> crate::source::Result<Vec<crate::source::AddonSummary>> {
                self.core.list_addons().await
            }

            async fn list_files(
                &self,
                addon: &crate::source::AddonRef,
            ) -> crate::source::Result<Vec<crate::source::FileEntry>> {
                self.core.list_files(addon).await
            }

            async fn read_file(
                &self,
                addon: &crate::source::AddonRef,
                path: &str,
            ) -> crate::source::Result<Vec<u8>> {
                self.core.read_file(addon, path).await
            }
        }

        impl std::fmt::Display for $reader {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.core.api, f)
            }
        }
    };
}
pub(crate) use forge_reader;

mod location;
pub(crate) use location::{
    api_forge_options, browser_url, options_of, ref_and_path, repository_url, stored_options,
    StoredOptions,
};

/// A recursive tree listing (`GET /repos/{o}/{r}/git/trees/{ref}?recursive=1`: GitHub's shape,
/// which Gitee shares), the parts used here.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Tree {
    tree: Vec<TreeEntry>,
    #[serde(default)]
    truncated: bool,
}

#[derive(Debug, serde::Deserialize)]
struct TreeEntry {
    path: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    size: u64,
}

impl Tree {
    /// The files (`(path, size)`) of the listing of `repository` on `forge`; a truncated
    /// listing is an error, never a partial registry.
    pub fn files(
        self,
        registry: &str,
        repository: &str,
        forge: &str,
    ) -> Result<Vec<(String, u64)>> {
        if self.truncated {
            return Err(Error::InvalidContent {
                registry: registry.to_owned(),
                message: format!(
                    "`{repository}` is too large both for its archive and for a complete tree \
                     listing ({forge} truncated it); point the registry at a smaller repository"
                ),
            });
        }
        Ok(self
            .tree
            .into_iter()
            .filter(|e| e.kind == "blob")
            .map(|e| (e.path, e.size))
            .collect())
    }
}

/// `GET url` as JSON (at most `limit` bytes): a `404` is the error `not_found` makes of the
/// registry name; a body that is not the JSON expected says `what` cannot be read.
pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
    client: &HttpClient,
    url: &str,
    limit: u64,
    not_found: impl FnOnce(String) -> Error,
    what: &str,
) -> Result<T> {
    let response = client
        .get_limited(url, &[("accept", "application/json")], limit)
        .await
        .map_err(|e| match e {
            Error::NotFound { registry, .. } => not_found(registry),
            e => e,
        })?;
    serde_json::from_slice(&response.body).map_err(|e| Error::InvalidContent {
        registry: client.registry().to_owned(),
        message: format!("{what} cannot be read: {e}"),
    })
}

/// Writes how a forge reader shows itself: `name`, then ` at `<git_ref>`` and ` under `<path>``
/// where they are given.
pub(crate) fn write_location(
    f: &mut fmt::Formatter<'_>,
    name: fmt::Arguments<'_>,
    git_ref: Option<&str>,
    path: &str,
) -> fmt::Result {
    f.write_fmt(name)?;
    if let Some(git_ref) = git_ref {
        write!(f, " at `{git_ref}`")?;
    }
    if !path.is_empty() {
        write!(f, " under `{path}`")?;
    }
    Ok(())
}

/// The first of a forge's newest-first list of commit ids; not found (no commit of `what`) when
/// the list is empty.
pub(crate) fn newest_commit(
    commits: impl IntoIterator<Item = String>,
    registry: &str,
    what: &str,
) -> Result<String> {
    commits.into_iter().next().ok_or_else(|| Error::NotFound {
        registry: registry.to_owned(),
        what: format!("any commit of {what}"),
    })
}

/// Describes when a rate limit resets, from a Unix time in seconds: `at 2024-01-01T00:00:00Z (in
/// 42 s)`.
pub(crate) fn describe_reset(epoch_seconds: u64) -> String {
    let at = UNIX_EPOCH + Duration::from_secs(epoch_seconds);
    let wait = at
        .duration_since(SystemTime::now())
        .unwrap_or_default()
        .as_secs();
    format!("at {} (in {wait} s)", rfc3339(at))
}

/// How long to wait until a Unix time in seconds (zero when it has passed).
pub(crate) fn until(epoch_seconds: u64) -> Duration {
    (UNIX_EPOCH + Duration::from_secs(epoch_seconds))
        .duration_since(SystemTime::now())
        .unwrap_or_default()
}

/// Percent-encodes one path segment (or a query value): everything but unreserved characters.
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Like [`encode`] but keeps `/` (a ref or path made of several segments).
pub(crate) fn encode_path(text: &str) -> String {
    text.split('/').map(encode).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> (String, Vec<u8>) {
        (path.to_owned(), text.as_bytes().to_vec())
    }

    #[test]
    fn reset_times_are_named() {
        assert!(describe_reset(1_700_000_000).starts_with("at 2023-11-14T22:13:20Z (in 0 s)"));
    }

    #[test]
    fn encoding_keeps_unreserved_characters_only() {
        assert_eq!(encode("group/sub/project"), "group%2Fsub%2Fproject");
        assert_eq!(encode_path("feature/a b"), "feature/a%20b");
    }

    #[test]
    fn a_snapshot_keeps_the_registry_directory_only() {
        let snapshot = Snapshot::build(
            "r",
            "addons",
            vec![
                file("addons/a/metadata.yaml", "name: a\nversion: 1.0.0\n"),
                file("addons/a/resources/x.yaml", "kind: X\n"),
                file("addons/.hidden/metadata.yaml", "name: h\nversion: 1.0.0\n"),
                file("addonsx/b/metadata.yaml", "name: b\nversion: 1.0.0\n"),
                file("README.md", "hello"),
            ],
        )
        .unwrap();
        let names: Vec<String> = snapshot.list_addons().into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["a"]);
        let files = snapshot.list_files("r", &AddonRef::latest("a")).unwrap();
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["metadata.yaml", "resources/x.yaml"]);
    }

    #[test]
    fn a_missing_registry_directory_is_not_found() {
        let err = Snapshot::build("r", "nope", vec![file("a/metadata.yaml", "x")]).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        assert!(err.to_string().contains("`nope`"), "{err}");
    }
}
