//! Checks of what an addon renders: objects of `resources/*.yaml` without `apiVersion` or
//! `kind` (placed at their document), and every rendered object against the API server's rules
//! (placed where the offending text is written in the addon's files; an object without
//! `apiVersion` or `kind` where its `kind` is written).
//!
//! So that one problem does not hide the others, the render lint does is of the addon with its
//! `resources/*.yaml` objects completed (those without `apiVersion` get the one of their kind,
//! those without `kind` are left out: both are reported by [`check_yaml_resources`]), and without
//! its parameter declarations when they cannot be read.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use super::{example_args, location_of, objects, render_message, Location, Severity, Sink};
use crate::model::{AddonPackage, SourceFile, Template};
use crate::params::ParameterSchema;
use crate::render::{RenderOptions, Renderer};

/// Objects of `resources/*.yaml` without `apiVersion` or `kind`, at the line of their document.
pub(super) fn check_yaml_resources(package: &AddonPackage, sink: &mut Sink<'_>) {
    for file in &package.resource_yamls {
        for (line, chunk) in yaml_documents(&file.text) {
            let Ok(docs) = crate::yaml::parse_documents(&chunk) else {
                continue;
            };
            for doc in docs.documents.iter().filter(|d| d.is_object()) {
                for problem in objects::check(doc)
                    .into_iter()
                    .filter(|p| p.code.starts_with("missing-"))
                {
                    sink.at(
                        Severity::Error,
                        problem.code,
                        Location::at(&file.path, line, 1),
                        problem.message,
                    );
                }
            }
        }
    }
}

/// The documents of a YAML stream with the line of their first content line.
fn yaml_documents(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut current = String::new();
    let mut start = None;
    for (index, line) in text.lines().enumerate() {
        if line.starts_with("---") {
            if let Some(first) = start.take() {
                out.push((first, std::mem::take(&mut current)));
            }
            current.clear();
            continue;
        }
        let trimmed = line.trim();
        if start.is_none() && !trimmed.is_empty() && !trimmed.starts_with('#') {
            start = Some(index + 1);
        }
        current.push_str(line);
        current.push('\n');
    }
    if let Some(first) = start {
        out.push((first, current));
    }
    out
}

/// Renders with default values (without the parameters when `schema` is `None`: their
/// declarations cannot be read) and checks what the API server would reject.
pub(super) fn render_and_check(
    package: &AddonPackage,
    schema: Option<&ParameterSchema>,
    renderer: &Renderer,
    definitions: &mut BTreeMap<(String, String), String>,
    sink: &mut Sink<'_>,
) {
    let name = package.name().to_owned();
    let prepared = prepared(package, schema.is_some());
    let options = RenderOptions {
        args: schema.map(|s| example_args(s.schema())).unwrap_or_default(),
        ..RenderOptions::default()
    };
    let rendered = match renderer.render(&prepared, &options) {
        Ok(rendered) => rendered,
        Err(e) => return render_failed(package, &e, schema.is_some(), sink),
    };
    for warning in rendered.warnings.iter().skip(prepared.warnings.len()) {
        sink.push(Severity::Warning, "render-warning", warning.clone());
    }
    let sources = sources(package);
    for def in &rendered.definitions {
        let kind = def["kind"].as_str().unwrap_or_default().to_owned();
        let def_name = def["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(other) = definitions.insert((kind.clone(), def_name.clone()), name.clone()) {
            if other != name {
                let files: Vec<&SourceFile> = package.definitions.iter().collect();
                let location = locate_object(&files, Some(&kind), Some(&def_name))
                    .or_else(|| locate(&files, &def_name))
                    .unwrap_or_default();
                sink.at(
                    Severity::Error,
                    "definition-conflict",
                    location,
                    format!("{kind} `{def_name}` is also defined by addon `{other}`; enabling both would conflict"),
                );
            }
        }
    }
    // A secret parameter's value never appears in a finding (a label value, a name).
    let secrets = rendered.secret_values();
    let mask = |text: String| crate::model::secret::mask_message(&text, &secrets);
    let mut seen = std::collections::BTreeSet::new();
    for object in all_objects(&rendered.objects()) {
        for problem in objects::check(object) {
            if !seen.insert(problem.message.clone()) {
                continue;
            }
            let at_object = matches!(problem.code, "missing-api-version" | "missing-kind")
                .then(|| {
                    locate_object(
                        &sources,
                        object.get("kind").and_then(Value::as_str),
                        object.pointer("/metadata/name").and_then(Value::as_str),
                    )
                })
                .flatten();
            let location = at_object
                .or_else(|| {
                    problem
                        .needle
                        .as_deref()
                        .and_then(|needle| locate(&sources, needle))
                })
                .unwrap_or_default();
            sink.at(
                Severity::Error,
                problem.code,
                location,
                mask(format!("rendered {}", problem.message)),
            );
        }
    }
}

/// The package lint renders: its `resources/*.yaml` objects completed (see the module's
/// documentation), and without its parameter declarations unless `with_parameters`.
fn prepared(package: &AddonPackage, with_parameters: bool) -> Cow<'_, AddonPackage> {
    let mut copy: Option<AddonPackage> = None;
    if !with_parameters {
        let mut without = package.clone();
        without.parameter = None;
        without.parameter_schema = None;
        without.parameter_cue = None;
        copy = Some(without);
    }
    let present = |object: &Value, key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    for (index, file) in package.resource_yamls.iter().enumerate() {
        let Ok(docs) = crate::yaml::parse_documents(&file.text) else {
            continue;
        };
        let incomplete =
            |d: &Value| d.is_object() && !(present(d, "apiVersion") && present(d, "kind"));
        if !docs.documents.iter().any(incomplete) {
            continue;
        }
        let mut completed = Vec::new();
        for mut doc in docs.documents {
            if doc.is_object() && !present(&doc, "kind") {
                continue;
            }
            let kind = doc.get("kind").and_then(Value::as_str).map(str::to_owned);
            let versioned = present(&doc, "apiVersion");
            if let (Some(object), Some(kind), false) = (doc.as_object_mut(), kind, versioned) {
                let version = objects::api_version_of(&kind).unwrap_or("v1");
                object.insert("apiVersion".into(), Value::from(version));
            }
            completed.push(doc.to_string());
        }
        let copy = copy.get_or_insert_with(|| package.clone());
        if let Some(slot) = copy.resource_yamls.get_mut(index) {
            *slot = SourceFile::new(file.path.clone(), completed.join("\n---\n"));
        }
    }
    copy.map_or(Cow::Borrowed(package), Cow::Owned)
}

/// A failed render: an object the template returns without `apiVersion` (an auxiliary output)
/// is placed at its `kind`; any other failure is `render-failed`, unless the render was
/// without the parameters (`with_parameters` false): that it fails then tells nothing of the
/// templates, and the parameters' error is reported.
fn render_failed(
    package: &AddonPackage,
    error: &crate::render::Error,
    with_parameters: bool,
    sink: &mut Sink<'_>,
) {
    if let crate::render::Error::File { file, message, .. } = error {
        if let Some(rest) = message
            .split_once("lacks `apiVersion`")
            .map(|(before, _)| before)
        {
            let kind = rest
                .split_once("(kind `")
                .and_then(|(_, k)| k.split_once('`'))
                .map(|(k, _)| k);
            let files: Vec<&SourceFile> = sources(package)
                .into_iter()
                .filter(|f| f.path == *file)
                .collect();
            let key = message
                .strip_prefix("`outputs.")
                .and_then(|k| k.split_once('`'))
                .map(|(k, _)| k);
            let location = locate_output(&files, key, kind).unwrap_or_else(|| Location::file(file));
            let what = kind.map_or_else(|| "an object".to_owned(), |k| format!("a {k}"));
            let what = match key {
                Some(key) => format!("{what} (`outputs.{key}`)"),
                None => what,
            };
            sink.at(
                Severity::Error,
                "missing-api-version",
                location,
                format!(
                    "{}; the render stops at it, so what it would render next was not checked",
                    objects::missing_api_version(&what, kind)
                ),
            );
            return;
        }
    }
    let location = location_of(error);
    if !with_parameters || sink.reported("script-error", &location) {
        // The script does not compile: reported already.
        return;
    }
    sink.at(
        Severity::Error,
        "render-failed",
        location,
        format!(
            "rendering with default values failed: {}",
            render_message(error, false)
        ),
    );
}

/// The rendered objects and the objects inside the Application's components.
fn all_objects(rendered: &[Value]) -> Vec<&Value> {
    let mut out = Vec::new();
    for object in rendered {
        out.push(object);
        let components = object
            .pointer("/spec/components")
            .and_then(Value::as_array)
            .filter(|_| object.get("kind").and_then(Value::as_str) == Some("Application"));
        for component in components.into_iter().flatten() {
            if let Some(inner) = component
                .pointer("/properties/objects")
                .and_then(Value::as_array)
            {
                out.extend(inner.iter().filter(|o| o.is_object()));
            }
        }
    }
    out
}

/// The files a rendered object's text can come from, in the order they are searched.
pub(super) fn sources(package: &AddonPackage) -> Vec<&SourceFile> {
    let mut out: Vec<&SourceFile> = package.resource_yamls.iter().collect();
    match &package.template {
        Some(Template::Rhai(f) | Template::Yaml(f) | Template::Cue(f)) => out.push(f),
        None => {}
    }
    out.extend(package.resource_scripts.iter());
    out.extend(package.resource_cues.iter());
    out.extend(package.definitions.iter());
    out.extend(package.views.iter());
    out.extend(package.lib.values());
    out.extend(package.parameter.iter());
    out.extend(package.parameter_cue.iter());
    out
}

/// Where `needle` is written: quoted first, then as a YAML key, then anywhere.
fn locate(files: &[&SourceFile], needle: &str) -> Option<Location> {
    if needle.is_empty() {
        return None;
    }
    let forms = [
        (format!("\"{needle}\""), 1),
        (format!("'{needle}'"), 1),
        (format!("`{needle}`"), 1),
        (format!("{needle}:"), 0),
        (needle.to_owned(), 0),
    ];
    forms.iter().find_map(|(form, offset)| {
        files.iter().find_map(|file| {
            let at = file.text.find(form.as_str())? + offset;
            let before = &file.text[..at];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            Some(Location::at(&file.path, line, column))
        })
    })
}

/// The byte offsets of the `key` of each `key: value` (quoted or not, the key quoted or not)
/// in `text`, the first of each line; any value when `value` is `None`.
fn key_values(text: &str, key: &str, value: Option<&str>) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let found = line.match_indices(key).find(|(at, _)| {
            let before = line[..*at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                return false;
            }
            let rest = line[at + key.len()..].trim_start_matches(['"', '\'']);
            let Some(rest) = rest.trim_start().strip_prefix(':') else {
                return false;
            };
            let Some(value) = value else {
                return true;
            };
            let rest = rest.trim_start();
            let quoted = [format!("\"{value}\""), format!("'{value}'")];
            quoted.iter().any(|q| rest.starts_with(q.as_str()))
                || rest.strip_prefix(value).is_some_and(|after| {
                    after
                        .chars()
                        .next()
                        .is_none_or(|c| c.is_whitespace() || matches!(c, ',' | '}' | '#'))
                })
        });
        if let Some((at, _)) = found {
            out.push(start + at);
        }
        start += line.len();
    }
    out
}

/// The location of byte `offset` of `file`.
fn location_at(file: &SourceFile, offset: usize) -> Option<Location> {
    let before = file.text.get(..offset)?;
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    Some(Location::at(&file.path, line, column))
}

/// Where the object of `kind` named `name` is written: at its `kind:`, the first that has
/// `name:` with no other `kind:` between them; else the only object of that kind; else `None`.
fn locate_object(
    files: &[&SourceFile],
    kind: Option<&str>,
    name: Option<&str>,
) -> Option<Location> {
    let mut only: Vec<(&SourceFile, usize)> = Vec::new();
    for file in files {
        let text = &file.text;
        let kinds = kind.map_or_else(Vec::new, |k| key_values(text, "kind", Some(k)));
        let names = name.map_or_else(Vec::new, |n| key_values(text, "name", Some(n)));
        let any_kind = key_values(text, "kind", None);
        let together = kinds.iter().find(|k| {
            names.iter().any(|n| {
                let (low, high) = if *n < **k { (*n, **k) } else { (**k, *n) };
                !any_kind.iter().any(|a| *a > low && *a < high && *a != **k)
            })
        });
        if let Some(at) = together {
            return location_at(file, *at);
        }
        match (kind, name) {
            (Some(_), _) => only.extend(kinds.iter().map(|k| (*file, *k))),
            (None, Some(_)) => only.extend(names.iter().map(|n| (*file, *n))),
            (None, None) => {}
        }
    }
    match only.as_slice() {
        [(file, at)] => location_at(file, *at),
        _ => None,
    }
}

/// Where the auxiliary output `key` (of `kind`) is written: its `kind:` after `outputs` and
/// `key:`, else the only object of that kind.
fn locate_output(files: &[&SourceFile], key: Option<&str>, kind: Option<&str>) -> Option<Location> {
    for file in files {
        let text = &file.text;
        let Some(outputs) = text.find("outputs") else {
            continue;
        };
        let after_key = key.and_then(|key| {
            key_values(text, key, None)
                .into_iter()
                .find(|at| *at > outputs)
        });
        let from = after_key.unwrap_or(outputs);
        let kinds = kind.map_or_else(
            || key_values(text, "kind", None),
            |k| key_values(text, "kind", Some(k)),
        );
        if let Some(at) = kinds.into_iter().find(|at| *at > from) {
            return location_at(file, at);
        }
    }
    locate_object(files, kind, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_documents_start_at_their_first_content_line() {
        let text = "# head\na: 1\n---\n\n# comment\nb: 2\n--- \n---\nc: 3\n";
        let docs: Vec<usize> = yaml_documents(text).into_iter().map(|(l, _)| l).collect();
        assert_eq!(docs, vec![2, 6, 9]);
    }

    #[test]
    fn an_object_is_located_at_the_kind_written_with_its_name() {
        let rhai = SourceFile::new(
            "t.rhai",
            "let a = #{\n    kind: \"Deployment\",\n    metadata: #{ name: \"a\" },\n};\nlet b = #{\n    kind: \"Deployment\",\n    metadata: #{ name: \"web\" },\n};\n",
        );
        let yaml = SourceFile::new(
            "r.yaml",
            "metadata:\n  name: web\nkind: Service\n---\nkind: Service\nmetadata:\n  name: other\n",
        );
        let files = [&yaml, &rhai];
        assert_eq!(
            locate_object(&files, Some("Deployment"), Some("web")),
            Some(Location::at("t.rhai", 6, 5))
        );
        assert_eq!(
            locate_object(&files, Some("Service"), Some("web")),
            Some(Location::at("r.yaml", 3, 1))
        );
        assert_eq!(
            locate_object(&files, Some("Service"), Some("other")),
            Some(Location::at("r.yaml", 5, 1))
        );
        // A name written nowhere: the object of the kind when there is only one.
        let one = SourceFile::new(
            "o.cue",
            "x: {\n\tkind: \"ConfigMap\"\n\tmetadata: name: parameter.n\n}\n",
        );
        assert_eq!(
            locate_object(&[&one], Some("ConfigMap"), Some("computed")),
            Some(Location::at("o.cue", 2, 2))
        );
        assert_eq!(
            locate_object(&files, Some("Deployment"), Some("computed")),
            None
        );
        let outputs = SourceFile::new(
            "template.rhai",
            "let cm = #{ kind: \"ConfigMap\" };\n#{ output: app, outputs: #{\n  a: #{ kind: \"ConfigMap\" },\n  b: #{ kind: \"ConfigMap\" } } }\n",
        );
        assert_eq!(
            locate_output(&[&outputs], Some("b"), Some("ConfigMap")),
            Some(Location::at("template.rhai", 4, 9))
        );
    }

    #[test]
    fn text_is_located_quoted_first_then_as_a_key_then_anywhere() {
        let a = SourceFile::new("a.rhai", "let x = 1;\nlet n = \"web\";\n");
        let b = SourceFile::new("b.yaml", "metadata:\n  labels:\n    web: x\n");
        let files = [&b, &a];
        assert_eq!(locate(&files, "web"), Some(Location::at("a.rhai", 2, 10)));
        assert_eq!(locate(&files, "labels"), Some(Location::at("b.yaml", 2, 3)));
        assert_eq!(locate(&files, "absent"), None);
        assert_eq!(locate(&files, ""), None);
    }
}
