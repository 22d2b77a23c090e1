//! The Markdown reference, written by the test that keeps `docs/reference/` in step with the
//! code: the CLI from clap's command tree, the `Addon` resource from its CRD.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use clap::{Arg, Command};
use serde_json::Value;

use super::{built, visible};
use crate::cli::help;

/// The Markdown CLI reference, as (file name under `docs/reference/cli/`, text): `README.md`
/// (the global options and the commands) and one file per top-level command
/// (`addonctl-enable.md`), its nested commands included.
pub fn cli_markdown() -> Vec<(String, String)> {
    let top = built();
    let globals: BTreeSet<String> = top
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.get_id().to_string())
        .collect();
    let mut index = String::new();
    let _ = writeln!(index, "# `addonctl` command reference\n");
    let _ = writeln!(index, "{GENERATED}\n");
    if let Some(about) = top.get_long_about().or_else(|| top.get_about()) {
        let _ = writeln!(index, "{about}\n");
    }
    let _ = writeln!(index, "```text\n{}\n```\n", usage(&top));
    let _ = writeln!(index, "## Commands\n");
    let _ = writeln!(index, "| command | what it does |\n|---|---|");
    let mut files = Vec::new();
    for sub in visible(&top) {
        let file = format!("addonctl-{}.md", sub.get_name());
        let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
        let _ = writeln!(
            index,
            "| [`{}`]({file}) | {} |",
            sub.get_name(),
            cell(&about)
        );
        let mut page = String::new();
        section(&mut page, sub, &globals, 1);
        files.push((file, page));
    }
    let _ = writeln!(
        index,
        "\n## Global options\n\nAccepted by every command, before or after it.\n"
    );
    arguments(&mut index, top.get_arguments(), &BTreeSet::new());
    files.insert(0, ("README.md".to_owned(), index));
    files
}

/// The line each generated file starts with.
const GENERATED: &str = "Generated from the code (`UPDATE_REFERENCE=1 cargo test --locked --bin addonctl reference`); do not edit.";

/// A command's section at heading `level`: what it does, its usage, arguments and options (not
/// the ones a parent passes down), examples, then its nested commands one level deeper.
fn section(out: &mut String, command: &Command, inherited: &BTreeSet<String>, level: usize) {
    let hashes = "#".repeat(level);
    let name = command
        .get_bin_name()
        .unwrap_or_else(|| command.get_name())
        .to_owned();
    let _ = writeln!(out, "{hashes} `{name}`\n");
    if level == 1 {
        let _ = writeln!(out, "{GENERATED} [All commands](README.md).\n");
    }
    if let Some(about) = command.get_long_about().or_else(|| command.get_about()) {
        let _ = writeln!(out, "{about}\n");
    }
    let aliases: Vec<String> = command
        .get_visible_aliases()
        .map(|a| format!("`{a}`"))
        .collect();
    if !aliases.is_empty() {
        let _ = writeln!(out, "Alias: {}.\n", aliases.join(", "));
    }
    let _ = writeln!(out, "```text\n{}\n```\n", usage(command));
    let own: Vec<&Arg> = command
        .get_arguments()
        .filter(|a| !inherited.contains(a.get_id().as_str()))
        .collect();
    if own.iter().any(|a| shown(a)) {
        arguments(out, own.into_iter(), inherited);
    }
    if let Some(after) = command.get_after_help() {
        // The examples, without the pointer to the global options every command's help ends with.
        let after = after.to_string();
        let after = after
            .split(help::GLOBAL_NOTE)
            .next()
            .unwrap_or_default()
            .trim();
        if !after.is_empty() {
            let _ = writeln!(out, "```text\n{after}\n```\n");
        }
    }
    let mut passed: BTreeSet<String> = inherited.clone();
    passed.extend(
        command
            .get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| a.get_id().to_string()),
    );
    for sub in visible(command) {
        section(out, sub, &passed, level + 1);
    }
}

/// The usage line, as `--help` prints it (without its `Usage:` word).
fn usage(command: &Command) -> String {
    let mut command = command.clone();
    let usage = command.render_usage().to_string();
    usage
        .strip_prefix("Usage: ")
        .unwrap_or(&usage)
        .trim()
        .to_owned()
}

/// Whether `--help` lists an argument (clap's own `--help`/`--version` are left out).
fn shown(arg: &Arg) -> bool {
    !arg.is_hide_set()
        && !matches!(
            arg.get_action(),
            clap::ArgAction::Help
                | clap::ArgAction::HelpShort
                | clap::ArgAction::HelpLong
                | clap::ArgAction::Version
        )
}

/// The arguments, then the options, one bullet each.
fn arguments<'a>(out: &mut String, args: impl Iterator<Item = &'a Arg>, skip: &BTreeSet<String>) {
    let args: Vec<&Arg> = args
        .filter(|a| shown(a) && !skip.contains(a.get_id().as_str()))
        .collect();
    for (heading, positional) in [("Arguments", true), ("Options", false)] {
        let these: Vec<&&Arg> = args
            .iter()
            .filter(|a| a.is_positional() == positional)
            .collect();
        if these.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{heading}:\n");
        for arg in these {
            let _ = writeln!(out, "- {}", bullet(arg));
        }
        let _ = writeln!(out);
    }
}

/// One argument: how it is written, what it means, its default, values and variable.
fn bullet(arg: &Arg) -> String {
    let names = value_names(arg);
    let mut head = match (arg.get_short(), arg.get_long()) {
        (Some(short), Some(long)) => format!("-{short}, --{long}"),
        (Some(short), None) => format!("-{short}"),
        (None, Some(long)) => format!("--{long}"),
        (None, None) => String::new(),
    };
    let takes = arg.get_num_args().is_some_and(|n| n.takes_values());
    if arg.is_positional() {
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let name = format!("{names}{}", if many { "..." } else { "" });
        head = if arg.is_required_set() {
            format!("<{name}>")
        } else {
            format!("[{name}]")
        };
    } else if takes {
        let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
        if optional {
            let _ = write!(head, "[=<{names}>]");
        } else {
            let _ = write!(head, " <{names}>");
        }
    }
    let mut text = format!("`{head}`");
    if let Some(help) = arg.get_long_help().or_else(|| arg.get_help()) {
        let _ = write!(text, ": {}", help.to_string().replace('\n', " "));
    }
    let mut facts = Vec::new();
    let said = arg
        .get_help()
        .is_some_and(|help| help.to_string().contains("repeatable"));
    if matches!(arg.get_action(), clap::ArgAction::Append) && !arg.is_positional() && !said {
        facts.push("repeatable".to_owned());
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| format!("`{}`", d.to_string_lossy()))
        .collect();
    if takes && !defaults.is_empty() && !arg.is_hide_default_value_set() {
        facts.push(format!("default {}", defaults.join(", ")));
    }
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| match p.get_help() {
            Some(help) => format!("`{}` ({help})", p.get_name()),
            None => format!("`{}`", p.get_name()),
        })
        .collect();
    if takes && !possible.is_empty() {
        facts.push(format!("one of {}", possible.join(", ")));
    }
    if let Some(env) = arg.get_env() {
        facts.push(format!("environment `{}`", env.to_string_lossy()));
    }
    if !facts.is_empty() {
        let _ = write!(text, " ({})", facts.join("; "));
    }
    text
}

/// An argument's value names as `--help` writes them (`FILE`, `KEY=VALUE`).
fn value_names(arg: &Arg) -> String {
    match arg.get_value_names() {
        Some(names) if !names.is_empty() => names
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" "),
        _ => arg.get_id().as_str().to_uppercase(),
    }
}

/// Text for one table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

/// The `Addon` resource reference, from the CRD the controller's manifests install.
pub fn addon_resource_markdown() -> String {
    let crd = addonctl::controller::manifests::crd();
    let spec = &crd["spec"];
    let version = &spec["versions"][0];
    let mut out = String::new();
    let _ = writeln!(out, "# The `Addon` resource\n");
    let _ = writeln!(out, "{GENERATED}\n");
    let _ = writeln!(
        out,
        "`apiVersion: {}/{}`, `kind: {}`, {} (short name `{}`, category `{}`): the CRD \
         `{}` that `addonctl controller manifests` (or `--crd-only`) installs. What each field does \
         is told in [the controller guide](../multi-cluster/controller.md).\n",
        text(&spec["group"]),
        text(&version["name"]),
        text(&spec["names"]["kind"]),
        text(&spec["scope"]).to_lowercase(),
        text(&spec["names"]["shortNames"][0]),
        text(&spec["names"]["categories"][0]),
        text(&crd["metadata"]["name"]),
    );
    let _ = writeln!(out, "## Columns of `kubectl get addons`\n");
    let _ = writeln!(out, "| column | type | from | meaning |\n|---|---|---|---|");
    for column in version["additionalPrinterColumns"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} |",
            text(&column["name"]),
            text(&column["type"]),
            cell(text(&column["jsonPath"])),
            cell(text(&column["description"])),
        );
    }
    let root = &version["schema"]["openAPIV3Schema"]["properties"];
    for part in ["spec", "status"] {
        let _ = writeln!(out, "\n## `{part}`\n");
        if let Some(description) = root[part]["description"].as_str() {
            let _ = writeln!(out, "{description}\n");
        }
        let _ = writeln!(out, "| field | type | meaning |\n|---|---|---|");
        fields(&mut out, part, &root[part]);
    }
    out
}

/// A string of the CRD, or nothing.
fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// One row per property under `schema`, depth first (`spec.rollout.stages[].name`).
fn fields(out: &mut String, path: &str, schema: &Value) {
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, property) in properties {
        let here = format!("{path}.{name}");
        let mut kind = type_of(property);
        if required.contains(name.as_str()) {
            kind.push_str(", required");
        }
        let _ = writeln!(
            out,
            "| `{here}` | {} | {} |",
            cell(&kind),
            cell(text(&property["description"]))
        );
        fields(out, &here, property);
        if property["items"]["properties"].is_object() {
            fields(out, &format!("{here}[]"), &property["items"]);
        }
        if property["additionalProperties"]["properties"].is_object() {
            fields(out, &format!("{here}.*"), &property["additionalProperties"]);
        }
    }
}

/// A property's type in words: `string`, `array of object`, `map of string`, one of its values.
fn type_of(schema: &Value) -> String {
    if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
        return "integer or string".to_owned();
    }
    let mut kind = match text(&schema["type"]) {
        "array" => format!("array of {}", type_of(&schema["items"])),
        "object" if schema["additionalProperties"].is_object() => {
            format!("map of {}", type_of(&schema["additionalProperties"]))
        }
        "object" if schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true) => {
            "object (any fields)".to_owned()
        }
        "" => "any".to_owned(),
        other => other.to_owned(),
    };
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values
            .iter()
            .map(|v| {
                format!(
                    "`{}`",
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                )
            })
            .collect();
        let _ = write!(kind, ": {}", values.join(", "));
    }
    kind
}
