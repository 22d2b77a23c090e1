//! The pure planner: clusters (names and labels) → the rollout's stages, each with its clusters
//! in batches.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Rollout;

/// A cluster as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterLabels {
    /// Its name.
    pub name: String,
    /// Its labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// One stage, planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedStage {
    /// The stage's name.
    pub name: String,
    /// Its clusters, in batches (in name order), applied one batch after the other.
    pub batches: Vec<Vec<String>>,
    /// Failed clusters it tolerates.
    pub max_failures: u32,
    /// Soak time of each batch, in seconds.
    pub soak_seconds: u64,
}

impl PlannedStage {
    /// Every cluster of the stage.
    pub fn clusters(&self) -> impl Iterator<Item = &String> {
        self.batches.iter().flatten()
    }
}

/// The rollout, planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPlan {
    /// The stages, in order (a stage selecting no cluster is kept, with no batch).
    pub stages: Vec<PlannedStage>,
    /// Clusters no stage selects: never touched.
    pub unselected: Vec<String>,
    /// Progress deadline of each gate, in seconds.
    pub progress_deadline_seconds: u64,
}

impl RolloutPlan {
    /// Every cluster some stage covers.
    pub fn selected(&self) -> Vec<String> {
        self.stages
            .iter()
            .flat_map(|s| s.clusters().cloned())
            .collect()
    }
}

/// Plans a rollout: each cluster goes to the first stage whose selector selects it (its labels
/// and [`super::CLUSTER_NAME_LABEL`], its name); a stage's clusters (in name order) are cut into
/// batches of its `maxConcurrency`.
pub fn plan(rollout: &Rollout, clusters: &[ClusterLabels]) -> RolloutPlan {
    let mut sorted: Vec<&ClusterLabels> = clusters.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted.dedup_by(|a, b| a.name == b.name);
    let labelled: Vec<BTreeMap<String, String>> = sorted
        .iter()
        .map(|c| {
            let mut labels = c.labels.clone();
            labels
                .entry(super::CLUSTER_NAME_LABEL.to_owned())
                .or_insert_with(|| c.name.clone());
            labels
        })
        .collect();
    let mut taken = vec![false; sorted.len()];
    let mut stages = Vec::with_capacity(rollout.stages.len());
    for stage in &rollout.stages {
        let mut mine = Vec::new();
        for (i, cluster) in sorted.iter().enumerate() {
            if !taken[i] && stage.cluster_selector.matches(&labelled[i]) {
                taken[i] = true;
                mine.push(cluster.name.clone());
            }
        }
        let size = stage
            .max_concurrency
            .map_or(mine.len(), |m| m.batch_size(mine.len()))
            .max(1);
        stages.push(PlannedStage {
            name: stage.name.clone(),
            batches: mine.chunks(size).map(<[String]>::to_vec).collect(),
            max_failures: stage.max_failures,
            soak_seconds: stage.soak_seconds,
        });
    }
    RolloutPlan {
        stages,
        unselected: sorted
            .iter()
            .zip(&taken)
            .filter(|(_, t)| !**t)
            .map(|(c, _)| c.name.clone())
            .collect(),
        progress_deadline_seconds: rollout.progress_deadline_seconds,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cluster(name: &str, labels: &[(&str, &str)]) -> ClusterLabels {
        ClusterLabels {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    fn fleet() -> Vec<ClusterLabels> {
        let mut clusters = vec![
            cluster("stage-1", &[("env", "staging")]),
            cluster("lab", &[("env", "lab")]),
            cluster("local", &[]),
        ];
        for i in (1..=10).rev() {
            clusters.push(cluster(&format!("prod-{i:02}"), &[("env", "prod")]));
        }
        clusters
    }

    fn rollout(stages: serde_json::Value) -> Rollout {
        let rollout: Rollout = serde_json::from_value(json!({"stages": stages})).unwrap();
        rollout.validate().unwrap();
        rollout
    }

    #[test]
    fn each_cluster_goes_to_the_first_stage_selecting_it_and_the_rest_are_reported() {
        let planned = plan(
            &rollout(json!([
                {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}}},
                // Overlaps the first stage: `stage-1` stays there.
                {"name": "all-but-lab", "clusterSelector": {"matchExpressions": [
                    {"key": "env", "operator": "NotIn", "values": ["lab"]},
                    {"key": "env", "operator": "Exists"}]}},
            ])),
            &fleet(),
        );
        assert_eq!(planned.stages[0].batches, [["stage-1"]]);
        let second: Vec<&String> = planned.stages[1].clusters().collect();
        assert_eq!(second.len(), 10);
        assert_eq!(second[0], "prod-01");
        assert_eq!(planned.unselected, ["lab", "local"]);
        assert_eq!(planned.progress_deadline_seconds, 600);
    }

    #[test]
    fn a_stage_selects_a_cluster_by_its_name_local_included() {
        let planned = plan(
            &rollout(json!([
                {"name": "control-plane", "clusterSelector": {"matchLabels": {
                    "addonctl.io/cluster-name": "local"}}},
                {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}}},
            ])),
            &fleet(),
        );
        assert_eq!(planned.stages[0].batches, [["local"]]);
        assert_eq!(planned.stages[1].batches, [["stage-1"]]);
        assert!(!planned.unselected.contains(&"local".to_owned()));
    }

    #[test]
    fn percent_concurrency_rounds_up_and_numbers_cut_exact_batches() {
        let planned = plan(
            &rollout(json!([
                {"name": "a", "clusterSelector": {"matchLabels": {"env": "prod"}},
                 "maxConcurrency": "25%"},
            ])),
            &fleet(),
        );
        let sizes: Vec<usize> = planned.stages[0].batches.iter().map(Vec::len).collect();
        assert_eq!(sizes, [3, 3, 3, 1], "25% of 10 is 3 (rounded up)");
        let planned = plan(
            &rollout(json!([
                {"name": "a", "clusterSelector": {"matchLabels": {"env": "prod"}},
                 "maxConcurrency": 4},
            ])),
            &fleet(),
        );
        let sizes: Vec<usize> = planned.stages[0].batches.iter().map(Vec::len).collect();
        assert_eq!(sizes, [4, 4, 2]);
        let planned = plan(
            &rollout(json!([
                {"name": "a", "clusterSelector": {"matchLabels": {"env": "staging"}},
                 "maxConcurrency": "1%"},
            ])),
            &fleet(),
        );
        assert_eq!(planned.stages[0].batches, [["stage-1"]], "at least one");
    }

    #[test]
    fn a_stage_selecting_nothing_has_no_batch_and_duplicates_count_once() {
        let mut clusters = fleet();
        clusters.push(cluster("stage-1", &[("env", "staging")]));
        let planned = plan(
            &rollout(json!([
                {"name": "none", "clusterSelector": {"matchLabels": {"env": "nowhere"}}},
                {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}}},
            ])),
            &clusters,
        );
        assert!(planned.stages[0].batches.is_empty());
        assert_eq!(planned.stages[1].batches, [["stage-1"]]);
        assert_eq!(planned.selected(), ["stage-1"]);
        assert_eq!(planned.unselected.len(), 12);
    }
}
