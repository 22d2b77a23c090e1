//! Comparing the fields addonctl applied (the desired object) with the live object, and the
//! object a correction applies.

use serde_json::{Map, Value};

use super::path::{display, FieldPath, Segment};
use super::MAX_PATHS;

/// Deepest nesting compared (deeper values are compared whole).
const MAX_DEPTH: usize = 64;

/// The paths where `live` differs from `desired` in a field `desired` sets, outside `excluded`:
/// `apiVersion`, `kind`, `status` and the server's metadata are not compared (of `metadata`,
/// only `labels` and `annotations`). At most [`MAX_PATHS`] paths (the last one then says how
/// many more there are).
pub fn diff(desired: &Value, live: &Value, excluded: &[FieldPath]) -> Vec<String> {
    let mut found = Vec::new();
    let Some(desired) = desired.as_object() else {
        return found;
    };
    let mut path = Vec::new();
    for (key, value) in desired {
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for part in ["labels", "annotations"] {
                    if let Some(wanted) = value.get(part) {
                        path.extend([Segment::Key(key.clone()), Segment::Key(part.to_owned())]);
                        let have = live.get(key).and_then(|m| m.get(part));
                        walk(wanted, have, &mut path, excluded, &mut found);
                        path.clear();
                    }
                }
            }
            _ => {
                path.push(Segment::Key(key.clone()));
                walk(value, live.get(key), &mut path, excluded, &mut found);
                path.clear();
            }
        }
    }
    if found.len() > MAX_PATHS {
        let more = found.len() - (MAX_PATHS - 1);
        found.truncate(MAX_PATHS - 1);
        found.push(format!("… and {more} more"));
    }
    found
}

fn walk(
    desired: &Value,
    live: Option<&Value>,
    path: &mut Vec<Segment>,
    excluded: &[FieldPath],
    found: &mut Vec<String>,
) {
    if excluded.iter().any(|e| e.covers(path)) || desired.is_null() {
        return;
    }
    let Some(live) = live else {
        found.push(display(path));
        return;
    };
    match (desired, live) {
        (Value::Object(wanted), Value::Object(have)) if path.len() < MAX_DEPTH => {
            for (key, value) in wanted {
                path.push(Segment::Key(key.clone()));
                walk(value, have.get(key), path, excluded, found);
                path.pop();
            }
        }
        (Value::Array(wanted), Value::Array(have))
            if wanted.len() == have.len() && path.len() < MAX_DEPTH =>
        {
            for (i, (value, there)) in wanted.iter().zip(have).enumerate() {
                path.push(Segment::Index(i));
                walk(value, Some(there), path, excluded, found);
                path.pop();
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        _ if desired == live => {}
        _ => found.push(display(path)),
    }
}

/// `desired` as a correction applies it: without the excluded paths whose live value differs
/// from the desired one (their new owner keeps them; a path whose live value is the desired one
/// stays, so addonctl keeps owning it and nothing changes there).
pub fn without_excluded(desired: &Value, live: &Value, excluded: &[FieldPath]) -> Value {
    let mut out = desired.clone();
    for exclusion in excluded {
        strip(&mut out, Some(live), &exclusion.0);
    }
    out
}

fn strip(value: &mut Value, live: Option<&Value>, rest: &[Segment]) {
    let Some((first, rest)) = rest.split_first() else {
        return;
    };
    let last = rest.is_empty();
    match value {
        Value::Object(map) => {
            let keys: Vec<String> = match first {
                Segment::Key(k) if map.contains_key(k) => vec![k.clone()],
                Segment::Any => map.keys().cloned().collect(),
                _ => Vec::new(),
            };
            for key in keys {
                let there = live.and_then(|l| l.get(&key));
                if last {
                    let same = map.get(&key).zip(there).is_some_and(|(a, b)| a == b);
                    if !same {
                        map.remove(&key);
                    }
                } else if let Some(child) = map.get_mut(&key) {
                    strip(child, there, rest);
                }
            }
            remove_empty(map);
        }
        Value::Array(items) if !last => {
            for (i, item) in items.iter_mut().enumerate() {
                if matches!(first, Segment::Any) || first == &Segment::Index(i) {
                    strip(item, live.and_then(|l| l.get(i)), rest);
                }
            }
        }
        _ => {}
    }
}

/// Drops mappings emptied by [`strip`] (an empty `spec: {}` applies as "no fields").
fn remove_empty(map: &mut Map<String, Value>) {
    map.retain(|_, v| !matches!(v, Value::Object(m) if m.is_empty()));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn paths(list: &[&str]) -> Vec<FieldPath> {
        list.iter().map(|p| FieldPath::parse(p).unwrap()).collect()
    }

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "web", "image": image}
            ]}}},
        })
    }

    /// As the API server stores it: defaults, server metadata and status added.
    fn stored(replicas: i64, image: &str) -> Value {
        let mut live = deployment(replicas, image);
        live["metadata"]["uid"] = json!("u-1");
        live["metadata"]["resourceVersion"] = json!("42");
        live["metadata"]["labels"]["extra"] = json!("theirs");
        live["spec"]["strategy"] = json!({"type": "RollingUpdate"});
        live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("Always");
        live["status"] = json!({"replicas": replicas});
        live
    }

    #[test]
    fn defaults_server_metadata_and_status_are_no_drift() {
        assert!(diff(&deployment(2, "a:1"), &stored(2, "a:1"), &[]).is_empty());
    }

    #[test]
    fn changed_and_removed_fields_are_reported_by_path() {
        let mut live = stored(3, "a:2");
        live["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("app");
        assert_eq!(
            diff(&deployment(2, "a:1"), &live, &[]),
            [
                "metadata.labels.app",
                "spec.replicas",
                "spec.template.spec.containers[0].image"
            ]
        );
    }

    #[test]
    fn excluded_paths_are_not_compared() {
        let excluded = paths(&["spec.replicas"]);
        assert!(diff(&deployment(2, "a:1"), &stored(5, "a:1"), &excluded).is_empty());
        assert_eq!(
            diff(&deployment(2, "a:1"), &stored(5, "a:2"), &excluded),
            ["spec.template.spec.containers[0].image"]
        );
    }

    #[test]
    fn a_list_of_another_length_is_one_changed_path() {
        let mut live = stored(2, "a:1");
        live["spec"]["template"]["spec"]["containers"] = json!([]);
        assert_eq!(
            diff(&deployment(2, "a:1"), &live, &[]),
            ["spec.template.spec.containers"]
        );
    }

    #[test]
    fn many_changed_paths_are_capped() {
        let desired =
            json!({"data": (0..50).map(|i| (format!("k{i}"), json!("v"))).collect::<Map<_, _>>()});
        let found = diff(&desired, &json!({"data": {}}), &[]);
        assert_eq!(found.len(), MAX_PATHS);
        assert!(found[MAX_PATHS - 1].contains("more"), "{found:?}");
    }

    #[test]
    fn a_correction_leaves_out_excluded_paths_changed_by_others() {
        let excluded = paths(&["spec.replicas"]);
        let applied = without_excluded(&deployment(2, "a:1"), &stored(5, "a:2"), &excluded);
        assert_eq!(applied["spec"].get("replicas"), None);
        assert_eq!(
            applied["spec"]["template"]["spec"]["containers"][0]["image"],
            "a:1"
        );
        // Unchanged there: kept, so that applying it changes nothing.
        let applied = without_excluded(&deployment(2, "a:1"), &stored(2, "a:2"), &excluded);
        assert_eq!(applied["spec"]["replicas"], 2);
        let images = paths(&["spec.template.spec.containers[*].image"]);
        let applied = without_excluded(&deployment(2, "a:1"), &stored(2, "a:2"), &images);
        assert_eq!(
            applied["spec"]["template"]["spec"]["containers"][0].get("image"),
            None
        );
    }
}
