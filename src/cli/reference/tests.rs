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
    assert!(
        index.contains("| [`enable`](addonctl-enable.md) |"),
        "{index}"
    );
    assert!(!index.contains("__complete"), "{index}");
    let enable = &files["addonctl-enable.md"];
    assert!(enable.contains("# `addonctl enable`"), "{enable}");
    assert!(enable.contains("Alias: `install`."), "{enable}");
    assert!(enable.contains("`--dry-run[=<"), "{enable}");
    // An option named like clap's own `--version` is the command's, and listed.
    assert!(enable.contains("- `--version <VERSION>`: "), "{enable}");
    assert!(!enable.contains("`-h, --help`"), "{enable}");
    assert!(
        enable.contains("addonctl enable ./my-addon --dry-run=server"),
        "{enable}"
    );
    assert!(!enable.contains("`--kubeconfig"), "{enable}");
    assert!(!enable.contains("Global options (--kubeconfig"), "{enable}");
    // Nested commands are sections of their top-level command's page; an option a parent passes
    // down is listed on the parent only.
    let cluster = &files["addonctl-cluster.md"];
    assert!(cluster.contains("## `addonctl cluster join`"), "{cluster}");
    let registry = &files["addonctl-registry.md"];
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
            files.contains_key(&format!("addonctl-{}.md", sub.get_name())),
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
    // The examples keep their lines, in a section of their own.
    let examples = enable
        .split(".SH EXAMPLES\n.nf\n")
        .nth(1)
        .unwrap_or_default();
    assert!(
        examples.contains("\n  addonctl enable ./my\\-addon \\-\\-dry\\-run=server\n"),
        "{enable}"
    );
    assert!(examples.contains("\n.fi"), "{enable}");
    assert!(!enable.contains(".SH EXTRA"), "{enable}");
    // The global options are on the top page, not repeated on every command's.
    assert!(pages["addonctl.1"].contains("kubeconfig"));
    assert!(!enable.contains("\\-\\-kubeconfig <"), "{enable}");
}

/// Every Markdown file of the README and `docs/`.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs_err::read_dir(dir).expect("docs/").filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut out);
    out.sort();
    out
}

/// The `addonctl …` commands of one shell line — each part between `|`, `&&`, `;` and `<(…)`
/// that starts with `addonctl`, without its comment or redirection — split into words.
fn addonctl_commands(line: &str) -> Vec<Vec<String>> {
    let line = line.trim().trim_start_matches("$ ");
    let line = line.split(" #").next().unwrap_or_default();
    let mut out = Vec::new();
    for part in line.split(['|', ';', '&', '(', ')']) {
        let Some(rest) = part.trim().strip_prefix("addonctl") else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with(' ')) {
            continue;
        }
        let rest = rest.split(['>', '<']).next().unwrap_or_default();
        let mut words = Vec::new();
        let mut word = String::new();
        let mut quote = None;
        for c in rest.chars() {
            match (quote, c) {
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, c) if c.is_whitespace() => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                (_, c) => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        out.push(words);
    }
    out
}

/// The commands of a document: every line of its `sh`/`shell`/`console` blocks; in the
/// generated reference, the example lines of its `text` blocks (the commands' `--help`).
fn documented_commands(path: &Path) -> Vec<(usize, Vec<String>)> {
    // A file the reference test is rewriting meanwhile (`UPDATE_REFERENCE=1`) may be gone.
    let Ok(text) = fs_err::read_to_string(path) else {
        return Vec::new();
    };
    let reference = path.components().any(|c| c.as_os_str() == "reference");
    let mut out = Vec::new();
    let mut shell = None;
    let mut continued = String::new();
    for (number, line) in text.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            shell = match shell {
                Some(_) => None,
                None => Some(
                    ["sh", "shell", "console", "bash"]
                        .contains(&info.split_whitespace().next().unwrap_or_default())
                        || (reference && info == "text"),
                ),
            };
            continue;
        }
        if shell != Some(true) || (reference && !line.starts_with("  addonctl ")) {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            continued.push_str(head);
            continue;
        }
        let whole = std::mem::take(&mut continued) + line;
        out.extend(
            addonctl_commands(&whole)
                .into_iter()
                .map(|words| (number + 1, words)),
        );
    }
    out
}

#[test]
fn every_command_shown_in_the_docs_parses() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for path in documents() {
        for (line, words) in documented_commands(&path) {
            checked += 1;
            let argv = std::iter::once("addonctl".to_owned()).chain(words.iter().cloned());
            if let Err(error) = crate::cli::parse_from(argv) {
                let first = error.to_string();
                let first = first.lines().next().unwrap_or_default().to_owned();
                wrong.push(format!(
                    "{}:{line}: addonctl {}\n    {first}",
                    path.display(),
                    words.join(" ")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "commands the CLI refuses:\n{}",
        wrong.join("\n")
    );
    assert!(checked > 100, "only {checked} commands found in the docs");
}

#[test]
fn a_documented_line_yields_each_addonctl_command_of_it() {
    assert_eq!(
        addonctl_commands("addonctl disable a && addonctl wait a --for disabled  # then"),
        [vec!["disable", "a"], vec!["wait", "a", "--for", "disabled"]]
    );
    assert_eq!(
        addonctl_commands("source <(addonctl completion bash)"),
        [vec!["completion", "bash"]]
    );
    assert_eq!(
        addonctl_commands(r#"addonctl get values x > "v 1.yaml""#),
        [vec!["get", "values", "x"]]
    );
    assert!(addonctl_commands("man addonctl-enable").is_empty());
    assert_eq!(
        addonctl_commands("addonctl render ./a 'title=Two words'"),
        [vec!["render", "./a", "title=Two words"]]
    );
}
