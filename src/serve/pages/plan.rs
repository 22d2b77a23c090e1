//! A plan's page: what it would change (the preview), its Apply button and its state, live.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use serde_json::Value;

use super::addon::addon_yaml;
use super::{error_page, form, html, preview};
use crate::serve::plans::{self, PlanAction, PlanState, PlanView};
use crate::serve::{App, Caller};

#[derive(Template)]
#[template(path = "plan.html", config = "src/serve/askama.toml")]
struct PlanPage {
    nav: &'static str,
    view: PlanView,
    addon: String,
    action: &'static str,
    state: &'static str,
    preview: Option<Box<preview::Preview>>,
    removals: Vec<preview::Removal>,
    values_yaml: String,
    addon_yaml: String,
    failure: Option<String>,
    report: String,
    apply_error: Option<String>,
}

impl PlanPage {
    fn new(view: PlanView, namespace: &str) -> PlanPage {
        let action = match view.request.action {
            PlanAction::Enable => "enable",
            PlanAction::Upgrade => "upgrade",
            PlanAction::Disable => "disable",
            PlanAction::Rollback => "rollback",
        };
        let (preview, removals) =
            match preview::read(&view.plan, view.request.action == PlanAction::Disable) {
                preview::Shown::Preview(p) => (Some(p), Vec::new()),
                preview::Shown::Removal(r) => (None, r),
            };
        let (state, failure, report) = match &view.state {
            PlanState::Planned => ("planned", None, String::new()),
            PlanState::Applying => ("applying", None, String::new()),
            PlanState::Succeeded { report } => (
                "succeeded",
                None,
                serde_json::to_string_pretty(report).unwrap_or_default(),
            ),
            PlanState::Failed { error } => ("failed", Some(error.message.clone()), String::new()),
        };
        let values = view.request.values.clone().unwrap_or_default();
        let addon = view
            .request
            .addon
            .rsplit('/')
            .next()
            .unwrap_or(&view.request.addon)
            .to_owned();
        let addon_yaml = if view.request.action == PlanAction::Disable {
            String::new()
        } else {
            addon_yaml(
                namespace,
                &addon,
                view.request.version.as_deref(),
                &values,
                view.request.clusters.as_deref(),
            )
        };
        PlanPage {
            nav: "",
            addon,
            action,
            state,
            preview,
            removals,
            values_yaml: if values.is_empty() {
                String::new()
            } else {
                form::yaml_text(&Value::Object(values))
            },
            addon_yaml,
            failure,
            report,
            apply_error: None,
            view,
        }
    }
}

pub(super) async fn page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    match plans::view(&app, &caller, &id) {
        Ok(view) => html(
            StatusCode::OK,
            &PlanPage::new(view, &app.runtime().namespace),
        ),
        Err(e) => error_page(&e),
    }
}

pub(super) async fn apply(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    match plans::start(Arc::clone(&app), caller.clone(), id.clone()).await {
        Ok(_) => Redirect::to(&format!("/plans/{id}")).into_response(),
        Err(error) => match plans::view(&app, &caller, &id) {
            Ok(view) => {
                let mut page = PlanPage::new(view, &app.runtime().namespace);
                page.apply_error = Some(error.message.clone());
                html(error.status(), &page)
            }
            Err(_) => error_page(&error),
        },
    }
}
