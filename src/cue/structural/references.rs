//! References to definitions in a parameter declaration (`parameter: {values: #values}`): the
//! definition is found where CUE would find it (a struct enclosing the reference, the top level
//! of its file, or the top level of another file of the package) and its value is lowered in
//! place, closed as a definition is: a struct of a definition refuses fields it does not
//! declare unless it is open (`...`) or has a pattern constraint.

use super::cursor::MAX_REFERENCES;
use super::schema::Term;
use super::{beyond_subset, error, CueError, Kind, Parser, Pos, Result};

/// How many definitions may be lowered inside one another (a bound besides the nesting depth).
const MAX_RESOLVING: usize = 32;

/// Where a definition is declared: the text of its file, the index of the first token of its
/// value, and the definitions of the structs enclosing it.
struct Found<'a> {
    text: &'a str,
    index: usize,
    scopes: Vec<Vec<(String, usize)>>,
}

impl<'a> Parser<'a> {
    /// The definitions (`#name: …`) declared directly in the struct whose `{` is at `open`,
    /// with the index of their values; empty when the struct cannot be skimmed (its parse then
    /// reports the problem). The cursor is left where it was.
    pub(super) fn struct_definitions(&mut self, open: usize) -> Vec<(String, usize)> {
        let saved = self.index;
        self.index = open;
        let mut found = Vec::new();
        let scanned = self.struct_body(|p| {
            if p.kind() == Kind::Ident && p.text().starts_with('#') && p.is_field_start() {
                let name = p.text().to_string();
                p.bump();
                p.marker();
                p.expect_punct(":", "after the definition name")?;
                found.push((name, p.index));
            }
            p.skip_expression()?;
            p.field_end()
        });
        self.index = saved;
        if scanned.is_ok() {
            found
        } else {
            Vec::new()
        }
    }

    /// The definitions declared at the top level of this parser's file.
    fn top_level_definitions(&mut self) -> Result<Vec<(String, usize)>> {
        let saved = self.index;
        self.index = 0;
        let result = (|| {
            self.preamble()?;
            let mut found = Vec::new();
            while !self.at_eof() {
                if self.at_comma() {
                    self.bump();
                    continue;
                }
                if self.kind() == Kind::Ident
                    && self.text().starts_with('#')
                    && self.is_field_start()
                {
                    let name = self.text().to_string();
                    self.bump();
                    self.marker();
                    self.expect_punct(":", "after the definition name")?;
                    found.push((name, self.index));
                }
                self.skip_expression()?;
                self.decl_end()?;
            }
            Ok(found)
        })();
        self.index = saved;
        result
    }

    /// The one declaration of `name` visible from here; an error when CUE would unify several.
    fn find_definition(&mut self, name: &str, pos: Pos) -> Result<Found<'a>> {
        for level in (0..self.scopes.len()).rev() {
            let hit = self
                .scopes
                .get(level)
                .and_then(|scope| scope.iter().find(|(n, _)| n == name).map(|(_, i)| *i));
            if let Some(index) = hit {
                return Ok(Found {
                    text: self.src,
                    index,
                    scopes: self.scopes.get(..=level).unwrap_or_default().to_vec(),
                });
            }
        }
        let mut hits: Vec<Found<'a>> = Vec::new();
        for (n, index) in self.top_level_definitions()? {
            if n == name {
                hits.push(Found {
                    text: self.src,
                    index,
                    scopes: Vec::new(),
                });
            }
        }
        for other in self.others.clone() {
            if std::ptr::eq(other, self.src) {
                continue;
            }
            // A file that does not parse is reported by its own evaluation.
            let Ok(mut parser) = Parser::new(other) else {
                continue;
            };
            for (n, index) in parser.top_level_definitions().unwrap_or_default() {
                if n == name {
                    hits.push(Found {
                        text: other,
                        index,
                        scopes: Vec::new(),
                    });
                }
            }
        }
        if hits.len() > 1 {
            return Err(beyond_subset(
                pos,
                &format!("the definition `{name}` declared more than once (unification)"),
            ));
        }
        hits.pop().ok_or_else(|| {
            error(
                pos,
                format!(
                    "reference \"{name}\" not found: the definition is declared neither in \
                     `parameter`'s file nor in another file of the package"
                ),
            )
        })
    }

    /// `#name` or `#name.#nested` at the current token: the lowered value of the definition.
    pub(super) fn definition_reference(&mut self) -> Result<Term> {
        let pos = self.pos();
        let mut path = vec![self.text().to_string()];
        self.bump();
        while self.at_punct(".")
            && self.kind_at(1) == Kind::Ident
            && self.text_at(1).starts_with('#')
        {
            self.bump();
            path.push(self.text().to_string());
            self.bump();
        }
        let shown = path.join(".");
        if self.resolving.iter().any(|r| r == &shown) {
            return Err(beyond_subset(
                pos,
                &format!("the recursive definition `{shown}`"),
            ));
        }
        if self.resolving.len() >= MAX_RESOLVING {
            return Err(beyond_subset(
                pos,
                &format!("definitions nested more than {MAX_RESOLVING} deep (at `{shown}`)"),
            ));
        }
        let left = self.references_left.get();
        if left == 0 {
            return Err(beyond_subset(
                pos,
                &format!("more than {MAX_REFERENCES} references to definitions (at `{shown}`)"),
            ));
        }
        self.references_left.set(left - 1);
        let first = path.first().map_or("", String::as_str);
        let found = self.find_definition(first, pos)?;
        let same_file = std::ptr::eq(found.text, self.src);
        let mut parser = Parser::new(found.text)?;
        parser.others.clone_from(&self.others);
        parser.closed = true;
        parser.resolving.clone_from(&self.resolving);
        parser.resolving.push(shown.clone());
        parser.depth = self.depth;
        parser.scopes = found.scopes;
        parser.references_left = std::rc::Rc::clone(&self.references_left);
        parser.fields.clone_from(&self.fields);
        parser.index = found.index;
        let lowered = parser
            .nested_definition(&path[1..], &shown)
            .and_then(|()| parser.nested(Self::schema_field_value));
        let (schema, literal) = lowered.map_err(|e| {
            if same_file {
                e
            } else {
                in_other_file(e, &shown, pos)
            }
        })?;
        Ok(Term::Type { schema, literal })
    }

    /// Moves from the value of a definition to the value of its nested definition `path`
    /// (`#host.#tls`), entering the scopes on the way.
    fn nested_definition(&mut self, path: &[String], shown: &str) -> Result<()> {
        for name in path {
            if !self.at_punct("{") {
                return Err(beyond_subset(
                    self.pos(),
                    &format!("the reference `{shown}` into a definition that is not a struct"),
                ));
            }
            let defs = self.struct_definitions(self.index);
            let Some(index) = defs.iter().find(|(n, _)| n == name).map(|(_, i)| *i) else {
                return Err(error(
                    self.pos(),
                    format!("reference `{shown}`: the definition declares no `{name}`"),
                ));
            };
            self.scopes.push(defs);
            self.index = index;
        }
        Ok(())
    }
}

/// An error in a definition declared in another file, placed at the reference.
fn in_other_file(e: CueError, shown: &str, at: Pos) -> CueError {
    error(
        at,
        format!(
            "{} (in the definition `{shown}`, declared in another file of the package at line {}, \
             column {})",
            e.message, e.line, e.column
        ),
    )
}
