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

use known_hosts::{KnownHosts, Verdict};
use tokio::sync::OnceCell;

use crate::model::registry::{Credentials, RegistrySpec, KNOWN_HOSTS_OPTION, SSH_KEY_OPTION};
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
    /// The private key file for ssh remotes (`None` = the ssh-agent's keys).
    pub ssh_key: Option<PathBuf>,
    /// The passphrase of [`GitOptions::ssh_key`], when it is encrypted.
    pub ssh_passphrase: Option<String>,
    /// The known_hosts file ssh host keys are checked against (`None` = `~/.ssh/known_hosts`).
    pub known_hosts: Option<PathBuf>,
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
            .field("ssh_key", &self.ssh_key)
            .field(
                "ssh_passphrase",
                &self.ssh_passphrase.as_ref().map(|_| "***"),
            )
            .field("known_hosts", &self.known_hosts)
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

    /// Authentication (a key file, else the ssh-agent) and host-key checking for ssh remotes.
    fn ssh_callbacks<'a>(
        &'a self,
        callbacks: &mut RemoteCallbacks<'a>,
        target: &'a SshTarget,
        known_hosts: Option<&'a KnownHosts>,
    ) {
        let options = &self.options;
        let host = target.known_hosts_name();
        let mut key_attempts = 0;
        callbacks.credentials(move |_url, user_from_url, allowed| {
            let user = user_from_url
                .or(target.user.as_deref())
                .unwrap_or("git");
            let refuse = |message: String| {
                Err(git2::Error::new(
                    git2::ErrorCode::Auth,
                    git2::ErrorClass::Ssh,
                    message,
                ))
            };
            if allowed.is_username() {
                return git2::Cred::username(user);
            }
            if !allowed.is_ssh_key() {
                return refuse(format!(
                    "`{host}` accepts no public-key authentication for user `{user}`, the only kind \
                     addonctl uses over ssh"
                ));
            }
            key_attempts += 1;
            match &options.ssh_key {
                Some(key) if key_attempts > 1 => refuse(format!(
                    "`{host}` did not accept the ssh key `{}` for user `{user}`; check that its \
                     public key is authorized for that user on the server{}",
                    key.display(),
                    if options.ssh_passphrase.is_some() { " and that the passphrase is right" } else { "" }
                )),
                Some(key) => {
                    if !key.is_file() {
                        return refuse(format!(
                            "the ssh key file `{}` does not exist or is not a file; give the path \
                             of a private key with `--ssh-key`",
                            key.display()
                        ));
                    }
                    let mut public = key.clone().into_os_string();
                    public.push(".pub");
                    let public = PathBuf::from(public);
                    git2::Cred::ssh_key(
                        user,
                        public.is_file().then_some(public.as_path()),
                        key,
                        options.ssh_passphrase.as_deref(),
                    )
                }
                None if key_attempts > 1 => refuse(format!(
                    "`{host}` accepted none of the ssh-agent's keys for user `{user}`; add the \
                     right key to the agent (`ssh-add`) or give one with `--ssh-key`"
                )),
                None if std::env::var_os("SSH_AUTH_SOCK").is_some_and(|s| !s.is_empty()) => {
                    git2::Cred::ssh_key_from_agent(user)
                }
                None => refuse(format!(
                    "`{host}` wants an ssh key for user `{user}` and none is configured: give the \
                     registry a private key with `--ssh-key PATH`, or run an ssh-agent holding \
                     the key (`SSH_AUTH_SOCK`)"
                )),
            }
        });
        let skip = options.insecure_skip_tls;
        callbacks.certificate_check(move |certificate, _host| {
            let Some(hostkey) = certificate.as_hostkey() else {
                return Ok(git2::CertificateCheckStatus::CertificatePassthrough);
            };
            if skip {
                return Ok(git2::CertificateCheckStatus::CertificateOk);
            }
            match check_host_key(target, hostkey, known_hosts) {
                Ok(()) => Ok(git2::CertificateCheckStatus::CertificateOk),
                Err(message) => {
                    if let Ok(mut problem) = self.host_key_problem.lock() {
                        *problem = Some(message.clone());
                    }
                    Err(git2::Error::new(
                        git2::ErrorCode::Certificate,
                        git2::ErrorClass::Ssh,
                        message,
                    ))
                }
            }
        });
    }

    /// The known_hosts file of an ssh remote, read (`None` for other remotes).
    fn known_hosts(&self) -> Result<Option<KnownHosts>> {
        if self.ssh.is_none() || self.options.insecure_skip_tls {
            return Ok(None);
        }
        let Some(path) = self
            .options
            .known_hosts
            .clone()
            .or_else(known_hosts::default_path)
        else {
            return Ok(None);
        };
        KnownHosts::load(&path)
            .map(Some)
            .map_err(|e| Error::InvalidContent {
                registry: self.registry.clone(),
                message: format!(
                "cannot read the known_hosts file: {e}; name a readable one with `--known-hosts`"
            ),
            })
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

/// Checks an ssh server's host key against the known_hosts file; the error says what to do.
fn check_host_key(
    target: &SshTarget,
    hostkey: &git2::cert::CertHostkey<'_>,
    known: Option<&KnownHosts>,
) -> std::result::Result<(), String> {
    let host = target.known_hosts_name();
    let skip = "or skip the check with `--insecure-skip-tls` (test servers only)";
    let Some(key) = hostkey.hostkey() else {
        return Err(format!(
            "the ssh server `{host}` sent a host key that cannot be checked; {skip}"
        ));
    };
    let kind = known_hosts::key_type(key).unwrap_or("unknown");
    let fingerprint = known_hosts::fingerprint(key);
    let Some(known) = known else {
        return Err(format!(
            "the ssh host key of `{host}` ({kind} {fingerprint}) cannot be checked: there is no \
             known_hosts file (HOME is not set); name one with `--known-hosts PATH`, {skip}"
        ));
    };
    let file = known.path.display();
    let port = if target.port == 22 {
        String::new()
    } else {
        format!("-p {} ", target.port)
    };
    match known.check(target, key) {
        Verdict::Known => Ok(()),
        Verdict::Changed(lines) => Err(format!(
            "the ssh host key of `{host}` has CHANGED: the server sent {kind} {fingerprint}, \
             which is not the key `{file}` holds for it (line {}); someone may be intercepting \
             the connection, or the server's key was replaced. If the change is expected, remove \
             the old key (`ssh-keygen -R '{host}' -f {file}`) and add the new one after checking \
             its fingerprint with the server's administrator",
            lines
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Verdict::Revoked(line) => Err(format!(
            "the ssh host key of `{host}` ({kind} {fingerprint}) is marked revoked in `{file}` \
             (line {line}); ask the server's administrator for its current key"
        )),
        Verdict::Unknown(others) => Err(format!(
            "the ssh host key of `{host}` ({kind} {fingerprint}) is unknown: `{file}` {}; check \
             the fingerprint with the server's administrator, then add the key (for example \
             `ssh-keyscan {port}-t {kind} {} >> {file}`), name another file with \
             `--known-hosts PATH`, {skip}",
            if !known.exists {
                "does not exist".to_owned()
            } else if others.is_empty() {
                "does not list the host".to_owned()
            } else {
                format!("lists it only with keys of type {}", others.join(", "))
            },
            target.host,
        )),
    }
}

/// Where an ssh remote is: from `ssh://[user@]host[:port]/path` (also `ssh+git://`,
/// `git+ssh://`) or scp-like `[user@]host:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// The user the URL names.
    pub user: Option<String>,
    /// The host (without brackets).
    pub host: String,
    /// The port (22 unless the URL gives one).
    pub port: u16,
}

impl SshTarget {
    /// The remote of `url` when it is reached over ssh.
    pub fn from_url(url: &str) -> Option<SshTarget> {
        let url = url.trim();
        if let Some((scheme, _)) = url.split_once("://") {
            if !matches!(
                scheme.to_ascii_lowercase().as_str(),
                "ssh" | "ssh+git" | "git+ssh"
            ) {
                return None;
            }
            let parsed = reqwest::Url::parse(url).ok()?;
            let host = parsed
                .host_str()?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            if host.is_empty() {
                return None;
            }
            let user = Some(parsed.username().to_owned()).filter(|u| !u.is_empty());
            return Some(SshTarget {
                user,
                host,
                port: parsed.port().unwrap_or(22),
            });
        }
        // scp-like: `[user@]host:path`, where no `/` comes before the `:` (else it is a path).
        if url.starts_with('/') || url.starts_with('.') {
            return None;
        }
        let (authority, _path) = if let Some(rest) = url
            .split_once('@')
            .map(|(_, r)| r)
            .filter(|r| r.starts_with('['))
            .or_else(|| url.starts_with('[').then_some(url))
        {
            // `[host]:path` (IPv6)
            let end = rest.find("]:")?;
            let prefix_len = url.len() - rest.len();
            (&url[..=prefix_len + end], &rest[end + 2..])
        } else {
            let colon = url.find(':')?;
            if url[..colon].contains('/') {
                return None;
            }
            (&url[..colon], &url[colon + 1..])
        };
        let (user, host) = match authority.rsplit_once('@') {
            Some((user, host)) => (Some(user.to_owned()).filter(|u| !u.is_empty()), host),
            None => (None, authority),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || host.contains('/') {
            return None;
        }
        Some(SshTarget {
            user,
            host: host.to_owned(),
            port: 22,
        })
    }

    /// The host as known_hosts names it: `host`, or `[host]:port` for another port than 22.
    pub fn known_hosts_name(&self) -> String {
        if self.port == 22 {
            self.host.clone()
        } else {
            format!("[{}]:{}", self.host, self.port)
        }
    }
}

/// The known_hosts file ssh host keys are checked against.
pub mod known_hosts {
    use std::path::{Path, PathBuf};

    use base64::Engine as _;
    use hmac::{KeyInit, Mac};
    use sha2::Digest;

    use super::SshTarget;

    /// The file's entries (read once per connection).
    #[derive(Debug, Clone)]
    pub struct KnownHosts {
        /// The file.
        pub path: PathBuf,
        /// Whether it exists.
        pub exists: bool,
        entries: Vec<Entry>,
    }

    #[derive(Debug, Clone)]
    struct Entry {
        line: usize,
        revoked: bool,
        patterns: Vec<Pattern>,
        key: Vec<u8>,
    }

    #[derive(Debug, Clone)]
    enum Pattern {
        Plain { negated: bool, glob: String },
        Hashed { salt: Vec<u8>, hash: Vec<u8> },
    }

    /// What the file says of a host's key.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Verdict {
        /// The key is known for the host.
        Known,
        /// The host is listed with other keys of the same type (at these lines).
        Changed(Vec<usize>),
        /// The key is listed as revoked (at this line).
        Revoked(usize),
        /// The host is not listed with a key of this type (the types it is listed with).
        Unknown(Vec<String>),
    }

    /// The default file: `~/.ssh/known_hosts`.
    pub fn default_path() -> Option<PathBuf> {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|home| PathBuf::from(home).join(".ssh").join("known_hosts"))
    }

    impl KnownHosts {
        /// Reads `path`; a file that does not exist lists no host.
        pub fn load(path: &Path) -> std::io::Result<KnownHosts> {
            let text = match fs_err::read_to_string(path) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
            Ok(KnownHosts {
                path: path.to_path_buf(),
                exists: text.is_some(),
                entries: text.as_deref().map(parse).unwrap_or_default(),
            })
        }

        /// What the file says of `key` (the key blob, as the server sent it) for `target`.
        pub fn check(&self, target: &SshTarget, key: &[u8]) -> Verdict {
            let name = target.known_hosts_name();
            let kind = key_type(key);
            let mut changed = Vec::new();
            let mut other_types = Vec::new();
            let mut known = false;
            for entry in self.entries.iter().filter(|e| e.matches(&name)) {
                if entry.key == key {
                    if entry.revoked {
                        return Verdict::Revoked(entry.line);
                    }
                    known = true;
                } else if entry.revoked {
                    // A revoked key that is not this one says nothing about this one.
                } else if key_type(&entry.key) == kind {
                    changed.push(entry.line);
                } else if let Some(other) = key_type(&entry.key) {
                    other_types.push(other.to_owned());
                }
            }
            if known {
                Verdict::Known
            } else if !changed.is_empty() {
                Verdict::Changed(changed)
            } else {
                other_types.sort();
                other_types.dedup();
                Verdict::Unknown(other_types)
            }
        }
    }

    impl Entry {
        fn matches(&self, name: &str) -> bool {
            let mut matched = false;
            for pattern in &self.patterns {
                match pattern {
                    Pattern::Plain { negated, glob } => {
                        if glob_matches(&glob.to_ascii_lowercase(), &name.to_ascii_lowercase()) {
                            if *negated {
                                return false;
                            }
                            matched = true;
                        }
                    }
                    Pattern::Hashed { salt, hash } => {
                        let Ok(mut mac) = hmac::Hmac::<sha1::Sha1>::new_from_slice(salt) else {
                            continue;
                        };
                        mac.update(name.as_bytes());
                        if mac.verify_slice(hash).is_ok() {
                            matched = true;
                        }
                    }
                }
            }
            matched
        }
    }

    fn parse(text: &str) -> Vec<Entry> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut entries = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let mut first = fields.next().unwrap_or_default();
            let mut revoked = false;
            if first.starts_with('@') {
                match first {
                    "@revoked" => revoked = true,
                    // Certificate authorities: host certificates are not used here.
                    _ => continue,
                }
                first = fields.next().unwrap_or_default();
            }
            let (Some(_key_type), Some(key)) = (fields.next(), fields.next()) else {
                continue;
            };
            let Ok(key) = b64.decode(key) else { continue };
            let patterns = first
                .split(',')
                .filter(|p| !p.is_empty())
                .filter_map(|p| {
                    if let Some(hashed) = p.strip_prefix("|1|") {
                        let (salt, hash) = hashed.split_once('|')?;
                        Some(Pattern::Hashed {
                            salt: b64.decode(salt).ok()?,
                            hash: b64.decode(hash).ok()?,
                        })
                    } else {
                        let (negated, glob) = match p.strip_prefix('!') {
                            Some(rest) => (true, rest),
                            None => (false, p),
                        };
                        Some(Pattern::Plain {
                            negated,
                            glob: glob.to_owned(),
                        })
                    }
                })
                .collect();
            entries.push(Entry {
                line: index + 1,
                revoked,
                patterns,
                key,
            });
        }
        entries
    }

    /// `*` and `?` wildcards, as OpenSSH's host patterns.
    fn glob_matches(pattern: &str, text: &str) -> bool {
        let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
        let (mut pi, mut ti) = (0, 0);
        let (mut star, mut mark) = (None, 0);
        while ti < t.len() {
            if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
                pi += 1;
                ti += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some(pi);
                mark = ti;
                pi += 1;
            } else if let Some(s) = star {
                pi = s + 1;
                mark += 1;
                ti = mark;
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|c| *c == '*')
    }

    /// The type a key blob names (its first SSH string), e.g. `ssh-ed25519`.
    pub fn key_type(key: &[u8]) -> Option<&str> {
        let length = u32::from_be_bytes(key.get(..4)?.try_into().ok()?) as usize;
        std::str::from_utf8(key.get(4..4 + length)?).ok()
    }

    /// The key's fingerprint as OpenSSH shows it: `SHA256:<base64 without padding>`.
    pub fn fingerprint(key: &[u8]) -> String {
        let digest = sha2::Sha256::digest(key);
        format!(
            "SHA256:{}",
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(digest)
        )
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn target(host: &str, port: u16) -> SshTarget {
            SshTarget {
                user: None,
                host: host.into(),
                port,
            }
        }

        fn blob(kind: &str, body: &[u8]) -> Vec<u8> {
            let mut out = (u32::try_from(kind.len()).unwrap_or(0))
                .to_be_bytes()
                .to_vec();
            out.extend_from_slice(kind.as_bytes());
            out.extend_from_slice(body);
            out
        }

        fn hosts(text: &str) -> KnownHosts {
            KnownHosts {
                path: PathBuf::from("known_hosts"),
                exists: true,
                entries: parse(text),
            }
        }

        #[test]
        fn plain_wildcard_negated_and_hashed_names_match() {
            let b64 = base64::engine::general_purpose::STANDARD;
            let key = blob("ssh-ed25519", b"key-one");
            let other = blob("ssh-ed25519", b"key-two");
            let rsa = blob("ssh-rsa", b"rsa-key");
            let encoded = b64.encode(&key);
            let salt = b"0123456789abcdefghij";
            let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(salt).unwrap();
            mac.update(b"[hashed.example.invalid]:2222");
            let hash = mac.finalize().into_bytes();
            let text = format!(
                "# comment\n\
                 plain.example.invalid ssh-ed25519 {encoded}\n\
                 [ported.example.invalid]:2222,other.example.invalid ssh-ed25519 {encoded} c\n\
                 *.wild.example.invalid,!bad.wild.example.invalid ssh-ed25519 {encoded}\n\
                 |1|{}|{} ssh-ed25519 {encoded}\n\
                 rsa-only.example.invalid ssh-rsa {}\n\
                 @cert-authority * ssh-ed25519 {encoded}\n",
                b64.encode(salt),
                b64.encode(hash),
                b64.encode(&rsa),
            );
            let known = hosts(&text);
            for (host, port) in [
                ("plain.example.invalid", 22),
                ("PLAIN.example.invalid", 22),
                ("ported.example.invalid", 2222),
                ("a.wild.example.invalid", 22),
                ("hashed.example.invalid", 2222),
            ] {
                assert_eq!(
                    known.check(&target(host, port), &key),
                    Verdict::Known,
                    "{host}:{port}"
                );
            }
            // Another port is another host; a negated pattern excludes; no CA lines.
            for (host, port) in [
                ("plain.example.invalid", 2222),
                ("ported.example.invalid", 22),
                ("bad.wild.example.invalid", 22),
                ("hashed.example.invalid", 22),
                ("nowhere.example.invalid", 22),
            ] {
                assert_eq!(
                    known.check(&target(host, port), &key),
                    Verdict::Unknown(Vec::new()),
                    "{host}:{port}"
                );
            }
            assert_eq!(
                known.check(&target("plain.example.invalid", 22), &other),
                Verdict::Changed(vec![2])
            );
            assert_eq!(
                known.check(&target("rsa-only.example.invalid", 22), &key),
                Verdict::Unknown(vec!["ssh-rsa".to_owned()])
            );
        }

        #[test]
        fn revoked_keys_are_refused() {
            let b64 = base64::engine::general_purpose::STANDARD;
            let key = blob("ssh-ed25519", b"key-one");
            let text = format!(
                "h.example.invalid ssh-ed25519 {0}\n@revoked * ssh-ed25519 {0}\n",
                b64.encode(&key)
            );
            assert_eq!(
                hosts(&text).check(&target("h.example.invalid", 22), &key),
                Verdict::Revoked(2)
            );
        }

        #[test]
        fn fingerprints_are_openssh_style() {
            // `ssh-keygen -lf` of this key prints this fingerprint.
            let key = base64::engine::general_purpose::STANDARD
                .decode("AAAAC3NzaC1lZDI1NTE5AAAAIFnqfSAtjGa/kT3qfPIp7/Ya26bjzh5lHkzbFt2lobrY")
                .unwrap();
            assert_eq!(key_type(&key), Some("ssh-ed25519"));
            assert_eq!(
                fingerprint(&key),
                "SHA256:OI8yyz4Reu/B+6/wCHK6sYMZlrkmgp1umGkZk6ppBDA"
            );
        }
    }
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
            .map(|(name, versions)| summarize(name, versions, |v| v.description.clone()))
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

    #[test]
    fn ssh_remotes_are_recognised_in_url_and_scp_forms() {
        let target = |user: Option<&str>, host: &str, port: u16| {
            Some(SshTarget {
                user: user.map(str::to_owned),
                host: host.to_owned(),
                port,
            })
        };
        let cases = [
            (
                "ssh://git@git.example.invalid:2222/o/r.git",
                target(Some("git"), "git.example.invalid", 2222),
            ),
            (
                "ssh://git.example.invalid/o/r.git",
                target(None, "git.example.invalid", 22),
            ),
            (
                "git+ssh://me@[::1]:2200/r.git",
                target(Some("me"), "::1", 2200),
            ),
            (
                "git@git.example.invalid:o/r.git",
                target(Some("git"), "git.example.invalid", 22),
            ),
            (
                "git.example.invalid:r.git",
                target(None, "git.example.invalid", 22),
            ),
            ("me@[::1]:r.git", target(Some("me"), "::1", 22)),
            ("https://git.example.invalid/o/r.git", None),
            ("file:///srv/r.git", None),
            ("/srv/r.git", None),
            ("./r.git", None),
            ("dir/with:colon", None),
        ];
        for (url, expected) in cases {
            assert_eq!(SshTarget::from_url(url), expected, "{url}");
        }
        let ported = SshTarget::from_url("ssh://h.example.invalid:2222/r").unwrap();
        assert_eq!(ported.known_hosts_name(), "[h.example.invalid]:2222");
        let plain = SshTarget::from_url("h.example.invalid:r").unwrap();
        assert_eq!(plain.known_hosts_name(), "h.example.invalid");
    }
}
