//! The one way in: [`Settings`] (what a front end decides: namespace, kubeconfig, engine, limits,
//! rate, timeouts) and [`Context::connect`], which turns them into a [`Context`] every stage
//! ([`crate::plan`], [`crate::state`], [`crate::apply`], [`crate::status`]) works with. Also the
//! stages' shared vocabulary: the engine choice, lock options and the progress [`Reporter`].
//! Every stage returns the crate's [`crate::Error`].

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::{watchdog::Notice, Cluster, ConnectOptions, RateLimit};
use crate::render::{Limits, Renderer};
use crate::source::catalog::Catalog;
use crate::state::{lease, Store};
use crate::Result;

/// What a front end decides before any work starts (the CLI builds it from flags and the
/// environment; tests and benchmarks build it directly).
#[derive(Clone)]
pub struct Settings {
    /// The system namespace (KubeVela's and addonctl's state).
    pub namespace: String,
    /// The kubeconfig file; `None` = `KUBECONFIG`, `~/.kube/config`, or in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; `None` = its current context.
    pub kube_context: Option<String>,
    /// Which engine deploys addons' components.
    pub engine: EngineChoice,
    /// The limit of each request to any cluster, the control plane and every managed cluster
    /// (`--request-timeout`, `ADDONCTL_CLUSTER_TIMEOUT`); `None` =
    /// [`crate::cluster::DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Option<Duration>,
    /// Requests per second and burst, per cluster; `None` = [`RateLimit::default`].
    pub rate_limit: Option<RateLimit>,
    /// The sandbox limits of addon scripts.
    pub limits: Limits,
    /// Local directory registries, searched before the built-in one, in order.
    pub registry_dirs: Vec<PathBuf>,
    /// How writing commands take their locks.
    pub lock: LockOptions,
    /// Where "still waiting for the server" lines go (the CLI prints them on stderr).
    pub notice: Option<Notice>,
    /// The cache root under which discovery is kept across runs (`<root>/discovery/`);
    /// `None` = discovery is read once per process and kept in memory only.
    pub discovery_cache: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("namespace", &self.namespace)
            .field("kubeconfig", &self.kubeconfig)
            .field("kube_context", &self.kube_context)
            .field("engine", &self.engine)
            .field("request_timeout", &self.request_timeout)
            .field("rate_limit", &self.rate_limit)
            .field("limits", &self.limits)
            .field("registry_dirs", &self.registry_dirs)
            .field("lock", &self.lock)
            .field("notice", &self.notice.is_some())
            .field("discovery_cache", &self.discovery_cache)
            .finish()
    }
}

impl Default for Settings {
    /// The system namespace [`crate::DEFAULT_SYSTEM_NAMESPACE`]; everything else as the CLI's
    /// defaults (the kubeconfig of the environment, engine `auto`, default limits and rate).
    fn default() -> Self {
        Settings {
            namespace: crate::constants::DEFAULT_SYSTEM_NAMESPACE.to_owned(),
            kubeconfig: None,
            kube_context: None,
            engine: EngineChoice::default(),
            request_timeout: None,
            rate_limit: None,
            limits: Limits::default(),
            registry_dirs: Vec::new(),
            lock: LockOptions::default(),
            notice: None,
            discovery_cache: None,
        }
    }
}

impl Settings {
    /// Settings for the system namespace `namespace`, everything else at its default.
    pub fn new(namespace: &str) -> Self {
        Settings {
            namespace: namespace.to_owned(),
            ..Settings::default()
        }
    }
}

/// Everything an operation needs.
#[derive(Debug)]
pub struct Context {
    /// The control plane.
    pub cluster: Cluster,
    /// The system namespace.
    pub namespace: String,
    /// The registries.
    pub catalog: Catalog,
    /// The renderer.
    pub renderer: Renderer,
    /// Which engine deploys the Application's components.
    pub engine: EngineChoice,
    /// How commands that write take their locks.
    pub lock: LockOptions,
}

impl Context {
    /// Connects to the control plane as `settings` say (request timeout, rate limit, notice
    /// hook; managed clusters' clients take the same, see [`Cluster::managed`]), with the
    /// catalogue of `settings.registry_dirs` and the built-in registry.
    pub async fn connect(settings: &Settings) -> Result<Context> {
        let cluster = Cluster::connect(&ConnectOptions {
            kubeconfig: settings.kubeconfig.clone(),
            context: settings.kube_context.clone(),
            timeout: settings.request_timeout,
        })
        .await?;
        Self::with_cluster(settings, cluster)
    }

    /// A context on a cluster made elsewhere (a test's in-process fake API, see
    /// [`Cluster::from_client`]), otherwise as [`Context::connect`].
    pub fn with_cluster(settings: &Settings, cluster: Cluster) -> Result<Context> {
        if let Some(limit) = settings.rate_limit {
            cluster.set_rate_limit(limit);
        }
        if let Some(notice) = &settings.notice {
            cluster.set_notice(notice.clone());
        }
        cluster.set_discovery_cache(settings.discovery_cache.as_deref());
        Ok(Context {
            cluster,
            namespace: settings.namespace.clone(),
            catalog: Catalog::new(&settings.registry_dirs)?,
            renderer: Renderer::with_limits(settings.limits.clone()),
            engine: settings.engine,
            lock: settings.lock.clone(),
        })
    }

    /// What `state/` reads: the control plane and the system namespace.
    pub fn state(&self) -> Store<'_> {
        Store {
            cluster: &self.cluster,
            namespace: &self.namespace,
        }
    }
}

/// How a writing command takes its locks ([`lease`]).
#[derive(Debug, Clone)]
pub struct LockOptions {
    /// Who this command is, as other commands are told (see [`lease::holder_identity`]).
    pub holder: String,
    /// Take locks held by others (`--force-unlock`: their command is gone).
    pub force: bool,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            holder: lease::holder_identity("(library)"),
            force: false,
        }
    }
}

/// Which engine deploys an addon's components.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineChoice {
    /// `vela` when the control plane serves KubeVela's Application, else `direct`.
    #[default]
    Auto,
    /// KubeVela dispatches the Application.
    Vela,
    /// addonctl dispatches the components itself.
    Direct,
}

/// Progress of long operations (the CLI prints it on stderr).
pub trait Reporter: Send + Sync {
    /// One step began or finished.
    fn step(&self, message: &str);
}

/// A reporter that discards everything.
#[derive(Debug, Default)]
pub struct NoopReporter;

impl Reporter for NoopReporter {
    fn step(&self, _message: &str) {}
}
