//! One addon: its page (versions and their requirements, README, NOTES, dependencies,
//! definitions) and the form of its parameters, which plans what it asks.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::form::{self, Control, Item};
use super::{error_page, given, html, render};
use crate::context::Session;
use crate::serve::api::{self, AddonDetail};
use crate::serve::error::{ApiError, FieldError};
use crate::serve::plans::{self, PlanAction, PlanRequest};
use crate::serve::{App, Caller};

#[derive(Debug, Default, Deserialize)]
pub(super) struct AddonQuery {
    version: Option<String>,
}

/// A radio of the action choice.
struct ActionChoice {
    value: &'static str,
    label: &'static str,
    help: &'static str,
    checked: bool,
}

/// A version of the version chooser.
struct VersionChoice {
    version: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "addon.html", config = "src/serve/askama.toml")]
struct AddonPage {
    nav: &'static str,
    detail: AddonDetail,
    home: Option<String>,
    versions: Vec<VersionChoice>,
    requirements: Vec<(String, String)>,
    items: Vec<Item>,
    unplaced: Vec<FieldError>,
    error: Option<String>,
    actions: Vec<ActionChoice>,
    yaml_mode: bool,
    yaml_text: String,
    clusters: String,
    adopt: bool,
    prune: bool,
    command: String,
    addon_yaml: String,
    /// The form shows the installed addon's values.
    prefilled: bool,
}

impl AddonPage {
    fn new(detail: AddonDetail, namespace: String) -> Self {
        let versions = detail
            .versions
            .iter()
            .map(|v| VersionChoice {
                selected: *v == detail.version,
                version: v.clone(),
            })
            .collect();
        let requirements = match &detail.requirements {
            Value::Object(map) => map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), form::display(v)))
                .collect(),
            _ => Vec::new(),
        };
        let installed = detail.installed_version.is_some();
        let (items, _) = form::build(&detail.parameters, &[], &[]);
        let command = format!(
            "addonctl {} {} --version={}",
            if installed { "upgrade" } else { "enable" },
            detail.name,
            detail.version
        );
        let addon_yaml = addon_yaml(
            &namespace,
            &detail.name,
            Some(&detail.version),
            &Map::new(),
            None,
        );
        let home = detail
            .url
            .clone()
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"));
        AddonPage {
            nav: "catalogue",
            home,
            versions,
            requirements,
            items,
            unplaced: Vec::new(),
            error: None,
            actions: action_choices(installed, None),
            yaml_mode: false,
            yaml_text: String::new(),
            clusters: String::new(),
            adopt: false,
            prune: false,
            command,
            addon_yaml,
            prefilled: false,
            detail,
        }
    }
}

impl AddonPage {
    /// The form filled with the installed addon's values (never its secrets: those stay as
    /// they are unless a new one is typed, since an upgrade merges over what is stored).
    fn prefill(&mut self, values: &Map<String, Value>) {
        let pairs = form::pairs_of(&self.items, values);
        if pairs.is_empty() {
            return;
        }
        let (items, _) = form::build(&self.detail.parameters, &pairs, &[]);
        self.items = items;
        self.prefilled = true;
    }
}

fn action_choices(installed: bool, chosen: Option<PlanAction>) -> Vec<ActionChoice> {
    let chosen = chosen.unwrap_or(if installed {
        PlanAction::Upgrade
    } else {
        PlanAction::Enable
    });
    let mut choices = Vec::new();
    if installed {
        choices.push(ActionChoice {
            value: "upgrade",
            label: "Upgrade",
            help: "apply this version and these values to the installed addon",
            checked: chosen == PlanAction::Upgrade,
        });
        choices.push(ActionChoice {
            value: "disable",
            label: "Disable",
            help: "remove the addon (the plan shows what is deleted and what is kept)",
            checked: chosen == PlanAction::Disable,
        });
    } else {
        choices.push(ActionChoice {
            value: "enable",
            label: "Enable",
            help: "install the addon and what it needs",
            checked: true,
        });
    }
    choices
}

pub(super) async fn page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(query): Query<AddonQuery>,
) -> Response {
    let job = Arc::clone(&app);
    let version = given(query.version);
    render(&app, move || async move {
        let session = job.session(&caller, None);
        let detail = api::detail(&job, &session, &name, version.as_deref()).await?;
        let installed = if detail.installed_version.is_some() {
            installed_values(&session, &detail.name).await
        } else {
            None
        };
        let mut page = AddonPage::new(detail, job.runtime().namespace.clone());
        if let Some(values) = installed {
            page.prefill(&values);
        }
        Ok(page)
    })
    .await
}

/// The installed addon's stored values (`secret()` values masked), when they can be read: the
/// upgrade form starts from them.
async fn installed_values(session: &Session, addon: &str) -> Option<Map<String, Value>> {
    let request = crate::ops::status::ValuesRequest {
        addon: addon.to_owned(),
        show_secrets: false,
    };
    match crate::ops::status::values(session, &request)
        .await
        .ok()?
        .values
    {
        Value::Object(values) => Some(values),
        _ => None,
    }
}

/// What a submitted addon form came to.
enum Submitted {
    /// Planned: the plan's id.
    Planned(String),
    /// The form again, with what is wrong.
    Again(Box<AddonDetail>, ApiError),
    /// The addon cannot be shown.
    Failed(ApiError),
}

/// The form's own fields (the parameters are `p.<path>`).
#[derive(Debug, Clone)]
struct Meta {
    action: Option<PlanAction>,
    version: Option<String>,
    yaml_mode: bool,
    yaml: String,
    clusters: Option<Vec<String>>,
    clusters_text: String,
    adopt: bool,
    prune: bool,
}

impl Meta {
    fn of(pairs: &[(String, String)]) -> Meta {
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let clusters_text = get("_clusters").unwrap_or_default();
        let clusters: Vec<String> = clusters_text
            .split([',', '\n', ' '])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect();
        Meta {
            action: match get("_action").as_deref() {
                Some("enable") => Some(PlanAction::Enable),
                Some("upgrade") => Some(PlanAction::Upgrade),
                Some("disable") => Some(PlanAction::Disable),
                _ => None,
            },
            version: given(get("_version")),
            yaml_mode: get("_mode").as_deref() == Some("yaml"),
            yaml: get("_yaml").unwrap_or_default(),
            clusters: (!clusters.is_empty()).then_some(clusters),
            clusters_text,
            adopt: get("_adopt").is_some(),
            prune: get("_prune").is_some(),
        }
    }
}

pub(super) async fn submit(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let meta = Meta::of(&pairs);
    let job = Arc::clone(&app);
    let (job_meta, job_pairs) = (meta.clone(), pairs.clone());
    let submitted = app
        .workers
        .run(move || async move { plan_form(&job, &caller, &name, &job_meta, &job_pairs).await })
        .await
        .unwrap_or_else(Submitted::Failed);
    match submitted {
        Submitted::Planned(id) => Redirect::to(&format!("/plans/{id}")).into_response(),
        Submitted::Failed(e) => error_page(&e),
        Submitted::Again(detail, error) => {
            let status = error.status();
            let mut page = AddonPage::new(*detail, app.runtime().namespace.clone());
            let installed = page.detail.installed_version.is_some();
            let given: Vec<(String, String)> = if meta.yaml_mode {
                Vec::new()
            } else {
                pairs.clone()
            };
            let (items, unplaced) = form::build(&page.detail.parameters, &given, &error.fields);
            page.items = items;
            page.unplaced = if meta.yaml_mode {
                error.fields.clone()
            } else {
                unplaced
            };
            page.error = Some(error.message.clone());
            page.actions = action_choices(installed, meta.action);
            page.yaml_mode = meta.yaml_mode;
            page.yaml_text = yaml_again(&page.detail.parameters, &meta.yaml);
            page.clusters.clone_from(&meta.clusters_text);
            page.adopt = meta.adopt;
            page.prune = meta.prune;
            html(status, &page)
        }
    }
}

/// The YAML values shown again after an error: without the secrets (when they cannot be told
/// apart, because the text does not parse, nothing is shown again if the addon has secrets).
fn yaml_again(schema: &Value, text: &str) -> String {
    match form::yaml_values(text) {
        Ok(values) if values.is_empty() => String::new(),
        Ok(values) => form::yaml_text(&Value::Object(form::without_secrets(schema, &values))),
        Err(_) if schema.to_string().contains("\"writeOnly\"") => String::new(),
        Err(_) => text.to_owned(),
    }
}

/// Plans what the form asks for `caller`.
async fn plan_form(
    app: &App,
    caller: &Caller,
    name: &str,
    meta: &Meta,
    pairs: &[(String, String)],
) -> Submitted {
    let session = app.session(caller, None);
    let detail = match api::detail(app, &session, name, meta.version.as_deref()).await {
        Ok(detail) => detail,
        Err(e) => return Submitted::Failed(e),
    };
    drop(session);
    let installed = detail.installed_version.is_some();
    let Some(action) = meta.action else {
        return Submitted::Again(
            Box::new(detail),
            ApiError::invalid("choose what to do: enable, upgrade or disable"),
        );
    };
    let values = if action == PlanAction::Disable {
        None
    } else if meta.yaml_mode {
        match form::yaml_values(&meta.yaml) {
            Ok(values) => Some(values),
            Err(message) => return Submitted::Again(Box::new(detail), ApiError::invalid(message)),
        }
    } else {
        let (items, _) = form::build(&detail.parameters, pairs, &[]);
        let (values, errors) = form::values(&items, pairs);
        if !errors.is_empty() {
            let mut error = ApiError::invalid("some values cannot be read; see each field");
            error.fields = errors;
            return Submitted::Again(Box::new(detail), error);
        }
        Some(values)
    };
    let request = PlanRequest {
        action,
        addon: detail.name.clone(),
        version: if action == PlanAction::Disable || (installed && meta.version.is_none()) {
            None
        } else {
            Some(detail.version.clone())
        },
        values: values.filter(|v| !v.is_empty()),
        clusters: if action == PlanAction::Disable {
            None
        } else {
            meta.clusters.clone()
        },
        adopt: meta.adopt && action != PlanAction::Disable,
        prune_dependencies: meta.prune && action == PlanAction::Disable,
        revision: None,
    };
    match plans::plan(app, caller, request).await {
        Ok(view) => Submitted::Planned(view.plan_id),
        Err(e) => Submitted::Again(Box::new(detail), e),
    }
}

/// The `Addon` resource that declares the same (secret values as `secretParameters`, read from
/// a Secret the user creates).
pub(super) fn addon_yaml(
    namespace: &str,
    addon: &str,
    version: Option<&str>,
    values: &Map<String, Value>,
    clusters: Option<&[String]>,
) -> String {
    let mut secrets = Vec::new();
    let parameters = unmasked(values, "", &mut secrets);
    let mut spec = Map::new();
    if let Some(version) = version {
        spec.insert("version".into(), json!(version));
    }
    if !parameters.is_empty() {
        spec.insert("parameters".into(), Value::Object(parameters));
    }
    if !secrets.is_empty() {
        spec.insert(
            "secretParameters".into(),
            Value::Array(
                secrets
                    .iter()
                    .map(|path| {
                        json!({"name": path, "secretRef": {"name": format!("{addon}-parameters"), "key": path}})
                    })
                    .collect(),
            ),
        );
    }
    if let Some(clusters) = clusters {
        spec.insert("clusters".into(), json!(clusters));
    }
    let resource = json!({
        "apiVersion": "addonctl.io/v1alpha1",
        "kind": "Addon",
        "metadata": {"name": addon, "namespace": namespace},
        "spec": spec,
    });
    form::yaml_text(&resource)
}

/// `values` without the masked secrets, whose paths go to `secrets`.
fn unmasked(
    values: &Map<String, Value>,
    prefix: &str,
    secrets: &mut Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in values {
        let path = crate::params::dotted(prefix, key);
        match value {
            Value::String(s) if s == crate::params::MASK => secrets.push(path),
            Value::Object(inner) => {
                out.insert(key.clone(), Value::Object(unmasked(inner, &path, secrets)));
            }
            other => {
                out.insert(key.clone(), other.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addon_yaml_moves_masked_secrets_to_secret_parameters() {
        let mut values = Map::new();
        values.insert("a".into(), json!(1));
        values.insert(
            "auth".into(),
            json!({"token": crate::params::MASK, "user": "u"}),
        );
        let text = addon_yaml("vela-system", "web", Some("1.0.0"), &values, None);
        let value: Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(
            value["spec"]["parameters"],
            json!({"a": 1, "auth": {"user": "u"}})
        );
        assert_eq!(value["spec"]["secretParameters"][0]["name"], "auth.token");
        assert!(!text.contains(crate::params::MASK));
    }
}
