//! Structural conversion of KubeVela CUE files, without evaluating CUE.
//!
//! Two kinds of file are understood:
//!
//! * **X-Definitions** (`definitions/**.cue`): optional `package`/`import` declarations, exactly
//!   one metadata field `"<name>": { type, alias?, description?, annotations?, labels?,
//!   attributes? }` and a `template: { … }` block. The metadata block must be literal CUE; the
//!   template block is copied verbatim (with the imports prepended) into
//!   `spec.schematic.cue.template` of the `<Type>Definition`, as KubeVela's `FromCUEString` does.
//! * **Config templates** (`config-templates/**.cue`): a literal `metadata: { name, alias?,
//!   description?, sensitive?, scope? }` plus `template: { parameter: {…}, … }`. The result is the
//!   `config-template-<name>` ConfigMap KubeVela's config factory stores, with a JSON Schema of
//!   `template.parameter` computed for a common subset of CUE.
//!
//! The implementation is a small hand-written lexer (with CUE's automatic comma insertion) and
//! recursive-descent parsers over its tokens:
//!
//! * a **literal** parser for metadata (strings in every CUE form, numbers, bools, null, lists,
//!   structs, `a: b: c` shorthand, repeated keys unified by deep merge);
//! * a **skimming** parser that walks arbitrary CUE only to find bracket ends and field names;
//! * a **schema** parser for `template.parameter`.
//!
//! All input is untrusted: every function returns a [`CueError`] with a line and column instead
//! of panicking, and nesting deeper than 128 levels is refused.

use serde_json::Value;

pub use crate::cue::lexer::CueError;

mod config_template;
mod cursor;
mod definition;
mod file;
mod literal;
mod lowering;
mod references;
mod schema;
#[cfg(test)]
mod tests_config;
#[cfg(test)]
mod tests_definitions;
#[cfg(test)]
mod tests_fixtures;
#[cfg(test)]
mod tests_parameters;

#[allow(unused_imports)]
use crate::cue::lexer::{
    decode_number, decode_string, error, not_literal, strip_bom, Kind, Lexer, Pos, Result, Token,
    MAX_DEPTH,
};
use config_template::{
    config_map, expanded_writer, find_single_field, ConfigMetadata, Loose, LooseField,
};
use cursor::{Label, Marker, Parser};
use definition::{build_definition, expect_str, object, validate_name};
use literal::{
    lit_lookup, lit_to_json, reject_non_literal_label, short, unify, Lit, LitField, LitKind,
};
pub(crate) use lowering::DEFAULT_TYPE_MISMATCH;

pub(super) const DEFINITION_API_VERSION: &str = "core.oam.dev/v1beta1";
pub(super) const DESCRIPTION_ANNOTATION: &str = "definition.oam.dev/description";
pub(super) const ALIAS_ANNOTATION: &str = "definition.oam.dev/alias";
pub(super) const USER_PREFIX: &str = "custom.definition.oam.dev/";

pub(super) const CONFIG_TEMPLATE_PREFIX: &str = "config-template-";
pub(super) const CONFIG_CATALOG_LABEL: &str = "config.oam.dev/catalog";
pub(super) const CONFIG_CATALOG_VALUE: &str = "velacore-config";
pub(super) const CONFIG_SCOPE_LABEL: &str = "config.oam.dev/scope";
pub(super) const CONFIG_DESCRIPTION_ANNOTATION: &str = "config.oam.dev/description";
pub(super) const CONFIG_ALIAS_ANNOTATION: &str = "config.oam.dev/alias";
pub(super) const CONFIG_SENSITIVE_ANNOTATION: &str = "config.oam.dev/sensitive";
/// The declaration KubeVela appends to every config template before storing it.
pub(super) const CONFIG_DEFAULT_CONTEXT: &str =
    "\n\tcontext: {\n\t\tname: string\n\t\tnamespace: string\n\t}\n";

pub(super) const SUBSET_HINT: &str =
    "supported: string, int, float, number, bool, `*default | type`, \
enums `\"a\" | \"b\"`, optional `name?:`, lists `[...T]`, structs, `[string]: T` maps, \
`&` with `>=`/`<=`/`>`/`<` bounds and `=~` patterns";

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// Convert a KubeVela CUE X-Definition file into a `<Type>Definition` object.
///
/// The object is `core.oam.dev/v1beta1` with the kind chosen by the metadata `type`
/// (`component`, `trait`, `policy`, `workflow-step` or `workload`), placed in `namespace`.
/// `description` and `alias` become the `definition.oam.dev/description` and
/// `definition.oam.dev/alias` annotations; `annotations` and `labels` keys that contain
/// `oam.dev` are kept and the others are prefixed with `custom.definition.oam.dev/`;
/// `attributes` becomes `spec`, and the template block text (imports first) becomes
/// `spec.schematic.cue.template`.
///
/// # Errors
///
/// A [`CueError`] with the line and column of the first problem: a syntax error, a metadata
/// value that is not literal, conflicting repeated keys, an unknown `type`, a missing or second
/// metadata field, a missing or empty `template` block, an invalid name, or nesting too deep.
pub fn definition_from_cue(text: &str, namespace: &str) -> std::result::Result<Value, CueError> {
    let mut parser = Parser::new(strip_bom(text))?;
    let file = parser.definition_file()?;
    build_definition(&file.metadata, file.template, namespace)
}

/// Convert a KubeVela config-template CUE file into the ConfigMap KubeVela stores for it.
///
/// The ConfigMap is `config-template-<metadata.name>` in `namespace`, labelled
/// `config.oam.dev/catalog: velacore-config` and `config.oam.dev/scope`, annotated with
/// `config.oam.dev/alias`, `config.oam.dev/description` and `config.oam.dev/sensitive`. Its data
/// holds `template` (the file text followed by KubeVela's default `context` declaration),
/// `schema` (a JSON Schema of `template.parameter`, as JSON) and `expanded-writer` (the Nacos
/// writer configuration, as JSON).
///
/// # Errors
///
/// A [`CueError`] with the line and column of the first problem: a syntax error, a `metadata`
/// value that is not literal or has the wrong type, a missing `metadata.name`, `template` or
/// `template.parameter`, or a construct in `template.parameter` beyond the supported subset
/// (named in the message).
pub fn config_template_from_cue(
    text: &str,
    namespace: &str,
) -> std::result::Result<Value, CueError> {
    let text = strip_bom(text);
    let mut parser = Parser::new(text)?;
    let file = parser.config_file()?;
    let meta = ConfigMetadata::from_fields(&file.metadata, file.end)?;
    let parameter = find_single_field(&file.template, "parameter", file.template_pos)?;
    let schema = parser.schema_at(parameter.value_index)?;
    let writer = expanded_writer(&file.template);
    Ok(config_map(&meta, text, namespace, schema, &writer))
}

/// The JSON Schema of the top-level `parameter` field of a `parameter.cue` file, lowered as
/// config templates' `template.parameter` is; `None` when the file declares no `parameter`.
/// `others` are the texts of the other files of the package, where a definition `parameter`
/// refers to may be declared.
pub(crate) fn parameter_schema_from_cue(text: &str, others: &[&str]) -> Result<Option<Value>> {
    let mut parser = Parser::new(strip_bom(text))?;
    parser.others = others.iter().map(|o| strip_bom(o)).collect();
    parser.preamble()?;
    let mut found = None;
    while !parser.at_eof() {
        if parser.at_comma() {
            parser.bump();
            continue;
        }
        if !parser.is_field_start() {
            parser.skip_expression()?;
            parser.decl_end()?;
            continue;
        }
        let label = parser.label()?;
        parser.marker();
        parser.expect_punct(":", "after the field name")?;
        if label.name == "parameter" {
            if found.is_some() {
                return Err(beyond_subset(
                    label.pos,
                    "declaring `parameter` more than once (unification)",
                ));
            }
            let index = parser.index;
            found = Some(Value::Object(parser.schema_at(index)?));
        }
        parser.skip_expression()?;
        parser.decl_end()?;
    }
    Ok(found)
}

pub(super) fn beyond_subset(pos: Pos, construct: &str) -> CueError {
    error(
        pos,
        format!(
            "{construct} in `template.parameter` is beyond the supported CUE subset ({SUBSET_HINT})"
        ),
    )
}

// ---------------------------------------------------------------------------------------------
