//! Field paths of exclusions and drift reports: `spec.replicas`,
//! `spec.template.spec.containers[0].image`, `metadata.annotations[example.com/owner]`, `*` or
//! `[*]` for any key or item.

use std::fmt::Write as _;

/// Longest path accepted, in characters.
const MAX_PATH_CHARS: usize = 1024;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A key of a mapping.
    Key(String),
    /// An item of a list.
    Index(usize),
    /// Any key or item.
    Any,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    /// Parses `a.b[0].c`, `a[key.with.dots]`, `a.*`, `a[*]`.
    ///
    /// # Errors
    ///
    /// A message saying what is wrong (an empty segment, an unclosed bracket, …).
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("the path is empty".to_owned());
        }
        if text.chars().count() > MAX_PATH_CHARS {
            return Err(format!("longer than {MAX_PATH_CHARS} characters"));
        }
        let mut segments = Vec::new();
        let mut chars = text.chars().peekable();
        let mut key = String::new();
        // Whether the text since the last separator may be empty (right after a bracket).
        let mut after_bracket = false;
        while let Some(c) = chars.next() {
            match c {
                '.' => {
                    if key.is_empty() && !after_bracket {
                        return Err("an empty segment (two dots, or a leading dot)".to_owned());
                    }
                    if !key.is_empty() {
                        segments.push(segment_of_key(std::mem::take(&mut key)));
                    }
                    after_bracket = false;
                    if chars.peek().is_none() {
                        return Err("a trailing dot".to_owned());
                    }
                }
                '[' => {
                    if !key.is_empty() {
                        segments.push(segment_of_key(std::mem::take(&mut key)));
                    }
                    let mut inner = String::new();
                    loop {
                        match chars.next() {
                            Some(']') => break,
                            Some(c) => inner.push(c),
                            None => return Err("an unclosed `[`".to_owned()),
                        }
                    }
                    let inner = inner.trim_matches(|c| c == '"' || c == '\'');
                    if inner.is_empty() {
                        return Err("an empty `[]`".to_owned());
                    }
                    segments.push(match inner {
                        "*" => Segment::Any,
                        _ => inner
                            .parse::<usize>()
                            .map_or_else(|_| Segment::Key(inner.to_owned()), Segment::Index),
                    });
                    after_bracket = true;
                }
                ']' => return Err("a `]` without `[`".to_owned()),
                c => {
                    if after_bracket && key.is_empty() && !segments.is_empty() {
                        return Err("a `.` or `[` must follow `]`".to_owned());
                    }
                    key.push(c);
                }
            }
        }
        if !key.is_empty() {
            segments.push(segment_of_key(key));
        }
        Ok(FieldPath(segments))
    }

    /// Whether this path (an exclusion) covers `path`: it is a prefix of it, `*` matching any
    /// step.
    pub fn covers(&self, path: &[Segment]) -> bool {
        self.0.len() <= path.len()
            && self
                .0
                .iter()
                .zip(path)
                .all(|(mine, theirs)| matches!(mine, Segment::Any) || mine == theirs)
    }
}

fn segment_of_key(key: String) -> Segment {
    if key == "*" {
        Segment::Any
    } else {
        Segment::Key(key)
    }
}

/// `spec.template.spec.containers[0].image`; keys holding `.`, `/`, `[` or `]` in brackets.
pub fn display(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) if key.contains(['.', '/', '[', ']']) => {
                let _ = write!(out, "[{key}]");
            }
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
            Segment::Any => out.push_str("[*]"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Segment {
        Segment::Key(k.to_owned())
    }

    #[test]
    fn paths_parse_keys_indexes_bracketed_keys_and_wildcards() {
        assert_eq!(
            FieldPath::parse("spec.template.spec.containers[0].image").unwrap(),
            FieldPath(vec![
                key("spec"),
                key("template"),
                key("spec"),
                key("containers"),
                Segment::Index(0),
                key("image"),
            ])
        );
        assert_eq!(
            FieldPath::parse("metadata.annotations[example.com/owner]").unwrap(),
            FieldPath(vec![
                key("metadata"),
                key("annotations"),
                key("example.com/owner")
            ])
        );
        assert_eq!(
            FieldPath::parse("spec.containers[*].image").unwrap().0[2],
            Segment::Any
        );
        assert_eq!(FieldPath::parse("data.*").unwrap().0[1], Segment::Any);
    }

    #[test]
    fn malformed_paths_are_refused_with_the_reason() {
        for (bad, reason) in [
            ("", "empty"),
            ("spec..replicas", "empty segment"),
            (".spec", "empty segment"),
            ("spec.", "trailing dot"),
            ("spec[0", "unclosed"),
            ("spec]", "without"),
            ("spec[]", "empty `[]`"),
            ("a[0]b", "must follow"),
        ] {
            let error = FieldPath::parse(bad).unwrap_err();
            assert!(error.contains(reason), "{bad}: {error}");
        }
    }

    #[test]
    fn an_exclusion_covers_the_paths_below_it() {
        let replicas = FieldPath::parse("spec.replicas").unwrap();
        assert!(replicas.covers(&[key("spec"), key("replicas")]));
        assert!(!replicas.covers(&[key("spec")]));
        assert!(!replicas.covers(&[key("spec"), key("template")]));
        let images = FieldPath::parse("spec.containers[*].image").unwrap();
        assert!(images.covers(&[
            key("spec"),
            key("containers"),
            Segment::Index(3),
            key("image")
        ]));
    }

    #[test]
    fn paths_display_as_they_parse() {
        for text in [
            "spec.template.spec.containers[0].image",
            "metadata.labels[app.kubernetes.io/name]",
        ] {
            assert_eq!(display(&FieldPath::parse(text).unwrap().0), text);
        }
    }
}
