//! Any git repository as a registry (libgit2 through `git2`): `https://`, `http://` and `file://`
//! URLs (and local paths).
//!
//! Expected flow, once per run (the first call that needs it):
//! 1. ask the server for its references (one connection);
//! 2. pick the commits to read: the given ref (a branch or a tag; nothing else is then read),
//!    else the default branch plus every tag named `X.Y.Z` or `vX.Y.Z`;
//! 3. fetch exactly those commits, shallow (depth 1; full when the transport cannot do shallow),
//!    into a bare repository in the cache (`<cache>/git/<hash of the URL>`), so the next run only
//!    fetches what changed; when the server cannot be reached, what the cache holds is used, with
//!    a warning (not with `--refresh`, which asks for the server's answer);
//! 4. index: in each commit, the registry directory (`path`, default the root) is one addon (it
//!    holds `metadata.yaml`) or holds one addon per sub-directory. An addon's versions are the
//!    versions its `metadata.yaml` declares across those commits, so tags become versions.
//!
//! Files are read from the object database, never checked out: symbolic links and submodules are
//! not files of the addon, and paths are checked like every reader's.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use git2::{Direction, FetchOptions, ObjectType, Oid, RemoteCallbacks, Repository, TreeWalkMode};
use tokio::sync::OnceCell;

use crate::model::{AddonMeta, AddonVersion};
use crate::source::cache::{create_private_dir, CacheOptions, DiskCache};
use crate::source::http::redact;
use crate::source::{
    check_relative_path, AddonRef, AddonSummary, AsyncReader, Error, FileEntry, Result,
    MAX_FILES_PER_ADDON, MAX_FILE_SIZE,
};

/// How to reach a git repository.
#[derive(Clone, Default)]
pub struct GitOptions {
    /// A branch or tag to read; `None` = the default branch plus the version tags.
    pub reference: Option<String>,
    /// The registry directory inside the repository (`""` = the root).
    pub path: String,
    /// A token for https (sent as the password; the user name is `username` or `git`).
    pub token: Option<String>,
    /// A user name for https.
    pub username: Option<String>,
    /// A password for https.
    pub password: Option<String>,
    /// Accept any TLS certificate (test servers only).
    pub insecure_skip_tls: bool,
    /// Extra trusted CA certificates for https remotes (PEM, one or more): a server certificate
    /// issued by one of them (directly, or by an intermediate also in the bundle) for the remote's
    /// host name is accepted, besides those the system trusts.
    pub ca_bundle: Option<Vec<u8>>,
}

impl fmt::Debug for GitOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitOptions")
            .field("reference", &self.reference)
            .field("path", &self.path)
            .field("username", &self.username)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("insecure_skip_tls", &self.insecure_skip_tls)
            .field("ca_bundle", &self.ca_bundle.as_ref().map(Vec::len))
            .finish()
    }
}

/// One version of one addon: the tree of its directory.
#[derive(Debug, Clone)]
struct Located {
    version: AddonVersion,
    description: Option<String>,
    tree: Oid,
}

/// Addon name → versions, highest first.
type GitIndex = BTreeMap<String, Vec<Located>>;

/// Reads addons from a git repository.
#[derive(Clone)]
pub struct GitReader {
    inner: Arc<Inner>,
}

struct Inner {
    registry: String,
    url: String,
    options: GitOptions,
    dir: PathBuf,
    temporary: bool,
    /// `--refresh`: never fall back to an earlier fetch.
    refresh: bool,
    /// The CA bundle's certificates, parsed.
    trust: Option<Trust>,
    index: OnceCell<GitIndex>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.temporary {
            let _ = fs_err::remove_dir_all(&self.dir);
        }
    }
}

impl fmt::Debug for GitReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitReader")
            .field("registry", &self.inner.registry)
            .field("url", &redact(&self.inner.url))
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for GitReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "git repository `{}`", redact(&self.inner.url))?;
        if let Some(reference) = &self.inner.options.reference {
            write!(f, " at `{reference}`")?;
        }
        Ok(())
    }
}

impl GitReader {
    /// A reader of the repository at `url`. Nothing is fetched until the first call.
    pub fn new(
        registry: &str,
        url: &str,
        options: GitOptions,
        cache: &CacheOptions,
    ) -> Result<Self> {
        let url = url.trim().to_owned();
        if url.is_empty() {
            return Err(Error::InvalidContent {
                registry: registry.to_owned(),
                message: "the git URL is empty".to_owned(),
            });
        }
        let path = options.path.trim_matches('/').to_owned();
        if !path.is_empty() {
            check_relative_path(registry, &path)?;
        }
        let options = GitOptions { path, ..options };
        let trust = options
            .ca_bundle
            .as_deref()
            .map(|pem| Trust::from_pem(registry, pem))
            .transpose()?;
        let disk = DiskCache::new(cache, "git", &redact(&url));
        let (dir, temporary) = match disk.dir() {
            Some(dir) => (dir.to_path_buf(), false),
            None => (
                std::env::temp_dir().join(format!(
                    "addonctl-git-{}-{}",
                    std::process::id(),
                    crate::source::cache::key_hash(&url)
                )),
                true,
            ),
        };
        Ok(GitReader {
            inner: Arc::new(Inner {
                registry: registry.to_owned(),
                url,
                options,
                dir,
                temporary,
                refresh: disk.refresh(),
                trust,
                index: OnceCell::new(),
            }),
        })
    }

    /// The bare repository the reader fetches into.
    pub fn cache_dir(&self) -> &Path {
        &self.inner.dir
    }

    async fn index(&self) -> Result<&GitIndex> {
        self.inner
            .index
            .get_or_try_init(|| async {
                let inner = Arc::clone(&self.inner);
                tokio::task::spawn_blocking(move || inner.fetch_and_index())
                    .await
                    .map_err(|e| self.inner.backend(format!("fetching failed: {e}")))?
            })
            .await
    }

    async fn locate(&self, addon: &AddonRef) -> Result<Oid> {
        let index = self.index().await?;
        let versions = index
            .get(&addon.name)
            .ok_or_else(|| self.inner.not_found(format!("addon `{}`", addon.name)))?;
        let chosen = match &addon.version {
            Some(wanted) => versions.iter().find(|v| v.version.same_as(wanted)),
            None => versions
                .iter()
                .find(|v| !v.version.is_prerelease())
                .or_else(|| versions.first()),
        };
        chosen.map(|v| v.tree).ok_or_else(|| {
            let available: Vec<String> = versions.iter().map(|v| v.version.to_string()).collect();
            self.inner.not_found(format!(
                "version `{}` of addon `{}` (available: `{}`)",
                addon.version.as_deref().unwrap_or("latest"),
                addon.name,
                available.join("`, `")
            ))
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Inner, &Repository) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let repository = inner.open()?;
            work(&inner, &repository)
        })
        .await
        .map_err(|e| self.inner.backend(format!("reading failed: {e}")))?
    }
}

impl Inner {
    fn not_found(&self, what: String) -> Error {
        Error::NotFound {
            registry: self.registry.clone(),
            what,
        }
    }

    fn backend(&self, message: String) -> Error {
        Error::Backend {
            registry: self.registry.clone(),
            message,
            source: None,
        }
    }

    fn git_error(&self, doing: &str, e: &git2::Error) -> Error {
        let message = format!("{doing} `{}`: {}", redact(&self.url), e.message());
        match e.code() {
            git2::ErrorCode::Auth => Error::Unauthorized {
                registry: self.registry.clone(),
                message,
            },
            git2::ErrorCode::Certificate => Error::Backend {
                registry: self.registry.clone(),
                message: format!("{message} (the server's TLS certificate was not accepted)"),
                source: None,
            },
            _ if e.class() == git2::ErrorClass::Http && e.message().contains("401") => {
                Error::Unauthorized {
                    registry: self.registry.clone(),
                    message,
                }
            }
            _ => self.backend(message),
        }
    }

    fn open(&self) -> Result<Repository> {
        Repository::open_bare(&self.dir).map_err(|e| self.git_error("cannot open the clone of", &e))
    }

    fn callbacks(&self) -> RemoteCallbacks<'_> {
        let mut callbacks = RemoteCallbacks::new();
        let options = &self.options;
        let mut attempts = 0;
        callbacks.credentials(move |_url, _user, allowed| {
            attempts += 1;
            let secret = options.token.as_deref().or(options.password.as_deref());
            match secret {
                Some(secret) if attempts <= 1 && allowed.is_user_pass_plaintext() => {
                    git2::Cred::userpass_plaintext(
                        options.username.as_deref().unwrap_or("git"),
                        secret,
                    )
                }
                _ => Err(git2::Error::new(
                    git2::ErrorCode::Auth,
                    git2::ErrorClass::Http,
                    if secret.is_some() {
                        "the credentials were not accepted"
                    } else {
                        "the server asks for credentials and none are configured"
                    },
                )),
            }
        });
        if options.insecure_skip_tls {
            callbacks.certificate_check(|_, _| Ok(git2::CertificateCheckStatus::CertificateOk));
        } else if let Some(trust) = &self.trust {
            // libgit2 has checked the certificate against the system's roots; one it refused is
            // accepted when the bundle vouches for it, else its verdict stands.
            callbacks.certificate_check(move |certificate, host| {
                let trusted = certificate
                    .as_x509()
                    .is_some_and(|x509| trust.accepts(x509.data(), host));
                Ok(if trusted {
                    git2::CertificateCheckStatus::CertificateOk
                } else {
                    git2::CertificateCheckStatus::CertificatePassthrough
                })
            });
        }
        callbacks
    }

    /// Fetches what the registry needs (or falls back to the cache) and indexes it.
    fn fetch_and_index(&self) -> Result<GitIndex> {
        let fetched = self.fetch();
        let repository = match fetched {
            Ok(repository) => repository,
            Err(error) => {
                // Offline, or the server is down: use the last fetch when there is one.
                let cached = Repository::open_bare(&self.dir).ok().filter(|r| {
                    r.references_glob("refs/addonctl/*")
                        .is_ok_and(|mut refs| refs.next().is_some())
                });
                match (cached, &error) {
                    (Some(repository), Error::Backend { .. }) if !self.refresh => {
                        tracing::warn!(registry = %self.registry, "{error}; using the copy fetched earlier");
                        repository
                    }
                    _ => return Err(error),
                }
            }
        };
        self.build_index(&repository)
    }

    fn fetch(&self) -> Result<Repository> {
        create_private_dir(&self.dir)
            .map_err(|e| self.backend(format!("cannot create `{}`: {e}", self.dir.display())))?;
        let repository = match Repository::open_bare(&self.dir) {
            Ok(r) => r,
            Err(_) => Repository::init_bare(&self.dir)
                .map_err(|e| self.git_error("cannot create a clone of", &e))?,
        };
        let mut remote = repository
            .remote_anonymous(&self.url)
            .map_err(|e| self.git_error("invalid remote", &e))?;
        // 1. The references the server has.
        let wanted: Vec<(String, String)> = {
            let connection = remote
                .connect_auth(Direction::Fetch, Some(self.callbacks()), None)
                .map_err(|e| self.git_error("cannot connect to", &e))?;
            let heads: Vec<(String, Option<String>)> = connection
                .list()
                .map_err(|e| self.git_error("cannot list the references of", &e))?
                .iter()
                .map(|h| (h.name().to_owned(), h.symref_target().map(str::to_owned)))
                .collect();
            let default_branch = connection
                .default_branch()
                .ok()
                .and_then(|b| b.as_str().map(str::to_owned))
                .or_else(|| {
                    heads
                        .iter()
                        .find(|(n, _)| n == "HEAD")
                        .and_then(|(_, t)| t.clone())
                });
            self.wanted_refs(&heads, default_branch)?
        };
        // 2. Fetch them, shallow when the transport can.
        let refspecs: Vec<String> = wanted
            .iter()
            .map(|(source, local)| format!("+{source}:{local}"))
            .collect();
        let fetch = |remote: &mut git2::Remote<'_>, depth: i32| {
            let mut options = FetchOptions::new();
            options.remote_callbacks(self.callbacks());
            options.download_tags(git2::AutotagOption::None);
            options.update_fetchhead(false);
            if depth > 0 {
                options.depth(depth);
            }
            remote.fetch(&refspecs, Some(&mut options), None)
        };
        if let Err(e) = fetch(&mut remote, 1) {
            if e.code() == git2::ErrorCode::Auth {
                return Err(self.git_error("cannot fetch", &e));
            }
            tracing::debug!(registry = %self.registry, "shallow fetch failed ({}); fetching in full", e.message());
            fetch(&mut remote, 0).map_err(|e| self.git_error("cannot fetch", &e))?;
        }
        // Forget references from earlier runs that the server no longer has.
        let keep: Vec<&str> = wanted.iter().map(|(_, l)| l.as_str()).collect();
        if let Ok(references) = repository.references_glob("refs/addonctl/*") {
            let stale: Vec<String> = references
                .filter_map(std::result::Result::ok)
                .filter_map(|r| r.name().map(str::to_owned))
                .filter(|n| !keep.contains(&n.as_str()))
                .collect();
            for name in stale {
                if let Ok(mut reference) = repository.find_reference(&name) {
                    let _ = reference.delete();
                }
            }
        }
        drop(remote);
        Ok(repository)
    }

    /// `(remote ref, local ref)` pairs to fetch.
    fn wanted_refs(
        &self,
        heads: &[(String, Option<String>)],
        default_branch: Option<String>,
    ) -> Result<Vec<(String, String)>> {
        let has = |name: &str| heads.iter().any(|(n, _)| n == name);
        if let Some(reference) = &self.options.reference {
            let candidates = [
                format!("refs/heads/{reference}"),
                format!("refs/tags/{reference}"),
                reference.clone(),
            ];
            let found = candidates.into_iter().find(|c| has(c)).ok_or_else(|| {
                self.not_found(format!(
                    "branch or tag `{reference}` in `{}`",
                    redact(&self.url)
                ))
            })?;
            return Ok(vec![(found, "refs/addonctl/ref".to_owned())]);
        }
        let mut wanted = Vec::new();
        match default_branch {
            Some(branch) if has(&branch) => {
                wanted.push((branch, "refs/addonctl/head".to_owned()));
            }
            _ if has("HEAD") => wanted.push(("HEAD".to_owned(), "refs/addonctl/head".to_owned())),
            _ => {}
        }
        for (name, _) in heads {
            let Some(tag) = name.strip_prefix("refs/tags/") else {
                continue;
            };
            if tag.ends_with("^{}") || !is_version_tag(tag) {
                continue;
            }
            wanted.push((name.clone(), format!("refs/addonctl/tags/{tag}")));
        }
        if wanted.is_empty() {
            return Err(self.not_found(format!(
                "any branch or version tag in `{}` (is the repository empty?)",
                redact(&self.url)
            )));
        }
        Ok(wanted)
    }

    fn build_index(&self, repository: &Repository) -> Result<GitIndex> {
        let mut references: Vec<(String, Oid)> = repository
            .references_glob("refs/addonctl/*")
            .map_err(|e| self.git_error("cannot read the clone of", &e))?
            .filter_map(std::result::Result::ok)
            .filter_map(|r| {
                let name = r.name()?.to_owned();
                let commit = r.peel_to_commit().ok()?;
                Some((name, commit.tree_id()))
            })
            .collect();
        // The branch (or the pinned ref) first, so that it wins over a tag with the same version.
        references.sort_by_key(|(name, _)| (name.starts_with("refs/addonctl/tags/"), name.clone()));
        let mut index: GitIndex = BTreeMap::new();
        let mut seen_trees = std::collections::HashSet::new();
        for (name, root) in references {
            if !seen_trees.insert(root) {
                continue;
            }
            let root = repository
                .find_tree(root)
                .map_err(|e| self.git_error("cannot read the clone of", &e))?;
            let registry_tree = if self.options.path.is_empty() {
                root
            } else {
                let Ok(entry) = root.get_path(Path::new(&self.options.path)) else {
                    tracing::debug!(registry = %self.registry, "`{name}` has no `{}`", self.options.path);
                    continue;
                };
                match repository.find_tree(entry.id()) {
                    Ok(tree) => tree,
                    Err(_) => continue,
                }
            };
            let mut candidates: Vec<(Oid, String)> = Vec::new();
            if let Some(meta) = registry_tree.get_name("metadata.yaml") {
                candidates.push((registry_tree.id(), blob_text(repository, meta.id())));
            } else {
                for entry in &registry_tree {
                    let Some(dir) = entry.name() else { continue };
                    if dir.starts_with('.') || entry.kind() != Some(ObjectType::Tree) {
                        continue;
                    }
                    let Ok(tree) = repository.find_tree(entry.id()) else {
                        continue;
                    };
                    let meta = tree.get_name("metadata.yaml").map(|m| m.id());
                    if let Some(meta) = meta {
                        candidates.push((tree.id(), blob_text(repository, meta)));
                    }
                }
            }
            for (tree, text) in candidates {
                match AddonMeta::parse(&text) {
                    Ok((meta, _)) => {
                        let versions = index.entry(meta.name.clone()).or_default();
                        if versions.iter().any(|v| v.version == meta.version) {
                            continue;
                        }
                        versions.push(Located {
                            version: meta.version,
                            description: meta.description,
                            tree,
                        });
                    }
                    Err(e) => {
                        tracing::warn!(registry = %self.registry, "`{name}`: skipping an addon: {e}");
                    }
                }
            }
        }
        for versions in index.values_mut() {
            versions.sort_by(|a, b| b.version.cmp(&a.version));
        }
        Ok(index)
    }

    fn files(&self, repository: &Repository, tree: Oid) -> Result<Vec<FileEntry>> {
        let tree = repository
            .find_tree(tree)
            .map_err(|e| self.git_error("cannot read the clone of", &e))?;
        let mut files = Vec::new();
        let mut too_many = false;
        tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
            let Some(name) = entry.name() else {
                return git2::TreeWalkResult::Skip;
            };
            if name.starts_with('.') {
                return git2::TreeWalkResult::Skip;
            }
            // Regular files only (0o100644 / 0o100755): no links, no submodules.
            if entry.kind() == Some(ObjectType::Blob)
                && matches!(entry.filemode(), 0o100_644 | 0o100_755)
            {
                let size = repository
                    .find_blob(entry.id())
                    .map_or(0, |b| b.size() as u64);
                files.push(FileEntry {
                    path: format!("{dir}{name}"),
                    size,
                });
                if files.len() > MAX_FILES_PER_ADDON {
                    too_many = true;
                    return git2::TreeWalkResult::Abort;
                }
            }
            git2::TreeWalkResult::Ok
        })
        .or_else(|e| if too_many { Ok(()) } else { Err(e) })
        .map_err(|e| self.git_error("cannot read the clone of", &e))?;
        if too_many {
            return Err(Error::InvalidContent {
                registry: self.registry.clone(),
                message: format!("an addon may have at most {MAX_FILES_PER_ADDON} files"),
            });
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(files)
    }

    fn read(&self, repository: &Repository, tree: Oid, addon: &str, path: &str) -> Result<Vec<u8>> {
        let missing = || self.not_found(format!("file `{path}` of addon `{addon}`"));
        let tree = repository
            .find_tree(tree)
            .map_err(|e| self.git_error("cannot read the clone of", &e))?;
        let entry = tree.get_path(Path::new(path)).map_err(|_| missing())?;
        if entry.kind() != Some(ObjectType::Blob)
            || !matches!(entry.filemode(), 0o100_644 | 0o100_755)
        {
            return Err(if entry.filemode() == 0o120_000 {
                Error::InvalidPath {
                    registry: self.registry.clone(),
                    path: path.to_owned(),
                    reason: "it is a symbolic link".to_owned(),
                }
            } else {
                missing()
            });
        }
        let blob = repository
            .find_blob(entry.id())
            .map_err(|e| self.git_error("cannot read the clone of", &e))?;
        let size = blob.size() as u64;
        if size > MAX_FILE_SIZE {
            return Err(Error::TooLarge {
                registry: self.registry.clone(),
                path: path.to_owned(),
                size,
                limit: MAX_FILE_SIZE,
            });
        }
        Ok(blob.content().to_vec())
    }
}

/// The certificates of a CA bundle, as trust anchors (and as intermediates, so that a bundle may
/// carry the chain of a server that does not send it).
struct Trust {
    anchors: Vec<rustls_pki_types::TrustAnchor<'static>>,
    certificates: Vec<rustls_pki_types::CertificateDer<'static>>,
}

impl Trust {
    fn from_pem(registry: &str, pem: &[u8]) -> Result<Self> {
        use rustls_pki_types::pem::PemObject;
        let invalid = |why: String| Error::InvalidContent {
            registry: registry.to_owned(),
            message: format!("the CA bundle {why}"),
        };
        let certificates: Vec<rustls_pki_types::CertificateDer<'static>> =
            rustls_pki_types::CertificateDer::pem_slice_iter(pem)
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| invalid(format!("is not valid PEM: {e}")))?;
        if certificates.is_empty() {
            return Err(invalid("holds no certificate".to_owned()));
        }
        let anchors = certificates
            .iter()
            .map(|c| webpki::anchor_from_trusted_cert(c).map(|a| a.to_owned()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| invalid(format!("holds a certificate that cannot be read: {e}")))?;
        Ok(Trust {
            anchors,
            certificates,
        })
    }

    /// Whether `der` (a server's certificate) chains to the bundle and names `host`.
    fn accepts(&self, der: &[u8], host: &str) -> bool {
        let certificate = rustls_pki_types::CertificateDer::from(der);
        let Ok(end_entity) = webpki::EndEntityCert::try_from(&certificate) else {
            return false;
        };
        let Ok(name) = rustls_pki_types::ServerName::try_from(host) else {
            return false;
        };
        end_entity
            .verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &self.anchors,
                &self.certificates,
                rustls_pki_types::UnixTime::now(),
                webpki::KeyUsage::server_auth(),
                None,
                None,
            )
            .is_ok()
            && end_entity.verify_is_valid_for_subject_name(&name).is_ok()
    }
}

fn blob_text(repository: &Repository, id: Oid) -> String {
    repository
        .find_blob(id)
        .ok()
        .filter(|b| (b.size() as u64) <= MAX_FILE_SIZE)
        .map(|b| String::from_utf8_lossy(b.content()).into_owned())
        .unwrap_or_default()
}

/// Whether a tag names a version: `X.Y.Z` or `vX.Y.Z` (semver, prereleases included).
fn is_version_tag(tag: &str) -> bool {
    let bare = tag.strip_prefix('v').unwrap_or(tag);
    semver::Version::parse(bare).is_ok()
}

#[async_trait]
impl AsyncReader for GitReader {
    fn registry(&self) -> &str {
        &self.inner.registry
    }

    async fn list_addons(&self) -> Result<Vec<AddonSummary>> {
        let index = self.index().await?;
        Ok(index
            .iter()
            .map(|(name, versions)| {
                let newest = versions
                    .iter()
                    .find(|v| !v.version.is_prerelease())
                    .or_else(|| versions.first());
                AddonSummary {
                    name: name.clone(),
                    versions: versions.iter().map(|v| v.version.to_string()).collect(),
                    description: newest.and_then(|v| v.description.clone()),
                }
            })
            .collect())
    }

    async fn list_files(&self, addon: &AddonRef) -> Result<Vec<FileEntry>> {
        let tree = self.locate(addon).await?;
        self.blocking(move |inner, repository| inner.files(repository, tree))
            .await
    }

    async fn read_file(&self, addon: &AddonRef, path: &str) -> Result<Vec<u8>> {
        check_relative_path(&self.inner.registry, path)?;
        let tree = self.locate(addon).await?;
        let name = addon.to_string();
        let path = path.to_owned();
        self.blocking(move |inner, repository| inner.read(repository, tree, &name, &path))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_tags_are_recognised() {
        for tag in ["1.2.3", "v1.2.3", "v2.0.0-rc.1"] {
            assert!(is_version_tag(tag), "{tag}");
        }
        for tag in ["latest", "v1.2", "release-1.2.3", "1.2.3.4"] {
            assert!(!is_version_tag(tag), "{tag}");
        }
    }
}
