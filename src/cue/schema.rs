//! `parameter.cue` → JSON Schema, with the lowering config templates use for
//! `template.parameter` (types, defaults, enums, bounds, patterns, `// +usage=` descriptions).

use super::{Error, ErrorKind, Limits, Position, Source};

/// The JSON Schema of the `parameter` field of a `parameter.cue` file.
///
/// The file must also be valid for the evaluator (checked first, with `others`, the other files
/// of its package, so a syntax error is reported the same way for schema and rendering). A
/// definition `parameter` refers to may be declared in any of them. A file without `parameter`
/// has an empty object schema.
pub(crate) fn parameter_schema(
    source: &Source,
    others: &[Source],
    limits: &Limits,
) -> Result<serde_json::Value, Error> {
    let mut package = vec![source.clone()];
    package.extend(others.iter().cloned());
    super::evaluate(&package, limits)?;
    let texts: Vec<&str> = others.iter().map(|o| o.text.as_str()).collect();
    match super::structural::parameter_schema_from_cue(&source.text, &texts) {
        Ok(Some(schema)) => Ok(schema),
        Ok(None) => Ok(serde_json::json!({"type": "object", "properties": {}})),
        Err(e) => {
            let mismatch = e
                .message
                .starts_with(super::structural::DEFAULT_TYPE_MISMATCH);
            Err(Error {
                kind: if e.message.contains("beyond the supported") {
                    ErrorKind::Unsupported
                } else if mismatch {
                    ErrorKind::Conflict
                } else {
                    ErrorKind::Syntax
                },
                // A default of the wrong type names its field itself.
                path: (!mismatch).then(|| "parameter".into()),
                message: e.message.replace("`template.parameter`", "`parameter`"),
                positions: vec![Position {
                    file: source.name.clone(),
                    line: u32::try_from(e.line).unwrap_or(u32::MAX),
                    column: u32::try_from(e.column).unwrap_or(u32::MAX),
                }],
            })
        }
    }
}
