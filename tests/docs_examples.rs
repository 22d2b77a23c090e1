//! The commands the README and `docs/` show in blocks marked ` ```sh runnable`, run as written
//! against the test API servers, in order, one sandbox per block: a removed command or flag, a
//! renamed addon or a changed exit code fails here. (Every other `addonctl …` line of the docs is
//! parsed by the real command line in the binary's unit tests.)

use std::path::{Path, PathBuf};

use crate::support::k8s::Sandbox;
use crate::support::root;

/// A runnable block: where it is, and its command lines (comments kept: they say which exit
/// code is expected).
struct Block {
    file: PathBuf,
    line: usize,
    commands: Vec<(usize, String)>,
}

/// The runnable blocks of one Markdown file.
fn runnable_blocks(path: &Path) -> Vec<Block> {
    let text = fs_err::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    let mut in_other = false;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(info) = line.trim_start().strip_prefix("```") {
            if let Some(block) = open.take() {
                blocks.push(block);
            } else if in_other {
                in_other = false;
            } else if info.split_whitespace().eq(["sh", "runnable"]) {
                open = Some(Block {
                    file: path.to_owned(),
                    line: number,
                    commands: Vec::new(),
                });
            } else {
                in_other = true;
            }
            continue;
        }
        if let Some(block) = &mut open {
            if !line.trim().is_empty() {
                block.commands.push((number, line.trim().to_owned()));
            }
        }
    }
    blocks
}

/// Every Markdown file of the README and `docs/`.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs_err::read_dir(dir).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut out);
    out.sort();
    out
}

/// A command line of a runnable block as words after `addonctl`, and the exit code its comment
/// announces (`exit 1`), else 0. Runnable blocks hold plain commands only: no pipes,
/// redirections, variables or quotes.
fn parse(line: &str) -> (Vec<String>, i32) {
    let (command, comment) = line.split_once(" #").unwrap_or((line, ""));
    assert!(
        !command.contains(['|', '>', '<', '$', '&', ';', '\'', '"']),
        "a runnable line must be a plain command: {line}"
    );
    let mut words = command.split_whitespace().map(str::to_owned);
    assert_eq!(words.next().as_deref(), Some("addonctl"), "{line}");
    let code = i32::from(comment.contains("exit 1"));
    (words.collect(), code)
}

#[test]
fn a_runnable_line_is_its_words_and_the_exit_code_its_comment_announces() {
    assert_eq!(
        parse("addonctl diff x replicas=2   # what would change (exit 1: something would)"),
        (vec!["diff".into(), "x".into(), "replicas=2".into()], 1)
    );
    assert_eq!(parse("addonctl list").1, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_runnable_examples_of_the_docs_run_as_written() {
    let blocks: Vec<Block> = documents()
        .iter()
        .flat_map(|p| runnable_blocks(p))
        .collect();
    // The tour of the README, the first steps of a platform admin and of a registry author.
    assert!(blocks.len() >= 3, "{} runnable blocks", blocks.len());
    let mut ran = 0;
    for block in &blocks {
        // Each block in its own system namespace (KubeVela's CRDs served, so the vela engine),
        // from an empty directory.
        let sb = Sandbox::with_kubevela().await;
        let dir = tempfile::tempdir().unwrap();
        for (number, line) in &block.commands {
            let (words, expected) = parse(line);
            let output = sb
                .cli()
                .current_dir(dir.path())
                .env("HOME", dir.path())
                .args(&words)
                .output()
                .unwrap();
            assert_eq!(
                output.status.code(),
                Some(expected),
                "{}:{number} (block at line {}): {line}\nstdout:\n{}\nstderr:\n{}",
                block.file.display(),
                block.line,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
            ran += 1;
        }
    }
    assert!(ran >= 15, "{ran} commands ran");
}

/// The headings of a Markdown text as GitHub anchors them (`## The `Addon` spec` →
/// `the-addon-spec`), code blocks left out.
fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim().to_lowercase();
        let slug: String = heading
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        out.push(slug);
    }
    out
}

/// The relative links of a Markdown text (`[text](path#anchor)`), code left out.
fn relative_links(text: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            // Inline code is not a link either.
            let mut inline = false;
            for c in line.chars() {
                if c == '`' {
                    inline = !inline;
                } else if !inline {
                    prose.push(c);
                }
            }
            prose.push('\n');
        }
    }
    prose
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|link| !link.contains("://") && !link.starts_with("mailto:"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_link_between_the_docs_reaches_its_page_and_heading() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in documents() {
        let text = fs_err::read_to_string(&page).unwrap();
        for link in relative_links(&text) {
            checked += 1;
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !target.exists() {
                wrong.push(format!("{}: `{link}`: no such file", page.display()));
                continue;
            }
            let is_markdown = target.extension().is_some_and(|e| e == "md");
            if !anchor.is_empty() && is_markdown {
                let headings = anchors(&fs_err::read_to_string(&target).unwrap());
                if !headings.iter().any(|h| h == anchor) {
                    wrong.push(format!("{}: `{link}`: no such heading", page.display()));
                }
            }
        }
    }
    // A code block left open swallows the rest of its page.
    for page in documents() {
        let text = fs_err::read_to_string(&page).unwrap();
        let fences = text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        if fences % 2 == 1 {
            wrong.push(format!("{}: a code block is not closed", page.display()));
        }
    }
    assert!(wrong.is_empty(), "broken links:\n{}", wrong.join("\n"));
    assert!(checked > 100, "only {checked} links found");
}

#[test]
fn a_heading_anchors_as_github_does_and_code_is_no_link() {
    assert_eq!(
        anchors("# A\n## The `Addon` spec, in short\n```\n# not\n```\n### `--dry-run=server` and planning offline"),
        ["a", "the-addon-spec-in-short", "--dry-runserver-and-planning-offline"]
    );
    assert_eq!(
        relative_links("see [a](a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n[d](https://e)"),
        ["a.md#x"]
    );
}

#[test]
fn the_readme_stays_a_front_page_and_every_page_is_in_the_index() {
    let readme = fs_err::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "the README has {lines} lines; the depth goes under docs/"
    );
    // The two set-up commands, as `.ci/run` and the issue tracker's users run them.
    assert!(readme.contains("| every test | `bash scripts/test.sh` |"));
    assert!(readme.contains("`bash scripts/demo.sh` (again to tear it down)"));
    let index = fs_err::read_to_string(root().join("docs/README.md")).unwrap();
    let linked = relative_links(&index);
    for page in documents() {
        let Ok(path) = page.strip_prefix(root().join("docs")) else {
            continue;
        };
        let path = path.to_string_lossy().replace('\\', "/");
        // The generated command pages are linked from their own index.
        if path == "README.md" || path.starts_with("reference/cli/addonctl-") {
            continue;
        }
        assert!(
            linked
                .iter()
                .any(|l| l.split('#').next() == Some(path.as_str())),
            "docs/{path} is not in docs/README.md"
        );
    }
}

#[test]
fn the_template_the_addon_format_shows_is_what_init_writes() {
    let page = fs_err::read_to_string(root().join("docs/authors/addon-format.md")).unwrap();
    let shown = page
        .split("## A template")
        .nth(1)
        .and_then(|rest| rest.split("```rhai\n").nth(1))
        .and_then(|block| block.split("\n```").next())
        .expect("a rhai block under `## A template`");
    let dir = tempfile::tempdir().unwrap();
    assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .current_dir(dir.path())
        .args(["init", "my-addon"])
        .assert()
        .success();
    let written = fs_err::read_to_string(dir.path().join("my-addon/template.rhai")).unwrap();
    assert_eq!(shown.trim_end(), written.trim_end());
}
