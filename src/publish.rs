//! For registry authors: `package` (addon directory → `<name>-<version>.tgz`) and `index` (a
//! directory of packages → a Helm `index.yaml`).
//!
//! A package is a gzip-compressed tar archive holding `<name>/…` — every file of the addon
//! (hidden files and links leaving the directory left out) plus a generated `<name>/Chart.yaml`
//! that Helm accepts (`apiVersion: v2`, name, semver version, description, and the annotations
//! `addon.name`, `system.vela`, `system.kubernetes`). Archives are deterministic: the same addon
//! gives the same bytes, so digests are stable. The addon is linted first and not packaged when
//! lint finds errors.
//!
//! The index is what `helm repo index` writes (`apiVersion: v1`, `entries`, `generated`), with a
//! sha256 `digest`, `created`, `urls` (the base URL joined with the file name) and the addon's
//! annotations for each version. Merging into an existing index keeps every entry it has; only
//! versions it does not list are added.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::error::AuthoringError;
use crate::lint::{lint_path, Severity};
use crate::model::{AddonMeta, AddonVersion};
use crate::render::Renderer;
use crate::source::archive::{read_tgz, write_tgz, ArchiveLimits};
use crate::source::http::rfc3339;
use crate::source::local::LocalReader;
use crate::{Error, Result};

/// One package written by [`package`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Packaged {
    /// The addon's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The archive written.
    pub path: PathBuf,
    /// The archive's sha256 (hex).
    pub digest: String,
    /// How many files it holds (the generated `Chart.yaml` included).
    pub files: usize,
}

/// What [`index`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Indexed {
    /// The `index.yaml` written.
    pub path: PathBuf,
    /// The `(name, version)` pairs added.
    pub added: Vec<(String, String)>,
    /// The versions kept from the merged index.
    pub kept: usize,
}

/// Lints, then packages `dir` (one addon, or a directory of addons) into `out_dir`.
pub async fn package(dir: &Path, out_dir: &Path, renderer: &Renderer) -> Result<Vec<Packaged>> {
    let report = lint_path(dir, renderer).await?;
    let errors: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.message.clone())
        .collect();
    if !errors.is_empty() {
        return Err(AuthoringError::LintFailed { errors }.into());
    }
    let dirs = if dir.join("metadata.yaml").is_file() {
        vec![dir.to_path_buf()]
    } else {
        let mut dirs: Vec<PathBuf> = fs_err::read_dir(dir)?
            .filter_map(std::result::Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("metadata.yaml").is_file())
            .collect();
        dirs.sort();
        dirs
    };
    fs_err::create_dir_all(out_dir)?;
    let mut written = Vec::new();
    for addon_dir in dirs {
        let (meta, bytes, files) = package_bytes(&addon_dir).await?;
        let path = out_dir.join(format!("{}-{}.tgz", meta.name, meta.version));
        fs_err::write(&path, &bytes)?;
        written.push(Packaged {
            name: meta.name.clone(),
            version: meta.version.to_string(),
            path,
            digest: sha256_hex(&bytes),
            files,
        });
    }
    Ok(written)
}

/// Packages one addon directory without linting: its metadata, the archive's bytes and the
/// number of files in it.
pub async fn package_bytes(dir: &Path) -> Result<(AddonMeta, Vec<u8>, usize)> {
    let reader = LocalReader::new(dir)?;
    let mut files = reader.read_tree(|_| true).await?;
    let metadata = files
        .iter()
        .find(|(p, _)| p == "metadata.yaml")
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .ok_or_else(|| {
            Error::from(AuthoringError::NoMetadata {
                dir: dir.to_owned(),
            })
        })?;
    let (meta, _) = AddonMeta::parse(&metadata).map_err(|e| AuthoringError::InvalidMetadata {
        file: dir.join("metadata.yaml"),
        reason: e.to_string(),
    })?;
    if meta.version.semver().is_none() {
        return Err(AuthoringError::NotSemver {
            addon: meta.name.clone(),
            version: meta.version.to_string(),
        }
        .into());
    }
    if files.iter().any(|(p, _)| p == "Chart.yaml") {
        tracing::warn!(
            "addon `{}`: its `Chart.yaml` is replaced by a generated one",
            meta.name
        );
        files.retain(|(p, _)| p != "Chart.yaml");
    }
    files.push(("Chart.yaml".to_owned(), chart_yaml(&meta).into_bytes()));
    let count = files.len();
    let bytes = write_tgz(Some(&meta.name), &files)?;
    Ok((meta, bytes, count))
}

/// The annotations a package and its index entry carry.
fn annotations(meta: &AddonMeta) -> Map<String, Value> {
    let mut annotations = Map::new();
    annotations.insert("addon.name".into(), json!(meta.name));
    if let Some(vela) = &meta.system.vela {
        annotations.insert("system.vela".into(), json!(vela));
    }
    if let Some(kubernetes) = &meta.system.kubernetes {
        annotations.insert("system.kubernetes".into(), json!(kubernetes));
    }
    if let Some(addonctl) = &meta.system.addonctl {
        annotations.insert("system.addonctl".into(), json!(addonctl));
    }
    annotations
}

/// The `Chart.yaml` generated for an addon.
pub fn chart_yaml(meta: &AddonMeta) -> String {
    let mut chart = Map::new();
    chart.insert("apiVersion".into(), json!("v2"));
    chart.insert("name".into(), json!(meta.name));
    chart.insert("version".into(), json!(meta.version.raw()));
    if let Some(description) = &meta.description {
        chart.insert("description".into(), json!(description));
    }
    chart.insert("type".into(), json!("application"));
    if let Some(icon) = &meta.icon {
        chart.insert("icon".into(), json!(icon));
    }
    if let Some(home) = &meta.url {
        chart.insert("home".into(), json!(home));
    }
    if !meta.tags.is_empty() {
        chart.insert("keywords".into(), json!(meta.tags));
    }
    chart.insert("annotations".into(), Value::Object(annotations(meta)));
    crate::yaml::to_string(&Value::Object(chart)).unwrap_or_default()
}

/// Writes `<dir>/index.yaml` for every `*.tgz` in `dir`, their URLs under `base_url` (an empty
/// base gives URLs relative to the index), merging into the index at `merge` when given (its
/// entries are kept).
pub fn index(dir: &Path, base_url: &str, merge: Option<&Path>) -> Result<Indexed> {
    let mut entries: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut kept = 0;
    if let Some(merge) = merge {
        let text = fs_err::read_to_string(merge)?;
        let (existing, _) =
            crate::yaml::parse_single(&text).map_err(|e| AuthoringError::InvalidYaml {
                file: merge.display().to_string(),
                reason: e.to_string(),
            })?;
        match existing.get("entries") {
            Some(Value::Object(map)) => {
                for (name, versions) in map {
                    let versions = versions.as_array().cloned().unwrap_or_default();
                    kept += versions.len();
                    entries.insert(name.clone(), versions);
                }
            }
            Some(Value::Null) | None => {}
            Some(_) => {
                return Err(AuthoringError::EntriesNotMapping {
                    file: merge.to_owned(),
                }
                .into())
            }
        }
    }
    let mut archives: Vec<PathBuf> = fs_err::read_dir(dir)?
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tgz") && p.is_file())
        .collect();
    archives.sort();
    let base = if base_url.is_empty() || base_url.ends_with('/') {
        base_url.to_owned()
    } else {
        format!("{base_url}/")
    };
    let now = rfc3339(SystemTime::now());
    let mut added = Vec::new();
    for archive in archives {
        let file_name = archive
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = fs_err::read(&archive)?;
        let files = read_tgz("local", &file_name, &bytes, &ArchiveLimits::default())?;
        let Some((_, metadata)) = files.iter().find(|(p, _)| p == "metadata.yaml") else {
            tracing::warn!("`{file_name}` holds no `metadata.yaml`; skipped");
            continue;
        };
        let (meta, _) = AddonMeta::parse(&String::from_utf8_lossy(metadata)).map_err(|e| {
            AuthoringError::InvalidArchiveMetadata {
                archive: file_name.clone(),
                reason: e.to_string(),
            }
        })?;
        let versions = entries.entry(meta.name.clone()).or_default();
        let present = versions.iter().any(|v| {
            v.get("version")
                .and_then(Value::as_str)
                .is_some_and(|s| AddonVersion::parse(s).same_as(meta.version.raw()))
        });
        if present {
            continue;
        }
        let mut entry = Map::new();
        entry.insert("apiVersion".into(), json!("v2"));
        entry.insert("name".into(), json!(meta.name));
        entry.insert("version".into(), json!(meta.version.raw()));
        if let Some(description) = &meta.description {
            entry.insert("description".into(), json!(description));
        }
        entry.insert("type".into(), json!("application"));
        if let Some(icon) = &meta.icon {
            entry.insert("icon".into(), json!(icon));
        }
        if !meta.tags.is_empty() {
            entry.insert("keywords".into(), json!(meta.tags));
        }
        entry.insert("annotations".into(), Value::Object(annotations(&meta)));
        entry.insert("created".into(), json!(now));
        entry.insert("digest".into(), json!(sha256_hex(&bytes)));
        entry.insert("urls".into(), json!([format!("{base}{file_name}")]));
        versions.push(Value::Object(entry));
        added.push((meta.name.clone(), meta.version.to_string()));
    }
    let mut map = Map::new();
    for (name, mut versions) in entries {
        versions.sort_by(|a, b| {
            let version = |v: &Value| {
                AddonVersion::parse(v.get("version").and_then(Value::as_str).unwrap_or(""))
            };
            version(b).cmp(&version(a))
        });
        map.insert(name, Value::Array(versions));
    }
    let document = json!({
        "apiVersion": "v1",
        "entries": map,
        "generated": now,
    });
    let text = crate::yaml::to_string(&document).map_err(|e| AuthoringError::IndexNotWritten {
        reason: e.to_string(),
    })?;
    let path = dir.join("index.yaml");
    fs_err::write(&path, text)?;
    Ok(Indexed { path, added, kept })
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::source::cache::hex(&Sha256::digest(bytes))
}

/// How [`push`] reaches the registry.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// How to log in.
    pub login: crate::source::oci::client::Login,
    /// The `plainHttp` option (`true` for a loopback registry, `remote` for any).
    pub plain_http: Option<String>,
    /// Extra trusted CA certificates (PEM).
    pub ca_bundle: Option<Vec<u8>>,
}

/// Publishes `source` (a `.tgz` from [`package`], an addon directory or a directory of addons,
/// packaged first) to the OCI registry `endpoint` (`oci://host[:port]/prefix`), as `helm push`
/// does, and adds each addon to the registry's catalog chart.
pub async fn push(
    source: &Path,
    endpoint: &str,
    options: PushOptions,
    renderer: &Renderer,
) -> Result<Vec<crate::source::oci::push::Pushed>> {
    use crate::source::oci::{OciOptions, OciReader};
    let packaged = source.is_dir().then(tempfile_dir).transpose()?;
    let archives: Vec<PathBuf> = if let Some(packaged) = &packaged {
        package(source, packaged, renderer)
            .await?
            .into_iter()
            .map(|p| p.path)
            .collect()
    } else {
        vec![source.to_path_buf()]
    };
    let http = crate::source::http::HttpOptions {
        ca_bundle: options.ca_bundle,
        ..crate::source::http::HttpOptions::from_env().unwrap_or_default()
    };
    let reader = OciReader::new(
        "push",
        endpoint,
        OciOptions {
            http,
            login: options.login,
            plain_http: options.plain_http,
            policy: None,
        },
        &crate::source::cache::CacheOptions::off(),
    )?;
    let mut pushed = Vec::new();
    for archive in archives {
        let bytes = fs_err::read(&archive)?;
        pushed.push(
            crate::source::oci::push::push(reader.client(), reader.location(), &bytes).await?,
        );
    }
    if let Some(packaged) = &packaged {
        let _ = fs_err::remove_dir_all(packaged);
    }
    Ok(pushed)
}

/// A fresh private directory for packages pushed from a directory.
fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "addonctl-push-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    crate::source::cache::create_private_dir(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_yaml_names_the_addon_and_its_requirements() {
        let (meta, _) = AddonMeta::parse(
            "name: demo\nversion: 1.2.3\ndescription: A demo\nsystem:\n  vela: \">=1.5.0\"\n",
        )
        .unwrap();
        let (chart, _) = crate::yaml::parse_single(&chart_yaml(&meta)).unwrap();
        assert_eq!(chart["apiVersion"], "v2");
        assert_eq!(chart["name"], "demo");
        assert_eq!(chart["version"], "1.2.3");
        assert_eq!(chart["description"], "A demo");
        assert_eq!(chart["annotations"]["system.vela"], ">=1.5.0");
        assert_eq!(chart["annotations"]["addon.name"], "demo");
    }
}
