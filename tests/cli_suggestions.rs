//! Every flag a command's error or hint suggests is one that command accepts: a user who
//! follows the advice gets further, never "unexpected argument". The walk runs each command,
//! gives it each flag its stderr names, and runs it again until it succeeds.

use std::collections::BTreeSet;

use serde_json::json;

use crate::support::builders::TestAddon;
use crate::support::k8s::{Kind, Sandbox};

/// An addon whose Application uses a component type nobody serves (`cloud-database`), with a
/// `size` parameter, that requires a newer addonctl than this one.
fn needs_api(name: &str) -> TestAddon {
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\nsystem:\n  addonctl: \">=99.0.0\"\n"),
        )
        .file("parameter.rhai", "#{ size: pint(1) }\n")
        .file(
            "template.rhai",
            "#{ output: application(#{ components: [#{ name: \"db\", type: \"cloud-database\",\n    properties: #{ size: parameter.size } }] }) }\n",
        )
}

/// The `--flags` a text names, in order of appearance.
fn flags_named(text: &str) -> Vec<String> {
    let pattern = regex::Regex::new(r"--[a-z][a-z-]*[a-z]").unwrap();
    let mut seen = Vec::new();
    for found in pattern.find_iter(text) {
        let flag = found.as_str().to_owned();
        if !seen.contains(&flag) {
            seen.push(flag);
        }
    }
    seen
}

/// A command spelt out in a hint: its words before the first flag, and its flags.
type Spelt = (Vec<String>, Vec<String>);

/// What a command's output suggests: the flags for the command itself, and the other commands
/// it spells out (`` `addonctl enable x --declarative …` ``).
fn suggestions(text: &str) -> (Vec<String>, Vec<Spelt>) {
    let quoted = regex::Regex::new(r"`addonctl ([^`]*)`").unwrap();
    let commands = quoted
        .captures_iter(text)
        .map(|c| {
            let spelt = c.get(1).map_or("", |m| m.as_str());
            let words = spelt
                .split_whitespace()
                .take_while(|w| !w.starts_with('-') && *w != "…")
                .map(str::to_owned)
                .collect();
            (words, flags_named(spelt))
        })
        .collect();
    (flags_named(&quoted.replace_all(text, "")), commands)
}

/// Panics unless `addonctl <words> <flag>` is a command line clap accepts (its help).
fn assert_accepted(sb: &Sandbox, words: &[String], flag: &str, context: &str) {
    let out = sb
        .cli()
        .args(words)
        .arg(flag)
        .arg("--help")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "`addonctl {} {flag}`, as suggested, is refused:\n{stderr}\nsuggested by:\n{context}",
        words.join(" ")
    );
}

/// What one walk saw: each run's exit code and stderr, and the flags suggested on the way.
struct Walk {
    runs: Vec<(i32, String)>,
    suggested: BTreeSet<String>,
}

impl Walk {
    fn succeeded(&self) -> bool {
        self.runs.last().is_some_and(|(code, _)| *code == 0)
    }
}

/// Runs `addonctl <args>`; while it fails naming flags it was not given, gives it those and
/// runs it again. Panics if the command rejects a flag its own output suggested.
fn walk(sb: &Sandbox, args: &[&str]) -> Walk {
    let mut given: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let mut walk = Walk {
        runs: Vec::new(),
        suggested: BTreeSet::new(),
    };
    for _ in 0..6 {
        let out = sb.cli().args(&given).output().unwrap();
        let code = out.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !stderr.contains("unexpected argument") && !stderr.contains("unrecognized"),
            "`addonctl {}` rejected a flag its own output suggested:\n{stderr}\nruns so far: {:#?}",
            given.join(" "),
            walk.runs
        );
        walk.runs.push((code, stderr.clone()));
        if code == 0 {
            break;
        }
        let (own, others) = suggestions(&stderr);
        for (words, flags) in others {
            for flag in flags {
                assert_accepted(sb, &words, &flag, &stderr);
            }
        }
        let new: Vec<String> = own.into_iter().filter(|f| !given.contains(f)).collect();
        if new.is_empty() {
            break;
        }
        walk.suggested.extend(new.iter().cloned());
        given.extend(new);
    }
    walk
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_every_flag_an_error_suggests_is_accepted_by_that_command() {
    let addon = needs_api("api-walk");
    let sb = Sandbox::with_kubevela().await.registries(&[&addon]);

    // enable: the version check, then the API check, each suggesting its flag.
    let enabled = walk(&sb, &["enable", "api-walk", "size=1"]);
    assert!(enabled.succeeded(), "{:#?}", enabled.runs);
    for flag in ["--skip-version-check", "--skip-api-check"] {
        assert!(enabled.suggested.contains(flag), "{:#?}", enabled.runs);
    }
    sb.assert_present(&[(Kind::APPLICATION, "addon-api-walk")])
        .await;

    // diff and upgrade meet the same checks.
    let diffed = walk(&sb, &["diff", "api-walk", "size=2"]);
    assert!(
        diffed.suggested.contains("--skip-api-check"),
        "{:#?}",
        diffed.runs
    );
    assert!(
        diffed.runs.last().is_some_and(|(code, _)| *code <= 1),
        "{:#?}",
        diffed.runs
    );
    let upgraded = walk(&sb, &["upgrade", "api-walk", "size=2"]);
    assert!(upgraded.succeeded(), "{:#?}", upgraded.runs);
    assert!(
        upgraded.suggested.contains("--skip-api-check"),
        "{:#?}",
        upgraded.runs
    );

    // rollback: its error says to pass `--skip-api-check`, and it takes it.
    let rolled = walk(&sb, &["rollback", "api-walk", "1"]);
    assert!(rolled.succeeded(), "{:#?}", rolled.runs);
    assert!(
        rolled.suggested.contains("--skip-api-check"),
        "{:#?}",
        rolled.runs
    );
    assert_eq!(sb.stored_args("api-walk").await, Some(json!({"size": 1})));
}

#[test]
fn flags_are_read_from_hints_in_their_usual_spellings() {
    assert_eq!(
        flags_named("(pass `--skip-api-check` to enable anyway); --reset-values to drop them"),
        vec!["--skip-api-check", "--reset-values"]
    );
    let (own, others) = suggestions(
        "Change it (`addonctl enable x --declarative …`), or pass `--override-controller`",
    );
    assert_eq!(own, vec!["--override-controller"]);
    assert_eq!(
        others,
        vec![(
            vec!["enable".to_owned(), "x".to_owned()],
            vec!["--declarative".to_owned()]
        )]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_rollback_of_an_addon_an_addon_resource_declares_needs_override_controller() {
    let addon = crate::controller::fixture("guarded-roll", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    crate::controller::install_crd(&sb).await;
    sb.cli()
        .args(["enable", "guarded-roll", "count=1"])
        .assert()
        .success();
    sb.cli()
        .args(["upgrade", "guarded-roll", "count=3"])
        .assert()
        .success();
    sb.apply_as(
        "test",
        json!({
            "apiVersion": "addonctl.io/v1alpha1", "kind": "Addon",
            "metadata": {"name": "guarded-roll", "namespace": sb.ns(),
                "annotations": {"addonctl.io/author": "admin"}},
            "spec": {"parameters": {"count": 3}, "suspend": true},
        }),
    )
    .await;

    let refused = walk(&sb, &["rollback", "guarded-roll", "1"]);
    let (code, stderr) = &refused.runs[0];
    assert_eq!(*code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "declared by the `Addon` resource `{}/guarded-roll`",
            sb.ns()
        )) && stderr.contains("pass `--override-controller` to roll it back anyway"),
        "{stderr}"
    );
    assert!(
        refused.suggested.contains("--override-controller"),
        "{:#?}",
        refused.runs
    );
    // Nothing was rolled back by the refused run; the overriding one did it, without a note on
    // a `--reset-values` nobody gave.
    assert!(refused.succeeded(), "{:#?}", refused.runs);
    let (_, stderr) = refused.runs.last().unwrap();
    assert!(!stderr.contains("--reset-values"), "{stderr}");
    assert_eq!(
        sb.stored_args("guarded-roll").await,
        Some(json!({"count": 1}))
    );
}
