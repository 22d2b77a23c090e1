//! The JSON API under `/api/v1`: the catalogue, one addon, its status, the registries. Plans
//! and their applies are in [`super::plans`], the event stream in [`super::events`]. Every
//! handler opens a session for its caller and calls the library's operations; a system addon
//! the caller may not see is answered as if it did not exist.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Session;
use crate::source::catalog::Catalog;

use super::error::{ApiError, ApiResult, Query};
use super::{App, Caller};

/// The API's routes.
pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/addons", get(list_addons))
        .route("/addons/{name}", get(addon_detail))
        .route("/addons/{name}/status", get(addon_status))
        .route(
            "/registries",
            get(list_registries).post(super::registries::add),
        )
        .route(
            "/registries/{name}",
            axum::routing::put(super::registries::update).delete(super::registries::remove),
        )
        .route("/registries/{name}/sync", post(super::registries::sync))
        .route("/addons/{name}/history", get(addon_history))
        .route("/addons/{name}/values", get(addon_values))
        .route("/addons/{name}/drift", get(addon_drift))
        .route("/plans", post(super::plans::create))
        .route("/plans/{id}", get(super::plans::get))
        .route("/plans/{id}/apply", post(super::plans::apply))
        .route("/events", get(super::events::stream))
        .route("/openapi.json", get(super::openapi::document))
        .fallback(|| async { ApiError::not_found("no such API path; see /api/v1/openapi.json") })
}

/// What the catalogue may be narrowed to.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AddonFilter {
    /// Words the name, description or tags contain (case-insensitive).
    pub search: Option<String>,
    /// Only addons with this tag.
    pub tag: Option<String>,
    /// Only this registry.
    pub registry: Option<String>,
    /// Only installed addons.
    #[serde(default)]
    pub installed: bool,
}

/// One addon of the catalogue.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddonItem {
    /// The addon.
    pub name: String,
    /// The registry it is listed from.
    pub registry: String,
    /// Its description.
    pub description: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Tagged `system` (only shown to those who may manage addons).
    pub system: bool,
    /// Versions available, newest first.
    pub versions: Vec<String>,
    /// Its phase here (`disabled` when not installed).
    pub phase: String,
    /// The installed version, when installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// A newer version than the installed one is available.
    pub update_available: bool,
}

/// The catalogue, and the registries that could not be listed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddonList {
    /// The addons, by name.
    pub addons: Vec<AddonItem>,
    /// Registries that failed, one line each.
    pub warnings: Vec<String>,
}

/// `GET /api/v1/addons`.
#[utoipa::path(
    get,
    path = "/api/v1/addons",
    tag = "addons",
    params(AddonFilter),
    responses(
        (status = 200, description = "The catalogue", body = AddonList),
        (status = 401, description = "No valid token", body = ApiError),
    )
)]
pub async fn list_addons(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Query(filter): Query<AddonFilter>,
) -> ApiResult<Json<AddonList>> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            catalogue(&job, &session, &filter).await
        })
        .await?
        .map(Json)
}

/// The catalogue as `session`'s caller may see it, narrowed by `filter`.
pub async fn catalogue(app: &App, session: &Session, filter: &AddonFilter) -> ApiResult<AddonList> {
    let ctx = session.ctx();
    let request = crate::ops::status::ListRequest {
        registry: filter.registry.clone(),
        installed_only: filter.installed,
    };
    // A caller who may read the registries but not what is installed sees the catalogue with
    // phase `unknown`, and why.
    let report = crate::ops::status::list(session, &request).await?;
    let rows = report.addons;
    let mut warnings = report.warnings;
    warnings.extend(report.unknown_phases);
    let tags = tags_by_addon(&ctx.catalog).await;
    let sees_system = app.visibility.may_see_system(session).await;
    let search = filter.search.as_deref().map(str::to_lowercase);
    let addons = rows
        .into_iter()
        .filter_map(|row| {
            let tags = tags
                .iter()
                .find(|(registry, name, _)| *registry == row.registry && *name == row.name)
                .map(|(_, _, tags)| tags.clone())
                .unwrap_or_default();
            let system = tags.iter().any(|t| t == "system");
            if system && !sees_system {
                return None;
            }
            if let Some(tag) = &filter.tag {
                if !tags.iter().any(|t| t == tag) {
                    return None;
                }
            }
            if let Some(words) = &search {
                let text =
                    format!("{} {} {}", row.name, row.description, tags.join(" ")).to_lowercase();
                if !words.split_whitespace().all(|w| text.contains(w)) {
                    return None;
                }
            }
            let update_available = match (&row.installed_version, row.available_versions.first()) {
                (Some(installed), Some(newest)) => newer(newest, installed),
                _ => false,
            };
            Some(AddonItem {
                phase: row.phase.to_string(),
                name: row.name,
                registry: row.registry,
                description: row.description,
                tags,
                system,
                versions: row.available_versions,
                installed_version: row.installed_version,
                update_available,
            })
        })
        .collect();
    Ok(AddonList { addons, warnings })
}

/// Whether `candidate` is a higher semantic version than `installed` (unparsable: no).
fn newer(candidate: &str, installed: &str) -> bool {
    let parse = |v: &str| semver::Version::parse(v.trim_start_matches('v')).ok();
    match (parse(candidate), parse(installed)) {
        (Some(candidate), Some(installed)) => candidate > installed,
        _ => false,
    }
}

/// `(registry, addon, tags)` of every listed addon.
async fn tags_by_addon(catalog: &Catalog) -> Vec<(String, String, Vec<String>)> {
    catalog
        .list()
        .await
        .into_iter()
        .filter_map(|listing| {
            let registry = listing.registry;
            listing.addons.ok().map(|addons| {
                addons
                    .into_iter()
                    .map(|a| (registry.clone(), a.name, a.tags))
                    .collect::<Vec<_>>()
            })
        })
        .flatten()
        .collect()
}

/// Whether `reference` can name an addon of a registry: `name` or `registry/name`, each a valid
/// name. Anything else — a path on the server's disk, characters a URL cannot carry — names no
/// addon, and is refused before the library or the API server sees it.
pub fn is_reference(reference: &str) -> bool {
    match reference.split_once('/') {
        Some((registry, name)) => {
            crate::model::registry::check_name(registry).is_ok()
                && crate::model::metadata::is_valid_name(name)
        }
        None => crate::model::metadata::is_valid_name(reference),
    }
}

/// Whether any registry lists `addon` tagged `system`.
pub async fn is_system(catalog: &Catalog, addon: &str) -> bool {
    tags_by_addon(catalog)
        .await
        .iter()
        .any(|(_, name, tags)| name == addon && tags.iter().any(|t| t == "system"))
}

/// `?version=`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VersionQuery {
    /// A version (default: the newest).
    pub version: Option<String>,
}

/// One version of an addon and what it needs of the platform.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// The version.
    pub version: String,
}

/// A dependency of an addon.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyInfo {
    /// The addon needed.
    pub name: String,
    /// The versions accepted, when constrained.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Whether the caller may see it (a system addon they may not see is named, not linked).
    pub visible: bool,
}

/// One addon, one version.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddonDetail {
    /// The addon.
    pub name: String,
    /// The version shown.
    pub version: String,
    /// The registry it is read from.
    pub registry: String,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its home page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// Tagged `system`.
    pub system: bool,
    /// Every version the registry has, newest first.
    pub versions: Vec<String>,
    /// What it needs of the platform: `vela`, `kubernetes`, `addonctl` version constraints.
    #[schema(value_type = Object)]
    pub requirements: Value,
    /// Its README, as sanitised HTML.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readme_html: Option<String>,
    /// Its NOTES template, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes_template: Option<String>,
    /// The JSON Schema of its parameters (`x-secret: true` on `secret()` fields).
    #[schema(value_type = Object)]
    pub parameters: Value,
    /// The definition files it provides.
    pub definitions: Vec<String>,
    /// The addons it needs.
    pub dependencies: Vec<DependencyInfo>,
    /// Its phase here.
    pub phase: String,
    /// The installed version, when installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
}

/// `GET /api/v1/addons/{name}`.
#[utoipa::path(
    get,
    path = "/api/v1/addons/{name}",
    tag = "addons",
    params(("name" = String, Path, description = "The addon (or `registry/addon`)"), VersionQuery),
    responses(
        (status = 200, description = "The addon", body = AddonDetail),
        (status = 404, description = "No such addon (or not visible to the caller)", body = ApiError),
    )
)]
pub async fn addon_detail(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(query): Query<VersionQuery>,
) -> ApiResult<Json<AddonDetail>> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            detail(&job, &session, &name, query.version.as_deref()).await
        })
        .await?
        .map(Json)
}

/// The addon `name` at `version` (default the newest), as `session`'s caller may see it.
pub async fn detail(
    app: &App,
    session: &Session,
    name: &str,
    version: Option<&str>,
) -> ApiResult<AddonDetail> {
    let ctx = session.ctx();
    let hidden = || ApiError::not_found(format!("addon `{name}` is in no registry"));
    if !is_reference(name) {
        return Err(hidden());
    }
    let found = ctx
        .catalog
        .find(name, version, None, None)
        .await
        .map_err(|e| ApiError::from(crate::Error::from(e)))?;
    let package = crate::loader::load(found.reader.as_ref(), &found.addon)
        .await
        .map_err(|e| ApiError::from(crate::Error::from(e)))?;
    let meta = &package.metadata;
    let sees_system = app.visibility.may_see_system(session).await;
    if meta.is_system() && !sees_system {
        return Err(hidden());
    }
    let versions = ctx
        .catalog
        .list_only(Some(found.reader.registry()))
        .await
        .into_iter()
        .filter_map(|listing| listing.addons.ok())
        .flatten()
        .find(|a| a.name == meta.name)
        .map_or_else(|| vec![meta.version.raw().to_owned()], |a| a.versions);
    let parameters = ctx
        .renderer
        .parameter_schema(&package)
        .map_err(|e| ApiError::from(crate::Error::from(e)))?
        .schema()
        .clone();
    let mut dependencies = Vec::new();
    for dependency in &meta.dependencies {
        let visible = sees_system || !is_system(&ctx.catalog, &dependency.name).await;
        dependencies.push(DependencyInfo {
            name: dependency.name.clone(),
            version: dependency.version.clone(),
            visible,
        });
    }
    let status = crate::status::status(ctx.state(), &meta.name, None)
        .await
        .ok();
    Ok(AddonDetail {
        name: meta.name.clone(),
        version: meta.version.raw().to_owned(),
        registry: package.registry.clone(),
        description: meta.description.clone(),
        url: meta.url.clone(),
        tags: meta.tags.clone(),
        system: meta.is_system(),
        versions,
        requirements: serde_json::to_value(&meta.system).unwrap_or(Value::Null),
        readme_html: package.readme.as_deref().map(super::markdown::render),
        notes_template: package.notes.as_ref().map(|n| n.text.to_string()),
        parameters,
        definitions: package.definitions.iter().map(|d| d.path.clone()).collect(),
        dependencies,
        phase: status
            .as_ref()
            .map_or_else(|| "unknown".to_owned(), |s| s.phase.to_string()),
        installed_version: status.and_then(|s| s.installed_version),
    })
}

/// `GET /api/v1/addons/{name}/status`.
#[utoipa::path(
    get,
    path = "/api/v1/addons/{name}/status",
    tag = "addons",
    params(("name" = String, Path, description = "The addon")),
    responses(
        (status = 200, description = "Its phase, version, workloads and every object per cluster", body = Object),
        (status = 404, description = "No such addon (or not visible to the caller)", body = ApiError),
    )
)]
pub async fn addon_status(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<crate::status::Status>> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            status_of(&job, &session, &name).await
        })
        .await?
        .map(Json)
}

/// The status of `name`, with every object, as `session`'s caller may see it.
pub async fn status_of(
    app: &App,
    session: &Session,
    name: &str,
) -> ApiResult<crate::status::Status> {
    let ctx = session.ctx();
    if !is_reference(name)
        || is_system(&ctx.catalog, name).await && !app.visibility.may_see_system(session).await
    {
        return Err(ApiError::not_found(format!(
            "addon `{name}` is not installed"
        )));
    }
    let detail = crate::status::Detail::of(ctx);
    Ok(crate::status::status(ctx.state(), name, Some(detail)).await?)
}

/// One registry, without credentials (they are never answered).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryItem {
    /// Its name.
    pub name: String,
    /// Its kind and where it is, as stored (credentials are kept in a Secret, never here).
    #[schema(value_type = Object)]
    pub spec: Value,
    /// The addons it lists, when it could be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addon_count: Option<usize>,
    /// Why it could not be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its last sync by this server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<super::registries::SyncInfo>,
}

/// `GET /api/v1/registries`.
#[utoipa::path(
    get,
    path = "/api/v1/registries",
    tag = "registries",
    responses((status = 200, description = "Every registry searched, in order", body = [RegistryItem]))
)]
pub async fn list_registries(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Json<Vec<RegistryItem>>> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            registries(&job, &session).await
        })
        .await
        .map(Json)
}

/// Every registry searched, without credentials.
pub async fn registries(app: &App, session: &Session) -> Vec<RegistryItem> {
    let ctx = session.ctx();
    let store = crate::registry::Store::Cluster {
        cluster: Box::new(ctx.cluster.clone()),
        namespace: ctx.namespace.clone(),
    };
    let stored = match crate::ops::registry::list(&store).await {
        Ok(stored) => stored,
        Err(e) => {
            tracing::warn!("the stored registries cannot be read: {e}");
            Vec::new()
        }
    };
    let mut items = Vec::new();
    for listing in ctx.catalog.list().await {
        let spec = stored
            .iter()
            .find(|s| s.name == listing.registry)
            .map_or(Value::Null, |s| {
                serde_json::to_value(s).unwrap_or(Value::Null)
            });
        let (addon_count, error) = match &listing.addons {
            Ok(addons) => (Some(addons.len()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        items.push(RegistryItem {
            last_sync: app.syncs.of(&listing.registry),
            name: listing.registry,
            spec,
            addon_count,
            error,
        });
    }
    items
}

/// `GET /api/v1/addons/{name}/history`.
#[utoipa::path(
    get,
    path = "/api/v1/addons/{name}/history",
    tag = "addons",
    params(("name" = String, Path, description = "The installed addon")),
    responses(
        (status = 200, description = "Its revisions, oldest first (secret values are references, never values)", body = Object),
        (status = 404, description = "Not installed (or not visible to the caller)", body = ApiError),
    )
)]
pub async fn addon_history(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<crate::ops::status::History>> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            hidden_unless_visible(&job, &session, &name).await?;
            let request = crate::ops::status::HistoryRequest { addon: name };
            Ok(Json(crate::ops::status::history(&session, &request).await?))
        })
        .await?
}

/// `GET /api/v1/addons/{name}/values`.
#[utoipa::path(
    get,
    path = "/api/v1/addons/{name}/values",
    tag = "addons",
    params(("name" = String, Path, description = "The installed addon")),
    responses(
        (status = 200, description = "Its stored values, `secret()` values masked", body = Object),
        (status = 404, description = "Not installed (or not visible to the caller)", body = ApiError),
    )
)]
pub async fn addon_values(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            hidden_unless_visible(&job, &session, &name).await?;
            let request = crate::ops::status::ValuesRequest {
                addon: name,
                show_secrets: false,
            };
            let values = crate::ops::status::values(&session, &request).await?;
            serde_json::to_value(&values).map(Json).map_err(|e| {
                ApiError::of_kind(
                    crate::ErrorKind::Internal,
                    format!("cannot encode values: {e}"),
                )
            })
        })
        .await?
}

/// `GET /api/v1/addons/{name}/drift`.
#[utoipa::path(
    get,
    path = "/api/v1/addons/{name}/drift",
    tag = "addons",
    params(("name" = String, Path, description = "The installed addon")),
    responses(
        (status = 200, description = "Its objects on every cluster compared with what it applied (reads only; nothing is corrected): each drifted object, the clusters that could not be checked and why", body = Object),
        (status = 404, description = "Not installed (or not visible to the caller)", body = ApiError),
    )
)]
pub async fn addon_drift(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<crate::drift::Report>> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            Ok(Json(drift_of(&job, &session, &name).await?))
        })
        .await?
}

/// The drift of the installed addon `name`, when the caller may see it.
pub async fn drift_of(app: &App, session: &Session, name: &str) -> ApiResult<crate::drift::Report> {
    hidden_unless_visible(app, session, name).await?;
    let request = crate::ops::status::DriftRequest {
        addon: name.to_owned(),
    };
    crate::ops::status::drift(session, &request)
        .await
        .map_err(|e| match e {
            crate::drift::Error::Library(e) => ApiError::from(*e),
            other => ApiError::of_kind(other.kind(), other.to_string()),
        })
}

/// A system addon the caller may not see is not found.
pub async fn hidden_unless_visible(app: &App, session: &Session, name: &str) -> ApiResult<()> {
    if !is_reference(name)
        || is_system(&session.ctx().catalog, name).await
            && !app.visibility.may_see_system(session).await
    {
        return Err(ApiError::not_found(format!(
            "addon `{name}` is not installed"
        )));
    }
    Ok(())
}
