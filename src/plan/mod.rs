//! Planning an `enable` or `upgrade`: the addons to apply, in order, rendered, with their
//! system requirements checked and definition conflicts found before anything is applied.
//! Writes nothing (releasing definitions for `--override-definitions` aside, which `apply`
//! calls under the addons' locks).
//!
//! Parts: the solver's input (`sources`, read through the one catalogue,
//! [`crate::source::catalog`]), one addon's step (`step`: arguments, clusters, render), a
//! dependency's clusters (`clusters`), the APIs the plan uses and provides ([`inventory`]),
//! what an addon must not render ([`protect`]), and definitions that clash with another addon's
//! (`definitions`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kube::core::GroupVersionKind;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cluster::Cluster;
use crate::context::{Context, EngineChoice};
use crate::model::wire::application_gvk;
use crate::model::{AddonPackage, AddonVersion, Dependency};
use crate::render::normalize;
use crate::render::Renderer;
use crate::render::{RenderOptions, Rendered};
use crate::resolve::{self, InstalledAddon, Platform, Universe};
use crate::source::catalog::Catalog;
use crate::source::Reader;
use crate::state::record::InstalledBy;
use crate::state::{to_value, Installed, Store};
use crate::{Error, Result};

mod clusters;
mod definitions;
pub mod inventory;
pub mod offline;
pub mod overrides;
pub mod protect;
mod sources;
mod step;

pub use definitions::{definition_conflicts, release_definitions};
pub use overrides::{OverrideGroup, Overrides, Variant};
use sources::Sources;
use step::{Planned, Planner};

/// What planning reads: the control plane, the system namespace, the catalogue, the renderer
/// and the engine choice. [`Context::planner`] borrows it from a context; a front end with its
/// own parts (a controller) builds it directly.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The control plane.
    pub cluster: &'a Cluster,
    /// The system namespace.
    pub namespace: &'a str,
    /// The registries.
    pub catalog: &'a Catalog,
    /// The renderer.
    pub renderer: &'a Renderer,
    /// Which engine deploys the addons' components.
    pub engine: EngineChoice,
}

impl<'a> Inputs<'a> {
    /// What is installed, read through the control plane and the system namespace.
    #[must_use]
    pub fn store(&self) -> Store<'a> {
        Store {
            cluster: self.cluster,
            namespace: self.namespace,
        }
    }
}

impl Context {
    /// What planning reads, borrowed from this context.
    #[must_use]
    pub fn planner(&self) -> Inputs<'_> {
        Inputs {
            cluster: &self.cluster,
            namespace: &self.namespace,
            catalog: &self.catalog,
            renderer: &self.renderer,
            engine: self.engine,
        }
    }
}

/// How long the layers of a plan wait for a dependency by default.
pub const DEFAULT_DEPENDENCY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// What to enable.
#[derive(Debug, Clone, Default)]
pub struct EnableRequest {
    /// `name`, `registry/name` or a directory.
    pub reference: String,
    /// A version; `None` = the newest.
    pub version: Option<String>,
    /// Arguments given now, as the user gave them: parsed once, against the schema of the
    /// package the plan loads (a typed map converts with `.into()`).
    pub args: crate::params::Input,
    /// Skip the `system` requirement checks.
    pub skip_version_check: bool,
    /// Take over definitions owned by another addon or by nobody.
    pub override_definitions: bool,
    /// Adopt existing objects addonctl did not create (otherwise the enable is refused).
    pub adopt: bool,
    /// Enable even when APIs the addons use are served by nobody yet (they become notes).
    pub skip_api_check: bool,
    /// Start the addon asked for from its defaults instead of its stored arguments and
    /// clusters (`--reset-values`); without it, what is given is merged over what is stored.
    pub reset_values: bool,
    /// What the history keeps (`--history-max`) and how the revision is described.
    pub history: crate::state::revisions::History,
    /// The addon asked for, read from a revision's kept package (`rollback`): a reader named
    /// after the revision's registry, holding that one addon.
    pub revision_package: Option<crate::source::Reader>,
    /// The addon asked for: parameters some of its clusters get over its arguments (direct
    /// engine only; see [`overrides`]). Empty and without `reset_values`: those the record
    /// says each cluster got are kept, as the stored arguments are.
    pub overrides: Overrides,
    /// Take a version whose tag now names another manifest than the one recorded (OCI).
    pub allow_moved_tag: bool,
}

/// What happens to one addon of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Not installed: install it.
    Install,
    /// Installed at another version or with other arguments: apply again.
    Upgrade,
    /// Installed and satisfying: leave it.
    Keep,
}

/// One addon of a plan.
#[derive(Debug, Clone)]
pub struct Step {
    /// What happens.
    pub action: Action,
    /// Who asked for it.
    pub installed_by: InstalledBy,
    /// The rendered addon.
    pub rendered: Rendered,
    /// Its package.
    pub package: AddonPackage,
    /// The clusters it goes to (its `clusters` argument); `None` = where its topology says.
    pub clusters: Option<Vec<String>>,
    /// The addons of the plan it depends on.
    pub depends_on: Vec<String>,
    /// The addons of the plan that depend on it.
    pub needed_by: Vec<String>,
    /// Its layer: 0 depends on nothing in the plan, each next layer only on earlier ones.
    pub layer: usize,
    /// What its revision is called and how many the history keeps.
    pub history: crate::state::revisions::History,
    /// Its components rendered with other parameters for some clusters (the addon asked for,
    /// with [`EnableRequest::overrides`]); every other cluster gets those of `rendered`.
    pub variants: Vec<Variant>,
}

impl Step {
    /// The Application whose components `cluster` gets: its variant's, else the addon's.
    pub fn application_for(&self, cluster: &str) -> &Value {
        self.variant_of(cluster)
            .map_or(&self.rendered.application, |v| &v.application)
    }

    /// The variant `cluster` gets, if any.
    pub fn variant_of(&self, cluster: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.clusters.contains(cluster))
    }
}

/// An installed addon the plan needs and leaves as it is.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    /// The addon.
    pub name: String,
    /// Its installed version.
    pub version: String,
    /// The registry it was installed from.
    pub registry: String,
    /// Who asked for it.
    pub installed_by: InstalledBy,
    /// The addons of the plan that depend on it.
    pub needed_by: Vec<String>,
}

/// The addons to apply, dependencies first.
#[derive(Debug, Clone)]
pub struct Plan {
    /// What to apply, in apply order (dependencies first).
    pub steps: Vec<Step>,
    /// Installed dependencies left as they are.
    pub kept: Vec<Kept>,
    /// With the direct engine, how long [`execute`](crate::apply::execute) waits for an addon's
    /// workloads to be ready before applying the addons that need it; `None` = no wait.
    pub dependency_timeout: Option<std::time::Duration>,
    /// Notes for the user (e.g. definitions that will be skipped).
    pub notes: Vec<String>,
    /// Adopt existing objects addonctl did not create (`--adopt`).
    pub adopt: bool,
    /// Direct engine, the addon asked for (the last step) only: clusters that keep what they
    /// run (a staged upgrade's later stages). Nothing is applied, pruned or deleted there and
    /// their record entries are carried over as they are; the other targets get this version.
    /// Set by the caller after planning; empty by default.
    pub hold: std::collections::BTreeSet<String>,
}

/// The control plane's Kubernetes version, when it answers.
pub async fn kubernetes_version(cluster: &Cluster) -> Option<String> {
    cluster.kubernetes_version().await.ok()
}

async fn check_clusters(store: Store<'_>, wanted: Option<&[String]>) -> Result<()> {
    let Some(wanted) = wanted else {
        return Ok(());
    };
    let known = store.known_clusters().await?;
    let unknown: Vec<String> = wanted
        .iter()
        .filter(|c| !known.iter().any(|k| k == *c))
        .cloned()
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Error::UnknownClusters {
            names: unknown,
            known: known.iter().map(ToString::to_string).collect(),
        })
    }
}

/// How many versions of one addon in one registry the solver sees (the newest ones) when the
/// newest version of each addon does not make a plan.
const MAX_VERSIONS: usize = 30;
/// How many `metadata.yaml` files are read at once.
const READ_CONCURRENCY: usize = 8;

/// Builds the plan for enabling (or, with `upgrade`, upgrading) an addon.
///
/// The solver ([`crate::resolve`]) picks one version of the addon and of every dependency over
/// every registry and what is installed; a version change of an installed addon is first checked
/// against the constraints of the installed addons that depend on it. Each addon to apply is
/// then loaded and rendered, a dependency's clusters are widened to those of the addons that
/// need it (`clusters.rs`), and the APIs the rendered objects use are checked ([`inventory`]).
pub async fn plan(ctx: &Inputs<'_>, request: &EnableRequest, upgrade: bool) -> Result<Plan> {
    use inventory::Checks;
    // What the plan starts from, read at once (the errors in this order); boxed, as the
    // reads' futures are large.
    let store = ctx.store();
    let (checked, installed, k8s_version) = Box::pin(async {
        futures::join!(
            check_clusters(store, request.args.clusters()),
            store.installed(),
            kubernetes_version(ctx.cluster),
        )
    })
    .await;
    checked?;
    let installed = installed?;
    // Read only when an addon the solver sees requires a KubeVela version, or KubeVela deploys
    // an addon that uses definitions.
    let vela = VelaVersion::new(ctx.cluster, ctx.namespace);
    let mut notes = Vec::new();
    let directory = open_directory(request).await?;
    let (root, pinned) = root_of(request, directory.as_ref().map(|(_, package)| package));
    let mut sources = Sources::new(ctx.catalog);
    if let Some((reader, _)) = &directory {
        sources.add_first(Arc::clone(reader)).await?;
    }
    let wanted = Wanted {
        root: &root,
        pinned: pinned.as_deref(),
        directory: directory.as_ref().map(|(_, package)| package),
        current: installed.get(&root),
    };
    let platform = PlatformInputs {
        kubernetes: k8s_version.as_deref(),
        vela: &vela,
    };
    let solution = solve(
        &mut sources,
        &installed,
        &platform,
        request,
        &wanted,
        &mut notes,
    )
    .await?;
    let layers = solution
        .layers()
        .iter()
        .enumerate()
        .flat_map(|(layer, addons)| addons.iter().map(move |a| (a.name.clone(), layer)))
        .collect();
    let mut planner = Planner {
        ctx,
        request,
        upgrade,
        root: &root,
        directory: wanted.directory,
        installed: &installed,
        sources: &sources,
        k8s_version,
        layers,
        needs: clusters::Needs::new(),
        notes,
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut kept: Vec<Kept> = Vec::new();
    // The addons that need a dependency first: they decide its clusters.
    for planned in solution.steps.iter().rev() {
        match planner.plan_addon(planned).await? {
            Planned::Apply(step) => steps.push(*step),
            Planned::Keep(addon) => kept.push(addon),
        }
    }
    steps.reverse();
    kept.reverse();
    let mut notes = planner.notes;
    if uses_vela(ctx.cluster, ctx.engine).await {
        notes.extend(steps.iter().filter_map(secrets_note));
    }
    let mut plan = Plan {
        steps,
        kept,
        notes,
        dependency_timeout: Some(DEFAULT_DEPENDENCY_TIMEOUT),
        adopt: request.adopt,
        hold: std::collections::BTreeSet::new(),
    };
    let missing = inventory::check(
        ctx,
        &plan,
        &installed,
        sources.readers(),
        Checks {
            skip: request.skip_api_check,
            vela: &vela,
        },
    )
    .await?;
    plan.notes.extend(missing);
    Ok(plan)
}

/// The addon asked for, when it is a directory: its reader and package.
async fn open_directory(request: &EnableRequest) -> Result<Option<(Reader, AddonPackage)>> {
    if let Some(reader) = &request.revision_package {
        let name = request
            .reference
            .rsplit_once('/')
            .map_or(request.reference.as_str(), |(_, name)| name);
        let addon = crate::source::AddonRef {
            name: name.to_owned(),
            version: request.version.clone(),
        };
        let package = crate::loader::load(reader.as_ref(), &addon)
            .await
            .map_err(crate::Error::from)?;
        return Ok(Some((Arc::clone(reader), package)));
    }
    if !Path::new(&request.reference).is_dir() {
        return Ok(None);
    }
    let located = crate::loader::locate(&request.reference, request.version.as_deref()).await?;
    let package = crate::loader::load(located.reader.as_ref(), &located.addon)
        .await
        .map_err(crate::Error::from)?;
    Ok(Some((located.reader, package)))
}

/// The name of the addon asked for (a directory, `registry/name` or a name) and the registry
/// it is pinned to, if any.
fn root_of(request: &EnableRequest, directory: Option<&AddonPackage>) -> (String, Option<String>) {
    match directory {
        Some(package) => (package.name().to_owned(), Some(package.registry.clone())),
        None => match request.reference.split_once('/') {
            Some((registry, name)) => (name.to_owned(), Some(registry.to_owned())),
            None => (request.reference.clone(), None),
        },
    }
}

/// The addon asked for, as the solver is asked for it.
struct Wanted<'a> {
    root: &'a str,
    pinned: Option<&'a str>,
    directory: Option<&'a AddonPackage>,
    current: Option<&'a Installed>,
}

/// Gathers the solver's input and solves: the newest versions first, older ones too when
/// they do not make a plan.
async fn solve(
    sources: &mut Sources,
    installed: &BTreeMap<String, Installed>,
    platform: &PlatformInputs<'_>,
    request: &EnableRequest,
    wanted: &Wanted<'_>,
    notes: &mut Vec<String>,
) -> Result<resolve::Solution> {
    let (root, pinned) = (wanted.root, wanted.pinned);
    let current = wanted.current;
    sources
        .find_root(
            root,
            request.version.as_deref(),
            pinned,
            current.map(|c| c.registry.as_str()),
            notes,
        )
        .await?;
    let mut universe = Universe::new(sources.registry_order());
    for addon in installed.values() {
        universe.install(installed_addon(addon));
    }
    let version = target_version(sources, request, wanted);
    // A manifest digest (`registry/addon@sha256:…`): the solver sees the chart's version, the
    // registry is read by the digest.
    let (version, read_as) = match version {
        Some(digest) if digest.starts_with("sha256:") => {
            let chart = sources.digest_version(root, pinned, &digest).await?;
            (Some(chart), Some(digest))
        }
        other => (other.clone(), other),
    };
    if let (Some(current), Some(target)) = (current, &version) {
        if !AddonVersion::parse(target).same_as(&current.version) {
            resolve::check_upgrade(&universe, root, &AddonVersion::parse(target))?;
        }
    }
    let solver_request = resolve::Request {
        root: root.to_owned(),
        version: version.clone(),
        registry: pinned.map(str::to_owned),
        skip_version_check: request.skip_version_check,
        upgrade: true,
    };
    let version = read_as.as_deref();
    sources
        .gather(&mut universe, root, version, pinned, false, notes)
        .await;
    match resolve::solve(&universe, &platform.of(&universe).await, &solver_request) {
        Ok(solution) => Ok(solution),
        Err(first) => {
            // The newest versions did not make a plan: let the solver see older ones too.
            let added = sources
                .gather(&mut universe, root, version, pinned, true, notes)
                .await;
            let result = if added {
                let platform = platform.of(&universe).await;
                resolve::solve(&universe, &platform, &solver_request)
            } else {
                Err(first)
            };
            match result {
                Ok(solution) => Ok(solution),
                Err(e) => {
                    // No version of the addon could be read: why, not that it is missing.
                    let root_missing =
                        matches!(&e, resolve::ResolveError::NotFound { name, .. } if name == root);
                    match sources.root_unreadable(root).filter(|_| root_missing) {
                        Some(unreadable) => Err(unreadable),
                        None => Err(e.into()),
                    }
                }
            }
        }
    }
}

/// The version asked for. Without `--version`, an installed addon moves to the newest version
/// (as `vela addon enable` does) and a directory is enabled as it is; a version change must
/// keep the constraints of its installed dependents.
fn target_version(
    sources: &Sources,
    request: &EnableRequest,
    wanted: &Wanted<'_>,
) -> Option<String> {
    match (&request.version, wanted.current) {
        (Some(version), _) => Some(version.clone()),
        (None, _) if wanted.directory.is_some() => wanted
            .directory
            .map(|package| package.metadata.version.raw().to_owned()),
        (None, Some(current)) => {
            sources.newest(wanted.root, wanted.pinned.or(Some(&current.registry)))
        }
        (None, None) => None,
    }
}

/// The arguments given for the addon asked for, parsed once against its schema (in the context
/// its render gives `parameter.rhai`).
fn given_args(
    ctx: &Inputs<'_>,
    package: &AddonPackage,
    request: &EnableRequest,
    stored: &Map<String, Value>,
    upgrade: bool,
    kubernetes_version: Option<&String>,
) -> Result<crate::params::Arguments> {
    let options = RenderOptions {
        namespace: ctx.namespace.to_owned(),
        args: Map::new(),
        stored_args: stored.clone(),
        upgrade,
        kubernetes_version: kubernetes_version.cloned(),
        clusters: request.args.clusters().map(<[String]>::to_vec),
    };
    let schema = ctx
        .renderer
        .parameter_schema_in(package, &options)
        .map_err(crate::Error::from)?;
    let given = request.args.parse(&schema).map_err(crate::Error::from)?;
    if let Some(path) = masked_secret(&Value::Object(given.to_map()), "", &schema) {
        return Err(Error::MaskedSecretGiven {
            addon: package.metadata.name.clone(),
            path,
        });
    }
    Ok(given)
}

/// The first secret parameter whose given value is the mask printed in its place: stored as it
/// is, it would replace the real secret.
fn masked_secret(
    value: &Value,
    path: &str,
    schema: &crate::params::ParameterSchema,
) -> Option<String> {
    let child = |key: &str| crate::params::dotted(path, key);
    match value {
        Value::String(s) if s == crate::render::MASK && schema.is_secret(path) => {
            Some(path.to_owned())
        }
        Value::Object(map) => map
            .iter()
            .find_map(|(key, v)| masked_secret(v, &child(key), schema)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| masked_secret(v, &child(&i.to_string()), schema)),
        _ => None,
    }
}

/// Whether the plan will be applied through KubeVela (the Application is stored and deployed by
/// KubeVela), as `enable` decides it.
async fn uses_vela(cluster: &Cluster, engine: EngineChoice) -> bool {
    match engine {
        EngineChoice::Direct => false,
        EngineChoice::Vela => true,
        EngineChoice::Auto => cluster.serves(&application_gvk()).await.unwrap_or(false),
    }
}

/// A warning for an addon whose `secret()` values end up in its Application, with the pattern
/// that keeps them out of it.
fn secrets_note(step: &Step) -> Option<String> {
    let paths = step.rendered.secrets_in_application();
    if paths.is_empty() {
        return None;
    }
    let listed: Vec<String> = paths.iter().map(|p| format!("`{p}`")).collect();
    Some(format!(
        "warning: addon `{}`: the value of secret parameter{} {} is written in plain text into the Application `{}`, which KubeVela stores and shows as it is; keep it in a Secret of its own (an `outputs` object of `template.rhai`) and refer to it by name (`secretKeyRef`, `secretName`) from the objects that need it (docs/authors/addon-format.md: \"Secrets with the vela engine\")",
        step.rendered.name,
        if paths.len() == 1 { "" } else { "s" },
        listed.join(", "),
        normalize::application_name(&step.rendered.name),
    ))
}

/// The most data a Secret or ConfigMap may hold (the API server's limit).
const MAX_DATA_BYTES: usize = 1024 * 1024;
/// The largest object the API server stores (etcd's default request limit).
const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// Refuses, before anything is written, an object the API server would reject for its size:
/// a Secret or ConfigMap holding more than [`MAX_DATA_BYTES`] (the argument Secret with large
/// `--set-file` values), or any object over [`MAX_OBJECT_BYTES`].
fn check_sizes(rendered: &Rendered) -> Result<()> {
    for object in rendered.objects() {
        let (kind, name) = crate::cluster::kind_and_name(&object);
        let name = name.unwrap_or_default();
        let data = data_bytes(&object);
        let total = serde_json::to_vec(&object).map_or(0, |bytes| bytes.len());
        let (size, limit, what) = if matches!(kind, "Secret" | "ConfigMap") && data > MAX_DATA_BYTES
        {
            (data, MAX_DATA_BYTES, "data")
        } else if total > MAX_OBJECT_BYTES {
            (total, MAX_OBJECT_BYTES, "object")
        } else {
            continue;
        };
        let hint = if rendered.args_secret.as_ref() == Some(&object) {
            "; the arguments are stored in it: pass smaller values (values files, `--set-file`)"
        } else {
            ""
        };
        return Err(Error::TooLarge {
            addon: rendered.name.clone(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            size,
            what,
            limit,
            hint,
        });
    }
    Ok(())
}

/// The bytes of a Secret's or ConfigMap's data (`data` decoded from base64 for a Secret,
/// `stringData`, `binaryData`).
fn data_bytes(object: &Value) -> usize {
    let secret = object.get("kind").and_then(Value::as_str) == Some("Secret");
    let mut total = 0;
    for (field, encoded) in [
        ("data", secret),
        ("stringData", false),
        ("binaryData", true),
    ] {
        let Some(map) = object.get(field).and_then(Value::as_object) else {
            continue;
        };
        for (key, value) in map {
            let text = value.as_str().map_or(0, str::len);
            total += key.len() + if encoded { text / 4 * 3 } else { text };
        }
    }
    total
}

/// The explicit list of cluster names among stored arguments, if any (stored arguments that do
/// not type are left to the render of the addon to refuse).
fn stored_clusters(stored: &Map<String, Value>) -> Option<Vec<String>> {
    crate::params::Arguments::from_map(stored.clone())
        .ok()?
        .clusters()
        .map(<[String]>::to_vec)
}

/// What the solver knows of an installed addon: its record, or for an addon installed by
/// KubeVela (no record) its labels, with no known dependencies, as if the user had asked for it.
pub fn installed_addon(addon: &Installed) -> InstalledAddon {
    InstalledAddon {
        name: addon.name.clone(),
        version: AddonVersion::parse(&addon.version),
        registry: addon.registry.clone(),
        installed_by: addon
            .record
            .as_ref()
            .map_or(InstalledBy::User, |r| r.installed_by),
        dependencies: addon
            .record
            .as_ref()
            .map(|r| {
                r.dependencies
                    .iter()
                    .map(|d| Dependency {
                        name: d.name.clone(),
                        version: d.version.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// What the solver's [`Platform`] is made of: Kubernetes' version (read already) and KubeVela's
/// (read when a candidate requires one).
struct PlatformInputs<'a> {
    kubernetes: Option<&'a str>,
    vela: &'a VelaVersion<'a>,
}

impl PlatformInputs<'_> {
    /// The platform `universe`'s candidates are checked against: KubeVela's version is read
    /// only when one of them has a `system.vela` requirement.
    async fn of(&self, universe: &Universe) -> Platform {
        let vela = if universe.requires_vela() {
            self.vela.get().await
        } else {
            None
        };
        Platform::new(self.kubernetes, vela)
    }
}

/// KubeVela's version ([`vela_version`]), read at most once per plan and only when asked for.
pub struct VelaVersion<'a> {
    cluster: &'a Cluster,
    namespace: &'a str,
    read: tokio::sync::OnceCell<Option<String>>,
}

impl<'a> VelaVersion<'a> {
    /// Nothing is read yet.
    pub fn new(cluster: &'a Cluster, namespace: &'a str) -> Self {
        VelaVersion {
            cluster,
            namespace,
            read: tokio::sync::OnceCell::new(),
        }
    }

    /// The version (`None`: KubeVela is not installed), read on the first call.
    pub async fn get(&self) -> Option<&str> {
        self.read
            .get_or_init(|| vela_version(self.cluster, self.namespace))
            .await
            .as_deref()
    }
}

/// KubeVela's version: the image tag of the vela-core Deployment in the system namespace;
/// `None` when KubeVela is not installed or the Deployment cannot be read. A control plane that
/// does not serve KubeVela's Application does not run KubeVela: no Deployment is looked for.
pub async fn vela_version(cluster: &Cluster, namespace: &str) -> Option<String> {
    if let Ok(false) = cluster.serves(&application_gvk()).await {
        return None;
    }
    let gvk = GroupVersionKind::gvk("apps", "v1", "Deployment");
    let listed = cluster
        .list(&gvk, Some(namespace), "app.kubernetes.io/name=vela-core")
        .await;
    let mut deployments: Vec<Value> = match listed {
        Ok(list) => list.iter().map(to_value).collect(),
        Err(e) => {
            tracing::debug!("cannot read KubeVela's version: {e}");
            return None;
        }
    };
    if deployments.is_empty() {
        if let Ok(Some(found)) = cluster
            .get(&gvk, Some(namespace), "kubevela-vela-core")
            .await
        {
            deployments.push(to_value(&found));
        }
    }
    deployments.iter().find_map(image_tag)
}

/// The tag of a Deployment's KubeVela container image (`oamdev/vela-core:v1.9.7` → `v1.9.7`).
fn image_tag(deployment: &Value) -> Option<String> {
    let containers = deployment
        .pointer("/spec/template/spec/containers")?
        .as_array()?;
    let container = containers
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some("kubevela"))
        .or_else(|| containers.first())?;
    let image = container.get("image")?.as_str()?;
    let image = image.split('@').next().unwrap_or(image);
    let (_, tag) = image.rsplit_once(':')?;
    (!tag.is_empty() && !tag.contains('/')).then(|| tag.to_owned())
}
