//! `enable --declarative`: an [`Addon`] resource built from what `enable` was given, for the
//! controller to apply, instead of applying it here.
//!
//! The arguments are parsed and validated once, by the plan `enable` makes (against the
//! addon's parameter schema, as `enable --reset-values` would: the `Addon`'s spec is the whole
//! truth). `secret()` parameters never go into the resource: they are written to the Secret
//! `addon-params-<name>` (one key per parameter path) and referenced from `secretParameters`.
//! Reading ([`find`], [`list()`]) treats a control plane without the CRD as one without `Addon`s;
//! [`declared`] is what `status` shows of an addon an `Addon` declares.

pub mod declared;
mod refs;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::ByteString;
use kube::core::ObjectMeta;
use kube::ResourceExt as _;
use serde_json::{Map, Value};

use crate::context::Context;
use crate::controller::crd::{
    Addon, AddonSpec, Drift, DriftPolicy, LabelSelector, SecretKeyRef, SecretParameter,
};
use crate::params::{Input, ParameterSchema};
use crate::ErrorKind;

pub use refs::{addon_gvk, delete, find, list, served};

/// The prefix of the Secret that holds an `Addon`'s secret parameters.
pub const SECRET_PREFIX: &str = "addon-params-";
/// The label every such Secret carries (value: the addon).
pub const LABEL_PARAMS: &str = "addonctl.io/addon-params";

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A library stage failed (loading, planning, the cluster).
    #[error(transparent)]
    Library(Box<crate::Error>),
    /// What was asked for cannot be declared.
    #[error("{0}")]
    Invalid(String),
    /// Resolving the version failed for a reason that is not the user's (a registry).
    #[error("{0}")]
    Failed(String),
    /// The control plane does not serve the `Addon` resource.
    #[error("the control plane does not serve the `Addon` resource (CustomResourceDefinition `addons.addonctl.io`): install it with `addonctl controller manifests --image IMAGE | kubectl apply -f -` (the controller's manifests start with the CRD), then run this again")]
    NotInstalled,
}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Self {
        Error::Library(Box::new(e))
    }
}

impl From<crate::cluster::Error> for Error {
    fn from(e: crate::cluster::Error) -> Self {
        Error::Library(Box::new(e.into()))
    }
}

impl Error {
    /// What kind of failure it is: the library's says its own; what cannot be declared is
    /// [`ErrorKind::Invalid`], a control plane without the `Addon` resource
    /// [`ErrorKind::NotFound`], a version that could not be resolved for the registries'
    /// fault [`ErrorKind::Unavailable`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Library(e) => e.kind(),
            Error::Invalid(_) => ErrorKind::Invalid,
            Error::NotInstalled => ErrorKind::NotFound,
            Error::Failed(_) => ErrorKind::Unavailable,
        }
    }

    /// Whether the user can fix it: [`ErrorKind::is_user`] of its [`kind`](Error::kind).
    pub fn is_user_error(&self) -> bool {
        self.kind().is_user()
    }

    /// Whether the API server refused the user (who may not read `Addon`s).
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Error::Library(e) if matches!(**e, crate::Error::Cluster(crate::cluster::Error::Forbidden { .. })))
    }
}

/// What `enable --declarative` was given.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `name` or `registry/name` (a directory cannot be declared: the controller reads
    /// registries).
    pub reference: String,
    /// A version or a constraint (`^1.2`).
    pub version: Option<String>,
    /// The parameters, as given.
    pub args: Input,
    /// `--clusters`.
    pub clusters: Option<Vec<String>>,
    /// `--cluster-selector`.
    pub cluster_selector: Option<LabelSelector>,
    /// `--drift`.
    pub drift: Option<DriftPolicy>,
    /// `--suspend`.
    pub suspend: bool,
    /// `--skip-version-check`.
    pub skip_version_check: bool,
    /// `--skip-api-check`.
    pub skip_api_check: bool,
}

/// An `Addon` and, when secret parameters were given, their Secret.
#[derive(Debug, Clone)]
pub struct Declaration {
    /// The resource.
    pub addon: Addon,
    /// The Secret of the secret parameters (values included: never print it, see
    /// [`Declaration::masked_secret`]).
    pub secret: Option<Secret>,
    /// The version the arguments were validated against.
    pub validated_version: String,
}

impl Declaration {
    /// The `Addon` as a JSON object (apiVersion and kind included).
    pub fn addon_value(&self) -> Value {
        serde_json::to_value(&self.addon).unwrap_or(Value::Null)
    }

    /// The Secret with every value replaced by the mask, for printing.
    pub fn masked_secret(&self) -> Option<Value> {
        let secret = self.secret.as_ref()?;
        let mut masked = secret.clone();
        masked.data = secret.data.as_ref().map(|data| {
            data.keys()
                .map(|k| {
                    (
                        k.clone(),
                        ByteString(crate::render::MASK.as_bytes().to_vec()),
                    )
                })
                .collect()
        });
        let mut value = serde_json::to_value(masked).ok()?;
        // Shown as text: `*****`, not its base64.
        if let Some(data) = value.get_mut("data").and_then(Value::as_object_mut) {
            for v in data.values_mut() {
                *v = Value::String(crate::render::MASK.to_owned());
            }
        }
        Some(value)
    }

    /// The secret parameters (their paths).
    pub fn secret_parameters(&self) -> Vec<&str> {
        self.addon
            .spec
            .secret_parameters
            .iter()
            .map(|p| p.name.as_str())
            .collect()
    }
}

/// Parses and validates the arguments once (the plan `enable --reset-values` makes), then
/// builds the `Addon` and the Secret of its secret parameters. Writes nothing.
///
/// # Errors
///
/// Whatever `enable` refuses (unknown or invalid parameters, an unknown addon or version), a
/// directory, secret parameters that are not text or are inside lists.
pub async fn declare(ctx: &Context, request: &Request) -> Result<Declaration, Error> {
    if std::path::Path::new(&request.reference).is_dir() {
        return Err(Error::Invalid(format!(
            "`{}` is a directory: the controller takes addons from registries; publish it to a registry (`addonctl registry add … --type local`) and declare `registry/name`",
            request.reference
        )));
    }
    let (registry, name) = match request.reference.split_once('/') {
        Some((registry, name)) => (Some(registry.to_owned()), name.to_owned()),
        None => (None, request.reference.clone()),
    };
    let exact = crate::controller::engine::exact_version(
        ctx,
        &request.reference,
        request.version.as_deref(),
    )
    .await
    .map_err(|e| {
        if e.is_user_error() {
            Error::Invalid(e.to_string())
        } else {
            Error::Failed(e.to_string())
        }
    })?;
    let plan_request = crate::plan::EnableRequest {
        reference: request.reference.clone(),
        version: exact,
        args: request.args.clone(),
        skip_version_check: request.skip_version_check,
        skip_api_check: request.skip_api_check,
        reset_values: true,
        ..crate::plan::EnableRequest::default()
    };
    let plan = crate::plan::plan(&ctx.planner(), &plan_request, false).await?;
    let Some(root) = plan.steps.iter().find(|s| s.rendered.name == name) else {
        return Err(Error::Invalid(format!(
            "the plan for `{name}` does not hold the addon itself"
        )));
    };
    let mut args = root.rendered.args.clone();
    let from_args = match args.shift_remove(crate::params::CLUSTERS) {
        Some(Value::Array(items)) => Some(
            items
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect::<Vec<_>>(),
        ),
        _ => None,
    };
    let clusters = request.clusters.clone().or(from_args);
    if clusters.is_some() && request.cluster_selector.is_some() {
        return Err(Error::Invalid(
            "give the clusters by name (`--clusters` or `clusters=`) or by label (`--cluster-selector`), not both".to_owned(),
        ));
    }
    let (parameters, secrets) = split_secrets(&args, &root.rendered.schema)?;
    let secret_name = format!("{SECRET_PREFIX}{name}");
    let spec = AddonSpec {
        registry,
        version: request.version.clone(),
        parameters: (!parameters.is_empty()).then_some(parameters),
        secret_parameters: secrets
            .keys()
            .map(|path| SecretParameter {
                name: path.clone(),
                secret_ref: SecretKeyRef {
                    name: secret_name.clone(),
                    key: path.clone(),
                },
            })
            .collect(),
        clusters,
        cluster_selector: request.cluster_selector.clone(),
        drift: request.drift.map(|policy| Drift {
            policy,
            exclusions: Vec::new(),
        }),
        suspend: request.suspend,
        // What the review flags, the person declaring it allows (as `enable` would apply it);
        // the admission policy lets only approvers write it.
        allow: crate::controller::engine::plan_flags(ctx, &plan)
            .into_iter()
            .map(|f| crate::controller::trust::allowance_of(f.kind))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        ..AddonSpec::default()
    };
    let mut addon = Addon::new(&name, spec);
    addon.metadata.namespace = Some(ctx.namespace.clone());
    let secret = (!secrets.is_empty()).then(|| params_secret(&ctx.namespace, &name, secrets));
    Ok(Declaration {
        addon,
        secret,
        validated_version: root.rendered.version.clone(),
    })
}

/// The Secret `addon-params-<name>` holding `values` (key = parameter path).
fn params_secret(namespace: &str, name: &str, values: BTreeMap<String, String>) -> Secret {
    let labels = BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_owned(),
            "addonctl".to_owned(),
        ),
        (LABEL_PARAMS.to_owned(), name.to_owned()),
    ]);
    Secret {
        metadata: ObjectMeta {
            name: Some(format!("{SECRET_PREFIX}{name}")),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(
            values
                .into_iter()
                .map(|(k, v)| (k, ByteString(v.into_bytes())))
                .collect(),
        ),
        ..Secret::default()
    }
}

/// The plain parameters, and the secret ones by dotted path.
pub type Split = (Map<String, Value>, BTreeMap<String, String>);

/// Splits the arguments into the plain ones (secret parameters removed, objects left empty by
/// that removal dropped) and the secret ones by dotted path.
///
/// # Errors
///
/// A secret parameter that is not text (the controller reads Secret keys as text) or that
/// lies inside a list (`secretParameters` name object paths), or whose path is not a valid
/// Secret key.
pub fn split_secrets(args: &Map<String, Value>, schema: &ParameterSchema) -> Result<Split, Error> {
    let mut secrets = BTreeMap::new();
    let plain = split_at(args, "", schema, &mut secrets)?;
    Ok((plain, secrets))
}

fn split_at(
    map: &Map<String, Value>,
    prefix: &str,
    schema: &ParameterSchema,
    secrets: &mut BTreeMap<String, String>,
) -> Result<Map<String, Value>, Error> {
    let mut out = Map::new();
    for (key, value) in map {
        let path = crate::params::dotted(prefix, key);
        if schema.is_secret(&path) {
            let Value::String(text) = value else {
                return Err(Error::Invalid(format!(
                    "secret parameter `{path}` is not text: an `Addon` reads secret parameters from Secret keys as text; give it as a string, or enable without `--declarative`"
                )));
            };
            if !path
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                return Err(Error::Invalid(format!(
                    "secret parameter `{path}` cannot be a Secret key (only letters, digits, `-`, `_` and `.`)"
                )));
            }
            secrets.insert(path, text.clone());
            continue;
        }
        match value {
            Value::Object(inner) => {
                let kept = split_at(inner, &path, schema, secrets)?;
                if !kept.is_empty() || inner.is_empty() {
                    out.insert(key.clone(), Value::Object(kept));
                }
            }
            Value::Array(items) => {
                if (0..items.len()).any(|i| has_secret(&items[i], &format!("{path}.{i}"), schema)) {
                    return Err(Error::Invalid(format!(
                        "parameter `{path}` is a list holding secret values: `secretParameters` cannot reach into lists; enable without `--declarative`, or declare the `Addon` by hand"
                    )));
                }
                out.insert(key.clone(), value.clone());
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(out)
}

/// Whether `value` at `path` is or holds a secret parameter.
fn has_secret(value: &Value, path: &str, schema: &ParameterSchema) -> bool {
    if schema.is_secret(path) {
        return true;
    }
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| has_secret(v, &format!("{path}.{k}"), schema)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .any(|(i, v)| has_secret(v, &format!("{path}.{i}"), schema)),
        _ => false,
    }
}

/// What [`write()`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// The `Addon` as stored.
    pub addon: Value,
    /// The Secret of the secret parameters, when written.
    pub secret: Option<String>,
    /// Whether an older Secret of secret parameters was deleted (none are declared now).
    pub secret_deleted: bool,
}

/// Writes the declaration (server-side apply, field manager `addonctl`): the Secret first (so
/// the controller finds it), then the `Addon`. Without secret parameters, a Secret left by an
/// earlier declaration is deleted (the spec no longer references it).
///
/// # Errors
///
/// [`Error::NotInstalled`] without the CRD; the API server's refusals.
pub async fn write(ctx: &Context, declaration: &Declaration) -> Result<Written, Error> {
    if !served(&ctx.cluster).await? {
        return Err(Error::NotInstalled);
    }
    let name = declaration.addon.name_any();
    let ns = &ctx.namespace;
    ctx.cluster
        .create_if_missing(&serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}
        }))
        .await?;
    let mut secret_deleted = false;
    let secret = if let Some(secret) = &declaration.secret {
        let mut value = serde_json::to_value(secret).unwrap_or(Value::Null);
        value["apiVersion"] = Value::from("v1");
        value["kind"] = Value::from("Secret");
        ctx.cluster.apply(&value, ns).await?;
        Some(secret.name_any())
    } else {
        secret_deleted = refs::delete_params_secret(&ctx.cluster, ns, &name).await?;
        None
    };
    let mut addon = declaration.addon_value();
    // The controller acts for the user writing the `Addon` (the shipped admission policy checks
    // that these name them): who that is, as the API server sees it.
    if let Some((user, groups)) = whoami(&ctx.cluster).await {
        let annotations = crate::controller::trust::author_annotations(&user, &groups);
        if let Some(meta) = addon.get_mut("metadata") {
            meta["annotations"] = serde_json::to_value(annotations).unwrap_or(Value::Null);
        }
    }
    let stored = ctx.cluster.apply(&addon, ns).await?;
    Ok(Written {
        addon: serde_json::to_value(stored).unwrap_or(Value::Null),
        secret,
        secret_deleted,
    })
}

/// The user and groups the API server knows the caller as (a SelfSubjectReview); `None`
/// when it cannot say (before Kubernetes 1.28, or refused).
pub(crate) async fn whoami(cluster: &crate::cluster::Cluster) -> Option<(String, Vec<String>)> {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    let api: kube::Api<SelfSubjectReview> = kube::Api::all(cluster.client().clone());
    let review = api
        .create(
            &kube::api::PostParams::default(),
            &SelfSubjectReview::default(),
        )
        .await
        .ok()?;
    let info = review.status?.user_info?;
    Some((info.username?, info.groups.unwrap_or_default()))
}

/// `--cluster-selector k=v,k2=v2` as a label selector (`matchLabels`); empty = every cluster.
///
/// # Errors
///
/// A pair without `=` or with an empty or malformed key.
pub fn parse_selector(text: &str) -> Result<LabelSelector, Error> {
    let mut selector = LabelSelector::default();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Error::Invalid(format!(
                "`--cluster-selector`: `{pair}` is not `key=value` (e.g. `--cluster-selector env=prod,region=eu`)"
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        let valid = |s: &str, allow_slash: bool| {
            s.chars().all(|c| {
                c.is_ascii_alphanumeric()
                    || matches!(c, '-' | '_' | '.')
                    || (allow_slash && c == '/')
            })
        };
        if key.is_empty() || !valid(key, true) || !valid(value, false) || value.len() > 63 {
            return Err(Error::Invalid(format!(
                "`--cluster-selector`: `{pair}` is not a label `key=value` (letters, digits, `-`, `_`, `.`; a key may have a `prefix/`)"
            )));
        }
        selector
            .match_labels
            .insert(key.to_owned(), value.to_owned());
    }
    Ok(selector)
}

#[cfg(test)]
mod tests;
