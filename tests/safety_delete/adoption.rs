//! What an addon may not touch (addonctl's and KubeVela's state), what the plan flags, and
//! adoption (`--adopt`, the prompt on a terminal, giving back on disable).

use serde_json::{json, Value};

use addonctl::Error;

use super::{addon, output_of, persons_config_map, sandbox, CONFIG_MAPS};
use crate::support::k8s::{apply_as_on, get_on, Env, Kind, Sandbox};

// ------------------------------------------------------------------------------------- state

#[tokio::test(flavor = "multi_thread")]
async fn an_addon_rendering_addonctl_or_kubevela_state_is_refused_and_nothing_is_applied() {
    let registry = addon(
        "takeregistry",
        CONFIG_MAPS,
        r#"#{ store: #{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "vela-addon-registry" },
             data: #{ registries: "{}" } } }"#,
    );
    let record = addon(
        "takerecord",
        r#"objects.push(#{ apiVersion: "v1", kind: "Secret",
            metadata: #{ name: "addon-record-victim", namespace: ns }, data: #{} });"#,
        "#{}",
    );
    let cluster = addon(
        "takecluster",
        r#"objects.push(#{ apiVersion: "v1", kind: "Secret",
            metadata: #{ name: "m1", namespace: ns }, stringData: #{ endpoint: "https://127.0.0.1:1" } });"#,
        "#{}",
    );
    let (sb, m1) = sandbox(&[&registry, &record, &cluster]).await;

    for (name, object, why) in [
        (
            "takeregistry",
            "ConfigMap `vela-addon-registry` (auxiliary output `store`)",
            "registry store",
        ),
        ("takerecord", "Secret `", "an addon's record"),
        (
            "takecluster",
            "Secret `",
            "credential Secret of a joined cluster",
        ),
    ] {
        let error = sb.enable(name, json!({})).await.unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(error, Error::ProtectedObjects { .. }),
            "{name}: {error:?}"
        );
        assert!(
            message.contains(object)
                && message.contains(why)
                && message.contains("nothing was applied"),
            "{name}: {message}"
        );
        assert!(
            sb.get(Kind::SECRET, &format!("addon-record-{name}"))
                .await
                .is_none(),
            "{name}"
        );
    }
    assert!(sb
        .get(Kind::CONFIG_MAP, "vela-addon-registry")
        .await
        .is_none());
    assert!(
        get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.is_none(),
        "nothing reached m1"
    );
    let secret = sb.get(Kind::SECRET, "m1").await.unwrap();
    assert!(secret["metadata"]["labels"]
        .get("cluster.core.oam.dev/cluster-credential-type")
        .is_some());

    // The same with `--override-definitions` and through the command line: exit 2.
    let (ok, _, stderr) = output_of(sb.cli().args([
        "enable",
        "takeregistry",
        "--override-definitions",
        "--adopt",
    ]));
    assert!(!ok);
    assert!(stderr.contains("vela-addon-registry"), "{stderr}");
}

// ----------------------------------------------------------------------- privileged, adoption

const PRIVILEGED: &str = r#"objects.push(#{ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding",
    metadata: #{ name: `${ns}-everyone` },
    roleRef: #{ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [#{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "system:authenticated" }] });
objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${ns}-cm`, namespace: "kube-system" } });
objects.push(#{ apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration",
    metadata: #{ name: `${ns}-hook` }, webhooks: [] });"#;

#[tokio::test(flavor = "multi_thread")]
async fn privileged_and_foreign_objects_are_flagged_in_the_plan() {
    let loud = addon("loud", PRIVILEGED, "#{}");
    let (sb, _m1) = sandbox(&[&loud]).await;

    let (ok, stdout, stderr) =
        output_of(sb.cli().args(["enable", "loud", "--dry-run", "-o", "json"]));

    assert!(ok, "{stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    let flags: Vec<(String, String)> = plan["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_owned(),
                f["object"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let ns = sb.ns();
    for (kind, object) in [
        (
            "privilegedRbac",
            format!("ClusterRoleBinding `{ns}-everyone`"),
        ),
        (
            "foreignNamespace",
            format!("ConfigMap `kube-system/{ns}-cm`"),
        ),
        (
            "webhook",
            format!("ValidatingWebhookConfiguration `{ns}-hook`"),
        ),
    ] {
        assert!(
            flags
                .iter()
                .any(|(k, o)| k == kind && o.starts_with(&object)),
            "{kind} {object} not flagged: {flags:?}"
        );
    }
    let (ok, stdout, stderr) = output_of(sb.cli().args(["enable", "loud", "--dry-run"]));
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "flagged (privilegedRbac): addon `loud`: ClusterRoleBinding `{ns}-everyone`"
        )) && stdout.contains("system:authenticated"),
        "{stdout}"
    );
    assert!(
        sb.get(Kind::SECRET, "addon-record-loud").await.is_none(),
        "a dry run changes nothing"
    );
}

/// A ConfigMap `settings` in the system namespace with addonctl's values.
const SETTINGS: &str = r#"objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "settings" },
    data: #{ mode: "ours", extra: "ours" } });"#;

#[tokio::test(flavor = "multi_thread")]
async fn adopting_needs_adopt_and_disable_gives_the_object_back() {
    let taker = addon("taker", SETTINGS, "#{}");
    let (sb, m1) = sandbox(&[&taker]).await;
    let ns = sb.ns().to_owned();
    apply_as_on(
        &m1,
        "kubectl",
        Kind::NAMESPACE.object(json!({"name": ns})),
        &ns,
    )
    .await;
    let theirs = apply_as_on(
        &m1,
        "kubectl",
        persons_config_map(&ns, "settings", json!({"mode": "theirs", "keep": "yes"})),
        &ns,
    )
    .await;

    // Without `--adopt` and without a terminal: refused, naming the object and the flag.
    let (ok, _, stderr) = output_of(sb.cli().args(["enable", "taker"]));
    assert!(!ok);
    assert!(
        stderr.contains(&format!("ConfigMap `{ns}/settings` on cluster `m1`"))
            && stderr.contains("--adopt"),
        "{stderr}"
    );
    let untouched = get_on(&m1, Kind::CONFIG_MAP, Some(&ns), "settings")
        .await
        .unwrap();
    assert_eq!(untouched["data"], json!({"mode": "theirs", "keep": "yes"}));
    let (ok, stdout, _) = output_of(
        sb.cli()
            .args(["enable", "taker", "--dry-run", "-o", "json"]),
    );
    assert!(ok);
    assert!(stdout.contains("\"adopts\""), "{stdout}");

    let (ok, _, stderr) = output_of(sb.cli().args(["enable", "taker", "--adopt"]));

    assert!(ok, "{stderr}");
    let adopted = get_on(&m1, Kind::CONFIG_MAP, Some(&ns), "settings")
        .await
        .unwrap();
    assert_eq!(
        adopted["data"],
        json!({"mode": "ours", "extra": "ours", "keep": "yes"})
    );
    let record = sb.record("taker").await;
    let entry = record.dispatched["m1"]
        .objects
        .iter()
        .find(|o| o.object.name == "settings")
        .unwrap();
    assert!(!entry.created, "the record says adopted, not created");

    let (ok, stdout, stderr) = output_of(sb.cli().args(["disable", "taker"]));

    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "gave back ConfigMap `{ns}/settings` on cluster `m1`"
        )),
        "{stdout}"
    );
    let given_back = get_on(&m1, Kind::CONFIG_MAP, Some(&ns), "settings")
        .await
        .unwrap();
    assert_eq!(
        given_back["metadata"]["uid"], theirs["metadata"]["uid"],
        "the object stays"
    );
    assert_eq!(
        given_back["data"],
        json!({"keep": "yes"}),
        "addonctl's values are gone, the others' stay"
    );
    assert!(
        given_back["metadata"]["labels"]
            .get("addons.oam.dev/name")
            .is_none(),
        "{given_back}"
    );
}

/// `addonctl <args>` (as [`Sandbox::command`] runs it) on a terminal: `script` gives it a
/// pseudo-terminal and types `input`. Returns whether it succeeded and what the terminal showed.
fn on_a_terminal(sb: &Sandbox, args: &[&str], input: &str) -> (bool, String) {
    let base = sb.command();
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"));
    let mut line = vec![quote(base.get_program())];
    line.extend(base.get_args().map(quote));
    line.extend(args.iter().map(|a| quote(std::ffi::OsStr::new(a))));
    let mut child = std::process::Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env_remove("KUBECONFIG")
        .env_remove("KUBEVELA_SYSTEM_NAMESPACE")
        .env_remove("ADDONCTL_ENGINE")
        .env_remove("ADDONCTL_CLUSTER_TIMEOUT")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_terminal_enable_asks_before_adopting() {
    let taker = addon("taker", SETTINGS, "#{}");
    let (sb, m1) = sandbox(&[&taker]).await;
    let ns = sb.ns().to_owned();
    apply_as_on(
        &m1,
        "kubectl",
        Kind::NAMESPACE.object(json!({"name": ns})),
        &ns,
    )
    .await;
    apply_as_on(
        &m1,
        "kubectl",
        persons_config_map(&ns, "settings", json!({"mode": "theirs"})),
        &ns,
    )
    .await;

    let (ok, screen) = on_a_terminal(&sb, &["enable", "taker"], "n\n");

    assert!(!ok, "{screen}");
    assert!(
        screen.contains(&format!("ConfigMap `{ns}/settings` on cluster `m1`"))
            && screen.contains("adopt them? [y/N]")
            && screen.contains("not adopted"),
        "{screen}"
    );
    let untouched = get_on(&m1, Kind::CONFIG_MAP, Some(&ns), "settings")
        .await
        .unwrap();
    assert_eq!(untouched["data"], json!({"mode": "theirs"}));

    let (ok, screen) = on_a_terminal(&sb, &["enable", "taker"], "y\n");

    assert!(ok, "{screen}");
    let adopted = get_on(&m1, Kind::CONFIG_MAP, Some(&ns), "settings")
        .await
        .unwrap();
    assert_eq!(adopted["data"]["mode"], "ours");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crd_present_before_is_flagged_as_replaced_and_adopting_an_output_needs_adopt() {
    let sb = Sandbox::with_kubevela().await.direct();
    let group = format!("{}.example.com", sb.ns());
    let name = format!("gadgets.{group}");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    sb.clean_up_on(
        Env::get().control_plane(),
        Kind::CUSTOM_RESOURCE_DEFINITION,
        None,
        &name,
    );
    let theirs = sb.apply_as("kubectl", crd.clone()).await;
    let outputs = format!(
        "#{{ crd: parse_json({}) }}",
        serde_json::to_string(&serde_json::to_string(&crd).unwrap()).unwrap()
    );
    let gadgets = addon("gadgets", "", &outputs).file(
        "template.rhai",
        &format!("#{{ output: application(#{{ components: [] }}), outputs: {outputs} }}\n"),
    );
    let sb = sb.registries(&[&gadgets]);

    let (ok, stdout, stderr) =
        output_of(
            sb.cli()
                .args(["enable", "gadgets", "--dry-run", "-o", "json"]),
        );

    assert!(ok, "{stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    let kinds: Vec<&str> = plan["flags"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["object"].as_str().unwrap().contains(&name))
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["customResourceDefinition", "adopts"], "{plan}");

    let (ok, _, stderr) = output_of(sb.cli().args(["enable", "gadgets"]));

    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "CustomResourceDefinition `{name}` on cluster `local`"
        )) && stderr.contains("--adopt"),
        "{stderr}"
    );
    assert!(sb.get(Kind::SECRET, "addon-record-gadgets").await.is_none());

    let (ok, _, stderr) = output_of(sb.cli().args(["enable", "gadgets", "--adopt"]));
    assert!(ok, "{stderr}");
    let record = sb.record("gadgets").await;
    assert!(record.adopted.iter().any(|o| o.name == name), "{record:?}");

    let (ok, stdout, stderr) = output_of(sb.cli().args(["disable", "gadgets"]));

    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "gave back CustomResourceDefinition `{name}` on cluster `local`"
        )),
        "{stdout}"
    );
    let left = sb
        .get(Kind::CUSTOM_RESOURCE_DEFINITION, &name)
        .await
        .unwrap();
    assert_eq!(left["metadata"]["uid"], theirs["metadata"]["uid"]);
}
