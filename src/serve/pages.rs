//! The web pages: server-rendered HTML (askama templates in `templates/`, escaped by default),
//! readable and usable without JavaScript — forms post to the server, which answers a redirect
//! or the form again with each field's error; `static/app.js` only enhances them (live status
//! from the event stream, the plan's apply progress, copy buttons).
//!
//! Every page calls the functions the JSON API calls ([`super::api`], [`super::plans`]) on the
//! server's workers, as the API handlers do: a page shows what the API answers, nothing more
//! (a system addon the caller may not see is absent here too).
//!
//! - `GET /`: the catalogue (search, tag, registry, installed only);
//! - `GET /addons/{name}`: one addon (`?version=`), its README, NOTES, dependencies,
//!   definitions, and the form of its parameters; `POST` plans what the form asks and
//!   redirects to the plan (or answers the form again, 400, with each field's error);
//! - `GET /plans/{id}`: the plan, its Apply button, its state; `POST /plans/{id}/apply`
//!   starts the apply and redirects back (409: what the plan showed has changed);
//! - `GET /status`: installed addons × clusters; `GET /registries`: the registries;
//! - `GET /static/{file}`: the style sheet and the script.

mod form;
mod plan;

use std::collections::BTreeSet;
use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::api::{self, AddonDetail, AddonFilter, AddonItem, RegistryItem};
use super::error::{ApiError, FieldError};
use super::plans::{self, PlanAction, PlanRequest, PlanState, PlanView};
use super::{App, Caller};

use form::{Control, Item};

/// The pages' routes.
pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/", get(catalogue_page))
        .route("/addons/{name}", get(addon_page).post(addon_submit))
        .route("/plans/{id}", get(plan_page))
        .route("/plans/{id}/apply", post(apply_submit))
        .route("/status", get(status_page))
        .route("/registries", get(registries_page))
        .route("/static/{file}", get(static_file))
}

const APP_CSS: &str = include_str!("static/app.css");
const APP_JS: &str = include_str!("static/app.js");

/// `GET /static/{file}`: the style sheet and the script, compiled into the binary.
async fn static_file(Path(file): Path<String>) -> Response {
    let (body, content_type) = match file.as_str() {
        "app.css" => (APP_CSS, "text/css; charset=utf-8"),
        "app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        _ => return error_page(&ApiError::not_found(format!("no static file `{file}`"))),
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=300"),
            ),
        ],
        body,
    )
        .into_response()
}

/// A rendered template, or a plain error when it cannot be rendered.
fn html(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(text) => (status, Html(text)).into_response(),
        Err(e) => {
            tracing::error!("a page cannot be rendered: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "this page cannot be rendered",
            )
                .into_response()
        }
    }
}

#[derive(Template)]
#[template(path = "refusal.html", config = "src/serve/askama.toml")]
struct Refusal<'a> {
    status: u16,
    message: &'a str,
}

/// The page of a refused request.
pub fn refusal(status: StatusCode, message: &str) -> Response {
    let page = Refusal {
        status: status.as_u16(),
        message,
    };
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(_) => message.to_owned().into_response(),
    }
}

#[derive(Template)]
#[template(path = "error.html", config = "src/serve/askama.toml")]
struct ErrorPage<'a> {
    nav: &'a str,
    status: u16,
    reason: &'a str,
    message: &'a str,
}

/// The page of an error of the library or the API.
fn error_page(error: &ApiError) -> Response {
    let status = error.status();
    html(
        status,
        &ErrorPage {
            nav: "",
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("Error"),
            message: &error.message,
        },
    )
}

/// A query parameter as given, `None` when empty.
fn given(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

// ---------------------------------------------------------------------------------------------
// The catalogue.

#[derive(Debug, Default, Deserialize)]
struct CatalogueQuery {
    search: Option<String>,
    tag: Option<String>,
    registry: Option<String>,
    installed: Option<String>,
}

/// A choice of a filter select.
struct Choice {
    value: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "catalogue.html", config = "src/serve/askama.toml")]
struct CataloguePage {
    nav: &'static str,
    search: String,
    tags: Vec<Choice>,
    registries: Vec<Choice>,
    installed: bool,
    filtered: bool,
    addons: Vec<AddonItem>,
    total: usize,
    warnings: Vec<String>,
}

async fn catalogue_page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<CatalogueQuery>,
) -> Response {
    let filter = AddonFilter {
        search: given(query.search),
        tag: given(query.tag),
        registry: given(query.registry),
        installed: given(query.installed).is_some(),
    };
    let filtered = filter.search.is_some()
        || filter.tag.is_some()
        || filter.registry.is_some()
        || filter.installed;
    let job = Arc::clone(&app);
    let lists = app
        .workers
        .run(move || async move {
            let session = job.session(&caller, None);
            let all = api::catalogue(&job, &session, &AddonFilter::default()).await?;
            let shown = if filtered {
                Some(api::catalogue(&job, &session, &filter).await?)
            } else {
                None
            };
            Ok::<_, ApiError>((all, shown, filter))
        })
        .await
        .and_then(|r| r);
    let (all, shown, filter) = match lists {
        Ok(lists) => lists,
        Err(e) => return error_page(&e),
    };
    let tags: BTreeSet<&str> = all
        .addons
        .iter()
        .flat_map(|a| a.tags.iter().map(String::as_str))
        .collect();
    let registries: BTreeSet<&str> = all.addons.iter().map(|a| a.registry.as_str()).collect();
    let choices = |values: BTreeSet<&str>, chosen: &Option<String>| -> Vec<Choice> {
        values
            .into_iter()
            .map(|v| Choice {
                selected: chosen.as_deref() == Some(v),
                value: v.to_owned(),
            })
            .collect()
    };
    let page = CataloguePage {
        nav: "catalogue",
        tags: choices(tags, &filter.tag),
        registries: choices(registries, &filter.registry),
        search: filter.search.clone().unwrap_or_default(),
        installed: filter.installed,
        filtered,
        total: all.addons.len(),
        warnings: all.warnings.clone(),
        addons: match shown {
            Some(shown) => shown.addons,
            None => all.addons,
        },
    };
    html(StatusCode::OK, &page)
}

// ---------------------------------------------------------------------------------------------
// One addon and its form.

#[derive(Debug, Default, Deserialize)]
struct AddonQuery {
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
            detail,
        }
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

async fn addon_page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(query): Query<AddonQuery>,
) -> Response {
    let job = Arc::clone(&app);
    let version = given(query.version);
    let detail = app
        .workers
        .run(move || async move {
            let session = job.session(&caller, None);
            api::detail(&job, &session, &name, version.as_deref()).await
        })
        .await
        .and_then(|r| r);
    match detail {
        Ok(detail) => html(
            StatusCode::OK,
            &AddonPage::new(detail, app.runtime().namespace.clone()),
        ),
        Err(e) => error_page(&e),
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

async fn addon_submit(
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
        .run(move || async move { submit(&job, &caller, &name, &job_meta, &job_pairs).await })
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
async fn submit(
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
fn addon_yaml(
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

// ---------------------------------------------------------------------------------------------
// A plan and its apply.

#[derive(Template)]
#[template(path = "plan.html", config = "src/serve/askama.toml")]
struct PlanPage {
    nav: &'static str,
    view: PlanView,
    addon: String,
    action: &'static str,
    state: &'static str,
    preview: Option<Box<plan::Preview>>,
    removals: Vec<plan::Removal>,
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
            match plan::read(&view.plan, view.request.action == PlanAction::Disable) {
                plan::Shown::Preview(p) => (Some(p), Vec::new()),
                plan::Shown::Removal(r) => (None, r),
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

async fn plan_page(
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

async fn apply_submit(
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

// ---------------------------------------------------------------------------------------------
// Status and registries.

/// One cluster's cell of the status matrix.
struct Cell {
    version: String,
    workloads: String,
    objects: String,
    error: Option<String>,
}

/// One installed addon's row.
struct Row {
    name: String,
    phase: String,
    version: String,
    ready: String,
    reason: Option<String>,
    cells: Vec<Option<Cell>>,
}

#[derive(Template)]
#[template(path = "status.html", config = "src/serve/askama.toml")]
struct StatusPage {
    nav: &'static str,
    clusters: Vec<String>,
    rows: Vec<Row>,
    errors: Vec<String>,
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
    }
}

async fn status_page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let job = Arc::clone(&app);
    let read = app
        .workers
        .run(move || async move {
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
            let rows = statuses
                .iter()
                .map(|status| {
                    let mut row = row_of(status);
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
        .and_then(|r| r);
    match read {
        Ok(page) => html(StatusCode::OK, &page),
        Err(e) => error_page(&e),
    }
}

#[derive(Template)]
#[template(path = "registries.html", config = "src/serve/askama.toml")]
struct RegistriesPage {
    nav: &'static str,
    registries: Vec<(RegistryItem, Vec<(String, String)>)>,
}

/// What a stored registry's spec shows: its scalar fields (one level of nesting flattened),
/// never anything that looks like a credential.
fn spec_fields(spec: &Value) -> Vec<(String, String)> {
    fn credential(key: &str) -> bool {
        let key = key.to_lowercase();
        ["secret", "password", "token", "credential", "key", "auth"]
            .iter()
            .any(|w| key.contains(w))
    }
    let mut fields = Vec::new();
    let Some(map) = spec.as_object() else {
        return fields;
    };
    for (key, value) in map {
        if key == "name" || credential(key) {
            continue;
        }
        match value {
            Value::Object(inner) => {
                for (k, v) in inner {
                    if !credential(k) && !v.is_object() && !v.is_array() && !v.is_null() {
                        fields.push((format!("{key}.{k}"), form::display(v)));
                    }
                }
            }
            Value::Null | Value::Array(_) => {}
            other => fields.push((key.clone(), form::display(other))),
        }
    }
    fields
}

async fn registries_page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let job = Arc::clone(&app);
    let read = app
        .workers
        .run(move || async move {
            let session = job.session(&caller, None);
            api::registries(&job, &session).await
        })
        .await;
    match read {
        Ok(items) => html(
            StatusCode::OK,
            &RegistriesPage {
                nav: "registries",
                registries: items
                    .into_iter()
                    .map(|item| {
                        let fields = spec_fields(&item.spec);
                        (item, fields)
                    })
                    .collect(),
            },
        ),
        Err(e) => error_page(&e),
    }
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

    #[test]
    fn registry_fields_never_show_credentials() {
        let fields = spec_fields(&json!({"name": "r", "type": "helm",
            "helm": {"url": "https://x", "passwordSecret": "p", "token": "t"}, "accessKey": "k"}));
        assert_eq!(
            fields,
            [
                ("type".to_owned(), "helm".to_owned()),
                ("helm.url".to_owned(), "https://x".to_owned())
            ]
        );
    }
}
