//! Path → role of a file in an addon (DESIGN §2.1). Pure; anything unrecognised is
//! [`FileKind::Ignored`], never an error.

/// The role of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `metadata.yaml`.
    Metadata,
    /// `README.md` / `readme.md`.
    Readme,
    /// `parameter.rhai`.
    Parameter,
    /// `parameter.schema.json`.
    ParameterSchema,
    /// `template.rhai`.
    TemplateRhai,
    /// `template.yaml` / `template.yml`.
    TemplateYaml,
    /// `resources/**.yaml|yml`.
    ResourceYaml,
    /// `resources/**.rhai`.
    ResourceScript,
    /// `definitions/**.yaml|yml|rhai|cue`.
    Definition,
    /// `schemas/**.yaml|yml`.
    Schema,
    /// `views/**.yaml|yml`.
    View,
    /// `config-templates/**.cue`.
    ConfigTemplate,
    /// `NOTES.rhai`.
    Notes,
    /// `lib/**.rhai`.
    Lib,
    /// `template.cue`.
    TemplateCue,
    /// `parameter.cue`.
    ParameterCue,
    /// `resources/parameter.cue` (KubeVela's legacy place for `parameter.cue`).
    LegacyParameterCue,
    /// `resources/**.cue` but `resources/parameter.cue`.
    ResourceCue,
    /// `NOTES.cue`.
    NotesCue,
    /// Anything else.
    Ignored,
}

/// Classifies a path relative to the addon root.
pub fn classify(path: &str) -> FileKind {
    let (dir, rest) = path.split_once('/').unwrap_or(("", path));
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    let yaml = matches!(ext, "yaml" | "yml");
    match (dir, rest) {
        ("", "metadata.yaml") => FileKind::Metadata,
        ("", "README.md" | "readme.md") => FileKind::Readme,
        ("", "parameter.rhai") => FileKind::Parameter,
        ("", "parameter.schema.json") => FileKind::ParameterSchema,
        ("", "template.rhai") => FileKind::TemplateRhai,
        ("", "template.yaml" | "template.yml") => FileKind::TemplateYaml,
        ("", "NOTES.rhai") => FileKind::Notes,
        ("", "template.cue") => FileKind::TemplateCue,
        ("", "parameter.cue") => FileKind::ParameterCue,
        ("", "NOTES.cue") => FileKind::NotesCue,
        ("resources", "parameter.cue") => FileKind::LegacyParameterCue,
        ("resources", _) if yaml => FileKind::ResourceYaml,
        ("resources", _) if ext == "rhai" => FileKind::ResourceScript,
        ("resources", _) if ext == "cue" => FileKind::ResourceCue,
        ("definitions", _) if yaml || matches!(ext, "rhai" | "cue") => FileKind::Definition,
        ("schemas", _) if yaml => FileKind::Schema,
        ("views", _) if yaml => FileKind::View,
        ("config-templates", _) if ext == "cue" => FileKind::ConfigTemplate,
        ("lib", _) if ext == "rhai" => FileKind::Lib,
        _ => FileKind::Ignored,
    }
}

/// The module name of a `lib/` file: `lib/k8s/labels.rhai` → `k8s/labels`.
pub fn module_name(path: &str) -> Option<&str> {
    path.strip_prefix("lib/")?.strip_suffix(".rhai")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified_as_the_design_says() {
        let cases = [
            ("metadata.yaml", FileKind::Metadata),
            ("README.md", FileKind::Readme),
            ("readme.md", FileKind::Readme),
            ("readme_cn.md", FileKind::Ignored),
            ("parameter.rhai", FileKind::Parameter),
            ("parameter.schema.json", FileKind::ParameterSchema),
            ("parameter.cue", FileKind::ParameterCue),
            ("resources/parameter.cue", FileKind::LegacyParameterCue),
            ("template.rhai", FileKind::TemplateRhai),
            ("template.yaml", FileKind::TemplateYaml),
            ("template.cue", FileKind::TemplateCue),
            ("resources/a.yaml", FileKind::ResourceYaml),
            ("resources/deep/b.yml", FileKind::ResourceYaml),
            ("resources/c.rhai", FileKind::ResourceScript),
            ("resources/d.cue", FileKind::ResourceCue),
            ("resources/notes.txt", FileKind::Ignored),
            ("definitions/t.yaml", FileKind::Definition),
            ("definitions/t.cue", FileKind::Definition),
            ("definitions/x/t.rhai", FileKind::Definition),
            ("schemas/ui.yaml", FileKind::Schema),
            ("views/v.yaml", FileKind::View),
            ("config-templates/c.cue", FileKind::ConfigTemplate),
            ("NOTES.rhai", FileKind::Notes),
            ("NOTES.cue", FileKind::NotesCue),
            ("lib/labels.rhai", FileKind::Lib),
            ("lib/k8s/labels.rhai", FileKind::Lib),
            ("images/logo.png", FileKind::Ignored),
            ("scripts/install.sh", FileKind::Ignored),
            ("sub/metadata.yaml", FileKind::Ignored),
        ];
        for (path, kind) in cases {
            assert_eq!(classify(path), kind, "{path}");
        }
        assert_eq!(module_name("lib/k8s/labels.rhai"), Some("k8s/labels"));
    }
}
