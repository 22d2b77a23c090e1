use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::markdown::{addon_resource_markdown, cli_markdown};
use super::{built, man_pages, visible};

/// `docs/reference/` in the source tree.
fn committed_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/reference")
}

/// Every file the generators write, by its path under `docs/reference/`.
fn generated() -> BTreeMap<PathBuf, String> {
    let mut files: BTreeMap<PathBuf, String> = cli_markdown()
        .into_iter()
        .map(|(name, text)| (Path::new("cli").join(name), text))
        .collect();
    files.insert(
        PathBuf::from("addon-resource.md"),
        addon_resource_markdown(),
    );
    files
}

#[test]
fn the_committed_reference_is_what_the_code_generates() {
    let root = committed_root();
    let files = generated();
    let cli = root.join("cli");
    let committed_cli: Vec<PathBuf> = fs_err::read_dir(&cli)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| Path::new("cli").join(e.file_name()))
                .collect()
        })
        .unwrap_or_default();
    if std::env::var_os("UPDATE_REFERENCE").is_some() {
        for stale in committed_cli.iter().filter(|p| !files.contains_key(*p)) {
            fs_err::remove_file(root.join(stale)).expect("a stale reference file removed");
        }
        fs_err::create_dir_all(&cli).expect("docs/reference/cli");
        for (path, text) in &files {
            fs_err::write(root.join(path), text).expect("a reference file written");
        }
        return;
    }
    let mut wrong: Vec<String> = files
        .iter()
        .filter(|(path, text)| {
            fs_err::read_to_string(root.join(path)).ok().as_deref() != Some(text.as_str())
        })
        .map(|(path, _)| format!("docs/reference/{} differs", path.display()))
        .collect();
    wrong.extend(
        committed_cli
            .iter()
            .filter(|p| !files.contains_key(*p))
            .map(|p| format!("docs/reference/{} documents no command", p.display())),
    );
    assert!(
        wrong.is_empty(),
        "the committed reference is not what the code generates:\n  {}\n\
         Regenerate it with:\n    UPDATE_REFERENCE=1 cargo test --locked --bin addonctl reference\n\
         and commit it.",
        wrong.join("\n  ")
    );
}

#[test]
fn every_visible_command_has_its_section_and_its_own_options() {
    let files: BTreeMap<String, String> = cli_markdown().into_iter().collect();
    let index = &files["README.md"];
    // The global options are listed once, on the index, with their variables.
    assert!(index.contains("`--kubeconfig <FILE>`"), "{index}");
    assert!(
        index.contains("environment `KUBEVELA_SYSTEM_NAMESPACE`"),
        "{index}"
    );
    assert!(index.contains("| [`enable`](enable.md) |"), "{index}");
    assert!(!index.contains("__complete"), "{index}");
    let enable = &files["enable.md"];
    assert!(enable.contains("# `addonctl enable`"), "{enable}");
    assert!(enable.contains("Alias: `install`."), "{enable}");
    assert!(enable.contains("`--dry-run[=<"), "{enable}");
    assert!(
        enable.contains("addonctl enable ./my-addon --dry-run=server"),
        "{enable}"
    );
    assert!(!enable.contains("`--kubeconfig"), "{enable}");
    assert!(!enable.contains("Global options (--kubeconfig"), "{enable}");
    // Nested commands are sections of their top-level command's page; an option a parent passes
    // down is listed on the parent only.
    let cluster = &files["cluster.md"];
    assert!(cluster.contains("## `addonctl cluster join`"), "{cluster}");
    let registry = &files["registry.md"];
    assert_eq!(
        registry.matches("`--registry-file <FILE>`").count(),
        1,
        "{registry}"
    );
    assert!(
        registry.contains("## `addonctl registry add`"),
        "{registry}"
    );
    let top = built();
    for sub in visible(&top) {
        assert!(
            files.contains_key(&format!("{}.md", sub.get_name())),
            "{}",
            sub.get_name()
        );
    }
    // No value of the environment the test runs in leaks into the text.
    assert!(files.values().all(|text| !text.contains("[env:")));
}

#[test]
fn the_addon_resource_reference_has_every_field_of_the_schema() {
    let text = addon_resource_markdown();
    for field in [
        "`spec.version`",
        "`spec.secretParameters[].secretRef.key`",
        "`spec.rollout.stages[].maxConcurrency` | integer or string",
        "`spec.drift.policy`",
        "`status.conditions[].lastTransitionTime`",
        "`status.rollout.phase`",
    ] {
        assert!(text.contains(field), "{field} in\n{text}");
    }
    assert!(text.contains("| Ready | string |"), "{text}");
    assert!(
        text.contains("`apiVersion: addonctl.io/v1alpha1`"),
        "{text}"
    );
}

#[test]
fn a_man_page_is_written_for_every_command_with_its_options() {
    let pages: BTreeMap<String, String> = man_pages()
        .unwrap()
        .into_iter()
        .map(|(name, text)| (name, String::from_utf8(text).unwrap()))
        .collect();
    for name in [
        "addonctl.1",
        "addonctl-enable.1",
        "addonctl-cluster-join.1",
        "addonctl-get-values.1",
        "addonctl-man.1",
    ] {
        assert!(
            pages
                .get(name)
                .is_some_and(|t| t.starts_with(".ie") || t.contains(".TH")),
            "{name}"
        );
    }
    assert!(!pages
        .keys()
        .any(|name| name.contains("help") || name.contains("complete")));
    let enable = &pages["addonctl-enable.1"];
    assert!(enable.contains("dry\\-run"), "{enable}");
    // The global options are on the top page, not repeated on every command's.
    assert!(pages["addonctl.1"].contains("kubeconfig"));
    assert!(!enable.contains("\\-\\-kubeconfig <"), "{enable}");
}
