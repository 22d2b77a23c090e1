//! Checks of what an addon renders: objects of `resources/*.yaml` without `apiVersion` or
//! `kind` (placed at their document), and every rendered object against the API server's rules
//! (placed where the offending text is written in the addon's files).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{example_args, location_of, objects, Location, Severity, Sink};
use crate::model::{AddonPackage, SourceFile, Template};
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
                        format!("`{}`: {}", file.path, problem.message),
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

/// Renders with default values and checks what the API server would reject.
pub(super) fn render_and_check(
    package: &AddonPackage,
    schema: &crate::params::ParameterSchema,
    renderer: &Renderer,
    definitions: &mut BTreeMap<(String, String), String>,
    sink: &mut Sink<'_>,
) {
    let name = package.name().to_owned();
    let options = RenderOptions {
        args: example_args(schema.schema()),
        ..RenderOptions::default()
    };
    let rendered = match renderer.render(package, &options) {
        Ok(rendered) => rendered,
        Err(e) => {
            return sink.at(
                Severity::Error,
                "render-failed",
                location_of(&e),
                format!("rendering with default values failed: {e}"),
            )
        }
    };
    for warning in rendered.warnings.iter().skip(package.warnings.len()) {
        sink.push(Severity::Warning, "render-warning", warning.clone());
    }
    for def in &rendered.definitions {
        let kind = def["kind"].as_str().unwrap_or_default().to_owned();
        let def_name = def["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(other) = definitions.insert((kind.clone(), def_name.clone()), name.clone()) {
            if other != name {
                sink.push(
                    Severity::Error,
                    "definition-conflict",
                    format!("{kind} `{def_name}` is also defined by addon `{other}`; enabling both would conflict"),
                );
            }
        }
    }
    let sources = sources(package);
    // A secret parameter's value never appears in a finding (a label value, a name).
    let secrets = rendered.secret_values();
    let mask = |text: String| crate::model::secret::mask_message(&text, &secrets);
    let mut seen = std::collections::BTreeSet::new();
    for object in all_objects(&rendered.objects()) {
        for problem in objects::check(object) {
            if !seen.insert(problem.message.clone()) {
                continue;
            }
            let location = problem
                .needle
                .as_deref()
                .and_then(|needle| locate(&sources, needle))
                .unwrap_or_default();
            let place = match (&location.file, location.line, location.column) {
                (Some(file), Some(line), Some(column)) => {
                    format!(" (written in `{file}` line {line}, column {column})")
                }
                _ => String::new(),
            };
            sink.at(
                Severity::Error,
                problem.code,
                location,
                mask(format!("rendered {}{place}", problem.message)),
            );
        }
    }
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
fn sources(package: &AddonPackage) -> Vec<&SourceFile> {
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
