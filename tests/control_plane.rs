//! `enable`, `disable`, `status`, `list` and `upgrade` against real Kubernetes API servers
//! (see `support::k8s`): `control-plane` serves KubeVela's CRDs, `managed-1` does not. Every test
//! works in a system namespace of its own and checks what the server stores.

use addonctl::apply::UpgradeRequest;
use addonctl::cluster;
use addonctl::context::NoopReporter;
use addonctl::plan::EnableRequest;
use addonctl::state::record::InstalledBy;
use addonctl::status::Phase;
use base64::Engine as _;
use predicates::prelude::*;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{
    args, assert_never_established, owned_by, widget_crd, Env, Kind, Sandbox,
};

/// A small addon for these tests, described piece by piece, then written with [`TestAddon`].
struct Fixture {
    name: String,
    version: String,
    dependencies: Vec<String>,
    need_namespaces: Vec<String>,
    parameters: Vec<String>,
    outputs: Vec<String>,
    definitions: Vec<(Kind, String)>,
    ui_schema: bool,
    notes: Option<String>,
}

/// An addon `name` at version 1.0.0 with nothing in it yet.
fn addon(name: &str) -> Fixture {
    Fixture {
        name: name.to_owned(),
        version: "1.0.0".to_owned(),
        dependencies: Vec::new(),
        need_namespaces: Vec::new(),
        parameters: Vec::new(),
        outputs: Vec::new(),
        definitions: Vec::new(),
        ui_schema: false,
        notes: None,
    }
}

impl Fixture {
    fn version(mut self, version: &str) -> Self {
        version.clone_into(&mut self.version);
        self
    }

    fn depends_on(mut self, addon: &str) -> Self {
        self.dependencies.push(addon.to_owned());
        self
    }

    fn need_namespaces(mut self, namespaces: &[&str]) -> Self {
        self.need_namespaces
            .extend(namespaces.iter().map(|n| (*n).to_owned()));
        self
    }

    /// One entry of `parameter.rhai`, e.g. `replicas: pint(1)`.
    fn parameter(mut self, declaration: &str) -> Self {
        self.parameters.push(declaration.to_owned());
        self
    }

    /// An auxiliary output: a ConfigMap `name` in the system namespace.
    fn config_map_output(mut self, key: &str, name: &str) -> Self {
        let config_map = rhai_object("ConfigMap", name, "data: #{ addon: context.metadata.name }");
        self.outputs
            .push(format!(r#"outputs["{key}"] = {config_map};"#));
        self
    }

    /// An auxiliary output, when `parameter` is given: a Secret `name` holding its value.
    fn secret_output(mut self, key: &str, name: &str, parameter: &str) -> Self {
        let data = format!("stringData: #{{ value: parameter.{parameter} }}");
        let secret = rhai_object("Secret", name, &data);
        self.outputs.push(format!(
            r#"if parameter.{parameter} != () {{ outputs["{key}"] = {secret}; }}"#
        ));
        self
    }

    /// An auxiliary output: a ConfigMap `name` whose data are the Rhai map entries `data`
    /// (e.g. `` cpu: `${parameter.resources.cpu}` ``).
    fn config_map_with(mut self, key: &str, name: &str, data: &str) -> Self {
        let config_map = rhai_object("ConfigMap", name, &format!("data: #{{ {data} }}"));
        self.outputs
            .push(format!(r#"outputs["{key}"] = {config_map};"#));
        self
    }

    /// An X-Definition in `definitions/`.
    fn definition(mut self, kind: Kind, name: &str) -> Self {
        self.definitions.push((kind, name.to_owned()));
        self
    }

    /// A UI schema, applied as the ConfigMap `<addon>-uischema`.
    fn ui_schema(mut self) -> Self {
        self.ui_schema = true;
        self
    }

    /// `NOTES.rhai`.
    fn notes(mut self, script: &str) -> Self {
        self.notes = Some(script.to_owned());
        self
    }

    fn write(self) -> TestAddon {
        let mut metadata = format!(
            "name: {}\nversion: {}\ndescription: Fixture addon {}\n",
            self.name, self.version, self.name
        );
        if !self.dependencies.is_empty() {
            metadata.push_str("dependencies:\n");
            for dependency in &self.dependencies {
                metadata.push_str(&format!("  - name: {dependency}\n"));
            }
        }
        if !self.need_namespaces.is_empty() {
            metadata.push_str(&format!(
                "needNamespace: [{}]\n",
                self.need_namespaces.join(", ")
            ));
        }
        let template = format!(
            "let outputs = #{{}};\n{}\n\
             #{{ output: application(#{{ components: [] }}), outputs: outputs }}\n",
            self.outputs.join("\n")
        );
        let mut addon = TestAddon::new(&self.name)
            .file("metadata.yaml", &metadata)
            .file("template.rhai", &template);
        if !self.parameters.is_empty() {
            addon = addon.file(
                "parameter.rhai",
                &format!("#{{\n    {},\n}}\n", self.parameters.join(",\n    ")),
            );
        }
        for (Kind(api_version, kind), name) in &self.definitions {
            addon = addon.file(
                &format!("definitions/{name}.yaml"),
                &format!(
                    "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n\
                     spec:\n  schematic:\n    cue:\n      template: |\n        parameter: {{}}\n"
                ),
            );
        }
        if self.ui_schema {
            addon = addon.file(
                &format!("schemas/{}-uischema.yaml", self.name),
                "- jsonKey: replicas\n  label: Replicas\n",
            );
        }
        if let Some(notes) = &self.notes {
            addon = addon.file("NOTES.rhai", notes);
        }
        addon
    }
}

/// A Rhai map for a `v1` object `name` of `kind` in the system namespace, with more `fields`.
fn rhai_object(kind: &str, name: &str, fields: &str) -> String {
    format!(
        r#"#{{ apiVersion: "v1", kind: "{kind}",
           metadata: #{{ name: "{name}", namespace: context.namespace }}, {fields} }}"#
    )
}

/// The fixture most tests use: a parameter, two definitions, a UI schema, an output.
fn widgets() -> TestAddon {
    addon("widgets")
        .parameter("replicas: pint(1)")
        .definition(Kind::COMPONENT_DEFINITION, "widget")
        .definition(Kind::TRAIT_DEFINITION, "widget-scaler")
        .ui_schema()
        .config_map_output("settings", "widgets-settings")
        .write()
}

fn stdout_of(cmd: &mut assert_cmd::Command) -> String {
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn enabling_with_kubevela_applies_an_application_that_owns_every_object() {
    let widgets = widgets();
    let sb = Sandbox::with_kubevela().await.registries(&[&widgets]);

    sb.enable("widgets", json!({"replicas": 2})).await.unwrap();

    assert!(sb.get(Kind::NAMESPACE, sb.ns()).await.is_some());
    let app = sb.get(Kind::APPLICATION, "addon-widgets").await.unwrap();
    assert_eq!(
        app["metadata"]["labels"],
        json!({
            "addons.oam.dev/name": "widgets",
            "addons.oam.dev/version": "1.0.0",
            "addons.oam.dev/registry": "local",
        })
    );
    let annotations = &app["metadata"]["annotations"];
    assert_eq!(annotations["addon.oam.dev/componentDefinitions"], "widget");
    assert_eq!(
        annotations["addon.oam.dev/traitDefinitions"],
        "widget-scaler"
    );
    let owned = [
        (Kind::COMPONENT_DEFINITION, "widget"),
        (Kind::TRAIT_DEFINITION, "widget-scaler"),
        (Kind::CONFIG_MAP, "widgets-uischema"),
        (Kind::CONFIG_MAP, "widgets-settings"),
        (Kind::SECRET, "addon-secret-widgets"),
    ];
    for (kind, name) in owned {
        let object = sb.get(kind, name).await;
        let object = object.unwrap_or_else(|| panic!("{} `{name}` was not applied", kind.1));
        assert_eq!(
            object["metadata"]["ownerReferences"],
            owned_by(&app),
            "{} `{name}`",
            kind.1
        );
    }
    let output = sb.get(Kind::CONFIG_MAP, "widgets-settings").await.unwrap();
    assert_eq!(
        output["metadata"]["labels"]["addons.oam.dev/auxiliary-name"],
        "settings"
    );
    let secret = sb.get(Kind::SECRET, "addon-secret-widgets").await.unwrap();
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(
        secret["data"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["addonParameterDataKey"]
    );
    assert_eq!(
        sb.stored_args("widgets").await,
        Some(json!({"replicas": 2}))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_args_secret_keeps_the_stored_arguments_until_reset_values() {
    let widgets = widgets();
    let sb = Sandbox::with_kubevela().await.registries(&[&widgets]);

    sb.enable("widgets", json!({})).await.unwrap();
    assert_eq!(
        sb.stored_args("widgets").await,
        None,
        "no arguments, no Secret"
    );

    sb.enable("widgets", json!({"replicas": 3})).await.unwrap();
    assert_eq!(
        sb.stored_args("widgets").await,
        Some(json!({"replicas": 3}))
    );

    // Enabled again without arguments: the stored ones are kept.
    sb.enable("widgets", json!({})).await.unwrap();
    assert_eq!(
        sb.stored_args("widgets").await,
        Some(json!({"replicas": 3}))
    );

    // From the defaults, without arguments: no arguments, no Secret.
    let request = EnableRequest {
        reference: "widgets".to_owned(),
        reset_values: true,
        ..EnableRequest::default()
    };
    let reports = addonctl::apply::enable(&sb.ctx, &request, &NoopReporter)
        .await
        .unwrap();
    assert_eq!(
        sb.stored_args("widgets").await,
        None,
        "enabled again from the defaults without arguments"
    );
    assert_eq!(
        reports[0].deleted,
        [format!("Secret `{}/addon-secret-widgets`", sb.ns())]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn enabling_without_kubevela_skips_definitions_with_a_note_and_the_record_owns_the_rest() {
    let widgets = widgets();
    let sb = Sandbox::without_kubevela().await.registries(&[&widgets]);

    let out = stdout_of(sb.cli().args(["enable", "widgets"]));

    assert!(
        out.contains("note: skipped ComponentDefinition `widget` (`core.oam.dev/v1beta1`): the control plane serves no `ComponentDefinition` of `core.oam.dev`")
            && out.contains("note: skipped TraitDefinition `widget-scaler` (`core.oam.dev/v1beta1`)")
            && out.contains("deployed by addonctl (direct engine) to 1 cluster: `local`"),
        "{out}"
    );
    assert!(!sb.api().serves(&Kind::APPLICATION.gvk()).await.unwrap());
    let record = sb.get(Kind::SECRET, "addon-record-widgets").await.unwrap();
    for name in ["widgets-uischema", "widgets-settings"] {
        let config_map = sb.get(Kind::CONFIG_MAP, name).await.unwrap();
        assert_eq!(
            config_map["metadata"]["ownerReferences"],
            owned_by(&record),
            "{name}"
        );
    }
    let inventory = sb.record("widgets").await.inventory;
    assert!(
        inventory.iter().all(|o| !o.kind.ends_with("Definition")),
        "{inventory:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn enabling_an_addon_installs_its_dependency_first_and_records_who_asked() {
    let sb = Sandbox::with_kubevela().await;

    let reports = sb.enable("strongbox-dashboard", json!({})).await.unwrap();

    let order: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(order, ["strongbox-operator", "strongbox-dashboard"]);
    let operator = sb.record("strongbox-operator").await;
    assert_eq!(operator.installed_by, InstalledBy::Dependency);
    let dashboard = sb.record("strongbox-dashboard").await;
    assert_eq!(dashboard.installed_by, InstalledBy::User);
    assert_eq!(dashboard.dependencies[0].name, "strongbox-operator");
    for (addon, version) in [
        ("strongbox-operator", "1.3.0"),
        ("strongbox-dashboard", "0.9.2"),
    ] {
        let app = sb.get(Kind::APPLICATION, &format!("addon-{addon}")).await;
        let labels = &app.unwrap()["metadata"]["labels"];
        assert_eq!(labels["addons.oam.dev/version"], version);
        assert_eq!(labels["addons.oam.dev/registry"], "builtin");
    }
    let status = addonctl::status::status(
        sb.ctx.state(),
        "strongbox-dashboard",
        Some(addonctl::status::Detail::of(&sb.ctx)),
    )
    .await
    .unwrap();
    assert!(
        status.dependencies[0].satisfied,
        "{:?}",
        status.dependencies
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dependency_cycle_is_refused_naming_the_cycle() {
    let head = addon("ouroboros-head").depends_on("ouroboros-tail").write();
    let tail = addon("ouroboros-tail").depends_on("ouroboros-head").write();
    let sb = Sandbox::with_kubevela().await.registries(&[&head, &tail]);

    let error = sb.enable("ouroboros-head", json!({})).await.unwrap_err();

    assert!(matches!(error, addonctl::Error::Resolve(_)), "{error:?}");
    assert!(error.is_user_error());
    assert_eq!(
        error.to_string(),
        "dependency cycle: `ouroboros-head` → `ouroboros-tail` → `ouroboros-head`"
    );
    assert!(
        sb.get(Kind::NAMESPACE, sb.ns()).await.is_none(),
        "nothing is applied"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn re_enabling_unchanged_changes_no_resource_version() {
    let widgets = widgets();
    let sb = Sandbox::with_kubevela().await.registries(&[&widgets]);
    let enable_all = || async {
        sb.enable("strongbox-dashboard", json!({"title": "Vault"}))
            .await
            .unwrap();
        sb.enable("widgets", json!({"replicas": 2})).await.unwrap();
    };
    enable_all().await;
    let before = sb.resource_versions().await;

    enable_all().await;

    assert!(before.len() > 10, "{before:#?}");
    assert_eq!(sb.resource_versions().await, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_prints_the_plan_dependencies_first_and_changes_nothing() {
    let sb = Sandbox::with_kubevela().await;

    let out = stdout_of(
        sb.cli()
            .args(["enable", "strongbox-dashboard", "--dry-run"]),
    );

    let plan: Vec<String> = out
        .lines()
        .skip(1)
        .take(2)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        plan,
        [
            "1 0 strongbox-operator 1.3.0 builtin install dependency (topology) strongbox-dashboard",
            "2 1 strongbox-dashboard 0.9.2 builtin install user (topology) -",
        ],
        "{out}"
    );
    assert!(out.contains("name: addon-strongbox-dashboard\n"), "{out}");
    assert!(out.ends_with("# dry run: nothing was changed\n"), "{out}");
    assert!(
        sb.get(Kind::NAMESPACE, sb.ns()).await.is_none(),
        "the namespace was created"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn definition_conflicts_are_all_listed_and_overriding_takes_them_over() {
    let other = addon("other")
        .definition(Kind::TRAIT_DEFINITION, "shared-scaler")
        .write();
    let mine = addon("mine")
        .definition(Kind::COMPONENT_DEFINITION, "mine-widget")
        .definition(Kind::TRAIT_DEFINITION, "shared-scaler")
        .definition(Kind::WORKFLOW_STEP_DEFINITION, "legacy-notify")
        .write();
    let sb = Sandbox::with_kubevela().await.registries(&[&other, &mine]);
    sb.enable("other", json!({})).await.unwrap();
    // Written by hand: owned by nobody.
    sb.apply_as(
        "kubectl",
        Kind::COMPONENT_DEFINITION.object(json!({"name": "mine-widget"})),
    )
    .await;
    // Installed by KubeVela itself for its addon `legacy`.
    let legacy = sb
        .apply_as(
            "vela-cli",
            Kind::APPLICATION.object(json!({"name": "addon-legacy"})),
        )
        .await;
    let notify = Kind::WORKFLOW_STEP_DEFINITION.object(json!({
        "name": "legacy-notify",
        "ownerReferences": owned_by(&legacy),
    }));
    sb.apply_as("vela-cli", notify).await;

    let error = sb.enable("mine", json!({})).await.unwrap_err().to_string();

    let ns = sb.ns();
    for (kind, name, why) in [
        (
            "ComponentDefinition",
            "mine-widget",
            "already exists and belongs to no addon",
        ),
        (
            "TraitDefinition",
            "shared-scaler",
            "is owned by addon `other`",
        ),
        (
            "WorkflowStepDefinition",
            "legacy-notify",
            "is owned by addon `legacy`",
        ),
    ] {
        let clash = format!("{kind} `{ns}/{name}` of addon `mine` {why}");
        assert!(error.contains(&clash), "missing `{clash}` in:\n{error}");
    }
    sb.assert_absent(&[(Kind::APPLICATION, "addon-mine")]).await;

    let request = EnableRequest {
        reference: "mine".to_owned(),
        override_definitions: true,
        ..EnableRequest::default()
    };
    addonctl::apply::enable(&sb.ctx, &request, &NoopReporter)
        .await
        .unwrap();

    let app = sb.get(Kind::APPLICATION, "addon-mine").await.unwrap();
    for (kind, name) in [
        (Kind::COMPONENT_DEFINITION, "mine-widget"),
        (Kind::TRAIT_DEFINITION, "shared-scaler"),
        (Kind::WORKFLOW_STEP_DEFINITION, "legacy-notify"),
    ] {
        let taken = sb.get(kind, name).await.unwrap();
        assert_eq!(
            taken["metadata"]["ownerReferences"],
            owned_by(&app),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn disable_refuses_while_needed_and_then_deletes_everything_enable_created() {
    let sb = Sandbox::with_kubevela().await;
    // Definition names are global to Applications of every namespace: make this one unique.
    let widget = format!("{}-widget", sb.ns());
    let extra = sb.other_namespace("extra").await;
    let base = addon("base")
        .parameter("replicas: pint(1)")
        .definition(Kind::COMPONENT_DEFINITION, &widget)
        .config_map_output("settings", "base-settings")
        .need_namespaces(&[sb.ns(), &extra])
        .write();
    let top = addon("top").depends_on("base").write();
    let sb = sb.registries(&[&base, &top]);
    sb.enable("base", json!({"replicas": 2})).await.unwrap();
    sb.enable("top", json!({})).await.unwrap();

    sb.cli()
        .args(["disable", "base"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("addon `base` is needed by `top`"));
    sb.cli().args(["disable", "top"]).assert().success();
    let apps = sb.other_namespace("apps").await;
    let mut shop = Kind::APPLICATION.object(json!({"name": "shop", "namespace": apps}));
    shop["spec"] = json!({"components": [{"name": "web", "type": widget}]});
    sb.apply_as("kubectl", shop).await;
    sb.cli()
        .args(["disable", "base"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "`{apps}/shop` (uses {widget})"
        )));

    let record = sb.record("base").await;
    sb.cli()
        .args(["disable", "base", "--force"])
        .assert()
        .success();

    assert!(!record.inventory.is_empty());
    for object in &record.inventory {
        let namespace = object.namespace.as_deref();
        let left = sb.api().get(&object.gvk(), namespace, &object.name).await;
        assert!(left.unwrap().is_none(), "{object} is left");
    }
    sb.assert_absent(&[
        (Kind::APPLICATION, "addon-base"),
        (Kind::SECRET, "addon-secret-base"),
        (Kind::SECRET, "addon-record-base"),
    ])
    .await;
    let extra = sb.get(Kind::NAMESPACE, &extra).await;
    assert!(
        extra.is_none_or(|ns| ns["status"]["phase"] == "Terminating"),
        "the needed namespace is not deleted"
    );
    let system = sb.get(Kind::NAMESPACE, sb.ns()).await.unwrap();
    assert_eq!(system["status"]["phase"], "Active");
}

async fn phase(sb: &Sandbox, addon: &str) -> Phase {
    addonctl::status::status(sb.ctx.state(), addon, None)
        .await
        .unwrap()
        .phase
}

#[tokio::test(flavor = "multi_thread")]
async fn status_phases_follow_the_application_status_as_kubevela_writes_it() {
    let widgets = widgets();
    let sb = Sandbox::with_kubevela().await.registries(&[&widgets]);
    assert_eq!(phase(&sb, "widgets").await, Phase::Disabled);

    sb.enable("widgets", json!({})).await.unwrap();

    let status = addonctl::status::status(sb.ctx.state(), "widgets", None)
        .await
        .unwrap();
    assert_eq!(status.phase, Phase::Enabling);
    assert_eq!(status.installed_version.as_deref(), Some("1.0.0"));
    assert_eq!(status.registry.as_deref(), Some("local"));
    for (written, expected) in [
        (json!({"status": "running"}), Phase::Enabled),
        (json!({"status": "workflowSuspending"}), Phase::Suspend),
        (
            json!({"status": "runningWorkflow", "workflow": {"suspend": true}}),
            Phase::Suspend,
        ),
        (json!({"status": "workflowFailed"}), Phase::Failed),
        (Value::Null, Phase::Enabling),
    ] {
        sb.set_application_status("widgets", written.clone()).await;
        assert_eq!(phase(&sb, "widgets").await, expected, "status {written}");
    }

    // Held by a finalizer, a deleted Application shows as disabling.
    let held = Kind::APPLICATION.object(json!({
        "name": "addon-widgets",
        "finalizers": ["test.addonctl.io/hold"],
    }));
    sb.apply_as("test-finalizer", held).await;
    let application = Kind::APPLICATION.gvk();
    sb.api()
        .delete(&application, Some(sb.ns()), "addon-widgets")
        .await
        .unwrap();
    assert_eq!(phase(&sb, "widgets").await, Phase::Disabling);
    let released = Kind::APPLICATION.object(json!({"name": "addon-widgets"}));
    sb.apply_as("test-finalizer", released).await;

    addonctl::apply::disable(&sb.ctx.applier(), "widgets", false, &NoopReporter)
        .await
        .unwrap();
    assert_eq!(phase(&sb, "widgets").await, Phase::Disabled);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_shows_installed_status_with_calls_that_do_not_grow_with_the_addons() {
    let tiny: Vec<TestAddon> = (1..=5)
        .map(|i| addon(&format!("tiny-{i}")).write())
        .collect();
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&tiny.iter().collect::<Vec<_>>());
    let calls_of_list = || async {
        let before = sb.api().counters().requests();
        let (rows, warnings) = addonctl::status::list(
            Some(sb.ctx.state()),
            &sb.ctx.catalog,
            &addonctl::status::list::ListOptions::default(),
        )
        .await
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        (sb.api().counters().requests() - before, rows)
    };
    sb.enable("tiny-1", json!({})).await.unwrap();
    calls_of_list().await; // discovery is cached from here on
    let (with_one, _) = calls_of_list().await;

    for i in 2..=5 {
        sb.enable(&format!("tiny-{i}"), json!({})).await.unwrap();
    }
    let (with_five, rows) = calls_of_list().await;

    assert_eq!(
        with_five, with_one,
        "calls with 1 and with 5 addons installed"
    );
    assert!(with_one <= 2, "{with_one} calls");
    let status = |name: &str| {
        let row = rows.iter().find(|r| r.name == name).unwrap();
        (row.phase, row.installed_version.clone())
    };
    for i in 1..=5 {
        assert_eq!(
            status(&format!("tiny-{i}")),
            (Phase::Enabling, Some("1.0.0".to_owned()))
        );
    }
    assert_eq!(status("strongbox-operator"), (Phase::Disabled, None));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partial_nested_override_on_upgrade_keeps_the_stored_siblings() {
    let fixture = addon("sized")
        .parameter(r#"resources: object(#{ cpu: string("100m"), memory: string("128Mi") })"#)
        .config_map_with(
            "sizes",
            "sized-sizes",
            "cpu: `${parameter.resources.cpu}`, memory: `${parameter.resources.memory}`",
        )
        .write();
    let sb = Sandbox::with_kubevela().await.registries(&[&fixture]);
    let sizes = || async {
        let config_map = sb.get(Kind::CONFIG_MAP, "sized-sizes").await.unwrap();
        config_map["data"].clone()
    };
    sb.cli()
        .args([
            "enable",
            "sized",
            "resources.cpu=500m",
            "resources.memory=1Gi",
        ])
        .assert()
        .success();
    let stored = json!({"resources": {"cpu": "500m", "memory": "1Gi"}});
    assert_eq!(sb.stored_args("sized").await, Some(stored));

    sb.cli()
        .args(["upgrade", "sized", "resources.cpu=750m"])
        .assert()
        .success();

    let merged = json!({"resources": {"cpu": "750m", "memory": "1Gi"}});
    assert_eq!(sb.stored_args("sized").await, Some(merged.clone()));
    assert_eq!(sizes().await, json!({"cpu": "750m", "memory": "1Gi"}));

    // What was stored is what the next upgrade starts from.
    sb.cli().args(["upgrade", "sized"]).assert().success();

    assert_eq!(sb.stored_args("sized").await, Some(merged));
    assert_eq!(sizes().await, json!({"cpu": "750m", "memory": "1Gi"}));

    // A values file, then `key=value`: layered, then laid over the stored arguments.
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("values.yaml");
    fs_err::write(&values, "resources:\n  memory: 2Gi\n  cpu: 1\n").unwrap();
    sb.cli()
        .args(["upgrade", "sized", "-f"])
        .arg(&values)
        .arg("resources.cpu=900m")
        .assert()
        .success();

    let layered = json!({"resources": {"cpu": "900m", "memory": "2Gi"}});
    assert_eq!(sb.stored_args("sized").await, Some(layered));
    assert_eq!(sizes().await, json!({"cpu": "900m", "memory": "2Gi"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn upgrade_merges_arguments_keeps_the_version_and_prunes_what_is_no_longer_rendered() {
    let evolving = |version: &str| {
        addon("evolving")
            .version(version)
            .parameter("replicas: pint(1)")
            .parameter(r#"mode: string("fast")"#)
            .definition(Kind::COMPONENT_DEFINITION, "evolving-widget")
            .config_map_output("settings", "evolving-settings")
    };
    let v1 = evolving("1.0.0")
        .definition(Kind::TRAIT_DEFINITION, "evolving-scaler")
        .config_map_output("legacy", "evolving-legacy")
        .write();
    let v2 = evolving("2.0.0").write();
    let sb = Sandbox::with_kubevela().await.registries(&[&v1, &v2]);
    let version = || async {
        let app = sb.get(Kind::APPLICATION, "addon-evolving").await.unwrap();
        app["metadata"]["labels"]["addons.oam.dev/version"].clone()
    };
    sb.cli()
        .args(["enable", "evolving", "--version", "1.0.0", "replicas=3"])
        .assert()
        .success();

    let request = UpgradeRequest {
        name: "evolving".to_owned(),
        enable: EnableRequest {
            args: args(json!({"mode": "slow"})).into(),
            ..EnableRequest::default()
        },
        ..UpgradeRequest::default()
    };
    addonctl::apply::upgrade(&sb.ctx, &request, &NoopReporter)
        .await
        .unwrap();

    assert_eq!(version().await, "1.0.0");
    let merged = json!({"replicas": 3, "mode": "slow"});
    assert_eq!(sb.stored_args("evolving").await, Some(merged.clone()));
    assert!(sb.get(Kind::CONFIG_MAP, "evolving-legacy").await.is_some());

    let out = stdout_of(sb.cli().args(["upgrade", "evolving", "--version", "2.0.0"]));

    assert_eq!(version().await, "2.0.0");
    assert_eq!(sb.stored_args("evolving").await, Some(merged));
    let pruned = [
        (Kind::CONFIG_MAP, "evolving-legacy"),
        (Kind::TRAIT_DEFINITION, "evolving-scaler"),
    ];
    sb.assert_absent(&pruned).await;
    sb.assert_present(&[
        (Kind::CONFIG_MAP, "evolving-settings"),
        (Kind::COMPONENT_DEFINITION, "evolving-widget"),
    ])
    .await;
    let inventory = sb.record("evolving").await.inventory;
    for (Kind(_, kind), name) in pruned {
        let deleted = format!("deleted {kind} `{}/{name}`", sb.ns());
        assert!(out.contains(&deleted), "{out}");
        assert!(!inventory.iter().any(|o| o.name == name), "{inventory:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_without_rights_gets_a_forbidden_error_naming_user_verb_and_resource() {
    let widgets = widgets();
    let sb = Sandbox::with_kubevela().await.registries(&[&widgets]);
    let expected = format!(
        "User \"{}\" cannot list resource \"secrets\"",
        sb.cluster.user_name
    );

    let user = sb.user_context().await;
    let error = addonctl::status::list(
        Some(user.state()),
        &user.catalog,
        &addonctl::status::list::ListOptions::default(),
    )
    .await
    .unwrap_err();

    assert!(
        matches!(
            error,
            addonctl::Error::Cluster(cluster::Error::Forbidden { .. })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains(&expected), "{error}");
    // The command line refuses before reading anything, naming each permission and its role.
    sb.cli_as_user()
        .args(["enable", "widgets"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "`list` `secrets` in namespace `{}` (ClusterRole `addonctl-viewer` allows it)",
            sb.ns()
        )));
    assert!(sb.get(Kind::NAMESPACE, sb.ns()).await.is_none());
}

#[test]
fn an_unreachable_server_is_reported_with_the_cluster_and_its_address() {
    let dir = tempfile::tempdir().unwrap();
    let (kubeconfig, server) = Env::get().unreachable_kubeconfig(dir.path());

    assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .env_remove("KUBECONFIG")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["status", "strongbox-operator"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "cannot reach cluster `local` at {server}"
        )));
}

#[tokio::test(flavor = "multi_thread")]
async fn secret_parameters_never_appear_in_config_maps_or_output() {
    const TOKEN: &str = "hunter2-7f3a9c1e";
    let vault = addon("vault")
        .parameter(r#"token: string().optional().secret().usage("API token")"#)
        .parameter("replicas: pint(1)")
        .secret_output("token", "vault-token", "token")
        .config_map_output("settings", "vault-settings")
        .ui_schema()
        .notes("`vault is ready; token ${parameter.token}`")
        .write();
    let sb = Sandbox::with_kubevela().await.registries(&[&vault]);
    let token_arg = format!("token={TOKEN}");
    let encoded = base64::engine::general_purpose::STANDARD.encode(TOKEN);

    let outputs: Vec<(String, std::process::Output)> = [
        vec!["enable", "vault", &token_arg, "--dry-run"],
        vec!["enable", "vault", &token_arg],
        vec!["enable", "vault", &token_arg, "-o", "json"],
        vec!["status", "vault", "-v"],
        vec!["list"],
    ]
    .into_iter()
    .map(|command| {
        let output = sb
            .cli()
            .args(&command)
            .assert()
            .success()
            .get_output()
            .clone();
        (command.join(" "), output)
    })
    .collect();

    assert_eq!(sb.stored_args("vault").await, Some(json!({"token": TOKEN})));
    for (command, output) in &outputs {
        for stream in [&output.stdout, &output.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(
                !text.contains(TOKEN) && !text.contains(&encoded),
                "`{command}` shows the secret:\n{text}"
            );
        }
    }
    let shown = |i: usize, prefix: &str| {
        let stdout = String::from_utf8_lossy(&outputs[i].1.stdout).into_owned();
        let line = stdout.lines().find(|l| l.trim_start().starts_with(prefix));
        line.unwrap_or_else(|| panic!("no `{prefix}` line:\n{stdout}"))
            .to_owned()
    };
    let token = shown(3, "token ");
    assert!(
        token.contains("\"******\"") && token.ends_with("API token"),
        "{token}"
    );
    assert_eq!(shown(1, "vault is ready"), "vault is ready; token ******");
    let listed = shown(4, "vault ");
    let words: Vec<&str> = listed.split_whitespace().collect();
    assert!(
        words.windows(2).any(|w| w == ["enabling", "1.0.0"]),
        "{listed}"
    );
    let config_maps = sb.list(Kind::CONFIG_MAP).await;
    assert!(config_maps.len() >= 2, "{config_maps:#?}");
    for config_map in config_maps {
        let text = config_map.to_string();
        assert!(!text.contains(TOKEN) && !text.contains(&encoded), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn named_clusters_must_be_joined_and_are_recorded() {
    let sb = Sandbox::without_kubevela().await;

    let error = sb
        .enable("node-pulse", json!({"clusters": ["east", "local"]}))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown cluster `east`; known clusters: `local` (join one with `addonctl cluster join` or `vela cluster join`)"
    );

    // A joined cluster is a KubeVela cluster Secret in the system namespace.
    sb.apply_as(
        "test",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sb.ns()}}),
    )
    .await;
    sb.apply_as(
        "test",
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "east", "namespace": sb.ns(),
                         "labels": {"cluster.core.oam.dev/cluster-credential-type": "ServiceAccountToken"}},
            // https://127.0.0.1:1 and a token: joined, but nothing listens there.
            "data": {"endpoint": "aHR0cHM6Ly8xMjcuMC4wLjE6MQ==", "token": "dG9rZW4="},
        }),
    )
    .await;
    let error = sb
        .enable("node-pulse", json!({"clusters": ["east"]}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, addonctl::Error::Clusters { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(
            "1 of 2 clusters failed:\n  east: cannot reach cluster `east` at https://127.0.0.1:1"
        ),
        "{error}"
    );
    let record = sb.record("node-pulse").await;
    assert_eq!(record.clusters, ["east", "local"]);
    assert!(
        record.pending.is_some(),
        "the revision stays pending until every cluster has it"
    );
    assert!(record.dispatched["local"].error.is_none());
    assert!(record.dispatched["east"].error.is_some());
}

/// Discovery reads a group version once per cluster, whatever number of its kinds are looked
/// up, and a kind not served is looked up again (one read) after `refresh_discovery`.
#[tokio::test]
async fn discovery_reads_each_group_version_once() {
    let env = Env::get();
    let api = cluster::Cluster::connect(&cluster::ConnectOptions {
        kubeconfig: Some(env.control_plane().kubeconfig.clone()),
        ..cluster::ConnectOptions::default()
    })
    .await
    .unwrap();
    let kind = |v: &str, k: &str| kube::core::GroupVersionKind::gvk("", v, k);
    let before = api.counters().requests();
    for k in [
        "ConfigMap",
        "Secret",
        "Service",
        "ServiceAccount",
        "Namespace",
    ] {
        assert!(api.serves(&kind("v1", k)).await.unwrap(), "{k}");
    }
    assert!(!api.serves(&kind("v1", "NoSuchKind")).await.unwrap());
    assert_eq!(api.counters().requests() - before, 1, "one read of /api/v1");
    api.refresh_discovery();
    assert!(api.serves(&kind("v1", "ConfigMap")).await.unwrap());
    assert!(!api.serves(&kind("v1", "NoSuchKind")).await.unwrap());
    assert_eq!(
        api.counters().requests() - before,
        2,
        "/api/v1 read again once"
    );
    // Lookups at once of kinds of one group version not read yet read it once too.
    let rbac = |k: &str| kube::core::GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", k);
    let kinds = ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"].map(rbac);
    let served = futures::future::join_all(kinds.iter().map(|k| api.serves(k))).await;
    assert!(served.into_iter().all(|s| s.unwrap()));
    assert_eq!(
        api.counters().requests() - before,
        3,
        "the RBAC group version read once"
    );
}

/// With discovery kept on disk, a later process reads it from there: it trusts the server's
/// version a run read lately instead of reading group versions (an unchanged re-enable makes
/// fewer requests than the first), and a kind an entry does not list is looked up on the
/// server once more.
#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_re_enable_with_a_warm_discovery_cache_reads_little() {
    let cache = tempfile::tempdir().unwrap();
    let fixture = addon("warm-cache")
        .definition(Kind::COMPONENT_DEFINITION, "warm-cache-comp")
        .write();
    let sb = Sandbox::with_kubevela().await.registries(&[&fixture]);
    sb.ctx.cluster.set_discovery_cache(Some(cache.path()));
    sb.enable("warm-cache", json!({})).await.unwrap();
    let cold = sb.api().counters().requests();
    let stored = std::fs::read_dir(cache.path().join("discovery"))
        .unwrap()
        .count();
    assert_eq!(stored, 1, "one directory for the control plane");

    // A new process: a new client, the same cache.
    let settings = addonctl::context::Settings {
        registry_dirs: vec![fixture.path_buf()],
        discovery_cache: Some(cache.path().to_path_buf()),
        kubeconfig: Some(sb.cluster.kubeconfig.clone()),
        ..addonctl::context::Settings::new(sb.ns())
    };
    let ctx = addonctl::context::Context::connect(&settings)
        .await
        .unwrap();
    let before = sb.resource_versions().await;
    let request = EnableRequest {
        reference: "warm-cache".to_owned(),
        ..EnableRequest::default()
    };
    addonctl::apply::enable(&ctx, &request, &NoopReporter)
        .await
        .unwrap();
    let warm = ctx.cluster.counters().requests();
    assert_eq!(before, sb.resource_versions().await, "nothing changed");
    eprintln!("fresh enable (cold cache): {cold} requests; unchanged re-enable (warm cache): {warm} requests");
    assert!(warm < cold, "{warm} requests warm, {cold} cold");

    // Every kind the addon uses comes from the disk, and so does the server's version (read by
    // a run moments ago): no request at all.
    let api = cluster::Cluster::connect(&cluster::ConnectOptions {
        kubeconfig: Some(sb.cluster.kubeconfig.clone()),
        ..cluster::ConnectOptions::default()
    })
    .await
    .unwrap();
    api.set_discovery_cache(Some(cache.path()));
    for kind in [Kind::SECRET, Kind::APPLICATION, Kind::COMPONENT_DEFINITION] {
        assert!(api.serves(&kind.gvk()).await.unwrap(), "{kind:?}");
    }
    assert_eq!(api.counters().requests(), 0, "nothing asked");
    // A kind the cached `/api/v1` does not list: the server is asked once, then remembered.
    let missing = kube::core::GroupVersionKind::gvk("", "v1", "NoSuchKind");
    assert!(!api.serves(&missing).await.unwrap());
    assert!(!api.serves(&missing).await.unwrap());
    assert_eq!(api.counters().requests(), 1, "/api/v1 read once more");
}

/// The control-plane objects that need no CRD of the addon are applied while its CRDs become
/// Established, not after: here the CRD never does (its kind is taken by another CRD of the
/// group), so the ConfigMap is there while the enable still waits for it; it then fails.
#[tokio::test(flavor = "multi_thread")]
async fn outputs_that_need_no_crd_are_applied_while_the_crd_becomes_established() {
    let sb = Sandbox::with_kubevela().await;
    let group = format!("{}.example.com", sb.ns());
    let (theirs, ours) = (format!("widgets.{group}"), format!("gizmos.{group}"));
    let mut fixture = addon("waiting").config_map_output("settings", "waiting-settings");
    fixture.outputs.push(format!(
        r#"outputs["gizmos"] = parse_json({:?});"#,
        widget_crd(&group, "gizmos").to_string()
    ));
    let waiting = fixture.write();
    let sb = sb.registries(&[&waiting]);
    for name in [&theirs, &ours] {
        sb.clean_up_on(
            Env::get().control_plane(),
            Kind::CUSTOM_RESOURCE_DEFINITION,
            None,
            name,
        );
    }
    // Another CRD of the group defines the kind first: the addon's is never Established.
    sb.api()
        .apply(&widget_crd(&group, "widgets"), "")
        .await
        .unwrap();

    let started = std::time::Instant::now();
    let watch = async {
        while started.elapsed() < std::time::Duration::from_secs(20) {
            if sb.get(Kind::CONFIG_MAP, "waiting-settings").await.is_some() {
                return sb.get(Kind::CUSTOM_RESOURCE_DEFINITION, &ours).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        None
    };
    let (enabled, seen) = tokio::join!(sb.enable("waiting", json!({})), watch);

    let crd = seen.expect("the ConfigMap was not applied while the CRD was waited for");
    assert_never_established(&crd, &enabled.unwrap_err().to_string());
}

/// An apply that meets the object being deleted (a finalizer still to run, as a CRD whose
/// resources are being removed right after a `disable`) waits until it is gone and applies it
/// again: what is applied and recorded is the new object, not the one about to disappear.
#[tokio::test(flavor = "multi_thread")]
async fn an_apply_meeting_an_object_being_deleted_waits_and_makes_it_new() {
    let sb = Sandbox::without_kubevela().await;
    sb.api()
        .create_if_missing(&json!({"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": sb.ns()}}))
        .await
        .unwrap();
    let cluster = sb.cluster.admin().await;
    let config_map = kube::core::GroupVersionKind::gvk("", "v1", "ConfigMap");
    for (name, metadata_only) in [("held-full", false), ("held-metadata", true)] {
        let object = |value: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": sb.ns()}, "data": {"v": value}})
        };
        let mut held = object("1");
        held["metadata"]["finalizers"] = json!(["addonctl.test/hold"]);
        let old = cluster.apply(&held, sb.ns()).await.unwrap();
        cluster
            .delete(&config_map, Some(sb.ns()), name)
            .await
            .unwrap();
        // Its finalizer is removed a moment later, as a controller would.
        let releaser = {
            let cluster = cluster.clone();
            let ns = sb.ns().to_owned();
            let name = name.to_owned();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
                    cluster.client().clone(),
                    &ns,
                    &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
                );
                api.patch(
                    &name,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
                )
                .await
                .unwrap();
            })
        };
        let started = std::time::Instant::now();
        let stored = if metadata_only {
            cluster
                .apply_placed_metadata(&object("2"), sb.ns(), None)
                .await
                .unwrap()
        } else {
            cluster.apply(&object("2"), sb.ns()).await.unwrap()
        };
        releaser.await.unwrap();
        assert!(
            started.elapsed() >= std::time::Duration::from_millis(300),
            "{name}: returned before the old object was gone"
        );
        assert_ne!(
            stored.metadata.uid, old.metadata.uid,
            "{name}: a new object"
        );
        assert!(stored.metadata.deletion_timestamp.is_none(), "{name}");
        let live = sb.get(Kind::CONFIG_MAP, name).await.unwrap();
        assert_eq!(
            live["metadata"]["uid"].as_str(),
            stored.metadata.uid.as_deref()
        );
        assert_eq!(live["data"]["v"], "2", "{name}");
    }
}
