//! Dependency resolution, safe disable and upgrade, and the API inventory, against real API
//! servers (see `support::k8s`). Each fixture addon version is a local registry of its own; the
//! directories all carry the registry name `local`, so the solver sees every version of an
//! addon in one registry.

use addonctl::context::NoopReporter;
use addonctl::plan::EnableRequest;
use addonctl::state::record::InstalledBy;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{pool_label, release_pods_on, server_version, Env, Kind, Sandbox};

/// One version of a fixture addon: `dependencies` with constraints and the objects of one
/// `k8s-objects` component.
struct Spec {
    name: String,
    version: String,
    dependencies: Vec<(String, Option<String>)>,
    objects: Vec<Value>,
    component_type: Option<String>,
    metadata: String,
}

fn addon(name: &str, version: &str) -> Spec {
    Spec {
        name: name.to_owned(),
        version: version.to_owned(),
        dependencies: Vec::new(),
        objects: Vec::new(),
        component_type: None,
        metadata: String::new(),
    }
}

impl Spec {
    fn needs(mut self, name: &str, constraint: &str) -> Self {
        self.dependencies
            .push((name.to_owned(), Some(constraint.to_owned())));
        self
    }

    fn object(mut self, object: Value) -> Self {
        self.objects.push(object);
        self
    }

    /// More `metadata.yaml` (e.g. `system:` or `deployTo:`).
    fn metadata(mut self, yaml: &str) -> Self {
        self.metadata.push_str(yaml);
        self
    }

    /// A second component of this type (a KubeVela definition).
    fn component_of_type(mut self, component_type: &str) -> Self {
        self.component_type = Some(component_type.to_owned());
        self
    }

    fn write(self) -> TestAddon {
        let [(_, metadata), (_, template)] = self.files();
        TestAddon::new(&self.name)
            .file("metadata.yaml", &metadata)
            .file("template.yaml", &template)
    }

    /// Writes the addon into `dir` (a directory of a registry of several addons).
    fn write_into(self, dir: &std::path::Path) {
        std::fs::create_dir_all(dir).unwrap();
        for (path, text) in self.files() {
            std::fs::write(dir.join(path), text).unwrap();
        }
    }

    /// `metadata.yaml` and `template.yaml`.
    fn files(&self) -> [(&'static str, String); 2] {
        let mut metadata = format!(
            "name: {}\nversion: {}\ndescription: Fixture addon {}\n",
            self.name, self.version, self.name
        );
        if !self.dependencies.is_empty() {
            metadata.push_str("dependencies:\n");
            for (name, constraint) in &self.dependencies {
                metadata.push_str(&format!("  - name: {name}\n"));
                if let Some(constraint) = constraint {
                    metadata.push_str(&format!("    version: \"{constraint}\"\n"));
                }
            }
        }
        metadata.push_str(&self.metadata);
        let mut objects = self.objects.clone();
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": format!("{}-marker", self.name)},
            "data": {"version": self.version},
        }));
        let mut components = vec![json!({
            "name": format!("{}-objects", self.name),
            "type": "k8s-objects",
            "properties": {"objects": objects},
        })];
        if let Some(component_type) = &self.component_type {
            components.push(json!({"name": "extra", "type": component_type, "properties": {}}));
        }
        let template = json!({
            "apiVersion": "core.oam.dev/v1beta1",
            "kind": "Application",
            "metadata": {"name": self.name, "namespace": "vela-system"},
            "spec": {"components": components},
        });
        [
            ("metadata.yaml", metadata),
            ("template.yaml", serde_yaml::to_string(&template).unwrap()),
        ]
    }
}

fn request(reference: &str) -> EnableRequest {
    EnableRequest {
        reference: reference.to_owned(),
        ..EnableRequest::default()
    }
}

async fn enable(
    sb: &Sandbox,
    reference: &str,
) -> addonctl::Result<Vec<addonctl::apply::StepReport>> {
    addonctl::apply::enable(&sb.ctx, &request(reference), &NoopReporter).await
}

fn run(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let output = cmd.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `top` → `middle >=1.0.0` → `base ^1.0`, with `base` at 1.0.0, 1.4.0 and 2.0.0.
fn chain() -> Vec<TestAddon> {
    vec![
        addon("top", "1.0.0").needs("middle", ">=1.0.0").write(),
        addon("middle", "1.0.0").needs("base", "^1.0").write(),
        addon("base", "1.0.0").write(),
        addon("base", "1.4.0").write(),
        addon("base", "2.0.0").write(),
    ]
}

async fn record_version(sb: &Sandbox, name: &str) -> Option<(String, InstalledBy)> {
    let secret = sb
        .get(Kind::SECRET, &format!("addon-record-{name}"))
        .await?;
    let record = addonctl::state::record::Record::from_secret(&secret)?;
    Some((record.version, record.installed_by))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_of_three_is_planned_in_layers_and_enabled_dependencies_first() {
    let addons = chain();
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&addons.iter().collect::<Vec<_>>());

    let (code, out, err) = run(sb.cli().args(["enable", "top", "--dry-run", "-o", "json"]));
    assert_eq!(code, 0, "{err}");
    let plan: Value = serde_json::from_str(&out).unwrap();
    let steps: Vec<(String, String, u64, Value)> = plan["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["version"].as_str().unwrap().to_owned(),
                s["layer"].as_u64().unwrap(),
                s["neededBy"].clone(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("base".into(), "1.4.0".into(), 0, json!(["middle"])),
            ("middle".into(), "1.0.0".into(), 1, json!(["top"])),
            ("top".into(), "1.0.0".into(), 2, json!([])),
        ]
    );
    assert!(
        sb.get(Kind::NAMESPACE, sb.ns()).await.is_none(),
        "a dry run applies nothing"
    );

    let reports = enable(&sb, "top").await.unwrap();

    let order: Vec<(&str, &str)> = reports
        .iter()
        .map(|r| (r.name.as_str(), r.version.as_str()))
        .collect();
    assert_eq!(
        order,
        [("base", "1.4.0"), ("middle", "1.0.0"), ("top", "1.0.0")]
    );
    assert_eq!(
        record_version(&sb, "base").await,
        Some(("1.4.0".into(), InstalledBy::Dependency))
    );
    assert_eq!(
        record_version(&sb, "middle").await,
        Some(("1.0.0".into(), InstalledBy::Dependency))
    );
    assert_eq!(
        record_version(&sb, "top").await,
        Some(("1.0.0".into(), InstalledBy::User))
    );
    let app = sb.get(Kind::APPLICATION, "addon-base").await.unwrap();
    assert_eq!(app["metadata"]["labels"]["addons.oam.dev/version"], "1.4.0");

    // Enabling again keeps what is installed and applies only the addon asked for.
    let plan = addonctl::plan::plan(&sb.ctx.planner(), &request("top"), false)
        .await
        .unwrap();
    let kept: Vec<&str> = plan.kept.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(kept, ["base", "middle"]);
    let steps: Vec<&str> = plan
        .steps
        .iter()
        .map(|s| s.rendered.name.as_str())
        .collect();
    assert_eq!(steps, ["top"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn conflicting_constraints_are_explained_and_nothing_is_applied() {
    let addons = [
        addon("picky", "1.0.0")
            .needs("left", "*")
            .needs("right", "*")
            .write(),
        addon("left", "1.0.0").needs("shared", ">=2.0.0").write(),
        addon("right", "1.0.0").needs("shared", "<2.0.0").write(),
        addon("shared", "1.5.0").write(),
        addon("shared", "2.1.0").write(),
    ];
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&addons.iter().collect::<Vec<_>>());

    let (code, _, err) = run(sb.cli().args(["enable", "picky"]));

    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot enable `picky`"), "{err}");
    assert!(err.contains("`shared >=2.0.0`"), "{err}");
    assert!(err.contains("`shared <2.0.0`"), "{err}");
    assert!(sb.get(Kind::NAMESPACE, sb.ns()).await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn disable_refuses_while_dependents_need_it_and_prunes_what_nothing_needs() {
    let addons = [
        addon("top", "1.0.0").needs("middle", ">=1.0.0").write(),
        addon("middle", "1.0.0").needs("base", "^1.0").write(),
        addon("extra", "1.0.0").needs("base", ">=1.0.0").write(),
        addon("base", "1.0.0").write(),
    ];
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&addons.iter().collect::<Vec<_>>());
    enable(&sb, "top").await.unwrap();
    enable(&sb, "extra").await.unwrap();

    let (code, _, err) = run(sb.cli().args(["disable", "middle"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("addon `middle` is needed by `top` (needs `middle >=1.0.0`)"),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert!(record_version(&sb, "middle").await.is_some());

    let (code, out, err) =
        run(sb
            .cli()
            .args(["disable", "top", "--prune-dependencies", "-o", "json"]));
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["name"], "top");
    let pruned: Vec<&str> = report["pruned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(pruned, ["middle"], "`base` is still needed by `extra`");
    assert!(record_version(&sb, "top").await.is_none());
    assert!(record_version(&sb, "middle").await.is_none());
    assert!(sb.get(Kind::APPLICATION, "addon-middle").await.is_none());
    assert!(record_version(&sb, "base").await.is_some());

    let (code, out, err) = run(sb.cli().args(["disable", "extra", "--prune-dependencies"]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("addon `base` disabled (a dependency nothing needs any more)"),
        "{out}"
    );
    assert!(record_version(&sb, "base").await.is_none());
    assert!(sb.get(Kind::APPLICATION, "addon-base").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_addon_the_user_asked_for_is_never_pruned() {
    let addons = [
        addon("app", "1.0.0").needs("lib", "*").write(),
        addon("lib", "1.0.0").write(),
    ];
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&addons.iter().collect::<Vec<_>>());
    enable(&sb, "lib").await.unwrap();
    enable(&sb, "app").await.unwrap();
    assert_eq!(
        record_version(&sb, "lib").await,
        Some(("1.0.0".into(), InstalledBy::User)),
        "asked for first, so it stays the user's"
    );

    let reports =
        addonctl::apply::disable_all(&sb.ctx.applier(), "app", false, true, &NoopReporter)
            .await
            .unwrap();

    assert_eq!(reports.len(), 1);
    assert!(record_version(&sb, "lib").await.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn upgrade_is_refused_when_an_installed_dependent_constraint_breaks() {
    let addons = [
        addon("dash", "1.0.0").needs("op", "<2.0.0").write(),
        addon("op", "1.0.0").write(),
        addon("op", "2.0.0").write(),
    ];
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&addons.iter().collect::<Vec<_>>());
    enable(&sb, "dash").await.unwrap();
    assert_eq!(
        record_version(&sb, "op").await.map(|r| r.0).as_deref(),
        Some("1.0.0"),
        "the highest version matching `<2.0.0`"
    );

    for how in [["--latest", ""], ["--version", "2.0.0"]] {
        let mut args = vec!["upgrade", "op"];
        args.extend(how.iter().filter(|a| !a.is_empty()));
        let (code, _, err) = run(sb.cli().args(&args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("`op 2.0.0` would break installed addons that depend on `op`"),
            "{err}"
        );
        assert!(err.contains("`dash 1.0.0` needs `op <2.0.0`"), "{err}");
    }
    assert_eq!(
        record_version(&sb, "op").await.map(|r| r.0).as_deref(),
        Some("1.0.0")
    );
    // `enable op` would move it to the newest version too: refused the same way.
    let error = enable(&sb, "op").await.unwrap_err();
    assert!(error.is_user_error());
    assert!(error.to_string().contains("would break"), "{error}");
}

/// A CRD of kind `Gadget` in a group unique to the sandbox.
fn gadget_crd(group: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

fn gadget(group: &str, name: &str) -> Value {
    json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget", "metadata": {"name": name}})
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_of_an_api_nobody_provides_are_refused_naming_the_addon_that_provides_it() {
    let sb = Sandbox::with_kubevela().await;
    let group = format!("{}.deps.example", sb.ns());
    let addons = [
        addon("gadget-user", "1.0.0")
            .object(gadget(&group, "g1"))
            .write(),
        addon("gadget-kit", "1.0.0")
            .object(gadget_crd(&group))
            .write(),
        addon("gadget-fan", "1.0.0")
            .needs("gadget-kit", "*")
            .object(gadget(&group, "g2"))
            .write(),
        addon("mystery", "1.0.0")
            .component_of_type("mystery-type")
            .write(),
    ];
    let sb = sb.registries(&addons.iter().collect::<Vec<_>>());

    let error = enable(&sb, "gadget-user").await.unwrap_err();
    let message = error.to_string();
    assert!(error.is_user_error(), "{error:?}");
    assert!(
        message.contains(&format!("`gadget-user` uses `{group}/v1 Gadget`")),
        "{message}"
    );
    assert!(
        message.contains(
            "provided by `gadget-kit` (registry `local`): add `gadget-kit` to the dependencies of `gadget-user`"
        ),
        "{message}"
    );
    assert!(
        sb.get(Kind::NAMESPACE, sb.ns()).await.is_none(),
        "nothing applied"
    );

    // Declaring the dependency makes the plan provide the API.
    let plan = addonctl::plan::plan(&sb.ctx.planner(), &request("gadget-fan"), false)
        .await
        .unwrap();
    let names: Vec<&str> = plan
        .steps
        .iter()
        .map(|s| s.rendered.name.as_str())
        .collect();
    assert_eq!(names, ["gadget-kit", "gadget-fan"]);

    // A component type no definition, built-in or addon provides.
    let (code, _, err) = run(sb.cli().args(["enable", "mystery"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`mystery` uses ComponentDefinition `mystery-type`"),
        "{err}"
    );
    assert!(
        err.contains("no addon in the registries provides it"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn disable_refuses_while_custom_resources_of_its_crds_exist() {
    let sb = Sandbox::without_kubevela().await;
    let group = format!("{}.deps.example", sb.ns());
    let kit = addon("gadget-kit", "1.0.0")
        .object(gadget_crd(&group))
        .write();
    let sb = sb.registries(&[&kit]);
    sb.clean_up_on(
        sb.cluster,
        Kind::CUSTOM_RESOURCE_DEFINITION,
        None,
        &format!("gadgets.{group}"),
    );
    enable(&sb, "gadget-kit").await.unwrap();
    let mut cr = gadget(&group, "precious");
    cr["metadata"]["namespace"] = json!(sb.ns());
    sb.api().apply(&cr, sb.ns()).await.unwrap();

    let (code, _, err) = run(sb.cli().args(["disable", "gadget-kit"]));

    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "custom resources of the CRDs of addon `gadget-kit` still exist: Gadget `{}/precious` on cluster `local`",
            sb.ns()
        )),
        "{err}"
    );
    let crd = Kind::CUSTOM_RESOURCE_DEFINITION;
    let stored = sb.get(crd, &format!("gadgets.{group}")).await.unwrap();
    assert!(stored["metadata"]["deletionTimestamp"].is_null());

    sb.api()
        .delete(
            &addonctl::cluster::gvk_of(&cr).unwrap(),
            Some(sb.ns()),
            "precious",
        )
        .await
        .unwrap();
    let (code, _, err) = run(sb.cli().args(["disable", "gadget-kit"]));
    assert_eq!(code, 0, "{err}");
    // The server finishes deleting a CRD in the background.
    let left = sb.get(crd, &format!("gadgets.{group}")).await;
    assert!(
        left.is_none_or(|c| !c["metadata"]["deletionTimestamp"].is_null()),
        "the CRD is deleted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn system_requirements_name_the_addon_the_requirement_and_the_actual_version() {
    // One minor version past the server's.
    let actual = server_version(Env::get().control_plane()).await;
    let mut parts = actual.trim_start_matches('v').split('.');
    let mut number = || parts.next().unwrap().parse::<u64>().unwrap();
    let (major, minor) = (number(), number());
    let newer = format!(">={major}.{}.0", minor + 1);
    let addons = [
        addon("needs-new-vela", "1.0.0")
            .metadata("system:\n  vela: \">=1.10.0\"\n")
            .write(),
        addon("needs-new-kube", "1.0.0")
            .metadata(&format!("system:\n  kubernetes: \"{newer}\"\n"))
            .write(),
        addon("wants-kube-needs", "1.0.0")
            .needs("needs-new-kube", "*")
            .write(),
    ];
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&addons.iter().collect::<Vec<_>>());

    // KubeVela not installed: its version is unknown.
    let error = enable(&sb, "needs-new-vela").await.unwrap_err().to_string();
    assert!(
        error.contains("`needs-new-vela 1.0.0` requires KubeVela `>=1.10.0`"),
        "{error}"
    );
    // KubeVela's version is the vela-core Deployment's image tag.
    sb.api()
        .create_if_missing(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sb.ns()}}),
        )
        .await
        .unwrap();
    sb.api()
        .apply(
            &json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "kubevela-vela-core",
                    "namespace": sb.ns(),
                    "labels": {"app.kubernetes.io/name": "vela-core"},
                },
                "spec": {
                    "replicas": 0,
                    "selector": {"matchLabels": {"app": "vela-core"}},
                    "template": {
                        "metadata": {"labels": {"app": "vela-core"}},
                        "spec": {"containers": [
                            {"name": "kubevela", "image": "oamdev/vela-core:v1.9.7"}
                        ]},
                    },
                },
            }),
            sb.ns(),
        )
        .await
        .unwrap();
    let error = enable(&sb, "needs-new-vela").await.unwrap_err().to_string();
    assert!(
        error.contains("requires KubeVela `>=1.10.0`") && error.contains("v1.9.7"),
        "{error}"
    );
    assert!(error.contains("--skip-version-check"), "{error}");

    // A dependency's requirement fails the plan of the addon that needs it.
    let (code, _, err) = run(sb.cli().args(["enable", "wants-kube-needs"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "`needs-new-kube 1.0.0` requires Kubernetes `{newer}`"
        )),
        "{err}"
    );
    assert!(
        err.contains(actual.trim_start_matches('v')),
        "no `{actual}`: {err}"
    );

    // The stand-in KubeVela has none of its built-in definitions: the API check would miss
    // `k8s-objects`.
    let (code, _, err) = run(sb.cli().args([
        "enable",
        "wants-kube-needs",
        "--skip-version-check",
        "--skip-api-check",
        "--dry-run",
    ]));
    assert_eq!(code, 0, "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dependency_goes_to_the_union_of_the_clusters_of_the_addons_that_need_it() {
    let addons = [
        addon("east-app", "1.0.0").needs("agent", "*").write(),
        addon("west-app", "1.0.0").needs("agent", "*").write(),
        addon("agent", "1.0.0")
            .metadata("deployTo:\n  runtimeCluster: true\n")
            .write(),
    ];
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&addons.iter().collect::<Vec<_>>());
    sb.join("east", crate::support::k8s::Env::get().managed_n(1), &[])
        .await;
    sb.join("west", crate::support::k8s::Env::get().managed_n(2), &[])
        .await;

    sb.enable("east-app", json!({"clusters": ["east"]}))
        .await
        .unwrap();
    assert_eq!(
        sb.stored_args("agent").await,
        Some(json!({"clusters": ["east"]}))
    );

    let plan = addonctl::plan::plan(
        &sb.ctx.planner(),
        &EnableRequest {
            reference: "west-app".into(),
            args: crate::support::k8s::args(json!({"clusters": ["west"]})).into(),
            ..EnableRequest::default()
        },
        false,
    )
    .await
    .unwrap();
    let agent = plan
        .steps
        .iter()
        .find(|s| s.rendered.name == "agent")
        .expect("the agent is applied again, wider");
    assert_eq!(agent.action, addonctl::plan::Action::Upgrade);
    assert_eq!(
        agent.clusters.as_deref(),
        Some(&["east".to_owned(), "west".to_owned()][..])
    );
    assert!(
        plan.notes.iter().any(|n| n.contains("`agent` is widened")),
        "{:?}",
        plan.notes
    );

    addonctl::apply::execute(&sb.ctx.applier(), &plan, false, &NoopReporter)
        .await
        .unwrap();
    assert_eq!(
        sb.stored_args("agent").await,
        Some(json!({"clusters": ["east", "west"]}))
    );
    let app = sb.get(Kind::APPLICATION, "addon-agent").await.unwrap();
    let policies = app["spec"]["policies"].to_string();
    assert!(
        policies.contains("\"east\"") && policies.contains("\"west\""),
        "{policies}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_direct_engine_a_dependency_is_ready_before_what_needs_it_is_applied() {
    let sb = Sandbox::without_kubevela().await;
    // Its pods are held until the test releases them.
    let database = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "nodeSelector": {pool_label(sb.ns()): "scheduled"},
                    "containers": [{"name": "db", "image": "db:1"}],
                },
            },
        },
    });
    let addons = [
        addon("web", "1.0.0").needs("db", "*").write(),
        addon("db", "1.0.0").object(database).write(),
    ];
    let sb = sb.registries(&addons.iter().collect::<Vec<_>>());

    // The Pod is held: the wait for `db` times out and `web` is not applied.
    let (code, _, err) = run(sb
        .cli()
        .args(["enable", "web", "--dependency-timeout", "2"]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("waiting for `db` to be ready before `web`"),
        "{err}"
    );
    assert!(
        err.contains("addon `db` is still enabling after 2s"),
        "{err}"
    );
    assert!(
        err.contains(&format!("local: Deployment {}/db", sb.ns())),
        "{err}"
    );
    assert!(err.contains("addon `db` 1.0.0"), "what was applied: {err}");
    assert!(record_version(&sb, "db").await.is_some());
    assert!(record_version(&sb, "web").await.is_none());

    // Again from scratch, and the Pod is released: the Deployment becomes ready.
    addonctl::apply::disable_all(&sb.ctx.applier(), "db", false, false, &NoopReporter)
        .await
        .unwrap();
    let child = sb
        .command()
        .args(["enable", "web", "--dependency-timeout", "60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut appeared = false;
    for _ in 0..300 {
        if sb.get(Kind::DEPLOYMENT, "db").await.is_some() {
            appeared = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(appeared, "the Deployment was applied");
    assert!(
        record_version(&sb, "web").await.is_none(),
        "`web` waits for `db`"
    );
    release_pods_on(sb.api(), sb.ns()).await;
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{err}");
    let waited = err.find("waiting for `db` to be ready before `web`");
    let applied = err.find("applying `web`");
    assert!(
        waited.is_some() && applied.is_some() && waited < applied,
        "{err}"
    );
    assert_eq!(
        record_version(&sb, "web").await,
        Some(("1.0.0".into(), InstalledBy::User))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_registry_counts_and_one_that_fails_is_a_warning_not_a_silent_gap() {
    // A Helm repository with two versions of `widget`, made with `package` and `index`.
    let sources = tempfile::tempdir().unwrap();
    addon("widget", "1.0.0").write_into(&sources.path().join("widget-1"));
    addon("widget", "2.0.0").write_into(&sources.path().join("widget-2"));
    let charts = tempfile::tempdir().unwrap();
    crate::support::helm_repo::package_and_index(sources.path(), charts.path(), "").await;
    let server = crate::support::http_server::TestServer::builder().start();
    for entry in std::fs::read_dir(charts.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        server.put(&format!("/charts/{name}"), std::fs::read(&path).unwrap());
    }
    let url = format!("{}/charts/", server.url);
    let sb = Sandbox::with_kubevela().await;
    let cache = tempfile::tempdir().unwrap();
    let cli = || {
        let mut cmd = sb.cli();
        cmd.env("ADDONCTL_CACHE_DIR", cache.path())
            .env_remove("ADDONCTL_REGISTRY_FILE");
        cmd
    };
    let (code, _, err) = run(cli().args([
        "registry",
        "add",
        "charts",
        "--type",
        "helm",
        "--endpoint",
        &url,
    ]));
    assert_eq!(code, 0, "{err}");
    // Nothing listens on port 1 of the loopback address.
    let (code, _, err) = run(cli().args([
        "registry",
        "add",
        "broken",
        "--type",
        "helm",
        "--no-validate",
        "--priority",
        "5",
        "--endpoint",
        "http://127.0.0.1:1/charts/",
    ]));
    assert_eq!(code, 0, "{err}");

    let (code, _, err) = run(cli().args(["enable", "widget", "--version", "1.0.0"]));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("registry `broken` is left out"), "{err}");
    assert_eq!(
        record_version(&sb, "widget").await.map(|r| r.0).as_deref(),
        Some("1.0.0")
    );

    let (code, out, err) = run(cli().args(["list"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("widget"), "{out}");
    assert!(err.contains("broken"), "{err}");

    let (code, out, err) = run(cli().args(["status", "widget", "-v", "-o", "json"]));
    assert_eq!(code, 0, "{err}");
    let status: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["availableVersions"], json!(["2.0.0", "1.0.0"]));
    assert!(
        status["notes"]
            .to_string()
            .contains("registry `broken` is left out"),
        "{status:#}"
    );

    // The upgrade reads only the registry `widget` is installed from.
    let (code, _, err) = run(cli().args(["upgrade", "widget", "--latest"]));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("broken"), "{err}");
    assert_eq!(
        record_version(&sb, "widget").await.map(|r| r.0).as_deref(),
        Some("2.0.0")
    );
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn re_enabling_a_chain_unchanged_with_the_direct_engine_changes_no_resource_version() {
    let addons = chain();
    let sb = Sandbox::without_kubevela()
        .await
        .registries(&addons.iter().collect::<Vec<_>>());
    enable(&sb, "top").await.unwrap();
    let before = sb.resource_versions().await;
    assert!(
        before.contains_key("Secret addon-record-top")
            && before.contains_key("ConfigMap base-marker"),
        "{before:#?}"
    );

    let reports = enable(&sb, "top").await.unwrap();

    assert_eq!(reports.len(), 1, "`base` and `middle` are kept");
    assert_eq!(sb.resource_versions().await, before);
}
