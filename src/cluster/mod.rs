//! Cluster access: one [`Cluster`] per API server, with cached discovery, server-side apply
//! (field manager `addonctl`, forced), and errors mapped to what a user needs to act on.
//!
//! Every request goes through a counting layer so that commands and benchmarks can report how
//! many calls and writes an operation made, and through the cluster's rate limit ([`rate`];
//! default [`rate::DEFAULT_QPS`] requests per second, bursts of [`rate::DEFAULT_BURST`]).

mod connect;
#[cfg(test)]
pub(crate) mod fake;
pub mod kubeconfig;
pub mod rate;
pub mod retry;
pub mod set;
mod watch;
pub mod watchdog;

pub use rate::RateLimit;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::KubeConfigOptions;
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};
use kube::Client;
use serde_json::{json, Value};

pub use crate::model::wire::FIELD_MANAGER;

/// A request to the API server failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The credentials may not do this.
    #[error("cluster `{cluster}` refused: {message}")]
    Forbidden {
        /// The cluster's name.
        cluster: String,
        /// The server's message (names the user, the verb and the resource).
        message: String,
    },
    /// The object (or kind) does not exist.
    #[error("cluster `{cluster}`: {message}")]
    NotFound {
        /// The cluster's name.
        cluster: String,
        /// What is missing.
        message: String,
    },
    /// A write conflicted with another writer.
    #[error("cluster `{cluster}`: conflict: {message}")]
    Conflict {
        /// The cluster's name.
        cluster: String,
        /// The server's message.
        message: String,
    },
    /// The server rejected an object as invalid.
    #[error("cluster `{cluster}` rejected {object}: {message}")]
    Invalid {
        /// The cluster's name.
        cluster: String,
        /// The object, as `Kind namespace/name`.
        object: String,
        /// The server's message.
        message: String,
    },
    /// The server cannot be reached.
    #[error("cannot reach cluster `{cluster}` at {server}: {message}")]
    Unreachable {
        /// The cluster's name.
        cluster: String,
        /// Its address.
        server: String,
        /// Why.
        message: String,
    },
    /// The kubeconfig cannot be used.
    #[error("kubeconfig: {0}")]
    Config(String),
    /// Any other failure of the API server.
    #[error("cluster `{cluster}`: {message}")]
    Api {
        /// The cluster's name.
        cluster: String,
        /// What failed.
        message: String,
    },
}

impl Error {
    /// Whether the user can fix this (credentials, kubeconfig, invalid object), as opposed to the
    /// server or network failing.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::Forbidden { .. }
                | Error::NotFound { .. }
                | Error::Invalid { .. }
                | Error::Config(_)
        )
    }
}

/// Whether a failure already turned into text (a cluster's outcome) was an
/// [`Error::Forbidden`]: its message has the form `cluster `x` refused: …`.
pub fn is_forbidden_text(text: &str) -> bool {
    text.contains("` refused: ")
}

/// `Result` with the cluster [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How to reach a cluster.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// A kubeconfig file; `None` = the `KUBECONFIG` list (merged), `~/.kube/config`, or in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// A context of the kubeconfig; `None` = its current context.
    pub context: Option<String>,
    /// The limit of each request (connect, read, write, and the whole request);
    /// `None` = [`DEFAULT_REQUEST_TIMEOUT`].
    pub timeout: Option<Duration>,
}

/// The request timeout of every cluster unless configured (`--request-timeout`).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest a TCP and TLS connect may take, whatever the request timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Sets a kube config's socket timeouts from a request timeout.
fn bound(config: &mut kube::Config, timeout: Duration) {
    config.connect_timeout = Some(timeout.min(MAX_CONNECT_TIMEOUT));
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
}

/// Requests and writes made through one [`Cluster`].
#[derive(Debug, Default)]
pub struct Counters {
    requests: AtomicU64,
    writes: AtomicU64,
}

impl Counters {
    /// Every request so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    /// Requests with a writing method (POST, PUT, PATCH, DELETE) so far, access reviews
    /// excepted.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

type Discovered = Option<(ApiResource, ApiCapabilities)>;
/// The resources of one group version (`None`: not served), by group and version.
type Versions = HashMap<(String, String), Option<Vec<(ApiResource, ApiCapabilities)>>>;
/// Managed clusters by name, with the fingerprint of the credentials they were made with.
type Managed = HashMap<String, ([u8; 32], Cluster)>;

/// One API server.
#[derive(Clone)]
pub struct Cluster {
    name: String,
    server: String,
    client: Client,
    discovery: Arc<Mutex<HashMap<GroupVersionKind, Discovered>>>,
    /// The resources of each group version read so far (`None`: not served), so that each
    /// group version is read once, whatever number of its kinds are looked up.
    versions: Arc<Mutex<Versions>>,
    counters: Arc<Counters>,
    limits: rate::Limits,
    timeout: Duration,
    notice: watchdog::NoticeSlot,
    /// The managed clusters reached through this one, by name: one client (connection pool,
    /// discovery cache, rate bucket) per cluster per process.
    managed: Arc<Mutex<Managed>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.name)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// A `Kind namespace/name` label for messages.
pub fn describe(object: &Value) -> String {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("object");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) => format!("{kind} `{ns}/{name}`"),
        None => format!("{kind} `{name}`"),
    }
}

/// Whether a stored object (as an apply returned it) was written after `revision` was read
/// ([`Cluster::revision`]): a server-side apply that changes nothing keeps the object's
/// `resourceVersion`. Without a revision, or with a `resourceVersion` that is not a number,
/// every object counts as written.
pub fn written_since(stored: &DynamicObject, revision: Option<u64>) -> bool {
    let version = stored
        .metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse::<u64>().ok());
    match (version, revision) {
        (Some(version), Some(revision)) => version > revision,
        _ => true,
    }
}

/// The group/version/kind of an object.
pub fn gvk_of(object: &Value) -> Option<GroupVersionKind> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Some(GroupVersionKind::gvk(group, version, kind))
}

impl Cluster {
    /// Connects with a kubeconfig (or the environment). The cluster is named `local`, the name
    /// KubeVela gives the control plane.
    pub async fn connect(options: &ConnectOptions) -> Result<Self> {
        let opts = KubeConfigOptions {
            context: options.context.clone(),
            ..KubeConfigOptions::default()
        };
        let mut config = match kubeconfig::load(options.kubeconfig.as_deref())? {
            Some(loaded) => kube::Config::from_custom_kubeconfig(loaded.config, &opts)
                .await
                .map_err(|e| Error::Config(format!("{}: {e}", loaded.origin)))?,
            None => kube::Config::incluster().map_err(|_| {
                Error::Config(
                    "no kubeconfig: `KUBECONFIG` is unset or empty, `~/.kube/config` does not exist and this is not a pod; pass `--kubeconfig` or set `KUBECONFIG`".to_owned(),
                )
            })?,
        };
        let timeout = options.timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT);
        bound(&mut config, timeout);
        Self::from_config_with("local", config, timeout)
    }

    /// Builds a cluster from a kube `Config`, counting every request, limited to the default
    /// [`RateLimit`] (see [`Cluster::set_rate_limit`]), each request bounded by the config's read
    /// timeout (or [`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn from_config(name: &str, config: kube::Config) -> Result<Self> {
        let timeout = config.read_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT);
        Self::from_config_with(name, config, timeout)
    }

    fn from_config_with(name: &str, config: kube::Config, timeout: Duration) -> Result<Self> {
        let server = config.cluster_url.to_string();
        let notice = watchdog::NoticeSlot::default();
        let watch = watchdog::Watch {
            cluster: name.to_owned(),
            server: server.trim_end_matches('/').to_owned(),
            timeout,
            notice: notice.clone(),
        };
        let counters = Arc::new(Counters::default());
        let counting = Arc::clone(&counters);
        let limits = rate::Limits::new(RateLimit::default());
        let client = connect::builder(&config)
            .map_err(|e| Error::Config(e.to_string()))?
            .with_layer(&tower::util::MapRequestLayer::new(
                move |request: http::Request<kube::client::Body>| {
                    counting.requests.fetch_add(1, Ordering::Relaxed);
                    // An access review is a POST that changes nothing.
                    let review = request
                        .uri()
                        .path()
                        .starts_with("/apis/authorization.k8s.io/");
                    if !review
                        && !matches!(*request.method(), http::Method::GET | http::Method::HEAD)
                    {
                        counting.writes.fetch_add(1, Ordering::Relaxed);
                    }
                    request
                },
            ))
            .with_layer(&rate::RateLimitLayer::new(limits.clone()))
            .with_layer(&watchdog::WatchdogLayer(watch))
            .build();
        Ok(Cluster {
            name: name.to_owned(),
            server: server.trim_end_matches('/').to_owned(),
            client,
            discovery: Arc::new(Mutex::new(HashMap::new())),
            versions: Arc::default(),
            counters,
            limits,
            timeout,
            notice,
            managed: Arc::default(),
        })
    }

    /// A cluster over a client made elsewhere, such as an in-process fake API in tests
    /// (`kube::Client::new(service, default_namespace)`, as kube-rs's own tests do). Its
    /// requests are neither counted, rate limited nor watched for slow answers (the client's own
    /// layers decide), and [`Cluster::request_timeout`] is [`DEFAULT_REQUEST_TIMEOUT`].
    pub fn from_client(name: &str, client: Client) -> Self {
        Cluster {
            name: name.to_owned(),
            server: format!("in-process client `{name}`"),
            client,
            discovery: Arc::new(Mutex::new(HashMap::new())),
            versions: Arc::default(),
            counters: Arc::new(Counters::default()),
            limits: rate::Limits::new(RateLimit::default()),
            timeout: DEFAULT_REQUEST_TIMEOUT,
            notice: watchdog::NoticeSlot::default(),
            managed: Arc::default(),
        }
    }

    /// The limit of each request to this cluster.
    pub fn request_timeout(&self) -> Duration {
        self.timeout
    }

    /// Where "still waiting for the server" lines go (see [`watchdog`]); the CLI prints them.
    pub fn set_notice(&self, notice: watchdog::Notice) {
        self.notice.set(notice);
    }

    /// A client for a managed cluster that behaves as this one: the same request timeout, rate
    /// limit and notice hook (each cluster has its own rate bucket). Made once per cluster and
    /// credentials: later calls return the same client (its connections and discovery shared).
    pub async fn managed(
        &self,
        name: &str,
        credentials: &set::ClusterCredentials,
    ) -> Result<Cluster> {
        let fingerprint = credentials.fingerprint();
        let known = self
            .managed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .filter(|(f, _)| *f == fingerprint)
            .map(|(_, c)| c.clone());
        let client = if let Some(client) = known {
            client
        } else {
            let client = credentials.connect(name, self.timeout).await?;
            self.managed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(name.to_owned(), (fingerprint, client.clone()));
            client
        };
        if client.rate_limit() != self.rate_limit() {
            client.set_rate_limit(self.rate_limit());
        }
        if let Some(notice) = self.notice.get() {
            client.set_notice(notice);
        }
        Ok(client)
    }

    /// Changes the request rate limit of this cluster (and its clones).
    pub fn set_rate_limit(&self, limit: RateLimit) {
        self.limits.set(limit);
    }

    /// The request rate limit of this cluster.
    pub fn rate_limit(&self) -> RateLimit {
        self.limits.get()
    }

    /// The cluster's name (`local` for the control plane).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The API server's address.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Request counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The underlying client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn map_error(&self, error: kube::Error, object: &str) -> Error {
        let cluster = self.name.clone();
        match error {
            kube::Error::Api(response) => match response.code {
                401 => Error::Forbidden {
                    cluster,
                    message: format!(
                        "the credentials were not accepted (401 Unauthorized): {}",
                        response.message
                    ),
                },
                403 => Error::Forbidden {
                    cluster,
                    message: response.message,
                },
                404 => Error::NotFound {
                    cluster,
                    message: format!("{object} not found: {}", response.message),
                },
                409 => Error::Conflict {
                    cluster,
                    message: response.message,
                },
                400 | 422 => Error::Invalid {
                    cluster,
                    object: object.to_owned(),
                    message: response.message,
                },
                code => Error::Api {
                    cluster,
                    message: format!(
                        "{object}: {} ({code} {})",
                        response.message, response.reason
                    ),
                },
            },
            kube::Error::HyperError(e) => Error::Unreachable {
                cluster,
                server: self.server.clone(),
                message: crate::chain::chain(&e),
            },
            kube::Error::Service(e) => Error::Unreachable {
                cluster,
                server: self.server.clone(),
                message: crate::chain::chain(e.as_ref()),
            },
            kube::Error::Auth(e) => Error::Forbidden {
                cluster,
                message: format!("cannot authenticate: {e}"),
            },
            other => Error::Api {
                cluster,
                message: format!("{object}: {}", crate::chain::chain(&other)),
            },
        }
    }

    /// The API resource serving a kind, or `None` when the server does not serve it. Cached;
    /// a kind not served is looked up again after `refresh_discovery`.
    pub async fn resource(&self, gvk: &GroupVersionKind) -> Result<Discovered> {
        if let Some(found) = self
            .discovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(gvk)
        {
            return Ok(found.clone());
        }
        let found = self.group_version(gvk).await?.and_then(|resources| {
            resources
                .into_iter()
                .find(|(resource, _)| resource.kind == gvk.kind)
        });
        self.discovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(gvk.clone(), found.clone());
        Ok(found)
    }

    /// The resources of a kind's group version (read once; `None` when not served).
    async fn group_version(
        &self,
        gvk: &GroupVersionKind,
    ) -> Result<Option<Vec<(ApiResource, ApiCapabilities)>>> {
        let key = (gvk.group.clone(), gvk.version.clone());
        if let Some(known) = self
            .versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(known.clone());
        }
        let gv = kube::core::GroupVersion::gv(&gvk.group, &gvk.version);
        let found = match kube::discovery::pinned_group(&self.client, &gv).await {
            Ok(group) => Some(group.versioned_resources(&gvk.version)),
            Err(kube::Error::Api(r)) if r.code == 404 => None,
            Err(kube::Error::Discovery(_)) => None,
            Err(e) => {
                return Err(self.map_error(
                    e,
                    &format!("discovery of {}/{} {}", gvk.group, gvk.version, gvk.kind),
                ))
            }
        };
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, found.clone());
        Ok(found)
    }

    /// Forgets kinds found not served, and the group versions they were looked up in (call
    /// after installing CRDs).
    pub fn refresh_discovery(&self) {
        let mut discovery = self
            .discovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let missing: Vec<(String, String)> = discovery
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| (k.group.clone(), k.version.clone()))
            .collect();
        discovery.retain(|_, v| v.is_some());
        drop(discovery);
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|k, v| v.is_some() && !missing.contains(k));
    }

    /// Whether the server serves a kind.
    pub async fn serves(&self, gvk: &GroupVersionKind) -> Result<bool> {
        Ok(self.resource(gvk).await?.is_some())
    }

    /// The server's current revision, read with a one-item list of Secrets in `namespace`:
    /// a later write to any object gives it a newer `resourceVersion` (see [`written_since`]).
    /// `None` when it cannot be read or is not a number (servers other than kube-apiserver's
    /// etcd storage); callers then count every apply as a write.
    pub async fn revision(&self, namespace: &str) -> Option<u64> {
        let api: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(self.client.clone(), namespace);
        let list = api.list_metadata(&ListParams::default().limit(1)).await;
        match list {
            Ok(list) => list.metadata.resource_version?.parse().ok(),
            Err(e) => {
                tracing::debug!(cluster = %self.name, "cannot read the revision: {e}");
                None
            }
        }
    }

    /// The versions in which the server serves `kind` of `group` (empty when it serves none).
    pub async fn served_versions(&self, group: &str, kind: &str) -> Result<Vec<String>> {
        let found = match kube::discovery::group(&self.client, group).await {
            Ok(found) => found,
            Err(kube::Error::Api(r)) if r.code == 404 => return Ok(Vec::new()),
            Err(kube::Error::Discovery(_)) => return Ok(Vec::new()),
            Err(e) => return Err(self.map_error(e, &format!("discovery of {group}"))),
        };
        Ok(found
            .versions()
            .filter(|v| {
                found
                    .versioned_resources(v)
                    .iter()
                    .any(|(r, _)| r.kind == kind)
            })
            .map(str::to_owned)
            .collect())
    }

    /// The server's Kubernetes version (`v1.20.2`).
    pub async fn kubernetes_version(&self) -> Result<String> {
        self.client
            .apiserver_version()
            .await
            .map(|v| v.git_version)
            .map_err(|e| self.map_error(e, "/version"))
    }

    async fn api_for(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        what: &str,
    ) -> Result<(Api<DynamicObject>, bool)> {
        let Some((resource, caps)) = self.resource(gvk).await? else {
            return Err(Error::NotFound {
                cluster: self.name.clone(),
                message: format!(
                    "{what}: the server does not serve {}{}{} (is its CRD installed?)",
                    gvk.group,
                    if gvk.group.is_empty() { "" } else { "/" },
                    format_args!("{} {}", gvk.version, gvk.kind)
                ),
            });
        };
        let namespaced = caps.scope == Scope::Namespaced;
        let api = match (namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &resource),
            (true, None) | (false, _) => Api::all_with(self.client.clone(), &resource),
        };
        Ok((api, namespaced))
    }

    /// Server-side applies an object (forced, field manager `addonctl`). Namespaced objects
    /// without a namespace go to `default_namespace`. Returns the object as stored.
    pub async fn apply(&self, object: &Value, default_namespace: &str) -> Result<DynamicObject> {
        self.apply_placed(object, default_namespace, None).await
    }

    /// [`Cluster::apply`], with namespaced objects forced into `namespace` when given (a topology
    /// policy's namespace).
    pub async fn apply_placed(
        &self,
        object: &Value,
        default_namespace: &str,
        namespace_override: Option<&str>,
    ) -> Result<DynamicObject> {
        let what = describe(object);
        let gvk = gvk_of(object).ok_or_else(|| Error::Invalid {
            cluster: self.name.clone(),
            object: what.clone(),
            message: "the object has no `apiVersion` or `kind`".to_owned(),
        })?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Invalid {
                cluster: self.name.clone(),
                object: what.clone(),
                message: "the object has no `metadata.name`".to_owned(),
            })?
            .to_owned();
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(default_namespace);
        let namespace = namespace_override.unwrap_or(namespace).to_owned();
        let (api, namespaced) = self.api_for(&gvk, Some(&namespace), &what).await?;
        let mut body = object.clone();
        if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            crate::model::drop_null_server_metadata(metadata);
            if namespaced {
                metadata.insert("namespace".into(), json!(namespace));
            } else {
                metadata.remove("namespace");
            }
        }
        let params = PatchParams::apply(FIELD_MANAGER).force();
        api.patch(&name, &params, &Patch::Apply(&body))
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// Merge-patches one object (field manager `addonctl`). Returns it as stored.
    pub async fn merge_patch(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<DynamicObject> {
        let what = format!("{} `{}`", gvk.kind, name);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        api.patch(name, &params, &Patch::Merge(patch))
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// What [`Cluster::create_if_missing`] and [`Cluster::get_or_create`] start from: the
    /// object's description, the API of its kind (in its namespace), its name, and the object
    /// stored under that name, if any.
    async fn stored_as<'a>(
        &self,
        object: &'a Value,
    ) -> Result<(String, Api<DynamicObject>, &'a str, Option<DynamicObject>)> {
        let what = describe(object);
        let gvk = gvk_of(object).ok_or_else(|| Error::Invalid {
            cluster: self.name.clone(),
            object: what.clone(),
            message: "no `apiVersion` or `kind`".to_owned(),
        })?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let (api, _) = self.api_for(&gvk, namespace, &what).await?;
        let stored = api
            .get_opt(name)
            .await
            .map_err(|e| self.map_error(e, &what))?;
        Ok((what, api, name, stored))
    }

    /// `object` as the typed object a create sends (`what` describes it in the error).
    fn typed(&self, object: &Value, what: &str) -> Result<DynamicObject> {
        serde_json::from_value(object.clone()).map_err(|e| Error::Invalid {
            cluster: self.name.clone(),
            object: what.to_owned(),
            message: e.to_string(),
        })
    }

    /// Creates an object only if it does not exist (used for the system namespace). Returns
    /// whether it was created.
    pub async fn create_if_missing(&self, object: &Value) -> Result<bool> {
        let (what, api, _, stored) = self.stored_as(object).await?;
        if stored.is_some() {
            return Ok(false);
        }
        let typed = self.typed(object, &what)?;
        match api.create(&PostParams::default(), &typed).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(r)) if r.code == 409 => Ok(false),
            Err(e) => Err(self.map_error(e, &what)),
        }
    }

    /// Reads an object, creating it (field manager `addonctl`) when it does not exist (a
    /// namespace a managed cluster lacks). Returns it as stored.
    pub async fn get_or_create(&self, object: &Value) -> Result<DynamicObject> {
        let (what, api, name, stored) = self.stored_as(object).await?;
        if let Some(stored) = stored {
            return Ok(stored);
        }
        let typed = self.typed(object, &what)?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        match api.create(&params, &typed).await {
            Ok(stored) => Ok(stored),
            Err(kube::Error::Api(r)) if r.code == 409 => {
                api.get(name).await.map_err(|e| self.map_error(e, &what))
            }
            Err(e) => Err(self.map_error(e, &what)),
        }
    }

    /// Reads one object; `None` when it does not exist or its kind is not served.
    pub async fn get(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<DynamicObject>> {
        if self.resource(gvk).await?.is_none() {
            return Ok(None);
        }
        let what = format!("{} `{}`", gvk.kind, name);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        api.get_opt(name)
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// Lists objects of a kind (in one namespace or all), filtered by a label selector. A kind
    /// the server does not serve lists as empty.
    pub async fn list(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<DynamicObject>> {
        if self.resource(gvk).await?.is_none() {
            return Ok(Vec::new());
        }
        let what = format!("{} list", gvk.kind);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        let params = if selector.is_empty() {
            ListParams::default()
        } else {
            ListParams::default().labels(selector)
        };
        api.list(&params)
            .await
            .map(|l| l.items)
            .map_err(|e| self.map_error(e, &what))
    }

    /// Deletes one object (background propagation). Returns whether it existed.
    pub async fn delete(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool> {
        if self.resource(gvk).await?.is_none() {
            return Ok(false);
        }
        let what = format!("{} `{}`", gvk.kind, name);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(r)) if r.code == 404 => Ok(false),
            Err(e) => Err(self.map_error(e, &what)),
        }
    }
}

impl Cluster {
    /// Deletes one object only while it has `uid` (background propagation): an object deleted
    /// and made again by someone else since is left alone. Returns whether it was deleted.
    pub async fn delete_if_uid(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
    ) -> Result<bool> {
        if self.resource(gvk).await?.is_none() {
            return Ok(false);
        }
        let what = format!("{} `{}`", gvk.kind, name);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        let params = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(true),
            // Gone, or another object under the same name (the precondition failed).
            Err(kube::Error::Api(r)) if r.code == 404 || r.code == 409 => Ok(false),
            Err(e) => Err(self.map_error(e, &what)),
        }
    }
}

/// Writes with preconditions: the building blocks of compare-and-swap (leases, stores).
impl Cluster {
    /// Creates an object (field manager `addonctl`). One that exists already is a
    /// [`Error::Conflict`].
    pub async fn create(&self, object: &Value) -> Result<DynamicObject> {
        let (what, api, _, _) = self.api_of(object).await?;
        let typed = self.typed(object, &what)?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        api.create(&params, &typed)
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// Replaces an object whole (field manager `addonctl`). With `metadata.resourceVersion`
    /// set, only while the stored object still has it; otherwise a [`Error::Conflict`].
    pub async fn replace(&self, object: &Value) -> Result<DynamicObject> {
        let (what, api, name, _) = self.api_of(object).await?;
        let typed = self.typed(object, &what)?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        api.replace(&name, &params, &typed)
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// Deletes an object only while it has `resource_version`. Returns whether it was deleted
    /// (`false`: gone already, or changed since).
    pub async fn delete_if_version(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
    ) -> Result<bool> {
        let what = format!("{} `{}`", gvk.kind, name);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        let params = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: None,
                resource_version: Some(resource_version.to_owned()),
            }),
            ..DeleteParams::background()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(r)) if r.code == 404 || r.code == 409 => Ok(false),
            Err(e) => Err(self.map_error(e, &what)),
        }
    }

    /// An object's description, the API of its kind (in its namespace) and its name.
    async fn api_of(&self, object: &Value) -> Result<(String, Api<DynamicObject>, String, bool)> {
        let what = describe(object);
        let gvk = gvk_of(object).ok_or_else(|| Error::Invalid {
            cluster: self.name.clone(),
            object: what.clone(),
            message: "no `apiVersion` or `kind`".to_owned(),
        })?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let (api, namespaced) = self.api_for(&gvk, namespace, &what).await?;
        Ok((what, api, name, namespaced))
    }
}

impl Cluster {
    /// Asks the server whether the caller may `verb` the `resource` of `group` (in `namespace`,
    /// or cluster-wide) with a SelfSubjectAccessReview, which every authenticated user may make.
    pub async fn can_i(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Result<bool> {
        use k8s_openapi::api::authorization::v1::{
            ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
        };
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    group: Some(group.to_owned()),
                    resource: Some(resource.to_owned()),
                    verb: Some(verb.to_owned()),
                    namespace: namespace.map(str::to_owned),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let api: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| self.map_error(e, "SelfSubjectAccessReview"))?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}
