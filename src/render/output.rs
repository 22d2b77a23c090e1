//! Printable forms of rendered objects (DESIGN §2.4): a multi-document YAML stream, or a `v1`
//! `List` in JSON.

use serde_json::{json, Value};

/// The output format of `render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A multi-document YAML stream, one document per object.
    Yaml,
    /// A `v1` `List` holding the objects, pretty-printed JSON.
    Json,
}

/// Formats objects in the given format.
pub fn format_objects(objects: &[Value], format: Format) -> Result<String, crate::yaml::YamlError> {
    match format {
        Format::Yaml => {
            let mut out = String::new();
            for object in objects {
                out.push_str("---\n");
                out.push_str(&crate::yaml::to_string(object)?);
            }
            Ok(out)
        }
        Format::Json => {
            let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
            serde_json::to_string_pretty(&list)
                .map(|s| s + "\n")
                .map_err(|e| crate::yaml::YamlError {
                    message: e.to_string(),
                })
        }
    }
}
