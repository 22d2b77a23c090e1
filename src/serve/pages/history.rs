//! An installed addon's history: every revision (version, when, what it is now, its values
//! with secrets as references) and, for each one not deployed, a rollback planned through the
//! same plan and apply as every other change.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;
use serde_json::Value;

use super::{error_page, form, render};
use crate::ops::status::{History, HistoryRequest};
use crate::serve::error::ApiError;
use crate::serve::plans::{self, PlanAction, PlanRequest};
use crate::serve::{App, Caller};

/// One revision as the page shows it.
struct Shown {
    revision: u32,
    version: String,
    updated: String,
    status: String,
    description: String,
    /// Its values as YAML (secret values are references to the revision Secret).
    values: String,
    /// Whether it can be rolled back to (not the deployed one).
    target: bool,
    /// Why a rollback to it needs the registry (the package is not kept).
    note: Option<String>,
    /// `reference@digest` and its verification, when it came from an OCI registry.
    source: Option<(String, String)>,
}

#[derive(Template)]
#[template(path = "history.html", config = "src/serve/askama.toml")]
struct HistoryPage {
    nav: &'static str,
    addon: String,
    version: String,
    /// Newest first.
    revisions: Vec<Shown>,
}

fn page_of(history: History) -> HistoryPage {
    let revisions = history
        .revisions
        .iter()
        .rev()
        .map(|r| Shown {
            revision: r.revision,
            version: r.version.clone(),
            updated: r.updated.clone(),
            status: r.status.to_string(),
            description: r.description.clone(),
            values: if r.args.is_empty() {
                String::new()
            } else {
                form::yaml_text(&Value::Object(r.args.clone()))
            },
            target: r.status != crate::state::record::revision::RevisionStatus::Deployed,
            note: (!r.package_kept).then(|| {
                r.note.clone().unwrap_or_else(|| {
                    "its package is not kept: a rollback reads it from the registry".to_owned()
                })
            }),
            source: r.source.as_ref().map(|s| {
                (
                    format!("{}@{}", s.reference, s.manifest_digest),
                    s.verification.describe(),
                )
            }),
        })
        .collect();
    HistoryPage {
        nav: "status",
        addon: history.addon,
        version: history.version,
        revisions,
    }
}

/// `GET /addons/{name}/history`.
pub(super) async fn page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Response {
    let job = Arc::clone(&app);
    render(&app, move || async move {
        let session = job.session(&caller, None);
        crate::serve::api::hidden_unless_visible(&job, &session, &name).await?;
        let history =
            crate::ops::status::history(&session, &HistoryRequest { addon: name }).await?;
        Ok::<_, ApiError>(page_of(history))
    })
    .await
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RollbackForm {
    /// The revision to go back to.
    revision: Option<u32>,
}

/// `POST /addons/{name}/history`: plans the rollback to the revision asked for and shows the
/// plan (applied only from there).
pub(super) async fn submit(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Form(form): Form<RollbackForm>,
) -> Response {
    let Some(revision) = form.revision else {
        return error_page(&ApiError::invalid(
            "choose the revision to roll back to (a number from the history)",
        ));
    };
    let job = Arc::clone(&app);
    let planned = app
        .workers
        .run(move || async move {
            let request = PlanRequest {
                action: PlanAction::Rollback,
                addon: name,
                version: None,
                values: None,
                clusters: None,
                adopt: false,
                prune_dependencies: false,
                revision: Some(revision),
            };
            plans::plan(&job, &caller, request).await
        })
        .await
        .and_then(|r| r);
    match planned {
        Ok(view) => Redirect::to(&format!("/plans/{}", view.plan_id)).into_response(),
        Err(e) => error_page(&e),
    }
}
