//! Plan, then apply that plan. `POST /api/v1/plans` answers what an enable, upgrade or disable
//! would do — the [`Preview`] every front end gets from a server-side dry run (per cluster
//! every object created, changed, deleted or kept, with diffs; the values' change;
//! dependencies; flags), or for a disable the dry run's report — with a `planId`. The plan is
//! kept with a fingerprint of what it showed. `POST /api/v1/plans/{planId}/apply` makes the
//! plan again: when anything it showed has changed (an object edited, deleted or created, an
//! addon installed or upgraded by someone else, a registry's new version) it answers 409 and
//! writes nothing; else it applies, in the background, progress on the event stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::context::{Identity, Session};
use crate::ops::PreviewMode;
use crate::ErrorKind;

use super::error::{ApiError, ApiResult};
use super::events::{Event, PlanReporter};
use super::{App, Caller};

/// How long a plan may wait for its apply.
pub const PLAN_TTL: Duration = Duration::from_secs(30 * 60);

/// At most this many plans are kept (the oldest go first).
pub const MAX_PLANS: usize = 256;

/// What a plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlanAction {
    /// Install the addon and what it needs.
    Enable,
    /// Change an installed addon's version or values.
    Upgrade,
    /// Remove an installed addon.
    Disable,
    /// Go back to one of an installed addon's revisions.
    Rollback,
}

/// `POST /api/v1/plans`.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanRequest {
    /// What to do.
    pub action: PlanAction,
    /// The addon (`name` or `registry/name`).
    pub addon: String,
    /// The version (enable, upgrade; default: the newest for enable, the installed for upgrade).
    #[serde(default)]
    pub version: Option<String>,
    /// Parameter values, as a values file would give them (enable, upgrade).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub values: Option<Map<String, Value>>,
    /// The clusters (enable, upgrade; default: where the addon's topology says).
    #[serde(default)]
    pub clusters: Option<Vec<String>>,
    /// Take over objects that exist and that addonctl did not create (the plan flags them).
    #[serde(default)]
    pub adopt: bool,
    /// Also disable the dependencies nothing else needs (disable).
    #[serde(default)]
    pub prune_dependencies: bool,
    /// The revision to go back to (rollback; default: the one before the deployed one).
    #[serde(default)]
    pub revision: Option<u32>,
}

/// Where a plan is.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum PlanState {
    /// Made, not applied.
    Planned,
    /// Being applied.
    Applying,
    /// Applied: what it did.
    Succeeded {
        /// The operation's report.
        #[schema(value_type = Object)]
        report: Value,
    },
    /// The apply failed: what happened (what was applied before stays recorded).
    Failed {
        /// The error.
        error: ApiError,
    },
}

impl PartialEq for ApiError {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.message == other.message
    }
}

/// A plan, as answered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanView {
    /// Its id, for the apply.
    pub plan_id: String,
    /// What was asked.
    pub request: PlanRequest,
    /// Whether it would change anything.
    pub changes: bool,
    /// What it would do: the preview (enable, upgrade) or the dry run's report (disable).
    #[schema(value_type = Object)]
    pub plan: Value,
    /// Where it is.
    #[serde(flatten)]
    pub state: PlanState,
    /// The same, as a command.
    pub command: String,
}

struct Kept {
    /// The request as given (its values unmasked, to make the plan again).
    request: PlanRequest,
    /// The plan as answered (secret values masked).
    view: PlanView,
    fingerprint: [u8; 32],
    owner: Option<Identity>,
    system: bool,
    made: Instant,
    /// The resource version of its Secret, when plans are kept in the API server.
    version: Option<String>,
}

/// The plans made and not yet applied (or applied recently), by id; in a cluster each also
/// in the API server ([`super::plan_store`]).
#[derive(Default)]
pub struct Store {
    plans: Mutex<HashMap<String, Kept>>,
    persistent: bool,
}

impl Store {
    /// A store; `persistent`: plans are also kept in the API server.
    pub fn new(persistent: bool) -> Self {
        Store {
            plans: Mutex::default(),
            persistent,
        }
    }

    /// Whether plans are also kept in the API server.
    pub fn persistent(&self) -> bool {
        self.persistent
    }

    fn has(&self, id: &str) -> bool {
        self.plans.lock().is_ok_and(|plans| plans.contains_key(id))
    }

    fn insert(&self, kept: Kept) {
        let Ok(mut plans) = self.plans.lock() else {
            return;
        };
        plans.retain(|_, k| k.made.elapsed() < PLAN_TTL);
        while plans.len() >= MAX_PLANS {
            let oldest = plans
                .iter()
                .min_by_key(|(_, k)| k.made)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => plans.remove(&id),
                None => break,
            };
        }
        plans.insert(kept.view.plan_id.clone(), kept);
    }

    fn with<T>(&self, id: &str, f: impl FnOnce(&mut Kept) -> T) -> Option<T> {
        let mut plans = self.plans.lock().ok()?;
        let kept = plans.get_mut(id).filter(|k| k.made.elapsed() < PLAN_TTL)?;
        Some(f(kept))
    }

    fn set_state(&self, id: &str, state: PlanState) {
        self.with(id, |kept| kept.view.state = state);
    }
}

/// `POST /api/v1/plans`.
#[utoipa::path(
    post,
    path = "/api/v1/plans",
    tag = "plans",
    request_body = PlanRequest,
    responses(
        (status = 201, description = "The plan, with its id", body = PlanView),
        (status = 400, description = "The request or its values are not valid (`fields` names each value at fault)", body = ApiError),
        (status = 404, description = "No such addon, or not installed", body = ApiError),
        (status = 409, description = "Refused: declared by an `Addon` resource, or another operation holds the addon", body = ApiError),
    )
)]
pub async fn create(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<PlanRequest>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<(StatusCode, Json<PlanView>)> {
    let Json(request) = body.map_err(ApiError::from)?;
    let job = Arc::clone(&app);
    let view = app
        .workers
        .run(move || async move { plan(&job, &caller, request).await })
        .await??;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Makes and keeps the plan of `request` for `caller`.
pub async fn plan(app: &App, caller: &Caller, request: PlanRequest) -> ApiResult<PlanView> {
    if !super::api::is_reference(&request.addon) {
        return Err(ApiError::invalid(format!(
            "{:?} is not an addon: name it `name` or `registry/name` (lowercase letters, digits and `-`)",
            request.addon
        )));
    }
    let session = app.session(caller, None);
    let system = super::api::is_system(&session.ctx().catalog, bare(&request.addon)).await;
    if system && !app.visibility.may_see_system(&session).await {
        return Err(ApiError::not_found(format!(
            "addon `{}` is in no registry",
            request.addon
        )));
    }
    let (plan, changes) = make(&session, &request).await?;
    let fingerprint = fingerprint(&plan);
    let shown = masked(&session, &request).await;
    let view = PlanView {
        plan_id: new_id(),
        command: command_of(&shown),
        request: shown,
        changes,
        plan,
        state: PlanState::Planned,
    };
    let version = if app.plans.persistent() {
        let runtime = app.runtime();
        let persisted = super::plan_store::Persisted {
            request: request.clone(),
            shown: view.request.clone(),
            plan: view.plan.clone(),
            changes: view.changes,
            command: view.command.clone(),
            fingerprint: super::guard::hex(&fingerprint),
            owner: caller.identity.clone(),
            system,
            made: super::plan_store::now(),
        };
        super::plan_store::write(
            &runtime.cluster,
            &runtime.namespace,
            &view.plan_id,
            &persisted,
        )
        .await?
    } else {
        None
    };
    app.plans.insert(Kept {
        request,
        view: view.clone(),
        fingerprint,
        owner: caller.identity.clone(),
        system,
        made: Instant::now(),
        version,
    });
    Ok(view)
}

/// Brings the plan `id` into memory from the API server when it is kept there and not here
/// (made through another replica, or before a restart).
pub async fn load(app: &App, id: &str) -> ApiResult<()> {
    if !app.plans.persistent() || app.plans.has(id) {
        return Ok(());
    }
    let runtime = app.runtime();
    let Some((persisted, version)) =
        super::plan_store::read(&runtime.cluster, &runtime.namespace, id).await?
    else {
        return Ok(());
    };
    let Some(fingerprint) = unhex(&persisted.fingerprint) else {
        return Ok(());
    };
    let age =
        std::time::Duration::from_secs(super::plan_store::now().saturating_sub(persisted.made));
    app.plans.insert(Kept {
        request: persisted.request,
        view: PlanView {
            plan_id: id.to_owned(),
            request: persisted.shown,
            changes: persisted.changes,
            plan: persisted.plan,
            state: PlanState::Planned,
            command: persisted.command,
        },
        fingerprint,
        owner: persisted.owner,
        system: persisted.system,
        made: Instant::now().checked_sub(age).unwrap_or_else(Instant::now),
        version: Some(version),
    });
    Ok(())
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

/// `GET /api/v1/plans/{planId}`.
#[utoipa::path(
    get,
    path = "/api/v1/plans/{id}",
    tag = "plans",
    params(("id" = String, Path, description = "The plan's id")),
    responses(
        (status = 200, description = "The plan and where it is", body = PlanView),
        (status = 404, description = "No such plan", body = ApiError),
    )
)]
pub async fn get(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Json<PlanView>> {
    let job = Arc::clone(&app);
    let plan_id = id.clone();
    app.workers
        .run(move || async move { load(&job, &plan_id).await })
        .await??;
    view(&app, &caller, &id).map(Json)
}

/// `POST /api/v1/plans/{planId}/apply`.
#[utoipa::path(
    post,
    path = "/api/v1/plans/{id}/apply",
    tag = "plans",
    params(("id" = String, Path, description = "The plan's id")),
    responses(
        (status = 202, description = "Applying; progress on the event stream, the outcome at `GET /api/v1/plans/{id}`", body = PlanView),
        (status = 404, description = "No such plan", body = ApiError),
        (status = 409, description = "What the plan showed has changed since (nothing was written), or it was applied already", body = ApiError),
    )
)]
pub async fn apply(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<PlanView>)> {
    let view = start(app, caller, id).await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// The plan `id` of `caller`, as it is now.
pub fn view(app: &App, caller: &Caller, id: &str) -> ApiResult<PlanView> {
    app.plans
        .with(id, |kept| {
            (kept.owner == caller.identity).then(|| kept.view.clone())
        })
        .flatten()
        .ok_or_else(|| no_plan(id))
}

/// Starts applying the plan `id` of `caller`: refused (409) when it was applied already or
/// when what it showed has changed; else the plan, now `applying`.
pub async fn start(app: Arc<App>, caller: Caller, id: String) -> ApiResult<PlanView> {
    let job = Arc::clone(&app);
    let plan_id = id.clone();
    app.workers
        .run(move || async move { load(&job, &plan_id).await })
        .await??;
    let taken = app
        .plans
        .with(&id, |kept| {
            if kept.owner != caller.identity {
                return None;
            }
            if kept.view.state != PlanState::Planned {
                return Some(Err(ApiError::of_kind(
                    ErrorKind::Conflict,
                    format!("plan `{id}` was applied already; make a new plan"),
                )));
            }
            kept.view.state = PlanState::Applying;
            Some(Ok((
                kept.request.clone(),
                kept.fingerprint,
                kept.system,
                kept.version.clone(),
            )))
        })
        .flatten()
        .ok_or_else(|| no_plan(&id))?;
    let (request, fingerprint_then, system, version) = taken?;
    let job = Arc::clone(&app);
    let plan_id = id.clone();
    let job_caller = caller.clone();
    let checked = app
        .workers
        .run(move || async move {
            let then = Then {
                fingerprint: fingerprint_then,
                system,
                version,
            };
            check_and_apply(job, job_caller, plan_id, request, then).await
        })
        .await
        .and_then(|checked| checked);
    if let Err(e) = checked {
        app.plans.set_state(&id, PlanState::Planned);
        return Err(e);
    }
    view(&app, &caller, &id)
}

/// What a plan's apply checks against: what was kept when it was made.
struct Then {
    fingerprint: [u8; 32],
    system: bool,
    version: Option<String>,
}

/// Makes the plan again and, when it shows what it showed (`fingerprint_then`), starts its
/// apply in the background (on this worker), its progress and outcome as events.
async fn check_and_apply(
    app: Arc<App>,
    caller: Caller,
    id: String,
    request: PlanRequest,
    then: Then,
) -> ApiResult<()> {
    let system = then.system;
    let session = app.session(&caller, None);
    let (plan, _) = make(&session, &request).await?;
    if fingerprint(&plan) != then.fingerprint {
        return Err(ApiError::of_kind(
            ErrorKind::Conflict,
            format!(
                "what plan `{id}` showed has changed since it was made (an object, the installed addons or the registry changed); nothing was written: make a new plan and check it"
            ),
        ));
    }
    if let Some(version) = &then.version {
        let runtime = app.runtime();
        let claimed =
            super::plan_store::claim(&runtime.cluster, &runtime.namespace, &id, version).await?;
        if !claimed {
            return Err(ApiError::of_kind(
                ErrorKind::Conflict,
                format!("plan `{id}` is being applied through another replica (or was applied); make a new plan"),
            ));
        }
    }
    let reporter = Arc::new(PlanReporter::new(Arc::clone(&app), id.clone(), system));
    let worker = app.session(&caller, Some(reporter));
    tokio::task::spawn_local(async move {
        let outcome = run(&worker, &request).await;
        let (state, line) = match outcome {
            Ok(report) => (
                PlanState::Succeeded { report },
                format!("{} of `{}` applied", verb(request.action), request.addon),
            ),
            Err(error) => {
                let line = error.message.clone();
                (PlanState::Failed { error }, line)
            }
        };
        let outcome = match state {
            PlanState::Succeeded { .. } => "succeeded",
            _ => "failed",
        };
        app.plans.set_state(&id, state);
        let applied = Event::Applied {
            plan_id: id.clone(),
            outcome: outcome.to_owned(),
            message: line,
        };
        app.relay.send(&id, &applied, system);
        app.events.send(applied, system);
        super::events::publish_status_here(&app, bare(&request.addon)).await;
    });
    Ok(())
}

fn no_plan(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "no plan `{id}` (a plan is kept {} minutes by the server that made it); make a new plan",
        PLAN_TTL.as_secs() / 60
    ))
}

/// `request` with its `secret()` values masked (by the schema of the addon's version; values
/// of an addon whose schema cannot be read are all masked).
async fn masked(session: &Session, request: &PlanRequest) -> PlanRequest {
    let Some(values) = &request.values else {
        return request.clone();
    };
    let ctx = session.ctx();
    let schema = async {
        let found = ctx
            .catalog
            .find(&request.addon, request.version.as_deref(), None, None)
            .await
            .ok()?;
        let package = crate::loader::load(found.reader.as_ref(), &found.addon)
            .await
            .ok()?;
        ctx.renderer.parameter_schema(&package).ok()
    }
    .await;
    let shown = match schema {
        Some(schema) => match schema.mask(&Value::Object(values.clone())) {
            Value::Object(map) => map,
            _ => Map::new(),
        },
        None => values
            .keys()
            .map(|k| (k.clone(), Value::String(crate::params::MASK.to_owned())))
            .collect(),
    };
    PlanRequest {
        values: Some(shown),
        ..request.clone()
    }
}

/// `registry/name` → `name`.
fn bare(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

fn verb(action: PlanAction) -> &'static str {
    match action {
        PlanAction::Enable => "enable",
        PlanAction::Upgrade => "upgrade",
        PlanAction::Disable => "disable",
        PlanAction::Rollback => "rollback",
    }
}

/// The plan of `request`, and whether it changes anything.
async fn make(session: &Session, request: &PlanRequest) -> ApiResult<(Value, bool)> {
    match request.action {
        PlanAction::Enable => {
            let op = enable_op(request);
            let preview = crate::ops::enable::preview(session, &op, PreviewMode::Server).await?;
            let changes = preview
                .diff
                .as_ref()
                .is_none_or(crate::diff::Diff::has_differences);
            Ok((to_value(&preview)?, changes))
        }
        PlanAction::Upgrade => {
            let op = upgrade_op(request);
            let preview = crate::ops::upgrade::preview(session, &op, PreviewMode::Server).await?;
            let changes = preview
                .diff
                .as_ref()
                .is_none_or(crate::diff::Diff::has_differences);
            Ok((to_value(&preview)?, changes))
        }
        PlanAction::Rollback => {
            let plan = rollback_plan(session, request).await?;
            Ok((plan, true))
        }
        PlanAction::Disable => {
            let mut op = disable_op(request);
            op.options.dry_run = true;
            let reports = crate::ops::disable::run(session, &op).await?;
            Ok((to_value(&reports)?, !reports.is_empty()))
        }
    }
}

/// Applies `request`: the operation every front end runs.
async fn run(session: &Session, request: &PlanRequest) -> ApiResult<Value> {
    match request.action {
        PlanAction::Enable => {
            let op = enable_op(request);
            let reports = Box::pin(crate::ops::enable::run(
                session,
                &op,
                &crate::ops::NoConsent,
            ))
            .await?;
            to_value(&reports)
        }
        PlanAction::Upgrade => {
            let reports = Box::pin(crate::ops::upgrade::run(session, &upgrade_op(request))).await?;
            to_value(&reports)
        }
        PlanAction::Disable => {
            let reports = crate::ops::disable::run(session, &disable_op(request)).await?;
            to_value(&reports)
        }
        PlanAction::Rollback => {
            let op = crate::ops::rollback::RollbackOp {
                request: crate::ops::RollbackRequest {
                    name: bare(&request.addon).to_owned(),
                    revision: request.revision,
                    ..crate::ops::RollbackRequest::default()
                },
                override_controller: false,
            };
            let report = Box::pin(crate::ops::rollback::run(session, &op)).await?;
            to_value(&report)
        }
    }
}

/// What a rollback would go back to: the deployed revision and the target one (its version
/// and stored values; `secret()` values are references to the revision Secret, never values).
async fn rollback_plan(session: &Session, request: &PlanRequest) -> ApiResult<Value> {
    let history = crate::ops::status::history(
        session,
        &crate::ops::status::HistoryRequest {
            addon: bare(&request.addon).to_owned(),
        },
    )
    .await?;
    let deployed = history
        .revisions
        .iter()
        .rev()
        .find(|r| r.status.to_string() == "deployed")
        .or_else(|| history.revisions.last());
    let target = match request.revision {
        Some(number) => history.revisions.iter().find(|r| r.revision == number),
        None => deployed.and_then(|d| {
            history
                .revisions
                .iter()
                .rev()
                .find(|r| r.revision < d.revision)
        }),
    };
    let Some(target) = target else {
        return Err(ApiError::not_found(match request.revision {
            Some(number) => format!(
                "addon `{}` has no revision {number} (see its history)",
                history.addon
            ),
            None => format!(
                "addon `{}` has no revision before the deployed one to go back to",
                history.addon
            ),
        }));
    };
    to_value(&serde_json::json!({
        "addon": history.addon,
        "from": deployed,
        "to": target,
    }))
}

fn to_value(value: &impl Serialize) -> ApiResult<Value> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::of_kind(ErrorKind::Internal, format!("cannot encode a report: {e}")))
}

fn input(request: &PlanRequest) -> crate::params::Input {
    crate::params::Input::from_values(
        "the request's values",
        request.values.clone().unwrap_or_default(),
        request.clusters.clone(),
    )
}

/// What an enable of `request` asks for (an upgrade asks the same of the installed addon).
fn enable_request(request: &PlanRequest) -> crate::plan::EnableRequest {
    crate::plan::EnableRequest {
        reference: request.addon.clone(),
        version: request.version.clone(),
        args: input(request),
        adopt: request.adopt,
        ..crate::plan::EnableRequest::default()
    }
}

fn enable_op(request: &PlanRequest) -> crate::ops::enable::EnableOp {
    crate::ops::enable::EnableOp {
        request: enable_request(request),
        ..crate::ops::enable::EnableOp::default()
    }
}

fn upgrade_op(request: &PlanRequest) -> crate::ops::upgrade::UpgradeOp {
    crate::ops::upgrade::UpgradeOp {
        request: crate::apply::UpgradeRequest {
            name: bare(&request.addon).to_owned(),
            latest: false,
            enable: enable_request(request),
        },
        ..crate::ops::upgrade::UpgradeOp::default()
    }
}

fn disable_op(request: &PlanRequest) -> crate::ops::disable::DisableOp {
    crate::ops::disable::DisableOp {
        addon: bare(&request.addon).to_owned(),
        options: crate::apply::DisableOptions {
            prune_dependencies: request.prune_dependencies,
            ..crate::apply::DisableOptions::default()
        },
        wait: None,
    }
}

/// What a plan showed, hashed: the same plan made again hashes the same (volatile fields —
/// resource versions, uids, timestamps, managed fields — are not in a preview's diffs).
fn fingerprint(plan: &Value) -> [u8; 32] {
    Sha256::digest(plan.to_string().as_bytes()).into()
}

/// A fresh plan id: 16 random bytes, hex.
pub(super) fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Ids need only be unique here; the time keeps them so without system randomness.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    super::guard::hex(&bytes)
}

/// The command line that does the same.
fn command_of(request: &PlanRequest) -> String {
    let mut words = vec![
        "addonctl".to_owned(),
        verb(request.action).to_owned(),
        request.addon.clone(),
    ];
    if let Some(version) = &request.version {
        words.push(format!("--version={version}"));
    }
    if let Some(clusters) = &request.clusters {
        words.push(format!("--clusters={}", clusters.join(",")));
    }
    if request.adopt {
        words.push("--adopt".to_owned());
    }
    if request.prune_dependencies {
        words.push("--prune-dependencies".to_owned());
    }
    if let Some(revision) = request.revision {
        words.push(revision.to_string());
    }
    if let Some(values) = &request.values {
        flatten("", values, &mut words);
    }
    words
        .iter()
        .map(|w| shell_quoted(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `key=value` words of `values` (nested keys dotted; lists and objects as JSON).
fn flatten(prefix: &str, values: &Map<String, Value>, words: &mut Vec<String>) {
    for (key, value) in values {
        let path = crate::params::dotted(prefix, key);
        match value {
            Value::Object(inner) if !inner.is_empty() => flatten(&path, inner, words),
            Value::String(text) => words.push(format!("{path}={text}")),
            other => words.push(format!("{path}={other}")),
        }
    }
}

fn shell_quoted(word: &str) -> String {
    if word
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./=,:@+".contains(&b))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
