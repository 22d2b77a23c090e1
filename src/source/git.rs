//! Any git repository as a registry (libgit2 through `git2`): `https://`, `http://`, `file://`
//! and `ssh://` URLs, scp-like `user@host:path` and local paths.
//!
//! Expected flow, once per run (the first call that needs it):
//! 1. ask the server for its references (one connection: one `info/refs` request over http, one
//!    ssh session);
//! 2. pick the commits to read: the given ref (a branch or a tag; nothing else is then read),
//!    else the default branch plus every tag named `X.Y.Z` or `vX.Y.Z`;
//! 3. when the cache already holds exactly those commits, stop there (a warm run costs that one
//!    request; `--refresh` fetches anyway); else fetch them, shallow (depth 1; full when the
//!    transport cannot do shallow), into a bare repository in the cache
//!    (`<cache>/git/<hash of the URL>`), so the next run only fetches what changed; when the
//!    server cannot be reached, what the cache holds is used, with a warning (not with
//!    `--refresh`, which asks for the server's answer);
//! 4. index: in each commit, the registry directory (`path`, default the root) is one addon (it
//!    holds `metadata.yaml`) or holds one addon per sub-directory. An addon's versions are the
//!    versions its `metadata.yaml` declares across those commits, so tags become versions.
//!
//! Files are read from the object database, never checked out: symbolic links and submodules are
//! not files of the addon, and paths are checked like every reader's.
//!
//! **ssh.** The client authenticates with a private key file ([`GitOptions::ssh_key`], read by
//! libssh2, never by us, and never shown) or, without one, with the keys of the ssh-agent at
//! `SSH_AUTH_SOCK`. The user is the URL's (`git` when it names none). The server's host key is
//! checked against a known_hosts file ([`GitOptions::known_hosts`], default
//! `~/.ssh/known_hosts`; plain, wildcard and hashed host names, `[host]:port` for other ports,
//! `@revoked`); an unknown or changed key stops the fetch with an error naming the host, the key's
//! fingerprint and what to do. [`GitOptions::insecure_skip_tls`] skips the check (test servers
//! only).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use git2::{Direction, FetchOptions, ObjectType, Oid, RemoteCallbacks, Repository, TreeWalkMode};

use tokio::sync::OnceCell;

pub mod known_hosts;
mod ssh;
mod target;
mod trust;

use known_hosts::KnownHosts;
pub use target::SshTarget;
use trust::Trust;

use crate::model::registry::{Credentials, RegistrySpec, KNOWN_HOSTS_OPTION, SSH_KEY_OPTION};
use crate::model::secret::{masked, ExposeSecret, SecretString};
use crate::model::{AddonMeta, AddonVersion};
use crate::source::cache::{create_private_dir, CacheOptions, DiskCache};
use crate::source::http::redact;
use crate::source::OpenOptions;
use crate::source::{
    check_relative_path, serve_version, summarize, AddonRef, AddonSummary, AsyncReader, Error,
    FileEntry, IndexedVersion, Result, MAX_FILES_PER_ADDON, MAX_FILE_SIZE,
};

/// How to reach a git repository.
#[derive(Clone, Default)]
pub struct GitOptions {
    /// A branch or tag to read; `None` = the default branch plus the version tags.
    pub reference: Option<String>,
    /// The registry directory inside the repository (`""` = the root).
    pub path: String,
    /// A token for https (sent as the password; the user name is `username` or `git`).
    pub token: Option<SecretString>,
    /// A user name for https.
    pub username: Option<String>,
    /// A password for https.
    pub password: Option<SecretString>,
    /// Accept any TLS certificate (test servers only).
    pub insecure_skip_tls: bool,
    /// Extra trusted CA certificates for https remotes (PEM, one or more): a server certificate
    /// issued by one of them (directly, or by an intermediate also in the bundle) for the remote's
    /// host name is accepted, besides those the system trusts.
    pub ca_bundle: Option<Vec<u8>>,
    /// The private key file for ssh remotes (`None` = the ssh-agent's keys).
    pub ssh_key: Option<PathBuf>,
    /// The passphrase of [`GitOptions::ssh_key`], when it is encrypted.
    pub ssh_passphrase: Option<SecretString>,
    /// The known_hosts file ssh host keys are checked against (`None` = `~/.ssh/known_hosts`).
    pub known_hosts: Option<PathBuf>,
}

impl fmt::Debug for GitOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitOptions")
            .field("reference", &self.reference)
            .field("path", &self.path)
            .field("username", &self.username)
            .field("token", &masked(self.token.as_ref()))
            .field("password", &masked(self.password.as_ref()))
            .field("insecure_skip_tls", &self.insecure_skip_tls)
            .field("ca_bundle", &self.ca_bundle.as_ref().map(Vec::len))
            .field("ssh_key", &self.ssh_key)
            .field("ssh_passphrase", &masked(self.ssh_passphrase.as_ref()))
            .field("known_hosts", &self.known_hosts)
            .finish()
    }
}

/// One version of one addon: the tree of its directory.
#[derive(Debug, Clone)]
struct Located {
    version: AddonVersion,
    description: Option<String>,
    tags: Vec<String>,
    tree: Oid,
}

impl IndexedVersion for Located {
    fn version(&self) -> &AddonVersion {
        &self.version
    }
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
    /// Where the remote is, when it is reached over ssh.
    ssh: Option<SshTarget>,
    /// Why the last ssh host key was refused (libgit2 replaces the callback's message).
    host_key_problem: std::sync::Mutex<Option<String>>,
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
    /// The reader of a stored git registry: ref, path, TLS, credentials and the ssh options.
    pub fn from_spec(
        spec: &RegistrySpec,
        credentials: &Credentials,
        options: &OpenOptions,
    ) -> Result<Self> {
        let git = GitOptions {
            reference: spec.reference.clone(),
            path: spec.path.clone().unwrap_or_default(),
            token: credentials.token.clone(),
            username: credentials.username.clone(),
            password: credentials.password.clone(),
            insecure_skip_tls: spec.insecure_skip_tls,
            ca_bundle: spec.ca_bundle.as_ref().map(|pem| pem.as_bytes().to_vec()),
            ssh_key: spec.options.get(SSH_KEY_OPTION).map(PathBuf::from),
            ssh_passphrase: credentials.ssh_passphrase.clone(),
            known_hosts: spec.options.get(KNOWN_HOSTS_OPTION).map(PathBuf::from),
        };
        Self::new(&spec.name, &spec.endpoint, git, &options.cache)
    }

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
        if let Some(key) = &options.ssh_key {
            if key.as_os_str().is_empty() {
                return Err(Error::InvalidContent {
                    registry: registry.to_owned(),
                    message: "the ssh key path is empty".to_owned(),
                });
            }
        }
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
                ssh: SshTarget::from_url(&url),
                host_key_problem: std::sync::Mutex::new(None),
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
        serve_version(&addon.name, versions, addon.version.as_deref())
            .map(|v| v.tree)
            .map_err(|what| self.inner.not_found(what))
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
            git2::ErrorCode::Certificate if self.ssh.is_some() => {
                let problem = self
                    .host_key_problem
                    .lock()
                    .ok()
                    .and_then(|mut p| p.take())
                    .unwrap_or_else(|| e.message().to_owned());
                Error::InvalidContent {
                    registry: self.registry.clone(),
                    message: format!("{doing} `{}`: {problem}", redact(&self.url)),
                }
            }
            _ if self.ssh.is_some()
                && e.class() == git2::ErrorClass::Ssh
                && e.message().contains("authenticate") =>
            {
                Error::Unauthorized {
                    registry: self.registry.clone(),
                    message: format!(
                        "{message} (check the ssh key{}, and that its public key is authorized on the server)",
                        if self.options.ssh_passphrase.is_some() { " and its passphrase" } else { "" }
                    ),
                }
            }
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

    fn callbacks<'a>(&'a self, known_hosts: Option<&'a KnownHosts>) -> RemoteCallbacks<'a> {
        let mut callbacks = RemoteCallbacks::new();
        if let Some(target) = &self.ssh {
            self.ssh_callbacks(&mut callbacks, target, known_hosts);
            return callbacks;
        }
        let options = &self.options;
        let mut attempts = 0;
        callbacks.credentials(move |_url, _user, allowed| {
            attempts += 1;
            let secret = options
                .token
                .as_ref()
                .or(options.password.as_ref())
                .map(ExposeSecret::expose_secret);
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
        let known_hosts = self.known_hosts()?;
        let mut remote = repository
            .remote_anonymous(&self.url)
            .map_err(|e| self.git_error("invalid remote", &e))?;
        // 1. The references the server has (and the commit or tag each names).
        let (wanted, remote_ids): (Vec<(String, String)>, BTreeMap<String, Oid>) = {
            let connection = remote
                .connect_auth(
                    Direction::Fetch,
                    Some(self.callbacks(known_hosts.as_ref())),
                    None,
                )
                .map_err(|e| self.git_error("cannot connect to", &e))?;
            let listed = connection
                .list()
                .map_err(|e| self.git_error("cannot list the references of", &e))?;
            let remote_ids: BTreeMap<String, Oid> = listed
                .iter()
                .map(|h| (h.name().to_owned(), h.oid()))
                .collect();
            let heads: Vec<(String, Option<String>)> = listed
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
            (self.wanted_refs(&heads, default_branch)?, remote_ids)
        };
        // 2. Nothing to fetch when the cache holds exactly those commits (unless --refresh).
        let current = !self.refresh
            && repository.odb().is_ok_and(|odb| {
                wanted.iter().all(|(source, local)| {
                    remote_ids.get(source).is_some_and(|id| {
                        repository.refname_to_id(local).ok() == Some(*id) && odb.exists(*id)
                    })
                })
            });
        if current {
            tracing::debug!(registry = %self.registry, "the cached clone is up to date; nothing fetched");
        } else {
            self.fetch_refs(&mut remote, &wanted, known_hosts.as_ref())?;
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

    /// Fetches `(remote ref, local ref)` pairs, shallow when the transport can.
    fn fetch_refs(
        &self,
        remote: &mut git2::Remote<'_>,
        wanted: &[(String, String)],
        known_hosts: Option<&KnownHosts>,
    ) -> Result<()> {
        let refspecs: Vec<String> = wanted
            .iter()
            .map(|(source, local)| format!("+{source}:{local}"))
            .collect();
        let fetch = |remote: &mut git2::Remote<'_>, depth: i32| {
            let mut options = FetchOptions::new();
            options.remote_callbacks(self.callbacks(known_hosts));
            options.download_tags(git2::AutotagOption::None);
            options.update_fetchhead(false);
            if depth > 0 {
                options.depth(depth);
            }
            remote.fetch(&refspecs, Some(&mut options), None)
        };
        if let Err(e) = fetch(remote, 1) {
            if matches!(
                e.code(),
                git2::ErrorCode::Auth | git2::ErrorCode::Certificate
            ) {
                return Err(self.git_error("cannot fetch", &e));
            }
            tracing::debug!(registry = %self.registry, "shallow fetch failed ({}); fetching in full", e.message());
            fetch(remote, 0).map_err(|e| self.git_error("cannot fetch", &e))?;
        }
        Ok(())
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
                            tags: meta.tags,
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
                summarize(
                    name,
                    versions,
                    |v| v.description.clone(),
                    |v| v.tags.clone(),
                )
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
mod tests;
