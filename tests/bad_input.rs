//! Each kind of bad input fails with one clear error (DESIGN §7).

use std::time::{Duration, Instant};

use addonctl::loader;
use addonctl::render::{Limits, RenderOptions, Renderer};
use addonctl::source::local::LocalReader;
use addonctl::source::AddonRef;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;

async fn load(addon: &TestAddon) -> Result<addonctl::model::AddonPackage, String> {
    let reader = LocalReader::new(addon.path()).map_err(|e| e.to_string())?;
    loader::load(&reader, &AddonRef::latest(addon.name()))
        .await
        .map_err(|e| e.to_string())
}

async fn render_with(addon: &TestAddon, limits: Limits, args: Value) -> String {
    let package = load(addon).await.expect("load");
    let options = RenderOptions {
        args: args.as_object().cloned().unwrap_or_default(),
        ..RenderOptions::default()
    };
    Renderer::with_limits(limits)
        .render(&package, &options)
        .expect_err("render must fail")
        .to_string()
}

async fn render_err(addon: &TestAddon) -> String {
    render_with(addon, Limits::default(), json!({})).await
}

fn template(script: &str) -> TestAddon {
    TestAddon::new("bad").file("template.rhai", script)
}

#[tokio::test]
async fn runaway_loop_stops_at_the_wall_clock_deadline() {
    let addon = template("loop {}");
    let limits = Limits {
        deadline: Duration::from_millis(300),
        max_operations: u64::MAX,
        ..Limits::default()
    };
    let started = Instant::now();
    let err = render_with(&addon, limits, json!({})).await;
    assert!(
        started.elapsed() < Duration::from_millis(1300),
        "took {:?}",
        started.elapsed()
    );
    assert!(err.contains("ran longer than the 300ms limit"), "{err}");
    assert!(err.contains("`template.rhai` line 1"), "{err}");
}

#[tokio::test]
async fn runaway_loop_in_every_kind_of_script_is_stopped() {
    let limits = || Limits {
        deadline: Duration::from_millis(200),
        max_operations: u64::MAX,
        ..Limits::default()
    };
    for (file, prefix) in [
        ("parameter.rhai", ""),
        ("resources/x.rhai", ""),
        ("NOTES.rhai", ""),
        ("definitions/d.rhai", ""),
        ("template.rhai", "import \"spin\" as s; "),
    ] {
        let addon = TestAddon::new("bad")
            .file(file, &format!("{prefix}loop {{}}"))
            .file("lib/spin.rhai", "loop {}");
        let err = render_with(&addon, limits(), json!({})).await;
        assert!(err.contains("ran longer than"), "{file}: {err}");
    }
}

#[tokio::test]
async fn too_many_operations_is_an_error() {
    let addon = template("let x = 0; while true { x += 1; }");
    let limits = Limits {
        max_operations: 50_000,
        ..Limits::default()
    };
    let err = render_with(&addon, limits, json!({})).await;
    assert!(
        err.contains("exceeded the limit of 50000 operations"),
        "{err}"
    );
}

#[tokio::test]
async fn huge_string_and_array_hit_the_size_limits() {
    let err = render_err(&template(r#"let s = "xxxxxxxxxx"; loop { s += s; }"#)).await;
    assert!(err.contains("exceeds the sandbox's limit"), "{err}");
    // Rhai sizes an array again at each push, so a loop growing one to the default limit
    // (100,000 items, room for a fleet's clusters) costs time quadratic in it and meets the
    // deadline first; the size limit itself, at 10,000:
    let limits = Limits {
        max_array_size: 10_000,
        ..Limits::default()
    };
    let err = render_with(
        &template("let a = []; loop { a.push(1); }"),
        limits,
        json!({}),
    )
    .await;
    assert!(err.contains("exceeds the sandbox's limit"), "{err}");
    assert!(err.contains("10000"), "{err}");
}

#[tokio::test]
async fn map_growth_by_index_assignment_is_bounded_by_the_operation_limit() {
    // Rhai does not size-check `m[k] = v`; the operation limit bounds it instead.
    let limits = Limits {
        max_operations: 200_000,
        ..Limits::default()
    };
    let err = render_with(
        &template("let m = #{}; let i = 0; loop { m[`k${i}`] = i; i += 1; }"),
        limits,
        json!({}),
    )
    .await;
    assert!(
        err.contains("exceeded the limit of 200000 operations"),
        "{err}"
    );
}

#[tokio::test]
async fn deep_recursion_is_an_error_not_a_crash() {
    let err = render_err(&template("fn f(n) { f(n + 1) } f(0)")).await;
    assert!(err.contains("nests calls deeper than the limit"), "{err}");
}

#[tokio::test]
async fn imports_outside_lib_are_refused() {
    for path in ["../secret", "/etc/passwd", "lib/../../x", "missing"] {
        let addon = template(&format!(
            "import \"{path}\" as m; #{{ output: application() }}"
        ))
        .file("lib/ok.rhai", "fn f() { 1 }");
        let err = render_err(&addon).await;
        assert!(
            err.contains("only the addon's own `lib/*.rhai` modules can be imported"),
            "{path}: {err}"
        );
        assert!(err.contains("`ok`"), "lists the available modules: {err}");
    }
}

#[tokio::test]
async fn circular_imports_are_an_error() {
    let addon = template("import \"a\" as a; #{ output: application() }")
        .file("lib/a.rhai", "import \"b\" as b;")
        .file("lib/b.rhai", "import \"a\" as a;");
    let err = render_err(&addon).await;
    assert!(err.contains("circular import"), "{err}");
}

#[tokio::test]
async fn syntax_errors_name_file_line_and_column() {
    let err = render_err(&template("let a = 1;\nlet b = ;\n")).await;
    assert!(
        err.contains("`template.rhai` line 2, column 9: syntax error"),
        "{err}"
    );
}

#[tokio::test]
async fn no_file_clock_or_eval_access() {
    for script in [
        "eval(\"1\")",
        "timestamp()",
        "open_file(\"/etc/passwd\")",
        "get_env(\"HOME\")",
    ] {
        let err = render_err(&template(script)).await;
        assert!(err.contains("`template.rhai`"), "{script}: {err}");
    }
}

#[tokio::test]
async fn missing_name_or_version_is_a_clear_error() {
    let addon = TestAddon::new("x").file("metadata.yaml", "version: 1.0.0\n");
    let reader = LocalReader::new(addon.path()).unwrap();
    // The listing skips it (with a warning); loading it by files reports why.
    assert!(addonctl::source::AsyncReader::list_addons(&reader)
        .await
        .unwrap()
        .is_empty());
    let files = vec![("metadata.yaml".to_owned(), b"version: 1.0.0\n".to_vec())];
    let err = loader::from_files("local", "x", files)
        .unwrap_err()
        .to_string();
    assert!(err.contains("`name` is required"), "{err}");
    let files = vec![("metadata.yaml".to_owned(), b"name: x\n".to_vec())];
    let err = loader::from_files("local", "x", files)
        .unwrap_err()
        .to_string();
    assert!(err.contains("`version` is required"), "{err}");
}

#[tokio::test]
async fn yaml_alias_bomb_is_rejected() {
    let mut bomb = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\na0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        let refs = vec![format!("*a{p}"); 9].join(", ");
        bomb += &format!("a{i}: &a{i} [{refs}]\n");
    }
    let err = render_err(&TestAddon::new("bad").file("resources/bomb.yaml", &bomb)).await;
    assert!(err.contains("`resources/bomb.yaml`: invalid YAML"), "{err}");
    assert!(err.contains("repetition limit"), "{err}");
}

#[tokio::test]
async fn oversized_and_non_utf8_files_fail_loading() {
    let big = vec![b'#'; usize::try_from(addonctl::source::MAX_FILE_SIZE).unwrap() + 10];
    let err = load(&TestAddon::new("bad").bytes("resources/big.yaml", &big))
        .await
        .unwrap_err();
    assert!(err.contains("over the limit"), "{err}");
    let err = load(&TestAddon::new("bad").bytes("template.rhai", &[0x23, 0xff, 0xfe]))
        .await
        .unwrap_err();
    assert!(err.contains("`template.rhai` is not valid UTF-8"), "{err}");
    // Unrecognised binary files are ignored, never an error.
    load(&TestAddon::new("ok").bytes("images/logo.png", &[0xff, 0x00]))
        .await
        .unwrap();
}

#[tokio::test]
async fn two_templates_are_an_error() {
    let addon = template("#{ output: application() }").file("template.yaml", "kind: Application\n");
    let err = load(&addon).await.unwrap_err();
    assert!(
        err.contains("both `template.rhai` and `template.yaml`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_cue_template_next_to_a_rhai_one_is_an_error() {
    let addon = template("#{ output: application() }").file("template.cue", "output: {}\n");
    let err = load(&addon).await.unwrap_err();
    assert!(
        err.contains("both `template.cue` and `template.rhai`"),
        "{err}"
    );
}

#[tokio::test]
async fn bad_script_results_are_explained() {
    let cases = [
        ("template.rhai", "42", "must evaluate to `#{ output"),
        ("template.rhai", "#{ outputs: #{} }", "has no `output`"),
        (
            "template.rhai",
            "#{ output: application(), extra: 1 }",
            "unexpected key `extra`",
        ),
        (
            "template.rhai",
            "#{ output: application(), outputs: #{ a: #{ kind: \"X\" } } }",
            "lacks `apiVersion`, `metadata.name`",
        ),
        (
            "resources/r.rhai",
            "#{ name: \"x\" }",
            "must evaluate to a component",
        ),
        ("NOTES.rhai", "42", "must evaluate to a string"),
    ];
    for (file, script, expected) in cases {
        let err = render_err(&TestAddon::new("bad").file(file, script)).await;
        assert!(err.contains(expected), "{file} `{script}`: {err}");
        assert!(err.contains(&format!("`{file}`")), "{err}");
    }
}
