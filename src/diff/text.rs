//! The two sides of a changed object made comparable and shown: fields the server sets
//! stripped, secrets masked, and a unified diff of what is left.

use serde_json::{json, Value};
use similar::TextDiff;

pub use crate::model::secret::mask_strings;
use crate::model::secret::MASK;

/// Lines of context around each change in a unified diff.
const CONTEXT_LINES: usize = 3;

/// The object without what the server sets on every write and what no apply changes:
/// `managedFields`, `resourceVersion`, `generation`, `uid`, `creationTimestamp`, `selfLink`
/// and `status`.
pub fn strip(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "managedFields",
                "resourceVersion",
                "generation",
                "uid",
                "creationTimestamp",
                "selfLink",
            ] {
                metadata.remove(field);
            }
        }
    }
    object
}

/// Both sides with secrets masked: every value of a Secret's `data` and `stringData` (`******`
/// when both sides hold the same, `****** (before)` / `****** (after)` when it changes, as
/// `kubectl diff` does), and every string holding a `secret()` parameter's value.
pub fn mask_pair(before: &Value, after: &Value, secrets: &[String]) -> (Value, Value) {
    let mut before = before.clone();
    let mut after = after.clone();
    let secret_kind = |o: &Value| o.get("kind").and_then(Value::as_str) == Some("Secret");
    if secret_kind(&before) || secret_kind(&after) {
        for field in ["data", "stringData"] {
            let theirs = after.get(field).cloned().unwrap_or(Value::Null);
            let ours = before.get(field).cloned().unwrap_or(Value::Null);
            mask_data(&mut before, field, &theirs, "(before)");
            mask_data(&mut after, field, &ours, "(after)");
        }
    }
    mask_strings(&mut before, secrets);
    mask_strings(&mut after, secrets);
    (before, after)
}

/// Masks `object[field]`'s values, marking those that differ from `other`'s with `side`.
fn mask_data(object: &mut Value, field: &str, other: &Value, side: &str) {
    let Some(data) = object.get_mut(field).and_then(Value::as_object_mut) else {
        return;
    };
    for (key, value) in data.iter_mut() {
        *value = if other.get(key) == Some(value) {
            json!(MASK)
        } else {
            json!(format!("{MASK} {side}"))
        };
    }
}

/// The object as YAML (one document, no `---`).
pub fn yaml(object: &Value) -> String {
    serde_yaml::to_string(object).unwrap_or_else(|_| format!("{object:#}\n"))
}

/// A unified diff of two YAML texts (`live` → `dry-run`), with [`CONTEXT_LINES`] of context.
pub fn unified(before: &str, after: &str, name: &str) -> String {
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&format!("{name} (live)"), &format!("{name} (after)"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripping_drops_what_the_server_sets_and_keeps_the_rest() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "uid": "u", "resourceVersion": "7", "generation": 2,
                "creationTimestamp": "2020-01-01T00:00:00Z", "managedFields": [{}], "labels": {"x": "y"}},
            "data": {"k": "v"}, "status": {"phase": "x"}});
        assert_eq!(
            strip(&live),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn secret_data_is_masked_and_a_changed_key_says_so_on_each_side() {
        let before = json!({"kind": "Secret", "data": {"same": "c2FtZQ==", "changed": "b2xk"}});
        let after = json!({"kind": "Secret", "data": {"same": "c2FtZQ==", "changed": "bmV3"}});
        let (b, a) = mask_pair(&before, &after, &[]);
        assert_eq!(
            b["data"],
            json!({"same": MASK, "changed": "****** (before)"})
        );
        assert_eq!(
            a["data"],
            json!({"same": MASK, "changed": "****** (after)"})
        );
        let text = unified(&yaml(&b), &yaml(&a), "Secret `ns/s`");
        assert!(!text.contains("b2xk") && !text.contains("bmV3"), "{text}");
        assert!(text.contains("-  changed: '****** (before)'"), "{text}");
    }

    #[test]
    fn secret_parameter_values_are_masked_in_any_string() {
        let (b, a) = mask_pair(
            &json!({"kind": "ConfigMap", "data": {"url": "https://u:hunter22@x"}}),
            &json!({"kind": "ConfigMap", "data": {"url": "https://u:opensesame@x"}}),
            &["hunter22".to_owned(), "opensesame".to_owned()],
        );
        assert_eq!(b, a);
        assert_eq!(a["data"]["url"], json!(format!("https://u:{MASK}@x")));
    }

    #[test]
    fn the_unified_diff_names_the_changed_field_with_context() {
        let before = yaml(&json!({"data": {"a": "1", "replicas": "1", "z": "9"}}));
        let after = yaml(&json!({"data": {"a": "1", "replicas": "3", "z": "9"}}));
        let text = unified(&before, &after, "ConfigMap `ns/c`");
        assert!(text.contains("--- ConfigMap `ns/c` (live)"), "{text}");
        assert!(text.contains("-  replicas: '1'"), "{text}");
        assert!(text.contains("+  replicas: '3'"), "{text}");
        assert!(text.contains("   a: '1'"), "{text}");
    }
}
