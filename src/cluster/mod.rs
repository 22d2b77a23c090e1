//! Cluster access: one [`Cluster`] per API server, with cached discovery, server-side apply
//! (field manager `addonctl`, forced), and errors mapped to what a user needs to act on.
//!
//! Every request goes through a counting layer so that commands and benchmarks can report how
//! many calls and writes an operation made, and through the cluster's rate limit ([`rate`];
//! default [`rate::DEFAULT_QPS`] requests per second, bursts of [`rate::DEFAULT_BURST`]).
//!
//! Files: `mod.rs` (connecting, the client, access reviews), `error.rs` (errors and their
//! mapping), `discovery.rs` (resources, versions, revision), `objects.rs` (apply, get, list,
//! delete, writes with preconditions).

pub(crate) mod bounded;
mod connect;
mod discovery;
pub mod disk_discovery;
mod error;
#[cfg(test)]
pub(crate) mod fake;
mod identity;
pub mod kubeconfig;
mod objects;
pub mod rate;
pub mod retry;
mod reuse;
pub mod set;
mod shared_discovery;
mod slim;
mod watch;
pub mod watchdog;

pub use error::{is_forbidden_text, Error, Result};
pub use identity::Reviewed;
pub use objects::{describe, gvk_of, kind_and_name, patch_params, written_since, Deleted};
pub use rate::RateLimit;
pub use reuse::Reusing;
pub use watch::{first_change, Change, Since};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::api::{Api, PostParams};
use kube::config::KubeConfigOptions;
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::ApiCapabilities;
use kube::Client;

pub use crate::model::wire::FIELD_MANAGER;

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

/// The `User-Agent` of every request to a cluster: like kubectl's, the tool, its version and
/// the platform (`addonctl/0.1.0 (linux/x86_64)`).
pub fn user_agent() -> String {
    format!(
        "addonctl/{} ({}/{})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

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
    /// Whether a response came over HTTP/2 (the connection is pinged while a watch is open).
    http2: std::sync::atomic::AtomicBool,
}

impl Counters {
    /// Every request so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    /// Requests with a writing method (POST, PUT, PATCH, DELETE) so far, access reviews and
    /// server-side dry runs (`dryRun=All`) excepted.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

/// How long a watch lasts where pings keep its connection open ([`Cluster::watch_timeout`]):
/// under the five minutes after which a quiet connection may be dropped by proxies and load
/// balancers in the way.
pub const LONG_WATCH: Duration = Duration::from_secs(290);

/// Whether a request is a server-side dry run (`dryRun=All` in its query): the server stores
/// nothing, so it is not a write.
fn is_dry_run(uri: &http::Uri) -> bool {
    uri.query()
        .is_some_and(|query| query.split('&').any(|pair| pair == "dryRun=All"))
}

/// The disk cache of one cluster's discovery: where it is (`None`: not used), the group
/// versions read from it, and those it must no longer answer (found stale in this process).
#[derive(Debug, Default)]
struct DiskState {
    cache: Option<disk_discovery::DiscoveryCache>,
    loaded: std::collections::HashSet<(String, String)>,
    bypass: std::collections::HashSet<(String, String)>,
}

type Discovered = Option<(ApiResource, ApiCapabilities)>;
/// The resources of one group version (`None`: not served), by group and version.
type Versions = HashMap<(String, String), Option<shared_discovery::Resources>>;
/// A lock per group version being read, by group and version.
type Reading = HashMap<(String, String), Arc<tokio::sync::Mutex<()>>>;
/// Managed clusters by name, with the fingerprint of the credentials they were made with.
type Managed = HashMap<String, ([u8; 32], Cluster)>;

/// One API server.
#[derive(Clone)]
pub struct Cluster {
    name: String,
    server: String,
    client: Client,
    /// Each kind looked up (`None`: not served).
    discovery: Arc<Mutex<HashMap<GroupVersionKind, Option<shared_discovery::ServedKind>>>>,
    /// The resources of each group version read so far (`None`: not served), so that each
    /// group version is read once, whatever number of its kinds are looked up.
    versions: Arc<Mutex<Versions>>,
    /// One lock per group version being read, so that lookups at once read it once.
    reading: Arc<Mutex<Reading>>,
    counters: Arc<Counters>,
    /// The disk cache of discovery, and what came from it.
    disk: Arc<Mutex<DiskState>>,
    /// The server's `gitVersion`, read once (`None` inside: it could not be read).
    server_version: Arc<tokio::sync::OnceCell<Option<String>>>,
    limits: rate::Limits,
    timeout: Duration,
    /// Whether HTTP/2 connections are pinged while a stream is open ([`connect::own_stack`]).
    pinged: bool,
    notice: watchdog::NoticeSlot,
    /// The managed clusters reached through this one, by name: one client (connection pool,
    /// discovery cache, rate bucket) per cluster per process.
    managed: Arc<Mutex<Managed>>,
    /// The rules reviews answered lately, by namespace (see [`Cluster::rules_review`]).
    rules: Arc<Mutex<RulesAnswers>>,
    /// The lists this session reuses until a write (see [`Cluster::reuse_lists`]).
    reuse: Arc<reuse::Reuse>,
    /// Every session's memory of lists, told of this client's writes ([`Cluster::scoped`]).
    scopes: Arc<reuse::Scopes>,
    /// The configuration it was built from (`None`: a client made elsewhere), for a client of
    /// the same server acting as someone else ([`Cluster::impersonating`]).
    config: Option<Arc<kube::Config>>,
}

type RulesStatus = k8s_openapi::api::authorization::v1::SubjectRulesReviewStatus;
/// Rules reviews by namespace, with when each was answered.
type RulesAnswers = HashMap<String, (Instant, Option<RulesStatus>)>;

/// How long a rules review's answer is reused: the checks of one command ask once per
/// namespace; a long-running process (the controller) sees changed bindings soon.
const RULES_REUSE: Duration = Duration::from_secs(10);

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.name)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
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
        Self::from_config_headers(name, config, timeout, Vec::new())
    }

    /// [`Cluster::from_config_with`], `headers` added to every request.
    fn from_config_headers(
        name: &str,
        config: kube::Config,
        timeout: Duration,
        headers: Vec<(http::HeaderName, http::HeaderValue)>,
    ) -> Result<Self> {
        let kept = Arc::new(config.clone());
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
        let scopes = Arc::new(reuse::Scopes::default());
        let reuse = scopes.open();
        let reusing = Arc::clone(&scopes);
        let limits = rate::Limits::new(RateLimit::default());
        let cluster_name = name.to_owned();
        let pinged = connect::own_stack(&config);
        let versions = Arc::clone(&counters);
        let agent = http::HeaderValue::from_str(&user_agent())
            .map_err(|e| Error::Config(format!("user agent: {e}")))?;
        let client = connect::builder(&config)
            .map_err(|e| Error::Config(e.to_string()))?
            .with_layer(&tower::util::MapRequestLayer::new(
                move |mut request: http::Request<kube::client::Body>| {
                    counting.requests.fetch_add(1, Ordering::Relaxed);
                    // Named in the API server's audit log (kubectl and client-go send theirs).
                    request
                        .headers_mut()
                        .entry(http::header::USER_AGENT)
                        .or_insert_with(|| agent.clone());
                    for (name, value) in &headers {
                        request.headers_mut().append(name.clone(), value.clone());
                    }
                    tracing::trace!(target: "addonctl::requests", cluster = %cluster_name, method = %request.method(), uri = %request.uri(), "request");
                    // An access review is a POST that changes nothing, and so is a
                    // server-side dry run.
                    let review = request
                        .uri()
                        .path()
                        .starts_with("/apis/authorization.k8s.io/");
                    if !review
                        && !is_dry_run(request.uri())
                        && !matches!(*request.method(), http::Method::GET | http::Method::HEAD)
                    {
                        counting.writes.fetch_add(1, Ordering::Relaxed);
                        reusing.wrote(request.uri().path());
                    }
                    request
                },
            ))
            .with_layer(&rate::RateLimitLayer::new(limits.clone()))
            .with_layer(&watchdog::WatchdogLayer(watch))
            .with_layer(&tower::util::MapResponseLayer::new(
                move |response: http::Response<Box<kube::client::DynBody>>| {
                    if response.version() == http::Version::HTTP_2 {
                        versions.http2.store(true, Ordering::Relaxed);
                    }
                    response
                },
            ))
            .build();
        Ok(Cluster {
            name: name.to_owned(),
            server: server.trim_end_matches('/').to_owned(),
            client,
            discovery: Arc::new(Mutex::new(HashMap::new())),
            versions: Arc::default(),
            reading: Arc::default(),
            disk: Arc::default(),
            server_version: Arc::default(),
            counters,
            limits,
            timeout,
            pinged,
            notice,
            managed: Arc::default(),
            rules: Arc::default(),
            reuse,
            scopes,
            config: Some(kept),
        })
    }

    /// A cluster over a client made elsewhere, such as an in-process fake API in tests
    /// (`kube::Client::new(service, default_namespace)`, as kube-rs's own tests do). Its
    /// requests are neither counted, rate limited nor watched for slow answers (the client's own
    /// layers decide), its lists are never reused (its writes are not seen), and
    /// [`Cluster::request_timeout`] is [`DEFAULT_REQUEST_TIMEOUT`].
    pub fn from_client(name: &str, client: Client) -> Self {
        Cluster {
            name: name.to_owned(),
            server: format!("in-process client `{name}`"),
            client,
            discovery: Arc::new(Mutex::new(HashMap::new())),
            versions: Arc::default(),
            reading: Arc::default(),
            disk: Arc::default(),
            server_version: Arc::default(),
            counters: Arc::new(Counters::default()),
            limits: rate::Limits::new(RateLimit::default()),
            timeout: DEFAULT_REQUEST_TIMEOUT,
            pinged: false,
            notice: watchdog::NoticeSlot::default(),
            managed: Arc::default(),
            rules: Arc::default(),
            reuse: Arc::default(),
            scopes: Arc::default(),
            config: None,
        }
    }

    /// The limit of each request to this cluster.
    pub fn request_timeout(&self) -> Duration {
        self.timeout
    }

    /// How long a watch of this cluster may be asked to last (`timeoutSeconds`) before it is
    /// made again. The connection's read timeout would cut a watch that sees no event for
    /// that long, unless the connection is HTTP/2 and pinged while the watch is open
    /// (addonctl's own stack, once a response came over HTTP/2): then [`LONG_WATCH`]; else
    /// the request timeout less 5 s (at least 1 s).
    pub fn watch_timeout(&self) -> Duration {
        if self.pinged && self.counters.http2.load(Ordering::Relaxed) {
            LONG_WATCH
        } else {
            self.timeout
                .saturating_sub(Duration::from_secs(5))
                .max(Duration::from_secs(1))
        }
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
        client.set_discovery_cache(self.discovery_cache_root().as_deref());
        Ok(client)
    }

    /// Keeps discovery on disk under `root` (`<root>/discovery/<host>/`, see [`disk_discovery`])
    /// across runs; `None` = memory only (the default). Managed clusters reached through this
    /// one take the same root.
    pub fn set_discovery_cache(&self, root: Option<&std::path::Path>) {
        let mut disk = self.disk.lock().unwrap_or_else(PoisonError::into_inner);
        let current = disk.cache.as_ref().map(|c| c.root().to_path_buf());
        if current.as_deref() != root {
            disk.cache = root.map(|r| disk_discovery::DiscoveryCache::new(r, &self.server));
        }
    }

    fn discovery_cache_root(&self) -> Option<PathBuf> {
        let disk = self.disk.lock().unwrap_or_else(PoisonError::into_inner);
        disk.cache.as_ref().map(|c| c.root().to_path_buf())
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

    /// The metadata of the objects of a kind named `names` (in one namespace, or cluster-wide):
    /// one metadata-only list (`PartialObjectMetadataList`), narrowed by a field selector to the
    /// object when there is one name, so that no collection is read whole for one object. A
    /// kind the server does not serve has none. With them, the server's revision when it
    /// answered (the list's `resourceVersion`, as [`Cluster::revision`] reads it), when it is a
    /// number.
    pub async fn metadata_of(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        names: &[&str],
    ) -> Result<(Vec<kube::core::ObjectMeta>, Option<u64>)> {
        if self.kind(gvk).await?.is_none() {
            return Ok((Vec::new(), None));
        }
        let what = format!("{} list", gvk.kind);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        let params = match names {
            [one] => kube::api::ListParams::default().fields(&format!("metadata.name={one}")),
            _ => kube::api::ListParams::default(),
        };
        let list = self
            .list_metadata_slim(&api, &params)
            .await
            .map_err(|e| self.map_error(e, &what))?;
        let revision = list
            .metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse().ok());
        let items = list
            .items
            .into_iter()
            .map(|item| kube::core::ObjectMeta::from(item.metadata))
            .filter(|m| m.name.as_deref().is_some_and(|n| names.contains(&n)))
            .collect();
        Ok((items, revision))
    }

    /// One metadata-only list through `api`, each item's metadata as [`slim::Metadata`] keeps
    /// it (annotations, owner references and finalizers skipped, managed fields cut to their
    /// top-level keys): the name, `resourceVersion`, uid, times, labels and managers that
    /// addonctl reads of a list.
    pub async fn list_metadata(
        &self,
        api: &Api<kube::api::DynamicObject>,
        params: &kube::api::ListParams,
    ) -> std::result::Result<(Vec<kube::core::ObjectMeta>, Option<String>), kube::Error> {
        let list = self.list_metadata_slim(api, params).await?;
        Ok((
            list.items
                .into_iter()
                .map(|item| kube::core::ObjectMeta::from(item.metadata))
                .collect(),
            list.metadata.resource_version,
        ))
    }

    async fn list_metadata_slim(
        &self,
        api: &Api<kube::api::DynamicObject>,
        params: &kube::api::ListParams,
    ) -> std::result::Result<slim::MetadataList, kube::Error> {
        let request = kube::core::Request::new(api.resource_url())
            .list_metadata(params)
            .map_err(kube::Error::BuildRequest)?;
        self.client.request(request).await
    }

    /// Asks the server, with one SelfSubjectRulesReview, what the caller may do in `namespace`:
    /// the rules bound there and cluster-wide. `None` when the server has no answer (the review
    /// is not served, refused or the namespace rejected); the caller then asks per permission
    /// ([`Cluster::can_i`]). An answer is reused for [`RULES_REUSE`].
    pub async fn rules_review(&self, namespace: &str) -> Result<Option<RulesStatus>> {
        let cached = self
            .rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .filter(|(at, _)| at.elapsed() < RULES_REUSE)
            .map(|(_, status)| status.clone());
        if let Some(status) = cached {
            return Ok(status);
        }
        let status = self.ask_rules(namespace).await?;
        self.rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(namespace.to_owned(), (Instant::now(), status.clone()));
        Ok(status)
    }

    async fn ask_rules(&self, namespace: &str) -> Result<Option<RulesStatus>> {
        use k8s_openapi::api::authorization::v1::{
            SelfSubjectRulesReview, SelfSubjectRulesReviewSpec,
        };
        let review = SelfSubjectRulesReview {
            spec: SelfSubjectRulesReviewSpec {
                namespace: Some(namespace.to_owned()),
            },
            ..SelfSubjectRulesReview::default()
        };
        let api: Api<SelfSubjectRulesReview> = Api::all(self.client.clone());
        match api.create(&PostParams::default(), &review).await {
            Ok(answer) => Ok(answer.status),
            Err(kube::Error::Api(response)) if response.code < 500 => Ok(None),
            Err(e) => Err(self.map_error(e, "SelfSubjectRulesReview")),
        }
    }
}
