//! `lint`: checks an addon (or a directory of addons) the way `enable` would use it, and the
//! way the API server would judge what it renders.
//!
//! Errors: metadata invalid, a file not UTF-8 or too large, a script that does not compile, a
//! render with default values (required parameters get example values; CUE addons are evaluated
//! too) that fails, a definition name used twice (in one addon or across the addons checked), a
//! script or CUE template reading an undeclared parameter, a misspelt `metadata.yaml` key, a
//! rendered object the API server would reject (no `apiVersion`/`kind`, an invalid name, label
//! or annotation: see [`objects`]).
//! Warnings: what loading reports (duplicated keys, …), parameters without `.usage(…)` (or, in
//! `parameter.cue`, a `// +usage=` comment), parameter names that are Rhai keywords, unknown
//! `metadata.yaml` keys that look like no known key.
//!
//! Every finding has a stable `code` and, where it can be placed, a file, line and column (of
//! the text as written: a rendered object's label is placed where its text appears in the
//! addon's files). Its message starts with the addon and the place (`web: template.rhai:3:5:
//! …`), so that the text output names them as `-o json` does.
//!
//! One run reports every finding of every file: a `metadata.yaml` or parameter declaration that
//! cannot be read does not stop the checks of the templates and resources (see [`load`]; the
//! objects are then rendered without the parameters).

mod load;
pub mod objects;
pub mod params;
mod rendered;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::{metadata, AddonPackage, SourceFile, Template};
use crate::render::Renderer;

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
    /// A stable identifier of the rule (`undeclared-parameter`, `invalid-label-key`, …).
    pub code: &'static str,
    /// The addon (its directory name when the metadata cannot be read).
    pub addon: String,
    /// The file, relative to the addon's directory, when the finding can be placed.
    pub file: Option<String>,
    /// The line in `file` (1-based).
    pub line: Option<usize>,
    /// The column in `line` (1-based, in characters).
    pub column: Option<usize>,
    /// What is wrong, starting with the addon and the place: `web: template.rhai:3:5: …`
    /// (`web: metadata.yaml: …` without a line, `web: …` without a file).
    pub message: String,
}

/// Where a finding is: a file, and a line and column when known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// The file, relative to the addon's directory.
    pub file: Option<String>,
    /// 1-based line.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
}

impl Location {
    pub(crate) fn file(file: &str) -> Self {
        Self {
            file: Some(file.to_owned()),
            ..Self::default()
        }
    }

    pub(crate) fn at(file: &str, line: usize, column: usize) -> Self {
        Self {
            file: Some(file.to_owned()),
            line: Some(line),
            column: Some(column),
        }
    }
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
        return Err(crate::loader::LocateError::NoAddonIn {
            reference: path.display().to_string(),
            problems: Vec::new(),
        }
        .into());
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

/// Collects the findings of one addon.
pub(crate) struct Sink<'r> {
    report: &'r mut Report,
    addon: String,
}

impl Sink<'_> {
    pub(crate) fn push(&mut self, severity: Severity, code: &'static str, message: String) {
        self.at(severity, code, Location::default(), message);
    }

    pub(crate) fn at(
        &mut self,
        severity: Severity,
        code: &'static str,
        location: Location,
        message: String,
    ) {
        let addon = &self.addon;
        let message = match (&location.file, location.line, location.column) {
            (Some(file), Some(line), Some(column)) => {
                format!("{addon}: {file}:{line}:{column}: {message}")
            }
            (Some(file), Some(line), None) => format!("{addon}: {file}:{line}: {message}"),
            (Some(file), None, _) => format!("{addon}: {file}: {message}"),
            (None, ..) => format!("{addon}: {message}"),
        };
        self.report.findings.push(Finding {
            severity,
            code,
            addon: self.addon.clone(),
            file: location.file,
            line: location.line,
            column: location.column,
            message,
        });
    }

    /// Whether this addon already has a finding with `code` at `location`.
    pub(crate) fn reported(&self, code: &str, location: &Location) -> bool {
        self.report.findings.iter().any(|f| {
            f.addon == self.addon
                && f.code == code
                && f.file == location.file
                && f.line == location.line
                && f.column == location.column
        })
    }
}

async fn lint_one(
    dir: &Path,
    label: &str,
    renderer: &Renderer,
    report: &mut Report,
    definitions: &mut BTreeMap<(String, String), String>,
) {
    let mut sink = Sink {
        report,
        addon: label.to_owned(),
    };
    let Some(loaded) = load::load(dir, label, &mut sink).await else {
        return;
    };
    let package = &loaded.package;
    for warning in &package.warnings {
        let (location, message) = placed_warning(package, warning);
        sink.at(Severity::Warning, "load-warning", location, message);
    }
    for error in renderer.compile_all(package) {
        sink.at(
            Severity::Error,
            "script-error",
            location_of(&error),
            render_message(&error, true),
        );
    }
    check_metadata_keys(&loaded, &mut sink);
    check_dependencies(package, &loaded.metadata_text, &mut sink);
    rendered::check_yaml_resources(package, &mut sink);
    match renderer.parameter_schema(package) {
        Ok(schema) => {
            check_parameter_docs(package, &schema, &mut sink);
            check_references(package, schema.schema(), &mut sink);
            rendered::render_and_check(package, Some(&schema), renderer, definitions, &mut sink);
        }
        Err(e) => {
            let mut location = location_of(&e);
            if location.file.is_none() {
                location.file = package
                    .parameter
                    .as_ref()
                    .or(package.parameter_schema.as_ref())
                    .or(package.parameter_cue.as_ref())
                    .map(|f| f.path.clone());
            }
            sink.at(
                Severity::Error,
                "parameter-schema",
                location,
                render_message(&e, false),
            );
            // The templates are still rendered, without the parameters.
            rendered::render_and_check(package, None, renderer, definitions, &mut sink);
        }
    }
}

/// A loading warning placed at the file it starts with (`` `metadata.yaml`: … ``).
fn placed_warning(package: &AddonPackage, warning: &str) -> (Location, String) {
    let file = warning
        .strip_prefix('`')
        .and_then(|rest| rest.split_once("`: "))
        .filter(|(path, _)| is_file_of(package, path));
    match file {
        Some((path, rest)) => (Location::file(path), rest.to_owned()),
        None => (Location::default(), warning.to_owned()),
    }
}

/// Whether `path` is one of the package's files.
fn is_file_of(package: &AddonPackage, path: &str) -> bool {
    path == package.metadata_file.path || rendered::sources(package).iter().any(|f| f.path == path)
}

/// The message of a render error, for a finding placed at [`location_of`] it: without the
/// addon (the finding names it), and without the place the finding names too, unless
/// `keep_place` (a script that does not compile is shown as it always was: `` `template.rhai`
/// line 1, column 9: syntax error … ``).
pub(crate) fn render_message(error: &crate::render::Error, keep_place: bool) -> String {
    let text = load::without_addon(&error.to_string());
    match error {
        crate::render::Error::Script {
            file, line, column, ..
        } => {
            // A CUE error ends with the positions of its values.
            let text = text
                .strip_suffix(&format!(" ({file}:{line}:{column})"))
                .unwrap_or(&text);
            let place = format!("`{file}` line {line}, column {column}: ");
            match text.strip_prefix(&place) {
                Some(rest) if !keep_place && *line > 0 => rest.to_owned(),
                _ => text.to_owned(),
            }
        }
        crate::render::Error::File { file, .. } if !keep_place => text
            .strip_prefix(&format!("`{file}`: "))
            .map_or_else(|| text.clone(), str::to_owned),
        _ => text,
    }
}

/// The file, line and column a render error names.
pub(crate) fn location_of(error: &crate::render::Error) -> Location {
    match error {
        // Line 0: the line is not known.
        crate::render::Error::Script { file, line: 0, .. }
        | crate::render::Error::File { file, .. } => Location::file(file),
        crate::render::Error::Script {
            file, line, column, ..
        } => Location::at(file, *line, *column),
        _ => Location::default(),
    }
}

fn check_parameter_docs(
    package: &AddonPackage,
    schema: &crate::params::ParameterSchema,
    sink: &mut Sink<'_>,
) {
    let declared_in = if package.parameter.is_some() {
        Some(("parameter.rhai", "`.usage(\"…\")`"))
    } else {
        package
            .parameter_cue
            .as_ref()
            .map(|file| (file.path.as_str(), "`// +usage=…` comment"))
    };
    let text = package
        .parameter
        .as_ref()
        .or(package.parameter_cue.as_ref())
        .map(|f| f.text.clone());
    if let Some((file, how)) = declared_in {
        let mut missing = Vec::new();
        undocumented(schema.schema(), "", &mut missing);
        for path in missing {
            let last = path.rsplit('.').next().unwrap_or(&path);
            let location = text
                .as_deref()
                .and_then(|t| key_position(t, last))
                .map_or_else(|| Location::file(file), |(l, c)| Location::at(file, l, c));
            sink.at(
                Severity::Warning,
                "parameter-without-usage",
                location,
                format!("parameter `{path}` has no {how}; users see no description"),
            );
        }
    }
    // Rhai scripts read parameters by name; CUE templates do not care.
    let rhai_reads_parameters = package.parameter.is_some() || !package.uses_cue();
    for key in schema.known().iter().filter(|_| rhai_reads_parameters) {
        if RHAI_RESERVED.contains(&key.as_str()) {
            let location = declared_in
                .map(|(file, _)| {
                    text.as_deref()
                        .and_then(|t| {
                            key_position(t, key).or_else(|| key_position(t, &format!("\"{key}\"")))
                        })
                        .map_or_else(|| Location::file(file), |(l, c)| Location::at(file, l, c))
                })
                .unwrap_or_default();
            sink.at(
                Severity::Warning,
                "parameter-is-keyword",
                location,
                format!("parameter `{key}` is a Rhai keyword: scripts must read it as `parameter[\"{key}\"]`"),
            );
        }
    }
}

/// `parameter.x` in scripts and CUE templates where `x` is not declared.
fn check_references(package: &AddonPackage, schema: &Value, sink: &mut Sink<'_>) {
    let mut files: Vec<(&SourceFile, params::Language)> = Vec::new();
    match &package.template {
        Some(Template::Rhai(f)) => files.push((f, params::Language::Rhai)),
        Some(Template::Cue(f)) => files.push((f, params::Language::Cue)),
        _ => {}
    }
    files.extend(
        package
            .resource_scripts
            .iter()
            .map(|f| (f, params::Language::Rhai)),
    );
    files.extend(
        package
            .resource_cues
            .iter()
            .map(|f| (f, params::Language::Cue)),
    );
    files.extend(
        package
            .definitions
            .iter()
            .filter(|f| f.path.ends_with(".rhai"))
            .map(|f| (f, params::Language::Rhai)),
    );
    if let Some(notes) = &package.notes {
        let language = if notes.path.ends_with(".cue") {
            params::Language::Cue
        } else {
            params::Language::Rhai
        };
        files.push((notes, language));
    }
    let declared_in = if package.parameter.is_some() {
        "`parameter.rhai`"
    } else if package.parameter_schema.is_some() {
        "`parameter.schema.json`"
    } else if package.parameter_cue.is_some() {
        "`parameter.cue`"
    } else {
        "a parameter file (the addon has none)"
    };
    for (file, language) in files {
        for found in params::undeclared(&file.text, language, schema) {
            let last = found.path.rsplit('.').next().unwrap_or(&found.path);
            let declared: Vec<&str> = found.declared.iter().map(String::as_str).collect();
            let hint = metadata::closest(last, &declared).map_or_else(
                || format!("declare it in {declared_in} or fix the name"),
                |s| format!("did you mean `{s}`?"),
            );
            sink.at(
                Severity::Error,
                "undeclared-parameter",
                Location::at(&file.path, found.line, found.column),
                format!("`parameter.{}` is not declared in {declared_in}, so it is always empty; {hint}", found.path),
            );
        }
    }
}

/// Keys of `metadata.yaml` (as written) nothing reads, but those already reported as a
/// misspelt required key.
fn check_metadata_keys(loaded: &load::Loaded, sink: &mut Sink<'_>) {
    for unknown in metadata::unknown_keys(&loaded.metadata_raw) {
        if unknown.path == unknown.key && loaded.reported_keys.contains(&unknown.key) {
            continue;
        }
        let location = key_position(&loaded.metadata_text, &unknown.key).map_or_else(
            || Location::file("metadata.yaml"),
            |(l, c)| Location::at("metadata.yaml", l, c),
        );
        let (severity, message) = match unknown.suggestion {
            Some(known) => (
                Severity::Error,
                format!(
                    "unknown key `{}`, did you mean `{known}`? Its value is ignored as written",
                    unknown.path
                ),
            ),
            None => (
                Severity::Warning,
                format!(
                    "unknown key `{}` is ignored (known keys: {})",
                    unknown.path,
                    metadata::KNOWN_KEYS.join(", ")
                ),
            ),
        };
        sink.at(severity, "unknown-metadata-key", location, message);
    }
}

/// The position of the first line whose content starts with `key:` (or `"key":`), at the key.
fn key_position(text: &str, key: &str) -> Option<(usize, usize)> {
    let forms = [
        format!("{key}:"),
        format!("\"{key}\":"),
        format!("'{key}':"),
    ];
    text.lines().enumerate().find_map(|(index, line)| {
        let trimmed = line.trim_start().trim_start_matches("- ");
        forms
            .iter()
            .any(|f| trimmed.starts_with(f.as_str()))
            .then(|| {
                (
                    index + 1,
                    line.chars().count() - trimmed.chars().count() + 1,
                )
            })
    })
}

fn check_dependencies(package: &AddonPackage, text: &str, sink: &mut Sink<'_>) {
    let at = |key: &str| {
        key_position(text, key).map_or_else(
            || Location::file("metadata.yaml"),
            |(l, c)| Location::at("metadata.yaml", l, c),
        )
    };
    for dep in &package.metadata.dependencies {
        if let Some(constraint) = &dep.version {
            if let Err(e) = crate::model::Constraint::parse(constraint) {
                sink.at(
                    Severity::Error,
                    "invalid-constraint",
                    at("dependencies"),
                    format!("dependency `{}`: {e}", dep.name),
                );
            }
        }
        if dep.name == package.name() {
            sink.at(
                Severity::Error,
                "self-dependency",
                at("dependencies"),
                "the addon depends on itself".to_owned(),
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
                sink.at(
                    Severity::Error,
                    "invalid-constraint",
                    at(key),
                    format!("`system.{key}`: {e}"),
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
        let path = crate::params::dotted(prefix, key);
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
