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

use serde_json::{Map, Number, Value};

pub use crate::cue::lexer::CueError;
use crate::cue::lexer::{
    decode_number, decode_string, error, not_literal, strip_bom, Kind, Lexer, Pos, Result, Token,
    MAX_DEPTH,
};

const DEFINITION_API_VERSION: &str = "core.oam.dev/v1beta1";
const DESCRIPTION_ANNOTATION: &str = "definition.oam.dev/description";
const ALIAS_ANNOTATION: &str = "definition.oam.dev/alias";
const USER_PREFIX: &str = "custom.definition.oam.dev/";

const CONFIG_TEMPLATE_PREFIX: &str = "config-template-";
const CONFIG_CATALOG_LABEL: &str = "config.oam.dev/catalog";
const CONFIG_CATALOG_VALUE: &str = "velacore-config";
const CONFIG_SCOPE_LABEL: &str = "config.oam.dev/scope";
const CONFIG_DESCRIPTION_ANNOTATION: &str = "config.oam.dev/description";
const CONFIG_ALIAS_ANNOTATION: &str = "config.oam.dev/alias";
const CONFIG_SENSITIVE_ANNOTATION: &str = "config.oam.dev/sensitive";
/// The declaration KubeVela appends to every config template before storing it.
const CONFIG_DEFAULT_CONTEXT: &str =
    "\n\tcontext: {\n\t\tname: string\n\t\tnamespace: string\n\t}\n";

const SUBSET_HINT: &str = "supported: string, int, float, number, bool, `*default | type`, \
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
pub(crate) fn parameter_schema_from_cue(text: &str) -> Result<Option<Value>> {
    let mut parser = Parser::new(strip_bom(text))?;
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

fn beyond_subset(pos: Pos, construct: &str) -> CueError {
    error(
        pos,
        format!(
            "{construct} in `template.parameter` is beyond the supported CUE subset ({SUBSET_HINT})"
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// Token cursor shared by the parsers
// ---------------------------------------------------------------------------------------------

/// A field name with where it stands and the doc comment above it.
struct Label {
    name: String,
    pos: Pos,
    doc: Vec<String>,
    /// Written as an identifier (so `#x` and `_x` are definitions and hidden fields).
    ident: bool,
}

/// The `?` (optional) or `!` (required) mark after a field name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Regular,
    Optional,
    Required,
}

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    index: usize,
    depth: usize,
    eof: Token,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Result<Self> {
        let tokens = Lexer::new(src).run()?;
        let eof = tokens.last().cloned().unwrap_or(Token {
            kind: Kind::Eof,
            start: src.len(),
            end: src.len(),
            pos: Pos { line: 1, column: 1 },
            doc: Vec::new(),
        });
        Ok(Parser {
            src,
            tokens,
            index: 0,
            depth: 0,
            eof,
        })
    }

    fn token(&self, index: usize) -> &Token {
        self.tokens.get(index).unwrap_or(&self.eof)
    }

    fn peek(&self) -> &Token {
        self.token(self.index)
    }

    fn kind(&self) -> Kind {
        self.peek().kind
    }

    fn kind_at(&self, ahead: usize) -> Kind {
        self.token(self.index.saturating_add(ahead)).kind
    }

    fn pos(&self) -> Pos {
        self.peek().pos
    }

    fn text_of(&self, token: &Token) -> &'a str {
        self.src.get(token.start..token.end).unwrap_or("")
    }

    fn text(&self) -> &'a str {
        self.text_of(self.peek())
    }

    fn text_at(&self, ahead: usize) -> &'a str {
        self.text_of(self.token(self.index.saturating_add(ahead)))
    }

    fn bump(&mut self) {
        if self.index < self.tokens.len() {
            self.index += 1;
        }
    }

    fn at_punct(&self, punct: &str) -> bool {
        matches!(self.kind(), Kind::Punct(p) if p == punct)
    }

    fn punct_at(&self, ahead: usize, punct: &str) -> bool {
        matches!(self.kind_at(ahead), Kind::Punct(p) if p == punct)
    }

    fn at_comma(&self) -> bool {
        matches!(self.kind(), Kind::Comma { .. })
    }

    fn at_eof(&self) -> bool {
        self.kind() == Kind::Eof
    }

    fn at_ident(&self, word: &str) -> bool {
        self.kind() == Kind::Ident && self.text() == word
    }

    /// A readable name for the current token, for error messages.
    fn describe(&self) -> String {
        match self.kind() {
            Kind::Eof => "the end of the file".to_string(),
            Kind::Comma { explicit: false } => "the end of the line".to_string(),
            _ => {
                let text: String = self.text().chars().take(40).collect();
                format!("`{text}`")
            }
        }
    }

    fn unexpected(&self, expected: &str) -> CueError {
        error(self.pos(), format!("{expected}, found {}", self.describe()))
    }

    fn expect_punct(&mut self, punct: &str, context: &str) -> Result<()> {
        if self.at_punct(punct) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(&format!("expected `{punct}` {context}")))
        }
    }

    /// Run `parse` one nesting level deeper, refusing to go past [`MAX_DEPTH`].
    fn nested<T>(&mut self, parse: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(error(
                self.pos(),
                format!("nesting deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    /// The end of a top-level declaration: a comma, a line end or the end of the file.
    fn decl_end(&mut self) -> Result<()> {
        match self.kind() {
            Kind::Comma { .. } => {
                self.bump();
                Ok(())
            }
            Kind::Eof => Ok(()),
            _ => Err(self.unexpected("expected a new line or `,` after the declaration")),
        }
    }

    /// After a field inside `{ … }`: a comma, a line end, or the closing brace.
    fn field_end(&mut self) -> Result<()> {
        match self.kind() {
            Kind::Comma { .. } => {
                self.bump();
                Ok(())
            }
            Kind::Punct("}") => Ok(()),
            _ => Err(self.unexpected("expected a new line, `,` or `}` after the field")),
        }
    }

    /// Whether a field `name:`, `name?:` or `name!:` starts here.
    fn is_field_start(&self) -> bool {
        let named = matches!(
            self.kind(),
            Kind::Ident
                | Kind::Str {
                    interpolated: false
                }
        );
        let colon = self.punct_at(1, ":")
            || ((self.punct_at(1, "?") || self.punct_at(1, "!")) && self.punct_at(2, ":"));
        named && colon
    }

    fn label(&mut self) -> Result<Label> {
        let token = self.peek();
        let (pos, doc) = (token.pos, token.doc.clone());
        let (name, ident) = match token.kind {
            Kind::Ident => (self.text().to_string(), true),
            Kind::Str {
                interpolated: false,
            } => (decode_string(self.text(), pos)?, false),
            _ => return Err(self.unexpected("expected a field name")),
        };
        self.bump();
        Ok(Label {
            name,
            pos,
            doc,
            ident,
        })
    }

    fn marker(&mut self) -> Marker {
        let marker = if self.at_punct("?") {
            Marker::Optional
        } else if self.at_punct("!") {
            Marker::Required
        } else {
            return Marker::Regular;
        };
        self.bump();
        marker
    }

    fn reject_marker(&mut self, label: &Label) -> Result<()> {
        let pos = self.pos();
        match self.marker() {
            Marker::Regular => Ok(()),
            Marker::Optional => Err(error(
                pos,
                format!("field `{}` may not be optional (`?`) here", label.name),
            )),
            Marker::Required => Err(error(
                pos,
                format!(
                    "field `{}` may not be marked required (`!`) here",
                    label.name
                ),
            )),
        }
    }

    /// Skip an optional `package` clause and parse the `import` declarations, returning each
    /// import declaration's text as written.
    fn preamble(&mut self) -> Result<Vec<String>> {
        if self.at_ident("package") && self.kind_at(1) == Kind::Ident {
            self.bump();
            self.bump();
            self.decl_end()?;
        }
        let mut imports = Vec::new();
        while self.at_ident("import") && !self.punct_at(1, ":") {
            let first = self.index;
            self.bump();
            if self.at_punct("(") {
                self.bump();
                loop {
                    if self.at_comma() {
                        self.bump();
                    } else if self.at_punct(")") {
                        self.bump();
                        break;
                    } else {
                        self.import_spec()?;
                        if !self.at_comma() && !self.at_punct(")") {
                            return Err(
                                self.unexpected("expected a new line or `)` after the import path")
                            );
                        }
                    }
                }
            } else {
                self.import_spec()?;
            }
            let start = self.token(first).start;
            let end = self.token(self.index.saturating_sub(1)).end;
            imports.push(self.src.get(start..end).unwrap_or("").to_string());
            self.decl_end()?;
        }
        Ok(imports)
    }

    /// `"path"` or `alias "path"`.
    fn import_spec(&mut self) -> Result<()> {
        if self.kind() == Kind::Ident {
            self.bump();
        }
        if self.kind()
            != (Kind::Str {
                interpolated: false,
            })
        {
            return Err(self.unexpected("expected an import path string"));
        }
        decode_string(self.text(), self.pos())?;
        self.bump();
        Ok(())
    }

    /// Skip one bracketed group starting at the current opener; returns the closer's index.
    fn skip_balanced(&mut self) -> Result<usize> {
        let mut stack: Vec<(&'static str, Pos)> = Vec::new();
        loop {
            let pos = self.pos();
            match self.kind() {
                Kind::Punct("{") => stack.push(("}", pos)),
                Kind::Punct("[") => stack.push(("]", pos)),
                Kind::Punct("(") => stack.push((")", pos)),
                Kind::Punct(closer @ ("}" | "]" | ")")) => match stack.pop() {
                    Some((wanted, _)) if wanted == closer => {
                        if stack.is_empty() {
                            let index = self.index;
                            self.bump();
                            return Ok(index);
                        }
                    }
                    Some((wanted, opened)) => {
                        return Err(error(
                            pos,
                            format!(
                                "found `{closer}` where `{wanted}` was expected, to close the bracket \
                                 opened at line {}, column {}",
                                opened.line, opened.column
                            ),
                        ));
                    }
                    None => return Err(error(pos, format!("unexpected `{closer}`"))),
                },
                Kind::Eof => {
                    let (wanted, opened) = stack.last().copied().unwrap_or(("}", pos));
                    return Err(error(
                        opened,
                        format!("this bracket is never closed (expected `{wanted}`)"),
                    ));
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skip an arbitrary expression or declaration up to a comma or line end at its own level,
    /// or up to (not including) the bracket that closes the enclosing group.
    fn skip_expression(&mut self) -> Result<()> {
        loop {
            match self.kind() {
                Kind::Eof | Kind::Comma { .. } | Kind::Punct("}" | "]" | ")") => return Ok(()),
                Kind::Punct("{" | "[" | "(") => {
                    self.skip_balanced()?;
                }
                _ => self.bump(),
            }
        }
    }

    /// The text between the braces of a `template: { … }` block.
    fn template_body(&mut self) -> Result<&'a str> {
        if !self.at_punct("{") {
            return Err(self.unexpected("expected `{` to open the template block"));
        }
        let open = self.index;
        let close = self.skip_balanced()?;
        let has_content =
            (open + 1..close).any(|i| self.token(i).kind != Kind::Comma { explicit: false });
        let (open_token, close_token) = (self.token(open), self.token(close));
        if !has_content {
            return Err(error(open_token.pos, "the template block is empty"));
        }
        Ok(self
            .src
            .get(open_token.end..close_token.start)
            .unwrap_or(""))
    }

    /// If a scalar literal (`"s"`, `1`, `-1`, `true`, `null`) starts here, how many tokens it spans.
    fn scalar_len(&self) -> Option<usize> {
        match self.kind() {
            Kind::Str {
                interpolated: false,
            }
            | Kind::Number => Some(1),
            Kind::Ident if matches!(self.text(), "true" | "false" | "null") => Some(1),
            Kind::Punct("-" | "+") if self.kind_at(1) == Kind::Number => Some(2),
            _ => None,
        }
    }

    fn scalar_literal(&mut self) -> Result<Value> {
        let pos = self.pos();
        let value = match self.kind() {
            Kind::Str { .. } => Value::String(decode_string(self.text(), pos)?),
            Kind::Number => decode_number(self.text(), false, pos)?,
            Kind::Punct(sign @ ("-" | "+")) if self.kind_at(1) == Kind::Number => {
                self.bump();
                decode_number(self.text(), sign == "-", pos)?
            }
            Kind::Ident => match self.text() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                _ => return Err(self.unexpected("expected a literal value")),
            },
            _ => return Err(self.unexpected("expected a literal value")),
        };
        self.bump();
        Ok(value)
    }
}

// ---------------------------------------------------------------------------------------------
// File-level structure
// ---------------------------------------------------------------------------------------------

/// A definition file: its metadata field and the template text (imports first).
struct DefinitionFile {
    metadata: LitField,
    template: String,
}

/// A config template file: its `metadata` declarations and the fields of its `template`.
struct ConfigFile {
    metadata: Vec<LitField>,
    template: Vec<LooseField>,
    template_pos: Pos,
    end: Pos,
}

impl Parser<'_> {
    /// Imports, exactly one literal metadata field, and `template: { … }` blocks.
    fn definition_file(&mut self) -> Result<DefinitionFile> {
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
    fn config_file(&mut self) -> Result<ConfigFile> {
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
// Literal values (metadata blocks)
// ---------------------------------------------------------------------------------------------

/// A literal CUE value with the position of its first token.
#[derive(Debug)]
struct Lit {
    pos: Pos,
    kind: LitKind,
}

#[derive(Debug)]
enum LitKind {
    Scalar(Value),
    List(Vec<Lit>),
    /// Fields in source order; a repeated key appears once per declaration.
    Struct(Vec<LitField>),
}

#[derive(Debug)]
struct LitField {
    key: String,
    pos: Pos,
    value: Lit,
}

fn reject_non_literal_label(label: &Label) -> Result<()> {
    if label.ident && label.name.starts_with('#') {
        return Err(not_literal(
            label.pos,
            &format!("the definition `{}`", label.name),
        ));
    }
    if label.ident && label.name.starts_with('_') {
        return Err(not_literal(
            label.pos,
            &format!("the hidden field `{}`", label.name),
        ));
    }
    Ok(())
}

impl Parser<'_> {
    /// A field value, which may be the `a: b: c` shorthand for nested structs.
    fn lit_field_value(&mut self) -> Result<Lit> {
        if self.is_field_start() {
            let pos = self.pos();
            let field = self.lit_field()?;
            return Ok(Lit {
                pos,
                kind: LitKind::Struct(vec![field]),
            });
        }
        let value = self.lit_value()?;
        self.reject_operator()?;
        Ok(value)
    }

    fn lit_field(&mut self) -> Result<LitField> {
        let label = self.label()?;
        reject_non_literal_label(&label)?;
        if self.at_punct("?") || self.at_punct("!") {
            return Err(not_literal(
                self.pos(),
                &format!("the `{}` field marker", self.text()),
            ));
        }
        self.expect_punct(":", "after the field name")?;
        let value = self.nested(Self::lit_field_value)?;
        Ok(LitField {
            key: label.name,
            pos: label.pos,
            value,
        })
    }

    fn lit_value(&mut self) -> Result<Lit> {
        let pos = self.pos();
        if self.scalar_len().is_some() {
            return Ok(Lit {
                pos,
                kind: LitKind::Scalar(self.scalar_literal()?),
            });
        }
        match self.kind() {
            Kind::Punct("{") => self.nested(Self::lit_struct),
            Kind::Punct("[") => self.nested(Self::lit_list),
            Kind::Str { interpolated: true } => {
                Err(not_literal(pos, "a string interpolation `\\(…)`"))
            }
            Kind::Bytes => Err(error(
                pos,
                "bytes literals ('…') are not supported; use a double-quoted string",
            )),
            Kind::Ident => Err(not_literal(pos, &self.non_literal_ident())),
            Kind::Punct("*") => Err(not_literal(pos, "a default marker `*`")),
            Kind::Punct("(") => Err(not_literal(pos, "a parenthesized expression")),
            Kind::Punct(op) if op != "}" && op != "]" && op != ")" => {
                Err(not_literal(pos, &format!("the operator `{op}`")))
            }
            _ => Err(self.unexpected("expected a literal value")),
        }
    }

    /// Describe a non-literal identifier: a comprehension keyword, a type or a reference.
    fn non_literal_ident(&self) -> String {
        let name = self.text();
        match name {
            "if" | "for" => format!("an `{name}` comprehension"),
            "let" => "a `let` declaration".to_string(),
            "string" | "int" | "float" | "number" | "bool" | "bytes" | "uint" | "_" => {
                format!("the type `{name}`")
            }
            _ if self.punct_at(1, "(") => format!("the function call `{name}(…)`"),
            _ => format!("the reference `{name}`"),
        }
    }

    /// After a literal, anything that would make it an expression is an error.
    fn reject_operator(&self) -> Result<()> {
        match self.kind() {
            Kind::Punct("}" | "]" | ")") | Kind::Comma { .. } | Kind::Eof => Ok(()),
            Kind::Punct("@") => Err(not_literal(self.pos(), "a field attribute `@…`")),
            Kind::Punct(op) => Err(not_literal(
                self.pos(),
                &format!("an expression with `{op}`"),
            )),
            _ => Err(self.unexpected("expected a new line or `,` after the value")),
        }
    }

    fn lit_struct(&mut self) -> Result<Lit> {
        let pos = self.pos();
        self.bump();
        let mut fields = Vec::new();
        loop {
            match self.kind() {
                Kind::Punct("}") => {
                    self.bump();
                    return Ok(Lit {
                        pos,
                        kind: LitKind::Struct(fields),
                    });
                }
                Kind::Comma { .. } => self.bump(),
                Kind::Punct("...") => return Err(not_literal(self.pos(), "an open struct `...`")),
                Kind::Punct("[") => {
                    return Err(not_literal(self.pos(), "a pattern constraint `[…]: …`"));
                }
                Kind::Ident
                    if matches!(self.text(), "if" | "for" | "let") && !self.punct_at(1, ":") =>
                {
                    return Err(not_literal(self.pos(), &self.non_literal_ident()));
                }
                _ if self.is_field_start() => {
                    fields.push(self.lit_field()?);
                    self.field_end()?;
                }
                Kind::Eof => return Err(error(pos, "this `{` is never closed")),
                Kind::Ident => {
                    return Err(not_literal(
                        self.pos(),
                        &format!("the embedded {}", self.non_literal_ident()),
                    ));
                }
                Kind::Punct("(") => return Err(not_literal(self.pos(), "an embedded expression")),
                _ => return Err(self.unexpected("expected a field such as `key: value`")),
            }
        }
    }

    fn lit_list(&mut self) -> Result<Lit> {
        let pos = self.pos();
        self.bump();
        let mut items = Vec::new();
        loop {
            match self.kind() {
                Kind::Punct("]") => {
                    self.bump();
                    return Ok(Lit {
                        pos,
                        kind: LitKind::List(items),
                    });
                }
                Kind::Punct("...") => return Err(not_literal(self.pos(), "an open list `...`")),
                Kind::Eof => return Err(error(pos, "this `[` is never closed")),
                _ => {
                    items.push(self.lit_value()?);
                    self.reject_operator()?;
                    match self.kind() {
                        Kind::Comma { .. } => self.bump(),
                        Kind::Punct("]") => {}
                        _ => {
                            return Err(
                                self.unexpected("expected `,` or `]` after the list element")
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Turn a literal into JSON, unifying repeated keys by deep merge.
fn lit_to_json(lit: &Lit) -> Result<Value> {
    match &lit.kind {
        LitKind::Scalar(value) => Ok(value.clone()),
        LitKind::List(items) => items
            .iter()
            .map(lit_to_json)
            .collect::<Result<Vec<_>>>()
            .map(Value::Array),
        LitKind::Struct(fields) => {
            let mut map = Map::new();
            for field in fields {
                let value = lit_to_json(&field.value)?;
                match map.get_mut(&field.key) {
                    Some(existing) => unify(existing, value, &field.key, field.pos)?,
                    None => {
                        map.insert(field.key.clone(), value);
                    }
                }
            }
            Ok(Value::Object(map))
        }
    }
}

/// CUE unification of two concrete values: structs merge, equal values agree, others conflict.
fn unify(target: &mut Value, value: Value, key: &str, pos: Pos) -> Result<()> {
    match (target, value) {
        (Value::Object(into), Value::Object(from)) => {
            for (k, v) in from {
                match into.get_mut(&k) {
                    Some(existing) => unify(existing, v, &k, pos)?,
                    None => {
                        into.insert(k, v);
                    }
                }
            }
            Ok(())
        }
        (Value::Array(into), Value::Array(from)) if into.len() == from.len() => {
            for (existing, v) in into.iter_mut().zip(from) {
                unify(existing, v, key, pos)?;
            }
            Ok(())
        }
        (existing, value) if *existing == value => Ok(()),
        (existing, value) => Err(error(
            pos,
            format!(
                "conflicting values for `{key}`: {} and {} (a repeated key is unified)",
                short(existing),
                short(&value)
            ),
        )),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

/// The first value declared for `key` in a literal struct.
fn lit_lookup<'l>(lit: &'l Lit, key: &str) -> Option<&'l Lit> {
    match &lit.kind {
        LitKind::Struct(fields) => fields.iter().find(|f| f.key == key).map(|f| &f.value),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Definitions
// ---------------------------------------------------------------------------------------------

fn definition_kind(definition_type: &str) -> Option<&'static str> {
    match definition_type {
        "component" => Some("ComponentDefinition"),
        "trait" => Some("TraitDefinition"),
        "policy" => Some("PolicyDefinition"),
        "workflow-step" => Some("WorkflowStepDefinition"),
        "workload" => Some("WorkloadDefinition"),
        _ => None,
    }
}

/// Keys naming `oam.dev` are kept; the others get the user prefix, as KubeVela does.
fn user_key(key: &str) -> String {
    if key.contains("oam.dev") {
        key.to_string()
    } else {
        format!("{USER_PREFIX}{key}")
    }
}

/// What the metadata block of a definition sets, before it is assembled into an object.
#[derive(Default)]
struct DefinitionParts {
    kind: Option<&'static str>,
    annotations: Map<String, Value>,
    labels: Map<String, Value>,
    spec: Map<String, Value>,
}

impl DefinitionParts {
    /// Apply one metadata field, as KubeVela's `FromCUE` does; unknown keys are ignored.
    fn apply(&mut self, key: &str, value: &Value, lit: &Lit) -> Result<()> {
        match key {
            "type" => {
                let name = expect_str(value, lit.pos, "type")?;
                let kind = definition_kind(name).ok_or_else(|| {
                    error(
                        lit.pos,
                        format!(
                            "unknown definition type \"{name}\" \
                             (expected component, trait, policy, workflow-step or workload)"
                        ),
                    )
                })?;
                self.kind = Some(kind);
            }
            "alias" => {
                let alias = expect_str(value, lit.pos, "alias")?;
                insert_str(&mut self.annotations, ALIAS_ANNOTATION, alias);
            }
            "description" => {
                let description = expect_str(value, lit.pos, "description")?;
                insert_str(&mut self.annotations, DESCRIPTION_ANNOTATION, description);
            }
            "annotations" => copy_string_map(value, lit, "annotations", &mut self.annotations)?,
            "labels" => copy_string_map(value, lit, "labels", &mut self.labels)?,
            "attributes" => match value {
                Value::Object(attributes) => self.spec.clone_from(attributes),
                _ => return Err(error(lit.pos, "`attributes` must be a struct")),
            },
            _ => {}
        }
        Ok(())
    }
}

fn build_definition(metadata: &LitField, template: String, namespace: &str) -> Result<Value> {
    let (LitKind::Struct(fields), Value::Object(merged)) =
        (&metadata.value.kind, lit_to_json(&metadata.value)?)
    else {
        return Err(error(
            metadata.value.pos,
            format!(
                "the metadata field `{}` must be a struct `{{ … }}`",
                metadata.key
            ),
        ));
    };
    validate_name(&metadata.key, metadata.pos, "definition name")?;
    let mut parts = DefinitionParts::default();
    let mut seen: Vec<&str> = Vec::new();
    for field in fields {
        if !seen.contains(&field.key.as_str()) {
            seen.push(&field.key);
            let value = merged.get(&field.key).unwrap_or(&Value::Null);
            parts.apply(&field.key, value, &field.value)?;
        }
    }
    let kind = parts.kind.ok_or_else(|| {
        error(
            metadata.pos,
            format!(
                "the metadata field `{}` has no `type` (component, trait, policy, …)",
                metadata.key
            ),
        )
    })?;
    set_template(&mut parts.spec, template, metadata.value.pos)?;
    let mut meta = Map::new();
    meta.insert("name".into(), Value::String(metadata.key.clone()));
    meta.insert("namespace".into(), Value::String(namespace.to_string()));
    if !parts.annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(parts.annotations));
    }
    if !parts.labels.is_empty() {
        meta.insert("labels".into(), Value::Object(parts.labels));
    }
    Ok(object([
        ("apiVersion", Value::from(DEFINITION_API_VERSION)),
        ("kind", Value::from(kind)),
        ("metadata", Value::Object(meta)),
        ("spec", Value::Object(parts.spec)),
    ]))
}

fn expect_str<'v>(value: &'v Value, pos: Pos, field: &str) -> Result<&'v str> {
    value.as_str().ok_or_else(|| {
        error(
            pos,
            format!("`{field}` must be a string, found {}", short(value)),
        )
    })
}

fn insert_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    map.insert(key.to_string(), Value::String(value.to_string()));
}

/// Copy `annotations`/`labels` (a struct of strings) into `into`, prefixing user keys.
fn copy_string_map(
    value: &Value,
    lit: &Lit,
    field: &str,
    into: &mut Map<String, Value>,
) -> Result<()> {
    let Value::Object(entries) = value else {
        return Err(error(
            lit.pos,
            format!("`{field}` must be a struct of strings"),
        ));
    };
    for (key, entry) in entries {
        let pos = lit_lookup(lit, key).map_or(lit.pos, |l| l.pos);
        let text = expect_str(entry, pos, &format!("{field}.{key}"))?;
        insert_str(into, &user_key(key), text);
    }
    Ok(())
}

fn set_template(spec: &mut Map<String, Value>, template: String, pos: Pos) -> Result<()> {
    let schematic = spec
        .entry("schematic")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(schematic) = schematic else {
        return Err(error(pos, "`attributes.schematic` must be a struct"));
    };
    let cue = schematic
        .entry("cue")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(cue) = cue else {
        return Err(error(pos, "`attributes.schematic.cue` must be a struct"));
    };
    cue.insert("template".into(), Value::String(template));
    Ok(())
}

/// Kubernetes object names are DNS subdomains: lowercase alphanumerics, `-` and `.`.
fn validate_name(name: &str, pos: Pos, what: &str) -> Result<()> {
    let bytes = name.as_bytes();
    let allowed = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'.');
    let edges = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if allowed && edges(bytes.first()) && edges(bytes.last()) && bytes.len() <= 253 {
        Ok(())
    } else {
        Err(error(
            pos,
            format!(
                "{what} \"{name}\" is not a valid Kubernetes name (lowercase letters, digits, `-` and `.`, \
                 starting and ending with a letter or digit, at most 253 characters)"
            ),
        ))
    }
}

fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------------
// Skimmed values (config template `template` blocks)
// ---------------------------------------------------------------------------------------------

/// What the skimming parser learned about a value: the fields of a struct, a scalar literal,
/// or nothing (any other expression).
#[derive(Debug)]
enum Loose {
    Struct(Vec<LooseField>),
    Scalar(Value),
    Opaque,
}

#[derive(Debug)]
struct LooseField {
    key: String,
    pos: Pos,
    /// Index of the value's first token, to parse it again with another parser.
    value_index: usize,
    value: Loose,
}

impl Parser<'_> {
    fn loose_value(&mut self) -> Result<Loose> {
        if self.is_field_start() {
            let field = self.loose_field()?;
            return Ok(Loose::Struct(vec![field]));
        }
        if self.at_punct("{") {
            return self.nested(Self::loose_struct);
        }
        let scalar_alone = self.scalar_len().is_some_and(|len| {
            matches!(
                self.kind_at(len),
                Kind::Comma { .. } | Kind::Punct("}") | Kind::Eof
            )
        });
        if scalar_alone {
            return Ok(Loose::Scalar(self.scalar_literal()?));
        }
        self.skip_expression()?;
        Ok(Loose::Opaque)
    }

    fn loose_field(&mut self) -> Result<LooseField> {
        let label = self.label()?;
        self.marker();
        self.expect_punct(":", "after the field name")?;
        let value_index = self.index;
        let value = self.nested(Self::loose_value)?;
        Ok(LooseField {
            key: label.name,
            pos: label.pos,
            value_index,
            value,
        })
    }

    fn loose_struct(&mut self) -> Result<Loose> {
        let open = self.pos();
        self.bump();
        let mut fields = Vec::new();
        loop {
            match self.kind() {
                Kind::Punct("}") => {
                    self.bump();
                    return Ok(Loose::Struct(fields));
                }
                Kind::Eof => return Err(error(open, "this `{` is never closed")),
                Kind::Comma { .. } => {
                    self.bump();
                    continue;
                }
                _ if self.is_field_start() => fields.push(self.loose_field()?),
                _ => self.skip_expression()?,
            }
            self.field_end()?;
        }
    }
}

/// The only field named `key`, or an error when it is missing or declared twice.
fn find_single_field<'f>(
    fields: &'f [LooseField],
    key: &str,
    parent: Pos,
) -> Result<&'f LooseField> {
    let mut found = fields.iter().filter(|f| f.key == key);
    let first = found
        .next()
        .ok_or_else(|| error(parent, format!("`template.{key}` is missing")))?;
    if let Some(second) = found.next() {
        return Err(beyond_subset(
            second.pos,
            &format!("declaring `{key}` more than once (unification)"),
        ));
    }
    Ok(first)
}

fn loose_str<'l>(value: &'l Loose, path: &[&str]) -> Option<&'l str> {
    match (value, path.split_first()) {
        (Loose::Scalar(Value::String(text)), None) => Some(text),
        (Loose::Struct(fields), Some((head, tail))) => fields
            .iter()
            .filter(|f| f.key == *head)
            .find_map(|f| loose_str(&f.value, tail)),
        _ => None,
    }
}

/// The `expanded-writer` data: KubeVela's Nacos writer settings, present when the template
/// declares a `nacos` block (its `format` and `endpoint.name` are kept when literal).
fn expanded_writer(template: &[LooseField]) -> Value {
    let Some(nacos) = template.iter().find(|f| f.key == "nacos") else {
        return object([("nacos", Value::Null)]);
    };
    let format = loose_str(&nacos.value, &["format"]).unwrap_or("");
    let endpoint = loose_str(&nacos.value, &["endpoint", "name"]).unwrap_or("");
    object([(
        "nacos",
        object([
            (
                "endpoint",
                object([
                    ("name", Value::from(endpoint)),
                    ("namespace", Value::from("")),
                ]),
            ),
            ("format", Value::from(format)),
            (
                "metadata",
                object([
                    ("dataId", Value::from("")),
                    ("group", Value::from("")),
                    ("namespaceId", Value::from("")),
                ]),
            ),
        ]),
    )])
}

// ---------------------------------------------------------------------------------------------
// Config templates
// ---------------------------------------------------------------------------------------------

/// The literal `metadata` block of a config template.
struct ConfigMetadata {
    name: String,
    alias: String,
    description: String,
    sensitive: bool,
    scope: String,
}

impl ConfigMetadata {
    fn from_fields(fields: &[LitField], end: Pos) -> Result<Self> {
        let first = fields
            .first()
            .ok_or_else(|| error(end, "no `metadata: { name: … }` field found"))?;
        let mut merged: Option<Value> = None;
        for field in fields {
            let value = lit_to_json(&field.value)?;
            match merged.as_mut() {
                Some(existing) => unify(existing, value, "metadata", field.pos)?,
                None => merged = Some(value),
            }
        }
        let Some(Value::Object(meta)) = merged else {
            return Err(error(first.value.pos, "`metadata` must be a struct"));
        };
        let pos_of = |key: &str| {
            fields
                .iter()
                .find_map(|f| lit_lookup(&f.value, key))
                .map_or(first.pos, |l| l.pos)
        };
        let text = |key: &str| -> Result<String> {
            meta.get(key).map_or(Ok(String::new()), |v| {
                expect_str(v, pos_of(key), key).map(str::to_string)
            })
        };
        let name = text("name")?;
        if name.is_empty() {
            return Err(error(
                pos_of("name"),
                "`metadata.name` is required and must not be empty",
            ));
        }
        validate_name(
            &format!("{CONFIG_TEMPLATE_PREFIX}{name}"),
            pos_of("name"),
            "config template ConfigMap name",
        )?;
        let sensitive = match meta.get("sensitive") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(error(
                    pos_of("sensitive"),
                    format!("`sensitive` must be a bool, found {}", short(other)),
                ));
            }
        };
        let scope = text("scope")?;
        if !matches!(scope.as_str(), "" | "system" | "project") {
            return Err(error(
                pos_of("scope"),
                format!("`scope` must be \"system\" or \"project\", found \"{scope}\""),
            ));
        }
        Ok(ConfigMetadata {
            name,
            alias: text("alias")?,
            description: text("description")?,
            sensitive,
            scope,
        })
    }
}

fn config_map(
    meta: &ConfigMetadata,
    text: &str,
    namespace: &str,
    schema: Map<String, Value>,
    writer: &Value,
) -> Value {
    let labels = object([
        (CONFIG_CATALOG_LABEL, Value::from(CONFIG_CATALOG_VALUE)),
        (CONFIG_SCOPE_LABEL, Value::from(meta.scope.as_str())),
    ]);
    let annotations = object([
        (
            CONFIG_DESCRIPTION_ANNOTATION,
            Value::from(meta.description.as_str()),
        ),
        (CONFIG_ALIAS_ANNOTATION, Value::from(meta.alias.as_str())),
        (
            CONFIG_SENSITIVE_ANNOTATION,
            Value::from(if meta.sensitive { "true" } else { "false" }),
        ),
    ]);
    let data = object([
        (
            "template",
            Value::String(format!("{text}\n{CONFIG_DEFAULT_CONTEXT}")),
        ),
        ("schema", Value::String(Value::Object(schema).to_string())),
        ("expanded-writer", Value::String(writer.to_string())),
    ]);
    object([
        ("apiVersion", Value::from("v1")),
        ("kind", Value::from("ConfigMap")),
        (
            "metadata",
            object([
                (
                    "name",
                    Value::String(format!("{CONFIG_TEMPLATE_PREFIX}{}", meta.name)),
                ),
                ("namespace", Value::from(namespace)),
                ("labels", labels),
                ("annotations", annotations),
            ]),
        ),
        ("data", data),
    ])
}

// ---------------------------------------------------------------------------------------------
// JSON Schema of `template.parameter`
// ---------------------------------------------------------------------------------------------

type Schema = Map<String, Value>;

/// One operand of a `|` or `&` in a parameter declaration.
enum Term {
    /// A concrete value: `"a"`, `3`, `true`, `["x"]`.
    Value(Value),
    /// A type, with its value when it is a struct whose fields are all concrete.
    Type {
        schema: Schema,
        literal: Option<Value>,
    },
    /// `>=n`, `<=n`, `>n` or `<n`.
    Bound { op: &'static str, limit: Number },
    /// `=~"regexp"`.
    Pattern(String),
}

/// A disjunct: a term, whether it is marked `*` default, and where it starts.
struct Disjunct {
    term: Term,
    default: bool,
    pos: Pos,
}

/// A parsed parameter field.
struct SchemaField {
    name: String,
    pos: Pos,
    schema: Schema,
    required: bool,
    constant: Option<Value>,
}

impl Parser<'_> {
    /// Parse the parameter declaration whose value starts at token `index`.
    fn schema_at(&mut self, index: usize) -> Result<Schema> {
        let saved = self.index;
        self.index = index;
        let result = self
            .nested(Self::schema_field_value)
            .and_then(|(schema, _)| match self.kind() {
                Kind::Comma { .. } | Kind::Punct("}") | Kind::Eof => Ok(schema),
                _ => Err(self.unexpected("expected the end of `parameter`")),
            });
        self.index = saved;
        result
    }

    /// A field value: a `b: T` shorthand, a `[string]: T` map shorthand, or an expression.
    fn schema_field_value(&mut self) -> Result<(Schema, Option<Value>)> {
        if self.is_field_start() {
            let field = self.schema_field()?;
            let required = if field.required {
                vec![field.name.clone()]
            } else {
                Vec::new()
            };
            let constant = field
                .constant
                .clone()
                .map(|v| object([(field.name.as_str(), v)]));
            let mut properties = Map::new();
            properties.insert(field.name, Value::Object(field.schema));
            return Ok((object_schema(properties, required, None), constant));
        }
        if self.is_pattern_start() {
            let values = self.schema_pattern()?;
            return Ok((object_schema(Map::new(), Vec::new(), Some(values)), None));
        }
        self.schema_expression()
    }

    fn schema_field(&mut self) -> Result<SchemaField> {
        let label = self.label()?;
        if label.ident && label.name.starts_with('#') {
            return Err(beyond_subset(
                label.pos,
                &format!("the definition `{}`", label.name),
            ));
        }
        if label.ident && label.name.starts_with('_') {
            return Err(beyond_subset(
                label.pos,
                &format!("the hidden field `{}`", label.name),
            ));
        }
        let marker = self.marker();
        self.expect_punct(":", "after the field name")?;
        let (mut schema, constant) = self.nested(Self::schema_field_value)?;
        if self.at_punct("@") {
            return Err(beyond_subset(self.pos(), "a field attribute `@…`"));
        }
        schema.insert("title".into(), Value::String(label.name.clone()));
        if let Some(description) = describe_doc(&label.doc) {
            schema.insert("description".into(), Value::String(description));
        }
        let required = match marker {
            Marker::Optional => false,
            Marker::Required => true,
            Marker::Regular => !schema.contains_key("default"),
        };
        let constant = if marker == Marker::Optional {
            None
        } else {
            constant
        };
        Ok(SchemaField {
            name: label.name,
            pos: label.pos,
            schema,
            required,
            constant,
        })
    }

    fn is_pattern_start(&self) -> bool {
        self.at_punct("[")
            && self.kind_at(1) == Kind::Ident
            && self.punct_at(2, "]")
            && self.punct_at(3, ":")
    }

    /// `[string]: T`, returning the schema of `T`.
    fn schema_pattern(&mut self) -> Result<Schema> {
        let pos = self.pos();
        let key = self.text_at(1);
        if key != "string" {
            return Err(beyond_subset(
                pos,
                &format!("the pattern constraint `[{key}]` (only `[string]: T`)"),
            ));
        }
        self.bump();
        self.bump();
        self.bump();
        self.bump();
        self.nested(Self::schema_field_value)
            .map(|(schema, _)| schema)
    }

    /// A full expression: disjuncts of conjunctions.
    fn schema_expression(&mut self) -> Result<(Schema, Option<Value>)> {
        let mut disjuncts = Vec::new();
        loop {
            let pos = self.pos();
            let default = self.at_punct("*");
            if default {
                self.bump();
            }
            let term = self.schema_conjunction()?;
            disjuncts.push(Disjunct { term, default, pos });
            if !self.at_punct("|") {
                break;
            }
            self.bump();
        }
        self.reject_trailing_operator()?;
        let constant = match disjuncts.as_slice() {
            [Disjunct {
                term:
                    Term::Value(v)
                    | Term::Type {
                        literal: Some(v), ..
                    },
                default: false,
                ..
            }] => Some(v.clone()),
            _ => None,
        };
        Ok((lower_disjunction(disjuncts)?, constant))
    }

    fn reject_trailing_operator(&self) -> Result<()> {
        match self.kind() {
            Kind::Comma { .. } | Kind::Eof | Kind::Punct("}" | "]" | ")" | "@") => Ok(()),
            Kind::Punct(op) => Err(beyond_subset(
                self.pos(),
                &format!("an expression with `{op}`"),
            )),
            _ => Err(self.unexpected("expected a new line or `,` after the value")),
        }
    }

    fn schema_conjunction(&mut self) -> Result<Term> {
        let pos = self.pos();
        let first = (self.schema_unary()?, pos);
        if !self.at_punct("&") {
            return Ok(first.0);
        }
        let mut terms = vec![first];
        while self.at_punct("&") {
            self.bump();
            let pos = self.pos();
            terms.push((self.schema_unary()?, pos));
        }
        Ok(Term::Type {
            schema: lower_conjunction(terms)?,
            literal: None,
        })
    }

    fn schema_unary(&mut self) -> Result<Term> {
        let pos = self.pos();
        match self.kind() {
            Kind::Punct(op @ (">=" | "<=" | ">" | "<")) => {
                self.bump();
                match self
                    .scalar_len()
                    .map(|_| self.scalar_literal())
                    .transpose()?
                {
                    Some(Value::Number(limit)) => Ok(Term::Bound { op, limit }),
                    _ => Err(beyond_subset(
                        pos,
                        &format!("a `{op}` bound that is not a number"),
                    )),
                }
            }
            Kind::Punct("=~") => {
                self.bump();
                if self.kind()
                    != (Kind::Str {
                        interpolated: false,
                    })
                {
                    return Err(beyond_subset(
                        pos,
                        "a `=~` pattern that is not a string literal",
                    ));
                }
                let pattern = decode_string(self.text(), self.pos())?;
                self.bump();
                Ok(Term::Pattern(pattern))
            }
            Kind::Punct(op @ ("!=" | "!~" | "!")) => {
                Err(beyond_subset(pos, &format!("the `{op}` constraint")))
            }
            Kind::Punct("*") => Err(beyond_subset(
                pos,
                "a `*` default that does not start a disjunct",
            )),
            _ => {
                let term = self.schema_primary()?;
                if self.at_punct(".") || self.at_punct("(") || self.at_punct("[") {
                    return Err(beyond_subset(
                        self.pos(),
                        &format!("a selector, call or index `{}`", self.text()),
                    ));
                }
                Ok(term)
            }
        }
    }

    fn schema_primary(&mut self) -> Result<Term> {
        let pos = self.pos();
        match self.kind() {
            Kind::Str { interpolated: true } => {
                Err(beyond_subset(pos, "a string interpolation `\\(…)`"))
            }
            Kind::Bytes => Err(beyond_subset(pos, "a bytes literal")),
            Kind::Ident if self.text() == "null" => Err(beyond_subset(pos, "`null`")),
            _ if self.scalar_len().is_some() => Ok(Term::Value(self.scalar_literal()?)),
            Kind::Ident => self.schema_ident(),
            Kind::Punct("{") => self.nested(Self::schema_struct),
            Kind::Punct("[") => self.nested(Self::schema_list),
            Kind::Punct("(") => {
                self.bump();
                let (schema, literal) = self.nested(Self::schema_expression)?;
                self.expect_punct(")", "to close the parenthesis")?;
                Ok(literal.map_or(
                    Term::Type {
                        schema,
                        literal: None,
                    },
                    Term::Value,
                ))
            }
            _ => Err(self
                .unexpected("expected a type such as `string`, `int`, `bool`, a struct or a list")),
        }
    }

    /// A predeclared type, or a named construct beyond the subset.
    fn schema_ident(&mut self) -> Result<Term> {
        let pos = self.pos();
        let name = self.text();
        if let Some(schema) = predeclared_type(name) {
            self.bump();
            return Ok(Term::Type {
                schema,
                literal: None,
            });
        }
        let construct = match name {
            "if" | "for" => format!("an `{name}` comprehension"),
            "let" => "a `let` declaration".to_string(),
            "bytes" => "the `bytes` type".to_string(),
            _ => {
                let mut path = name.to_string();
                let mut ahead = 1;
                while self.punct_at(ahead, ".") && self.kind_at(ahead + 1) == Kind::Ident {
                    path.push('.');
                    path.push_str(self.text_at(ahead + 1));
                    ahead += 2;
                }
                if self.punct_at(ahead, "(") {
                    format!("the function call `{path}(…)`")
                } else if name.starts_with('#') {
                    format!("the reference to definition `{path}`")
                } else {
                    format!("the reference `{path}`")
                }
            }
        };
        Err(beyond_subset(pos, &construct))
    }

    fn schema_struct(&mut self) -> Result<Term> {
        let open = self.pos();
        self.bump();
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut additional = None;
        let mut literal = Some(Map::new());
        loop {
            let pos = self.pos();
            match self.kind() {
                Kind::Punct("}") => {
                    self.bump();
                    break;
                }
                Kind::Eof => return Err(error(open, "this `{` is never closed")),
                Kind::Comma { .. } => {
                    self.bump();
                    continue;
                }
                Kind::Punct("...") => {
                    self.bump();
                    literal = None;
                }
                _ if self.is_pattern_start() => {
                    if additional.is_some() {
                        return Err(beyond_subset(pos, "a second pattern constraint"));
                    }
                    additional = Some(self.schema_pattern()?);
                    literal = None;
                }
                _ if self.is_field_start() => {
                    let field = self.schema_field()?;
                    if properties.contains_key(&field.name) {
                        return Err(beyond_subset(
                            field.pos,
                            &format!("declaring `{}` twice (unification)", field.name),
                        ));
                    }
                    match (&mut literal, field.constant) {
                        (Some(values), Some(value)) => {
                            values.insert(field.name.clone(), value);
                        }
                        _ => literal = None,
                    }
                    if field.required {
                        required.push(field.name.clone());
                    }
                    properties.insert(field.name, Value::Object(field.schema));
                }
                _ => return Err(self.struct_element_error()),
            }
            self.field_end()?;
        }
        let schema = object_schema(properties, required, additional);
        Ok(Term::Type {
            schema,
            literal: literal.map(Value::Object),
        })
    }

    /// The error for something inside a parameter struct that is not a field.
    fn struct_element_error(&self) -> CueError {
        let pos = self.pos();
        match self.kind() {
            Kind::Ident if matches!(self.text(), "if" | "for") => {
                beyond_subset(pos, &format!("an `{}` comprehension", self.text()))
            }
            Kind::Ident if self.text() == "let" => beyond_subset(pos, "a `let` declaration"),
            Kind::Punct("[") => beyond_subset(pos, "a pattern constraint other than `[string]: T`"),
            Kind::Ident | Kind::Punct("(") => beyond_subset(
                pos,
                &format!("the embedded expression starting with `{}`", self.text()),
            ),
            _ => self.unexpected("expected a field"),
        }
    }

    fn schema_list(&mut self) -> Result<Term> {
        let open = self.pos();
        self.bump();
        if self.at_punct("...") {
            self.bump();
            let items = if self.at_punct("]") {
                Map::new()
            } else {
                self.nested(Self::schema_expression)?.0
            };
            self.expect_punct("]", "to close the list type `[...T]`")?;
            return Ok(Term::Type {
                schema: array_schema(items),
                literal: None,
            });
        }
        let mut values = Vec::new();
        loop {
            let pos = self.pos();
            match self.kind() {
                Kind::Punct("]") => {
                    self.bump();
                    return Ok(Term::Value(Value::Array(values)));
                }
                Kind::Eof => return Err(error(open, "this `[` is never closed")),
                Kind::Punct("...") => {
                    return Err(beyond_subset(
                        pos,
                        "a list with fixed leading elements `[T, ...U]`",
                    ));
                }
                _ => match self.nested(Self::schema_expression)? {
                    (_, Some(value)) => values.push(value),
                    (_, None) => {
                        return Err(beyond_subset(
                            pos,
                            "a list element that is not a concrete value",
                        ));
                    }
                },
            }
            match self.kind() {
                Kind::Comma { .. } => self.bump(),
                Kind::Punct("]") => {}
                _ => return Err(self.unexpected("expected `,` or `]` after the list element")),
            }
        }
    }
}

/// The schema of a predeclared CUE type, or `None` for any other name.
fn predeclared_type(name: &str) -> Option<Schema> {
    let typed = |ty: &str| object_map([("type", Value::from(ty))]);
    let ranged = |min: i64, max: Option<u64>| {
        let mut schema = typed("integer");
        schema.insert("minimum".into(), Value::from(min));
        if let Some(max) = max {
            schema.insert("maximum".into(), Value::from(max));
        }
        schema
    };
    Some(match name {
        "string" => typed("string"),
        "bool" => typed("boolean"),
        "int" | "int64" => typed("integer"),
        "float" | "number" | "float32" | "float64" => typed("number"),
        "uint" | "uint64" => ranged(0, None),
        "int8" => ranged(-128, Some(127)),
        "int16" => ranged(-32_768, Some(32_767)),
        "int32" => ranged(-2_147_483_648, Some(2_147_483_647)),
        "uint8" => ranged(0, Some(255)),
        "uint16" => ranged(0, Some(65_535)),
        "uint32" => ranged(0, Some(4_294_967_295)),
        "_" => Map::new(),
        _ => return None,
    })
}

fn object_map<const N: usize>(entries: [(&str, Value); N]) -> Schema {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

fn object_schema(
    properties: Map<String, Value>,
    required: Vec<String>,
    additional: Option<Schema>,
) -> Schema {
    let mut schema = object_map([("type", Value::from("object"))]);
    if !properties.is_empty() {
        schema.insert("properties".into(), Value::Object(properties));
    }
    if !required.is_empty() {
        schema.insert(
            "required".into(),
            Value::Array(required.into_iter().map(Value::String).collect()),
        );
    }
    if let Some(additional) = additional {
        schema.insert("additionalProperties".into(), Value::Object(additional));
    }
    schema
}

fn array_schema(items: Schema) -> Schema {
    object_map([
        ("type", Value::from("array")),
        ("items", Value::Object(items)),
    ])
}

/// The JSON Schema type name of a concrete value.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `value` is an instance of `schema` as far as its `type` and `enum` go.
fn schema_accepts(schema: &Schema, value: &Value) -> bool {
    let type_ok = match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("number") => value.is_number(),
        Some(ty) => json_type(value) == ty,
    };
    let enum_ok = match schema.get("enum") {
        Some(Value::Array(options)) => options.contains(value),
        _ => true,
    };
    type_ok && enum_ok
}

/// The schema of a single term.
fn lower_term(term: Term, pos: Pos) -> Result<Schema> {
    match term {
        Term::Value(value) => {
            let mut schema = object_map([("type", Value::from(json_type(&value)))]);
            if !value.is_array() && !value.is_object() {
                schema.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
            schema.insert("default".into(), value);
            Ok(schema)
        }
        Term::Type { schema, .. } => Ok(schema),
        Term::Bound { .. } | Term::Pattern(_) => lower_conjunction(vec![(term, pos)]),
    }
}

/// `T & >=a & <=b & =~"re"`: one type (or none) refined by bounds and patterns.
fn lower_conjunction(terms: Vec<(Term, Pos)>) -> Result<Schema> {
    let mut base: Option<Schema> = None;
    let mut constraints = Vec::new();
    for (term, pos) in terms {
        match term {
            Term::Type { schema, .. } => {
                if base.is_some() {
                    return Err(beyond_subset(pos, "a conjunction `&` of two types"));
                }
                base = Some(schema);
            }
            Term::Value(_) => {
                return Err(beyond_subset(
                    pos,
                    "a conjunction `&` with a concrete value",
                ));
            }
            constraint => constraints.push((constraint, pos)),
        }
    }
    let implied = if constraints
        .iter()
        .any(|(t, _)| matches!(t, Term::Pattern(_)))
    {
        "string"
    } else {
        "number"
    };
    let mut schema = base.unwrap_or_else(|| object_map([("type", Value::from(implied))]));
    for (constraint, pos) in constraints {
        match constraint {
            Term::Bound { op, limit } => apply_bound(&mut schema, op, &limit, pos)?,
            Term::Pattern(pattern) => {
                if schema.get("type").and_then(Value::as_str) != Some("string") {
                    return Err(beyond_subset(
                        pos,
                        "a `=~` pattern on a type other than string",
                    ));
                }
                if schema
                    .insert("pattern".into(), Value::String(pattern))
                    .is_some()
                {
                    return Err(beyond_subset(pos, "a second `=~` pattern"));
                }
            }
            Term::Type { .. } | Term::Value(_) => {}
        }
    }
    Ok(schema)
}

/// Add `minimum`/`maximum` for a bound, keeping the tighter one. Exclusive bounds are only
/// accepted on integers (where `>n` is `>=n+1`): JSON Schema and OpenAPI 3.0 disagree on how
/// to write them, and KubeVela reads these schemas as OpenAPI 3.0.
fn apply_bound(schema: &mut Schema, op: &str, limit: &Number, pos: Pos) -> Result<()> {
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    if ty != "integer" && ty != "number" {
        return Err(beyond_subset(
            pos,
            &format!("the bound `{op}` on a non-numeric type"),
        ));
    }
    let exclusive = |shift: i64| -> Result<Number> {
        match (ty, limit.as_i64()) {
            ("integer", Some(n)) => n
                .checked_add(shift)
                .map(Number::from)
                .ok_or_else(|| beyond_subset(pos, &format!("the bound `{op}{n}`"))),
            _ => Err(beyond_subset(
                pos,
                &format!("the exclusive bound `{op}` on a non-integer type"),
            )),
        }
    };
    let (key, value, tighter_is_greater) = match op {
        ">=" => ("minimum", limit.clone(), true),
        ">" => ("minimum", exclusive(1)?, true),
        "<=" => ("maximum", limit.clone(), false),
        _ => ("maximum", exclusive(-1)?, false),
    };
    let new = value.as_f64().unwrap_or(0.0);
    let keep_old = schema.get(key).and_then(Value::as_f64).is_some_and(|old| {
        if tighter_is_greater {
            old >= new
        } else {
            old <= new
        }
    });
    if !keep_old {
        schema.insert(key.into(), Value::Number(value));
    }
    Ok(())
}

/// `*default | type`, enums `"a" | "b"`, or a single term.
fn lower_disjunction(disjuncts: Vec<Disjunct>) -> Result<Schema> {
    let first_pos = disjuncts
        .first()
        .map_or(Pos { line: 1, column: 1 }, |d| d.pos);
    let mut disjuncts = disjuncts;
    if disjuncts.len() == 1 && disjuncts.first().is_some_and(|d| !d.default) {
        let only = disjuncts.remove(0);
        return lower_term(only.term, only.pos);
    }
    let mut default: Option<(Value, Pos)> = None;
    let mut literals: Vec<(Value, Pos)> = Vec::new();
    let mut types: Vec<(Schema, Pos)> = Vec::new();
    for Disjunct {
        term,
        default: is_default,
        pos,
    } in disjuncts
    {
        let concrete = match &term {
            Term::Value(value) => Some(value.clone()),
            Term::Type {
                literal: Some(value),
                ..
            } if is_default => Some(value.clone()),
            _ => None,
        };
        if is_default {
            if default.is_some() {
                return Err(beyond_subset(pos, "a second `*` default"));
            }
            let value = concrete
                .ok_or_else(|| beyond_subset(pos, "a `*` default that is not a concrete value"))?;
            default = Some((value.clone(), pos));
            literals.push((value, pos));
        } else if let Some(value) = concrete {
            literals.push((value, pos));
        } else {
            types.push((lower_term(term, pos)?, pos));
        }
    }
    if let Some((_, pos)) = types.get(1) {
        return Err(beyond_subset(
            *pos,
            "a disjunction of several types (such as `string | int`)",
        ));
    }
    let mut schema = match types.pop() {
        Some((schema, _)) => {
            if let Some((value, pos)) = literals.iter().find(|(v, _)| !schema_accepts(&schema, v)) {
                return Err(beyond_subset(
                    *pos,
                    &format!(
                        "a disjunction of several types ({} and a type)",
                        short(value)
                    ),
                ));
            }
            schema
        }
        None => enum_schema(&literals, first_pos)?,
    };
    if let Some((value, _)) = default {
        schema.insert("default".into(), value);
    }
    Ok(schema)
}

/// `"a" | "b" | "c"`: an enum of scalars of one type.
fn enum_schema(literals: &[(Value, Pos)], pos: Pos) -> Result<Schema> {
    let mut ty: Option<&'static str> = None;
    for (value, at) in literals {
        let this = json_type(value);
        if matches!(this, "array" | "object") {
            return Err(beyond_subset(*at, "an enum of lists or structs"));
        }
        ty = match (ty, this) {
            (None, this) => Some(this),
            (Some(prev), this) if prev == this => Some(prev),
            (Some("integer" | "number"), "integer" | "number") => Some("number"),
            _ => return Err(beyond_subset(*at, "an enum mixing value types")),
        };
    }
    let mut schema = object_map([("type", Value::from(ty.unwrap_or("string")))]);
    let mut options: Vec<Value> = Vec::new();
    for (value, _) in literals {
        if !options.contains(value) {
            options.push(value.clone());
        }
    }
    if options.is_empty() {
        return Err(beyond_subset(pos, "an empty disjunction"));
    }
    schema.insert("enum".into(), Value::Array(options));
    Ok(schema)
}

/// The description of a field from its doc comment: the `+usage=` text (continued by the
/// following lines up to the next `+tag` line), or else the comment lines that are not `+tag`
/// markers, as KubeVela's schema generator does.
fn describe_doc(doc: &[String]) -> Option<String> {
    let lines: Vec<&str> = doc.iter().map(|line| line.trim()).collect();
    let usage_at = lines.iter().position(|line| line.starts_with("+usage="));
    let described: Vec<&str> = match usage_at {
        Some(at) => {
            let first = lines
                .get(at)
                .and_then(|l| l.strip_prefix("+usage="))
                .unwrap_or("");
            let rest = lines
                .iter()
                .skip(at + 1)
                .take_while(|l| !l.starts_with('+'));
            std::iter::once(first.trim()).chain(rest.copied()).collect()
        }
        None => lines.into_iter().filter(|l| !l.starts_with('+')).collect(),
    };
    let text = described.join("\n").trim().to_string();
    if text.is_empty() {
        None
    } else {
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const COMPONENT: &str = r##"import (
	"strconv"
	"strings"
)

// A web service component.
"webservice": {
	type:        "component"
	alias:       "ws"
	description: "Describes long-running, scalable, containerized services."
	annotations: {
		"category":                       "Application Delivery"
		"definition.oam.dev/example-url": "https://example.com/ws.yaml"
	}
	labels: "ui-hidden": "true"
	attributes: {
		workload: definition: {
			apiVersion: "apps/v1"
			kind:       "Deployment"
		}
		workload: type: "deployments.apps"
		status: {
			customStatus: #"""
				ready: {
					readyReplicas: *0 | int
				} & {
					if context.output.status.readyReplicas != _|_ {
						readyReplicas: context.output.status.readyReplicas
					}
				}
				message: "Ready:\(ready.readyReplicas)/\(context.output.spec.replicas)"
				"""#
			healthPolicy: #"""
				isHealth: context.output.spec.replicas == ready.readyReplicas
				"""#
		}
	}
}
template: {
	output: {
		apiVersion: "apps/v1"
		kind:       "Deployment"
		spec: {
			selector: matchLabels: "app.oam.dev/component": context.name
			template: {
				metadata: labels: "app.oam.dev/component": context.name
				spec: containers: [{
					name:  context.name
					image: parameter.image
					if parameter["cmd"] != _|_ {
						command: parameter.cmd
					}
					env: [ for k, v in parameter.env {name: k, value: strconv.FormatInt(v, 10)}]
				}]
			}
		}
	}
	// a } in a comment and "}" in a string must not end the block
	outputs: note: {data: "}{" + #"raw "}" string"# + strings.ToUpper("\(context.name)-\("}")")}
	parameter: {
		// +usage=Which image would you like to use for your service
		image: string
		cmd?: [...string]
		env: [string]: int
	}
}
"##;

    const TRAIT: &str = r#"scaler: {
	type:        "trait"
	description: "Manually scale K8s pod for your workload which follows the pattern."
	attributes: {
		podDisruptive: false
		appliesToWorkloads: ["deployments.apps", "statefulsets.apps"]
		conflictsWith: []
	}
}
template: {
	parameter: {
		// +usage=Specify the number of workload
		replicas: *1 | int
	}
	patch: spec: replicas: parameter.replicas
}
"#;

    const WORKFLOW_STEP: &str = r#"import "vela/op"

"apply-object": {
	type: "workflow-step"
	annotations: {"category": "Resource Management"}
	labels: {}
	description: "Apply raw kubernetes objects for your workflow steps"
}
template: {
	apply: op.#Apply & {value: parameter.value, cluster: parameter.cluster}
	parameter: {value: {...}, cluster: *"" | string}
}
"#;

    const POLICY: &str = r#"package main

"topology": {
	type: "policy"
	annotations: {}
	description: "Describe the destination where components should be deployed to."
	attributes: {}
}

template: {
	parameter: {
		clusters?: [...string]
		namespace?: string
	}
}
"#;

    const LITERALS: &str = r##"literals: {
	type: "trait"
	description: """
		first line
		  indented "quoted"
		last \t tab
		"""
	attributes: {
		raw:      #"C:\path\n "quoted" \#n"#
		esc:      "a\"b\\c\u00e9\U0001F600\/\n"
		multiRaw: #"""
			\d+ "x"
			"""#
		nums: [1, -2, 3.5, 1e3, 0x1F, 0o17, 0b101, 1_000, 2Ki, 1.5K, -0.25, +7, 0.5Ki, -1M]
		flags: [true, false, null]
		nested: a: b: c: 1
		nested: a: b: d: "two"
		nested: {a: b: c: 1}
		"quoted key": {x: 1, y: 2}, trailing: [1, 2,],
		empty: {}
		same: [1, {a: 1}]
		same: [1, {b: 2}]
	}
}
template: {patch: {}}
"##;

    const CONFIG: &str = r#"import "strconv"

metadata: {
	name:        "demo-config"
	alias:       "Demo Config"
	description: "Every construct of the supported subset"
	sensitive:   true
	scope:       "project"
}

template: {
	output: {
		apiVersion: "v1"
		kind:       "Secret"
		metadata: name: context.name
		if parameter.token != _|_ {
			stringData: token: parameter.token
		}
		stringData: port: strconv.FormatInt(parameter.port, 10)
	}
	parameter: {
		// +usage=The server URL
		url: string
		// +usage=An access token
		token?: string
		// +usage=The port
		port: *8080 | int
		ratio: *0.5 | float
		weight?: number
		enabled: *true | bool
		// +usage=The protocol,
		// one of three
		// +short=p
		protocol: *"https" | "http" | "grpc"
		level: "debug" | "info"
		replicas: int & >=1 & <=10
		percent: int & >0 & <100
		code: string & =~"^[a-z]+$"
		tags: [...string]
		servers?: [...{
			host: string
			// +usage=The server port
			port: *80 | int
		}]
		labels: [string]: string
		extra: {
			[string]: int
		}
		auth: {
			username:  string
			password?: string
		}
		tls: enabled: *false | bool
		content: {...}
		anything: _
		kind: "Demo"
		zones: *["a", "b"] | [...string]
		"quoted-key"?: string
		// A plain comment describes too
		// over two lines
		notes?: string

		// A comment separated by a blank line is not a doc comment

		ttl?: uint
	}
}
"#;

    const NACOS: &str = r#"metadata: {
	name:        "nacos-config"
	alias:       "Nacos Configuration"
	description: "Write the configuration to the nacos"
	sensitive:   false
	scope:       "system"
}

template: {
	nacos: {
		// The endpoint can not references the parameter.
		endpoint: {
			name:      "nacos"
			namespace: "vela-system"
		}
		format: "yaml"
		metadata: {
			dataId: parameter.dataId
			if parameter.appName != _|_ {
				appName: parameter.appName
			}
		}
		content: parameter.content
	}
	parameter: {
		// +usage=Configuration ID
		dataId: string
		content: {
			...
		}
		contentType: *"json" | "yaml" | "properties" | "toml"
		appName?: string
	}
}
"#;

    fn definition(text: &str) -> Value {
        match definition_from_cue(text, "vela-system") {
            Ok(value) => value,
            Err(e) => panic!("conversion failed: {e}"),
        }
    }

    fn definition_error(text: &str) -> CueError {
        match definition_from_cue(text, "vela-system") {
            Ok(value) => panic!("expected an error, got {value}"),
            Err(e) => e,
        }
    }

    fn config(text: &str) -> Value {
        match config_template_from_cue(text, "vela-system") {
            Ok(value) => value,
            Err(e) => panic!("conversion failed: {e}"),
        }
    }

    fn config_error(text: &str) -> CueError {
        match config_template_from_cue(text, "vela-system") {
            Ok(value) => panic!("expected an error, got {value}"),
            Err(e) => e,
        }
    }

    fn assert_error(e: &CueError, line: usize, column: usize, needles: &[&str]) {
        assert_eq!(
            (e.line, e.column),
            (line, column),
            "wrong position for: {e}"
        );
        for needle in needles {
            assert!(
                e.message.contains(needle),
                "`{}` does not mention `{needle}`",
                e.message
            );
        }
    }

    /// The text between `template: {` and the last `}` of a fixture.
    fn body_of(text: &str) -> &str {
        let start = text
            .find("template: {")
            .map_or(0, |i| i + "template: {".len());
        let end = text.rfind('}').unwrap_or(text.len());
        text.get(start..end).unwrap_or("")
    }

    fn parameter_schema(config_map: &Value) -> Value {
        let text = config_map["data"]["schema"].as_str().unwrap_or("null");
        serde_json::from_str(text).unwrap_or(Value::Null)
    }

    /// A config template whose parameter block is `parameter`.
    fn config_with(parameter: &str) -> String {
        format!("metadata: name: \"t\"\ntemplate: {{\n\tparameter: {{\n{parameter}\n\t}}\n}}\n")
    }

    // --- definitions -------------------------------------------------------------------------

    #[test]
    fn component_definition_is_converted() {
        let def = definition(COMPONENT);
        let custom_status = "ready: {\n\treadyReplicas: *0 | int\n} & {\n\tif context.output.status.readyReplicas != _|_ {\n\t\treadyReplicas: context.output.status.readyReplicas\n\t}\n}\nmessage: \"Ready:\\(ready.readyReplicas)/\\(context.output.spec.replicas)\"";
        let template = format!(
            "import (\n\t\"strconv\"\n\t\"strings\"\n)\n{}",
            body_of(COMPONENT)
        );
        let expected = json!({
            "apiVersion": "core.oam.dev/v1beta1",
            "kind": "ComponentDefinition",
            "metadata": {
                "name": "webservice",
                "namespace": "vela-system",
                "annotations": {
                    "definition.oam.dev/alias": "ws",
                    "definition.oam.dev/description": "Describes long-running, scalable, containerized services.",
                    "custom.definition.oam.dev/category": "Application Delivery",
                    "definition.oam.dev/example-url": "https://example.com/ws.yaml"
                },
                "labels": {"custom.definition.oam.dev/ui-hidden": "true"}
            },
            "spec": {
                "workload": {
                    "definition": {"apiVersion": "apps/v1", "kind": "Deployment"},
                    "type": "deployments.apps"
                },
                "status": {
                    "customStatus": custom_status,
                    "healthPolicy": "isHealth: context.output.spec.replicas == ready.readyReplicas"
                },
                "schematic": {"cue": {"template": template}}
            }
        });
        assert_eq!(def, expected);
    }

    #[test]
    fn template_text_is_kept_verbatim() {
        let def = definition(COMPONENT);
        let template = def["spec"]["schematic"]["cue"]["template"]
            .as_str()
            .unwrap_or("");
        assert!(template.starts_with("import (\n\t\"strconv\"\n\t\"strings\"\n)\n\n\toutput: {"));
        assert!(
            template.contains("// a } in a comment and \"}\" in a string must not end the block")
        );
        assert!(template.contains(r#"strings.ToUpper("\(context.name)-\("}")")"#));
        assert!(template.ends_with("\t\tenv: [string]: int\n\t}\n"));
    }

    #[test]
    fn trait_definition_with_bare_name() {
        let def = definition(TRAIT);
        assert_eq!(def["kind"], "TraitDefinition");
        assert_eq!(def["metadata"]["name"], "scaler");
        assert_eq!(def["spec"]["podDisruptive"], false);
        assert_eq!(
            def["spec"]["appliesToWorkloads"],
            json!(["deployments.apps", "statefulsets.apps"])
        );
        assert_eq!(def["spec"]["conflictsWith"], json!([]));
        assert_eq!(def["spec"]["schematic"]["cue"]["template"], body_of(TRAIT));
        assert!(
            def["metadata"].get("labels").is_none(),
            "empty labels are omitted"
        );
        assert!(
            def["metadata"]["annotations"]
                .get(ALIAS_ANNOTATION)
                .is_none(),
            "alias only when given"
        );
    }

    #[test]
    fn workflow_step_with_single_import() {
        let def = definition(WORKFLOW_STEP);
        assert_eq!(def["kind"], "WorkflowStepDefinition");
        assert_eq!(def["metadata"]["name"], "apply-object");
        assert_eq!(
            def["metadata"]["annotations"],
            json!({
                "custom.definition.oam.dev/category": "Resource Management",
                "definition.oam.dev/description": "Apply raw kubernetes objects for your workflow steps"
            })
        );
        assert_eq!(
            def["spec"],
            json!({"schematic": {"cue": {"template": format!("import \"vela/op\"\n{}", body_of(WORKFLOW_STEP))}}})
        );
    }

    #[test]
    fn policy_with_package_clause() {
        let def = definition(POLICY);
        assert_eq!(def["kind"], "PolicyDefinition");
        assert_eq!(def["metadata"]["name"], "topology");
        let template = def["spec"]["schematic"]["cue"]["template"]
            .as_str()
            .unwrap_or("");
        assert!(
            !template.contains("package"),
            "the package clause is not part of the template"
        );
        assert!(template.contains("clusters?: [...string]"));
    }

    #[test]
    fn workload_and_aliased_imports() {
        let text = "import (\n\tyaml \"encoding/yaml\", \"strings\"\n)\nimport \"list\"\n\"my.workload\": {type: \"workload\", attributes: {definition: {apiVersion: \"v1\", kind: \"Pod\"}}}\ntemplate: {output: yaml.Marshal({})}\n";
        let def = definition(text);
        assert_eq!(def["kind"], "WorkloadDefinition");
        assert_eq!(def["metadata"]["name"], "my.workload");
        assert_eq!(
            def["spec"]["schematic"]["cue"]["template"],
            "import (\n\tyaml \"encoding/yaml\", \"strings\"\n)\nimport \"list\"\noutput: yaml.Marshal({})"
        );
    }

    #[test]
    fn literal_forms_are_decoded() {
        let def = definition(LITERALS);
        assert_eq!(
            def["metadata"]["annotations"][DESCRIPTION_ANNOTATION],
            "first line\n  indented \"quoted\"\nlast \t tab"
        );
        let spec = &def["spec"];
        assert_eq!(spec["raw"], "C:\\path\\n \"quoted\" \n");
        assert_eq!(spec["esc"], "a\"b\\c\u{e9}\u{1F600}/\n");
        assert_eq!(spec["multiRaw"], "\\d+ \"x\"");
        assert_eq!(
            spec["nums"],
            json!([1, -2, 3.5, 1000.0, 31, 15, 5, 1000, 2048, 1500, -0.25, 7, 512, -1_000_000])
        );
        assert_eq!(spec["flags"], json!([true, false, null]));
        assert_eq!(spec["nested"], json!({"a": {"b": {"c": 1, "d": "two"}}}));
        assert_eq!(spec["quoted key"], json!({"x": 1, "y": 2}));
        assert_eq!(spec["trailing"], json!([1, 2]));
        assert_eq!(spec["empty"], json!({}));
        assert_eq!(spec["same"], json!([1, {"a": 1, "b": 2}]));
    }

    #[test]
    fn repeated_metadata_keys_are_merged() {
        let text = "\"x\": {\n\ttype: \"trait\"\n\tattributes: podDisruptive: true\n\tlabels: a: \"1\"\n\tattributes: {appliesToWorkloads: [\"*\"]}\n\tlabels: {b: \"2\"}\n\ttype: \"trait\"\n}\ntemplate: {patch: {}}\n";
        let def = definition(text);
        assert_eq!(def["spec"]["podDisruptive"], true);
        assert_eq!(def["spec"]["appliesToWorkloads"], json!(["*"]));
        assert_eq!(
            def["metadata"]["labels"],
            json!({"custom.definition.oam.dev/a": "1", "custom.definition.oam.dev/b": "2"})
        );
    }

    #[test]
    fn conflicting_repeated_keys_name_the_key() {
        let e = definition_error(
            "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"a\"\n\tdescription: \"b\"\n}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 4, 2, &["`description`", "\"a\"", "\"b\""]);
        let e = definition_error(
            "\"x\": {\n\ttype: \"trait\"\n\tattributes: podDisruptive: true\n\tattributes: {podDisruptive: false}\n}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 4, 2, &["`podDisruptive`", "true", "false"]);
    }

    #[test]
    fn a_user_annotation_cannot_be_non_string() {
        let e = definition_error(
            "\"x\": {\n\ttype: \"trait\"\n\tannotations: {\n\t\tretries: 3\n\t}\n}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 4, 12, &["annotations.retries", "string"]);
    }

    #[test]
    fn non_literals_in_metadata_are_rejected_with_positions() {
        let cases: [(&str, usize, usize, &[&str]); 9] = [
            (
                "\tdescription: parameter.desc",
                3,
                15,
                &["reference `parameter`", "literal"],
            ),
            (
                "\tdescription: *\"a\" | \"b\"",
                3,
                15,
                &["default marker `*`", "literal"],
            ),
            ("\tdescription: \"a\" | \"b\"", 3, 19, &["`|`", "literal"]),
            ("\tdescription: \"a\" + \"b\"", 3, 19, &["`+`", "literal"]),
            (
                "\tdescription: \"\\(x)\"",
                3,
                15,
                &["interpolation", "literal"],
            ),
            (
                "\tdescription: string",
                3,
                15,
                &["type `string`", "literal"],
            ),
            (
                "\tattributes: {if true {a: 1}}",
                3,
                15,
                &["`if` comprehension", "literal"],
            ),
            ("\tattributes: [1, ...]", 3, 18, &["open list", "literal"]),
            (
                "\tattributes: strings.Join([], \"\")",
                3,
                14,
                &["reference `strings`", "literal"],
            ),
        ];
        for (line, l, c, needles) in cases {
            let text =
                format!("\"x\": {{\n\ttype: \"trait\"\n{line}\n}}\ntemplate: {{patch: {{}}}}\n");
            assert_error(&definition_error(&text), l, c, needles);
        }
    }

    #[test]
    fn structural_errors_have_positions() {
        let e = definition_error("\"x\": {\n\ttype: \"gadget\"\n}\ntemplate: {patch: {}}\n");
        assert_error(&e, 2, 8, &["unknown definition type \"gadget\""]);
        let e = definition_error(
            "\"x\": {type: \"trait\"}\n\"y\": {type: \"trait\"}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 2, 1, &["exactly one metadata field", "`x`", "`y`"]);
        let e = definition_error("\"x\": {type: \"trait\"}\n");
        assert_error(&e, 2, 1, &["no `template"]);
        let e = definition_error("template: {patch: {}}\n");
        assert_error(&e, 2, 1, &["no metadata field"]);
        let e = definition_error("\"x\": {type: \"trait\"}\ntemplate: {\n\tpatch: {\n");
        assert_error(&e, 3, 9, &["never closed"]);
        let e = definition_error("\"x\": {type: \"trait\"}\ntemplate: {\n\tpatch: [}\n}\n");
        assert_error(&e, 3, 10, &["found `}`", "`]`", "line 3, column 9"]);
        let e = definition_error(
            "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"abc\n}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 3, 15, &["not terminated"]);
        let e = definition_error("\"x\": {type: \"trait\"}\ntemplate: {\n\t// only a comment\n}\n");
        assert_error(&e, 2, 11, &["template block is empty"]);
        let e = definition_error("\"x\": {description: \"no type\"}\ntemplate: {patch: {}}\n");
        assert_error(&e, 1, 1, &["no `type`"]);
        let e = definition_error("\"My_Def\": {type: \"trait\"}\ntemplate: {patch: {}}\n");
        assert_error(&e, 1, 1, &["not a valid Kubernetes name"]);
        let e = definition_error("\"x\": {type: \"trait\"}\ntemplate: patch: {}\n");
        assert_error(&e, 2, 11, &["expected `{`"]);
        let e =
            definition_error("\"x\": {type: \"trait\", type: \"policy\"}\ntemplate: {patch: {}}\n");
        assert_error(&e, 1, 22, &["`type`", "\"trait\"", "\"policy\""]);
        let e = definition_error("\"x\": {type: 'trait'}\ntemplate: {patch: {}}\n");
        assert_error(&e, 1, 13, &["bytes"]);
        let e = definition_error(
            "\"x\": {type: \"trait\", attributes: {n: 1.0001K}}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 1, 38, &["`1.0001K` is not a whole number"]);
        let e = definition_error("\"x\": {type: \"trait\", attributes: {n: 99999999999999999999}}\ntemplate: {patch: {}}\n");
        assert_error(&e, 1, 38, &["out of the 64-bit range"]);
        let e = definition_error("\"x\": {type: \"trait\", #hidden: 1}\ntemplate: {patch: {}}\n");
        assert_error(&e, 1, 22, &["definition `#hidden`"]);
    }

    #[test]
    fn multi_line_string_errors() {
        let e = definition_error(
            "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"\"\"abc\n\t\"\"\"\n}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 3, 15, &["new line after the opening quotes"]);
        let e = definition_error(
            "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"\"\"\n\tabc\n\t\tdone\"\"\"\n}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 3, 15, &["closing quotes"]);
        let e = definition_error(
            "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"\"\"\n  abc\n\t\t\"\"\"\n}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 3, 15, &["indented like its closing quotes"]);
        let e = definition_error(
            "\"x\": {type: \"trait\", description: \"bad \\q escape\"}\ntemplate: {patch: {}}\n",
        );
        assert_error(&e, 1, 35, &["`\\q`"]);
    }

    #[test]
    fn declaration_order_and_several_template_blocks() {
        let text = "template: {\n\toutput: {}\n}\n\"late\": {type: \"component\"}\ntemplate: {parameter: {}}\n";
        let def = definition(text);
        assert_eq!(def["metadata"]["name"], "late");
        assert_eq!(
            def["spec"]["schematic"]["cue"]["template"],
            "\n\toutput: {}\n\nparameter: {}"
        );
    }

    #[test]
    fn interpolated_status_details_are_not_literal() {
        let text = "addon: {\n\ttype: \"component\"\n\tattributes: status: details: {\n\t\t$name: \"\\(context.output.metadata.name)\"\n\t}\n}\ntemplate: {output: {}}\n";
        let e = definition_error(text);
        assert_error(&e, 4, 10, &["string interpolation", "literal"]);
    }

    #[test]
    fn crlf_and_bom_are_accepted() {
        let text = format!("\u{feff}{}", TRAIT.replace('\n', "\r\n"));
        let def = definition(&text);
        assert_eq!(def["kind"], "TraitDefinition");
        assert_eq!(def["spec"]["podDisruptive"], false);
    }

    #[test]
    fn error_display_has_line_and_column() {
        let e = CueError {
            line: 3,
            column: 7,
            message: "boom".into(),
        };
        assert_eq!(e.to_string(), "line 3, column 7: boom");
    }

    // --- config templates ----------------------------------------------------------------------

    #[test]
    fn config_template_config_map() {
        let cm = config(CONFIG);
        assert_eq!(cm["apiVersion"], "v1");
        assert_eq!(cm["kind"], "ConfigMap");
        assert_eq!(
            cm["metadata"],
            json!({
                "name": "config-template-demo-config",
                "namespace": "vela-system",
                "labels": {"config.oam.dev/catalog": "velacore-config", "config.oam.dev/scope": "project"},
                "annotations": {
                    "config.oam.dev/alias": "Demo Config",
                    "config.oam.dev/description": "Every construct of the supported subset",
                    "config.oam.dev/sensitive": "true"
                }
            })
        );
        assert_eq!(
            cm["data"]["template"],
            format!("{CONFIG}\n\n\tcontext: {{\n\t\tname: string\n\t\tnamespace: string\n\t}}\n")
        );
        assert_eq!(cm["data"]["expanded-writer"], "{\"nacos\":null}");
    }

    #[test]
    fn config_template_schema_covers_the_subset() {
        let expected = json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "title": "url", "description": "The server URL"},
                "token": {"type": "string", "title": "token", "description": "An access token"},
                "port": {"type": "integer", "default": 8080, "title": "port", "description": "The port"},
                "ratio": {"type": "number", "default": 0.5, "title": "ratio"},
                "weight": {"type": "number", "title": "weight"},
                "enabled": {"type": "boolean", "default": true, "title": "enabled"},
                "protocol": {
                    "type": "string", "enum": ["https", "http", "grpc"], "default": "https",
                    "title": "protocol", "description": "The protocol,\none of three"
                },
                "level": {"type": "string", "enum": ["debug", "info"], "title": "level"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "title": "replicas"},
                "percent": {"type": "integer", "minimum": 1, "maximum": 99, "title": "percent"},
                "code": {"type": "string", "pattern": "^[a-z]+$", "title": "code"},
                "tags": {"type": "array", "items": {"type": "string"}, "title": "tags"},
                "servers": {
                    "type": "array", "title": "servers",
                    "items": {
                        "type": "object",
                        "properties": {
                            "host": {"type": "string", "title": "host"},
                            "port": {"type": "integer", "default": 80, "title": "port", "description": "The server port"}
                        },
                        "required": ["host"]
                    }
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "title": "labels"},
                "extra": {"type": "object", "additionalProperties": {"type": "integer"}, "title": "extra"},
                "auth": {
                    "type": "object", "title": "auth",
                    "properties": {
                        "username": {"type": "string", "title": "username"},
                        "password": {"type": "string", "title": "password"}
                    },
                    "required": ["username"]
                },
                "tls": {
                    "type": "object", "title": "tls",
                    "properties": {"enabled": {"type": "boolean", "default": false, "title": "enabled"}}
                },
                "content": {"type": "object", "title": "content"},
                "anything": {"title": "anything"},
                "kind": {"type": "string", "enum": ["Demo"], "default": "Demo", "title": "kind"},
                "zones": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"], "title": "zones"},
                "quoted-key": {"type": "string", "title": "quoted-key"},
                "notes": {"type": "string", "title": "notes", "description": "A plain comment describes too\nover two lines"},
                "ttl": {"type": "integer", "minimum": 0, "title": "ttl"}
            },
            "required": [
                "url", "level", "replicas", "percent", "code", "tags", "labels", "extra", "auth", "tls",
                "content", "anything"
            ]
        });
        assert_eq!(parameter_schema(&config(CONFIG)), expected);
    }

    #[test]
    fn config_template_defaults_and_nacos_writer() {
        let cm = config(NACOS);
        assert_eq!(cm["metadata"]["labels"]["config.oam.dev/scope"], "system");
        assert_eq!(
            cm["metadata"]["annotations"]["config.oam.dev/sensitive"],
            "false"
        );
        let writer: Value =
            serde_json::from_str(cm["data"]["expanded-writer"].as_str().unwrap_or(""))
                .unwrap_or(Value::Null);
        assert_eq!(
            writer,
            json!({"nacos": {
                "endpoint": {"name": "nacos", "namespace": ""},
                "format": "yaml",
                "metadata": {"dataId": "", "group": "", "namespaceId": ""}
            }})
        );
        let schema = parameter_schema(&cm);
        assert_eq!(schema["required"], json!(["dataId", "content"]));
        assert_eq!(
            schema["properties"]["contentType"],
            json!({"type": "string", "enum": ["json", "yaml", "properties", "toml"], "default": "json", "title": "contentType"})
        );

        let minimal = config("metadata: name: \"m\"\ntemplate: parameter: {}\n");
        assert_eq!(minimal["metadata"]["labels"]["config.oam.dev/scope"], "");
        assert_eq!(
            minimal["metadata"]["annotations"]["config.oam.dev/alias"],
            ""
        );
        assert_eq!(
            minimal["metadata"]["annotations"]["config.oam.dev/sensitive"],
            "false"
        );
        assert_eq!(parameter_schema(&minimal), json!({"type": "object"}));

        let map = config(
            "metadata: {name: \"m\"}\nmetadata: {alias: \"M\"}\ntemplate: {parameter: [string]: string}\n",
        );
        assert_eq!(map["metadata"]["annotations"]["config.oam.dev/alias"], "M");
        assert_eq!(
            parameter_schema(&map),
            json!({"type": "object", "additionalProperties": {"type": "string"}})
        );
    }

    #[test]
    fn config_template_skips_what_it_does_not_read() {
        let text = "package main\n\nimport \"strings\"\n\n#Helper: {a: string}\n_hidden: 1\nlet x = 2\ntemplate: {\n\tnacos: {format: parameter.f, endpoint: name: strings.ToLower(\"N\")}\n\tif x > 1 {\n\t\toutputs: {}\n\t}\n\tparameter: f: *\"json\" | \"yaml\"\n}\nmetadata: name: \"skim\"\n";
        let cm = config(text);
        assert_eq!(cm["metadata"]["name"], "config-template-skim");
        let writer: Value =
            serde_json::from_str(cm["data"]["expanded-writer"].as_str().unwrap_or(""))
                .unwrap_or(Value::Null);
        assert_eq!(writer["nacos"]["format"], "");
        assert_eq!(writer["nacos"]["endpoint"]["name"], "");
        assert_eq!(parameter_schema(&cm)["properties"]["f"]["default"], "json");
    }

    #[test]
    fn config_template_beyond_subset_is_named() {
        let cases: [(&str, usize, usize, &str); 14] = [
            ("\t\tref: parameter.url", 4, 8, "reference `parameter.url`"),
            (
                "\t\tif context.name != _|_ {\n\t\t\tx: string\n\t\t}",
                4,
                3,
                "`if` comprehension",
            ),
            ("\t\tl: [for x in [1] {x}]", 4, 7, "`for` comprehension"),
            (
                "\t\tc: close({a: string})",
                4,
                6,
                "function call `close(…)`",
            ),
            (
                "\t\td: strings.ToLower(\"A\")",
                4,
                6,
                "function call `strings.ToLower(…)`",
            ),
            ("\t\te: string | int", 4, 15, "several types"),
            ("\t\tf: string & !=\"\"", 4, 15, "`!=` constraint"),
            ("\t\tg: #Port", 4, 6, "definition `#Port`"),
            ("\t\th: float & >0", 4, 14, "exclusive bound `>`"),
            ("\t\ti: *1 | *2 | int", 4, 11, "second `*` default"),
            ("\t\tj: \"a\" | 1", 4, 12, "enum mixing value types"),
            ("\t\tk: string\n\t\tk: \"x\"", 5, 3, "declaring `k` twice"),
            ("\t\tlet x = 1", 4, 3, "`let` declaration"),
            ("\t\tm: 1 + 2", 4, 8, "expression with `+`"),
        ];
        for (parameter, line, column, needle) in cases {
            let e = config_error(&config_with(parameter));
            assert_error(
                &e,
                line,
                column,
                &[needle, "beyond the supported CUE subset"],
            );
        }
    }

    #[test]
    fn config_template_metadata_errors() {
        let e = config_error("template: {parameter: {}}\n");
        assert_error(&e, 2, 1, &["no `metadata"]);
        let e = config_error("metadata: {alias: \"a\"}\ntemplate: {parameter: {}}\n");
        assert_error(&e, 1, 1, &["`metadata.name` is required"]);
        let e =
            config_error("metadata: {name: \"a\", scope: \"global\"}\ntemplate: {parameter: {}}\n");
        assert_error(&e, 1, 30, &["`scope`", "\"global\""]);
        let e = config_error(
            "metadata: {name: \"a\", sensitive: \"yes\"}\ntemplate: {parameter: {}}\n",
        );
        assert_error(&e, 1, 34, &["`sensitive` must be a bool"]);
        let e = config_error("metadata: {name: \"a\"}\n");
        assert_error(&e, 2, 1, &["no `template"]);
        let e = config_error("metadata: {name: \"a\"}\ntemplate: {output: {}}\n");
        assert_error(&e, 2, 1, &["`template.parameter` is missing"]);
        let e = config_error(
            "metadata: {name: \"a\"}\ntemplate: {parameter: {}}\ntemplate: parameter: {}\n",
        );
        assert_error(&e, 3, 11, &["more than once"]);
        let e = config_error("metadata: {name: context.name}\ntemplate: {parameter: {}}\n");
        assert_error(&e, 1, 18, &["reference `context`", "literal"]);
        let e = config_error("metadata: {name: \"Bad_Name\"}\ntemplate: {parameter: {}}\n");
        assert_error(&e, 1, 18, &["not a valid Kubernetes name"]);
        let e = config_error("metadata: {name: \"a\"}\ntemplate: {parameter: {a: string}\n");
        assert_error(&e, 2, 11, &["never closed"]);
    }

    // --- robustness ----------------------------------------------------------------------------

    #[test]
    fn deep_nesting_is_refused_without_overflow() {
        let deep =
            |open: &str, close: &str, n: usize| format!("{}1{}", open.repeat(n), close.repeat(n));
        let text = format!(
            "\"x\": {{type: \"trait\", attributes: {{v: {}}}}}\ntemplate: {{patch: {{}}}}\n",
            deep("{a: ", "}", 300)
        );
        assert!(definition_error(&text)
            .message
            .contains("nesting deeper than 128"));
        let text = format!(
            "\"x\": {{type: \"trait\", attributes: {{v: {}}}}}\ntemplate: {{patch: {{}}}}\n",
            deep("[", "]", 300)
        );
        assert!(definition_error(&text)
            .message
            .contains("nesting deeper than 128"));
        let text = format!(
            "\"x\": {{type: \"trait\", attributes: v: {}}}\ntemplate: {{patch: {{}}}}\n",
            deep("a: ", "", 300)
        );
        assert!(definition_error(&text)
            .message
            .contains("nesting deeper than 128"));
        let interpolation = format!("{}{}", "\"\\(".repeat(300), ")\"".repeat(300));
        let text = format!("\"x\": {{type: \"trait\"}}\ntemplate: {{v: {interpolation}}}\n");
        assert!(definition_error(&text)
            .message
            .contains("nested deeper than 128"));
        let text = config_with(&format!("a: {}", deep("{b: ", "}", 300)));
        assert!(config_error(&text)
            .message
            .contains("nesting deeper than 128"));
        let text = config_with(&format!("a: {}", deep("[...", "]", 300)));
        assert!(config_error(&text)
            .message
            .contains("nesting deeper than 128"));
        // Deep CUE inside the template block is only skimmed, iteratively.
        let text = format!(
            "\"x\": {{type: \"trait\"}}\ntemplate: {{v: {}}}\n",
            deep("{a: [", "]}", 5000)
        );
        assert_eq!(definition(&text)["kind"], "TraitDefinition");
        let text = format!(
            "metadata: name: \"a\"\ntemplate: {{output: {}, parameter: {{}}}}\n",
            deep("{a: (", ")}", 5000)
        );
        assert_eq!(config(&text)["kind"], "ConfigMap");
    }

    fn fixtures() -> [&'static str; 7] {
        [
            COMPONENT,
            TRAIT,
            WORKFLOW_STEP,
            POLICY,
            LITERALS,
            CONFIG,
            NACOS,
        ]
    }

    /// Both entry points must answer Ok or Err, with a sensible position, never panic.
    fn check_no_panic(text: &str) {
        let lines = text.lines().count() + 2;
        for result in [
            definition_from_cue(text, "ns"),
            config_template_from_cue(text, "ns"),
        ] {
            if let Err(e) = result {
                assert!(
                    e.line >= 1 && e.line <= lines && e.column >= 1,
                    "bad position {e} for {text:?}"
                );
            }
        }
    }

    #[test]
    fn every_prefix_of_every_fixture_is_handled() {
        for fixture in fixtures() {
            for (i, _) in fixture.char_indices() {
                check_no_panic(&fixture[..i]);
            }
            check_no_panic(fixture);
        }
    }

    #[test]
    fn random_mutations_are_handled() {
        const ALPHABET: &[char] = &[
            '{', '}', '[', ']', '(', ')', '"', '\'', '#', '\\', '\n', ':', '*', '|', '&', '?', '!',
            '.', ',', '/', ' ', '\t', 'a', '1', '_', '$', '>', '=', '~', '-', 'é', '\r',
            '\u{feff}',
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % bound.max(1) as u64).unwrap_or(0)
        };
        for round in 0..3000 {
            let fixtures = fixtures();
            let mut chars: Vec<char> = fixtures[round % fixtures.len()].chars().collect();
            for _ in 0..=next(4) {
                let at = next(chars.len() + 1);
                match next(4) {
                    0 if at < chars.len() => {
                        chars.remove(at);
                    }
                    1 => chars.insert(at, ALPHABET[next(ALPHABET.len())]),
                    2 => {
                        let len = next(40).min(chars.len() - at.min(chars.len()));
                        let copy: Vec<char> =
                            chars[at.min(chars.len())..at.min(chars.len()) + len].to_vec();
                        let to = next(chars.len() + 1);
                        chars.splice(to..to, copy);
                    }
                    _ => chars.truncate(at),
                }
            }
            let text: String = chars.into_iter().collect();
            check_no_panic(&text);
        }
        for _ in 0..2000 {
            let text: String = (0..next(60))
                .map(|_| ALPHABET[next(ALPHABET.len())])
                .collect();
            check_no_panic(&text);
        }
    }
}
