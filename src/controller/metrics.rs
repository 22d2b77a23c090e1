//! The controller's Prometheus metrics, written in the text exposition format (version 0.0.4)
//! by hand: a few counters, one histogram and one gauge.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Upper bounds (seconds) of the reconcile duration histogram.
const BUCKETS: [f64; 11] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// Every metric.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    reconciles: BTreeMap<String, u64>,
    errors: BTreeMap<String, u64>,
    skipped: BTreeMap<String, u64>,
    drifted: BTreeMap<String, u64>,
    corrected: BTreeMap<String, u64>,
    /// (cluster, outcome) → applies.
    applies: BTreeMap<(String, String), u64>,
    buckets: [u64; BUCKETS.len()],
    duration_count: u64,
    duration_sum: f64,
    leader: bool,
    /// Re-lists of the registries.
    relists: u64,
    /// Registry webhook calls accepted.
    webhooks: u64,
    /// Clusters a drift check listed, by addon.
    listed: BTreeMap<String, u64>,
    /// Clusters a drift check left unlisted because the watches vouched for them, by addon.
    vouched: BTreeMap<String, u64>,
    /// Reconciles asked for by a drift watch, by addon.
    wakeups: BTreeMap<String, u64>,
    /// Drift watches running.
    watches: usize,
}

impl Metrics {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Drops every series of `addon` (its `Addon` is gone): the series do not outlive it.
    pub fn forget(&self, addon: &str) {
        self.with(|m| {
            for series in [
                &mut m.reconciles,
                &mut m.errors,
                &mut m.skipped,
                &mut m.drifted,
                &mut m.corrected,
                &mut m.listed,
                &mut m.vouched,
                &mut m.wakeups,
            ] {
                series.remove(addon);
            }
        });
    }

    /// One reconcile of `addon` finished (`error`: it failed; `skipped`: nothing to do).
    pub fn reconciled(&self, addon: &str, took: Duration, error: bool, skipped: bool) {
        self.with(|m| {
            *m.reconciles.entry(addon.to_owned()).or_default() += 1;
            if error {
                *m.errors.entry(addon.to_owned()).or_default() += 1;
            }
            if skipped {
                *m.skipped.entry(addon.to_owned()).or_default() += 1;
            }
            let seconds = took.as_secs_f64();
            for (i, bound) in BUCKETS.iter().enumerate() {
                if seconds <= *bound {
                    m.buckets[i] += 1;
                }
            }
            m.duration_count += 1;
            m.duration_sum += seconds;
        });
    }

    /// An apply reached `cluster` with `outcome` (`applied`, `unchanged`, `failed`).
    pub fn applied(&self, cluster: &str, outcome: &str) {
        self.with(|m| {
            *m.applies
                .entry((cluster.to_owned(), outcome.to_owned()))
                .or_default() += 1;
        });
    }

    /// A drift check of `addon`: the objects it found drifted and applied again, the clusters
    /// it listed and those the watches vouched for.
    pub fn drift(&self, addon: &str, report: &crate::drift::Report) {
        let found = report.drifts.len();
        let corrected = report.corrected.len();
        let reached: std::collections::BTreeSet<&str> =
            report.places.iter().map(|p| p.cluster.as_str()).collect();
        let listed = reached.len().saturating_sub(report.vouched);
        self.with(|m| {
            *m.listed.entry(addon.to_owned()).or_default() += listed as u64;
            *m.vouched.entry(addon.to_owned()).or_default() += report.vouched as u64;
            *m.drifted.entry(addon.to_owned()).or_default() += found as u64;
            *m.corrected.entry(addon.to_owned()).or_default() += corrected as u64;
        });
    }

    /// The registries were listed again.
    pub fn relisted(&self) {
        self.with(|m| m.relists += 1);
    }

    /// A registry webhook call was accepted.
    pub fn webhook(&self) {
        self.with(|m| m.webhooks += 1);
    }

    /// A drift watch saw another writer change (or delete) an object of `addon`.
    pub fn drift_wakeup(&self, addon: &str) {
        self.with(|m| *m.wakeups.entry(addon.to_owned()).or_default() += 1);
    }

    /// The number of drift watches running.
    pub fn set_drift_watches(&self, watches: usize) {
        self.with(|m| m.watches = watches);
    }

    /// Whether this process leads.
    pub fn set_leader(&self, leader: bool) {
        self.with(|m| m.leader = leader);
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        self.with(|m| {
            let mut out = String::new();
            counter(
                &mut out,
                "addonctl_controller_reconciles_total",
                "Reconciles of Addon resources, by addon.",
                &m.reconciles,
            );
            counter(
                &mut out,
                "addonctl_controller_reconcile_errors_total",
                "Reconciles that failed, by addon.",
                &m.errors,
            );
            counter(
                &mut out,
                "addonctl_controller_reconciles_skipped_total",
                "Reconciles that found nothing to apply (unchanged Addon and record), by addon.",
                &m.skipped,
            );
            counter(
                &mut out,
                "addonctl_controller_drifted_objects_total",
                "Objects found different from the record by drift checks, by addon.",
                &m.drifted,
            );
            counter(
                &mut out,
                "addonctl_controller_drift_corrections_total",
                "Drifted objects applied again (policy `correct`), by addon.",
                &m.corrected,
            );
            counter(
                &mut out,
                "addonctl_controller_drift_clusters_listed_total",
                "Clusters a drift check listed (one metadata list per kind), by addon.",
                &m.listed,
            );
            counter(
                &mut out,
                "addonctl_controller_drift_clusters_vouched_total",
                "Clusters a drift check did not list: their watches saw nothing since they were last found in sync, by addon.",
                &m.vouched,
            );
            counter(
                &mut out,
                "addonctl_controller_drift_wakeups_total",
                "Reconciles started by a drift watch (an object changed or deleted by another writer, or a watch listed again after a gap), by addon.",
                &m.wakeups,
            );
            let _ = writeln!(
                out,
                "# HELP addonctl_controller_drift_watches Metadata watches following the addons' objects on the clusters.\n# TYPE addonctl_controller_drift_watches gauge\naddonctl_controller_drift_watches {}",
                m.watches
            );
            out.push_str("# HELP addonctl_controller_cluster_applies_total Applies per cluster and outcome.\n# TYPE addonctl_controller_cluster_applies_total counter\n");
            for ((cluster, outcome), n) in &m.applies {
                let _ = writeln!(
                    out,
                    "addonctl_controller_cluster_applies_total{{cluster=\"{}\",outcome=\"{}\"}} {n}",
                    escape(cluster),
                    escape(outcome)
                );
            }
            out.push_str("# HELP addonctl_controller_reconcile_duration_seconds Time of one reconcile.\n# TYPE addonctl_controller_reconcile_duration_seconds histogram\n");
            for (bound, n) in BUCKETS.iter().zip(m.buckets) {
                let _ = writeln!(
                    out,
                    "addonctl_controller_reconcile_duration_seconds_bucket{{le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "addonctl_controller_reconcile_duration_seconds_bucket{{le=\"+Inf\"}} {}\naddonctl_controller_reconcile_duration_seconds_sum {}\naddonctl_controller_reconcile_duration_seconds_count {}",
                m.duration_count, m.duration_sum, m.duration_count
            );
            let _ = writeln!(
                out,
                "# HELP addonctl_controller_leader Whether this process leads (1) or stands by (0).\n# TYPE addonctl_controller_leader gauge\naddonctl_controller_leader {}",
                u8::from(m.leader)
            );
            let _ = writeln!(
                out,
                "# HELP addonctl_controller_registry_relists_total Re-lists of the registries (poll or webhook).\n# TYPE addonctl_controller_registry_relists_total counter\naddonctl_controller_registry_relists_total {}\n# HELP addonctl_controller_registry_webhooks_total Registry webhook calls accepted.\n# TYPE addonctl_controller_registry_webhooks_total counter\naddonctl_controller_registry_webhooks_total {}",
                m.relists, m.webhooks
            );
            out
        })
    }
}

fn counter(out: &mut String, name: &str, help: &str, values: &BTreeMap<String, u64>) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for (addon, n) in values {
        let _ = writeln!(out, "{name}{{addon=\"{}\"}} {n}", escape(addon));
    }
}

/// A label value escaped as the exposition format wants (`\`, `"`, newline).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_counts_reconciles_errors_durations_and_leadership() {
        let metrics = Metrics::default();
        metrics.reconciled("fluxcd", Duration::from_millis(30), false, false);
        metrics.reconciled("fluxcd", Duration::from_secs(3), true, false);
        metrics.applied("m\"1", "applied");
        metrics.set_leader(true);
        let text = metrics.render();
        for line in [
            "addonctl_controller_reconciles_total{addon=\"fluxcd\"} 2",
            "addonctl_controller_reconcile_errors_total{addon=\"fluxcd\"} 1",
            "addonctl_controller_cluster_applies_total{cluster=\"m\\\"1\",outcome=\"applied\"} 1",
            "addonctl_controller_reconcile_duration_seconds_bucket{le=\"0.05\"} 1",
            "addonctl_controller_reconcile_duration_seconds_bucket{le=\"5\"} 2",
            "addonctl_controller_reconcile_duration_seconds_count 2",
            "addonctl_controller_leader 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }
}
