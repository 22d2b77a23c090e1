//! API requests counted from the audit logs the API servers of `scripts/k8s/up.sh` write when
//! started with `ADDONCTL_K8S_AUDIT=1` (`logs/audit-<cluster>.log`, one JSON event per request
//! once its response completed). The benchmark notes each log's length before a window and reads
//! what was appended after it: every request of the `admin` user (the benchmark's and the
//! controller's own), none of the API servers' internal ones.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::PathBuf;

use serde_json::Value;

/// The user the environment's admin kubeconfigs authenticate as.
const USER: &str = "admin";

/// The audit logs of an environment's clusters.
pub struct AuditLogs {
    files: Vec<(String, PathBuf)>,
}

/// One request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The cluster it reached.
    pub cluster: String,
    /// `get`, `list`, `watch`, `create`, `patch`, `update`, `delete`, ...
    pub verb: String,
    /// The resource (`secrets`, `configmaps`, `addons/status`, ...) or, for discovery and other
    /// non-resource requests, the path.
    pub resource: String,
}

impl Request {
    /// Whether it could change something.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }
}

/// Where each log ended at one moment.
#[derive(Debug, Clone)]
pub struct Mark(Vec<u64>);

impl AuditLogs {
    /// The logs of `clusters` under the environment's `dir`; `None` when the environment was
    /// started without audit logs.
    pub fn open(dir: &std::path::Path, clusters: &[String]) -> Option<AuditLogs> {
        let files: Vec<(String, PathBuf)> = clusters
            .iter()
            .map(|c| (c.clone(), dir.join("logs").join(format!("audit-{c}.log"))))
            .collect();
        files
            .iter()
            .all(|(_, f)| f.is_file())
            .then_some(AuditLogs { files })
    }

    /// Where every log ends now.
    pub fn mark(&self) -> Mark {
        Mark(
            self.files
                .iter()
                .map(|(_, f)| std::fs::metadata(f).map_or(0, |m| m.len()))
                .collect(),
        )
    }

    /// The admin's requests logged between `from` and `to`.
    pub fn between(&self, from: &Mark, to: &Mark) -> Vec<Request> {
        let mut out = Vec::new();
        for (((cluster, file), start), end) in self.files.iter().zip(&from.0).zip(&to.0) {
            let Ok(mut handle) = std::fs::File::open(file) else {
                continue;
            };
            if handle.seek(SeekFrom::Start(*start)).is_err() {
                continue;
            }
            let mut text = String::new();
            let _ = handle
                .take(end.saturating_sub(*start))
                .read_to_string(&mut text);
            for line in text.lines() {
                let Ok(event) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                if event["user"]["username"] != USER {
                    continue;
                }
                let resource = match event["objectRef"]["resource"].as_str() {
                    Some(r) => match event["objectRef"]["subresource"].as_str() {
                        Some(sub) => format!("{r}/{sub}"),
                        None => r.to_owned(),
                    },
                    None => event["requestURI"]
                        .as_str()
                        .unwrap_or("?")
                        .split('?')
                        .next()
                        .unwrap_or("?")
                        .to_owned(),
                };
                out.push(Request {
                    cluster: cluster.clone(),
                    verb: event["verb"].as_str().unwrap_or("?").to_owned(),
                    resource,
                });
            }
        }
        out
    }
}

/// Requests counted by a key.
pub fn count_by<K: Ord>(requests: &[Request], key: impl Fn(&Request) -> K) -> BTreeMap<K, usize> {
    let mut counts = BTreeMap::new();
    for request in requests {
        *counts.entry(key(request)).or_insert(0) += 1;
    }
    counts
}
