//! The managed clusters: join (asking before labels are dropped), list, detach (asking after a
//! dry run shows what it deletes) and labels. Writes are checked first (control plane first:
//! every missing permission named before anything changes).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::apply::clusters::{ClusterRow, DetachReport, JoinLabels};
use crate::context::Session;
use crate::Result;

use super::{agreed, Consent, Question};

/// A cluster to join.
#[derive(Debug, Clone)]
pub struct JoinOp {
    /// The name it is known by.
    pub name: String,
    /// The kubeconfig that reaches it.
    pub kubeconfig: PathBuf,
    /// That kubeconfig's context (`None`: its current one).
    pub context: Option<String>,
    /// What happens to the labels of a cluster joined before under this name.
    pub labels: JoinLabels,
}

/// Checks that the caller may write the cluster Secrets.
async fn check(session: &Session, command: &str) -> Result<()> {
    let ctx = session.ctx();
    crate::apply::access::check(
        &ctx.cluster,
        command,
        &crate::apply::access::cluster_state(&ctx.namespace),
    )
    .await
}

/// Joins a cluster; re-joining one whose stored labels the new ones would drop asks `consent`.
pub async fn join(session: &Session, op: &JoinOp, consent: &dyn Consent) -> Result<ClusterRow> {
    check(session, &format!("`addonctl cluster join {}`", op.name)).await?;
    if op.labels != JoinLabels::Keep && consent.asks() {
        let dropped = dropped_labels(session, &op.name, &op.labels).await;
        if !dropped.is_empty() {
            agreed(
                consent,
                Question::Rejoin {
                    cluster: op.name.clone(),
                    dropped,
                },
            )?;
        }
    }
    crate::apply::clusters::join_with(
        &session.ctx().applier(),
        &op.name,
        &op.kubeconfig,
        op.context.as_deref(),
        &op.labels,
    )
    .await
}

/// The labels a re-join with `labels` would drop from the stored cluster (`key=value`); none
/// when it is not joined yet or its Secret cannot be read (the question is a courtesy: join
/// itself reports what the cluster refuses).
async fn dropped_labels(session: &Session, name: &str, labels: &JoinLabels) -> Vec<String> {
    let ctx = session.ctx();
    let gvk = kube::core::GroupVersionKind::gvk("", "v1", "Secret");
    let Ok(Some(stored)) = ctx.cluster.get(&gvk, Some(&ctx.namespace), name).await else {
        return Vec::new();
    };
    let stored = crate::apply::clusters::stored_labels(&crate::state::to_value(&stored));
    stored
        .iter()
        .filter(|(k, _)| match labels {
            JoinLabels::Keep => false,
            JoinLabels::Reset => true,
            JoinLabels::Replace(given) => !given.contains_key(*k),
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

/// Every joined cluster, with whether it answers and its version.
pub async fn list(session: &Session) -> Result<Vec<ClusterRow>> {
    crate::apply::clusters::list(&session.ctx().applier()).await
}

/// Detaches a cluster (see [`crate::apply::clusters::detach`]); unless a dry run, `consent` is
/// asked first with what a dry run says it would delete.
pub async fn detach(
    session: &Session,
    name: &str,
    force: bool,
    dry_run: bool,
    consent: &dyn Consent,
) -> Result<DetachReport> {
    let applier = session.ctx().applier();
    if !dry_run && consent.asks() {
        let preview = crate::apply::clusters::detach(&applier, name, force, true).await?;
        agreed(
            consent,
            Question::Detach {
                cluster: name.to_owned(),
                deleted: preview.deleted.len(),
                given_back: preview.given_back.len(),
                addons: preview.addons,
            },
        )?;
    }
    // The library checks permissions and takes the locks (none for a dry run).
    crate::apply::clusters::detach(&applier, name, force, dry_run).await
}

/// Replaces a joined cluster's labels.
pub async fn set_labels(
    session: &Session,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> Result<()> {
    check(session, &format!("`addonctl cluster labels {name}`")).await?;
    crate::apply::clusters::set_labels(&session.ctx().applier(), name, labels).await
}
