//! Finding and reading the kubeconfig as kubectl does.
//!
//! - `--kubeconfig FILE` wins; the file must exist.
//! - Otherwise `KUBECONFIG` is a list of files (`:`-separated; `;` on Windows). Empty entries and
//!   repeated files are skipped, so is a file that does not exist (as kubectl does). The files
//!   are merged: the first file to define a cluster, user or context wins it whole, and
//!   `current-context` comes from the first file that sets it. A file that exists but cannot be
//!   read or parsed is an error naming it.
//! - An empty `KUBECONFIG` (or one of only separators) counts as unset.
//! - Otherwise `~/.kube/config` when it exists; otherwise there is no kubeconfig (the caller
//!   tries the in-cluster service account).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use kube::config::Kubeconfig;

use super::{Error, Result};

/// A kubeconfig read from one or more files.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The merged kubeconfig.
    pub config: Kubeconfig,
    /// Where it came from, for messages (`--kubeconfig \`a\``, `KUBECONFIG (\`a\`, \`b\`)`, …).
    pub origin: String,
}

/// Reads the kubeconfig from `--kubeconfig` (`flag`), else `KUBECONFIG`, else `~/.kube/config`.
/// `Ok(None)`: none of them exists.
pub fn load(flag: Option<&Path>) -> Result<Option<Loaded>> {
    let env = std::env::var_os("KUBECONFIG");
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".kube").join("config"));
    load_from(flag, env.as_deref(), home.as_deref())
}

/// [`load`] with the environment given: `env` is the value of `KUBECONFIG`, `home_file` the
/// default file (`~/.kube/config`).
pub fn load_from(
    flag: Option<&Path>,
    env: Option<&OsStr>,
    home_file: Option<&Path>,
) -> Result<Option<Loaded>> {
    if let Some(path) = flag {
        let config = read(path).map_err(|e| {
            Error::Config(format!(
                "`--kubeconfig {}`: {e}; check the path given to `--kubeconfig`",
                path.display()
            ))
        })?;
        return Ok(Some(Loaded {
            config,
            origin: format!("`--kubeconfig {}`", path.display()),
        }));
    }
    let mut listed: Vec<PathBuf> = Vec::new();
    for path in env.map(std::env::split_paths).into_iter().flatten() {
        if !path.as_os_str().is_empty() && !listed.contains(&path) {
            listed.push(path);
        }
    }
    if listed.is_empty() {
        let Some(home_file) = home_file.filter(|p| p.is_file()) else {
            return Ok(None);
        };
        let config = read(home_file).map_err(|e| {
            Error::Config(format!(
                "`{}`: {e}; fix the file, or pass `--kubeconfig` or set `KUBECONFIG`",
                home_file.display()
            ))
        })?;
        return Ok(Some(Loaded {
            config,
            origin: format!("`{}`", home_file.display()),
        }));
    }
    merge_listed(&listed).map(Some)
}

/// Reads and merges the files of `KUBECONFIG`, skipping the ones that do not exist.
fn merge_listed(listed: &[PathBuf]) -> Result<Loaded> {
    let names = |paths: &[&PathBuf]| {
        paths
            .iter()
            .map(|p| format!("`{}`", p.display()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let present: Vec<&PathBuf> = listed.iter().filter(|p| p.exists()).collect();
    if present.is_empty() {
        return Err(Error::Config(format!(
            "none of the files listed in `KUBECONFIG` exists ({}); set `KUBECONFIG` to existing files or pass `--kubeconfig`",
            names(&listed.iter().collect::<Vec<_>>())
        )));
    }
    let mut merged = Kubeconfig::default();
    for path in &present {
        let next = read(path).map_err(|e| {
            Error::Config(format!(
                "`{}` (listed in `KUBECONFIG`): {e}; fix the file or remove it from `KUBECONFIG`",
                path.display()
            ))
        })?;
        // kube refuses files whose `kind`/`apiVersion` differ; kubectl does not look at them.
        let next = Kubeconfig {
            kind: None,
            api_version: None,
            ..next
        };
        merged = merged.merge(next).map_err(|e| {
            Error::Config(format!(
                "`{}` (listed in `KUBECONFIG`): {e}",
                path.display()
            ))
        })?;
    }
    Ok(Loaded {
        config: merged,
        origin: format!("`KUBECONFIG` ({})", names(&present)),
    })
}

/// One file, relative certificate paths made absolute (kube's `read_from` does it).
fn read(path: &Path) -> std::result::Result<Kubeconfig, String> {
    if !path.exists() {
        return Err("the file does not exist".to_owned());
    }
    Kubeconfig::read_from(path).map_err(|e| {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(inner) = source {
            text.push_str(": ");
            text.push_str(&inner.to_string());
            source = inner.source();
        }
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        fs_err::write(&path, text).unwrap();
        path
    }

    const CLUSTERS: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: first\n";
    const CONTEXTS: &str = "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n    token: second\n";

    fn joined(paths: &[&Path]) -> std::ffi::OsString {
        std::env::join_paths(paths).unwrap()
    }

    #[test]
    fn a_kubeconfig_list_is_merged_first_file_winning_and_missing_files_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", CLUSTERS);
        let b = write(dir.path(), "b", CONTEXTS);
        let missing = dir.path().join("missing");
        let env = joined(&[&missing, &a, &b]);
        let loaded = load_from(None, Some(&env), None).unwrap().unwrap();
        assert_eq!(loaded.config.current_context.as_deref(), Some("x"));
        assert_eq!(loaded.config.clusters.len(), 1);
        assert_eq!(loaded.config.contexts.len(), 1);
        assert_eq!(loaded.config.auth_infos.len(), 1);
        let token = loaded.config.auth_infos[0]
            .auth_info
            .as_ref()
            .and_then(|a| a.token.as_ref())
            .map(|t| secrecy::ExposeSecret::expose_secret(t).to_owned());
        assert_eq!(token.as_deref(), Some("first"));
        assert!(loaded.origin.contains("KUBECONFIG"), "{}", loaded.origin);
        assert!(!loaded.origin.contains("missing"), "{}", loaded.origin);
    }

    #[test]
    fn the_flag_overrides_the_variable_and_an_empty_variable_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", CLUSTERS);
        let b = write(dir.path(), "b", CONTEXTS);
        let env = joined(&[&b]);
        let loaded = load_from(Some(&a), Some(&env), None).unwrap().unwrap();
        assert!(loaded.config.contexts.is_empty());
        assert!(loaded.origin.contains("--kubeconfig"));

        let loaded = load_from(None, Some(OsStr::new("")), Some(&b))
            .unwrap()
            .unwrap();
        assert_eq!(loaded.config.current_context.as_deref(), Some("x"));
        assert!(load_from(None, Some(OsStr::new("")), None)
            .unwrap()
            .is_none());
        let absent = dir.path().join("absent");
        assert!(load_from(None, None, Some(&absent)).unwrap().is_none());
    }

    #[test]
    fn errors_name_the_file_and_only_blame_the_flag_when_it_was_given() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let bad = write(dir.path(), "bad", "clusters: [unclosed\n");
        let flag = load_from(Some(&missing), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            flag.contains("--kubeconfig") && flag.contains("does not exist"),
            "{flag}"
        );
        let env = joined(&[&missing]);
        let none = load_from(None, Some(&env), None).unwrap_err().to_string();
        assert!(
            none.contains("`KUBECONFIG`") && !none.contains("--kubeconfig "),
            "{none}"
        );
        let env = joined(&[&bad]);
        let parse = load_from(None, Some(&env), None).unwrap_err().to_string();
        assert!(
            parse.contains("bad") && parse.contains("KUBECONFIG"),
            "{parse}"
        );
        assert!(!parse.contains("given to `--kubeconfig`"), "{parse}");
    }
}
