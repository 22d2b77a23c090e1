//! How addons lie in a bucket: one addon at the top, `name/` folders, or `name/version/`
//! folders, read from a key listing.

use std::collections::BTreeMap;

use crate::model::AddonVersion;

/// Addons found in a key listing before their metadata is read.
#[derive(Debug, Default)]
pub(super) struct Layout {
    /// Directory name (`""` for a single addon at the top) → candidate.
    pub(super) candidates: BTreeMap<String, Candidate>,
}

#[derive(Debug)]
pub(super) struct Candidate {
    pub(super) versioned: bool,
    /// `(directory, version folder name)`, highest version first; one entry when unversioned.
    pub(super) versions: Vec<(String, String)>,
}

impl Layout {
    pub(super) fn detect(keys: &BTreeMap<String, u64>) -> Self {
        let mut layout = Layout::default();
        if keys.contains_key("metadata.yaml") {
            layout.candidates.insert(
                String::new(),
                Candidate {
                    versioned: false,
                    versions: vec![(String::new(), String::new())],
                },
            );
            return layout;
        }
        let mut versioned: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for key in keys.keys() {
            let parts: Vec<&str> = key.split('/').collect();
            match parts.as_slice() {
                [name, "metadata.yaml"] => {
                    layout.candidates.insert(
                        (*name).to_owned(),
                        Candidate {
                            versioned: false,
                            versions: vec![(format!("{name}/"), String::new())],
                        },
                    );
                }
                [name, version, "metadata.yaml"] => versioned
                    .entry((*name).to_owned())
                    .or_default()
                    .push((*version).to_owned()),
                _ => {}
            }
        }
        for (name, mut versions) in versioned {
            if layout.candidates.contains_key(&name) {
                continue;
            }
            versions.sort_by(|a, b| AddonVersion::parse(b).cmp(&AddonVersion::parse(a)));
            layout.candidates.insert(
                name.clone(),
                Candidate {
                    versioned: true,
                    versions: versions
                        .into_iter()
                        .map(|v| (format!("{name}/{v}/"), v))
                        .collect(),
                },
            );
        }
        layout
    }
}

/// The keys below `dir`, relative to it.
pub(super) fn files_below(keys: &BTreeMap<String, u64>, dir: &str) -> BTreeMap<String, u64> {
    keys.range(dir.to_owned()..)
        .take_while(|(k, _)| k.starts_with(dir))
        .map(|(k, size)| (k[dir.len()..].to_owned(), *size))
        .collect()
}
