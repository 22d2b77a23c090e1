//! `lint`: checks an addon (or a directory of addons) the way `enable` would use it.
//!
//! Errors: metadata invalid, a file not UTF-8 or too large, a script that does not compile, a
//! render with default values (required parameters get example values; CUE addons are evaluated
//! too) that fails, a definition name used twice (in one addon or across the addons checked).
//! Warnings: what loading reports (duplicated keys, …), parameters without `.usage(…)` (or, in
//! `parameter.cue`, a `// +usage=` comment), parameter names that are Rhai keywords.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::loader::{self, classify};
use crate::model::AddonPackage;
use crate::render::{RenderOptions, Renderer};
use crate::source::local::{LocalReader, LOCAL_REGISTRY};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The addon cannot be enabled as it is.
    Error,
    /// The addon works, but something should be fixed.
    Warning,
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// The addon (its directory name when the metadata cannot be read).
    pub addon: String,
    /// What is wrong, naming the file.
    pub message: String,
}

/// The result of a lint run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The addons checked (directory names).
    pub addons: Vec<String>,
    /// Every finding, in the order found.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The number of findings of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

/// Words Rhai reserves: a parameter with such a name must be declared with a quoted key and read
/// as `parameter["name"]`.
const RHAI_RESERVED: &[&str] = &[
    "true",
    "false",
    "let",
    "const",
    "if",
    "else",
    "switch",
    "do",
    "while",
    "until",
    "loop",
    "for",
    "in",
    "continue",
    "break",
    "return",
    "throw",
    "try",
    "catch",
    "import",
    "export",
    "as",
    "global",
    "private",
    "fn",
    "Fn",
    "call",
    "curry",
    "this",
    "type_of",
    "print",
    "debug",
    "eval",
    "is_def_var",
    "is_def_fn",
    "is_shared",
    "var",
    "static",
    "shared",
    "with",
    "is",
    "goto",
    "exit",
    "match",
    "case",
    "public",
    "protected",
    "new",
    "use",
    "module",
    "package",
    "super",
    "thread",
    "spawn",
    "go",
    "await",
    "async",
    "sync",
    "yield",
    "default",
    "void",
    "null",
    "nil",
    "type",
];

/// Lints `path`: one addon directory, or a directory whose sub-directories are addons.
pub async fn lint_path(path: &Path, renderer: &Renderer) -> crate::Result<Report> {
    let mut dirs = Vec::new();
    if path.join("metadata.yaml").is_file() {
        dirs.push(path.to_path_buf());
    } else {
        let mut entries: Vec<_> = fs_err::read_dir(path)?
            .filter_map(std::result::Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("metadata.yaml").is_file())
            .collect();
        entries.sort();
        dirs = entries;
    }
    if dirs.is_empty() {
        return Err(crate::Error::User(format!(
            "`{}` holds no addon: an addon directory needs a `metadata.yaml` (create one with `addonctl init`)",
            path.display()
        )));
    }
    let mut report = Report::default();
    let mut definitions: BTreeMap<(String, String), String> = BTreeMap::new();
    for dir in dirs {
        let label = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        report.addons.push(label.clone());
        lint_one(&dir, &label, renderer, &mut report, &mut definitions).await;
    }
    Ok(report)
}

async fn lint_one(
    dir: &Path,
    label: &str,
    renderer: &Renderer,
    report: &mut Report,
    definitions: &mut BTreeMap<(String, String), String>,
) {
    let mut push = |severity, addon: &str, message: String| {
        report.findings.push(Finding {
            severity,
            addon: addon.to_owned(),
            message,
        });
    };
    let files = match LocalReader::new(dir) {
        Ok(reader) => reader
            .read_tree_checked(|p| classify::classify(p) != classify::FileKind::Ignored)
            .await
            .map(|(files, skipped)| {
                for why in skipped {
                    push(
                        Severity::Error,
                        label,
                        format!("{why}: addonctl does not read it, so the addon would be incomplete; copy the file into the addon or remove the link"),
                    );
                }
                files
            }),
        Err(e) => Err(e),
    };
    let package = match files.map_err(crate::Error::from).and_then(|files| {
        loader::from_files(LOCAL_REGISTRY, label, files).map_err(crate::Error::from)
    }) {
        Ok(p) => p,
        Err(e) => return push(Severity::Error, label, e.to_string()),
    };
    let name = package.name().to_owned();
    for warning in &package.warnings {
        push(Severity::Warning, &name, warning.clone());
    }
    for error in renderer.compile_all(&package) {
        push(Severity::Error, &name, error.to_string());
    }
    let schema = match renderer.parameter_schema(&package) {
        Ok(s) => s,
        Err(e) => return push(Severity::Error, &name, e.to_string()),
    };
    let declared_in = if package.parameter.is_some() {
        Some(("parameter.rhai", "`.usage(\"…\")`"))
    } else {
        package
            .parameter_cue
            .as_ref()
            .map(|file| (file.path.as_str(), "`// +usage=…` comment"))
    };
    if let Some((file, how)) = declared_in {
        let mut missing = Vec::new();
        undocumented(schema.schema(), "", &mut missing);
        for path in missing {
            push(
                Severity::Warning,
                &name,
                format!("`{file}`: parameter `{path}` has no {how}; users see no description"),
            );
        }
    }
    // Rhai scripts read parameters by name; CUE templates do not care.
    let rhai_reads_parameters = package.parameter.is_some() || !package.uses_cue();
    for key in schema.known().iter().filter(|_| rhai_reads_parameters) {
        if RHAI_RESERVED.contains(&key.as_str()) {
            push(
                Severity::Warning,
                &name,
                format!("parameter `{key}` is a Rhai keyword: scripts must read it as `parameter[\"{key}\"]`"),
            );
        }
    }
    let options = RenderOptions {
        args: example_args(schema.schema()),
        ..RenderOptions::default()
    };
    match renderer.render(&package, &options) {
        Ok(rendered) => {
            for warning in rendered.warnings.iter().skip(package.warnings.len()) {
                push(Severity::Warning, &name, warning.clone());
            }
            for def in &rendered.definitions {
                let kind = def["kind"].as_str().unwrap_or_default().to_owned();
                let def_name = def["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(other) =
                    definitions.insert((kind.clone(), def_name.clone()), name.clone())
                {
                    if other != name {
                        push(
                            Severity::Error,
                            &name,
                            format!("{kind} `{def_name}` is also defined by addon `{other}`; enabling both would conflict"),
                        );
                    }
                }
            }
        }
        Err(e) => push(
            Severity::Error,
            &name,
            format!("rendering with default values failed: {e}"),
        ),
    }
    check_dependencies(&package, &mut push);
}

fn check_dependencies(package: &AddonPackage, push: &mut impl FnMut(Severity, &str, String)) {
    for dep in &package.metadata.dependencies {
        if let Some(constraint) = &dep.version {
            if let Err(e) = crate::model::Constraint::parse(constraint) {
                push(
                    Severity::Error,
                    package.name(),
                    format!("`metadata.yaml`: dependency `{}`: {e}", dep.name),
                );
            }
        }
        if dep.name == package.name() {
            push(
                Severity::Error,
                package.name(),
                "`metadata.yaml`: the addon depends on itself".to_owned(),
            );
        }
    }
    for (key, constraint) in [
        ("vela", &package.metadata.system.vela),
        ("kubernetes", &package.metadata.system.kubernetes),
        ("addonctl", &package.metadata.system.addonctl),
    ] {
        if let Some(c) = constraint {
            if let Err(e) = crate::model::Constraint::parse(c) {
                push(
                    Severity::Error,
                    package.name(),
                    format!("`metadata.yaml`: `system.{key}`: {e}"),
                );
            }
        }
    }
}

/// Collects the dotted paths of declared properties without a `description`.
fn undocumented(schema: &Value, prefix: &str, out: &mut Vec<String>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if prefix.is_empty() && key == "clusters" {
            // Always accepted, declared or not; the built-in meaning needs no usage text.
            continue;
        }
        if property
            .get("description")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            out.push(path.clone());
        }
        undocumented(property, &path, out);
    }
}

/// Example arguments for required parameters without defaults, so that lint can render.
pub fn example_args(schema: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for key in required {
        if let Some(property) = schema.pointer(&format!(
            "/properties/{}",
            key.replace('~', "~0").replace('/', "~1")
        )) {
            if property.get("default").is_none() {
                out.insert(key.to_owned(), example_value(property, 0));
            }
        }
    }
    out
}

fn example_value(schema: &Value, depth: usize) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => {
            let minimum = schema.get("minimum").and_then(Value::as_i64).unwrap_or(1);
            Value::from(minimum.max(0))
        }
        Some("number") => Value::from(number("minimum").unwrap_or(1.0)),
        Some("boolean") => Value::Bool(false),
        Some("array") => Value::Array(Vec::new()),
        Some("object") if depth < 16 => Value::Object(example_args_nested(schema, depth + 1)),
        Some("string") => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
            let len = usize::try_from(min.max(7)).unwrap_or(7);
            Value::String("example".chars().cycle().take(len).collect())
        }
        _ => Value::String("example".to_owned()),
    }
}

fn example_args_nested(schema: &Value, depth: usize) -> Map<String, Value> {
    let mut out = Map::new();
    if let (Some(required), Some(properties)) = (
        schema.get("required").and_then(Value::as_array),
        schema.get("properties").and_then(Value::as_object),
    ) {
        for key in required.iter().filter_map(Value::as_str) {
            if let Some(p) = properties.get(key) {
                out.insert(key.to_owned(), example_value(p, depth));
            }
        }
    }
    out
}
