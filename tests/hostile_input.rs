//! Hostile input, caps, registry faults and secret leaks: each case fails with one clear error,
//! quickly, naming what is wrong, and never shows a secret.

use std::sync::Arc;
use std::time::{Duration, Instant};

use addonctl::plan::EnableRequest;
use addonctl::render::{Limits, RenderOptions, Renderer};
use addonctl::source::cache::CacheOptions;
use addonctl::source::catalog::Catalog;
use addonctl::source::helm::HelmReader;
use addonctl::source::local::LocalReader;
use addonctl::source::{AddonRef, AsyncReader, Reader};
use predicates::prelude::*;
use serde_json::json;
use sha2::Digest as _;

use crate::support::builders::TestAddon;
use crate::support::helm_repo::{fresh_cache, quick_http, reader, serve_fixture_repo};
use crate::support::http_server::{Fault, TestServer};
use crate::support::k8s::{args, Kind, Sandbox};

/// 200 KB of `[`: the document that cost a minute of CPU before the pre-scan.
fn nested_flow() -> String {
    "[".repeat(200 * 1024)
}

fn cli() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    cmd.env("NO_COLOR", "1").env_remove("ADDONCTL_LOG");
    cmd
}

async fn load(addon: &TestAddon) -> Result<addonctl::model::AddonPackage, String> {
    let reader = LocalReader::new(addon.path()).map_err(|e| e.to_string())?;
    addonctl::loader::load(&reader, &AddonRef::latest(addon.name()))
        .await
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------------
// Deeply nested YAML.

#[tokio::test]
async fn deeply_nested_yaml_is_refused_in_resources_metadata_and_values() {
    let resource = TestAddon::new("deep").file("resources/x.yaml", &nested_flow());
    let package = load(&resource).await.expect("load");
    let err = Renderer::new()
        .render(&package, &RenderOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("`resources/x.yaml`"), "{err}");
    assert!(err.contains("nested deeper than 100 levels"), "{err}");

    let metadata = TestAddon::new("deep").file(
        "metadata.yaml",
        &format!("name: deep\nversion: 1.0.0\ntags: {}\n", nested_flow()),
    );
    let err = load(&metadata).await.unwrap_err();
    assert!(err.contains("nested deeper than 100 levels"), "{err}");

    let values = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(values.path(), format!("a: {}", nested_flow())).unwrap();
    cli()
        .args(["render", "strongbox-operator", "-f"])
        .arg(values.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nested deeper than 100 levels"));
}

#[tokio::test]
async fn deeply_nested_helm_index_is_a_registry_failure() {
    let server = TestServer::builder().start();
    server.put("/charts/index.yaml", format!("entries: {}", nested_flow()));
    let reader = reader(&format!("{}/charts/", server.url), |_| {});
    let err = reader.list_addons().await.unwrap_err().to_string();
    assert!(err.contains("`index.yaml` is not valid YAML"), "{err}");
    assert!(err.contains("nested deeper than"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Values files, `--set-file` and the argument Secret.

#[test]
fn set_file_and_values_files_are_capped() {
    cli()
        .args(["render", "strongbox-operator", "--set-file", "x=/dev/zero"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`--set-file x` `/dev/zero`"))
        .stderr(predicate::str::contains("larger than 4194304 bytes"));
    let big = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(big.path(), "a: b\n".repeat(1024 * 1024)).unwrap();
    cli()
        .args(["render", "strongbox-operator", "-f"])
        .arg(big.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("values file"))
        .stderr(predicate::str::contains("larger than 4194304 bytes"));
}

#[tokio::test]
async fn an_argument_secret_over_the_size_limit_is_refused_before_anything_is_written() {
    let addon = TestAddon::new("big-args").file("parameter.rhai", "#{ blob: string(\"\") }");
    let sandbox = Sandbox::without_kubevela()
        .await
        .registries(&[&addon])
        .direct();
    let err = sandbox
        .enable("big-args", json!({"blob": "x".repeat(1_200_000)}))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(err.is_user_error(), "{text}");
    assert!(text.contains("Secret `addon-secret-big-args`"), "{text}");
    assert!(text.contains("more than the 1048576"), "{text}");
    assert!(text.contains("nothing was written"), "{text}");
    assert!(sandbox
        .get(Kind::SECRET, "addon-record-big-args")
        .await
        .is_none());
    assert!(sandbox
        .get(Kind::SECRET, "addon-secret-big-args")
        .await
        .is_none());
}

// ---------------------------------------------------------------------------------------------
// Registry faults.

/// A Helm registry named `flaky` serving the fixture repository, with `fault` on every request.
async fn flaky(fault: Option<Fault>, timeout: Duration) -> (TestServer, Reader) {
    let (server, url) = serve_fixture_repo(TestServer::builder()).await;
    if let Some(fault) = fault {
        server.fail_always(fault);
    }
    let mut http = quick_http();
    http.timeout = timeout;
    http.retries = 3;
    let reader = HelmReader::new(
        "flaky",
        &url,
        http,
        &CacheOptions {
            disabled: true,
            ..CacheOptions::default()
        },
    )
    .unwrap();
    (server, Arc::new(reader))
}

fn catalog(readers: Vec<Reader>) -> Catalog {
    let mut all = readers;
    all.push(Arc::new(addonctl::source::builtin::BuiltinReader::new()));
    Catalog::from_readers(all)
}

#[tokio::test]
async fn a_failing_registry_is_reported_not_taken_for_a_missing_addon() {
    for fault in [Fault::Status(500, Vec::new()), Fault::Truncate] {
        let (_server, flaky) = flaky(Some(fault.clone()), Duration::from_secs(5)).await;
        let catalog = catalog(vec![flaky]);
        for reference in ["flaky/minimal", "minimal"] {
            let err = catalog.find(reference, None, None, None).await.unwrap_err();
            let text = err.to_string();
            assert_eq!(
                err.kind(),
                addonctl::ErrorKind::Unavailable,
                "{fault:?} {reference}: {text}"
            );
            assert!(text.contains("registry `flaky`"), "{fault:?}: {text}");
            assert!(text.contains("cannot be read"), "{fault:?}: {text}");
            assert!(!text.contains("no addon"), "{fault:?}: {text}");
        }
    }
}

#[tokio::test]
async fn a_hanging_registry_costs_one_timeout_not_one_per_retry() {
    let (server, flaky) = flaky(Some(Fault::Hang), Duration::from_secs(2)).await;
    let started = Instant::now();
    let err = flaky.list_addons().await.unwrap_err().to_string();
    let elapsed = started.elapsed();
    assert!(err.contains("did not answer within 2 s"), "{err}");
    // Four attempts of 2 s each took more than 8 s before.
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_eq!(server.requests(), 1, "the hang used the whole deadline");
}

#[tokio::test]
async fn enable_reads_only_the_registries_it_needs() {
    let (server, flaky) = flaky(Some(Fault::Hang), Duration::from_secs(20)).await;
    let addon = TestAddon::new("lonely");
    let local: Reader = Arc::new(LocalReader::with_registry(addon.path(), "mine").unwrap());
    let mut sandbox = Sandbox::without_kubevela().await.direct();
    // `mine` is searched first: `enable lonely` stops there; `enable mine/lonely` reads only it.
    sandbox.ctx.catalog = catalog(vec![local, Arc::clone(&flaky)]);
    for reference in ["mine/lonely", "lonely"] {
        let request = EnableRequest {
            reference: reference.to_owned(),
            ..EnableRequest::default()
        };
        let plan = addonctl::plan::plan(&sandbox.ctx.planner(), &request, false)
            .await
            .unwrap();
        assert_eq!(plan.steps.len(), 1);
        assert_eq!(
            server.requests(),
            0,
            "`enable {reference}` read the hanging registry"
        );
    }
    // `list --registry mine` does not read the others either.
    let (rows, warnings) = addonctl::status::list(
        Some(sandbox.ctx.state()),
        &sandbox.ctx.catalog,
        &addonctl::status::list::ListOptions {
            registry: Some("mine"),
            installed_only: false,
        },
    )
    .await
    .unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        server.requests(),
        0,
        "`list --registry mine` read the hanging registry"
    );
}

#[tokio::test]
async fn enable_of_an_addon_in_a_failing_registry_exits_1_naming_it() {
    let (_server, flaky) =
        flaky(Some(Fault::Status(500, Vec::new())), Duration::from_secs(5)).await;
    let mut sandbox = Sandbox::without_kubevela().await.direct();
    sandbox.ctx.catalog = catalog(vec![flaky]);
    let request = EnableRequest {
        reference: "flaky/minimal".to_owned(),
        ..EnableRequest::default()
    };
    let err = addonctl::plan::plan(&sandbox.ctx.planner(), &request, false)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(!err.is_user_error(), "{text}");
    assert!(text.contains("registry `flaky`"), "{text}");
    let err = addonctl::status::list(
        Some(sandbox.ctx.state()),
        &sandbox.ctx.catalog,
        &addonctl::status::list::ListOptions {
            registry: Some("flaky"),
            installed_only: false,
        },
    )
    .await
    .unwrap_err();
    assert!(!err.is_user_error(), "{err}");
    assert!(err.to_string().contains("registry `flaky`"), "{err}");
}

#[tokio::test]
async fn a_corrupt_cached_index_is_dropped_and_fetched_again() {
    let (server, url) = serve_fixture_repo(TestServer::builder()).await;
    let (cache_dir, cache) = fresh_cache();
    let first = HelmReader::new("r", &url, quick_http(), &cache).unwrap();
    assert_eq!(first.list_addons().await.unwrap().len(), 3);
    // A corrupt body stored with its digest (as a server that truncated its answer once would
    // have left it): its ETag still matches, so the server answers 304.
    let cached = walk(cache_dir.path())
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "index.yaml"))
        .expect("cached index.yaml");
    let corrupt = b"entries:\n  minimal: [{version: 1.0.0, urls: [x.tgz\n";
    std::fs::write(&cached, corrupt).unwrap();
    let meta_path = cached.with_file_name("index.yaml.meta.json");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    meta["sha256"] = json!(addonctl::source::cache::hex(&sha2::Sha256::digest(corrupt)));
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let before = server.requests();
    let second = HelmReader::new("r", &url, quick_http(), &cache).unwrap();
    assert_eq!(second.list_addons().await.unwrap().len(), 3);
    // A conditional request (304), then one without condition.
    assert_eq!(server.requests(), before + 2);
    let third = HelmReader::new("r", &url, quick_http(), &cache).unwrap();
    assert_eq!(third.list_addons().await.unwrap().len(), 3);
    assert_eq!(
        server.requests(),
        before + 3,
        "the good index was cached again"
    );
    // A body changed on disk does not match its digest: dropped before any request.
    std::fs::write(&cached, corrupt).unwrap();
    let fourth = HelmReader::new("r", &url, quick_http(), &cache).unwrap();
    assert_eq!(fourth.list_addons().await.unwrap().len(), 3);
    assert_eq!(server.requests(), before + 4, "one unconditional request");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Secrets.

const SECRET: &str = "s3cr3t-T0KEN-value";

fn secret_addon(file: &str, script: &str) -> TestAddon {
    TestAddon::new("leaky")
        .file(
            "parameter.rhai",
            "#{ token: string(\"\").secret(), short: string(\"\").secret() }",
        )
        .file(file, script)
        .file("lib/helper.rhai", "fn fail(x) { throw `bad value ${x}`; }")
}

#[tokio::test]
async fn script_errors_never_quote_a_secret_value() {
    let cases = [
        ("template.rhai", "parse_int(parameter.token)"),
        ("template.rhai", "throw parameter.token;"),
        ("template.rhai", "throw #{ t: parameter.token };"),
        (
            "template.rhai",
            "import \"helper\" as h; h::fail(parameter.token)",
        ),
        ("resources/x.rhai", "parse_float(parameter.token)"),
        ("NOTES.rhai", "throw `token is ${parameter.token}`;"),
        ("definitions/d.rhai", "throw parameter.token;"),
        ("template.rhai", "parse_int(parameter.short)"),
        ("template.rhai", "throw base64_encode(parameter.token);"),
    ];
    for (file, script) in cases {
        let addon = secret_addon(file, script);
        let package = load(&addon).await.expect("load");
        let options = RenderOptions {
            args: args(json!({"token": SECRET, "short": "abc"})),
            ..RenderOptions::default()
        };
        let err = Renderer::with_limits(Limits::default())
            .render(&package, &options)
            .expect_err("must fail")
            .to_string();
        assert!(!err.contains(SECRET), "{file}: `{script}`: {err}");
        assert!(!err.contains("'abc'"), "{file}: `{script}`: {err}");
        let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, SECRET);
        assert!(!err.contains(&encoded), "{file}: `{script}`: {err}");
        assert!(err.contains("******"), "{file}: `{script}`: {err}");
        assert!(err.contains(&format!("`{file}`")), "{file}: {err}");
    }
}

#[tokio::test]
async fn a_secret_rendered_into_the_application_is_warned_about_under_kubevela() {
    let addon = TestAddon::new("leaky-app")
        .file("parameter.rhai", "#{ token: string(\"\").secret() }")
        .file(
            "template.rhai",
            r#"#{ output: application(#{ components: [component("cfg", "k8s-objects", #{ objects: [
                #{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "cfg" }, data: #{ token: parameter.token } }
            ] })] }) }"#,
        );
    let mut sandbox = Sandbox::with_kubevela().await.registries(&[&addon]);
    let request = |name: &str| EnableRequest {
        reference: name.to_owned(),
        args: args(json!({"token": SECRET})).into(),
        ..EnableRequest::default()
    };
    let plan = addonctl::plan::plan(&sandbox.ctx.planner(), &request("leaky-app"), false)
        .await
        .unwrap();
    let warning = plan
        .notes
        .iter()
        .find(|n| n.contains("plain text"))
        .unwrap_or_else(|| panic!("no warning in {:?}", plan.notes));
    assert!(warning.contains("`token`"), "{warning}");
    assert!(warning.contains("`addon-leaky-app`"), "{warning}");
    assert!(warning.contains("secretKeyRef"), "{warning}");
    assert!(!warning.contains(SECRET), "{warning}");
    // The page it points to says how.
    assert!(
        warning.contains("docs/authors/addon-format.md"),
        "{warning}"
    );
    let page = fs_err::read_to_string(crate::support::root().join("docs/authors/addon-format.md"))
        .unwrap();
    assert!(page.contains("\n## Secrets with the vela engine\n"));
    // The direct engine keeps the Application to itself: no warning.
    sandbox.ctx.engine = addonctl::context::EngineChoice::Direct;
    let plan = addonctl::plan::plan(&sandbox.ctx.planner(), &request("leaky-app"), false)
        .await
        .unwrap();
    assert!(
        !plan.notes.iter().any(|n| n.contains("plain text")),
        "{:?}",
        plan.notes
    );
}

// ---------------------------------------------------------------------------------------------
// Smaller faults.

#[tokio::test]
async fn a_clone_heavy_script_stops_near_its_deadline() {
    // Every operation clones 10 000 strings of 10 000 bytes.
    let addon = TestAddon::new("clones").file(
        "template.rhai",
        "let a = []; a.pad(10000, \"x\".pad(10000, \"y\")); loop { let b = a; let c = b; }",
    );
    let package = load(&addon).await.expect("load");
    let limits = Limits {
        deadline: Duration::from_secs(1),
        max_operations: u64::MAX,
        ..Limits::default()
    };
    let started = Instant::now();
    let err = Renderer::with_limits(limits)
        .render(&package, &RenderOptions::default())
        .unwrap_err()
        .to_string();
    let elapsed = started.elapsed();
    assert!(err.contains("ran longer than the 1s limit"), "{err}");
    assert!(elapsed < Duration::from_millis(1800), "took {elapsed:?}");
}

#[tokio::test]
async fn lint_reports_a_link_leaving_the_addon_as_an_error() {
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        outside.path(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let addon = TestAddon::new("linked");
    std::fs::create_dir_all(addon.path().join("resources")).unwrap();
    std::os::unix::fs::symlink(outside.path(), addon.path().join("resources/x.yaml")).unwrap();
    let report = addonctl::lint::lint_path(addon.path(), &Renderer::new())
        .await
        .unwrap();
    let finding = report
        .findings
        .iter()
        .find(|f| f.message.contains("links outside the addon directory"))
        .unwrap_or_else(|| panic!("{:?}", report.findings));
    assert!(
        finding.message.contains("`resources/x.yaml`"),
        "{finding:?}"
    );
    assert_eq!(finding.severity, addonctl::lint::Severity::Error);
    cli()
        .arg("lint")
        .arg(addon.path())
        .assert()
        .code(2)
        .stdout(predicate::str::contains("links outside"));
}

#[test]
fn an_invalid_metadata_yaml_is_named_with_its_parse_error() {
    let addon = TestAddon::new("broken").file("metadata.yaml", "name: broken\nversion: [1.0\n");
    cli()
        .arg("-q")
        .arg("render")
        .arg(addon.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("metadata.yaml` is not valid"))
        .stderr(predicate::str::contains("line"))
        .stderr(predicate::str::contains("needs a `metadata.yaml`").not());
}

#[test]
fn a_failure_on_every_cluster_does_not_claim_the_others_were_applied() {
    let all = addonctl::Error::Clusters {
        addon: "x".to_owned(),
        failed: vec!["m1: unreachable".to_owned()],
        total: 1,
    }
    .to_string();
    assert!(!all.contains("other clusters"), "{all}");
    assert!(all.contains("run the same command again"), "{all}");
    let some = addonctl::Error::Clusters {
        addon: "x".to_owned(),
        failed: vec!["m1: unreachable".to_owned()],
        total: 2,
    }
    .to_string();
    assert!(some.contains("the other cluster was applied"), "{some}");
    assert!(some.contains("run the same command again"), "{some}");
}

#[test]
fn library_logs_stay_silent_at_the_default_verbosity() {
    // A control plane that refuses connections: kube's and hyper's own error lines must not
    // show, only addonctl's error.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://{address}'}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    let output = cli()
        .env("ADDONCTL_CLUSTER_TIMEOUT", "1")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["cluster", "list"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    // addonctl's own warning about the registries it could not read is allowed.
    for line in stderr
        .lines()
        .filter(|l| !l.contains("the stored registries cannot be read"))
    {
        assert!(
            !(line.starts_with("ERROR ")
                || line.starts_with(" WARN ")
                || line.starts_with("WARN ")),
            "a library log line: {line}\n{stderr}"
        );
    }
}

#[tokio::test]
async fn the_cli_exits_1_naming_a_failing_registry_it_needs() {
    let (server, url) = serve_fixture_repo(TestServer::builder()).await;
    let sandbox = Sandbox::with_kubevela().await;
    let cache = tempfile::tempdir().unwrap();
    let cli = || {
        let mut cmd = sandbox.cli();
        cmd.env("ADDONCTL_CACHE_DIR", cache.path())
            .env("ADDONCTL_REGISTRY_TIMEOUT", "3")
            .env_remove("ADDONCTL_REGISTRY_FILE");
        cmd
    };
    cli()
        .args([
            "registry",
            "add",
            "flaky",
            "--type",
            "helm",
            "--no-validate",
        ])
        .args(["--endpoint", &url])
        .assert()
        .success();
    for fault in [Fault::Status(500, Vec::new()), Fault::Truncate, Fault::Hang] {
        server.fail_always(fault.clone());
        let started = Instant::now();
        for command in [
            &["enable", "flaky/minimal"][..],
            &["list", "--registry", "flaky"],
        ] {
            cli()
                .args(command)
                .timeout(Duration::from_secs(60))
                .assert()
                .code(1)
                .stderr(predicate::str::contains("registry `flaky`"))
                .stderr(predicate::str::contains("cannot be read"))
                .stderr(predicate::str::contains("no addon").not());
        }
        // Two commands, each bounded by one 3 s deadline, not one per retry.
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{fault:?}: {:?}",
            started.elapsed()
        );
    }
    server.heal();
    cli()
        .args(["list", "--registry", "flaky"])
        .assert()
        .success()
        .stdout(predicate::str::contains("minimal"));
}

#[test]
fn script_print_and_debug_output_masks_secret_values() {
    let addon = TestAddon::new("chatty")
        .file("parameter.rhai", "#{ token: string(\"\").secret() }")
        .file(
            "template.rhai",
            "print(`token: ${parameter.token}`); debug(parameter.token); #{ output: application() }",
        );
    let output = cli()
        .arg("-vv")
        .arg("render")
        .arg(addon.path())
        .arg(format!("token={SECRET}"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("token: ******"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
}
