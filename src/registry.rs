//! The registries addonctl searches: stored where KubeVela stores them, opened as readers.
//!
//! **Storage.** With a cluster, registries live in ConfigMap `vela-addon-registry` (key
//! `registries`, a JSON map of name → registry) in the system namespace, in KubeVela's shape
//! (`helm`, `git` (GitHub), `gitee`, `gitlab`, `oss` sub-objects) so that `vela addon registry
//! list` and addonctl see the same list. Each entry also carries an `addonctl` object with the
//! whole [`RegistrySpec`] (type, ref, priority, order of addition, …), which KubeVela ignores.
//! Registries that `vela` added (no `addonctl` object) are read from the KubeVela sub-objects.
//! Without a cluster the same document lives in a local file (mode 0600, see [`default_file`]).
//!
//! **Credentials** (token, user name, password) are never written into the ConfigMap, a log or an
//! error: they go into Secret `addon-registry-<name>` (keys `token`, `username`, `password`; the
//! Git/Gitee/GitLab sub-objects name it in `tokenSecretRef`, as KubeVela does), or into the
//! `credentials` section of the local file. Credentials embedded in an endpoint URL are moved
//! there too, and credentials KubeVela kept inline are moved on the next write.
//!
//! **Order.** Highest `priority` first, then the order in which registries were added, then the
//! name; the built-in registry is always last ([`readers`]).
//!
//! **Opening.** [`open`] turns a stored registry into a reader. It knows `helm`, `git` and `local`;
//! the other types answer with a clear "not supported yet" error.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use kube::core::GroupVersionKind;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::cluster::Cluster;
use crate::source::builtin::{BuiltinReader, BUILTIN_REGISTRY};
use crate::source::cache::CacheOptions;
use crate::source::git::{GitOptions, GitReader};
use crate::source::helm::HelmReader;
use crate::source::http::{Auth, HttpOptions};
use crate::source::local::LocalReader;
use crate::source::{self, Reader};
use crate::{Error, Result};

/// The ConfigMap KubeVela keeps its registries in.
pub const CONFIG_MAP: &str = "vela-addon-registry";
/// Its key holding the JSON map.
pub const CONFIG_MAP_KEY: &str = "registries";
/// The prefix of the Secrets holding registry credentials.
pub const SECRET_PREFIX: &str = "addon-registry-";
/// The option (in [`RegistrySpec::options`]) naming a git registry's ssh private key file: its
/// path only; the key stays in that file.
pub const SSH_KEY_OPTION: &str = "sshKey";
/// The option naming the known_hosts file a git registry's ssh host key is checked against.
pub const KNOWN_HOSTS_OPTION: &str = "knownHosts";
/// Names that cannot be used for a stored registry.
pub const RESERVED_NAMES: &[&str] = &[BUILTIN_REGISTRY, crate::source::local::LOCAL_REGISTRY];

/// The kind of a registry.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum RegistryType {
    /// A Helm chart repository (`index.yaml` + archives).
    #[default]
    Helm,
    /// A GitHub repository (through the GitHub API).
    Github,
    /// A Gitee repository (REST v5).
    Gitee,
    /// A GitLab project (REST v4).
    Gitlab,
    /// An S3 bucket.
    S3,
    /// An Alibaba Cloud OSS bucket.
    Oss,
    /// Any git repository (cloned).
    Git,
    /// A local directory.
    Local,
}

impl RegistryType {
    /// Every type, in the order help texts list them.
    pub const ALL: [RegistryType; 8] = [
        RegistryType::Helm,
        RegistryType::Github,
        RegistryType::Gitee,
        RegistryType::Gitlab,
        RegistryType::S3,
        RegistryType::Oss,
        RegistryType::Git,
        RegistryType::Local,
    ];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            RegistryType::Helm => "helm",
            RegistryType::Github => "github",
            RegistryType::Gitee => "gitee",
            RegistryType::Gitlab => "gitlab",
            RegistryType::S3 => "s3",
            RegistryType::Oss => "oss",
            RegistryType::Git => "git",
            RegistryType::Local => "local",
        }
    }
}

impl fmt::Display for RegistryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RegistryType {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        RegistryType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                Error::User(format!(
                    "unknown registry type `{s}`; use one of {}",
                    RegistryType::ALL
                        .iter()
                        .map(|t| format!("`{t}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

/// One registry, without its credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RegistrySpec {
    /// Its name (lowercase letters, digits and `-`).
    #[serde(default)]
    pub name: String,
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: RegistryType,
    /// Where it is: a URL (a directory for `local`).
    pub endpoint: String,
    /// The directory of the addons inside the repository or bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A branch or tag (git, GitHub, Gitee, GitLab).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The bucket (S3, OSS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    /// Search order: higher first (default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// Order of addition (set by the store).
    #[serde(default)]
    pub order: u64,
    /// Accept any TLS certificate (test registries only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_tls: bool,
    /// Extra trusted CA certificates (PEM text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    /// The Secret holding the credentials, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    /// Type-specific settings (for example `region`, `pathStyle` for S3).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if signature"
)]
fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// A registry's credentials. Never serialised into the registry list; `Debug` hides the values.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// A token (bearer for Helm, API token for the forges, password for git).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// A password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// The passphrase of a git registry's ssh key (Secret key `sshPassphrase`).
    #[serde(
        default,
        rename = "sshPassphrase",
        skip_serializing_if = "Option::is_none"
    )]
    pub ssh_passphrase: Option<String>,
}

impl Credentials {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.token.is_none()
            && self.username.is_none()
            && self.password.is_none()
            && self.ssh_passphrase.is_none()
    }

    /// The names of the keys set (`token`, `username`, `password`), for display.
    pub fn keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.token.is_some() {
            keys.push("token");
        }
        if self.username.is_some() {
            keys.push("username");
        }
        if self.password.is_some() {
            keys.push("password");
        }
        if self.ssh_passphrase.is_some() {
            keys.push("sshPassphrase");
        }
        keys
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credentials({})", self.keys().join(", "))
    }
}

/// A stored registry with its credentials: what [`open`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// The registry.
    pub spec: RegistrySpec,
    /// Its credentials (empty when none).
    pub credentials: Credentials,
}

/// Checks a registry name.
pub fn check_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !valid {
        return Err(Error::User(format!(
            "`{name}` is not a valid registry name: use at most 63 lowercase letters, digits and \
             `-`, starting and ending with a letter or digit"
        )));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(Error::User(format!(
            "`{name}` is reserved for addonctl's own registry; choose another name"
        )));
    }
    Ok(())
}

/// Moves credentials embedded in the endpoint (`https://user:pass@host/…`) into `credentials`
/// (a lone user name is a token for GitHub, Gitee and GitLab) and returns the clean endpoint.
pub fn strip_endpoint_credentials(
    kind: RegistryType,
    endpoint: &str,
    credentials: &mut Credentials,
) -> String {
    let Ok(mut url) = reqwest::Url::parse(endpoint.trim()) else {
        return endpoint.trim().to_owned();
    };
    if url.username().is_empty() && url.password().is_none() {
        return endpoint.trim().to_owned();
    }
    let decode = |s: &str| {
        let mut bytes = Vec::new();
        let raw = s.as_bytes();
        let mut i = 0;
        while i < raw.len() {
            let hex = raw
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match (raw[i], hex) {
                (b'%', Some(byte)) => {
                    bytes.push(byte);
                    i += 3;
                }
                (b, _) => {
                    bytes.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let username = decode(url.username());
    let password = url.password().map(decode);
    if kind == RegistryType::Git && matches!(url.scheme(), "ssh" | "ssh+git" | "git+ssh") {
        // The user of an ssh URL says who to log in as: not a secret, and needed to connect.
        let Some(password) = password else {
            return endpoint.trim().to_owned();
        };
        credentials.password.get_or_insert(password);
        let _ = url.set_password(None);
        return url.to_string();
    }
    match (password, kind) {
        (None, RegistryType::Github | RegistryType::Gitee | RegistryType::Gitlab) => {
            credentials.token.get_or_insert(username);
        }
        (password, _) => {
            if !username.is_empty() {
                credentials.username.get_or_insert(username);
            }
            if let Some(password) = password {
                credentials.password.get_or_insert(password);
            }
        }
    }
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let text = url.to_string();
    // Keep the user's trailing-slash choice.
    if !endpoint.trim().ends_with('/') && text.ends_with('/') && url.path() == "/" {
        text.trim_end_matches('/').to_owned()
    } else {
        text
    }
}

/// Sorts registries into search order: priority (highest first), order of addition, name.
pub fn sort(specs: &mut [RegistrySpec]) {
    specs.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.order.cmp(&b.order))
            .then_with(|| a.name.cmp(&b.name))
    });
}

// ---------------------------------------------------------------------------------------------
// KubeVela's JSON shape.

/// The entry written for one registry: KubeVela's sub-object plus ours.
fn to_kubevela(spec: &RegistrySpec) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(spec.name));
    let path = spec.path.clone().unwrap_or_default();
    let secret_ref = spec.secret_ref.clone();
    let with_secret = |mut object: Map<String, Value>| {
        if let Some(secret) = &secret_ref {
            object.insert("tokenSecretRef".into(), json!(secret));
        }
        Value::Object(object)
    };
    match spec.kind {
        RegistryType::Helm => {
            let mut helm = Map::new();
            helm.insert("url".into(), json!(spec.endpoint));
            if spec.insecure_skip_tls {
                helm.insert("insecureSkipTLS".into(), json!(true));
            }
            entry.insert("helm".into(), Value::Object(helm));
        }
        RegistryType::Github => {
            let mut git = Map::new();
            git.insert("url".into(), json!(spec.endpoint));
            git.insert("path".into(), json!(path));
            entry.insert("git".into(), with_secret(git));
        }
        RegistryType::Gitee => {
            let mut gitee = Map::new();
            gitee.insert("url".into(), json!(spec.endpoint));
            gitee.insert("path".into(), json!(path));
            entry.insert("gitee".into(), with_secret(gitee));
        }
        RegistryType::Gitlab => {
            let mut gitlab = Map::new();
            let (base, repo) = match reqwest::Url::parse(&spec.endpoint) {
                Ok(url) => (
                    url.origin().ascii_serialization(),
                    url.path()
                        .trim_matches('/')
                        .trim_end_matches(".git")
                        .to_owned(),
                ),
                Err(_) => (spec.endpoint.clone(), String::new()),
            };
            gitlab.insert("url".into(), json!(base));
            gitlab.insert("repo".into(), json!(repo));
            gitlab.insert("path".into(), json!(path));
            entry.insert("gitlab".into(), with_secret(gitlab));
        }
        RegistryType::Oss => {
            let mut oss = Map::new();
            oss.insert("end_point".into(), json!(spec.endpoint));
            oss.insert(
                "bucket".into(),
                json!(spec.bucket.clone().unwrap_or_default()),
            );
            oss.insert("path".into(), json!(path));
            entry.insert("oss".into(), Value::Object(oss));
        }
        RegistryType::S3 | RegistryType::Git | RegistryType::Local => {}
    }
    let mut ours = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Some(object) = ours.as_object_mut() {
        object.remove("name");
    }
    entry.insert("addonctl".into(), ours);
    Value::Object(entry)
}

/// Reads one entry of the map; inline credentials (as KubeVela may keep them) are returned apart.
fn from_kubevela(name: &str, entry: &Value) -> Option<(RegistrySpec, Credentials)> {
    let text = |object: &Value, key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let mut inline = Credentials::default();
    for object in ["helm", "git", "gitee", "gitlab"]
        .iter()
        .filter_map(|k| entry.get(*k))
    {
        inline.token = inline.token.or_else(|| text(object, "token"));
        inline.username = inline.username.or_else(|| text(object, "username"));
        inline.password = inline.password.or_else(|| text(object, "password"));
    }
    if let Some(ours) = entry.get("addonctl").filter(|v| v.is_object()) {
        let mut spec: RegistrySpec = serde_json::from_value(ours.clone()).ok()?;
        name.clone_into(&mut spec.name);
        return Some((spec, inline));
    }
    let mut spec = RegistrySpec {
        name: name.to_owned(),
        ..RegistrySpec::default()
    };
    if let Some(helm) = entry.get("helm") {
        spec.kind = RegistryType::Helm;
        spec.endpoint = text(helm, "url")?;
        spec.insecure_skip_tls = helm
            .get("insecureSkipTLS")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        spec.secret_ref = text(helm, "tokenSecretRef");
    } else if let Some((kind, object)) = [
        (RegistryType::Github, "git"),
        (RegistryType::Gitee, "gitee"),
        (RegistryType::Gitlab, "gitlab"),
    ]
    .into_iter()
    .find_map(|(kind, key)| entry.get(key).map(|o| (kind, o)))
    {
        spec.kind = kind;
        spec.endpoint = text(object, "url")?;
        if kind == RegistryType::Gitlab {
            if let Some(repo) = text(object, "repo") {
                if !spec.endpoint.trim_end_matches('/').ends_with(&repo) {
                    spec.endpoint = format!("{}/{repo}", spec.endpoint.trim_end_matches('/'));
                }
            }
        }
        spec.path = text(object, "path");
        spec.secret_ref = text(object, "tokenSecretRef");
    } else if let Some(oss) = entry.get("oss") {
        spec.kind = RegistryType::Oss;
        spec.endpoint = text(oss, "end_point").or_else(|| text(oss, "endpoint"))?;
        spec.bucket = text(oss, "bucket");
        spec.path = text(oss, "path");
    } else {
        return None;
    }
    Some((spec, inline))
}

fn parse_map(registry_json: &str) -> Result<BTreeMap<String, Value>> {
    if registry_json.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    serde_json::from_str(registry_json).map_err(|e| {
        Error::User(format!(
            "the registry list (`{CONFIG_MAP}` key `{CONFIG_MAP_KEY}`) is not a JSON map: {e}"
        ))
    })
}

// ---------------------------------------------------------------------------------------------
// The store.

/// Where registries are kept.
#[derive(Debug, Clone)]
pub enum Store {
    /// ConfigMap `vela-addon-registry` and Secrets `addon-registry-<name>` in a namespace.
    Cluster {
        /// The cluster.
        cluster: Cluster,
        /// The system namespace.
        namespace: String,
    },
    /// A local file (mode 0600).
    File(PathBuf),
}

/// The local registry file: `$ADDONCTL_REGISTRY_FILE`, else
/// `$XDG_CONFIG_HOME/addonctl/registries.json`, else `~/.config/addonctl/registries.json`.
pub fn default_file() -> PathBuf {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(file) = non_empty("ADDONCTL_REGISTRY_FILE") {
        return PathBuf::from(file);
    }
    let config = non_empty("XDG_CONFIG_HOME").map_or_else(
        || {
            non_empty("HOME")
                .map_or_else(|| PathBuf::from("."), PathBuf::from)
                .join(".config")
        },
        PathBuf::from,
    );
    config.join("addonctl").join("registries.json")
}

/// The local file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct LocalFile {
    /// The same JSON map as the ConfigMap's `registries` key.
    #[serde(default)]
    registries: BTreeMap<String, Value>,
    /// Credentials by registry name.
    #[serde(default)]
    credentials: BTreeMap<String, Credentials>,
}

fn secret_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("", "v1", "Secret")
}

fn config_map_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("", "v1", "ConfigMap")
}

/// Attempts at a read-modify-write of the ConfigMap before giving up on conflicts (each retry
/// after a short pause that grows and differs between processes, so that many writers at once
/// all get through).
const WRITE_ATTEMPTS: u32 = 20;

/// The pause before retry `attempt` of a conflicting write: 20 ms × attempt, plus up to as much
/// again derived from the clock and the process id.
async fn back_off(attempt: u32) {
    let base = 20 * u64::from(attempt);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()))
        ^ u64::from(std::process::id()).wrapping_mul(2_654_435_761);
    let jitter = seed % (base + 1);
    tokio::time::sleep(std::time::Duration::from_millis(base + jitter)).await;
}

fn kept_changing(namespace: &str) -> Error {
    Error::User(format!(
        "ConfigMap `{namespace}/{CONFIG_MAP}` kept changing while it was written ({WRITE_ATTEMPTS} attempts); nothing was changed: try again"
    ))
}

impl Store {
    /// Where the store is, for messages.
    pub fn describe(&self) -> String {
        match self {
            Store::Cluster { cluster, namespace } => format!(
                "ConfigMap `{namespace}/{CONFIG_MAP}` on cluster `{}`",
                cluster.name()
            ),
            Store::File(path) => format!("`{}`", path.display()),
        }
    }

    /// Every stored registry, in search order (the built-in registry is not among them).
    pub async fn list(&self) -> Result<Vec<RegistrySpec>> {
        let (map, _) = self.read_map().await?;
        let mut specs: Vec<RegistrySpec> = map
            .iter()
            .filter_map(|(name, entry)| {
                let parsed = from_kubevela(name, entry).map(|(spec, _)| spec);
                if parsed.is_none() {
                    tracing::warn!(
                        "registry `{name}` in {} has no source addonctl can read; skipped",
                        self.describe()
                    );
                }
                parsed
            })
            .collect();
        sort(&mut specs);
        Ok(specs)
    }

    /// Every stored registry with its credentials, in search order.
    pub async fn load(&self) -> Result<Vec<Registry>> {
        let (map, file) = self.read_map().await?;
        let mut registries = Vec::new();
        for (name, entry) in &map {
            let Some((spec, inline)) = from_kubevela(name, entry) else {
                continue;
            };
            let mut credentials = match (self, &file) {
                (Store::File(_), Some(file)) => {
                    file.credentials.get(name).cloned().unwrap_or_default()
                }
                _ => match &spec.secret_ref {
                    Some(secret) => self.read_secret(secret).await?,
                    None => Credentials::default(),
                },
            };
            if credentials.is_empty() {
                credentials = inline;
            }
            registries.push(Registry { spec, credentials });
        }
        registries.sort_by(|a, b| {
            b.spec
                .priority
                .cmp(&a.spec.priority)
                .then(a.spec.order.cmp(&b.spec.order))
                .then_with(|| a.spec.name.cmp(&b.spec.name))
        });
        Ok(registries)
    }

    /// One registry with its credentials.
    pub async fn get(&self, name: &str) -> Result<Option<Registry>> {
        Ok(self.load().await?.into_iter().find(|r| r.spec.name == name))
    }

    /// Adds a registry (its `order` is set to after every other). Fails when the name is taken.
    pub async fn add(
        &self,
        mut spec: RegistrySpec,
        credentials: Credentials,
    ) -> Result<RegistrySpec> {
        check_name(&spec.name)?;
        let name = spec.name.clone();
        let stored = self
            .modify(|map| {
                if map.contains_key(&name) {
                    return Err(Error::User(format!(
                        "registry `{name}` already exists; change it with `addonctl registry update {name}`"
                    )));
                }
                spec.order = next_order(map);
                Ok(spec.clone())
            }, Some((&name, &credentials)))
            .await?;
        Ok(stored)
    }

    /// Replaces a registry's settings (keeping its order of addition); credentials are replaced
    /// when `credentials` is `Some`, kept otherwise.
    pub async fn update(
        &self,
        spec: RegistrySpec,
        credentials: Option<Credentials>,
    ) -> Result<RegistrySpec> {
        let name = spec.name.clone();
        let existing = self.get(&name).await?.ok_or_else(|| {
            Error::User(format!(
                "registry `{name}` does not exist; add it with `addonctl registry add {name}`"
            ))
        })?;
        let credentials = credentials.unwrap_or(existing.credentials);
        let order = existing.spec.order;
        self.modify(
            |map| {
                if !map.contains_key(&name) {
                    return Err(Error::User(format!("registry `{name}` does not exist")));
                }
                Ok(RegistrySpec {
                    order,
                    ..spec.clone()
                })
            },
            Some((&name, &credentials)),
        )
        .await
    }

    /// Removes a registry and its credentials. Returns whether it existed.
    pub async fn remove(&self, name: &str) -> Result<bool> {
        let (map, _) = self.read_map().await?;
        if !map.contains_key(name) {
            return Ok(false);
        }
        match self {
            Store::File(path) => {
                let mut file = read_local(path)?;
                file.registries.remove(name);
                file.credentials.remove(name);
                write_local(path, &file)?;
            }
            Store::Cluster { cluster, namespace } => {
                let mut written = false;
                for attempt in 0..WRITE_ATTEMPTS {
                    let (mut map, version) = self.read_cluster_map().await?;
                    if map.remove(name).is_none() {
                        return Ok(false);
                    }
                    match self.write_cluster_map(&map, version.as_deref()).await {
                        Err(Error::Cluster(crate::cluster::Error::Conflict { .. })) => {
                            back_off(attempt + 1).await;
                        }
                        other => {
                            other?;
                            written = true;
                            break;
                        }
                    }
                }
                if !written {
                    return Err(kept_changing(namespace));
                }
                cluster
                    .delete(
                        &secret_gvk(),
                        Some(namespace),
                        &format!("{SECRET_PREFIX}{name}"),
                    )
                    .await?;
            }
        }
        Ok(true)
    }

    async fn read_map(&self) -> Result<(BTreeMap<String, Value>, Option<LocalFile>)> {
        match self {
            Store::File(path) => {
                let file = read_local(path)?;
                Ok((file.registries.clone(), Some(file)))
            }
            Store::Cluster { .. } => Ok((self.read_cluster_map().await?.0, None)),
        }
    }

    /// The ConfigMap's map and its resourceVersion (`None` when it does not exist).
    async fn read_cluster_map(&self) -> Result<(BTreeMap<String, Value>, Option<String>)> {
        let Store::Cluster { cluster, namespace } = self else {
            return Ok((BTreeMap::new(), None));
        };
        let Some(object) = cluster
            .get(&config_map_gvk(), Some(namespace), CONFIG_MAP)
            .await?
        else {
            return Ok((BTreeMap::new(), None));
        };
        let text = object
            .data
            .pointer(&format!("/data/{CONFIG_MAP_KEY}"))
            .and_then(Value::as_str)
            .unwrap_or("");
        Ok((parse_map(text)?, object.metadata.resource_version.clone()))
    }

    async fn write_cluster_map(
        &self,
        map: &BTreeMap<String, Value>,
        resource_version: Option<&str>,
    ) -> Result<()> {
        let Store::Cluster { cluster, namespace } = self else {
            return Ok(());
        };
        let text = serde_json::to_string(map).map_err(|e| Error::User(e.to_string()))?;
        let mut metadata = json!({"name": CONFIG_MAP, "namespace": namespace});
        if let Some(version) = resource_version {
            metadata["resourceVersion"] = json!(version);
        }
        let object = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": { CONFIG_MAP_KEY: text },
        });
        // Compare-and-swap: an existing ConfigMap is written only at the version read; a missing
        // one is created (another writer creating it first is a conflict, retried).
        if resource_version.is_some() {
            cluster.apply(&object, namespace).await?;
        } else {
            cluster.create(&object).await?;
        }
        Ok(())
    }

    async fn read_secret(&self, name: &str) -> Result<Credentials> {
        let Store::Cluster { cluster, namespace } = self else {
            return Ok(Credentials::default());
        };
        let Some(secret) = cluster.get(&secret_gvk(), Some(namespace), name).await? else {
            tracing::warn!("Secret `{namespace}/{name}` with registry credentials does not exist");
            return Ok(Credentials::default());
        };
        let field = |key: &str| {
            let encoded = secret.data.pointer(&format!("/data/{key}"))?.as_str()?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            Some(
                String::from_utf8_lossy(&bytes)
                    .trim_end_matches(['\n', '\r'])
                    .to_owned(),
            )
            .filter(|s| !s.is_empty())
        };
        Ok(Credentials {
            token: field("token"),
            username: field("username"),
            password: field("password"),
            ssh_passphrase: field("sshPassphrase"),
        })
    }

    async fn write_secret(
        &self,
        registry: &str,
        credentials: &Credentials,
    ) -> Result<Option<String>> {
        let Store::Cluster { cluster, namespace } = self else {
            return Ok(None);
        };
        let name = format!("{SECRET_PREFIX}{registry}");
        if credentials.is_empty() {
            cluster
                .delete(&secret_gvk(), Some(namespace), &name)
                .await?;
            return Ok(None);
        }
        let encode = |s: &String| json!(base64::engine::general_purpose::STANDARD.encode(s));
        let mut data = Map::new();
        if let Some(token) = &credentials.token {
            data.insert("token".into(), encode(token));
        }
        if let Some(username) = &credentials.username {
            data.insert("username".into(), encode(username));
        }
        if let Some(password) = &credentials.password {
            data.insert("password".into(), encode(password));
        }
        if let Some(passphrase) = &credentials.ssh_passphrase {
            data.insert("sshPassphrase".into(), encode(passphrase));
        }
        let object = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"addons.oam.dev/registry": registry},
            },
            "type": "Opaque",
            "data": data,
        });
        cluster.apply(&object, namespace).await?;
        Ok(Some(name))
    }

    /// Read-modify-write of one entry: `change` gets the current map and returns the new spec;
    /// credentials go to the Secret (or the file) first, then the entry is written.
    async fn modify(
        &self,
        mut change: impl FnMut(&BTreeMap<String, Value>) -> Result<RegistrySpec>,
        credentials: Option<(&str, &Credentials)>,
    ) -> Result<RegistrySpec> {
        match self {
            Store::File(path) => {
                let mut file = read_local(path)?;
                let mut spec = change(&file.registries)?;
                spec.secret_ref = None;
                if let Some((name, credentials)) = credentials {
                    if credentials.is_empty() {
                        file.credentials.remove(name);
                    } else {
                        file.credentials
                            .insert(name.to_owned(), credentials.clone());
                    }
                }
                file.registries
                    .insert(spec.name.clone(), to_kubevela(&spec));
                write_local(path, &file)?;
                Ok(spec)
            }
            Store::Cluster { cluster, namespace } => {
                cluster
                    .create_if_missing(&json!({
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": namespace},
                    }))
                    .await?;
                for attempt in 0..WRITE_ATTEMPTS {
                    let (mut map, version) = self.read_cluster_map().await?;
                    let mut spec = change(&map)?;
                    if let Some((name, credentials)) = credentials {
                        spec.secret_ref =
                            (!credentials.is_empty()).then(|| format!("{SECRET_PREFIX}{name}"));
                    }
                    map.insert(spec.name.clone(), to_kubevela(&spec));
                    match self.write_cluster_map(&map, version.as_deref()).await {
                        Err(Error::Cluster(crate::cluster::Error::Conflict { .. })) => {
                            back_off(attempt + 1).await;
                        }
                        Err(e) => return Err(e),
                        Ok(()) => {
                            // Only the writer whose entry landed writes the credentials: a
                            // concurrent add of the same name fails in `change` above, before
                            // touching the Secret, so an endpoint never gets another's token.
                            if let Some((name, credentials)) = credentials {
                                self.write_secret(name, credentials).await.map_err(|e| {
                                    Error::User(format!(
                                        "registry `{name}` was stored but its credentials were not ({e}); set them again with `addonctl registry update {name}`"
                                    ))
                                })?;
                            }
                            return Ok(spec);
                        }
                    }
                }
                Err(kept_changing(namespace))
            }
        }
    }
}

fn next_order(map: &BTreeMap<String, Value>) -> u64 {
    map.iter()
        .filter_map(|(name, entry)| from_kubevela(name, entry))
        .map(|(spec, _)| spec.order + 1)
        .max()
        .unwrap_or(1)
}

fn read_local(path: &Path) -> Result<LocalFile> {
    match fs_err::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(LocalFile::default()),
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            Error::User(format!(
                "`{}` is not a valid registry file: {e}",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LocalFile::default()),
        Err(e) => Err(e.into()),
    }
}

fn write_local(path: &Path, file: &LocalFile) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::source::cache::create_private_dir(parent)?;
    }
    let text = serde_json::to_string_pretty(file).map_err(|e| Error::User(e.to_string()))?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
    {
        use std::io::Write;
        let mut options = fs_err::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use fs_err::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut out = options.open(&temporary)?;
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&temporary, std::fs::Permissions::from_mode(0o600))?;
    }
    fs_err::rename(&temporary, path)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Registry files (`registries/*.yaml`).

/// Reads registry definitions from a YAML file: one registry, a list of them, or
/// `registries: [...]`. `${VAR}` in string values is replaced by the environment variable (an
/// unset variable is an error naming it). Credentials in the file (`token`, `username`,
/// `password`) are returned apart.
pub fn read_definitions(path: &Path) -> Result<Vec<Registry>> {
    read_definitions_with(path, &|name| std::env::var(name).ok())
}

/// [`read_definitions`] with `${VAR}` looked up by `lookup` instead of in the environment.
pub fn read_definitions_with(
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Registry>> {
    let text = fs_err::read_to_string(path)?;
    let shown = path.display().to_string();
    let (value, _) = crate::yaml::parse_single(&text)
        .map_err(|e| Error::User(format!("`{shown}` is not valid YAML: {e}")))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut object) if object.contains_key("registries") => {
            match object.remove("registries") {
                Some(Value::Array(items)) => items,
                _ => {
                    return Err(Error::User(format!(
                        "`{shown}`: `registries` must be a list"
                    )))
                }
            }
        }
        object @ Value::Object(_) => vec![object],
        _ => {
            return Err(Error::User(format!(
                "`{shown}` holds no registry definition"
            )))
        }
    };
    let mut registries = Vec::new();
    for item in items {
        let item = expand_env(&item, &shown, lookup)?;
        let mut credentials: Credentials = serde_json::from_value(item.clone()).unwrap_or_default();
        let mut object = item.as_object().cloned().unwrap_or_default();
        for key in ["token", "username", "password", "sshPassphrase"] {
            object.remove(key);
        }
        let mut spec: RegistrySpec = serde_json::from_value(Value::Object(object))
            .map_err(|e| Error::User(format!("`{shown}`: not a registry definition: {e}")))?;
        check_name(&spec.name)?;
        spec.endpoint = strip_endpoint_credentials(spec.kind, &spec.endpoint, &mut credentials);
        spec.order = 0;
        spec.secret_ref = None;
        registries.push(Registry { spec, credentials });
    }
    Ok(registries)
}

fn expand_env(value: &Value, file: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Value> {
    Ok(match value {
        Value::String(text) => Value::String(expand_text(text, file, lookup)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| expand_env(v, file, lookup))
                .collect::<Result<_>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), expand_env(v, file, lookup)?)))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

fn expand_text(text: &str, file: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        let value = lookup(name).filter(|v| !v.is_empty()).ok_or_else(|| {
            Error::User(format!(
                "`{file}` needs the environment variable `{name}`; set it (the file's comments say to what) and try again"
            ))
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Readers.

/// How [`open`] builds readers.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// The disk cache.
    pub cache: CacheOptions,
    /// HTTP settings (timeouts, retries, …); credentials and TLS come from the registry.
    pub http: Option<HttpOptions>,
}

/// A reader for a stored registry, with the run's disk cache and HTTP settings.
pub fn open(registry: &Registry, options: &OpenOptions) -> Result<Reader, source::Error> {
    let spec = &registry.spec;
    let credentials = &registry.credentials;
    match spec.kind {
        RegistryType::Helm => {
            let mut http = registry_http(spec, options);
            http.auth = match (
                &credentials.username,
                &credentials.password,
                &credentials.token,
            ) {
                (Some(username), password, _) => Auth::Basic {
                    username: username.clone(),
                    password: password.clone().unwrap_or_default(),
                },
                (None, _, Some(token)) => Auth::Bearer(token.clone()),
                _ => Auth::None,
            };
            Ok(Arc::new(HelmReader::new(
                &spec.name,
                &spec.endpoint,
                http,
                &options.cache,
            )?))
        }
        RegistryType::Git => Ok(Arc::new(GitReader::new(
            &spec.name,
            &spec.endpoint,
            GitOptions {
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
            },
            &options.cache,
        )?)),
        RegistryType::Local => {
            let dir = Path::new(&spec.endpoint);
            let dir = match &spec.path {
                Some(path) => dir.join(path),
                None => dir.to_path_buf(),
            };
            Ok(Arc::new(LocalReader::with_registry(dir, &spec.name)?))
        }
        RegistryType::Github => {
            let mut github =
                crate::source::github::GithubOptions::from_url(&spec.name, &spec.endpoint)?;
            if let Some(reference) = &spec.reference {
                github = github.with_ref(reference.clone());
            }
            if let Some(path) = &spec.path {
                github.path.clone_from(path);
            }
            github.token = credentials.token.as_deref().map(SecretString::from);
            github.cache = options.cache.clone();
            if let Some(http) = &options.http {
                github.connect_timeout = http.connect_timeout;
                github.request_timeout = http.timeout;
                github.retries = http.retries;
                github.max_retry_wait = http.max_retry_wait;
            }
            Ok(Arc::new(crate::source::github::GithubReader::new(
                github,
                spec.name.clone(),
            )?))
        }
        RegistryType::Gitee => {
            let mut gitee =
                crate::source::gitee::GiteeOptions::from_url(&spec.name, &spec.endpoint)?;
            if let Some(reference) = &spec.reference {
                gitee.git_ref = Some(reference.clone());
            }
            if let Some(path) = &spec.path {
                gitee.path.clone_from(path);
            }
            gitee.token = credentials.token.as_deref().map(SecretString::from);
            gitee.cache = options.cache.clone();
            gitee.http = registry_http(spec, options);
            Ok(Arc::new(crate::source::gitee::GiteeReader::new(
                gitee, &spec.name,
            )?))
        }
        RegistryType::Gitlab => {
            let mut gitlab =
                crate::source::gitlab::GitlabOptions::from_url(&spec.name, &spec.endpoint)?;
            if let Some(reference) = &spec.reference {
                gitlab.git_ref = Some(reference.clone());
            }
            if let Some(path) = &spec.path {
                gitlab.path.clone_from(path);
            }
            gitlab.token = credentials.token.as_deref().map(SecretString::from);
            gitlab.cache = options.cache.clone();
            gitlab.http = registry_http(spec, options);
            Ok(Arc::new(crate::source::gitlab::GitlabReader::new(
                gitlab, &spec.name,
            )?))
        }
        RegistryType::S3 | RegistryType::Oss => {
            let bucket = spec
                .bucket
                .clone()
                .ok_or_else(|| source::Error::InvalidContent {
                    registry: spec.name.clone(),
                    message: "an S3/OSS registry needs `--bucket`".to_owned(),
                })?;
            let mut s3 = crate::source::s3::S3Options::new(spec.endpoint.clone(), bucket);
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
                s3.credentials = Some(crate::source::s3::S3Credentials {
                    access_key_id: id.clone(),
                    secret_access_key: secret.clone(),
                });
            }
            s3.cache = options.cache.clone();
            Ok(Arc::new(crate::source::s3::S3Reader::from_options(
                &s3,
                spec.name.clone(),
            )))
        }
    }
}

/// The HTTP settings of a Helm, Gitee or GitLab registry: the run's, with the registry's TLS
/// settings (a self-hosted server with its own CA).
fn registry_http(spec: &RegistrySpec, options: &OpenOptions) -> HttpOptions {
    let mut http = options.http.clone().unwrap_or_default();
    http.insecure_skip_tls = spec.insecure_skip_tls;
    http.ca_bundle = spec.ca_bundle.as_ref().map(|pem| pem.as_bytes().to_vec());
    http
}

/// Readers for stored registries in order, then the built-in registry (always last). A registry
/// that cannot be opened is an `Err` in its place, for the caller to show as a warning.
pub fn readers(
    registries: &[Registry],
    options: &OpenOptions,
) -> Vec<Result<Reader, source::Error>> {
    let mut readers: Vec<Result<Reader, source::Error>> =
        registries.iter().map(|r| open(r, options)).collect();
    readers.push(Ok(Arc::new(BuiltinReader::new())));
    readers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, kind: RegistryType, endpoint: &str) -> RegistrySpec {
        RegistrySpec {
            name: name.into(),
            kind,
            endpoint: endpoint.into(),
            ..RegistrySpec::default()
        }
    }

    #[test]
    fn endpoint_credentials_are_moved_out_of_the_url() {
        let mut credentials = Credentials::default();
        let clean = strip_endpoint_credentials(
            RegistryType::Helm,
            "https://me:p%40ss@charts.example.invalid/sub/",
            &mut credentials,
        );
        assert_eq!(clean, "https://charts.example.invalid/sub/");
        assert_eq!(credentials.username.as_deref(), Some("me"));
        assert_eq!(credentials.password.as_deref(), Some("p@ss"));

        let mut credentials = Credentials::default();
        let clean = strip_endpoint_credentials(
            RegistryType::Github,
            "https://ghp_abc@github.example.invalid/o/r",
            &mut credentials,
        );
        assert_eq!(clean, "https://github.example.invalid/o/r");
        assert_eq!(credentials.token.as_deref(), Some("ghp_abc"));
        assert!(!format!("{credentials:?}").contains("ghp_abc"));
    }

    #[test]
    fn specs_round_trip_through_kubevelas_shape() {
        let mut github = spec(
            "g",
            RegistryType::Github,
            "https://github.example.invalid/o/r",
        );
        github.path = Some("addons".into());
        github.secret_ref = Some("addon-registry-g".into());
        github.priority = 3;
        github.order = 2;
        let entry = to_kubevela(&github);
        assert_eq!(entry["git"]["url"], "https://github.example.invalid/o/r");
        assert_eq!(entry["git"]["tokenSecretRef"], "addon-registry-g");
        assert_eq!(from_kubevela("g", &entry).unwrap().0, github);

        // What `vela addon registry add` writes (no `addonctl` object), inline credentials apart.
        let vela = json!({"name": "kv", "helm": {"url": "https://h.example.invalid", "username": "u", "password": "p"}});
        let (parsed, inline) = from_kubevela("kv", &vela).unwrap();
        assert_eq!(parsed.kind, RegistryType::Helm);
        assert_eq!(parsed.endpoint, "https://h.example.invalid");
        assert_eq!(inline.password.as_deref(), Some("p"));
        let gitlab = json!({"name": "gl", "gitlab": {"url": "https://gl.example.invalid", "repo": "grp/sub/proj", "path": "addons"}});
        let (parsed, _) = from_kubevela("gl", &gitlab).unwrap();
        assert_eq!(parsed.endpoint, "https://gl.example.invalid/grp/sub/proj");
        let written = to_kubevela(&parsed);
        assert_eq!(written["gitlab"]["repo"], "grp/sub/proj");
        let oss = json!({"name": "o", "oss": {"end_point": "https://oss.example.invalid", "bucket": "b"}});
        assert_eq!(
            from_kubevela("o", &oss).unwrap().0.bucket.as_deref(),
            Some("b")
        );
        assert!(from_kubevela("x", &json!({"name": "x"})).is_none());
    }

    #[test]
    fn search_order_is_priority_then_order_of_addition() {
        let mut specs = vec![
            RegistrySpec {
                order: 1,
                ..spec("a", RegistryType::Helm, "x")
            },
            RegistrySpec {
                order: 3,
                priority: 5,
                ..spec("b", RegistryType::Helm, "x")
            },
            RegistrySpec {
                order: 2,
                ..spec("c", RegistryType::Helm, "x")
            },
            RegistrySpec {
                order: 0,
                ..spec("d", RegistryType::Helm, "x")
            },
        ];
        sort(&mut specs);
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b", "d", "a", "c"]);
    }

    #[test]
    fn names_are_checked() {
        for ok in ["a", "kubevela", "my-repo-2"] {
            check_name(ok).unwrap();
        }
        for bad in [
            "",
            "Upper",
            "-a",
            "a-",
            "a_b",
            "builtin",
            "local",
            &"x".repeat(64),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn environment_variables_are_expanded_in_definitions() {
        let lookup = |name: &str| (name == "SET").then(|| "https://x.invalid".to_owned());
        let err = expand_text("${UNSET}/x", "f.yaml", &lookup).unwrap_err();
        assert!(err.to_string().contains("UNSET"));
        assert_eq!(
            expand_text("${SET}/experimental/", "f", &lookup).unwrap(),
            "https://x.invalid/experimental/"
        );
        assert_eq!(
            expand_text("no variables", "f", &lookup).unwrap(),
            "no variables"
        );
    }

    #[test]
    fn an_s3_registry_without_a_bucket_is_refused() {
        let registry = Registry {
            spec: spec("s", RegistryType::S3, "https://s3.example.invalid"),
            credentials: Credentials::default(),
        };
        let err = open(&registry, &OpenOptions::default()).unwrap_err();
        assert!(err.to_string().contains("needs `--bucket`"), "{err}");
    }
}
