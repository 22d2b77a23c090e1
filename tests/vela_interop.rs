//! Wire compatibility with KubeVela's own CLI: the real `vela` (v1.10.9, built from its Go module
//! by `scripts/sources/vela.sh`) and addonctl on the same control plane, each managing what the
//! other installed. An addon enabled by `vela addon enable <dir>` is listed, shown, upgraded and
//! disabled by addonctl; one enabled by addonctl is listed, shown, upgraded and disabled by `vela
//! addon`; both read the same phase from each status KubeVela's controller writes.
//!
//! vela keeps addons in the namespace `KUBEVELA_SYSTEM_NAMESPACE` names (as addonctl does), so
//! every test runs both tools in its sandbox's own system namespace. No KubeVela controller runs:
//! where vela waits for an Application to be running, the test writes the status KubeVela's
//! controller would.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{owned_by, Kind, Sandbox};
use crate::support::root;

/// The version `scripts/sources/vela.sh` builds.
const VELA_VERSION: &str = "v1.10.9";
/// How long one `vela` command may take (`vela addon enable` polls the Application every 5 s).
const VELA_TIMEOUT: Duration = Duration::from_secs(120);
/// How long to wait for the API server to reach a state (an object made, collected).
const WAIT: Duration = Duration::from_secs(60);

/// The `vela` binary: `ADDONCTL_VELA`, else the one `scripts/sources/vela.sh` built. Fails,
/// saying how to build it, when there is none.
fn vela_binary() -> &'static Path {
    static VELA: OnceLock<PathBuf> = OnceLock::new();
    VELA.get_or_init(|| {
        let output = std::process::Command::new("bash")
            .arg(root().join("scripts/sources/vela.sh"))
            .arg("--cached")
            .output()
            .expect("run scripts/sources/vela.sh --cached");
        assert!(
            output.status.success(),
            "no vela {VELA_VERSION} binary: these tests need the real KubeVela CLI. Build it once \
             per machine with `bash scripts/sources/vela.sh` (from the Go module proxy, several \
             minutes), or point ADDONCTL_VELA at one.\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
    })
}

/// `vela` pointed at a sandbox: the admin's kubeconfig, the sandbox's system namespace, a home of
/// its own (vela keeps `~/.vela`).
struct Vela {
    kubeconfig: PathBuf,
    namespace: String,
    home: tempfile::TempDir,
}

/// A `vela` command running in the background, its output going to files (read also when it
/// is killed for taking too long).
struct Running {
    child: tokio::process::Child,
    what: String,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Vela {
    fn new(sb: &Sandbox) -> Vela {
        // Fails at once, before anything is written, without the binary.
        vela_binary();
        Vela {
            kubeconfig: sb.cluster.kubeconfig.clone(),
            namespace: sb.ns().to_owned(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn spawn(&self, args: &[&str]) -> Running {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let stdout = self.home.path().join(format!("{n}.stdout"));
        let stderr = self.home.path().join(format!("{n}.stderr"));
        let child = tokio::process::Command::new(vela_binary())
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBEVELA_SYSTEM_NAMESPACE", &self.namespace)
            .env_remove("DEFAULT_VELA_NS")
            .env_remove("KUBEVELA_DEFINITION_NAMESPACE")
            .env("HOME", self.home.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", vela_binary().display()));
        Running {
            child,
            what: format!("vela {}", args.join(" ")),
            stdout,
            stderr,
        }
    }

    /// Runs `vela args…` to its end (bounded) and returns its stdout; panics, showing both
    /// outputs, when it fails.
    async fn ok(&self, args: &[&str]) -> String {
        self.spawn(args).succeeds().await
    }

    /// Runs `vela args…` to its end (bounded) and returns its stderr; panics, showing both
    /// outputs, when it succeeds.
    async fn fails(&self, args: &[&str]) -> String {
        self.spawn(args).fails().await
    }
}

impl Running {
    /// Waits for its end, killing it and panicking (with its output) after [`VELA_TIMEOUT`];
    /// panics, showing both outputs, unless it succeeded as `success` says; returns stdout and
    /// stderr.
    async fn end(mut self, success: bool) -> (String, String) {
        let ended = tokio::time::timeout(VELA_TIMEOUT, self.child.wait()).await;
        if ended.is_err() {
            let _ = self.child.kill().await;
        }
        let stdout = std::fs::read_to_string(&self.stdout).unwrap();
        let stderr = std::fs::read_to_string(&self.stderr).unwrap();
        let what = &self.what;
        let status = ended.unwrap_or_else(|_| {
            panic!(
                "`{what}` did not finish within {VELA_TIMEOUT:?}:\nstdout:\n{stdout}\nstderr:\n{stderr}"
            )
        });
        let status = status.unwrap();
        assert_eq!(
            status.success(),
            success,
            "`{what}` ended with {status}:\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        (stdout, stderr)
    }

    async fn succeeds(self) -> String {
        self.end(true).await.0
    }

    async fn fails(self) -> String {
        self.end(false).await.1
    }
}

/// A small addon in KubeVela's CUE format: `metadata.yaml`, a `parameter.cue` with two
/// defaults, a `template.cue` whose Application carries the parameters and the version, and a
/// TraitDefinition. `dir` is where in the test addon's directory it goes (`""`: its root).
fn cue_addon(addon: TestAddon, dir: &str, name: &str, version: &str) -> TestAddon {
    let at = |file: &str| {
        if dir.is_empty() {
            file.to_owned()
        } else {
            format!("{dir}/{file}")
        }
    };
    let template = r#"package main

output: {
	apiVersion: "core.oam.dev/v1beta1"
	kind:       "Application"
	spec: components: [{
		name: "NAME-settings"
		type: "k8s-objects"
		properties: objects: [{
			apiVersion: "v1"
			kind:       "ConfigMap"
			metadata: name: "NAME-settings"
			data: {
				greeting: parameter.greeting
				replicas: "\(parameter.replicas)"
				version:  context.metadata.version
			}
		}]
	}]
}
"#
    .replace("NAME", name);
    let parameter = r#"package main

parameter: {
	// +usage=The greeting the settings carry
	greeting: *"hello" | string
	// +usage=How many replicas
	replicas: *1 | int
}
"#;
    let definition = format!(
        "apiVersion: core.oam.dev/v1beta1\nkind: TraitDefinition\nmetadata:\n  name: {name}-greeter\n\
         spec:\n  schematic:\n    cue:\n      template: |\n        parameter: {{}}\n"
    );
    addon
        .file(
            &at("metadata.yaml"),
            &format!(
                "name: {name}\nversion: {version}\ndescription: Interoperability fixture {name}\n"
            ),
        )
        .file(&at("parameter.cue"), parameter)
        .file(&at("template.cue"), &template)
        .file(
            &at(&format!("definitions/{name}-greeter.yaml")),
            &definition,
        )
}

/// The system namespace, made as KubeVela's installation makes `vela-system` (vela itself never
/// creates it), with the registry store KubeVela's chart creates, holding no registry (`vela
/// addon list` fails without it).
async fn install_kubevela_state(sb: &Sandbox) {
    sb.api()
        .create_if_missing(&json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": sb.ns()}}))
        .await
        .unwrap();
    let mut store = Kind::CONFIG_MAP.object(json!({"name": "vela-addon-registry"}));
    store["data"] = json!({"registries": "{}"});
    sb.apply_as("vela-core", store).await;
}

/// Polls `probe` until it returns `Some`, at most [`WAIT`].
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(started.elapsed() < WAIT, "{what}: not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the addon's Application is at `version` (label `addons.oam.dev/version`), then
/// writes the status KubeVela's controller writes once it ran: the phase (`status.status`)
/// `running` at the Application's generation (what `vela addon enable` waits for, and what both
/// tools call `enabled`).
async fn mark_running(sb: &Sandbox, addon: &str, version: &str) {
    let name = format!("addon-{addon}");
    let app = eventually(&format!("Application `{name}` at {version}"), || async {
        sb.get(Kind::APPLICATION, &name)
            .await
            .filter(|app| app["metadata"]["labels"]["addons.oam.dev/version"] == version)
    })
    .await;
    sb.set_application_status(
        addon,
        json!({"status": "running", "observedGeneration": app["metadata"]["generation"]}),
    )
    .await;
}

/// Waits until none of `objects` (in the system namespace) is left: deleted, or collected by
/// the garbage collector once their owner went.
async fn until_gone(sb: &Sandbox, objects: &[(Kind, &str)]) {
    for (kind, name) in objects {
        eventually(&format!("{} `{name}` gone", kind.1), || async {
            sb.get(*kind, name).await.is_none().then_some(())
        })
        .await;
    }
}

fn stdout_of(cmd: &mut assert_cmd::Command) -> String {
    let output = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "addonctl failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn json_of(cmd: &mut assert_cmd::Command) -> Value {
    let out = stdout_of(cmd);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// `prefix-<the sandbox's run and number>`: `vela addon list` shows the addons enabled from a
/// directory in every namespace, so an addon of another run (its namespace still terminating)
/// must not share the name.
fn unique_name(sb: &Sandbox, prefix: &str) -> String {
    format!("{prefix}-{}", sb.ns().rsplit('-').next().unwrap())
}

/// The row of `addon` in `vela addon list`'s table, its columns split on runs of spaces.
fn vela_list_row(table: &str, addon: &str) -> Option<Vec<String>> {
    table
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .find(|columns| columns.first().map(String::as_str) == Some(addon))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_addon_vela_enabled_is_listed_upgraded_and_disabled_by_addonctl() {
    let sb = Sandbox::with_kubevela().await;
    let name: &str = &unique_name(&sb, "interop-from-vela");
    // vela enables 1.0.0 from a directory named after the addon (its name for vela); addonctl's
    // registries have 1.0.0 and 1.1.0.
    let enabled = cue_addon(TestAddon::new(name), name, name, "1.0.0");
    let older = cue_addon(TestAddon::new(name), "", name, "1.0.0");
    let newer = cue_addon(TestAddon::new(name), "", name, "1.1.0");
    let sb = sb.registries(&[&older, &newer]);
    let vela = Vela::new(&sb);
    install_kubevela_state(&sb).await;
    let dir = enabled.path().join(name);

    vela_applies(
        &vela,
        &sb,
        &["addon", "enable", dir.to_str().unwrap(), "greeting=hi"],
        name,
        "1.0.0",
    )
    .await;

    // What vela wrote: KubeVela's wire state.
    let app = sb
        .get(Kind::APPLICATION, &format!("addon-{name}"))
        .await
        .unwrap();
    assert_eq!(
        app["metadata"]["labels"],
        json!({
            "addons.oam.dev/name": name,
            "addons.oam.dev/version": "1.0.0",
            "addons.oam.dev/registry": "local",
        })
    );
    assert_eq!(
        app["metadata"]["annotations"]["addon.oam.dev/traitDefinitions"],
        format!("{name}-greeter")
    );
    assert_eq!(sb.stored_args(name).await, Some(json!({"greeting": "hi"})));
    let greeter = format!("{name}-greeter");
    let trait_definition = sb.get(Kind::TRAIT_DEFINITION, &greeter).await.unwrap();
    assert_eq!(
        trait_definition["metadata"]["ownerReferences"],
        owned_by(&app)
    );

    // addonctl sees it installed, at its version, with its arguments.
    let list = json_of(sb.cli().args(["list", "--installed", "-o", "json"]));
    let rows: Vec<&Value> = list["addons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["name"] == name)
        .collect();
    assert_eq!(rows.len(), 1, "{list:#}");
    assert_eq!(rows[0]["phase"], "enabled", "{list:#}");
    assert_eq!(rows[0]["installedVersion"], "1.0.0", "{list:#}");
    let status = json_of(sb.cli().args(["status", name, "-o", "json"]));
    assert_eq!(status["phase"], "enabled", "{status:#}");
    assert_eq!(status["installedVersion"], "1.0.0", "{status:#}");
    assert_eq!(status["registry"], "local", "{status:#}");
    let values = json_of(sb.cli().args(["get", "values", name, "-o", "json"]));
    assert_eq!(values, json!({"greeting": "hi"}));

    // addonctl upgrades it: the new version, the arguments merged over vela's.
    stdout_of(
        sb.cli()
            .args(["upgrade", name, "--version", "1.1.0", "replicas=3"]),
    );
    let app = sb
        .get(Kind::APPLICATION, &format!("addon-{name}"))
        .await
        .unwrap();
    assert_eq!(app["metadata"]["labels"]["addons.oam.dev/version"], "1.1.0");
    assert_eq!(
        app["spec"]["components"][0]["properties"]["objects"][0]["data"],
        json!({"greeting": "hi", "replicas": "3", "version": "1.1.0"})
    );
    assert_eq!(
        sb.stored_args(name).await,
        Some(json!({"greeting": "hi", "replicas": 3}))
    );
    let trait_definition = sb.get(Kind::TRAIT_DEFINITION, &greeter).await.unwrap();
    assert_eq!(
        trait_definition["metadata"]["ownerReferences"],
        owned_by(&app)
    );
    mark_running(&sb, name, "1.1.0").await;
    let out = vela.ok(&["addon", "status", name]).await;
    assert!(out.contains(&format!("{name}: enabled (1.1.0)")), "{out}");
    let table = vela.ok(&["addon", "list"]).await;
    assert_eq!(
        vela_list_row(&table, name),
        Some(
            [name, "local", "[1.1.0]", "enabled"]
                .map(str::to_owned)
                .to_vec()
        ),
        "{table}"
    );

    // addonctl disables it: everything vela and addonctl wrote goes, and vela agrees.
    stdout_of(sb.cli().args(["disable", name]));
    until_gone(
        &sb,
        &[
            (Kind::APPLICATION, &format!("addon-{name}")),
            (Kind::TRAIT_DEFINITION, &greeter),
            (Kind::SECRET, &format!("addon-secret-{name}")),
            (Kind::SECRET, &format!("addon-record-{name}")),
        ],
    )
    .await;
    let table = vela.ok(&["addon", "list"]).await;
    assert_eq!(vela_list_row(&table, name), None, "{table}");
    // Installed from a directory, in no registry: vela knows it no more.
    let error = vela.fails(&["addon", "status", name]).await;
    assert_eq!(
        error.trim_end(),
        format!("Error: addon '{name}' not found in cluster or any registry")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_addon_addonctl_enabled_is_listed_upgraded_and_disabled_by_vela() {
    let sb = Sandbox::with_kubevela().await;
    let name: &str = &unique_name(&sb, "interop-from-addonctl");
    // addonctl enables 1.0.0 from its registries; vela upgrades it to 1.1.0 from a directory
    // named after the addon.
    let older = cue_addon(TestAddon::new(name), "", name, "1.0.0");
    let newer = cue_addon(TestAddon::new(name), "", name, "1.1.0");
    let upgraded = cue_addon(TestAddon::new(name), name, name, "1.1.0");
    let sb = sb.registries(&[&older, &newer]);
    let vela = Vela::new(&sb);
    install_kubevela_state(&sb).await;

    stdout_of(
        sb.cli()
            .args(["enable", name, "--version", "1.0.0", "greeting=hi"]),
    );
    mark_running(&sb, name, "1.0.0").await;

    // vela sees it enabled, at its version.
    let table = vela.ok(&["addon", "list"]).await;
    assert_eq!(
        vela_list_row(&table, name),
        Some(
            [name, "local", "[1.0.0]", "enabled"]
                .map(str::to_owned)
                .to_vec()
        ),
        "{table}"
    );
    let out = vela.ok(&["addon", "status", name]).await;
    assert!(out.contains(&format!("{name}: enabled (1.0.0)")), "{out}");

    // vela upgrades it, its new arguments merged over addonctl's; addonctl sees the new version.
    let dir = upgraded.path().join(name);
    vela_applies(
        &vela,
        &sb,
        &["addon", "upgrade", dir.to_str().unwrap(), "replicas=2"],
        name,
        "1.1.0",
    )
    .await;
    let app = sb
        .get(Kind::APPLICATION, &format!("addon-{name}"))
        .await
        .unwrap();
    assert_eq!(
        app["spec"]["components"][0]["properties"]["objects"][0]["data"],
        json!({"greeting": "hi", "replicas": "2", "version": "1.1.0"})
    );
    let status = json_of(sb.cli().args(["status", name, "-o", "json"]));
    assert_eq!(status["phase"], "enabled", "{status:#}");
    assert_eq!(status["installedVersion"], "1.1.0", "{status:#}");
    let list = json_of(sb.cli().args(["list", "--installed", "-o", "json"]));
    assert_eq!(list["addons"][0]["installedVersion"], "1.1.0", "{list:#}");
    let values = json_of(sb.cli().args(["get", "values", name, "-o", "json"]));
    assert_eq!(values, json!({"greeting": "hi", "replicas": 2}));

    let out = vela.ok(&["addon", "disable", name]).await;
    assert!(
        out.contains(&format!("Successfully disable addon:{name}")),
        "{out}"
    );
    // vela deletes the Application; the garbage collector what it owns.
    let greeter = format!("{name}-greeter");
    until_gone(
        &sb,
        &[
            (Kind::APPLICATION, &format!("addon-{name}")),
            (Kind::TRAIT_DEFINITION, &greeter),
            (Kind::SECRET, &format!("addon-secret-{name}")),
        ],
    )
    .await;
    // Installed from a directory, in no registry: vela knows it no more.
    let error = vela.fails(&["addon", "status", name]).await;
    assert_eq!(
        error.trim_end(),
        format!("Error: addon '{name}' not found in cluster or any registry")
    );
    // addonctl sees it disabled too, though its record outlives the Application (nothing owns
    // it); `disable` removes that.
    let status = json_of(sb.cli().args(["status", name, "-o", "json"]));
    assert_eq!(status["phase"], "disabled", "{status:#}");
    let listed = json_of(sb.cli().args(["list", "-o", "json"]));
    let row = listed["addons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .cloned()
        .unwrap_or_default();
    assert_ne!(row["phase"], "enabled", "{listed:#}");
    let out = stdout_of(sb.cli().args(["disable", name]));
    assert_eq!(
        out,
        format!(
            "addon `{name}` disabled: 1 object deleted\n  deleted Secret `{}/addon-record-{name}` \
             on cluster `local`\n",
            sb.ns()
        )
    );
    let status = json_of(sb.cli().args(["status", name, "-o", "json"]));
    assert_eq!(status["phase"], "disabled", "{status:#}");
}

/// Runs `vela ARGS` (an enable or upgrade of `name`) while playing KubeVela's controller — the
/// Application running at `version` — and requires vela to say the addon is enabled.
async fn vela_applies(vela: &Vela, sb: &Sandbox, args: &[&str], name: &str, version: &str) {
    let applying = vela.spawn(args);
    mark_running(sb, name, version).await;
    let out = applying.succeeds().await;
    assert!(
        out.contains(&format!("Addon {name} enabled successfully.")),
        "{out}"
    );
}

/// The phase `vela addon status` prints (`<addon>: <phase> …`).
fn vela_phase(out: &str, addon: &str) -> String {
    let prefix = format!("{addon}: ");
    let line = out
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}…` line in:\n{out}"));
    line.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn both_tools_read_the_same_phase_from_each_application_status() {
    let sb = Sandbox::with_kubevela().await;
    let name: &str = &unique_name(&sb, "interop-phases");
    let addon = cue_addon(TestAddon::new(name), "", name, "1.0.0");
    let sb = sb.registries(&[&addon]);
    let vela = Vela::new(&sb);
    install_kubevela_state(&sb).await;
    stdout_of(sb.cli().args(["enable", name]));

    // Each status KubeVela's controller writes (its phases, in `status.status`, and a suspended
    // workflow), the phase vela gives and the one addonctl gives. addonctl tells two of vela's
    // `enabling` apart: a workflow that failed or was terminated (`failed`) and one waiting in a
    // suspend step (`suspend`).
    let cases = [
        (json!({}), "enabling", "enabling"),
        (json!({"status": "starting"}), "enabling", "enabling"),
        (json!({"status": "rendering"}), "enabling", "enabling"),
        (json!({"status": "runningWorkflow"}), "enabling", "enabling"),
        (json!({"status": "unhealthy"}), "enabling", "enabling"),
        (json!({"status": "running"}), "enabled", "enabled"),
        (json!({"status": "deleting"}), "disabling", "disabling"),
        (
            json!({"status": "runningWorkflow", "workflow": {"suspend": true}}),
            "suspend",
            "suspend",
        ),
        (
            json!({"status": "running", "workflow": {"suspend": true}}),
            "suspend",
            "suspend",
        ),
        (
            json!({"status": "workflowSuspending"}),
            "enabling",
            "suspend",
        ),
        (json!({"status": "workflowFailed"}), "enabling", "failed"),
        (
            json!({"status": "workflowTerminated"}),
            "enabling",
            "failed",
        ),
    ];
    let mut differences = Vec::new();
    for (written, vela_expected, addonctl_expected) in cases {
        sb.set_application_status(name, written.clone()).await;
        let out = vela.ok(&["addon", "status", name]).await;
        let by_vela = vela_phase(&out, name);
        let status = json_of(sb.cli().args(["status", name, "-o", "json"]));
        let by_addonctl = status["phase"].as_str().unwrap().to_owned();
        if (by_vela.as_str(), by_addonctl.as_str()) != (vela_expected, addonctl_expected) {
            differences.push(format!(
                "status {written}: vela `{by_vela}` (expected `{vela_expected}`), addonctl \
                 `{by_addonctl}` (expected `{addonctl_expected}`)"
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
