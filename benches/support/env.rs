//! The test environment of `scripts/k8s/up.sh` as the benchmarks on real API servers read it:
//! its `env.json` (directory `ADDONCTL_TEST_ENV`, default `/tmp/addonctl-k8s`), connections to
//! its clusters, and the median / p95 of a sample. Shared by `drift`, `multi_cluster` and
//! `controller` (`#[path = "support/env.rs"] mod env;`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use addonctl::cluster::{Cluster, ConnectOptions};
use serde::Deserialize;

/// `env.json`.
#[derive(Debug, Deserialize)]
pub struct EnvFile {
    /// The environment's directory (where it was read from).
    #[serde(skip)]
    pub dir: PathBuf,
    /// Every API server.
    pub clusters: Vec<ClusterEntry>,
}

/// One API server of the environment.
#[derive(Debug, Clone, Deserialize)]
pub struct ClusterEntry {
    /// `control-plane`, `managed-1`, ...
    pub name: String,
    /// `control-plane` or `managed`.
    pub role: String,
    /// Its admin kubeconfig.
    pub kubeconfig: PathBuf,
}

impl EnvFile {
    /// Reads the environment named by `ADDONCTL_TEST_ENV`; panics with what to run when there is
    /// none (`script`: the script that starts one for this benchmark).
    pub fn load(script: &str) -> EnvFile {
        let dir = PathBuf::from(
            std::env::var("ADDONCTL_TEST_ENV").unwrap_or_else(|_| "/tmp/addonctl-k8s".into()),
        );
        let text = fs_err::read_to_string(dir.join("env.json")).unwrap_or_else(|e| {
            panic!(
                "no test environment in {} ({e}): run {script}, or scripts/k8s/up.sh and set ADDONCTL_TEST_ENV",
                dir.display()
            )
        });
        let mut env: EnvFile = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}/env.json: {e}", dir.display()));
        env.dir = dir;
        env
    }

    /// The control plane.
    pub fn control_plane(&self) -> &ClusterEntry {
        self.clusters
            .iter()
            .find(|c| c.role == "control-plane")
            .expect("the environment has a control plane")
    }

    /// The managed clusters, in the file's order (`managed-1` first); panics when there are
    /// fewer than `at_least`.
    pub fn managed(&self, at_least: usize) -> Vec<&ClusterEntry> {
        let managed: Vec<&ClusterEntry> = self
            .clusters
            .iter()
            .filter(|c| c.role == "managed")
            .collect();
        assert!(
            managed.len() >= at_least.max(1),
            "the environment in {} has {} managed cluster(s); this benchmark needs {}",
            self.dir.display(),
            managed.len(),
            at_least.max(1)
        );
        managed
    }
}

/// An admin connection to the cluster of `kubeconfig`.
pub async fn connect(kubeconfig: &Path) -> Cluster {
    Cluster::connect(&ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: None,
        ..ConnectOptions::default()
    })
    .await
    .unwrap_or_else(|e| panic!("cannot connect with {}: {e}", kubeconfig.display()))
}

/// The median of `values` (0 when empty).
pub fn median(values: &[f64]) -> f64 {
    percentile(values, 50)
}

/// The `p`th percentile of `values` (nearest rank; 0 when empty).
pub fn percentile(values: &[f64], p: usize) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The machine's load averages (1, 5, 15 minutes) as `/proc/loadavg` says them.
pub fn load_average() -> String {
    fs_err::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
