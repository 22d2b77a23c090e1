//! The one way in: [`Settings`] (what a front end decides: namespace, kubeconfig, engine, limits,
//! rate, timeouts) and [`Runtime::connect`], which turns them into the [`Runtime`] a front end
//! builds once and shares (the control plane's client, the registries, the renderer and its
//! caches). Each command or request then opens a [`Session`] on it: who asked, its lock options,
//! its own memory of the reads it may reuse, and where its progress goes. A session's
//! [`Context`] is what every stage ([`crate::plan`], [`crate::state`], [`crate::apply`],
//! [`crate::status`]) and every operation ([`crate::ops`]) works with: nothing one session
//! holds is seen by another. Also the stages' shared vocabulary: the engine choice, lock options
//! and the progress [`Reporter`] with its typed events ([`Progress`]). Every stage returns the
//! crate's [`crate::Error`].

use std::path::PathBuf;
use std::sync::Arc;
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

/// What every session of a front end shares, built once ([`Runtime::connect`]) and kept in an
/// `Arc`: the control plane's client (connections, discovery, rate limit, the managed clusters'
/// clients), the registries and their listings, the renderer and its caches. It holds nothing
/// of any one command: that is the [`Session`]'s.
#[derive(Debug)]
pub struct Runtime {
    /// The control plane.
    pub cluster: Cluster,
    /// The system namespace.
    pub namespace: String,
    /// The registries.
    pub catalog: Catalog,
    /// The renderer.
    pub renderer: Arc<Renderer>,
    /// Which engine deploys the Application's components.
    pub engine: EngineChoice,
    /// The lock options of a session that names none.
    lock: LockOptions,
}

impl Runtime {
    /// Connects to the control plane as `settings` say (request timeout, rate limit, notice
    /// hook; managed clusters' clients take the same, see [`Cluster::managed`]), with the
    /// catalogue of `settings.registry_dirs` and the built-in registry.
    pub async fn connect(settings: &Settings) -> Result<Runtime> {
        let cluster = Cluster::connect(&ConnectOptions {
            kubeconfig: settings.kubeconfig.clone(),
            context: settings.kube_context.clone(),
            timeout: settings.request_timeout,
        })
        .await?;
        Self::with_cluster(settings, cluster)
    }

    /// A runtime on a cluster made elsewhere (a test's in-process fake API, see
    /// [`Cluster::from_client`]), otherwise as [`Runtime::connect`].
    pub fn with_cluster(settings: &Settings, cluster: Cluster) -> Result<Runtime> {
        if let Some(limit) = settings.rate_limit {
            cluster.set_rate_limit(limit);
        }
        if let Some(notice) = &settings.notice {
            cluster.set_notice(notice.clone());
        }
        cluster.set_discovery_cache(settings.discovery_cache.as_deref());
        Ok(Runtime {
            cluster,
            namespace: settings.namespace.clone(),
            catalog: Catalog::new(&settings.registry_dirs)?,
            renderer: Arc::new(Renderer::with_limits(settings.limits.clone())),
            engine: settings.engine,
            lock: settings.lock.clone(),
        })
    }

    /// The same runtime over another catalogue (a server's registries changed): the cluster's
    /// connections, the renderer and its caches are shared.
    #[must_use]
    pub fn with_catalog(&self, catalog: Catalog) -> Runtime {
        Runtime {
            cluster: self.cluster.clone(),
            namespace: self.namespace.clone(),
            catalog,
            renderer: Arc::clone(&self.renderer),
            engine: self.engine,
            lock: self.lock.clone(),
        }
    }

    /// The same runtime acting for `identity`: a client of the same control plane that
    /// impersonates them (the API server's RBAC decides, its audit log names them); the
    /// catalogue, the renderer and its caches are shared.
    pub fn acting_as(&self, identity: &Identity) -> Result<Runtime> {
        Ok(Runtime {
            cluster: self.cluster.impersonating(
                &identity.user,
                &identity.groups,
                &identity.extra,
            )?,
            namespace: self.namespace.clone(),
            catalog: self.catalog.clone(),
            renderer: Arc::clone(&self.renderer),
            engine: self.engine,
            lock: self.lock.clone(),
        })
    }

    /// A session for one command or request: its own [`Context`] over this runtime's shared
    /// parts, with `options`' identity, locks and progress.
    pub fn session(&self, options: SessionOptions) -> Session {
        Session {
            ctx: Context {
                cluster: self.cluster.scoped(),
                namespace: self.namespace.clone(),
                catalog: self.catalog.clone(),
                renderer: Arc::clone(&self.renderer),
                engine: self.engine,
                lock: options.lock.unwrap_or_else(|| self.lock.clone()),
            },
            identity: options.identity,
            progress: options.progress.unwrap_or_else(|| Arc::new(NoopReporter)),
        }
    }
}

/// Who asked for a session's work, as the front end knows them (the CLI: the kubeconfig's
/// user, unnamed; a server: the authenticated user it acts for).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct Identity {
    /// The user name.
    pub user: String,
    /// Their groups.
    pub groups: Vec<String>,
    /// What else the authenticator says of them (sent on as `Impersonate-Extra-*`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// What a front end says of a session when it opens it ([`Runtime::session`]).
#[derive(Default)]
pub struct SessionOptions {
    /// Who asked (`None`: the credentials of the runtime's client, as the CLI runs).
    pub identity: Option<Identity>,
    /// How its writes take their locks (`None`: the runtime's settings).
    pub lock: Option<LockOptions>,
    /// Where its progress goes (`None`: nowhere).
    pub progress: Option<Arc<dyn Reporter>>,
}

/// One command's or request's work on a [`Runtime`]: a [`Context`] of its own (its list reuse,
/// its lock options), who asked, and where its progress goes. Sessions on one runtime run at
/// once and share nothing but the runtime.
pub struct Session {
    ctx: Context,
    identity: Option<Identity>,
    progress: Arc<dyn Reporter>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("ctx", &self.ctx)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session over a context made for one command ([`Context::connect`]): the CLI's.
    pub fn new(ctx: Context, identity: Option<Identity>, progress: Arc<dyn Reporter>) -> Session {
        Session {
            ctx,
            identity,
            progress,
        }
    }

    /// The context the stages work with.
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }

    /// Who asked (`None`: the runtime's own credentials).
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_ref()
    }

    /// Where the session's progress goes.
    pub fn progress(&self) -> &dyn Reporter {
        self.progress.as_ref()
    }
}

/// Everything an operation needs: one session's view of the runtime ([`Session::ctx`]), or a
/// context made whole for one command ([`Context::connect`]).
#[derive(Debug)]
pub struct Context {
    /// The control plane (with this session's own list reuse).
    pub cluster: Cluster,
    /// The system namespace.
    pub namespace: String,
    /// The registries.
    pub catalog: Catalog,
    /// The renderer (shared by every session of a runtime).
    pub renderer: Arc<Renderer>,
    /// Which engine deploys the Application's components.
    pub engine: EngineChoice,
    /// How commands that write take their locks.
    pub lock: LockOptions,
}

impl Context {
    /// A runtime with one session, for a front end that runs one command: see
    /// [`Runtime::connect`].
    pub async fn connect(settings: &Settings) -> Result<Context> {
        Ok(Runtime::connect(settings)
            .await?
            .session(SessionOptions::default())
            .ctx)
    }

    /// [`Context::connect`] on a cluster made elsewhere (see [`Runtime::with_cluster`]).
    pub fn with_cluster(settings: &Settings, cluster: Cluster) -> Result<Context> {
        Ok(Runtime::with_cluster(settings, cluster)?
            .session(SessionOptions::default())
            .ctx)
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

/// Progress of long operations: the CLI prints each event as a line on stderr
/// ([`Reporter::step`] of its text); a server sends them as they are ([`Reporter::event`]).
pub trait Reporter: Send + Sync {
    /// One step began or finished, as a line of text.
    fn step(&self, message: &str);

    /// One step began or finished, as a typed event; by default its line of text.
    fn event(&self, event: &Progress) {
        self.step(&event.to_string());
    }
}

/// What a long operation is doing, typed for front ends that do more than print it (its
/// `Display` is the line the CLI prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Progress {
    /// An addon's control-plane objects are being applied.
    Applying {
        /// The addon.
        addon: String,
        /// Its version.
        version: String,
    },
    /// The direct engine begins applying to the clusters of a dispatch (each then ends with
    /// [`Progress::ClusterApplied`] or [`Progress::ClusterFailed`]).
    Dispatching {
        /// The clusters worked on.
        clusters: usize,
    },
    /// The direct engine finished with a cluster.
    ClusterApplied {
        /// The cluster.
        cluster: String,
        /// Objects applied there.
        applied: usize,
        /// Objects deleted there.
        deleted: usize,
    },
    /// The direct engine failed on a cluster (the others go on).
    ClusterFailed {
        /// The cluster.
        cluster: String,
        /// Why.
        error: String,
    },
    /// A cluster keeps the version it runs (a staged rollout holds it).
    ClusterHeld {
        /// The cluster.
        cluster: String,
        /// The version it keeps.
        version: String,
    },
    /// A cluster no longer joined: what addonctl left there is forgotten.
    ClusterForgotten {
        /// The cluster.
        cluster: String,
        /// The objects forgotten.
        objects: usize,
    },
    /// A dependency the direct engine deployed must be ready before what needs it.
    WaitingForDependency {
        /// The dependency.
        addon: String,
        /// The addons that need it.
        needed_by: Vec<String>,
    },
    /// An addon is being disabled (or, in a dry run, looked at).
    Disabling {
        /// The addon.
        addon: String,
        /// Whether nothing is deleted.
        dry_run: bool,
    },
    /// What a removal did (or would do) on one cluster.
    ClusterRemoval {
        /// The cluster.
        cluster: String,
        /// Objects deleted.
        deleted: usize,
        /// Adopted objects given back.
        given_back: usize,
        /// Objects kept (another addon's, or shared).
        kept: usize,
        /// Whether nothing is deleted.
        dry_run: bool,
    },
    /// A wait saw an addon's phase change.
    Phase {
        /// The addon.
        addon: String,
        /// Its phase now.
        phase: String,
        /// The phase waited for.
        wanted: String,
    },
    /// A wait saw a cluster's readiness change.
    ClusterReadiness {
        /// The cluster.
        cluster: String,
        /// Its readiness, as a line.
        readiness: String,
    },
    /// A staged rollout's step.
    Stage {
        /// What happened.
        message: String,
    },
    /// Something the user should know that does not stop the work.
    Note {
        /// The note.
        message: String,
    },
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Progress::Applying { addon, version } => write!(f, "applying `{addon}` {version}"),
            Progress::Dispatching { clusters } => {
                write!(f, "applying to {}", counted(*clusters, "cluster"))
            }
            Progress::ClusterApplied {
                cluster,
                applied,
                deleted,
            } => write!(
                f,
                "cluster `{cluster}`: {} applied, {deleted} deleted",
                counted(*applied, "object")
            ),
            Progress::ClusterFailed { cluster, error } => {
                write!(f, "cluster `{cluster}`: failed: {error}")
            }
            Progress::ClusterHeld { cluster, version } => {
                write!(f, "cluster `{cluster}`: held at {version}")
            }
            Progress::ClusterForgotten { cluster, objects } => write!(
                f,
                "cluster `{cluster}` is no longer joined: forgetting {} left there",
                counted(*objects, "object")
            ),
            Progress::WaitingForDependency { addon, needed_by } => write!(
                f,
                "waiting for `{addon}` to be ready before {}",
                needed_by
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Progress::Disabling { addon, dry_run } => {
                if *dry_run {
                    write!(f, "checking what disabling would delete: `{addon}`")
                } else {
                    write!(f, "disabling `{addon}`")
                }
            }
            Progress::ClusterRemoval {
                cluster,
                deleted,
                given_back,
                kept,
                dry_run,
            } => write!(
                f,
                "cluster `{cluster}`: {} {}deleted, {given_back} given back, {kept} kept",
                counted(*deleted, "object"),
                if *dry_run { "would be " } else { "" },
            ),
            Progress::Phase {
                addon,
                phase,
                wanted,
            } => write!(f, "`{addon}` is {phase}; waiting for {wanted}"),
            Progress::ClusterReadiness { cluster, readiness } => {
                write!(f, "{cluster}: {readiness}")
            }
            Progress::Stage { message } => f.write_str(message),
            Progress::Note { message } => write!(f, "note: {message}"),
        }
    }
}

/// `1 object`, `2 objects`.
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A reporter that discards everything.
#[derive(Debug, Default)]
pub struct NoopReporter;

impl Reporter for NoopReporter {
    fn step(&self, _message: &str) {}
}
