//! The words addonctl prints for people, as a user reads them at the command line: tables that
//! keep their columns, warnings that read `warning: …`, hints worded for the command that gave
//! them, what an upgrade changed, notes that claim no readiness, a soak's time left, and docs
//! that say one drift default.

use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::Sandbox;

/// Runs a command: exit code, stdout, stderr.
fn run(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Where `needle` starts in `line`, in characters (`…` is one character of three bytes).
fn column(line: &str, needle: &str) -> Option<usize> {
    line.find(needle).map(|at| line[..at].chars().count())
}

/// A default longer than any column should be.
const LONG_IMAGE: &str =
    "registry.example.com/platform/team/some-very-long-repository-name/image:1.2.3-with-a-long-tag";

/// An addon `name` rendering ConfigMap `name` (`greeting`, `image`), plus ConfigMap
/// `<name>-extra` while `extra` is true, with a `secret()` parameter `token`.
fn worded(name: &str) -> TestAddon {
    let parameters = format!(
        r#"#{{
    greeting: string("hello").usage("What the ConfigMap says"),
    image: string("{LONG_IMAGE}").usage("The image it names"),
    extra: bool(false).usage("Whether it renders a second ConfigMap"),
    token: string().optional().secret().usage("A token"),
}}
"#
    );
    let template = r#"let name = context.metadata.name;
let objects = [#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: name },
    data: #{ greeting: parameter.greeting, image: parameter.image } }];
if parameter.extra {
    objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${name}-extra` },
        data: #{ a: "b" } });
}
#{ output: application(#{ components: [k8s_objects(name, objects)] }) }
"#;
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture addon {name}\n"),
        )
        .file("parameter.rhai", &parameters)
        .file("template.rhai", template)
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_status_v_keeps_the_description_column_for_a_long_default() {
    let addon = worded("long-default");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    let (code, _, stderr) = run(sb.cli().args(["enable", "long-default"]));
    assert_eq!(code, 0, "{stderr}");

    let (code, stdout, stderr) = run(sb.cli().args(["status", "long-default", "-v"]));
    assert_eq!(code, 0, "{stderr}");
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "parameters:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(table.len() >= 5, "{stdout}");
    let header = table[0];
    for heading in ["VALUE", "DEFAULT", "DESCRIPTION"] {
        let at = column(header, heading).unwrap_or_else(|| panic!("{stdout}"));
        for row in &table[1..] {
            // Each row's cell starts where its heading does: nothing spills over.
            let cell = row.chars().nth(at).unwrap_or(' ');
            let before = row.chars().nth(at - 1).unwrap_or(' ');
            assert!(
                cell != ' ' && before == ' ',
                "{heading} shifts in `{row}`:\n{stdout}"
            );
        }
    }
    let image = table
        .iter()
        .find(|l| l.trim_start().starts_with("image "))
        .unwrap();
    assert!(!image.contains(LONG_IMAGE), "{stdout}");
    assert!(image.contains('…'), "{stdout}");
    assert!(image.trim_end().ends_with("The image it names"), "{stdout}");
    // The JSON keeps the default whole.
    let (code, stdout, _) = run(sb
        .cli()
        .args(["status", "long-default", "-v", "-o", "json"]));
    assert_eq!(code, 0);
    let status: Value = serde_json::from_str(&stdout).unwrap();
    let image = status["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "image")
        .unwrap();
    assert_eq!(image["default"], json!(LONG_IMAGE), "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_upgrade_says_its_revision_and_the_parameters_it_changed_with_secrets_masked() {
    let addon = worded("revised");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    let (code, _, stderr) = run(sb
        .cli()
        .args(["enable", "revised", "token=first-secret-value"]));
    assert_eq!(code, 0, "{stderr}");

    let (code, stdout, stderr) = run(sb.cli().args([
        "upgrade",
        "revised",
        "greeting=hi",
        "token=second-secret-value",
    ]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("addon `revised` 1.0.0, revision 2: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("  parameter greeting: (unset) → \"hi\""),
        "{stdout}"
    );
    assert!(stdout.contains("  parameter token: *** → ***"), "{stdout}");
    for secret in ["first-secret-value", "second-secret-value"] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout}{stderr}"
        );
    }
    let (code, history, _) = run(sb.cli().args(["history", "revised"]));
    assert_eq!(code, 0);
    assert!(
        history.lines().last().unwrap().starts_with("2 "),
        "{history}"
    );

    // Again with the same arguments: no new revision, no parameter changed.
    let (code, stdout, stderr) = run(sb.cli().args(["upgrade", "revised", "greeting=hi"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("addon `revised` 1.0.0, revision 2 (unchanged): "),
        "{stdout}"
    );
    assert!(!stdout.contains("parameter "), "{stdout}");

    // A plain change reads old → new; JSON has the revision and the changes, no secret.
    let (code, stdout, stderr) =
        run(sb
            .cli()
            .args(["upgrade", "revised", "greeting=hey", "-o", "json"]));
    assert_eq!(code, 0, "{stderr}");
    let reports: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(reports[0]["revision"], 3, "{reports}");
    assert_eq!(
        reports[0]["parameters"],
        json!([{"path": "greeting", "change": "changed", "from": "hi", "to": "hey"}]),
        "{reports}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_diff_and_upgrade_word_their_hints_for_an_upgrade() {
    let addon = worded("hinted");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    let (code, _, stderr) = run(sb.cli().args(["enable", "hinted"]));
    assert_eq!(code, 0, "{stderr}");
    // Someone else's ConfigMap, of the name the addon renders with `extra=true`.
    sb.apply_as(
        "someone-else",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "hinted-extra", "namespace": sb.ns()},
               "data": {"owner": "someone-else"}}),
    )
    .await;

    let conflict = format!(
        "conflict (needs --adopt) ConfigMap `{}/hinted-extra` on cluster `local`: exists and addonctl did not create it: `upgrade` refuses it without `--adopt`",
        sb.ns()
    );
    let (code, stdout, stderr) = run(sb.cli().args(["diff", "hinted", "extra=true"]));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains(&conflict), "{stdout}");
    // The noun agrees with its count.
    let unchanged = regex::Regex::new(r"(\d+) object(s?) unchanged").unwrap();
    let found = unchanged
        .captures(&stdout)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(&found[1] == "1", found[2].is_empty(), "{stdout}");

    let (code, stdout, stderr) =
        run(sb
            .cli()
            .args(["upgrade", "hinted", "extra=true", "--dry-run=server"]));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stdout.contains(&conflict), "{stdout}");
    assert!(
        stderr.contains(
            "1 object exists and addonctl did not create it (listed above): the upgrade would refuse it; pass `--adopt` to take it over"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("the enable would"), "{stderr}");
}

/// The metadata of `name` at `version`, requiring a newer addonctl than this one.
fn needs_newer_metadata(name: &str, version: &str) -> String {
    format!("name: {name}\nversion: {version}\nsystem:\n  addonctl: \">=99.0.0\"\n")
}

/// An addon that requires a newer addonctl and uses a component type nobody serves.
fn needs_newer(name: &str) -> TestAddon {
    TestAddon::new(name)
        .file("metadata.yaml", &needs_newer_metadata(name, "1.0.0"))
        .file("parameter.rhai", "#{ size: pint(1) }\n")
        .file(
            "template.rhai",
            "#{ output: application(#{ components: [#{ name: \"db\", type: \"cloud-database\",\n    properties: #{ size: parameter.size } }] }) }\n",
        )
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_skip_check_hints_say_upgrade_for_an_installed_addon_and_enable_for_a_new_one() {
    let addon = needs_newer("checked");
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);

    // Not installed: a diff is an enable's.
    let (code, _, stderr) = run(sb.cli().args(["diff", "checked", "size=1"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("pass `--skip-version-check` to enable it anyway"),
        "{stderr}"
    );
    let (code, _, stderr) = run(sb.cli().args([
        "enable",
        "checked",
        "size=1",
        "--skip-version-check",
        "--skip-api-check",
    ]));
    assert_eq!(code, 0, "{stderr}");

    // Installed, with a newer version published: `diff` and `upgrade` to it meet the same
    // checks, worded for an upgrade.
    fs_err::write(
        addon.path().join("metadata.yaml"),
        needs_newer_metadata("checked", "1.1.0"),
    )
    .unwrap();
    for command in ["diff", "upgrade"] {
        let to_newer = [command, "checked", "size=2", "--version", "1.1.0"];
        let (code, _, stderr) = run(sb.cli().args(to_newer));
        assert_eq!(code, 2, "{command}: {stderr}");
        assert!(
            stderr.contains("pass `--skip-version-check` to upgrade it anyway"),
            "{command}: {stderr}"
        );
        let (code, _, stderr) = run(sb.cli().args(to_newer).arg("--skip-version-check"));
        assert_eq!(code, 2, "{command}: {stderr}");
        assert!(
            stderr.contains("(pass `--skip-api-check` to upgrade anyway"),
            "{command}: {stderr}"
        );
        assert!(!stderr.contains("to enable"), "{command}: {stderr}");
    }
    let (code, _, stderr) = run(sb.cli().args([
        "diff",
        "checked",
        "size=2",
        "--skip-version-check",
        "--skip-api-check",
    ]));
    assert!(code <= 1, "{stderr}");
    assert!(
        stderr.contains("(upgrading anyway: `--skip-api-check`)"),
        "{stderr}"
    );
}

#[test]
fn cli_warnings_read_warning_colon_next_to_notes() {
    let home = tempfile::tempdir().unwrap();
    let registries = home.path().join("registries.yaml");
    fs_err::write(&registries, "{ this is: [not a registry file").unwrap();
    let out = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .env_remove("KUBEVELA_SYSTEM_NAMESPACE")
        .env("HOME", home.path())
        .env("KUBECONFIG", home.path().join("no-such-kubeconfig"))
        .env("ADDONCTL_REGISTRY_FILE", &registries)
        .env("NO_COLOR", "1")
        .arg("list")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("warning: the local registry file")),
        "{stderr}"
    );
    assert!(stderr.lines().any(|l| l.starts_with("note: ")), "{stderr}");
    for line in stderr.lines() {
        assert!(
            !line.trim_start().starts_with("WARN"),
            "a log-style warning: {line}\n{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_init_notes_say_enabled_and_how_to_see_when_it_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("fresh-notes");
    let sb = Sandbox::without_kubevela().await.direct();
    let (code, _, stderr) = run(sb.cli().args(["init", "fresh-notes", "--dir"]).arg(&target));
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(sb.cli().args(["lint", "--strict"]).arg(&target));
    assert_eq!(code, 0, "{stderr}");

    for (replicas, said) in [("1", "1 replica"), ("2", "2 replicas")] {
        let (code, stdout, stderr) = run(sb
            .cli()
            .arg("enable")
            .arg(&target)
            .arg(format!("replicas={replicas}")));
        assert_eq!(code, 0, "{stderr}");
        let notes = format!(
            "fresh-notes has been enabled ({said} of nginx:1.25); run `addonctl status fresh-notes` to see when it is ready."
        );
        assert!(stdout.contains(&notes), "{stdout}");
        assert!(!stdout.contains("is enabled"), "{stdout}");
    }
    // And status does not claim more than the notes did.
    let (code, stdout, _) = run(sb.cli().args(["status", "fresh-notes", "-o", "json"]));
    assert_eq!(code, 0);
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        ["enabling", "enabled"].contains(&status["phase"].as_str().unwrap()),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_rollout_run_says_the_soak_time_left() {
    let addon = worded("soaked");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    let stages = tempfile::NamedTempFile::new().unwrap();
    fs_err::write(
        stages.path(),
        json!({"stages": [{"name": "only", "soakSeconds": 3,
            "clusterSelector": {"matchLabels": {"addonctl.io/cluster-name": "local"}}}]})
        .to_string(),
    )
    .unwrap();

    let (code, stdout, stderr) = run(sb
        .cli()
        .args([
            "rollout",
            "run",
            "soaked",
            "--poll-interval",
            "0.2",
            "--stages",
        ])
        .arg(stages.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let soaking = regex::Regex::new(r"waiting for `local`: soaking, ([0-9]+) s left").unwrap();
    let left: u64 = soaking
        .captures(&stderr)
        .unwrap_or_else(|| panic!("no soak time left said:\n{stderr}"))[1]
        .parse()
        .unwrap();
    assert!((1..=3).contains(&left), "{stderr}");
}

/// The README and every page under `docs/`, one after the other.
fn documentation() -> String {
    fn walk(dir: &std::path::Path, out: &mut String) {
        let mut entries: Vec<_> = fs_err::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push_str(&fs_err::read_to_string(&path).unwrap());
            }
        }
    }
    let root = crate::support::root();
    let mut text = fs_err::read_to_string(root.join("README.md")).unwrap();
    walk(&root.join("docs"), &mut text);
    text
}

#[test]
fn the_docs_say_one_drift_default_the_one_the_controller_uses() {
    let default = serde_json::to_value(addonctl::controller::crd::DriftPolicy::default()).unwrap();
    let default = default.as_str().unwrap();
    let readme = documentation();
    let said = regex::Regex::new(
        // "`correct` (default", "`correct` (the default", "Default: `correct`".
        r"(?i)`(correct|warn|ignore)` \((?:the )?default|default:?\s{1,2}`(correct|warn|ignore)`",
    )
    .unwrap();
    let defaults: Vec<&str> = said
        .captures_iter(&readme)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str())
        .collect();
    assert!(!defaults.is_empty(), "the docs state no drift default");
    assert!(
        defaults.iter().all(|d| *d == default),
        "the docs state drift defaults {defaults:?}; the code's is `{default}`"
    );
}
