//! An addon's files, classified by what they mean (DESIGN §2.1).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::AddonMeta;

/// One text file of an addon, with its path relative to the addon's root (`/`-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Path relative to the addon root, e.g. `resources/crd.yaml`.
    pub path: String,
    /// The file's text (valid UTF-8).
    pub text: Arc<str>,
}

impl SourceFile {
    /// Builds a file from a path and text.
    pub fn new(path: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }
}

/// The wrapping Application's template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Template {
    /// `template.rhai`: evaluates to `#{ output, outputs }`.
    Rhai(SourceFile),
    /// `template.yaml`: a static Application (KubeVela's legacy form).
    Yaml(SourceFile),
    /// `template.cue`: KubeVela's CUE template (`output`, `outputs`), built with the
    /// `package main` files of `resources/`.
    Cue(SourceFile),
}

/// An addon read from a registry, its files sorted into their roles. Every list is in path order.
#[derive(Debug, Clone)]
pub struct AddonPackage {
    /// The registry it was read from (`local` for a directory, `builtin` for the embedded one).
    pub registry: String,
    /// Where it came from, pinned by digest, when its registry can say (OCI).
    pub provenance: Option<crate::model::provenance::Provenance>,
    /// `metadata.yaml`.
    pub metadata: AddonMeta,
    /// `metadata.yaml` as written (kept so that the package can be stored and read back).
    pub metadata_file: SourceFile,
    /// `README.md` / `readme.md`.
    pub readme: Option<String>,
    /// `parameter.rhai`.
    pub parameter: Option<SourceFile>,
    /// `parameter.schema.json` (used when there is no `parameter.rhai`).
    pub parameter_schema: Option<SourceFile>,
    /// `parameter.cue` (or the legacy `resources/parameter.cue`): KubeVela's CUE parameters.
    pub parameter_cue: Option<SourceFile>,
    /// `template.rhai`, `template.yaml` or `template.cue`.
    pub template: Option<Template>,
    /// `resources/**.yaml|yml` (become one `<addon>-resources` component).
    pub resource_yamls: Vec<SourceFile>,
    /// `resources/**.rhai` (each a component or a list of components).
    pub resource_scripts: Vec<SourceFile>,
    /// `resources/**.cue` but `resources/parameter.cue`: `package main` fragments of the CUE
    /// template, or legacy components (no package clause).
    pub resource_cues: Vec<SourceFile>,
    /// `definitions/**.yaml|yml|rhai|cue`.
    pub definitions: Vec<SourceFile>,
    /// `schemas/**.yaml|yml`.
    pub schemas: Vec<SourceFile>,
    /// `views/**.yaml|yml`.
    pub views: Vec<SourceFile>,
    /// `config-templates/**.cue`.
    pub config_templates: Vec<SourceFile>,
    /// `NOTES.rhai` or `NOTES.cue`.
    pub notes: Option<SourceFile>,
    /// `lib/**.rhai`, keyed by module name (`lib/k8s/labels.rhai` → `k8s/labels`).
    pub lib: BTreeMap<String, SourceFile>,
    /// Problems that do not stop loading (duplicated metadata keys, skipped files).
    pub warnings: Vec<String>,
}

impl AddonPackage {
    /// The addon's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Whether the addon is written in KubeVela's CUE (`template.cue`, `parameter.cue`,
    /// `resources/*.cue` or `NOTES.cue`).
    pub fn uses_cue(&self) -> bool {
        matches!(self.template, Some(Template::Cue(_)))
            || self.parameter_cue.is_some()
            || !self.resource_cues.is_empty()
            || self
                .notes
                .as_ref()
                .is_some_and(|f| f.path.ends_with(".cue"))
    }

    /// Every file of the package as `(path, text)`, in path order: what
    /// [`crate::loader::from_files`] reads back into the same package.
    pub fn files(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut add = |f: &SourceFile| out.push((f.path.clone(), f.text.to_string()));
        add(&self.metadata_file);
        if let Some(readme) = &self.readme {
            add(&SourceFile::new("README.md", readme.as_str()));
        }
        for file in [
            &self.parameter,
            &self.parameter_schema,
            &self.parameter_cue,
            &self.notes,
        ]
        .into_iter()
        .flatten()
        {
            add(file);
        }
        if let Some(Template::Rhai(f) | Template::Yaml(f) | Template::Cue(f)) = &self.template {
            add(f);
        }
        for list in [
            &self.resource_yamls,
            &self.resource_scripts,
            &self.resource_cues,
            &self.definitions,
            &self.schemas,
            &self.views,
            &self.config_templates,
        ] {
            list.iter().for_each(&mut add);
        }
        self.lib.values().for_each(&mut add);
        out.sort();
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// Every script of the package (paths and texts), in a stable order.
    pub fn scripts(&self) -> Vec<&SourceFile> {
        let mut out = Vec::new();
        out.extend(self.parameter.as_ref());
        if let Some(Template::Rhai(f)) = &self.template {
            out.push(f);
        }
        out.extend(self.resource_scripts.iter());
        out.extend(
            self.definitions
                .iter()
                .filter(|f| f.path.ends_with(".rhai")),
        );
        out.extend(self.notes.as_ref().filter(|f| f.path.ends_with(".rhai")));
        out.extend(self.lib.values());
        out
    }
}
