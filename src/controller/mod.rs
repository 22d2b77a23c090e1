//! Controller mode: `Addon` resources (`addonctl.io/v1alpha1`, in the system namespace)
//! reconciled continuously through the CLI's own path (plan → apply → record → status).
//!
//! Parts:
//! - [`crd`]: the `Addon` resource (spec, status, conditions);
//! - [`control`]: `rollout status|pause|resume` on an `Addon`;
//! - [`manifests`]: the CRD, ServiceAccount, least-privilege RBAC and Deployment to install it;
//! - [`targets`]: pure decisions (target clusters, parameters and the groups of clusters the
//!   overrides give other ones, the inputs digest);
//! - [`engine`]: the only file that calls [`crate::plan`], [`crate::apply`], [`crate::state`]
//!   and [`crate::status`];
//! - `reconcile`: one reconcile of one `Addon` (resolve targets → [rollout gate] → plan/apply
//!   → [drift] → status), back-off and retry budget;
//! - `leader`: leader election with a `coordination.k8s.io` Lease;
//! - `serve`: `/healthz`, `/readyz` and Prometheus `/metrics`;
//!
//! Expected flow: [`Controller::bind`] opens the HTTP endpoint; [`Controller::run`] elects a
//! leader (or not, `leader_elect: false`), and while this process leads runs kube-runtime's
//! `Controller` on `Addon` (a reflector cache and a work queue), also triggered by every
//! cluster Secret (join, detach, label change: every `Addon` is looked at again) and by the
//! records (an addon's record changed: its `Addon`). It returns when `shutdown` resolves,
//! after releasing the Lease.
//!
//! Guarantees: only the leader writes; an unchanged `Addon` (same spec, target clusters and
//! referenced Secret versions, unchanged record) is not planned again and writes nothing; a
//! failing `Addon` is retried with exponential back-off and, after the retry budget, marked
//! `Stalled` and retried at the slowest pace only; every request goes through the cluster's
//! rate limit.

pub mod control;
mod converge;
pub mod crd;
mod data;
pub mod engine;
mod events;
mod gates;
mod leader;
pub mod manifests;
mod metrics;
mod overrides;
mod reconcile;
mod relist;
mod serve;
mod stages;
pub mod targets;
pub mod trust;
mod watches;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::context::Context;

/// The controller's errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A library stage failed.
    #[error(transparent)]
    Library(Box<crate::Error>),
    /// The Kubernetes API failed.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// `rollout status|pause|resume`: no `Addon`, or no rollout in it.
    #[error("{0}")]
    Control(String),
    /// The `Addon`'s spec cannot be reconciled as written.
    #[error("invalid `Addon` spec: {0}")]
    Spec(String),
    /// A `secretParameters` entry cannot be read.
    #[error("secret parameter `{parameter}`: {reason}")]
    SecretParameter {
        /// The parameter.
        parameter: String,
        /// Why (the Secret or key is missing; never the value).
        reason: String,
    },
    /// The HTTP endpoint cannot listen.
    #[error("cannot listen on `{address}` for /healthz, /readyz and /metrics: {source}")]
    Listen {
        /// The address.
        address: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The thread that runs reconciles is gone.
    #[error("{0}")]
    Worker(String),
    /// The finalizer could not be added or removed.
    #[error("finalizer `addonctl.io/disable`: {0}")]
    Finalizer(String),
    /// Drift could not be checked or corrected.
    #[error("drift: {0}")]
    Drift(#[from] crate::drift::Error),
    /// The `Addon` would make the controller do what its author may not, or what the review
    /// flags without `spec.allow`.
    #[error("refused: {0}")]
    Unauthorized(String),
}

// The user (or the author of the `Addon`) can fix a spec, a secret parameter, a flag, a missing
// `Addon` (or rollout) and what the trust model refuses; the controller's own requests (its
// credentials, not the author's), its finalizer and its threads fail for the environment or
// addonctl.
crate::error::front_end_error!(
    Error,
    Error::Spec(_)
        | Error::SecretParameter { .. }
        | Error::Listen { .. } => crate::ErrorKind::Invalid,
    Error::Control(_) => crate::ErrorKind::NotFound,
    Error::Unauthorized(_) => crate::ErrorKind::Denied,
    Error::Drift(e) => e.kind(),
    Error::Kube(e) => kube_kind(e),
    Error::Finalizer(_) | Error::Worker(_) => crate::ErrorKind::Internal,
);

/// The kind of the controller's own request failing: a write another writer won (409) is a
/// [`Conflict`](crate::ErrorKind::Conflict) like every contention; a server that cannot be
/// reached or answers 429 or 5xx is [`Unavailable`](crate::ErrorKind::Unavailable); anything
/// else (its own rights included: the deployment's, not the author's) is
/// [`Internal`](crate::ErrorKind::Internal).
fn kube_kind(error: &kube::Error) -> crate::ErrorKind {
    match error {
        kube::Error::Api(response) if response.code == 409 => crate::ErrorKind::Conflict,
        kube::Error::Api(response) if response.code == 429 || response.code >= 500 => {
            crate::ErrorKind::Unavailable
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) => crate::ErrorKind::Unavailable,
        _ => crate::ErrorKind::Internal,
    }
}

/// Reconciles failing in a row for reasons no author can fix before `/readyz` says so.
const TROUBLED_AFTER: u32 = 3;

/// The controller's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Retry pacing of failing `Addon`s.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// The first retry's delay (doubled at each failure).
    pub initial: Duration,
    /// The longest delay; also the pace after the budget is spent.
    pub max: Duration,
    /// Failures in a row before the `Addon` is `Stalled`.
    pub budget: u32,
}

impl Default for Backoff {
    /// 5 s doubling to 5 min; `Stalled` after 6 failures in a row.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(300),
            budget: 6,
        }
    }
}

impl Backoff {
    /// The delay after `failures` failures in a row (1 = the first).
    pub fn delay(&self, failures: u32) -> Duration {
        if failures >= self.budget {
            return self.max;
        }
        let factor = 2u32.saturating_pow(failures.saturating_sub(1));
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct ControllerSettings {
    /// Where `/healthz`, `/readyz` and `/metrics` listen (port 0: any free port).
    pub metrics_address: SocketAddr,
    /// Reconcile only while holding the Lease `addonctl-controller` (several replicas).
    pub leader_elect: bool,
    /// The registries are listed again at this pace (zero: never; `POST /webhook/registry`
    /// still does), and every `Addon` whose version would change is reconciled.
    pub registry_interval: Duration,
    /// How often the clusters of an `Addon` whose drift policy is not `ignore` are compared
    /// with its record (one metadata list per kind and cluster; full reads only of objects
    /// whose `resourceVersion` moved).
    pub drift_interval: Duration,
    /// The longest time between two looks at a rollout's gate while a cluster of its batch is
    /// not healthy yet (a change of its workloads, watched, is looked at at once; a soak's end
    /// and the deadline are looked at on time).
    pub gate_poll: Duration,
    /// Retry pacing.
    pub backoff: Backoff,
    /// `Addon`s reconciled at once.
    pub concurrency: u16,
    /// Worker threads: the reconciles' (at most `concurrency` of them) and the clusters' of
    /// each apply, drift check and health read ([`crate::spread`]); 0 = one per CPU available.
    pub workers: u16,
    /// Who this process is in the Lease.
    pub identity: String,
    /// Whose rights an `Addon` is applied within: its author's (the default) or the
    /// controller's own.
    pub authorize_as: trust::AuthorizeAs,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        ControllerSettings {
            metrics_address: SocketAddr::from(([127, 0, 0, 1], 9090)),
            leader_elect: true,
            registry_interval: Duration::from_secs(300),
            drift_interval: Duration::from_secs(10),
            gate_poll: Duration::from_secs(3),
            backoff: Backoff::default(),
            concurrency: 4,
            workers: 0,
            identity: crate::state::lease::holder_identity("controller"),
            authorize_as: trust::AuthorizeAs::Author,
        }
    }
}

/// A controller whose HTTP endpoint listens.
pub struct Controller {
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    address: SocketAddr,
}

/// What every task of the controller shares.
struct Shared {
    /// The context; replaced by one with freshly opened registries at each re-list.
    ctx: std::sync::RwLock<Arc<Context>>,
    /// Set by the registry webhook: re-list the registries (one permit: bursts coalesce).
    relist: tokio::sync::Notify,
    settings: ControllerSettings,
    metrics: metrics::Metrics,
    /// Whether this process leads (always `true` without leader election).
    leader: tokio::sync::watch::Sender<bool>,
    /// Whether `/readyz` answers 200.
    ready: std::sync::atomic::AtomicBool,
    /// Reconciles in a row that failed for a reason no `Addon` author can fix (the API, the
    /// process itself: out of descriptors), and the last such error: `/readyz` says so.
    troubled: std::sync::Mutex<(u32, String)>,
    /// The answers of the author checks (SubjectAccessReviews), kept a short while.
    reviews: Arc<trust::Reviews>,
}

impl Shared {
    /// Notes how a reconcile ended: a success clears the trouble, a failure no author can fix
    /// adds to it.
    fn reconciled(&self, error: Option<&Error>) {
        let mut troubled = self
            .troubled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match error {
            None => *troubled = (0, String::new()),
            Some(e) if !e.is_user_error() => {
                *troubled = (troubled.0.saturating_add(1), e.to_string());
            }
            Some(_) => {}
        }
    }

    /// Why the controller cannot reconcile, once that many reconciles in a row failed so.
    fn trouble(&self) -> Option<String> {
        let troubled = self
            .troubled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (troubled.0 >= TROUBLED_AFTER)
            .then(|| format!("the last {} reconciles failed: {}", troubled.0, troubled.1))
    }

    /// The current context (its catalogue as last re-listed).
    fn ctx(&self) -> Arc<Context> {
        Arc::clone(
            &self
                .ctx
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Replaces the context (after a re-list).
    fn set_ctx(&self, ctx: Arc<Context>) {
        *self
            .ctx
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = ctx;
    }
}

impl Controller {
    /// Opens the HTTP endpoint (see [`Controller::address`] for the port chosen for port 0).
    pub async fn bind(ctx: Context, settings: ControllerSettings) -> Result<Controller> {
        let address = settings.metrics_address;
        if settings.workers > 0 && !crate::spread::set_threads(usize::from(settings.workers)) {
            tracing::debug!(
                "the cluster threads were started before the controller: {} of them",
                crate::spread::threads()
            );
        }
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| Error::Listen {
                address: address.to_string(),
                source,
            })?;
        let address = listener.local_addr().map_err(|source| Error::Listen {
            address: address.to_string(),
            source,
        })?;
        let (leader, _) = tokio::sync::watch::channel(!settings.leader_elect);
        let shared = Arc::new(Shared {
            ready: std::sync::atomic::AtomicBool::new(settings.leader_elect),
            troubled: std::sync::Mutex::new((0, String::new())),
            reviews: Arc::default(),
            ctx: std::sync::RwLock::new(Arc::new(ctx)),
            relist: tokio::sync::Notify::new(),
            settings,
            metrics: metrics::Metrics::default(),
            leader,
        });
        Ok(Controller {
            shared,
            listener,
            address,
        })
    }

    /// The address the HTTP endpoint listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Runs until `shutdown` resolves: serves HTTP, elects a leader, reconciles while leading;
    /// then stops reconciling and releases the Lease.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()> + Send) -> Result<()> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let server = tokio::spawn(serve::serve(
            self.listener,
            Arc::clone(&self.shared),
            stopped.clone(),
        ));
        let election = self
            .shared
            .settings
            .leader_elect
            .then(|| tokio::spawn(leader::elect(Arc::clone(&self.shared), stopped.clone())));
        let reconciling = reconcile::run_while_leading(Arc::clone(&self.shared), stopped);
        tokio::pin!(reconciling);
        let finished = tokio::select! {
            () = shutdown => false,
            result = &mut reconciling => {
                result?;
                true
            }
        };
        tracing::info!("shutting down: finishing the reconciles under way");
        let _ = stop.send(true);
        if !finished {
            // The reconciles under way finish; nothing new starts.
            let _ = tokio::time::timeout(Duration::from_secs(30), reconciling).await;
        }
        if let Some(election) = election {
            let _ = tokio::time::timeout(Duration::from_secs(10), election).await;
        }
        server.abort();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_doubles_up_to_its_maximum_and_stays_there_after_the_budget() {
        let backoff = Backoff {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(300),
            budget: 10,
        };
        let delays: Vec<u64> = (1..=9).map(|n| backoff.delay(n).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(backoff.delay(10).as_secs(), 300);
        assert_eq!(backoff.delay(1000).as_secs(), 300);
    }
}
