//! What keeps `disable` from breaking what is still in use, and `disable --prune-dependencies`.
//!
//! Expected flow: [`super::disable_all`] finds the addons to remove (the addon, plus with
//! `--prune-dependencies` the dependencies nothing else needs any more, from
//! [`crate::resolve::prunable_after_removing`]), checks all of them before removing any ([`check`]),
//! then disables them one by one, the addon first and each dependency after what needed it.
//!
//! [`check`] refuses (unless `--force`) while an installed addon outside the removal depends on
//! one of them (its record says so), while Applications use their definitions, or while custom
//! resources of the CRDs they created still exist on a cluster they target (a few are named).
//! Clusters that cannot be reached are not checked: nothing can be deleted there either, and the
//! next `disable` checks them again.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt as _;
use kube::api::{DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

use super::direct;
use crate::apply::Applier;
use crate::cluster::Cluster;
use crate::model::wire::{application_gvk, application_name, LOCAL_CLUSTER};
use crate::state::{clusters_of, to_value, Installed};
use crate::{Error, Result};

/// How many custom resources an error names.
const SHOWN: usize = 5;

/// Refuses the removal of `removal` while something outside it still needs one of them. The
/// removal is judged as a whole: what its own addons apply (their Applications, their custom
/// resources) goes with them and does not count.
pub(super) async fn check(
    ctx: &Applier<'_>,
    all: &BTreeMap<String, Installed>,
    removal: &[String],
) -> Result<()> {
    let removing: BTreeSet<&str> = removal.iter().map(String::as_str).collect();
    let mut problems: Vec<String> = Vec::new();
    for name in removal {
        let Some(addon) = all.get(name) else {
            continue;
        };
        let dependents: Vec<String> = all
            .values()
            .filter(|other| !removing.contains(other.name.as_str()))
            .filter_map(|other| {
                let dependency = other
                    .record
                    .as_ref()?
                    .dependencies
                    .iter()
                    .find(|d| &d.name == name)?;
                Some(match &dependency.version {
                    Some(constraint) => format!("`{}` (needs `{name} {constraint}`)", other.name),
                    None => format!("`{}`", other.name),
                })
            })
            .collect();
        if !dependents.is_empty() {
            problems.push(format!(
                "addon `{name}` is needed by {}; disable them first",
                dependents.join(", ")
            ));
        }
        let users = applications_using_definitions(ctx, addon, &removing).await?;
        if !users.is_empty() {
            problems.push(format!(
                "Applications use the definitions of addon `{name}`: {}; delete them first",
                users.join(", ")
            ));
        }
        let resources = custom_resources(ctx, addon, &removal_of(all, &removing)).await?;
        if !resources.is_empty() {
            problems.push(format!(
                "custom resources of the CRDs of addon `{name}` still exist: {}; delete them first",
                resources.join(", ")
            ));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    // Only dependencies being pruned are in use: the addon alone can go.
    if let Some((root, pruned)) = removal.split_first() {
        let root_blamed = problems
            .iter()
            .any(|p| p.contains(&format!("addon `{root}`")));
        if !pruned.is_empty() && !root_blamed {
            problems.push(format!(
                "(without `--prune-dependencies`, `{root}` is disabled and its dependencies stay)"
            ));
        }
    }
    Err(Error::InUse { problems })
}

/// The installed addons of the removal.
fn removal_of<'a>(
    all: &'a BTreeMap<String, Installed>,
    removing: &BTreeSet<&str>,
) -> Vec<&'a Installed> {
    all.values()
        .filter(|a| removing.contains(a.name.as_str()))
        .collect()
}

/// The CRDs an addon created, per cluster: those its record lists on the control plane and on
/// each cluster it dispatched to (only those addonctl created: the others stay), and those of
/// its Application's components on the clusters the Application targets.
fn crds_by_cluster(addon: &Installed, joined: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let local = LOCAL_CLUSTER.to_owned();
    if let Some(record) = &addon.record {
        for object in &record.inventory {
            if object.kind == "CustomResourceDefinition" {
                out.entry(local.clone())
                    .or_default()
                    .insert(object.name.clone());
            }
        }
        for (cluster, inventory) in &record.dispatched {
            for object in inventory.objects.iter().filter(|o| o.created) {
                if object.object.kind == "CustomResourceDefinition" {
                    out.entry(cluster.clone())
                        .or_default()
                        .insert(object.object.name.clone());
                }
            }
        }
    }
    if let Some(app) = &addon.application {
        let crds: Vec<String> = crate::plan::inventory::component_objects(app)
            .iter()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
            .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        if !crds.is_empty() {
            let args = serde_json::Map::new();
            let mut clusters = clusters_of(Some(app), &args);
            if clusters.iter().any(|c| c == "*") {
                clusters = std::iter::once(local.clone())
                    .chain(joined.iter().cloned())
                    .collect();
            }
            for cluster in clusters {
                out.entry(cluster).or_default().extend(crds.iter().cloned());
            }
        }
    }
    out
}

/// The objects an addon applied itself, per cluster, as `(kind, namespace, name)`: disable
/// deletes them before its CRDs, so they do not count as custom resources left behind.
fn own_objects(addon: &Installed) -> BTreeSet<(String, String, Option<String>, String)> {
    let mut out = BTreeSet::new();
    if let Some(record) = &addon.record {
        for (cluster, inventory) in &record.dispatched {
            for object in &inventory.objects {
                out.insert((
                    cluster.clone(),
                    object.object.kind.clone(),
                    object.object.namespace.clone(),
                    object.object.name.clone(),
                ));
            }
        }
    }
    out
}

/// Up to [`SHOWN`] custom resources of the addon's CRDs that no addon of the removal applied
/// itself, as `Kind ns/name on cluster `c``.
async fn custom_resources(
    ctx: &Applier<'_>,
    addon: &Installed,
    removal: &[&Installed],
) -> Result<Vec<String>> {
    let joined: Vec<String> = if addon.application.is_some() {
        ctx.state()
            .joined()
            .await?
            .into_iter()
            .map(|(info, _)| info.name)
            .collect()
    } else {
        Vec::new()
    };
    let wanted = crds_by_cluster(addon, &joined);
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut own = own_objects(addon);
    for other in removal {
        own.extend(own_objects(other));
    }
    let names: BTreeSet<String> = wanted.keys().cloned().collect();
    let clients = ctx.state().clients(&names).await?;
    // Every CRD at once (bounded): each first list of a kind can cost the API server the
    // set-up of its storage, ~25 ms, which one after the other would add up per CRD.
    let checks: Vec<(&String, &String)> = wanted
        .iter()
        .filter(|(cluster_name, _)| matches!(clients.get(*cluster_name), Some(Ok(_))))
        .flat_map(|(cluster_name, crds)| crds.iter().map(move |crd| (cluster_name, crd)))
        .collect();
    let listings: Vec<Result<Resources>> = futures::stream::iter(&checks)
        .map(|&(cluster_name, crd)| {
            let owned = own.iter().filter(|(c, ..)| c == cluster_name).count();
            let client = clients.get(cluster_name);
            async move {
                match client {
                    Some(Ok(cluster)) => resources_of(cluster, crd, SHOWN + owned).await,
                    _ => Ok(Vec::new()),
                }
            }
        })
        .buffered(crate::state::clusters::OBJECT_CONCURRENCY)
        .collect()
        .await;
    let mut found = Vec::new();
    for (&(cluster_name, _), listing) in checks.iter().zip(listings) {
        let items = match listing {
            Ok(items) => items,
            Err(Error::Cluster(e)) if !e.kind().is_user() => {
                tracing::warn!("cannot check custom resources on cluster `{cluster_name}`: {e}");
                continue;
            }
            Err(e) => return Err(e),
        };
        found.extend(
            items
                .into_iter()
                .filter(|(kind, namespace, name)| {
                    !own.contains(&(
                        cluster_name.clone(),
                        kind.clone(),
                        namespace.clone(),
                        name.clone(),
                    ))
                })
                .map(|(kind, namespace, name)| match namespace {
                    Some(ns) => format!("{kind} `{ns}/{name}` on cluster `{cluster_name}`"),
                    None => format!("{kind} `{name}` on cluster `{cluster_name}`"),
                }),
        );
        if found.len() >= SHOWN {
            found.truncate(SHOWN);
            break;
        }
    }
    Ok(found)
}

/// Custom resources, each as `(kind, namespace, name)`.
type Resources = Vec<(String, Option<String>, String)>;

/// Up to `limit` objects of a CRD's kind, in every namespace: `(kind, namespace, name)`.
async fn resources_of(cluster: &Cluster, crd: &str, limit: usize) -> Result<Resources> {
    let crd_gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let Some(object) = cluster.get(&crd_gvk, None, crd).await? else {
        return Ok(Vec::new());
    };
    let object = to_value(&object);
    let Some(gvk) = direct::served_kind(&object) else {
        return Ok(Vec::new());
    };
    let Some((resource, _)) = cluster.resource(&gvk).await? else {
        return Ok(Vec::new());
    };
    let api: kube::Api<DynamicObject> = kube::Api::all_with(cluster.client().clone(), &resource);
    let limit = u32::try_from(limit).unwrap_or(u32::MAX);
    let list = api
        .list(&ListParams::default().limit(limit))
        .await
        .map_err(|e| Error::Uncheckable {
            crd: crd.to_string(),
            cluster: cluster.name().to_owned(),
            reason: e.to_string(),
        })?;
    Ok(list
        .items
        .into_iter()
        .map(|item| {
            (
                gvk.kind.clone(),
                item.metadata.namespace,
                item.metadata.name.unwrap_or_default(),
            )
        })
        .collect())
}

/// Applications (in any namespace, except those of the addons being removed) whose components, traits, policies
/// or workflow steps use a definition of the addon.
async fn applications_using_definitions(
    ctx: &Applier<'_>,
    addon: &Installed,
    removing: &BTreeSet<&str>,
) -> Result<Vec<String>> {
    let Some(record) = &addon.record else {
        return Ok(Vec::new());
    };
    let definitions: BTreeMap<&str, &str> = record
        .inventory
        .iter()
        .filter(|o| o.kind.ends_with("Definition") && o.api_version.starts_with("core.oam.dev/"))
        .map(|o| (o.name.as_str(), o.kind.as_str()))
        .collect();
    if definitions.is_empty() {
        return Ok(Vec::new());
    }
    // The Applications of the addons being removed go with them.
    let own: BTreeSet<String> = removing
        .iter()
        .chain(std::iter::once(&addon.name.as_str()))
        .map(|name| application_name(name))
        .collect();
    let apps = ctx.cluster.list(&application_gvk(), None, "").await?;
    let mut users = Vec::new();
    for app in apps {
        let value = to_value(&app);
        let app_name = app.metadata.name.clone().unwrap_or_default();
        let app_ns = app.metadata.namespace.clone().unwrap_or_default();
        if own.contains(&app_name) && app_ns == ctx.namespace {
            continue;
        }
        let mut types = BTreeSet::new();
        for pointer in ["/spec/components", "/spec/policies", "/spec/workflow/steps"] {
            for item in value
                .pointer(pointer)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                types.extend(item.get("type").and_then(Value::as_str));
                for t in item
                    .get("traits")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    types.extend(t.get("type").and_then(Value::as_str));
                }
            }
        }
        let used: Vec<&str> = types
            .iter()
            .filter(|t| definitions.contains_key(*t))
            .copied()
            .collect();
        if !used.is_empty() {
            users.push(format!("`{app_ns}/{app_name}` (uses {})", used.join(", ")));
        }
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::fake::FakeApi;
    use crate::context::{Context, Settings};
    use crate::state::record::Record;

    fn installed(name: &str, record: serde_json::Value) -> (String, Installed) {
        let mut record = record;
        record["name"] = json!(name);
        for (key, value) in [
            ("version", json!("1.0.0")),
            ("registry", json!("local")),
            ("installedBy", json!("user")),
            ("argsHash", json!("")),
            ("application", json!(false)),
        ] {
            record[key] = value;
        }
        let record: Record = serde_json::from_value(record).unwrap();
        let addon = Installed {
            name: name.to_owned(),
            version: "1.0.0".to_owned(),
            registry: "local".to_owned(),
            application: None,
            record: Some(record),
        };
        (name.to_owned(), addon)
    }

    /// `base` provides the component type `worker`; `top` depends on `base`.
    fn addons() -> BTreeMap<String, Installed> {
        BTreeMap::from([
            installed(
                "base",
                json!({"inventory": [{"apiVersion": "core.oam.dev/v1beta1",
                    "kind": "ComponentDefinition", "namespace": "vela-system", "name": "worker"}]}),
            ),
            installed(
                "top",
                json!({"dependencies": [{"name": "base", "version": ">=1.0.0"}]}),
            ),
        ])
    }

    fn api(applications: Vec<serde_json::Value>) -> FakeApi {
        FakeApi::default()
            .serves("core.oam.dev/v1beta1", "applications", "Application")
            .on(
                "GET",
                "/apis/core.oam.dev/v1beta1/applications",
                200,
                json!({"apiVersion": "core.oam.dev/v1beta1", "kind": "ApplicationList",
                       "metadata": {}, "items": applications}),
            )
    }

    fn context(api: &FakeApi) -> Context {
        Context::with_cluster(&Settings::new("vela-system"), api.cluster("local")).unwrap()
    }

    #[tokio::test]
    async fn disable_is_refused_while_a_dependent_is_installed_and_an_application_uses_a_definition(
    ) {
        let api = api(vec![json!({
            "apiVersion": "core.oam.dev/v1beta1", "kind": "Application",
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {"components": [{"name": "w", "type": "worker"}]},
        })]);
        let ctx = context(&api);

        let error = check(&ctx.applier(), &addons(), &["base".to_owned()])
            .await
            .unwrap_err();

        let message = error.to_string();
        assert!(matches!(error, Error::InUse { .. }), "{message}");
        assert!(
            message.contains("addon `base` is needed by `top` (needs `base >=1.0.0`)"),
            "{message}"
        );
        assert!(message.contains("`team/web` (uses worker)"), "{message}");
        assert!(message.contains("pass `--force`"), "{message}");
    }

    #[tokio::test]
    async fn a_removal_is_judged_whole_the_applications_it_deletes_do_not_count() {
        let top_app = |namespace: &str| {
            json!({
                "apiVersion": "core.oam.dev/v1beta1", "kind": "Application",
                "metadata": {"name": "addon-top", "namespace": namespace},
                "spec": {"components": [{"name": "w", "type": "worker"}]},
            })
        };
        let api = api(vec![top_app("vela-system")]);
        let ctx = context(&api);

        // `disable top --prune-dependencies`: `top`'s own Application goes with it.
        check(
            &ctx.applier(),
            &addons(),
            &["top".to_owned(), "base".to_owned()],
        )
        .await
        .unwrap();

        // An Application of the same name elsewhere is someone else's: refused, and the advice
        // is to keep the dependency, not `--force` alone.
        let api = super::tests::api(vec![top_app("team")]);
        let ctx = context(&api);
        let message = check(
            &ctx.applier(),
            &addons(),
            &["top".to_owned(), "base".to_owned()],
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            message.contains("`team/addon-top` (uses worker)"),
            "{message}"
        );
        assert!(
            message.contains("without `--prune-dependencies`, `top` is disabled"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn disabling_an_addon_with_what_depends_on_it_and_no_users_is_allowed() {
        let api = api(vec![json!({
            "apiVersion": "core.oam.dev/v1beta1", "kind": "Application",
            "metadata": {"name": "other", "namespace": "team"},
            "spec": {"components": [{"name": "w", "type": "webservice"}]},
        })]);
        let ctx = context(&api);

        check(
            &ctx.applier(),
            &addons(),
            &["base".to_owned(), "top".to_owned()],
        )
        .await
        .unwrap();

        // The Applications were read (once, for the one addon with definitions).
        let lists = api
            .requests()
            .iter()
            .filter(|r| *r == "GET /apis/core.oam.dev/v1beta1/applications")
            .count();
        assert_eq!(lists, 1, "{:?}", api.requests());
    }
}
