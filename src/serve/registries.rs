//! The registries' endpoints: add (or with `?validate=true` only check), update, remove and
//! sync. Credentials are write-only: taken from the request (or moved out of a URL written with
//! them) into the registry's Secret by the library's store, never answered, logged or sent as
//! an event. Writes go through the same operations as `addonctl registry` (permissions checked
//! first, the registry's lock held); afterwards every request reads the new catalogue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use crate::context::Session;
use crate::model::registry::{Credentials, Registry, RegistrySpec, RegistryType};
use crate::ops::registry::Writing;

use super::error::{ApiError, ApiResult};
use super::events::Event;
use super::{App, Caller};

/// A registry as a request gives it.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistryInput {
    /// Its name (lowercase letters, digits and `-`); on update, the path's name.
    #[serde(default)]
    pub name: String,
    /// `helm`, `oci`, `github`, `gitee`, `gitlab`, `s3`, `oss`, `git` or `local`.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: RegistryType,
    /// Where it is (credentials written in it are moved to its Secret).
    pub endpoint: String,
    /// The directory of the addons in the repository or bucket.
    #[serde(default)]
    pub path: Option<String>,
    /// A branch or tag (git, GitHub, Gitee, GitLab).
    #[serde(default, rename = "ref")]
    pub reference: Option<String>,
    /// The bucket (S3, OSS).
    #[serde(default)]
    pub bucket: Option<String>,
    /// Search order: higher first.
    #[serde(default)]
    pub priority: i32,
    /// Extra trusted CA certificates (PEM).
    #[serde(default)]
    pub ca_bundle: Option<String>,
    /// A token (write-only).
    #[serde(default)]
    pub token: Option<String>,
    /// A user name (the access key id for S3 and OSS).
    #[serde(default)]
    pub username: Option<String>,
    /// A password (write-only; the secret access key for S3 and OSS).
    #[serde(default)]
    pub password: Option<String>,
}

impl RegistryInput {
    fn into_registry(self) -> Registry {
        let credentials = Credentials {
            token: self.token.filter(|t| !t.is_empty()).map(SecretString::from),
            username: self.username.filter(|u| !u.is_empty()),
            password: self
                .password
                .filter(|p| !p.is_empty())
                .map(SecretString::from),
            ssh_passphrase: None,
            docker_config: None,
            policy_keys: crate::source::oci::SecretKeys::new(),
        };
        Registry {
            spec: RegistrySpec {
                name: self.name,
                kind: self.kind,
                endpoint: self.endpoint,
                path: self.path.filter(|p| !p.is_empty()),
                reference: self.reference.filter(|r| !r.is_empty()),
                bucket: self.bucket.filter(|b| !b.is_empty()),
                priority: self.priority,
                ca_bundle: self.ca_bundle.filter(|c| !c.is_empty()),
                ..RegistrySpec::default()
            },
            credentials,
        }
    }
}

/// `?validate=true`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ValidateQuery {
    /// Only check the registry (reachable, lists, credentials accepted); store nothing.
    #[serde(default)]
    pub validate: bool,
}

/// What a registry write answers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryWritten {
    /// The registry as stored (or as it would be), without credentials.
    #[schema(value_type = Object)]
    pub spec: RegistrySpec,
    /// Its addons, when it was listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addon_count: Option<usize>,
    /// The credential keys it keeps (`token`, `username`, `password`), never their values.
    pub credentials: Vec<String>,
    /// Whether it was stored (`false` for `?validate=true`).
    pub stored: bool,
}

/// The last sync of each registry.
#[derive(Debug, Default)]
pub struct Syncs {
    last: Mutex<HashMap<String, SyncInfo>>,
}

/// One registry's last sync.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncInfo {
    /// When (RFC 3339, UTC).
    pub at: String,
    /// Its addons then, when it listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addon_count: Option<usize>,
    /// Why it did not list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Syncs {
    /// The last sync of `registry`, when there was one.
    pub fn of(&self, registry: &str) -> Option<SyncInfo> {
        self.last.lock().ok()?.get(registry).cloned()
    }

    fn set(&self, registry: &str, info: SyncInfo) {
        if let Ok(mut last) = self.last.lock() {
            last.insert(registry.to_owned(), info);
        }
    }
}

fn store_of(session: &Session) -> crate::registry::Store {
    let ctx = session.ctx();
    crate::registry::Store::Cluster {
        cluster: Box::new(ctx.cluster.clone()),
        namespace: ctx.namespace.clone(),
    }
}

/// Reads the stored registries again and makes every later request use them.
async fn reload(app: &App, session: &Session) -> ApiResult<()> {
    let stored = store_of(session).load().await?;
    let (catalog, failures) = app
        .runtime()
        .catalog
        .reopened_with(&stored)
        .map_err(crate::Error::from)?;
    for failure in failures {
        tracing::warn!("{failure}");
    }
    app.replace_catalog(catalog);
    Ok(())
}

/// `POST /api/v1/registries`.
#[utoipa::path(
    post,
    path = "/api/v1/registries",
    tag = "registries",
    params(ValidateQuery),
    request_body = RegistryInput,
    responses(
        (status = 201, description = "Stored (after listing it)", body = RegistryWritten),
        (status = 200, description = "`?validate=true`: it works; nothing stored", body = RegistryWritten),
        (status = 400, description = "Not valid, or it does not list", body = ApiError),
        (status = 403, description = "The caller may not write the registries", body = ApiError),
        (status = 409, description = "A registry of that name exists", body = ApiError),
    )
)]
pub async fn add(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<ValidateQuery>,
    body: Result<Json<RegistryInput>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<(StatusCode, Json<RegistryWritten>)> {
    let Json(input) = body.map_err(ApiError::from)?;
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            let (status, written) = add_one(&job, &session, input, query.validate).await?;
            Ok((status, Json(written)))
        })
        .await?
}

/// Adds the registry `input` (after listing it), or only lists it (`validate`): the API's
/// `POST /api/v1/registries` and the registries page's form.
pub async fn add_one(
    app: &App,
    session: &Session,
    input: RegistryInput,
    validate: bool,
) -> ApiResult<(StatusCode, RegistryWritten)> {
    let mut registry = input.into_registry();
    let store = store_of(session);
    if validate {
        let count = crate::ops::registry::check(&store, &mut registry).await?;
        return Ok((StatusCode::OK, written(registry, Some(count), false)));
    }
    let credentials = registry.credentials.keys();
    let mut added =
        crate::ops::registry::add(&store, vec![registry], true, Writing::default()).await?;
    let Some(added) = added.pop() else {
        return Err(ApiError::of_kind(
            crate::ErrorKind::Internal,
            "the registry store answered nothing for the registry added",
        ));
    };
    reload(app, session).await?;
    app.events.send(
        Event::Registry {
            registry: added.spec.name.clone(),
            change: "added".to_owned(),
        },
        false,
    );
    Ok((
        StatusCode::CREATED,
        RegistryWritten {
            spec: added.spec,
            addon_count: added.addons,
            credentials: credentials.iter().map(|k| (*k).to_owned()).collect(),
            stored: true,
        },
    ))
}

fn written(registry: Registry, addon_count: Option<usize>, stored: bool) -> RegistryWritten {
    RegistryWritten {
        credentials: registry
            .credentials
            .keys()
            .iter()
            .map(|k| (*k).to_owned())
            .collect(),
        spec: registry.spec,
        addon_count,
        stored,
    }
}

/// `PUT /api/v1/registries/{name}`.
#[utoipa::path(
    put,
    path = "/api/v1/registries/{name}",
    tag = "registries",
    params(("name" = String, Path, description = "The registry")),
    request_body = RegistryInput,
    responses(
        (status = 204, description = "Updated (credentials replaced only when given)"),
        (status = 400, description = "Not valid, or it does not list", body = ApiError),
        (status = 404, description = "No such registry", body = ApiError),
    )
)]
pub async fn update(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    body: Result<Json<RegistryInput>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<StatusCode> {
    let Json(mut input) = body.map_err(ApiError::from)?;
    if !input.name.is_empty() && input.name != name {
        return Err(ApiError::invalid(format!(
            "the body names registry `{}` and the path `{name}`: a registry cannot be renamed (add one, then remove the other)",
            input.name
        )));
    }
    input.name.clone_from(&name);
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            let registry = input.into_registry();
            let credentials =
                (!registry.credentials.is_empty()).then(|| registry.credentials.clone());
            let spec = registry.spec;
            let change = move |stored: &mut RegistrySpec| -> Result<(), std::convert::Infallible> {
                let order = stored.order;
                let secret_ref = stored.secret_ref.take();
                let options = std::mem::take(&mut stored.options);
                *stored = RegistrySpec {
                    order,
                    secret_ref,
                    options,
                    ..spec
                };
                Ok(())
            };
            crate::ops::registry::update(
                &store_of(&session),
                &name,
                change,
                credentials,
                true,
                Writing::default(),
            )
            .await
            .map_err(|e| match e {
                crate::ops::registry::UpdateError::Library(e) => ApiError::from(e),
                crate::ops::registry::UpdateError::Change(never) => match never {},
            })?;
            reload(&job, &session).await?;
            job.events.send(
                Event::Registry {
                    registry: name,
                    change: "updated".to_owned(),
                },
                false,
            );
            Ok(StatusCode::NO_CONTENT)
        })
        .await?
}

/// `DELETE /api/v1/registries/{name}`.
#[utoipa::path(
    delete,
    path = "/api/v1/registries/{name}",
    tag = "registries",
    params(("name" = String, Path, description = "The registry")),
    responses(
        (status = 204, description = "Removed (its Secret too)"),
        (status = 404, description = "No such registry", body = ApiError),
    )
)]
pub async fn remove(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            remove_one(&job, &session, &name).await?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await?
}

/// Removes the stored registry `name` (and its Secret): the API's `DELETE` and the registries
/// page's form.
pub async fn remove_one(app: &App, session: &Session, name: &str) -> ApiResult<()> {
    crate::ops::registry::remove(&store_of(session), name, Writing::default()).await?;
    reload(app, session).await?;
    app.events.send(
        Event::Registry {
            registry: name.to_owned(),
            change: "removed".to_owned(),
        },
        false,
    );
    Ok(())
}

/// `POST /api/v1/registries/{name}/sync`.
#[utoipa::path(
    post,
    path = "/api/v1/registries/{name}/sync",
    tag = "registries",
    params(("name" = String, Path, description = "The registry")),
    responses(
        (status = 200, description = "Listed again now", body = SyncInfo),
        (status = 404, description = "No such registry", body = ApiError),
    )
)]
pub async fn sync(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<SyncInfo>> {
    let job = Arc::clone(&app);
    app.workers
        .run(move || async move {
            let session = job.session(&caller, None);
            sync_now(&job, &session, Some(&name))
                .await?
                .into_iter()
                .next()
                .map(|(_, info)| Json(info))
                .ok_or_else(|| ApiError::not_found(format!("registry `{name}` is not searched")))
        })
        .await?
}

/// Lists the registries again (`only`: one of them), makes every later request read the new
/// listings, and records each sync.
pub async fn sync_now(
    app: &App,
    session: &Session,
    only: Option<&str>,
) -> ApiResult<Vec<(String, SyncInfo)>> {
    reload(app, session).await?;
    let catalog = app.runtime().catalog.clone();
    let mut synced = Vec::new();
    for listing in catalog.list_only(only).await {
        let info = SyncInfo {
            at: crate::source::http::rfc3339(std::time::SystemTime::now()),
            addon_count: listing.addons.as_ref().ok().map(Vec::len),
            error: listing.addons.as_ref().err().map(ToString::to_string),
        };
        app.syncs.set(&listing.registry, info.clone());
        app.events.send(
            Event::Registry {
                registry: listing.registry.clone(),
                change: "synced".to_owned(),
            },
            false,
        );
        synced.push((listing.registry, info));
    }
    Ok(synced)
}
