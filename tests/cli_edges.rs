//! What new users tripped on at the command line, each step as they typed it, against the real
//! API servers: durations, unknown addons, tables, words.

use serde_json::Value;

use crate::support::builders::TestAddon;
use crate::support::k8s::Sandbox;

/// An addon of one ConfigMap (nothing to wait for once applied) with a `greeting` parameter.
fn plain(name: &str) -> TestAddon {
    TestAddon::new(name)
        .file("parameter.rhai", "#{ greeting: string(\"hello\") }\n")
        .file(
            "template.rhai",
            &format!(
                "#{{ output: application(#{{ components: [k8s_objects(\"{name}\", [#{{ apiVersion: \"v1\", kind: \"ConfigMap\",\n    metadata: #{{ name: \"{name}\" }}, data: #{{ greeting: parameter.greeting }} }}])] }}) }}\n"
            ),
        )
}

/// Runs a command: exit code, stdout, stderr.
fn run(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_enable_upgrade_and_disable_wait_for_durations_with_units() {
    let addon = plain("timed");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);

    for args in [
        &["enable", "timed", "--wait", "--timeout", "5m"][..],
        &[
            "upgrade",
            "timed",
            "greeting=hi",
            "--wait",
            "--timeout",
            "90s",
        ],
        &["disable", "timed", "--wait", "--timeout", "40s"],
    ] {
        let (code, stdout, stderr) = run(sb.cli().args(args));
        assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
    }
    let (code, stdout, _) = run(sb.cli().args(["status", "timed", "-o", "json"]));
    assert_eq!(code, 0, "{stdout}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["phase"], "disabled", "{status}");

    // A refused duration says what would have been accepted.
    let (code, _, stderr) = run(sb
        .cli()
        .args(["enable", "timed", "--wait", "--timeout", "5min"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--timeout") && stderr.contains("`90s`, `5m`, `1h`"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_status_and_enable_of_a_misspelt_addon_say_what_was_meant_and_where_they_looked() {
    let addon = plain("fixture-dashboard");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);

    // Never installed and in no registry: an error, not `phase: disabled`.
    let (code, stdout, stderr) = run(sb.cli().args(["status", "nosuch"]));
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("addon `nosuch` is in no registry and not installed")
            && stderr.contains("registries searched:")
            && stderr.contains("the built-in registry"),
        "{stderr}"
    );
    let (code, _, stderr) = run(sb.cli().args(["status", "fixture-dashbord", "-o", "json"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("did you mean `fixture-dashboard`?"),
        "{stderr}"
    );

    let (code, _, stderr) = run(sb.cli().args(["enable", "fixture-dashbord"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("did you mean `fixture-dashboard`?")
            && stderr.contains("registries searched:")
            && stderr.contains("the built-in registry"),
        "{stderr}"
    );

    // An addon a registry has is `disabled` until enabled, and its status stays once its
    // registry no longer has it.
    let (code, stdout, stderr) = run(sb.cli().args(["status", "fixture-dashboard"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("disabled"), "{stdout}");
    let (code, _, stderr) = run(sb.cli().args(["enable", "fixture-dashboard"]));
    assert_eq!(code, 0, "{stderr}");
    let mut without_registry = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    without_registry
        .env_remove("KUBECONFIG")
        .env_remove("KUBEVELA_SYSTEM_NAMESPACE")
        .env_remove("ADDONCTL_ENGINE")
        .env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(&sb.cluster.kubeconfig)
        .args(["--system-namespace", sb.ns(), "--engine", "direct"])
        .args(["status", "fixture-dashboard"]);
    let (code, stdout, stderr) = run(&mut without_registry);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("fixture-dashboard"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_disable_prune_dependencies_judges_the_removal_as_a_whole() {
    let base = TestAddon::new("defs-base").file(
        "definitions/worker.yaml",
        "apiVersion: core.oam.dev/v1beta1\nkind: ComponentDefinition\nmetadata:\n  name: fixture-worker\nspec:\n  schematic:\n    cue:\n      template: \"parameter: {}\\n\"\n",
    );
    let user = TestAddon::new("defs-user")
        .file(
            "metadata.yaml",
            "name: defs-user\nversion: 1.0.0\ndependencies:\n  - name: defs-base\n",
        )
        .file(
            "template.yaml",
            "apiVersion: core.oam.dev/v1beta1\nkind: Application\nspec:\n  components:\n    - name: w\n      type: fixture-worker\n",
        );
    let sb = Sandbox::with_kubevela().await.registries(&[&user, &base]);
    let (code, _, stderr) = run(sb.cli().args(["enable", "defs-user"]));
    assert_eq!(code, 0, "{stderr}");

    // Its own Application, which this command deletes, uses the dependency's definition.
    let (code, stdout, stderr) =
        run(sb
            .cli()
            .args(["disable", "defs-user", "--prune-dependencies", "-o", "json"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(!stderr.contains("--force"), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["name"], "defs-user", "{report}");
    assert_eq!(report["pruned"][0]["name"], "defs-base", "{report}");
    sb.assert_absent(&[
        (crate::support::k8s::Kind::APPLICATION, "addon-defs-user"),
        (crate::support::k8s::Kind::APPLICATION, "addon-defs-base"),
    ])
    .await;
}

/// An addon whose metadata sets `deployTo.runtimeCluster` (KubeVela adds `local` to the clusters
/// named): a static Application of one ConfigMap.
fn runtime_cluster_addon(name: &str) -> TestAddon {
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndeployTo:\n  runtimeCluster: true\n"),
        )
        .file(
            "template.yaml",
            &format!("apiVersion: core.oam.dev/v1beta1\nkind: Application\nspec:\n  components:\n    - name: {name}\n      type: k8s-objects\n      properties:\n        objects:\n          - apiVersion: v1\n            kind: ConfigMap\n            metadata:\n              name: {name}\n            data:\n              a: \"1\"\n"),
        )
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_local_added_for_a_runtime_cluster_addon_is_said_and_a_rollout_must_cover_it() {
    let addon = runtime_cluster_addon("rt-agent");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    sb.join(
        "m1",
        crate::support::k8s::Env::get().managed_n(1),
        &[("env", "staging")],
    )
    .await;

    // At plan time: `local` is added, and why (the dry run's plan on stdout, the enable's
    // notes on stderr).
    let (code, stdout, stderr) =
        run(sb
            .cli()
            .args(["enable", "rt-agent", "--clusters", "m1", "--dry-run"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("`local` (the control plane) is added to the clusters of `rt-agent` (m1)")
            && stdout.contains("deployTo.runtimeCluster"),
        "{stdout}"
    );

    // A rollout whose stages leave `local` out is refused before anything is applied.
    let dir = tempfile::tempdir().unwrap();
    let stages = dir.path().join("stages.yaml");
    std::fs::write(
        &stages,
        "stages:\n  - name: staging\n    clusterSelector:\n      matchLabels:\n        env: staging\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(sb
        .cli()
        .args([
            "rollout",
            "run",
            "rt-agent",
            "--poll-interval",
            "200ms",
            "--stages",
        ])
        .arg(&stages));
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("addon `rt-agent` also goes to `local`")
            && stderr.contains("addonctl.io/cluster-name: local")
            && !stdout.contains("finished"),
        "{stdout}{stderr}"
    );
    let (_, stdout, _) = run(sb.cli().args(["status", "rt-agent", "-o", "json"]));
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["phase"], "disabled", "{status}");

    // A stage may select `local` by its name.
    std::fs::write(
        &stages,
        "stages:\n  - name: control-plane\n    clusterSelector:\n      matchLabels:\n        addonctl.io/cluster-name: local\n  - name: staging\n    clusterSelector:\n      matchLabels:\n        env: staging\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(sb
        .cli()
        .args([
            "rollout",
            "run",
            "rt-agent",
            "--poll-interval",
            "200ms",
            "--stages",
        ])
        .arg(&stages));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains("stage `control-plane`: applying to `local`"),
        "{stderr}"
    );
    let (_, stdout, _) = run(sb.cli().args(["status", "rt-agent", "-o", "json"]));
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["phase"], "enabled", "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_list_as_a_user_who_may_not_read_secrets_lists_the_registries_with_phase_unknown() {
    let addon = plain("listed-anyway");
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);
    sb.enable("listed-anyway", serde_json::json!({}))
        .await
        .unwrap();

    let (code, stdout, stderr) = run(sb.cli_as_user().args(["list", "-o", "json"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let row = listed["addons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "listed-anyway")
        .cloned()
        .unwrap_or_default();
    assert_eq!(row["phase"], "unknown", "{listed}");
    assert!(
        stderr.contains("note: which addons are installed cannot be read")
            && stderr.contains("addonctl-viewer"),
        "{stderr}"
    );
    // `--installed` cannot do without the records: still the refusal, with its hint.
    let (code, _, stderr) = run(sb.cli_as_user().args(["list", "--installed"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("hint: ClusterRole `addonctl-viewer`"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_counts_read_right_and_an_empty_installed_list_says_so() {
    let addon = plain("counted");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);

    let (code, stdout, stderr) = run(sb.cli().args(["list", "--installed"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "no addons installed");

    // The noun agrees with its count, whatever the count is.
    let agrees = |text: &str, noun: &str| {
        let pattern = regex::Regex::new(&format!(r"(\d+) {noun}(s?) applied")).unwrap();
        let found = pattern.captures(text).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(&found[1] == "1", found[2].is_empty(), "{text}");
    };
    let (code, stdout, stderr) = run(sb.cli().args(["enable", "counted"]));
    assert_eq!(code, 0, "{stderr}");
    agrees(&stdout, "control-plane object");
    // `status` counts each cluster's objects (one ConfigMap), `diff` the unchanged ones.
    let counts = |text: &str, pattern: &str| {
        let found = regex::Regex::new(pattern)
            .unwrap()
            .captures(text)
            .unwrap_or_else(|| panic!("no `{pattern}` in:\n{text}"))
            .iter()
            .map(|m| m.map_or("", |m| m.as_str()).to_owned())
            .collect::<Vec<String>>();
        assert_eq!(found[1] == "1", found[2].is_empty(), "{text}");
        found[1].clone()
    };
    let (code, stdout, stderr) = run(sb.cli().args(["status", "counted"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout, r"cluster \S+\s+(\d+) object(s?),"), "1");
    let (code, stdout, stderr) = run(sb.cli().args(["diff", "counted"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    counts(&stdout, r"(\d+) object(s?) unchanged");
    let (code, stdout, stderr) = run(sb.cli().args(["upgrade", "counted", "greeting=hi"]));
    assert_eq!(code, 0, "{stderr}");
    agrees(&stdout, "object");
    let (code, stdout, stderr) = run(sb.cli().args(["disable", "counted"]));
    assert_eq!(code, 0, "{stderr}");
    let deleted = regex::Regex::new(r"(\d+) object(s?) deleted").unwrap();
    let found = deleted
        .captures(&stdout)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(&found[1] == "1", found[2].is_empty(), "{stdout}");
}

/// Copies an addon's files into `to`.
fn copy_addon(addon: &TestAddon, to: &std::path::Path) {
    for entry in walkdir_files(addon.path()) {
        let relative = entry.strip_prefix(addon.path()).unwrap();
        let target = to.join(relative);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&entry, target).unwrap();
    }
}

fn walkdir_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walkdir_files(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_registry_dir_at_a_kubevela_catalog_checkout_reads_its_addons_and_experimental_addons()
{
    let checkout = tempfile::tempdir().unwrap();
    copy_addon(
        &plain("stable-one"),
        &checkout.path().join("addons/stable-one"),
    );
    copy_addon(
        &plain("trying-one"),
        &checkout.path().join("experimental/addons/trying-one"),
    );
    std::fs::write(checkout.path().join("README.md"), "# catalog\n").unwrap();

    let scratch = tempfile::tempdir().unwrap();
    let (kubeconfig, _) = crate::support::k8s::Env::get().unreachable_kubeconfig(scratch.path());
    let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env(
            "ADDONCTL_REGISTRY_FILE",
            scratch.path().join("no-registries.json"),
        )
        .env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--registry-dir")
        .arg(checkout.path())
        .args(["list", "-o", "json"]);
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, 0, "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = listed["addons"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(names.contains(&"stable-one"), "{listed}");
    assert!(names.contains(&"trying-one"), "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_tables_keep_their_columns_for_long_names_and_print_a_dash_for_blanks() {
    let long = "a-twenty-five-char-addon1";
    assert_eq!(long.len(), 25);
    let addon = plain(long);
    let short = plain("short");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon, &short]);
    let (code, _, stderr) = run(sb.cli().args(["enable", long]));
    assert_eq!(code, 0, "{stderr}");

    let (code, stdout, stderr) = run(sb.cli().args(["list"]));
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let header = lines[0];
    for column in ["REGISTRY", "PHASE", "INSTALLED"] {
        let at = header.find(column).unwrap();
        for line in lines.iter().skip(1) {
            assert!(line.len() > at, "{stdout}");
            assert_eq!(&line[at - 2..at], "  ", "{column} shifts:\n{stdout}");
            assert_ne!(&line[at..=at], " ", "{column} shifts:\n{stdout}");
        }
    }

    let (code, stdout, stderr) = run(sb.cli().args(["cluster", "list"]));
    assert_eq!(code, 0, "{stderr}");
    let header = stdout.lines().next().unwrap();
    let starts: Vec<usize> = [
        "NAME",
        "ENDPOINT",
        "CREDENTIAL",
        "REACHABLE",
        "VERSION",
        "LABELS",
    ]
    .iter()
    .map(|c| header.find(c).unwrap())
    .collect();
    for line in stdout.lines().skip(1).filter(|l| !l.starts_with("  ")) {
        for &at in &starts {
            let cell = line.get(at..=at).unwrap_or(" ");
            assert_ne!(cell, " ", "a blank cell at column {at} in:\n{stdout}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_rollback_names_a_damaged_revision_secret_and_how_to_inspect_it() {
    use base64::Engine as _;

    let addon = plain("rolled");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    for args in [
        &["enable", "rolled"][..],
        &["upgrade", "rolled", "greeting=hi"],
    ] {
        let (code, stdout, stderr) = run(sb.cli().args(args));
        assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
    }
    let name = addonctl::state::revisions::secret_name("rolled", 1);
    let mut secret = crate::support::k8s::get_on(
        sb.api(),
        crate::support::k8s::Kind::SECRET,
        Some(sb.ns()),
        &name,
    )
    .await
    .unwrap_or_else(|| panic!("revision Secret `{name}` is missing"));
    assert!(secret["data"]["package"].is_string(), "{secret}");
    secret["data"]["package"] =
        Value::from(base64::engine::general_purpose::STANDARD.encode(b"not a package"));
    sb.api().replace(&secret).await.unwrap();

    let (code, stdout, stderr) = run(sb.cli().args(["rollback", "rolled", "1"]));
    assert_ne!(code, 0, "{stdout}{stderr}");
    let ns = sb.ns();
    for part in [
        "revision 1 of addon `rolled`".to_owned(),
        format!("Secret `{ns}/{name}` is damaged: `data.package` does not read"),
        format!("kubectl -n {ns} get secret {name} -o yaml"),
        "addonctl history rolled".to_owned(),
    ] {
        assert!(stderr.contains(&part), "no `{part}` in: {stderr}");
    }
}
