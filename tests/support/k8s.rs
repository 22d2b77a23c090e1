//! Real Kubernetes API servers for the control-plane tests.
//!
//! `scripts/k8s/up.sh --managed 3 --dir "$ADDONCTL_TEST_ENV"` (run by `scripts/test.sh`) starts a
//! `control-plane` and `managed-1` … `managed-3` kube-apiservers and describes them in `env.json`.
//! Here:
//! - [`Env::get`] reads that file once (a missing environment fails every test that needs it,
//!   saying how to start it);
//! - `control-plane` plays "KubeVela installed": the minimal KubeVela CRDs of
//!   `tests/fixtures/crds/kubevela.yaml` are applied there once per run and waited for;
//!   `managed-1` plays "no KubeVela" and never gets them;
//! - a [`Sandbox`] gives one test its own system namespace (`t-<test>-<run><n>`), a
//!   [`Context`] on it, the `addonctl` command line pointed at it, and the non-admin user's view;
//!   the namespaces it made are deleted when it is dropped;
//! - every cluster runs kube-controller-manager, kube-scheduler and kwok with one node
//!   ([`NODE`]): workloads become ready through the real controllers; a test that needs a
//!   workload not ready (yet) holds its pods with a node selector ([`pool_label`]) and releases
//!   them on a cluster when it chooses ([`release_pods_on`], [`hold_pods_on`]);
//! - with `--managed 3`, a sandbox can join `managed-N` clusters ([`Sandbox::join`]); its objects
//!   there live in a namespace named after its system namespace, deleted with the sandbox;
//!   `managed-3` ([`Env::fault_cluster`]) is reserved for tests that stop its API server
//!   ([`Stopped`], under [`fault_cluster_lock`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use addonctl::apply::StepReport;
use addonctl::cluster::{Cluster, ConnectOptions};
use addonctl::context::NoopReporter;
use addonctl::context::{Context, Settings};
use addonctl::plan::EnableRequest;
use addonctl::source::catalog::Catalog;
use addonctl::state::record::{self, Record};
use assert_cmd::Command;
use base64::Engine as _;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::support::builders::TestAddon;
use crate::support::root;

/// How long to wait for the API server to reach a state (CRDs established, …).
const WAIT: Duration = Duration::from_secs(30);

/// The test environment described by `env.json`.
#[derive(Debug, Deserialize)]
pub struct Env {
    /// The environment's directory.
    pub dir: PathBuf,
    /// The CA of every API server.
    pub ca_file: PathBuf,
    /// The API servers.
    pub clusters: Vec<ClusterEnv>,
}

/// One API server of the environment.
#[derive(Debug, Deserialize)]
pub struct ClusterEnv {
    /// `control-plane` or `managed-<n>`.
    pub name: String,
    /// Its address.
    pub server: String,
    /// The admin's kubeconfig.
    pub kubeconfig: PathBuf,
    /// The non-admin user's kubeconfig (`kubeconfig-<cluster>-user`).
    pub user_kubeconfig: PathBuf,
    /// The non-admin user's name.
    pub user_name: String,
    /// The admin's token.
    pub admin_token: String,
    /// The file holding the API server's PID (`pids/kube-apiserver-<cluster>.pid`).
    #[serde(default)]
    pub pid_file: Option<PathBuf>,
}

impl Env {
    /// The environment, read once. Panics, saying how to start it, when there is none.
    pub fn get() -> &'static Env {
        static ENV: OnceLock<Env> = OnceLock::new();
        ENV.get_or_init(|| {
            let dir = std::env::var_os("ADDONCTL_TEST_ENV")
                .map_or_else(|| PathBuf::from("/tmp/addonctl-k8s"), PathBuf::from);
            let file = dir.join("env.json");
            let text = fs_err::read_to_string(&file).unwrap_or_else(|e| {
                panic!(
                    "no Kubernetes test environment ({e}).\nThese tests run against real API \
                     servers: run `scripts/test.sh`, which starts them, or start them yourself \
                     with `scripts/k8s/up.sh --managed 3 --dir DIR` and set ADDONCTL_TEST_ENV=DIR \
                     (default /tmp/addonctl-k8s)."
                )
            });
            serde_json::from_str(&text).unwrap_or_else(|e| {
                panic!("{}: not an environment description: {e}", file.display())
            })
        })
    }

    /// One API server by name.
    pub fn cluster(&self, name: &str) -> &ClusterEnv {
        self.clusters
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "the test environment in {} has no cluster `{name}`; start it with \
                     `scripts/k8s/up.sh --managed 3`",
                    self.dir.display()
                )
            })
    }

    /// The cluster where KubeVela's CRDs are served.
    pub fn control_plane(&self) -> &ClusterEnv {
        self.cluster("control-plane")
    }

    /// The cluster where they never are.
    pub fn managed(&self) -> &ClusterEnv {
        self.cluster("managed-1")
    }

    /// `managed-<n>` (1-based). Tests that stop an API server use [`Env::fault_cluster`] only.
    pub fn managed_n(&self, n: usize) -> &ClusterEnv {
        self.cluster(&format!("managed-{n}"))
    }

    /// The managed cluster reserved for fault injection (`managed-3`): only tests holding
    /// [`fault_cluster_lock`] use it, so stopping it never disturbs another test.
    pub fn fault_cluster(&self) -> &ClusterEnv {
        self.managed_n(3)
    }

    /// A kubeconfig (written under `dir`) for a server that nothing listens on.
    pub fn unreachable_kubeconfig(&self, dir: &Path) -> (PathBuf, String) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = format!("https://127.0.0.1:{port}");
        let path = dir.join("kubeconfig-unreachable");
        let cluster = self.control_plane();
        let kubeconfig = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "gone", "cluster": {
                "server": server,
                "certificate-authority": self.ca_file,
            }}],
            "users": [{"name": "admin", "user": {"token": cluster.admin_token}}],
            "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "admin"}}],
            "current-context": "gone",
        });
        fs_err::write(&path, serde_json::to_string(&kubeconfig).unwrap()).unwrap();
        (path, server)
    }
}

impl ClusterEnv {
    /// A connection with the admin's credentials.
    pub async fn admin(&self) -> Cluster {
        connect(&self.kubeconfig).await
    }
}

async fn connect(kubeconfig: &Path) -> Cluster {
    Cluster::connect(&ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: None,
        ..ConnectOptions::default()
    })
    .await
    .unwrap()
}

/// A kind, as `apiVersion` and `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind(pub &'static str, pub &'static str);

impl Kind {
    pub const NAMESPACE: Kind = Kind("v1", "Namespace");
    pub const SECRET: Kind = Kind("v1", "Secret");
    pub const CONFIG_MAP: Kind = Kind("v1", "ConfigMap");
    pub const SERVICE_ACCOUNT: Kind = Kind("v1", "ServiceAccount");
    pub const APPLICATION: Kind = Kind("core.oam.dev/v1beta1", "Application");
    pub const COMPONENT_DEFINITION: Kind = Kind("core.oam.dev/v1beta1", "ComponentDefinition");
    pub const TRAIT_DEFINITION: Kind = Kind("core.oam.dev/v1beta1", "TraitDefinition");
    pub const POLICY_DEFINITION: Kind = Kind("core.oam.dev/v1beta1", "PolicyDefinition");
    pub const WORKFLOW_STEP_DEFINITION: Kind =
        Kind("core.oam.dev/v1beta1", "WorkflowStepDefinition");
    const CRD: Kind = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    pub const CUSTOM_RESOURCE_DEFINITION: Kind = Kind::CRD;
    pub const SERVICE: Kind = Kind("v1", "Service");
    pub const ROLE: Kind = Kind("rbac.authorization.k8s.io/v1", "Role");
    pub const DEPLOYMENT: Kind = Kind("apps/v1", "Deployment");
    pub const DAEMON_SET: Kind = Kind("apps/v1", "DaemonSet");
    pub const LEASE: Kind = Kind("coordination.k8s.io/v1", "Lease");

    /// Every namespaced kind an addon puts into the system namespace.
    pub const ADDON_KINDS: [Kind; 8] = [
        Kind::SECRET,
        Kind::CONFIG_MAP,
        Kind::SERVICE_ACCOUNT,
        Kind::APPLICATION,
        Kind::COMPONENT_DEFINITION,
        Kind::TRAIT_DEFINITION,
        Kind::POLICY_DEFINITION,
        Kind::WORKFLOW_STEP_DEFINITION,
    ];

    /// An object of this kind with `metadata` (add the rest by indexing).
    pub fn object(self, metadata: Value) -> Value {
        json!({"apiVersion": self.0, "kind": self.1, "metadata": metadata})
    }

    /// Its group/version/kind.
    pub fn gvk(self) -> GroupVersionKind {
        let (group, version) = self.0.split_once('/').unwrap_or(("", self.0));
        GroupVersionKind::gvk(group, version, self.1)
    }
}

/// KubeVela's CRDs on the control plane, applied once per test run and waited for.
async fn install_kubevela_crds(cluster: &ClusterEnv) {
    static INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            // A connection of its own: this runs on one test's runtime, which ends with it.
            let admin = cluster.admin().await;
            let file = root().join("tests/fixtures/crds/kubevela.yaml");
            let text = fs_err::read_to_string(&file).unwrap();
            let mut crds = Vec::new();
            for document in serde_yaml::Deserializer::from_str(&text) {
                let crd = Value::deserialize(document).unwrap();
                if !crd.is_null() {
                    admin.apply(&crd, "default").await.unwrap();
                    crds.push(crd);
                }
            }
            for crd in &crds {
                wait_until_served(&admin, crd).await;
            }
        })
        .await;
}

async fn wait_until_served(cluster: &Cluster, crd: &Value) {
    let name = crd["metadata"]["name"].as_str().unwrap();
    let spec = &crd["spec"];
    let gvk = GroupVersionKind::gvk(
        spec["group"].as_str().unwrap(),
        spec["versions"][0]["name"].as_str().unwrap(),
        spec["names"]["kind"].as_str().unwrap(),
    );
    let started = Instant::now();
    loop {
        let stored = cluster.get(&Kind::CRD.gvk(), None, name).await.unwrap();
        let established = stored.is_some_and(|crd| {
            serde_json::to_value(crd).unwrap()["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
        cluster.refresh_discovery();
        if established && cluster.serves(&gvk).await.unwrap() {
            return;
        }
        assert!(
            started.elapsed() < WAIT,
            "CRD `{name}` is not established and served after {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A fresh namespace name for the running test: `t-<test name, shortened>-<run><n>`, unique
/// across runs too (a namespace deleted by an earlier run may still be terminating).
fn namespace_for_current_test() -> String {
    static RUN: OnceLock<String> = OnceLock::new();
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let run = RUN.get_or_init(|| {
        let seconds = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        format!("{:05x}", seconds & 0xf_ffff)
    });
    let thread = std::thread::current();
    let test = thread
        .name()
        .and_then(|n| n.rsplit("::").next())
        .unwrap_or("test");
    let short: String = test
        .chars()
        .take(24)
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    format!("t-{}-{run}{n}", short.trim_end_matches('-'))
}

/// The `ownerReferences` that make `owner` (as stored) the controller of an object.
pub fn owned_by(owner: &Value) -> Value {
    json!([{
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

/// A CRD `plural.group` of kind `Widget`: of two such CRDs in one group, the one made second is
/// never `Established` (its kind is taken).
pub fn widget_crd(group: &str, plural: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural, "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
}

/// Asserts that `crd` (as stored) is not `Established` and that the enable that waited for it
/// (`error`) said so.
pub fn assert_never_established(crd: &Value, error: &str) {
    let conditions = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True"),
        "{crd:#}"
    );
    assert!(error.contains("did not become Established"), "{error}");
}

/// `{"a": 1}` → the argument map the library takes.
pub fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// An object on another cluster: its admin's kubeconfig, kind, namespace, name.
type RemoteObject = (PathBuf, Kind, Option<String>, String);

/// One test's system namespace on one cluster, with a [`Context`] on it.
pub struct Sandbox {
    /// The context every library call of the test uses.
    pub ctx: Context,
    /// The cluster.
    pub cluster: &'static ClusterEnv,
    registries: Vec<PathBuf>,
    cleanup: Mutex<Vec<String>>,
    /// Objects on other clusters to delete with the sandbox: kubeconfig, kind, namespace, name.
    remote_cleanup: Mutex<Vec<RemoteObject>>,
}

impl Sandbox {
    /// On the control plane, where KubeVela's CRDs are served.
    pub async fn with_kubevela() -> Sandbox {
        let cluster = Env::get().control_plane();
        install_kubevela_crds(cluster).await;
        Self::on(cluster).await
    }

    /// On a cluster without KubeVela's CRDs.
    pub async fn without_kubevela() -> Sandbox {
        Self::on(Env::get().managed()).await
    }

    async fn on(cluster: &'static ClusterEnv) -> Sandbox {
        let namespace = namespace_for_current_test();
        Sandbox {
            ctx: context(&cluster.kubeconfig, &namespace, &[]).await,
            cluster,
            registries: Vec::new(),
            cleanup: Mutex::new(vec![namespace]),
            remote_cleanup: Mutex::new(Vec::new()),
        }
    }

    /// Searches these local registries (one addon each, in order) before the built-in one, in
    /// the library's context and on the command line.
    pub fn registries(mut self, addons: &[&TestAddon]) -> Sandbox {
        self.registries = addons.iter().map(|a| a.path_buf()).collect();
        self.ctx.catalog = Catalog::new(&self.registries).unwrap();
        self
    }

    /// Deploys components with the direct engine, even where KubeVela's CRDs are served (the
    /// library's context and the command line, `--engine direct`).
    pub fn direct(mut self) -> Sandbox {
        self.ctx.engine = addonctl::context::EngineChoice::Direct;
        self
    }

    /// Joins `cluster` as `name` with `labels` (its admin's kubeconfig), and deletes the
    /// sandbox's namespace there when the sandbox is dropped.
    pub async fn join(
        &self,
        name: &str,
        cluster: &ClusterEnv,
        labels: &[(&str, &str)],
    ) -> addonctl::apply::clusters::ClusterRow {
        self.track(cluster);
        let labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        addonctl::apply::clusters::join(
            &self.ctx.applier(),
            name,
            &cluster.kubeconfig,
            None,
            &labels,
        )
        .await
        .unwrap_or_else(|e| panic!("joining `{name}`: {e}"))
    }

    /// Deletes the sandbox's namespace on `cluster` when the sandbox is dropped.
    pub fn track(&self, cluster: &ClusterEnv) {
        self.clean_up_on(cluster, Kind::NAMESPACE, None, &self.ctx.namespace);
    }

    /// Deletes an object on `cluster` when the sandbox is dropped.
    pub fn clean_up_on(
        &self,
        cluster: &ClusterEnv,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
    ) {
        let entry = (
            cluster.kubeconfig.clone(),
            kind,
            namespace.map(str::to_owned),
            name.to_owned(),
        );
        let mut list = self.remote_cleanup.lock().unwrap();
        if !list.contains(&entry) {
            list.push(entry);
        }
    }

    /// The system namespace.
    pub fn ns(&self) -> &str {
        &self.ctx.namespace
    }

    /// The control plane, as the library sees it.
    pub fn api(&self) -> &Cluster {
        &self.ctx.cluster
    }

    /// The same sandbox seen by the user without rights.
    pub async fn user_context(&self) -> Context {
        context(&self.cluster.user_kubeconfig, self.ns(), &self.registries).await
    }

    /// `addonctl` with the admin's kubeconfig, the system namespace and the registries.
    pub fn cli(&self) -> Command {
        self.cli_with(&self.cluster.kubeconfig)
    }

    /// `addonctl` as the user without rights.
    pub fn cli_as_user(&self) -> Command {
        self.cli_with(&self.cluster.user_kubeconfig)
    }

    fn cli_with(&self, kubeconfig: &Path) -> Command {
        let mut cmd = Command::cargo_bin("addonctl").unwrap();
        cmd.env_remove("KUBECONFIG")
            .env_remove("KUBEVELA_SYSTEM_NAMESPACE")
            .env_remove("ADDONCTL_ENGINE")
            .env_remove("ADDONCTL_CLUSTER_TIMEOUT")
            .env("NO_COLOR", "1")
            .args(self.cli_args(kubeconfig));
        cmd
    }

    fn cli_args(&self, kubeconfig: &Path) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec!["--kubeconfig".into(), kubeconfig.into()];
        args.extend(["--system-namespace".into(), self.ns().into()]);
        for dir in &self.registries {
            args.extend(["--registry-dir".into(), dir.into()]);
        }
        if self.ctx.engine == addonctl::context::EngineChoice::Direct {
            args.extend(["--engine".into(), "direct".into()]);
        }
        args
    }

    /// [`Sandbox::cli`] as a plain process command, for running it in the background.
    pub fn command(&self) -> std::process::Command {
        self.command_with(&self.cluster.kubeconfig)
    }

    /// [`Sandbox::cli_as_user`] as a plain process command.
    pub fn command_as_user(&self) -> std::process::Command {
        self.command_with(&self.cluster.user_kubeconfig)
    }

    fn command_with(&self, kubeconfig: &Path) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("addonctl"));
        cmd.env_remove("KUBECONFIG")
            .env_remove("KUBEVELA_SYSTEM_NAMESPACE")
            .env_remove("ADDONCTL_ENGINE")
            .env_remove("ADDONCTL_CLUSTER_TIMEOUT")
            .env("NO_COLOR", "1")
            .args(self.cli_args(kubeconfig));
        cmd
    }

    /// Enables an addon with the library.
    pub async fn enable(&self, reference: &str, given: Value) -> addonctl::Result<Vec<StepReport>> {
        let request = EnableRequest {
            reference: reference.to_owned(),
            args: args(given).into(),
            ..EnableRequest::default()
        };
        addonctl::apply::enable(&self.ctx, &request, &NoopReporter).await
    }

    /// Creates another namespace `<system namespace>-<suffix>`, deleted with the sandbox.
    pub async fn other_namespace(&self, suffix: &str) -> String {
        let name = format!("{}-{suffix}", self.ns());
        self.cleanup.lock().unwrap().push(name.clone());
        self.api()
            .create_if_missing(
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            )
            .await
            .unwrap();
        name
    }

    /// An object of the system namespace (of the cluster for cluster-scoped kinds), as JSON.
    pub async fn get(&self, kind: Kind, name: &str) -> Option<Value> {
        self.api()
            .get(&kind.gvk(), Some(self.ns()), name)
            .await
            .unwrap()
            .map(|o| serde_json::to_value(o).unwrap())
    }

    /// Panics naming every one of `objects` (in the system namespace) that is missing.
    pub async fn assert_present(&self, objects: &[(Kind, &str)]) {
        let missing = self.filter_by_existence(objects, false).await;
        assert!(missing.is_empty(), "missing: {missing:?}");
    }

    /// Panics naming every one of `objects` (in the system namespace) that is still there.
    pub async fn assert_absent(&self, objects: &[(Kind, &str)]) {
        let left = self.filter_by_existence(objects, true).await;
        assert!(left.is_empty(), "still there: {left:?}");
    }

    async fn filter_by_existence(&self, objects: &[(Kind, &str)], exists: bool) -> Vec<String> {
        let mut found = Vec::new();
        for (kind, name) in objects {
            if self.get(*kind, name).await.is_some() == exists {
                found.push(format!("{} `{name}`", kind.1));
            }
        }
        found
    }

    /// Every object of a kind in the system namespace, as JSON.
    pub async fn list(&self, kind: Kind) -> Vec<Value> {
        self.api()
            .list(&kind.gvk(), Some(self.ns()), "")
            .await
            .unwrap()
            .into_iter()
            .map(|o| serde_json::to_value(o).unwrap())
            .collect()
    }

    /// `Kind name` → resourceVersion of the system namespace and of every object an addon may
    /// put into it.
    pub async fn resource_versions(&self) -> BTreeMap<String, String> {
        let listings = Kind::ADDON_KINDS
            .iter()
            .map(|kind| async move { (*kind, self.list(*kind).await) });
        let mut listings = futures::future::join_all(listings).await;
        let namespace = self.get(Kind::NAMESPACE, self.ns()).await;
        listings.push((Kind::NAMESPACE, namespace.into_iter().collect()));
        let mut versions = BTreeMap::new();
        for (Kind(_, kind), objects) in listings {
            for object in objects {
                let metadata = &object["metadata"];
                versions.insert(
                    format!("{kind} {}", metadata["name"].as_str().unwrap()),
                    metadata["resourceVersion"].as_str().unwrap().to_owned(),
                );
            }
        }
        versions
    }

    /// Server-side applies an object as another field manager (a user's kubectl, KubeVela's own
    /// CLI); a namespaced object without a namespace goes to the system namespace.
    pub async fn apply_as(&self, manager: &str, object: Value) -> Value {
        apply_as_on(self.api(), manager, object, self.ns()).await
    }

    /// The arguments stored for an addon (its `addon-secret-<name>`), `None` without that Secret.
    pub async fn stored_args(&self, addon: &str) -> Option<Value> {
        let secret = self
            .get(Kind::SECRET, &format!("addon-secret-{addon}"))
            .await?;
        let encoded = secret["data"]["addonParameterDataKey"].as_str().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        Some(serde_json::from_slice(&bytes).unwrap())
    }

    /// An addon's record (its `addon-record-<name>` Secret).
    pub async fn record(&self, addon: &str) -> Record {
        let secret = self
            .get(Kind::SECRET, &record::record_name(addon))
            .await
            .unwrap_or_else(|| panic!("no record of `{addon}`"));
        Record::from_secret(&secret).unwrap()
    }

    /// Replaces an addon Application's `status` through the status subresource, as KubeVela's
    /// controller does (`Value::Null` leaves none).
    pub async fn set_application_status(&self, addon: &str, status: Value) {
        let resource = ApiResource::from_gvk_with_plural(&Kind::APPLICATION.gvk(), "applications");
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.api().client().clone(), self.ns(), &resource);
        // A merge patch merges maps: clear the old status first.
        for patch in [json!({ "status": null }), json!({ "status": status })] {
            api.patch_status(
                &format!("addon-{addon}"),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
            .unwrap();
        }
    }
}

/// Server-side applies an object on `cluster` as another field manager; a namespaced object
/// without a namespace goes to `default_namespace`.
pub async fn apply_as_on(
    cluster: &Cluster,
    manager: &str,
    object: Value,
    default_namespace: &str,
) -> Value {
    let gvk = addonctl::cluster::gvk_of(&object).unwrap();
    let (resource, capabilities) = cluster.resource(&gvk).await.unwrap().unwrap();
    let client = cluster.client().clone();
    let api: Api<DynamicObject> = if capabilities.scope == Scope::Namespaced {
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or(default_namespace);
        Api::namespaced_with(client, namespace, &resource)
    } else {
        Api::all_with(client, &resource)
    };
    let name = object["metadata"]["name"].as_str().unwrap();
    let stored = api
        .patch(
            name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap();
    serde_json::to_value(stored).unwrap()
}

/// One object on `cluster` (namespaced kinds in `namespace`), as JSON; `None` when missing.
pub async fn get_on(
    cluster: &Cluster,
    kind: Kind,
    namespace: Option<&str>,
    name: &str,
) -> Option<Value> {
    cluster
        .get(&kind.gvk(), namespace, name)
        .await
        .unwrap_or_else(|e| panic!("reading {} `{name}` on `{}`: {e}", kind.1, cluster.server()))
        .map(|o| serde_json::to_value(o).unwrap())
}

/// Every object of a kind on `cluster` (in `namespace`, or everywhere), as JSON.
pub async fn list_on(cluster: &Cluster, kind: Kind, namespace: Option<&str>) -> Vec<Value> {
    cluster
        .list(&kind.gvk(), namespace, "")
        .await
        .unwrap_or_else(|e| panic!("listing {} on `{}`: {e}", kind.1, cluster.server()))
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

/// Merge-patches an object's `status` subresource on `cluster`, as its controller (or the
/// kubelet, through it) would; `plural` is the kind's resource name.
pub async fn patch_status_on(
    cluster: &Cluster,
    kind: Kind,
    plural: &str,
    namespace: &str,
    name: &str,
    status: Value,
) {
    let resource = ApiResource::from_gvk_with_plural(&kind.gvk(), plural);
    let api: Api<DynamicObject> =
        Api::namespaced_with(cluster.client().clone(), namespace, &resource);
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap_or_else(|e| {
        panic!(
            "patching the status of {} `{namespace}/{name}`: {e}",
            kind.1
        )
    });
}

/// The node every cluster of the environment has: kwok plays its kubelet, so a pod bound to it
/// becomes Running and Ready (a Job's pods Succeeded) and the real controllers report the
/// workload ready.
pub const NODE: &str = "kwok-node";

/// The node selector that holds the pods of a workload in `namespace` until the test releases
/// them on a cluster ([`release_pods_on`]): Rhai for a pod template's `spec`, e.g.
/// `spec: #{ nodeSelector: held_pool(ns), containers: [...] }` after `let held_pool = ...`. The
/// label key is `addonctl.test/<namespace>`: one per test, so tests sharing a node never release
/// each other's pods.
pub fn pool_label(namespace: &str) -> String {
    format!("addonctl.test/{namespace}")
}

/// The Rhai function `held_pool(ns)` a test addon's template defines to hold its pods (see
/// [`pool_label`]).
pub const HELD_POOL_RHAI: &str = r#"fn held_pool(ns) { let pool = #{}; pool["addonctl.test/" + ns] = "scheduled"; pool }
"#;

/// Lets the held pods of `namespace` be scheduled on `cluster`: labels its node, the scheduler
/// binds them, kwok makes them ready.
pub async fn release_pods_on(cluster: &Cluster, namespace: &str) {
    label_node(cluster, namespace, json!("scheduled")).await;
}

/// Holds the pods of `namespace` on `cluster` again: the node loses the label and the pods are
/// deleted, so their controllers' new pods stay Pending and the workload is no longer ready.
pub async fn hold_pods_on(cluster: &Cluster, namespace: &str) {
    label_node(cluster, namespace, Value::Null).await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(cluster.client().clone(), namespace);
    pods.delete_collection(
        &kube::api::DeleteParams::default().grace_period(0),
        &kube::api::ListParams::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("deleting the pods of `{namespace}`: {e}"));
}

async fn label_node(cluster: &Cluster, namespace: &str, value: Value) {
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(cluster.client().clone());
    let mut labels = Map::new();
    labels.insert(pool_label(namespace), value);
    nodes
        .patch(
            NODE,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": labels } })),
        )
        .await
        .unwrap_or_else(|e| panic!("labelling node `{NODE}` on `{}`: {e}", cluster.server()));
}

/// The Rhai function `held_spread(ns)` a test addon's template defines to hold the pods of a
/// DaemonSet, as its pod template's `topologySpreadConstraints`. A node selector does not hold
/// them: a DaemonSet's controller wants pods only on the nodes it matches, none (0 of 0, ready).
/// It ignores spread constraints, but the scheduler binds no pod whose constraint's topology key
/// (the label of [`pool_label`]) its node lacks: the DaemonSet wants a pod that stays Pending
/// until [`release_pods_on`], and [`hold_pods_on`] holds it again.
pub const HELD_SPREAD_RHAI: &str = r#"fn held_spread(ns) { [#{ maxSkew: 1, topologyKey: "addonctl.test/" + ns, whenUnsatisfiable: "DoNotSchedule" }] }
"#;

/// The version `cluster`'s API server reports (`gitVersion` of `/version`, e.g. `v1.37.2`).
pub async fn server_version(cluster: &ClusterEnv) -> String {
    let admin = cluster.admin().await;
    admin
        .client()
        .apiserver_version()
        .await
        .unwrap_or_else(|e| panic!("the version of `{}`: {e}", cluster.name))
        .git_version
}

/// Held by every test that stops [`Env::fault_cluster`]: one at a time.
pub async fn fault_cluster_lock() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let guard = LOCK.lock().await;
    // A run that was killed while the server was stopped left it so.
    signal(Env::get().fault_cluster(), "CONT");
    guard
}

fn apiserver_pid(cluster: &ClusterEnv) -> String {
    let file = cluster.pid_file.clone().unwrap_or_else(|| {
        Env::get()
            .dir
            .join(format!("pids/kube-apiserver-{}.pid", cluster.name))
    });
    let pid = fs_err::read_to_string(&file).unwrap().trim().to_owned();
    assert!(
        !pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit()),
        "{}: not a PID: {pid:?}",
        file.display()
    );
    pid
}

fn signal(cluster: &ClusterEnv, signal: &str) {
    let pid = apiserver_pid(cluster);
    assert!(send(&pid, signal), "kill -{signal} {pid} failed");
}

fn send(pid: &str, signal: &str) -> bool {
    std::process::Command::new("kill")
        .args([&format!("-{signal}"), pid])
        .status()
        .is_ok_and(|s| s.success())
}

/// An API server stopped with SIGSTOP (its port still accepts connections, nothing answers);
/// resumed with SIGCONT when dropped, also when the test panics.
#[must_use = "the server is resumed when this is dropped"]
pub struct Stopped {
    cluster: &'static ClusterEnv,
    pid: String,
}

impl Stopped {
    /// Stops `cluster`'s API server. Hold [`fault_cluster_lock`] while it is stopped.
    pub fn apiserver(cluster: &'static ClusterEnv) -> Stopped {
        let pid = apiserver_pid(cluster);
        let stopped = Stopped { cluster, pid };
        assert!(
            send(&stopped.pid, "STOP"),
            "kill -STOP {} failed",
            stopped.pid
        );
        stopped
    }

    /// Resumes it now, and waits until it answers again.
    pub async fn resume(self) {
        let cluster = self.cluster;
        drop(self);
        let admin = cluster.admin().await;
        let started = Instant::now();
        while admin.kubernetes_version().await.is_err() {
            assert!(
                started.elapsed() < WAIT,
                "`{}` did not come back",
                cluster.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        // Never panics: this runs while a failing test unwinds too.
        if !send(&self.pid, "CONT") {
            eprintln!(
                "could not resume `{}` (PID {})",
                self.cluster.name, self.pid
            );
        }
    }
}

async fn context(kubeconfig: &Path, namespace: &str, registries: &[PathBuf]) -> Context {
    let settings = Settings {
        registry_dirs: registries.to_vec(),
        ..Settings::new(namespace)
    };
    Context::with_cluster(&settings, connect(kubeconfig).await).unwrap()
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let namespaces = std::mem::take(&mut *self.cleanup.lock().unwrap());
        let remote = std::mem::take(&mut *self.remote_cleanup.lock().unwrap());
        let kubeconfig = self.cluster.kubeconfig.clone();
        // The test's runtime cannot be blocked on from here: delete from a thread of our own.
        let deleting = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let admin = connect(&kubeconfig).await;
                for namespace in namespaces {
                    let _ = admin.delete(&Kind::NAMESPACE.gvk(), None, &namespace).await;
                }
                for (kubeconfig, kind, namespace, name) in remote.into_iter().rev() {
                    let other = connect(&kubeconfig).await;
                    let gvk = kind.gvk();
                    let deleting = other.delete(&gvk, namespace.as_deref(), &name);
                    let _ = tokio::time::timeout(Duration::from_secs(5), deleting).await;
                }
            });
        });
        let _ = deleting.join();
    }
}
