//! Parameter references in scripts and CUE templates, checked against the declared parameters.
//!
//! A reference is `parameter.a`, `parameter?.a`, `parameter["a"]` (Rhai) or `parameter.a` (CUE),
//! followed by more segments for nested objects (`parameter.resources.cpu`). A segment is
//! undeclared when the schema node it is read from lists its properties and accepts no others
//! (`object(#{…})` in `parameter.rhai`, a CUE struct, a JSON Schema with `properties`); maps
//! (`map_of`), `any()` and schemas with open `additionalProperties` accept every key.

use serde_json::Value;

/// One segment of a reference, with its position (1-based line and column, in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The key read.
    pub key: String,
    /// Line of the key.
    pub line: usize,
    /// Column of the key.
    pub column: usize,
}

/// A reference to an undeclared parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undeclared {
    /// The dotted path up to the undeclared key (`resources.cpuu`).
    pub path: String,
    /// Where the undeclared key is.
    pub line: usize,
    /// Where the undeclared key is.
    pub column: usize,
    /// The declared keys at that level, for a suggestion.
    pub declared: Vec<String>,
}

/// Which language a text is in: decides what counts as a comment or a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Rhai: `//`, `/* */` (nested), `"…"`, `'…'`, back-tick strings with `${…}`.
    Rhai,
    /// CUE: `//` comments; strings are scanned too (interpolations `\(parameter.x)` are code).
    Cue,
}

/// The undeclared references of `text` against the parameter `schema`.
pub fn undeclared(text: &str, language: Language, schema: &Value) -> Vec<Undeclared> {
    references(text, language)
        .into_iter()
        .filter_map(|segments| check(schema, &segments))
        .collect()
}

fn check(schema: &Value, segments: &[Segment]) -> Option<Undeclared> {
    let mut node = schema;
    let mut path = String::new();
    for (depth, segment) in segments.iter().enumerate() {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(&segment.key);
        if depth == 0 && segment.key == "clusters" {
            // Always accepted, declared or not.
            return None;
        }
        let properties = node.get("properties").and_then(Value::as_object);
        let closed = match node.get("additionalProperties") {
            Some(Value::Bool(false)) => true,
            None => properties.is_some(),
            Some(_) => false,
        };
        if !closed {
            return None;
        }
        match properties.and_then(|p| p.get(&segment.key)) {
            Some(next) => node = next,
            None => {
                return Some(Undeclared {
                    path,
                    line: segment.line,
                    column: segment.column,
                    declared: properties
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default(),
                })
            }
        }
    }
    None
}

/// Every parameter reference of `text`, as its segments.
pub fn references(text: &str, language: Language) -> Vec<Vec<Segment>> {
    let chars: Vec<char> = text.chars().collect();
    let mut code = code_mask(&chars, language);
    if language == Language::Rhai {
        hide_functions_with_a_parameter_argument(&chars, &mut code);
    }
    let positions = positions(&chars);
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let word: Vec<char> = "parameter".chars().collect();
    let mut i = 0;
    while i + word.len() <= chars.len() {
        let starts = code[i]
            && chars[i..i + word.len()] == word[..]
            && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == '.' || chars[i - 1] == '$'))
            && chars.get(i + word.len()).is_none_or(|c| !is_ident(*c));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i + word.len();
        let mut segments = Vec::new();
        while let Some((segment, next)) = next_segment(&chars, &code, j, language) {
            let (line, column) = positions[segment.0];
            segments.push(Segment {
                key: segment.1,
                line,
                column,
            });
            j = next;
        }
        if !segments.is_empty() {
            out.push(segments);
        }
        i = j.max(i + 1);
    }
    out
}

/// The segment after position `j` (`.key`, `?.key`, `["key"]`, `?["key"]`): its start and key,
/// and the position after it. A key followed by `(` is a method call, not a parameter.
fn next_segment(
    chars: &[char],
    code: &[bool],
    j: usize,
    language: Language,
) -> Option<((usize, String), usize)> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let at = |k: usize| chars.get(k).copied();
    let mut k = j;
    if at(k) == Some('?') && language == Language::Rhai {
        k += 1;
    }
    match at(k) {
        Some('.') if code.get(k) == Some(&true) => {
            let start = k + 1;
            let mut end = start;
            while at(end).is_some_and(|c| is_ident(c) || (language == Language::Cue && c == '$')) {
                end += 1;
            }
            if end == start || at(start).is_some_and(|c| c.is_ascii_digit()) {
                return None;
            }
            let mut after = end;
            while at(after).is_some_and(|c| c == ' ' || c == '\t') {
                after += 1;
            }
            if at(after) == Some('(') {
                return None;
            }
            Some(((start, chars[start..end].iter().collect()), end))
        }
        Some('[') if language == Language::Rhai && code.get(k) == Some(&true) => {
            let mut q = k + 1;
            while at(q).is_some_and(char::is_whitespace) {
                q += 1;
            }
            if at(q) != Some('"') {
                return None;
            }
            let start = q + 1;
            let mut end = start;
            while at(end).is_some_and(|c| c != '"' && c != '\\' && c != '\n') {
                end += 1;
            }
            if at(end) != Some('"') {
                return None;
            }
            let mut close = end + 1;
            while at(close).is_some_and(char::is_whitespace) {
                close += 1;
            }
            (at(close) == Some(']'))
                .then(|| ((start, chars[start..end].iter().collect()), close + 1))
        }
        _ => None,
    }
}

/// Rhai functions do not see the script's `parameter`: in `fn f(parameter) { … }` the name is
/// the function's own argument, so its body is not checked.
fn hide_functions_with_a_parameter_argument(chars: &[char], code: &mut [bool]) {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i + 2 < chars.len() {
        let is_fn = code[i]
            && chars[i] == 'f'
            && chars[i + 1] == 'n'
            && (i == 0 || !is_ident(chars[i - 1]))
            && !is_ident(chars[i + 2]);
        if !is_fn {
            i += 1;
            continue;
        }
        let Some(open) = (i..chars.len()).find(|&k| code[k] && chars[k] == '(') else {
            return;
        };
        let Some(close) = (open..chars.len()).find(|&k| code[k] && chars[k] == ')') else {
            return;
        };
        let arguments: String = chars[open + 1..close].iter().collect();
        let takes_parameter = arguments
            .split(|c: char| !is_ident(c))
            .any(|word| word == "parameter");
        let Some(body) = (close..chars.len()).find(|&k| code[k] && chars[k] == '{') else {
            return;
        };
        let mut depth = 0usize;
        let mut end = body;
        for (k, c) in chars.iter().enumerate().skip(body) {
            if !code[k] {
                continue;
            }
            if *c == '{' {
                depth += 1;
            } else if *c == '}' {
                depth -= 1;
                if depth == 0 {
                    end = k;
                    break;
                }
            }
            end = k;
        }
        if takes_parameter {
            code[body..=end].iter_mut().for_each(|c| *c = false);
        }
        i = close + 1;
    }
}

/// 1-based (line, column) of every character.
fn positions(chars: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(chars.len() + 1);
    let (mut line, mut column) = (1, 1);
    for c in chars {
        out.push((line, column));
        if *c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    out.push((line, column));
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Code; the number of `{` open since the enclosing `${`.
    Code(usize),
    Backtick,
}

/// Which characters are code (not inside a comment or a string literal).
fn code_mask(chars: &[char], language: Language) -> Vec<bool> {
    let mut mask = vec![false; chars.len()];
    let mut stack = vec![State::Code(0)];
    let mut i = 0;
    let at = |k: usize| chars.get(k).copied();
    while i < chars.len() {
        let c = chars[i];
        let Some(state) = stack.last().copied() else {
            break;
        };
        match state {
            State::Backtick => {
                if c == '`' {
                    stack.pop();
                } else if c == '$' && at(i + 1) == Some('{') {
                    stack.push(State::Code(0));
                    i += 1;
                }
                i += 1;
            }
            State::Code(depth) => {
                if c == '/' && at(i + 1) == Some('/') {
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                } else if c == '/' && at(i + 1) == Some('*') && language == Language::Rhai {
                    i = skip_block_comment(chars, i);
                } else if (c == '"' || c == '\'') && language == Language::Rhai {
                    i = skip_quoted(chars, i, c);
                } else if c == '`' && language == Language::Rhai {
                    stack.push(State::Backtick);
                    i += 1;
                } else {
                    mask[i] = true;
                    let closes_interpolation = c == '}' && depth == 0 && stack.len() > 1;
                    if closes_interpolation {
                        mask[i] = false;
                        stack.pop();
                    } else if let Some(State::Code(d)) = stack.last_mut() {
                        if c == '{' {
                            *d += 1;
                        } else if c == '}' {
                            *d = d.saturating_sub(1);
                        }
                    }
                    i += 1;
                }
            }
        }
    }
    mask
}

/// The position after a (nested) `/* … */` comment starting at `i`.
fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// The position after a string or character literal starting at `i` with `quote`.
fn skip_quoted(chars: &[char], mut i: usize, quote: char) -> usize {
    i += 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "image": {"type": "string"},
                "resources": {"type": "object", "properties": {"cpu": {}}, "additionalProperties": false},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {},
                "default": {"type": "string"},
            },
            "additionalProperties": false,
        })
    }

    fn paths(text: &str, language: Language) -> Vec<(String, usize, usize)> {
        undeclared(text, language, &schema())
            .into_iter()
            .map(|u| (u.path, u.line, u.column))
            .collect()
    }

    #[test]
    fn undeclared_rhai_references_are_found_with_their_position() {
        let text =
            "let a = parameter.imagee;\nlet b = parameter[\"default\"] + parameter[\"nope\"];\n\
                    let c = parameter?.resources.cpuu;\nlet d = `${parameter.missing} ok`;\n\
                    fn f(x) { parameter.in_fn }\n";
        assert_eq!(
            paths(text, Language::Rhai),
            vec![
                ("imagee".to_owned(), 1, 19),
                ("nope".to_owned(), 2, 43),
                ("resources.cpuu".to_owned(), 3, 30),
                ("missing".to_owned(), 4, 22),
                ("in_fn".to_owned(), 5, 21),
            ]
        );
    }

    #[test]
    fn declared_maps_methods_comments_and_strings_are_not_findings() {
        let text = "// parameter.commented\n/* parameter.block /* nested */ parameter.x */\n\
                    let s = \"parameter.in_string\";\nlet t = `text parameter.plain ${ #{a: 1}.a } parameter.more`;\n\
                    let l = parameter.labels.anything;\nlet e = parameter.extra.deep.path;\n\
                    let k = parameter.keys();\nlet c = parameter.clusters;\nlet r = parameter.resources.cpu;\n\
                    let o = context.parameter.whatever;\nlet my_parameter = 1; my_parameter.x;\n\
                    fn own(a, parameter) { if true { parameter.mine } else { parameter.also } }\n";
        assert_eq!(paths(text, Language::Rhai), Vec::new());
    }

    #[test]
    fn cue_references_are_checked_in_code_and_interpolations() {
        let text = "// parameter.commented\noutput: {\n\timage: parameter.image\n\tname: \"x-\\(parameter.nmae)\"\n\
                    \tcpu: parameter.resources.cpu\n}\n";
        assert_eq!(paths(text, Language::Cue), vec![("nmae".to_owned(), 4, 23)]);
    }

    #[test]
    fn an_open_top_level_schema_accepts_every_reference() {
        let open = json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true});
        assert!(undeclared("parameter.b", Language::Rhai, &open).is_empty());
        let closed = json!({"type": "object", "properties": {"a": {}}});
        assert_eq!(undeclared("parameter.b", Language::Rhai, &closed).len(), 1);
    }
}
