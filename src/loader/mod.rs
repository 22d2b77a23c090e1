//! Loads one addon version from a reader into an [`AddonPackage`].
//!
//! Files are classified by path ([`classify`]); ignored files are never read. The files that
//! matter are read concurrently (bounded), must be UTF-8, and are sorted into the package.

pub mod classify;
mod locate_error;

pub use locate_error::LocateError;

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::model::{AddonMeta, AddonPackage, MetadataError, SourceFile, Template};
use std::sync::Arc;

use crate::source::catalog::{self, Catalog};
use crate::source::local::LocalReader;
use crate::source::{self, AddonRef, AsyncReader};
use classify::{classify, module_name, FileKind};

/// How many files are read at once.
const READ_CONCURRENCY: usize = 8;

/// An addon's files could not be made into a package.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading from the registry failed.
    #[error("cannot read addon `{addon}`: {source}")]
    Source {
        /// The addon.
        addon: String,
        /// The reader's error.
        #[source]
        source: source::Error,
    },
    /// `metadata.yaml` is missing.
    #[error("addon `{addon}` has no `metadata.yaml`; every addon needs one with at least `name` and `version`")]
    MissingMetadata {
        /// The addon.
        addon: String,
    },
    /// `metadata.yaml` is invalid.
    #[error("addon `{addon}`: {source}")]
    Metadata {
        /// The addon.
        addon: String,
        /// What is wrong.
        #[source]
        source: MetadataError,
    },
    /// A file is not UTF-8.
    #[error("addon `{addon}`: `{path}` is not valid UTF-8 text")]
    NotUtf8 {
        /// The addon.
        addon: String,
        /// The file.
        path: String,
    },
    /// More than one of `template.cue`, `template.rhai` and `template.yaml` exist.
    #[error("addon `{addon}` has both `{first}` and `{second}`; keep one of them")]
    TwoTemplates {
        /// The addon.
        addon: String,
        /// The first template file.
        first: String,
        /// The other one.
        second: String,
    },
    /// Both `NOTES.cue` and `NOTES.rhai` exist.
    #[error("addon `{addon}` has both `NOTES.cue` and `NOTES.rhai`; keep one of them")]
    TwoNotes {
        /// The addon.
        addon: String,
    },
}

/// Reads and classifies one addon version.
pub async fn load(reader: &dyn AsyncReader, addon: &AddonRef) -> Result<AddonPackage, Error> {
    let wrap = |source| Error::Source {
        addon: addon.name.clone(),
        source,
    };
    let files = reader.list_files(addon).await.map_err(wrap)?;
    let wanted: Vec<String> = files
        .into_iter()
        .filter(|f| classify(&f.path) != FileKind::Ignored)
        .map(|f| f.path)
        .collect();
    let contents: Vec<(String, Vec<u8>)> = stream::iter(wanted)
        .map(|path| async move {
            let bytes = reader.read_file(addon, &path).await?;
            Ok::<_, source::Error>((path, bytes))
        })
        .buffered(READ_CONCURRENCY)
        .try_collect()
        .await
        .map_err(wrap)?;
    let provenance = reader.provenance(addon).await.map_err(wrap)?;
    let mut package = from_files(reader.registry(), &addon.name, contents)?;
    package.provenance = provenance;
    Ok(package)
}

/// Builds a package from `(path, bytes)` pairs (paths relative to the addon root). Pure.
pub fn from_files(
    registry: &str,
    addon: &str,
    files: Vec<(String, Vec<u8>)>,
) -> Result<AddonPackage, Error> {
    let mut files: Vec<(String, String)> = files
        .into_iter()
        .filter(|(path, _)| classify(path) != FileKind::Ignored)
        .map(|(path, bytes)| match String::from_utf8(bytes) {
            Ok(text) => Ok((path, text)),
            Err(_) => Err(Error::NotUtf8 {
                addon: addon.to_owned(),
                path,
            }),
        })
        .collect::<Result<_, _>>()?;
    files.sort_by(|a, b| a.0.cmp(&b.0));

    let metadata_text = files
        .iter()
        .find(|(p, _)| classify(p) == FileKind::Metadata)
        .map(|(_, t)| t.clone())
        .ok_or_else(|| Error::MissingMetadata {
            addon: addon.to_owned(),
        })?;
    let metadata_path = files
        .iter()
        .find(|(p, _)| classify(p) == FileKind::Metadata)
        .map_or_else(|| "metadata.yaml".to_owned(), |(p, _)| p.clone());
    let (metadata, warnings) =
        AddonMeta::parse(&metadata_text).map_err(|source| Error::Metadata {
            addon: addon.to_owned(),
            source,
        })?;
    let name = metadata.name.clone();
    let mut package = AddonPackage {
        registry: registry.to_owned(),
        provenance: None,
        metadata,
        metadata_file: SourceFile::new(metadata_path, metadata_text),
        readme: None,
        parameter: None,
        parameter_schema: None,
        parameter_cue: None,
        template: None,
        resource_yamls: Vec::new(),
        resource_scripts: Vec::new(),
        resource_cues: Vec::new(),
        definitions: Vec::new(),
        schemas: Vec::new(),
        views: Vec::new(),
        config_templates: Vec::new(),
        notes: None,
        lib: std::collections::BTreeMap::new(),
        warnings: warnings
            .into_iter()
            .map(|w| format!("`metadata.yaml`: {w}"))
            .collect(),
    };
    for (path, text) in files {
        place(&mut package, &name, path, text)?;
    }
    if package.parameter.is_some() && package.parameter_cue.is_some() {
        package.warnings.push(
            "both `parameter.rhai` and `parameter.cue` exist; `parameter.rhai` declares the parameters"
                .to_owned(),
        );
    }
    if package.parameter.is_some() && package.parameter_schema.is_some() {
        package.warnings.push(
            "both `parameter.rhai` and `parameter.schema.json` exist; `parameter.rhai` is used"
                .to_owned(),
        );
    }
    Ok(package)
}

/// Puts one file of an addon (`name`) where its kind goes in the package.
fn place(package: &mut AddonPackage, name: &str, path: String, text: String) -> Result<(), Error> {
    let kind = classify(&path);
    let file = SourceFile::new(path.clone(), text);
    match kind {
        FileKind::Metadata | FileKind::Ignored => {}
        FileKind::Readme => {
            // `README.md` wins over `readme.md` (sorted first).
            if package.readme.is_none() {
                package.readme = Some(file.text.to_string());
            }
        }
        FileKind::Parameter => package.parameter = Some(file),
        FileKind::ParameterSchema => package.parameter_schema = Some(file),
        FileKind::TemplateRhai | FileKind::TemplateYaml | FileKind::TemplateCue => {
            if let Some(Template::Rhai(first) | Template::Yaml(first) | Template::Cue(first)) =
                &package.template
            {
                return Err(Error::TwoTemplates {
                    addon: name.to_owned(),
                    first: first.path.clone(),
                    second: path,
                });
            }
            package.template = Some(match kind {
                FileKind::TemplateRhai => Template::Rhai(file),
                FileKind::TemplateCue => Template::Cue(file),
                _ => Template::Yaml(file),
            });
        }
        // `parameter.cue` is sorted before `resources/parameter.cue`: the root one wins.
        FileKind::ParameterCue => package.parameter_cue = Some(file),
        FileKind::LegacyParameterCue => {
            if package.parameter_cue.is_some() {
                package.warnings.push(
                    "both `parameter.cue` and `resources/parameter.cue` exist; `parameter.cue` is used"
                        .to_owned(),
                );
            } else {
                package.parameter_cue = Some(file);
            }
        }
        FileKind::ResourceCue => package.resource_cues.push(file),
        FileKind::ResourceYaml => package.resource_yamls.push(file),
        FileKind::ResourceScript => package.resource_scripts.push(file),
        FileKind::Definition => package.definitions.push(file),
        FileKind::Schema => package.schemas.push(file),
        FileKind::View => package.views.push(file),
        FileKind::ConfigTemplate => package.config_templates.push(file),
        FileKind::Notes | FileKind::NotesCue => {
            if package.notes.is_some() {
                return Err(Error::TwoNotes {
                    addon: name.to_owned(),
                });
            }
            package.notes = Some(file);
        }
        FileKind::Lib => {
            if let Some(module) = module_name(&path) {
                package.lib.insert(module.to_owned(), file);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> (String, Vec<u8>) {
        (path.to_owned(), text.as_bytes().to_vec())
    }

    #[test]
    fn files_are_sorted_into_the_package() {
        let package = from_files(
            "local",
            "demo",
            vec![
                file("resources/b.yaml", "kind: B"),
                file("metadata.yaml", "name: demo\nversion: 1.0.0\n"),
                file("resources/a.yaml", "kind: A"),
                file("resources/c.rhai", "#{}"),
                file("lib/x.rhai", "fn f() { 1 }"),
                file("images/logo.png", "\u{0}binary"),
                file("template.cue", "output: {}"),
            ],
        )
        .unwrap();
        assert_eq!(package.name(), "demo");
        let yamls: Vec<_> = package
            .resource_yamls
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(yamls, ["resources/a.yaml", "resources/b.yaml"]);
        assert_eq!(package.resource_scripts.len(), 1);
        assert!(package.lib.contains_key("x"));
        assert!(matches!(&package.template, Some(Template::Cue(f)) if f.path == "template.cue"));
        assert!(package.uses_cue());
    }

    #[test]
    fn cue_files_are_sorted_and_the_root_parameter_cue_wins() {
        let package = from_files(
            "local",
            "cuey",
            vec![
                file("metadata.yaml", "name: cuey\nversion: 1.0.0\n"),
                file("resources/parameter.cue", "parameter: {a: *1 | int}"),
                file("parameter.cue", "parameter: {b: *2 | int}"),
                file("resources/b.cue", "output: {}"),
                file("resources/a.cue", "package main"),
                file("NOTES.cue", "notes: \"hi\""),
            ],
        )
        .unwrap();
        let parameter = package.parameter_cue.as_ref().map(|f| f.path.as_str());
        assert_eq!(parameter, Some("parameter.cue"));
        let resources: Vec<_> = package
            .resource_cues
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(resources, ["resources/a.cue", "resources/b.cue"]);
        assert_eq!(
            package.notes.as_ref().map(|f| f.path.as_str()),
            Some("NOTES.cue")
        );
        assert!(
            package
                .warnings
                .iter()
                .any(|w| w.contains("`resources/parameter.cue`")),
            "{:?}",
            package.warnings
        );
        assert!(package.uses_cue());
        assert!(
            package.scripts().is_empty(),
            "CUE files are not Rhai scripts"
        );
    }

    #[test]
    fn bad_packages_are_clear_errors() {
        let err = from_files("local", "x", vec![file("README.md", "hi")]).unwrap_err();
        assert!(err.to_string().contains("has no `metadata.yaml`"), "{err}");
        let err = from_files(
            "local",
            "x",
            vec![
                file("metadata.yaml", "name: x\nversion: 1.0.0"),
                file("template.rhai", "#{}"),
                file("template.yaml", "kind: Application"),
            ],
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("both `template.rhai` and `template.yaml`"),
            "{err}"
        );
        let err = from_files(
            "local",
            "x",
            vec![
                file("metadata.yaml", "name: x\nversion: 1.0.0"),
                ("NOTES.rhai".into(), vec![0xff, 0xfe]),
            ],
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("`NOTES.rhai` is not valid UTF-8"),
            "{err}"
        );
    }
}

/// Why the `metadata.yaml` of `dir` (or of its sub-directories) cannot be read, one message per
/// file, naming it and the parse error's line.
pub(crate) fn metadata_problems(dir: &std::path::Path) -> Vec<String> {
    let mut candidates = vec![dir.join("metadata.yaml")];
    if !candidates[0].is_file() {
        candidates = fs_err::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(std::result::Result::ok)
                    .map(|e| e.path().join("metadata.yaml"))
                    .filter(|p| p.is_file())
                    .collect()
            })
            .unwrap_or_default();
        candidates.sort();
    }
    candidates
        .iter()
        .filter_map(|file| {
            let problem = match crate::params::input::read_text(file, "metadata file") {
                Ok(text) => crate::model::AddonMeta::parse(&text).err()?.to_string(),
                Err(e) => e.to_string(),
            };
            Some(format!("`{}` is not valid: {problem}", file.display()))
        })
        .collect()
}

/// Where an addon named on the command line comes from.
#[derive(Debug)]
pub struct Located {
    /// The reader of its registry.
    pub reader: source::Reader,
    /// The addon in that registry.
    pub addon: AddonRef,
}

/// Finds the addon a user named in the built-in registry (see [`locate_in`]).
pub async fn locate(reference: &str, version: Option<&str>) -> Result<Located, LocateError> {
    locate_in(&Catalog::builtin(), reference, version).await
}

/// Finds the addon a user named: an existing directory (one addon, or a directory holding
/// exactly one), which shadows every registry, else `registry/name` or a name in the catalogue.
pub async fn locate_in(
    catalog: &Catalog,
    reference: &str,
    version: Option<&str>,
) -> Result<Located, LocateError> {
    let path = std::path::Path::new(reference);
    if path.is_dir() {
        return locate_directory(path, reference, version).await;
    }
    let name = reference
        .rsplit_once('/')
        .map_or(reference, |(_, name)| name);
    if !crate::model::metadata::is_valid_name(name) {
        return Err(LocateError::NotAnAddon {
            reference: reference.to_owned(),
            catalog: catalog.describe(),
        });
    }
    match catalog.find(reference, version, None, None).await {
        Ok(found) => Ok(Located {
            reader: found.reader,
            addon: found.addon,
        }),
        Err(catalog::Error::NoAddon(_)) if version.is_none() => {
            let known = catalog.names().await;
            Err(LocateError::NoSuchAddonOrDir {
                name: name.to_owned(),
                reference: reference.to_owned(),
                catalog: catalog.describe(),
                available: known.iter().map(ToString::to_string).collect(),
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// The one addon of a directory.
async fn locate_directory(
    path: &std::path::Path,
    reference: &str,
    version: Option<&str>,
) -> Result<Located, LocateError> {
    let reader = LocalReader::new(path)?;
    let addons = reader.list_addons().await?;
    let addon = match addons.as_slice() {
        [one] => one.name.clone(),
        [] => {
            let problems = metadata_problems(path);
            return Err(LocateError::NoAddonIn {
                reference: reference.to_owned(),
                problems,
            });
        }
        many => {
            return Err(LocateError::ManyAddons {
                reference: reference.to_owned(),
                names: many.iter().map(|a| a.name.clone()).collect(),
            })
        }
    };
    Ok(Located {
        reader: Arc::new(reader),
        addon: AddonRef {
            name: addon,
            version: version.map(str::to_owned),
        },
    })
}
