//! The status matrix: installed addons × clusters (phase, version, ready workloads, objects,
//! the last error), the drift an `Addon`'s controller reports, and — asked for one addon —
//! its objects compared with what it applied, per cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;

use super::{given, render};
use crate::context::Session;
use crate::serve::api::{self, AddonFilter};
use crate::serve::error::ApiError;
use crate::serve::{App, Caller};

/// One cluster's cell of the status matrix.
struct Cell {
    version: String,
    workloads: String,
    objects: String,
    error: Option<String>,
    /// What a drift check found here (asked for this addon): one line per drifted object.
    drift: Option<Vec<String>>,
}

/// One installed addon's row.
struct Row {
    name: String,
    phase: String,
    version: String,
    ready: String,
    reason: Option<String>,
    cells: Vec<Option<Cell>>,
    /// Declared by an `Addon`: its drift policy and, when the controller found drift, what.
    declared: Option<DeclaredDrift>,
    /// Whether a drift check was asked for this addon.
    checked: bool,
    /// What the drift check found, in a line.
    drift_summary: Option<String>,
    /// Where it came from (an OCI registry): `reference@digest`, the short digest, and its
    /// verification in a word and in a line.
    source: Option<Source>,
}

/// Where an installed version came from, pinned by digest, and its verification.
struct Source {
    pinned: String,
    short: String,
    word: &'static str,
    describe: String,
}

/// The drift an `Addon`'s controller reports.
struct DeclaredDrift {
    policy: String,
    drifted: Option<String>,
}

#[derive(Template)]
#[template(path = "status.html", config = "src/serve/askama.toml")]
struct StatusPage {
    nav: &'static str,
    clusters: Vec<String>,
    rows: Vec<Row>,
    errors: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct StatusQuery {
    /// The addon whose objects to compare with what it applied.
    drift: Option<String>,
}

fn row_of(status: &crate::status::Status) -> Row {
    let ready = match status.workload_count {
        Some(all) => format!("{}/{all}", status.ready_workload_count.unwrap_or(0)),
        None => "–".to_owned(),
    };
    Row {
        name: status.name.clone(),
        phase: status.phase.to_string(),
        version: status.installed_version.clone().unwrap_or_default(),
        ready,
        reason: status.reason.clone(),
        cells: Vec::new(),
        declared: None,
        checked: false,
        source: status.source.as_ref().map(|s| Source {
            pinned: format!("{}@{}", s.reference, s.manifest_digest),
            short: s.short_digest().to_owned(),
            word: s.verification.word(),
            describe: s.verification.describe(),
        }),
        drift_summary: None,
    }
}

fn cell_of(cluster: &crate::status::health::ClusterStatus, fallback: &str) -> Cell {
    use crate::status::health::ResourceState;
    let workloads: Vec<_> = cluster
        .resources
        .iter()
        .filter(|r| r.replicas.is_some() || r.ready_replicas.is_some())
        .collect();
    let ready = workloads
        .iter()
        .filter(|r| r.state == ResourceState::Ready)
        .count();
    let missing = cluster
        .resources
        .iter()
        .filter(|r| r.state == ResourceState::Missing)
        .count();
    Cell {
        version: cluster
            .version
            .clone()
            .unwrap_or_else(|| fallback.to_owned()),
        workloads: if workloads.is_empty() {
            "no workloads".to_owned()
        } else {
            format!("{ready}/{} workloads ready", workloads.len())
        },
        objects: if missing == 0 {
            format!("{} objects", cluster.resources.len())
        } else {
            format!("{} objects, {missing} missing", cluster.resources.len())
        },
        error: cluster.error.clone(),
        drift: None,
    }
}

pub(super) async fn page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<StatusQuery>,
) -> Response {
    let asked = given(query.drift);
    let job = Arc::clone(&app);
    render(&app, move || async move {
        let session = job.session(&caller, None);
        let filter = AddonFilter {
            installed: true,
            ..AddonFilter::default()
        };
        let list = api::catalogue(&job, &session, &filter).await?;
        let mut clusters = BTreeSet::new();
        let mut statuses = Vec::new();
        let mut errors = list.warnings;
        for addon in &list.addons {
            match api::status_of(&job, &session, &addon.name).await {
                Ok(status) => {
                    clusters.extend(status.resources.iter().map(|c| c.cluster.clone()));
                    statuses.push(status);
                }
                Err(e) => errors.push(format!("{}: {}", addon.name, e.message)),
            }
        }
        let clusters: Vec<String> = clusters.into_iter().collect();
        let declared = declared_drift(&session).await;
        let drift = match &asked {
            Some(addon) if statuses.iter().any(|s| s.name == *addon) => {
                Some((addon.clone(), api::drift_of(&job, &session, addon).await))
            }
            Some(addon) => {
                errors.push(format!(
                    "{addon}: not installed, or not shown to you: no drift to check"
                ));
                None
            }
            None => None,
        };
        let rows = statuses
            .iter()
            .map(|status| {
                let mut row = row_of(status);
                row.declared = declared.get(&status.name).map(|d| DeclaredDrift {
                    policy: d.0.clone(),
                    drifted: d.1.clone(),
                });
                let version = row.version.clone();
                row.cells = clusters
                    .iter()
                    .map(|c| {
                        status
                            .resources
                            .iter()
                            .find(|r| r.cluster == *c)
                            .map(|r| cell_of(r, &version))
                    })
                    .collect();
                if let Some((addon, found)) = drift.as_ref().filter(|(a, _)| *a == status.name) {
                    with_drift(&mut row, &clusters, addon, found);
                }
                row
            })
            .collect();
        Ok::<_, ApiError>(StatusPage {
            nav: "status",
            clusters,
            rows,
            errors,
        })
    })
    .await
}

/// The drift policy and the controller's `Drifted` condition (when true) of each addon an
/// `Addon` declares; none when they cannot be read.
async fn declared_drift(session: &Session) -> BTreeMap<String, (String, Option<String>)> {
    let ctx = session.ctx();
    let Ok(addons) = crate::declare::list(&ctx.cluster, &ctx.namespace).await else {
        return BTreeMap::new();
    };
    let now = k8s_openapi::chrono::Utc::now();
    addons
        .iter()
        .map(|addon| {
            let block = crate::declare::declared::declared(addon, now);
            let policy = serde_json::to_value(block.drift_policy)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let drifted = block
                .conditions
                .iter()
                .find(|c| c.type_ == "Drifted" && c.status == "True")
                .map(|c| c.message.clone());
            (block.name, (policy, drifted))
        })
        .collect()
}

/// `row` with what the drift check of its addon found, per cluster.
fn with_drift(
    row: &mut Row,
    clusters: &[String],
    addon: &str,
    found: &Result<crate::drift::Report, ApiError>,
) {
    row.checked = true;
    let report = match found {
        Ok(report) => report,
        Err(e) => {
            row.drift_summary = Some(format!(
                "the drift of {addon} was not checked: {}",
                e.message
            ));
            return;
        }
    };
    row.drift_summary = Some(match report.drifts.len() {
        0 if report.errors.is_empty() => format!("{} objects compared: no drift", report.objects),
        0 => format!(
            "{} objects compared: no drift where they could be read",
            report.objects
        ),
        n => format!("{n} of {} objects drifted", report.objects),
    });
    for (cluster, cell) in clusters.iter().zip(row.cells.iter_mut()) {
        let Some(cell) = cell else { continue };
        let mut lines: Vec<String> = report
            .drifts
            .iter()
            .filter(|d| d.cluster == *cluster)
            .map(drift_line)
            .collect();
        lines.extend(
            report
                .errors
                .iter()
                .chain(&report.skipped)
                .filter(|e| e.cluster == *cluster)
                .map(|e| format!("not compared: {}", e.error)),
        );
        cell.drift = Some(lines);
    }
}

/// One drifted object, in a line.
fn drift_line(drift: &crate::drift::Drift) -> String {
    use crate::drift::DriftKind;
    match &drift.kind {
        DriftKind::Changed { paths } => format!("{} changed: {}", drift.object, paths.join(", ")),
        DriftKind::Deleted => format!("{} deleted", drift.object),
        DriftKind::Shared { with, paths } => format!(
            "{} also applied by `{with}`, other values at {}",
            drift.object,
            paths.join(", ")
        ),
    }
}
