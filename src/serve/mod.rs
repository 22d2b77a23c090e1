//! The app store: `addonctl serve`, an HTTP API (`/api/v1`) and web pages over the catalogue
//! and the installed addons. One more front end over [`crate::ops`]: each request opens its own
//! [`Session`] on the shared [`Runtime`], calls the operations every front end calls, and answers
//! their reports; nothing here plans, applies or reads status by itself.
//!
//! Local mode (the default) listens on loopback and acts with the user's kubeconfig, as the CLI
//! does. Every request must carry the per-launch token (exchanged once, from the printed URL,
//! for an `HttpOnly; SameSite=Strict` cookie, or sent as `Authorization: Bearer`), name the
//! bound address in `Host` (no DNS rebinding) and come from the server's own pages (`Origin`,
//! `Sec-Fetch-Site`): no other web page can drive it ([`guard`]).

pub mod api;
pub mod error;
pub mod events;
pub mod guard;
pub mod markdown;
pub mod openapi;
pub mod pages;
pub mod plan_store;
pub mod plans;
pub mod registries;
pub mod relay;
pub mod visibility;
pub mod worker;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::Router;
use secrecy::SecretString;

use crate::context::{Identity, Runtime, Session, SessionOptions};
use crate::source::catalog::Catalog;

pub use error::{ApiError, ApiResult};

/// The largest request body the server reads (a plan's values; a registry).
pub const MAX_BODY: usize = 256 * 1024;

/// How long one request may take before it is answered 503 (an apply goes on in the
/// background; its progress is on the event stream).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// How the server authenticates its callers.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Loopback only, the user's kubeconfig; the per-launch `token` opens it.
    Local {
        /// The token in the printed URL.
        token: SecretString,
    },
    /// In a cluster: every request carries a bearer token the API server accepts; the server
    /// learns who it is (a TokenReview) and acts as them (impersonation), so Kubernetes RBAC
    /// decides every read and write and the audit log names them.
    InCluster,
}

/// What `addonctl serve` is started with.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// How callers are authenticated.
    pub mode: Mode,
    /// The address it listens on (its `Host` is the only one accepted).
    pub addr: SocketAddr,
    /// How often the registries are listed again (the first time at start).
    pub sync_interval: Duration,
}

/// What every request shares: the runtime (replaced when the registries change), the access
/// rules, the plans made and not yet applied, and the event hub.
pub struct App {
    runtime: RwLock<Arc<Runtime>>,
    /// The access rules.
    pub access: guard::Access,
    /// Plans made and not yet applied.
    pub plans: plans::Store,
    /// Events for the `/api/v1/events` streams.
    pub events: events::Hub,
    /// Apply events for the other replicas (in a cluster).
    pub relay: relay::Relay,
    /// Who may see system addons.
    pub visibility: visibility::Cache,
    /// Where the library's operations run.
    pub workers: worker::Workers,
    /// Each registry's last sync.
    pub syncs: registries::Syncs,
    /// How often the registries are listed again.
    sync_interval: Duration,
    /// The runtimes acting for each caller lately (in a cluster).
    acting: Mutex<HashMap<Identity, (Instant, Arc<Runtime>)>>,
}

/// How long a caller's runtime (its connections, discovery) is kept after its last use.
const ACTING_TTL: Duration = Duration::from_secs(10 * 60);

/// At most this many callers' runtimes are kept.
const ACTING_KEPT: usize = 64;

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").finish_non_exhaustive()
    }
}

/// The caller of one request, as [`guard`] authenticated them: the kubeconfig's user (local
/// mode), or someone the server acts for, with the runtime that impersonates them.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// Who, when the server acts for someone else.
    pub identity: Option<Identity>,
    /// The runtime acting as them (set with `identity`).
    acting: Option<Arc<Runtime>>,
}

impl Caller {
    /// The kubeconfig's user (local mode; the server's own work).
    pub fn local() -> Caller {
        Caller {
            identity: None,
            acting: None,
        }
    }
}

impl App {
    /// The shared state of a server over `runtime`.
    pub fn new(runtime: Runtime, options: &ServeOptions) -> std::io::Result<Arc<App>> {
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        Ok(Arc::new(App {
            runtime: RwLock::new(Arc::new(runtime)),
            access: guard::Access::new(options),
            plans: plans::Store::new(matches!(options.mode, Mode::InCluster)),
            events: events::Hub::default(),
            relay: relay::Relay::new(matches!(options.mode, Mode::InCluster)),
            visibility: visibility::Cache::default(),
            workers: worker::Workers::start(threads)?,
            syncs: registries::Syncs::default(),
            sync_interval: options.sync_interval,
            acting: Mutex::default(),
        }))
    }

    /// The runtime now.
    pub fn runtime(&self) -> Arc<Runtime> {
        match self.runtime.read() {
            Ok(runtime) => Arc::clone(&runtime),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The runtime over another catalogue, for every request from now on.
    pub fn replace_catalog(&self, catalog: Catalog) {
        let next = Arc::new(self.runtime().with_catalog(catalog));
        match self.runtime.write() {
            Ok(mut runtime) => *runtime = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }

    /// The caller acting as `identity`, with the runtime that impersonates them (kept a
    /// while); an error when no such runtime can be made (never the server's own rights).
    pub fn acting_as(&self, identity: Identity) -> crate::Result<Caller> {
        let runtime = self.acting_for(&identity)?;
        Ok(Caller {
            identity: Some(identity),
            acting: Some(runtime),
        })
    }

    fn acting_for(&self, identity: &Identity) -> crate::Result<Arc<Runtime>> {
        let mut acting = match self.acting.lock() {
            Ok(acting) => acting,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((at, runtime)) = acting.get_mut(identity) {
            *at = Instant::now();
            return Ok(Arc::clone(runtime));
        }
        if acting.len() >= ACTING_KEPT {
            acting.retain(|_, (at, _)| at.elapsed() < ACTING_TTL);
            if acting.len() >= ACTING_KEPT {
                if let Some(oldest) = acting
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(who, _)| who.clone())
                {
                    acting.remove(&oldest);
                }
            }
        }
        let runtime = Arc::new(self.runtime().acting_as(identity)?);
        acting.insert(identity.clone(), (Instant::now(), Arc::clone(&runtime)));
        Ok(runtime)
    }

    /// A session for one request of `caller`, its progress going to `progress`: with the
    /// kubeconfig's user (local mode), or acting as the caller (in a cluster).
    pub fn session(
        &self,
        caller: &Caller,
        progress: Option<Arc<dyn crate::context::Reporter>>,
    ) -> Session {
        let runtime = match &caller.acting {
            Some(runtime) => Arc::clone(runtime),
            None => self.runtime(),
        };
        let lock = caller
            .identity
            .as_ref()
            .map(|identity| crate::context::LockOptions {
                holder: format!("addonctl serve for {}", identity.user),
                force: false,
            });
        runtime.session(SessionOptions {
            identity: caller.identity.clone(),
            lock,
            progress,
        })
    }
}

/// The whole server: the API, the pages, the guard around both, body and time limits.
pub fn router(app: Arc<App>) -> Router {
    use tower_http::limit::RequestBodyLimitLayer;
    use tower_http::timeout::TimeoutLayer;
    Router::new()
        .nest("/api/v1", api::routes())
        .merge(pages::routes())
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            guard::guard,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(RequestBodyLimitLayer::new(MAX_BODY))
        .layer(TimeoutLayer::with_status_code(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ))
        .with_state(app)
}

/// Serves `app` on `listener` until `shutdown` resolves; the record and the registries keep
/// being watched for the event streams meanwhile.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let watcher = tokio::spawn(events::watch(Arc::clone(&app)));
    let syncer = tokio::spawn(sync_every(Arc::clone(&app)));
    let relay = tokio::spawn(relay::run(Arc::clone(&app)));
    let result = axum::serve(listener, router(app))
        .with_graceful_shutdown(shutdown)
        .await;
    watcher.abort();
    syncer.abort();
    relay.abort();
    result
}

/// Lists every registry now, then every `sync_interval`.
async fn sync_every(app: Arc<App>) {
    let mut ticks = tokio::time::interval(app.sync_interval.max(Duration::from_secs(10)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if app.plans.persistent() {
            let runtime = app.runtime();
            if let Err(e) = plan_store::sweep(&runtime.cluster, &runtime.namespace).await {
                tracing::warn!("expired plans were not deleted: {e}");
            }
        }
        let job = Arc::clone(&app);
        let synced = app
            .workers
            .run(move || async move {
                let session = job.session(&Caller::local(), None);
                registries::sync_now(&job, &session, None).await
            })
            .await;
        if let Ok(Err(e)) | Err(e) = synced {
            tracing::warn!("the registries were not listed again: {}", e.message);
        }
    }
}
