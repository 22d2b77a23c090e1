//! Kubernetes Events on the `Addon` (reporter `addonctl-controller`, `events.k8s.io/v1` through
//! kube-runtime's recorder; a new Event per outcome): `Applied`, `ApplyFailed`, `Drifted`, `DriftCorrected`, `Stalled`,
//! `DisableRefused`. Each outcome is one call from the reconcile; each call publishes at most
//! one Event. A repeated outcome (the same reason and message on the same `Addon`) is not
//! published again within [`REPEAT`], so a drifted or failing `Addon` does not write an Event
//! every pass. Messages are the status's (objects, paths, errors), never a Secret's value.
//! Publishing never fails a reconcile: a refused Event is logged.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Resource as _, ResourceExt as _};

use super::crd::Addon;
use super::engine::Applied;
use super::Error;

/// The reporting controller.
pub const REPORTER: &str = "addonctl-controller";
/// How long the same outcome is not published again.
const REPEAT: Duration = Duration::from_secs(600);
/// The longest note Kubernetes takes (1 kB), with room for the ellipsis.
const MAX_NOTE: usize = 1000;
/// Outcomes remembered at most (the oldest are forgotten beyond).
const MAX_REMEMBERED: usize = 4096;

/// What was published lately: (`Addon` uid, reason) → (message, when).
type Recent = HashMap<(String, &'static str), (String, Instant)>;

/// The recorder of one leadership term and what it published lately.
pub(super) struct Events {
    client: kube::Client,
    reporter: Reporter,
    recent: Mutex<Recent>,
}

impl Events {
    /// A recorder on `client`.
    pub fn new(client: kube::Client) -> Self {
        let reporter = Reporter {
            controller: REPORTER.to_owned(),
            instance: Some(crate::state::lease::holder_identity("controller")),
        };
        Events {
            client,
            reporter,
            recent: Mutex::new(HashMap::new()),
        }
    }

    async fn publish(
        &self,
        addon: &Addon,
        type_: EventType,
        reason: &'static str,
        note: String,
        repeats: bool,
    ) {
        let note = bounded(note);
        let key = (addon.uid().unwrap_or_else(|| addon.name_any()), reason);
        if !repeats {
            let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((last, at)) = recent.get(&key) {
                if *last == note && at.elapsed() < REPEAT {
                    return;
                }
            }
            if recent.len() >= MAX_REMEMBERED {
                recent.retain(|_, (_, at)| at.elapsed() < REPEAT);
            }
            recent.insert(key, (note.clone(), Instant::now()));
        }
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note: Some(note),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        // A recorder of its own: kube-runtime's cache would patch the first Event of a reason
        // (its count) and keep its old note; repeats are bounded above instead.
        let recorder = Recorder::new(self.client.clone(), self.reporter.clone());
        if let Err(e) = recorder.publish(&event, &addon.object_ref(&())).await {
            tracing::warn!(addon = %addon.name_any(), reason, "cannot publish an Event: {e}");
        }
    }
}

/// `Applied`: the version and clusters of an apply that changed something.
pub(super) async fn applied(events: &Events, addon: &Addon, applied: &Applied) {
    if applied.unchanged {
        return;
    }
    let clusters: Vec<String> = applied
        .clusters
        .iter()
        .map(|c| format!("{} ({})", c.name, c.outcome))
        .collect();
    let where_ = if clusters.is_empty() {
        "the control plane".to_owned()
    } else {
        clusters.join(", ")
    };
    let note = format!("applied version {} to {where_}", applied.version);
    tracing::info!(addon = %addon.name_any(), "{note}");
    let type_ = if applied.clusters.iter().any(|c| c.outcome == "failed") {
        EventType::Warning
    } else {
        EventType::Normal
    };
    events.publish(addon, type_, "Applied", note, true).await;
}

/// `ApplyFailed` and, once the retry budget is spent, `Stalled`.
pub(super) async fn failed(
    events: &Events,
    backoff: &super::Backoff,
    addon: &Addon,
    error: &Error,
    failures: u32,
) {
    // No count in the message: the same failure again is the same outcome (not published
    // again within `REPEAT`).
    let reason = if matches!(error, Error::Unauthorized(_)) {
        "Refused"
    } else {
        "ApplyFailed"
    };
    let note = format!("reconcile failed: {error}");
    events
        .publish(addon, EventType::Warning, reason, note, false)
        .await;
    let budget = backoff.budget;
    if failures >= budget {
        let note = format!(
            "the retry budget ({budget} failures in a row) is spent: retried every {}s only; fix the cause or edit the Addon",
            backoff.max.as_secs()
        );
        events
            .publish(addon, EventType::Warning, "Stalled", note, false)
            .await;
    }
}

/// `Drifted` (objects left as they are, with their paths) and `DriftCorrected`.
pub(super) async fn drift(events: &Events, addon: &Addon, report: &crate::drift::Report) {
    let left: Vec<String> = report.uncorrected().map(ToString::to_string).collect();
    let corrected: Vec<String> = report.corrected.iter().map(ToString::to_string).collect();
    if !left.is_empty() {
        let note = format!(
            "{} object(s) differ from the record: {}",
            left.len(),
            left.join("; ")
        );
        events
            .publish(addon, EventType::Warning, "Drifted", note, false)
            .await;
    }
    if !corrected.is_empty() {
        let note = format!("applied again: {}", corrected.join("; "));
        events
            .publish(addon, EventType::Normal, "DriftCorrected", note, true)
            .await;
    }
}

/// `Flagged`: what the plan's review flagged and `spec.allow` allowed, applied.
pub(super) async fn flagged(events: &Events, addon: &Addon, flags: &[String]) {
    let note = format!(
        "applied what the review flags, as `spec.allow` allows: {}",
        flags.join("; ")
    );
    events
        .publish(addon, EventType::Warning, "Flagged", note, false)
        .await;
}

/// `DisableRefused`: the `Addon` is being deleted and the addon cannot be disabled.
pub(super) async fn disable_refused(events: &Events, addon: &Addon, error: &Error) {
    let note = format!("the Addon is being deleted but the addon cannot be disabled: {error}");
    events
        .publish(addon, EventType::Warning, "DisableRefused", note, false)
        .await;
}

/// At most [`MAX_NOTE`] bytes, cut at a character boundary.
fn bounded(mut note: String) -> String {
    if note.len() > MAX_NOTE {
        let mut end = MAX_NOTE;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push('…');
    }
    note
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_note_is_cut_at_a_character_boundary() {
        let note = super::bounded("é".repeat(800));
        assert!(note.len() <= super::MAX_NOTE + '…'.len_utf8());
        assert!(note.ends_with('…'));
        assert_eq!(super::bounded("short".to_owned()), "short");
    }
}
