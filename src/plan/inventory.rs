//! The API inventory: which APIs (custom resource kinds, KubeVela definitions) each addon
//! provides and which ones its rendered objects use.
//!
//! Expected flow: [`check`] runs at the end of planning. For every addon the plan applies, it
//! collects the kinds of the objects it renders (control-plane objects and the objects of its
//! `k8s-objects`/`raw` components) and, when KubeVela's definitions are served, the component,
//! trait, policy and workflow-step types its Application uses. A kind is provided when the
//! control plane serves it, when an addon of the plan ships its CRD, or when an installed addon
//! shipped it (its record or its Application lists the CRD); a type is provided when the
//! definition exists in the system namespace, is a KubeVela built-in, or an addon of the plan
//! ships it. What nobody provides fails the plan, naming the addons of the registries that do
//! provide it (found by rendering their newest versions with default parameters, only on this
//! error path).
//!
//! Guarantees: nothing is applied before the check; the error lists every missing API of every
//! addon of the plan at once. Kinds are looked up on the control plane only: objects the direct
//! engine dispatches to managed clusters are checked against the control plane's APIs, plus the
//! CRDs installed addons dispatched.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt as _;
use kube::core::GroupVersionKind;
use serde_json::Value;

use crate::render::{RenderOptions, Rendered};
use crate::source::{AddonRef, Reader};

use super::Inputs;
use super::Plan;
use crate::state::Installed;
use crate::state::Store;
use crate::{Error, Result};

/// How many addons of the registries are rendered at once when looking for providers.
const SEARCH_CONCURRENCY: usize = 8;
/// The most addons looked at when looking for providers.
const SEARCH_LIMIT: usize = 500;

/// KubeVela's built-in definitions (installed with KubeVela 1.10 itself), by kind. Used only when
/// KubeVela is not installed (planning against a control plane that serves its CRDs without
/// running it); with KubeVela installed, the definitions the control plane has decide.
const BUILTIN_COMPONENTS: &[&str] = &[
    "cron-task",
    "daemon",
    "helmchart",
    "k8s-objects",
    "raw",
    "ref-objects",
    "task",
    "webservice",
    "worker",
];
const BUILTIN_TRAITS: &[&str] = &[
    "affinity",
    "annotations",
    "command",
    "container-image",
    "container-ports",
    "cpuscaler",
    "env",
    "expose",
    "gateway",
    "hostalias",
    "hpa",
    "init-container",
    "json-merge-patch",
    "json-patch",
    "k8s-update-strategy",
    "labels",
    "lifecycle",
    "nodeaffinity",
    "podsecuritycontext",
    "resource",
    "scaler",
    "securitycontext",
    "service-account",
    "service-binding",
    "sidecar",
    "startup-probe",
    "storage",
    "topologyspreadconstraints",
];
const BUILTIN_POLICIES: &[&str] = &[
    "apply-once",
    "debug",
    "envbinding",
    "garbage-collect",
    "health",
    "override",
    "read-only",
    "replication",
    "resource-update",
    "shared-resource",
    "take-over",
    "topology",
];
const BUILTIN_STEPS: &[&str] = &[
    "addon-operation",
    "apply-app",
    "apply-application",
    "apply-application-in-parallel",
    "apply-component",
    "apply-deployment",
    "apply-object",
    "apply-remaining",
    "apply-terraform-config",
    "apply-terraform-provider",
    "build-push-image",
    "check-metrics",
    "clean-jobs",
    "collect-service-endpoints",
    "create-config",
    "delete-config",
    "depends-on-app",
    "deploy",
    "deploy-cloud-resource",
    "export-data",
    "export-service",
    "export2config",
    "export2secret",
    "generate-jdbc-connection",
    "list-config",
    "notification",
    "print-message-in-status",
    "read-app",
    "read-config",
    "read-object",
    "request",
    "share-cloud-resource",
    "step-group",
    "suspend",
    "vela-cli",
    "webhook",
];

/// Whether `name` is one of KubeVela's built-in definitions of `kind`.
fn builtin(kind: &str, name: &str) -> bool {
    let list = match kind {
        "ComponentDefinition" => BUILTIN_COMPONENTS,
        "TraitDefinition" => BUILTIN_TRAITS,
        "PolicyDefinition" => BUILTIN_POLICIES,
        "WorkflowStepDefinition" => BUILTIN_STEPS,
        _ => return false,
    };
    list.contains(&name)
}

/// One API an addon uses or provides.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Api {
    /// A kind: group, version, kind.
    Kind {
        group: String,
        version: String,
        kind: String,
    },
    /// A KubeVela definition: its kind (`ComponentDefinition`, …) and name.
    Definition { kind: &'static str, name: String },
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Api::Kind {
                group,
                version,
                kind,
            } if group.is_empty() => write!(f, "`{version} {kind}`"),
            Api::Kind {
                group,
                version,
                kind,
            } => write!(f, "`{group}/{version} {kind}`"),
            Api::Definition { kind, name } => write!(f, "{kind} `{name}`"),
        }
    }
}

impl Api {
    fn gvk(&self) -> Option<GroupVersionKind> {
        match self {
            Api::Kind {
                group,
                version,
                kind,
            } => Some(GroupVersionKind::gvk(group, version, kind)),
            Api::Definition { .. } => None,
        }
    }

    /// Whether a provided API covers this used one (a CRD provides every version it lists).
    fn covered_by(&self, provided: &Api) -> bool {
        match (self, provided) {
            (
                Api::Kind {
                    group,
                    version,
                    kind,
                },
                Api::Kind {
                    group: g,
                    version: v,
                    kind: k,
                },
            ) => group == g && kind == k && (v.is_empty() || version == v),
            (a, b) => a == b,
        }
    }
}

/// The objects an addon renders that must be served somewhere: its control-plane objects
/// (without the Application and its KubeVela definitions, which are skipped with a note when
/// KubeVela is absent) and its components' objects.
fn used_objects(rendered: &Rendered) -> Vec<Value> {
    let mut out: Vec<Value> = rendered
        .objects()
        .into_iter()
        .filter(|o| {
            let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
            let api = o
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
            !(api.starts_with("core.oam.dev/")
                && (kind == "Application" || kind.ends_with("Definition")))
        })
        .collect();
    out.extend(component_objects(&rendered.application));
    out
}

/// The objects of an Application's `k8s-objects` and `raw` components.
pub fn component_objects(application: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for component in application
        .pointer("/spec/components")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match component.get("type").and_then(Value::as_str) {
            Some("k8s-objects") => out.extend(
                component
                    .pointer("/properties/objects")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .cloned(),
            ),
            Some("raw") => out.extend(component.get("properties").cloned()),
            _ => {}
        }
    }
    out
}

fn kind_of(object: &Value) -> Option<Api> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Some(Api::Kind {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
    })
}

/// The kinds a CRD object serves (one per listed version, or one without a version).
fn crd_apis(object: &Value) -> Vec<Api> {
    if object.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return Vec::new();
    }
    let (Some(group), Some(kind)) = (
        object.pointer("/spec/group").and_then(Value::as_str),
        object.pointer("/spec/names/kind").and_then(Value::as_str),
    ) else {
        return Vec::new();
    };
    let mut versions: Vec<String> = object
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    if let Some(version) = object.pointer("/spec/version").and_then(Value::as_str) {
        versions.push(version.to_owned());
    }
    if versions.is_empty() {
        versions.push(String::new());
    }
    versions
        .into_iter()
        .map(|version| Api::Kind {
            group: group.to_owned(),
            version,
            kind: kind.to_owned(),
        })
        .collect()
}

fn definition_kind(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "ComponentDefinition" => "ComponentDefinition",
        "TraitDefinition" => "TraitDefinition",
        "PolicyDefinition" => "PolicyDefinition",
        "WorkflowStepDefinition" => "WorkflowStepDefinition",
        _ => return None,
    })
}

/// What a rendered addon provides: the kinds of the CRDs it ships and its definitions.
fn provided(rendered: &Rendered) -> BTreeSet<Api> {
    let mut out = BTreeSet::new();
    let mut objects = rendered.objects();
    objects.extend(component_objects(&rendered.application));
    for object in &objects {
        out.extend(crd_apis(object));
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let (Some(kind), Some(name)) = (
            definition_kind(kind),
            object.pointer("/metadata/name").and_then(Value::as_str),
        ) {
            out.insert(Api::Definition {
                kind,
                name: name.to_owned(),
            });
        }
    }
    out
}

/// The definitions an Application uses (component, trait, policy and workflow-step types).
fn used_definitions(application: &Value) -> Vec<Api> {
    let mut out = Vec::new();
    let mut push = |kind: &'static str, name: Option<&str>| {
        if let Some(name) = name {
            out.push(Api::Definition {
                kind,
                name: name.to_owned(),
            });
        }
    };
    let items = |pointer: &str| -> Vec<Value> {
        application
            .pointer(pointer)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let type_of = |v: &Value| v.get("type").and_then(Value::as_str).map(str::to_owned);
    for component in items("/spec/components") {
        push("ComponentDefinition", type_of(&component).as_deref());
        for t in component
            .get("traits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push("TraitDefinition", type_of(t).as_deref());
        }
    }
    for policy in items("/spec/policies") {
        push("PolicyDefinition", type_of(&policy).as_deref());
    }
    for step in items("/spec/workflow/steps") {
        push("WorkflowStepDefinition", type_of(&step).as_deref());
        for sub in step
            .get("subSteps")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push("WorkflowStepDefinition", type_of(sub).as_deref());
        }
    }
    out
}

/// What installed addons shipped: the CRDs their records list (control plane and dispatched)
/// and the CRDs of their Applications' components.
fn installed_provided(
    installed: &BTreeMap<String, Installed>,
) -> (BTreeSet<String>, BTreeSet<Api>) {
    // CRD names (`<plural>.<group>`) from records: only the group is known.
    let mut groups = BTreeSet::new();
    let mut apis = BTreeSet::new();
    for addon in installed.values() {
        if let Some(record) = &addon.record {
            let dispatched = record
                .dispatched
                .values()
                .flat_map(|c| c.objects.iter().map(|o| &o.object));
            for object in record.inventory.iter().chain(dispatched) {
                if object.kind == "CustomResourceDefinition" {
                    if let Some((_, group)) = object.name.split_once('.') {
                        groups.insert(group.to_owned());
                    }
                }
            }
        }
        if let Some(app) = &addon.application {
            for object in component_objects(app) {
                apis.extend(crd_apis(&object));
            }
        }
    }
    (groups, apis)
}

/// Refuses, whatever the flags, a plan whose addons render addonctl's or KubeVela's own state
/// (see [`super::protect`]), naming every such object, where it comes from and why.
async fn refuse_state(store: Store<'_>, plan: &Plan) -> Result<()> {
    // The joined clusters' names (their Secrets are state); without the right to list them,
    // the label still gives a cluster Secret away.
    let clusters: Vec<String> = match store.joined().await {
        Ok(joined) => joined.into_iter().map(|(info, _)| info.name).collect(),
        Err(_) => Vec::new(),
    };
    let found: Vec<String> = plan
        .steps
        .iter()
        .flat_map(|s| super::protect::state_objects(&s.rendered, store.namespace, &clusters))
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::ProtectedObjects { objects: found })
}

/// The definitions a control plane running KubeVela has, by kind (one list per kind, made
/// when first needed).
#[derive(Default)]
struct DefinitionsOnCluster(BTreeMap<&'static str, BTreeSet<String>>);

impl DefinitionsOnCluster {
    async fn has(&mut self, ctx: &Inputs<'_>, kind: &'static str, name: &str) -> Result<bool> {
        if !self.0.contains_key(kind) {
            let names = ctx
                .cluster
                .list(
                    &GroupVersionKind::gvk("core.oam.dev", "v1beta1", kind),
                    Some(ctx.namespace),
                    "",
                )
                .await?
                .into_iter()
                .filter_map(|d| d.metadata.name)
                .collect();
            self.0.insert(kind, names);
        }
        Ok(self.0.get(kind).is_some_and(|names| names.contains(name)))
    }
}

/// How [`check`] runs: `skip` turns what is missing into notes; `vela` tells whether KubeVela
/// runs on the control plane (read once per plan, and only when KubeVela deploys an addon that
/// uses definitions).
#[derive(Clone, Copy)]
pub struct Checks<'a> {
    /// What is missing becomes notes instead of an error.
    pub skip: bool,
    /// KubeVela's version, when it runs on the control plane.
    pub vela: &'a super::VelaVersion<'a>,
}

/// Checks that every API the plan's addons use is provided; see the module documentation.
/// With `skip`, what is missing is returned as notes instead (KubeVela's workflow retries
/// until the environment serves it).
pub async fn check(
    ctx: &Inputs<'_>,
    plan: &Plan,
    installed: &BTreeMap<String, Installed>,
    readers: Vec<Reader>,
    checks: Checks<'_>,
) -> Result<Vec<String>> {
    let Checks { skip, vela } = checks;
    refuse_state(ctx.store(), plan).await?;
    let mut by_plan: BTreeSet<Api> = BTreeSet::new();
    for step in &plan.steps {
        by_plan.extend(provided(&step.rendered));
        for variant in &step.variants {
            by_plan.extend(
                component_objects(&variant.application)
                    .iter()
                    .flat_map(crd_apis),
            );
        }
    }
    let (installed_groups, by_installed) = installed_provided(installed);
    // Definitions matter when KubeVela deploys the addons: the direct engine dispatches their
    // components itself.
    let definitions_served = super::uses_vela(ctx.cluster, ctx.engine).await
        && ctx
            .cluster
            .serves(&GroupVersionKind::gvk(
                "core.oam.dev",
                "v1beta1",
                "ComponentDefinition",
            ))
            .await?;
    // With KubeVela running, its built-ins are definitions in the system namespace like any
    // other; without it, the complete list of 1.10's built-ins stands in for them.
    let kubevela_running = definitions_served && vela.get().await.is_some();
    let mut on_cluster = DefinitionsOnCluster::default();

    // Every addon's missing APIs, with an example object of each.
    let mut missing: BTreeMap<String, BTreeMap<Api, String>> = BTreeMap::new();
    let mut checked: BTreeMap<Api, bool> = BTreeMap::new();
    for step in &plan.steps {
        let name = &step.rendered.name;
        // The clusters an `Addon`'s overrides give other parameters get other components.
        let variants = step.variants.iter().map(|v| &v.application);
        let mut objects = used_objects(&step.rendered);
        objects.extend(variants.clone().flat_map(component_objects));
        let mut uses: Vec<(Api, String)> = objects
            .iter()
            .filter_map(|o| Some((kind_of(o)?, crate::cluster::describe(o))))
            .collect();
        if definitions_served {
            uses.extend(
                std::iter::once(&step.rendered.application)
                    .chain(variants)
                    .flat_map(used_definitions)
                    .filter(|api| match api {
                        Api::Definition { kind, name } => kubevela_running || !builtin(kind, name),
                        Api::Kind { .. } => true,
                    })
                    .map(|api| (api, format!("Application `addon-{name}`"))),
            );
        }
        for (api, example) in uses {
            if by_plan
                .iter()
                .chain(&by_installed)
                .any(|p| api.covered_by(p))
            {
                continue;
            }
            let served = if let Some(served) = checked.get(&api) {
                *served
            } else {
                let served = match (&api, api.gvk()) {
                    (Api::Kind { group, .. }, Some(gvk)) => {
                        installed_groups.contains(group) || ctx.cluster.serves(&gvk).await?
                    }
                    (Api::Definition { kind, name }, _) if kubevela_running => {
                        on_cluster.has(ctx, kind, name).await?
                    }
                    (Api::Definition { kind, name }, _) => ctx
                        .cluster
                        .get(
                            &GroupVersionKind::gvk("core.oam.dev", "v1beta1", kind),
                            Some(ctx.namespace),
                            name,
                        )
                        .await?
                        .is_some(),
                    (Api::Kind { .. }, None) => true,
                };
                checked.insert(api.clone(), served);
                served
            };
            if !served {
                missing
                    .entry(name.clone())
                    .or_default()
                    .entry(api)
                    .or_insert(example);
            }
        }
    }
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: BTreeSet<Api> = missing.values().flat_map(|m| m.keys().cloned()).collect();
    let in_plan: BTreeSet<&str> = plan
        .steps
        .iter()
        .map(|s| s.rendered.name.as_str())
        .collect();
    let providers = find_providers(ctx, &readers, &wanted, &in_plan).await;
    let lines = missing_lines(&missing, &providers);
    if skip {
        return Ok(lines
            .into_iter()
            .map(|line| format!("{line} (enabling anyway: `--skip-api-check`)"))
            .collect());
    }
    Err(Error::MissingApis { missing: lines })
}

/// One line per missing API: the addon, the API, an object that uses it, and who provides it.
fn missing_lines(
    missing: &BTreeMap<String, BTreeMap<Api, String>>,
    providers: &[(Api, Vec<(String, String)>)],
) -> Vec<String> {
    let mut lines = Vec::new();
    for (addon, apis) in missing {
        for (api, example) in apis {
            let who: Vec<&(String, String)> = providers
                .iter()
                .filter(|(p, _)| api.covered_by(p))
                .flat_map(|(_, addons)| addons.iter())
                .collect();
            let hint = if who.is_empty() {
                "no addon in the registries provides it; install it first".to_owned()
            } else {
                let names: Vec<String> = who
                    .iter()
                    .map(|(name, registry)| format!("`{name}` (registry `{registry}`)"))
                    .collect();
                format!(
                    "provided by {}: add `{}` to the dependencies of `{addon}`",
                    names.join(", "),
                    who[0].0
                )
            };
            lines.push(format!("`{addon}` uses {api} ({example}); {hint}"));
        }
    }
    lines
}

/// The addons of the registries (newest versions, rendered with default parameters) that
/// provide any of `wanted`: each provided API with `(addon, registry)` pairs.
async fn find_providers(
    ctx: &Inputs<'_>,
    readers: &[Reader],
    wanted: &BTreeSet<Api>,
    in_plan: &BTreeSet<&str>,
) -> Vec<(Api, Vec<(String, String)>)> {
    let mut targets: Vec<(Reader, String)> = Vec::new();
    let listings = futures::future::join_all(readers.iter().map(|r| r.list_addons())).await;
    for (reader, listing) in readers.iter().zip(listings) {
        for summary in listing.unwrap_or_default() {
            if !in_plan.contains(summary.name.as_str()) && targets.len() < SEARCH_LIMIT {
                targets.push((Arc::clone(reader), summary.name));
            }
        }
    }
    let found: Vec<(String, String, BTreeSet<Api>)> = futures::stream::iter(targets)
        .map(|(reader, name)| async move {
            let apis = match crate::loader::load(reader.as_ref(), &AddonRef::latest(&name)).await {
                Ok(package) => {
                    let options = RenderOptions {
                        namespace: ctx.namespace.to_owned(),
                        ..RenderOptions::default()
                    };
                    match ctx.renderer.render(&package, &options) {
                        Ok(rendered) => provided(&rendered),
                        Err(e) => {
                            tracing::debug!("looking for providers: `{name}` does not render: {e}");
                            BTreeSet::new()
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!("looking for providers: `{name}` does not load: {e}");
                    BTreeSet::new()
                }
            };
            (name, reader.registry().to_owned(), apis)
        })
        .buffer_unordered(SEARCH_CONCURRENCY)
        .collect()
        .await;
    let mut out: Vec<(Api, Vec<(String, String)>)> = Vec::new();
    for (name, registry, apis) in found {
        for api in apis
            .into_iter()
            .filter(|a| wanted.iter().any(|w| w.covered_by(a)))
        {
            match out.iter_mut().find(|(a, _)| *a == api) {
                Some((_, addons)) => addons.push((name.clone(), registry.clone())),
                None => out.push((api, vec![(name.clone(), registry.clone())])),
            }
        }
    }
    for (_, addons) in &mut out {
        addons.sort();
        addons.dedup();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crds_provide_every_listed_version() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "certificates.cert-manager.io"},
            "spec": {"group": "cert-manager.io", "names": {"kind": "Certificate"},
                     "versions": [{"name": "v1"}, {"name": "v1beta1"}]}
        });
        let apis = crd_apis(&crd);
        assert_eq!(apis.len(), 2);
        let used =
            kind_of(&json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate"})).unwrap();
        assert!(apis.iter().any(|p| used.covered_by(p)));
        let other =
            kind_of(&json!({"apiVersion": "cert-manager.io/v2", "kind": "Certificate"})).unwrap();
        assert!(!apis.iter().any(|p| other.covered_by(p)));
        assert_eq!(used.to_string(), "`cert-manager.io/v1 Certificate`");
        let core = kind_of(&json!({"apiVersion": "v1", "kind": "ConfigMap"})).unwrap();
        assert_eq!(core.to_string(), "`v1 ConfigMap`");
    }

    #[test]
    fn every_used_definition_is_listed_and_builtins_are_known() {
        let app = json!({"spec": {
            "components": [
                {"name": "a", "type": "k8s-objects", "traits": [{"type": "scaler"}, {"type": "my-trait"}]},
                {"name": "b", "type": "helm"}
            ],
            "policies": [{"type": "topology"}, {"type": "my-policy"}],
            "workflow": {"steps": [{"type": "deploy"}, {"type": "step-group", "subSteps": [{"type": "my-step"}]}]}
        }});
        let used: Vec<String> = used_definitions(&app)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            used,
            [
                "ComponentDefinition `k8s-objects`",
                "TraitDefinition `scaler`",
                "TraitDefinition `my-trait`",
                "ComponentDefinition `helm`",
                "PolicyDefinition `topology`",
                "PolicyDefinition `my-policy`",
                "WorkflowStepDefinition `deploy`",
                "WorkflowStepDefinition `step-group`",
                "WorkflowStepDefinition `my-step`"
            ]
        );
        let all = used_definitions(&app);
        let builtins: Vec<&str> = all
            .iter()
            .filter_map(|api| match api {
                Api::Definition { kind, name } if builtin(kind, name) => Some(name.as_str()),
                Api::Definition { .. } | Api::Kind { .. } => None,
            })
            .collect();
        assert_eq!(
            builtins,
            ["k8s-objects", "scaler", "topology", "deploy", "step-group"]
        );
    }

    #[test]
    fn the_builtin_list_has_kubevela_1_10_definitions() {
        for (kind, name) in [
            ("WorkflowStepDefinition", "apply-remaining"),
            ("WorkflowStepDefinition", "apply-application"),
            ("WorkflowStepDefinition", "deploy"),
            ("PolicyDefinition", "take-over"),
            ("PolicyDefinition", "read-only"),
            ("PolicyDefinition", "resource-update"),
            ("ComponentDefinition", "helmchart"),
        ] {
            assert!(builtin(kind, name), "{kind} `{name}`");
        }
        assert!(!builtin("ComponentDefinition", "helm"));
    }
}
