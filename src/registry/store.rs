//! Where registries are kept: ConfigMap `vela-addon-registry` and Secrets
//! `addon-registry-<name>` in the system namespace, or a local file (mode 0600) without a
//! cluster. Credentials never enter the ConfigMap: they go into the Secret (or the file's
//! `credentials` section); credentials KubeVela kept inline are moved on the next write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use kube::core::GroupVersionKind;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::cluster::Cluster;
use crate::error::RegistryError;
use crate::model::registry::StoredCredentials;
use crate::model::registry::{
    check_name, from_kubevela, sort, to_kubevela, Credentials, Registry, RegistrySpec, CONFIG_MAP,
    CONFIG_MAP_KEY, SECRET_PREFIX,
};
use crate::model::secret::{secret as to_secret, ExposeSecret as _};
use crate::{Error, Result};

fn parse_map(registry_json: &str) -> Result<BTreeMap<String, Value>> {
    if registry_json.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    serde_json::from_str(registry_json).map_err(|e| {
        Error::from(RegistryError::ListNotMap {
            reason: e.to_string(),
        })
    })
}

/// Where registries are kept.
#[derive(Debug, Clone)]
pub enum Store {
    /// ConfigMap `vela-addon-registry` and Secrets `addon-registry-<name>` in a namespace.
    Cluster {
        /// The cluster.
        cluster: Box<Cluster>,
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
    credentials: BTreeMap<String, StoredCredentials>,
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
    Error::from(RegistryError::StoreContended {
        namespace: namespace.to_owned(),
        attempts: WRITE_ATTEMPTS,
    })
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
                (Store::File(_), Some(file)) => file
                    .credentials
                    .get(name)
                    .cloned()
                    .map(Credentials::from)
                    .unwrap_or_default(),
                _ => match &spec.secret_ref {
                    Some(secret) => self.read_secret(secret).await?,
                    None => Credentials::default(),
                },
            };
            if credentials.is_empty() {
                credentials = inline;
            }
            let mut registry = Registry { spec, credentials };
            if let Err(why) = self.link(&mut registry).await {
                tracing::warn!("registry `{name}`: {why}; it is read without those credentials");
            }
            registries.push(registry);
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
            .modify(
                |map| {
                    if map.contains_key(&name) {
                        return Err(RegistryError::Exists { name: name.clone() }.into());
                    }
                    spec.order = next_order(map);
                    Ok(spec.clone())
                },
                Some((&name, &credentials)),
            )
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
        let existing = self
            .get(&name)
            .await?
            .ok_or_else(|| Error::from(RegistryError::NotFound { name: name.clone() }))?;
        let credentials = credentials.unwrap_or(existing.credentials);
        let order = existing.spec.order;
        self.modify(
            |map| {
                if !map.contains_key(&name) {
                    return Err(RegistryError::Removed { name: name.clone() }.into());
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
        let text = serde_json::to_string(map).map_err(RegistryError::Encode)?;
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

    /// Reads what a registry links to in Secrets into its credentials: the public keys its
    /// verification policy keeps there (`k8s://NAMESPACE/NAME`), and the Docker config of the
    /// `kubernetes.io/dockerconfigjson` (or legacy `kubernetes.io/dockercfg`) Secret its
    /// `dockerConfigSecret` option names, in the system namespace. Why the Docker config cannot
    /// be read, when one is named: for people, never with a credential in it.
    pub async fn link(&self, registry: &mut Registry) -> std::result::Result<(), String> {
        self.read_policy_keys(registry).await;
        let option = crate::source::oci::DOCKER_CONFIG_SECRET_OPTION;
        let Some(name) = registry.spec.options.get(option).filter(|n| !n.is_empty()) else {
            return Ok(());
        };
        let Store::Cluster { cluster, namespace } = self else {
            return Err(format!(
                "option `{option}` names Secret `{name}`, but registries kept in a local file have no cluster to read it from; use `--option dockerConfig=FILE`"
            ));
        };
        let secret = cluster
            .get(&secret_gvk(), Some(namespace), name)
            .await
            .map_err(|e| format!("cannot read Secret `{namespace}/{name}` (option `{option}`): {e}"))?
            .ok_or_else(|| {
                format!(
                    "Secret `{namespace}/{name}` (option `{option}`) does not exist; create it with `kubectl -n {namespace} create secret docker-registry {name} --docker-server=HOST --docker-username=USER --docker-password=…`"
                )
            })?;
        let field = |key: &str| {
            secret
                .data
                .pointer(&format!("/data/{}", key.replace('/', "~1")))?
                .as_str()
                .map(str::to_owned)
        };
        let decode = |encoded: String, key: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| {
                    format!(
                        "`data.{key}` of Secret `{namespace}/{name}` is not base64 of UTF-8 text"
                    )
                })
        };
        let config = if let Some(encoded) = field(".dockerconfigjson") {
            decode(encoded, ".dockerconfigjson")?
        } else if let Some(encoded) = field(".dockercfg") {
            // The legacy form is the `auths` map alone.
            format!("{{\"auths\": {}}}", decode(encoded, ".dockercfg")?)
        } else {
            return Err(format!(
                "Secret `{namespace}/{name}` (option `{option}`) has neither `.dockerconfigjson` nor `.dockercfg`: it is not a Docker config Secret"
            ));
        };
        registry.credentials.docker_config = to_secret(config);
        Ok(())
    }

    /// Reads the public keys an OCI registry's verification policy keeps in Secrets
    /// (`k8s://NAMESPACE/NAME`, key `cosign.pub`) into its credentials. What cannot be read is
    /// kept as why, and the policy then refuses to be used (it never fails open).
    async fn read_policy_keys(&self, registry: &mut Registry) {
        use crate::source::oci::verify::{secret_key_refs, SECRET_KEY_FIELD};
        if registry.spec.kind != crate::model::registry::RegistryType::Oci {
            return;
        }
        let Store::Cluster { cluster, .. } = self else {
            return;
        };
        // A policy file that does not read is reported when the registry is opened.
        let Ok(refs) = secret_key_refs(&registry.spec.name) else {
            return;
        };
        for (reference, namespace, name) in refs {
            let read = match cluster.get(&secret_gvk(), Some(&namespace), &name).await {
                Err(e) => Err(format!("cannot read Secret `{namespace}/{name}`: {e}")),
                Ok(None) => Err(format!("Secret `{namespace}/{name}` does not exist")),
                Ok(Some(secret)) => secret
                    .data
                    .pointer(&format!("/data/{}", SECRET_KEY_FIELD.replace('/', "~1")))
                    .and_then(Value::as_str)
                    .and_then(|encoded| {
                        base64::engine::general_purpose::STANDARD
                            .decode(encoded)
                            .ok()
                    })
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .ok_or_else(|| {
                        format!("Secret `{namespace}/{name}` has no `{SECRET_KEY_FIELD}` (base64 of a PEM public key)")
                    }),
            };
            registry.credentials.policy_keys.insert(reference, read);
        }
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
            token: field("token").and_then(to_secret),
            username: field("username"),
            password: field("password").and_then(to_secret),
            ssh_passphrase: field("sshPassphrase").and_then(to_secret),
            docker_config: None,
            policy_keys: crate::source::oci::SecretKeys::new(),
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
        // The one place a credential leaves its `SecretString`: into the Secret's data.
        let encode = |s: &str| json!(base64::engine::general_purpose::STANDARD.encode(s));
        let mut data = Map::new();
        if let Some(token) = &credentials.token {
            data.insert("token".into(), encode(token.expose_secret()));
        }
        if let Some(username) = &credentials.username {
            data.insert("username".into(), encode(username));
        }
        if let Some(password) = &credentials.password {
            data.insert("password".into(), encode(password.expose_secret()));
        }
        if let Some(passphrase) = &credentials.ssh_passphrase {
            data.insert("sshPassphrase".into(), encode(passphrase.expose_secret()));
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
                            .insert(name.to_owned(), StoredCredentials::from(credentials));
                    }
                }
                file.registries
                    .insert(spec.name.clone(), to_kubevela(&spec));
                write_local(path, &file)?;
                Ok(spec)
            }
            Store::Cluster { cluster, namespace } => {
                cluster
                    .create_if_missing(&crate::model::wire::namespace_object(namespace))
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
                                    Error::from(RegistryError::CredentialsNotStored {
                                        name: name.to_owned(),
                                        reason: e.to_string(),
                                    })
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
            Error::from(RegistryError::InvalidFile {
                path: path.to_owned(),
                reason: e.to_string(),
            })
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LocalFile::default()),
        Err(e) => Err(e.into()),
    }
}

fn write_local(path: &Path, file: &LocalFile) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::source::cache::create_private_dir(parent)?;
    }
    let text = serde_json::to_string_pretty(file).map_err(RegistryError::Encode)?;
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
