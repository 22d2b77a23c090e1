//! File-level structure of definition and config-template files.

#[allow(unused_imports)]
use serde_json::{Map, Number, Value};

use super::{error, reject_non_literal_label, LitField, Loose, LooseField, Parser, Pos, Result};

// File-level structure
// ---------------------------------------------------------------------------------------------

/// A definition file: its metadata field and the template text (imports first).
pub(super) struct DefinitionFile {
    pub(super) metadata: LitField,
    pub(super) template: String,
}

/// A config template file: its `metadata` declarations and the fields of its `template`.
pub(super) struct ConfigFile {
    pub(super) metadata: Vec<LitField>,
    pub(super) template: Vec<LooseField>,
    pub(super) template_pos: Pos,
    pub(super) end: Pos,
}

impl Parser<'_> {
    /// Imports, exactly one literal metadata field, and `template: { … }` blocks.
    pub(super) fn definition_file(&mut self) -> Result<DefinitionFile> {
        let imports = self.preamble()?;
        let mut metadata: Option<LitField> = None;
        let mut bodies = Vec::new();
        while !self.at_eof() {
            if self.at_comma() {
                self.bump();
                continue;
            }
            if !self.is_field_start() {
                return Err(
                    self.unexpected("expected a field such as `\"name\": {…}` or `template: {…}`")
                );
            }
            let label = self.label()?;
            self.reject_marker(&label)?;
            self.expect_punct(":", "after the field name")?;
            if label.name == "template" {
                bodies.push(self.template_body()?);
            } else if let Some(first) = &metadata {
                return Err(error(
                    label.pos,
                    format!(
                        "a definition file declares exactly one metadata field, but found `{}` and `{}`",
                        first.key, label.name
                    ),
                ));
            } else {
                reject_non_literal_label(&label)?;
                let value = self.nested(Self::lit_field_value)?;
                metadata = Some(LitField {
                    key: label.name,
                    pos: label.pos,
                    value,
                });
            }
            self.decl_end()?;
        }
        let metadata = metadata.ok_or_else(|| {
            error(
                self.pos(),
                "no metadata field found: expected `\"<name>\": { type: \"component\", … }`",
            )
        })?;
        if bodies.is_empty() {
            return Err(error(self.pos(), "no `template: { … }` block found"));
        }
        let mut template = imports.join("\n");
        if !template.is_empty() {
            template.push('\n');
        }
        template.push_str(&bodies.join("\n"));
        Ok(DefinitionFile { metadata, template })
    }

    /// Imports, literal `metadata` declarations, skimmed `template` declarations; any other
    /// top-level declaration is skipped, as KubeVela only reads these two.
    pub(super) fn config_file(&mut self) -> Result<ConfigFile> {
        self.preamble()?;
        let mut metadata = Vec::new();
        let mut template = Vec::new();
        let mut template_pos = None;
        while !self.at_eof() {
            if self.at_comma() {
                self.bump();
                continue;
            }
            if !self.is_field_start() {
                self.skip_expression()?;
                self.decl_end()?;
                continue;
            }
            let label = self.label()?;
            match label.name.as_str() {
                "metadata" => {
                    self.reject_marker(&label)?;
                    self.expect_punct(":", "after the field name")?;
                    let value = self.nested(Self::lit_field_value)?;
                    metadata.push(LitField {
                        key: label.name,
                        pos: label.pos,
                        value,
                    });
                }
                "template" => {
                    self.reject_marker(&label)?;
                    self.expect_punct(":", "after the field name")?;
                    template_pos.get_or_insert(label.pos);
                    match self.nested(Self::loose_value)? {
                        Loose::Struct(fields) => template.extend(fields),
                        _ => return Err(error(label.pos, "`template` must be a struct `{ … }`")),
                    }
                }
                _ => {
                    self.marker();
                    self.expect_punct(":", "after the field name")?;
                    self.skip_expression()?;
                }
            }
            self.decl_end()?;
        }
        let end = self.pos();
        let template_pos = template_pos
            .ok_or_else(|| error(end, "no `template: { parameter: {…} }` field found"))?;
        Ok(ConfigFile {
            metadata,
            template,
            template_pos,
            end,
        })
    }
}

// ---------------------------------------------------------------------------------------------
