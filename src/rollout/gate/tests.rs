use serde_json::json;

use super::*;
use crate::rollout::{plan, ClusterLabels, Rollout};

const NEW: &str = "1.1.0";
const OLD: &str = "1.0.0";

fn seen(cluster: &str, revision: Option<&str>, healthy: bool) -> Observation {
    Observation {
        cluster: cluster.to_owned(),
        revision: revision.map(str::to_owned),
        healthy,
        reason: (!healthy).then(|| "Deployment `web`: 0 of 2 ready".to_owned()),
        failed: false,
    }
}

fn limits(soak_s: u64, max_failures: u32, deadline_s: u64) -> GateLimits {
    GateLimits {
        soak_ms: soak_s * 1000,
        max_failures,
        deadline_ms: deadline_s * 1000,
    }
}

fn gate(clusters: &[&str]) -> GateState {
    let names: Vec<String> = clusters.iter().map(|c| (*c).to_owned()).collect();
    GateState::new(&names, 0)
}

#[test]
fn health_observed_on_the_old_revision_never_counts() {
    let mut state = gate(&["m1"]);
    let limits = limits(10, 0, 600);
    for t in [0, 5_000, 20_000, 60_000] {
        let verdict = evaluate(&mut state, NEW, &[seen("m1", Some(OLD), true)], limits, t);
        let Verdict::Waiting { pending } = verdict else {
            panic!("passed on the old revision: {verdict:?}");
        };
        assert!(pending[0].1.contains("revision `1.0.0`"), "{pending:?}");
    }
    // On the new one: soaks from its first healthy observation.
    let on_new = [seen("m1", Some(NEW), true)];
    assert!(matches!(
        evaluate(&mut state, NEW, &on_new, limits, 61_000),
        Verdict::Waiting { .. }
    ));
    assert_eq!(
        evaluate(&mut state, NEW, &on_new, limits, 71_000),
        Verdict::Passed { tolerated: vec![] }
    );
}

#[test]
fn an_unhealthy_observation_resets_the_soak() {
    let mut state = gate(&["m1", "m2"]);
    let limits = limits(10, 0, 600);
    let healthy = [seen("m1", Some(NEW), true), seen("m2", Some(NEW), true)];
    evaluate(&mut state, NEW, &healthy, limits, 0);
    let blip = [seen("m1", Some(NEW), true), seen("m2", Some(NEW), false)];
    evaluate(&mut state, NEW, &blip, limits, 8_000);
    let verdict = evaluate(&mut state, NEW, &healthy, limits, 12_000);
    let Verdict::Waiting { pending } = verdict else {
        panic!("{verdict:?}");
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].0, "m2");
    assert_eq!(
        evaluate(&mut state, NEW, &healthy, limits, 22_000),
        Verdict::Passed { tolerated: vec![] }
    );
}

#[test]
fn the_deadline_fails_clusters_not_soaked_by_then() {
    let mut state = gate(&["m1", "m2"]);
    let limits = limits(5, 0, 60);
    let observations = [seen("m1", Some(NEW), true), seen("m2", Some(NEW), false)];
    assert!(matches!(
        evaluate(&mut state, NEW, &observations, limits, 30_000),
        Verdict::Waiting { .. }
    ));
    let verdict = evaluate(&mut state, NEW, &observations, limits, 60_000);
    let Verdict::Failed { failures, reason } = verdict else {
        panic!("{verdict:?}");
    };
    assert_eq!(reason, "the progress deadline passed");
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].0, "m2");
    assert!(failures[0].1.contains("0 of 2 ready"), "{failures:?}");
}

#[test]
fn failures_within_max_failures_pass_and_beyond_fail_at_once() {
    let mut failed = seen("m2", None, false);
    failed.failed = true;
    failed.reason = Some("connection refused".to_owned());
    let observations = [seen("m1", Some(NEW), true), failed];
    let mut tolerant = gate(&["m1", "m2"]);
    evaluate(&mut tolerant, NEW, &observations, limits(1, 1, 600), 0);
    assert_eq!(
        evaluate(&mut tolerant, NEW, &observations, limits(1, 1, 600), 1_000),
        Verdict::Passed {
            tolerated: vec![("m2".to_owned(), "connection refused".to_owned())]
        }
    );
    let mut strict = gate(&["m1", "m2"]);
    let verdict = evaluate(&mut strict, NEW, &observations, limits(1, 0, 600), 0);
    assert!(
        matches!(&verdict, Verdict::Failed { reason, .. } if reason.contains("maxFailures")),
        "{verdict:?}"
    );
}

fn two_stage_plan() -> crate::rollout::RolloutPlan {
    let rollout: Rollout = serde_json::from_value(json!({
        "stages": [
            {"name": "canary", "clusterSelector": {"matchLabels": {"tier": "canary"}}, "soakSeconds": 1},
            {"name": "rest", "clusterSelector": {"matchLabels": {"tier": "rest"}}, "maxConcurrency": 1},
        ],
        "progressDeadlineSeconds": 60,
    }))
    .unwrap();
    let cluster = |name: &str, tier: &str| ClusterLabels {
        name: name.to_owned(),
        labels: [("tier".to_owned(), tier.to_owned())].into(),
    };
    plan(
        &rollout,
        &[
            cluster("m1", "canary"),
            cluster("m2", "rest"),
            cluster("m3", "rest"),
        ],
    )
}

#[test]
fn the_state_advances_batch_by_batch_and_survives_a_restart() {
    let plan = two_stage_plan();
    let mut state = RolloutState::new(NEW);
    assert_eq!(state.cumulative(&plan), ["m1"]);
    state.settle(&plan, &Verdict::Passed { tolerated: vec![] });
    assert_eq!(state.cumulative(&plan), ["m1", "m2"]);
    // A controller restarts: the state comes back from its status.
    let stored = serde_json::to_value(&state).unwrap();
    let mut state: RolloutState = serde_json::from_value(stored).unwrap();
    assert_eq!((state.stage, state.batch), (1, 0));
    state.settle(&plan, &Verdict::Passed { tolerated: vec![] });
    assert_eq!(state.cumulative(&plan), ["m1", "m2", "m3"]);
    state.settle(&plan, &Verdict::Passed { tolerated: vec![] });
    assert_eq!(state.phase, Phase::Succeeded);
    assert!(state.current(&plan).is_none());
}

#[test]
fn a_failed_gate_stops_the_rollout_with_the_clusters_and_reasons() {
    let plan = two_stage_plan();
    let mut state = RolloutState::new(NEW);
    assert_eq!(state.limits(&plan).unwrap().soak_ms, 1_000);
    state.settle(
        &plan,
        &Verdict::Failed {
            failures: vec![("m1".to_owned(), "never ready".to_owned())],
            reason: "the progress deadline passed".to_owned(),
        },
    );
    assert_eq!(state.phase, Phase::Failed);
    assert!(state.current(&plan).is_none());
    assert_eq!(state.failures[0].stage, "canary");
    assert_eq!(state.done, Vec::<String>::new());
    assert!(state.message.as_deref().unwrap().contains("canary"));
}

#[test]
fn the_next_change_is_the_first_soak_to_end_or_the_deadline() {
    let mut state = gate(&["m1", "m2", "m3"]);
    let limits = limits(10, 1, 60);
    // Nobody healthy: only the deadline can change the verdict.
    evaluate(&mut state, NEW, &[], limits, 1_000);
    assert_eq!(state.next_change_ms(limits, 1_000), 60_000);
    // m2 healthy at 2 s, m1 at 4 s: m2's soak ends first.
    evaluate(
        &mut state,
        NEW,
        &[seen("m2", Some(NEW), true)],
        limits,
        2_000,
    );
    let both = [seen("m1", Some(NEW), true), seen("m2", Some(NEW), true)];
    evaluate(&mut state, NEW, &both, limits, 4_000);
    assert_eq!(state.next_change_ms(limits, 4_000), 12_000);
    // Once m2 soaked, m1's end is next; a failed cluster's soak does not count.
    assert_eq!(state.next_change_ms(limits, 12_000), 14_000);
    let failed = Observation {
        failed: true,
        ..seen("m1", Some(NEW), false)
    };
    evaluate(
        &mut state,
        NEW,
        &[failed, seen("m2", Some(NEW), true)],
        limits,
        12_500,
    );
    assert_eq!(state.next_change_ms(limits, 12_500), 60_000);
}
