//! Reading addons: the status of one (with what the registries say, when asked), the
//! registries' addons with their phase (registries alone when the state cannot be read), the
//! wait for a phase, the stored values and the revisions. Reads only; each takes the
//! [`Session`] of one command or request, reports what it read and prints nothing (a wait's
//! changes go to the session's progress).

use std::time::Duration;

use serde::Serialize;

use crate::context::Session;
use crate::source::catalog::Catalog;
use crate::status::list::ListOptions;
use crate::status::Detail;
use crate::{Error, Result};

pub use crate::state::revisions::Revision;
pub use crate::status::health::{ClusterStatus, ResourceState};
pub use crate::status::list::ListRow;
pub use crate::status::values::StoredValues;
pub use crate::status::wait::{cluster_readiness, Watch};
pub use crate::status::{ParameterStatus, Phase, Status};

/// Which addon's status, and how much of it.
#[derive(Debug, Clone, Default)]
pub struct StatusRequest {
    /// The addon.
    pub addon: String,
    /// Add what the registries say (description, versions, dependencies, parameters).
    pub detail: bool,
}

/// The status of one addon: its phase, version, clusters and objects (and, asked, what the
/// registries say of it). An addon that is not installed is `disabled`.
pub async fn status(session: &Session, request: &StatusRequest) -> Result<Status> {
    let ctx = session.ctx();
    let detail = request.detail.then(|| Detail::of(ctx));
    crate::status::status(ctx.state(), &request.addon, detail).await
}

/// The names of the installed addons; none when they cannot be read (for the wording of hints
/// and did-you-means, never for a decision).
pub async fn installed_names(session: &Session) -> Vec<String> {
    session
        .ctx()
        .state()
        .installed()
        .await
        .map(|list| list.into_keys().collect())
        .unwrap_or_default()
}

/// Which addons to list.
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    /// Only this registry's.
    pub registry: Option<String>,
    /// Only installed ones.
    pub installed_only: bool,
}

/// The registries' addons with their phase.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListReport {
    /// One row per addon.
    pub addons: Vec<ListRow>,
    /// The registries that could not be read.
    pub warnings: Vec<String>,
    /// Why every phase is `unknown` when which addons are installed could not be read (`None`:
    /// the phases are known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_phases: Option<String>,
}

/// The registries' addons with their phase. A caller who may read the registries but not what
/// is installed (the records are Secrets) gets the registries with phase `unknown` and the
/// reason in [`ListReport::unknown_phases`]; asking for installed addons only, the refusal.
pub async fn list(session: &Session, request: &ListRequest) -> Result<ListReport> {
    let ctx = session.ctx();
    let options = options(request);
    match crate::status::list(Some(ctx.state()), &ctx.catalog, &options).await {
        Ok((addons, warnings)) => Ok(ListReport {
            addons,
            warnings,
            unknown_phases: None,
        }),
        Err(e) if is_forbidden(&e) && !request.installed_only => {
            let (addons, warnings) = crate::status::list(None, &ctx.catalog, &options).await?;
            Ok(ListReport {
                addons,
                warnings,
                unknown_phases: Some(format!(
                    "which addons are installed cannot be read ({e}); listing the registries with phase `unknown` (ClusterRole `addonctl-viewer` may read them, see `addonctl rbac`)"
                )),
            })
        }
        Err(e) => Err(e),
    }
}

/// The addons of `catalog` with phase `unknown`, for a front end that reaches no cluster
/// (the reason is the front end's to say).
pub async fn list_registries(catalog: &Catalog, request: &ListRequest) -> Result<ListReport> {
    let (addons, warnings) = crate::status::list(None, catalog, &options(request)).await?;
    Ok(ListReport {
        addons,
        warnings,
        unknown_phases: None,
    })
}

fn options(request: &ListRequest) -> ListOptions<'_> {
    ListOptions {
        registry: request.registry.as_deref(),
        installed_only: request.installed_only,
    }
}

/// Whether the control plane refused a read of the state.
fn is_forbidden(error: &Error) -> bool {
    matches!(
        error,
        Error::Cluster(crate::cluster::Error::Forbidden { .. })
    )
}

/// The phase to wait for.
#[derive(Debug, Clone)]
pub struct WaitRequest {
    /// The addon.
    pub addon: String,
    /// `enabled` or `disabled`.
    pub phase: Phase,
    /// How long at most.
    pub timeout: Duration,
}

/// A wait that reached its phase.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waited {
    /// The addon.
    pub addon: String,
    /// The phase reached.
    pub phase: Phase,
    /// How long it took.
    #[serde(rename = "elapsedSeconds", serialize_with = "seconds")]
    pub elapsed: Duration,
}

fn seconds<S: serde::Serializer>(elapsed: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(elapsed.as_secs_f64())
}

/// Waits until the addon is in the phase asked for, each change reported to the session's
/// progress; an error when the time is up (what is not ready yet) or, waiting for `enabled`,
/// when the addon failed.
pub async fn wait(session: &Session, request: &WaitRequest) -> Result<Waited> {
    let elapsed = crate::status::wait::until(
        session.ctx().state(),
        &request.addon,
        request.phase,
        request.timeout,
        session.progress(),
    )
    .await?;
    Ok(Waited {
        addon: request.addon.clone(),
        phase: request.phase,
        elapsed,
    })
}

/// A watch of the addon's status: each [`Watch::next`] hands out the status once something
/// shown changed (the first at once). It never ends by itself: bound it.
pub fn watch<'a>(session: &'a Session, addon: &str) -> Watch<'a> {
    Watch::new(session.ctx().state(), addon)
}

/// Whose stored values, and whether secrets show.
#[derive(Debug, Clone, Default)]
pub struct ValuesRequest {
    /// The installed addon.
    pub addon: String,
    /// Show `secret()` values (else masked).
    pub show_secrets: bool,
}

/// The installed addon's stored arguments (its `clusters` among them), as a file `enable -f`
/// takes back; `secret()` values masked unless asked.
pub async fn values(session: &Session, request: &ValuesRequest) -> Result<StoredValues> {
    let ctx = session.ctx();
    crate::status::values::stored_values(
        ctx.state(),
        Detail::of(ctx),
        &request.addon,
        request.show_secrets,
    )
    .await
}

/// Whose objects to compare with what was applied.
#[derive(Debug, Clone, Default)]
pub struct DriftRequest {
    /// The installed addon.
    pub addon: String,
}

/// Compares the installed addon's objects on every cluster its record lists with what it
/// applied (rendered again from the record's version and stored arguments), leaving out what
/// its `Addon` resource excludes. Reads only: nothing is corrected, whatever its policy.
pub async fn drift(
    session: &Session,
    request: &DriftRequest,
) -> Result<crate::drift::Report, crate::drift::Error> {
    let ctx = session.ctx();
    let declared = match crate::declare::find(&ctx.cluster, &ctx.namespace, &request.addon).await {
        Ok(found) => found,
        Err(e) => {
            tracing::debug!("the `Addon` `{}` was not read: {e}", request.addon);
            None
        }
    };
    let mut spec = crate::controller::engine::drift_spec(
        declared.as_ref().and_then(|a| a.spec.drift.as_ref()),
    );
    spec.policy = crate::drift::Policy::Warn;
    let mut cache = crate::drift::DriftCache::new();
    crate::drift::engine::check(ctx, &request.addon, &spec, &mut cache).await
}

/// Whose revisions.
#[derive(Debug, Clone, Default)]
pub struct HistoryRequest {
    /// The installed addon.
    pub addon: String,
}

/// An installed addon's revisions, oldest first.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct History {
    /// The addon.
    pub addon: String,
    /// Its installed version.
    pub version: String,
    /// Its revisions (none for an addon installed by an earlier addonctl).
    pub revisions: Vec<Revision>,
}

/// The installed addon's revisions; an error naming it when it has no record.
pub async fn history(session: &Session, request: &HistoryRequest) -> Result<History> {
    let Some(record) = session.ctx().state().record(&request.addon).await? else {
        return Err(crate::state::revisions::RevisionError::NoHistory {
            addon: request.addon.clone(),
        }
        .into());
    };
    Ok(History {
        addon: record.name,
        version: record.version,
        revisions: record.revisions,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::{list, ListRequest};
    use crate::cluster::fake::FakeApi;
    use crate::context::{Context, NoopReporter, Session, Settings};
    use crate::status::Phase;

    const SECRETS: &str = "/api/v1/namespaces/vela-system/secrets";

    fn session(api: &FakeApi) -> Session {
        let ctx = Context::with_cluster(&Settings::new("vela-system"), api.cluster("local"))
            .expect("a context over the fake API");
        Session::new(ctx, None, Arc::new(NoopReporter))
    }

    fn refusing() -> FakeApi {
        FakeApi::default().serves("v1", "secrets", "Secret").on(
            "GET",
            SECRETS,
            403,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "message": "secrets is forbidden: User \"viewer\" cannot list resource \"secrets\"",
                   "reason": "Forbidden", "code": 403}),
        )
    }

    #[tokio::test]
    async fn a_caller_who_may_not_read_the_records_gets_the_registries_with_phase_unknown() {
        let session = session(&refusing());
        let report = list(&session, &ListRequest::default())
            .await
            .expect("the registries");
        assert!(!report.addons.is_empty());
        assert!(report.addons.iter().all(|row| row.phase == Phase::Unknown));
        let reason = report.unknown_phases.expect("the reason");
        assert!(
            reason.starts_with("which addons are installed cannot be read ("),
            "{reason}"
        );
        assert!(reason.contains("addonctl-viewer"), "{reason}");
    }

    #[tokio::test]
    async fn asking_for_installed_addons_only_the_refusal_is_the_answer() {
        let session = session(&refusing());
        let error = list(
            &session,
            &ListRequest {
                registry: None,
                installed_only: true,
            },
        )
        .await
        .expect_err("the refusal");
        assert!(super::is_forbidden(&error), "{error}");
    }

    #[tokio::test]
    async fn a_readable_state_gives_known_phases_and_no_reason() {
        let api = FakeApi::default().serves("v1", "secrets", "Secret").on(
            "GET",
            SECRETS,
            200,
            json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {}, "items": []}),
        );
        let report = list(&session(&api), &ListRequest::default())
            .await
            .expect("the list");
        assert!(report.unknown_phases.is_none());
        assert!(report.addons.iter().all(|row| row.phase == Phase::Disabled));
    }
}
