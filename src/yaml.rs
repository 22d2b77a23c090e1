//! Lenient YAML reading for files that come from registries.
//!
//! Real registries contain YAML that strict parsers reject: a key written twice in one mapping,
//! non-string keys, empty documents between `---` separators. This module reads such text into
//! [`serde_json::Value`]s, keeping the last value of a duplicated key and reporting a warning that
//! names the key's path.
//!
//! Every YAML text addonctl reads from a user, a registry, an addon or a cluster goes through
//! [`parse_documents`] / [`parse_single`], which bound the work before and while parsing:
//! - the text is at most [`MAX_TEXT_BYTES`];
//! - a linear pre-scan ([`scan`]) refuses nesting deeper than [`MAX_DEPTH`] (flow `[[[…` or
//!   block) before libyaml sees it, since libyaml's cost grows with the square of the flow depth;
//! - at most [`MAX_NODES`] values are built per text, and alias expansion is bounded by
//!   `serde_yaml`'s repetition limit, so a "billion laughs" document fails instead of exhausting
//!   memory.

mod scan;

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A YAML document could not be parsed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// The parser's message, including the line and column where it stopped.
    pub message: String,
}

/// The documents of a YAML stream plus the warnings found while reading it.
#[derive(Debug, Default, Clone)]
pub struct Documents {
    /// Every non-empty document, in order (documents that are only comments or `~` are skipped).
    pub documents: Vec<Value>,
    /// Human-readable warnings (duplicated keys, values that JSON cannot hold).
    pub warnings: Vec<String>,
}

/// The deepest nesting a YAML text may have (`serde_yaml` itself stops at 128).
pub const MAX_DEPTH: usize = 100;
/// The largest YAML text parsed (the largest registry file, a Helm `index.yaml`, fits).
pub const MAX_TEXT_BYTES: usize = 64 * 1024 * 1024;
/// The most values (scalars and collections, aliases expanded) built from one YAML text.
pub const MAX_NODES: usize = 4_000_000;

/// Checks a text's size and nesting before it is parsed.
fn check_bounds(text: &str) -> Result<(), YamlError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(YamlError {
            message: format!(
                "the YAML text is {} bytes, more than the {MAX_TEXT_BYTES} addonctl reads",
                text.len()
            ),
        });
    }
    scan::check_depth(text, MAX_DEPTH).map_err(|at| YamlError {
        message: format!(
            "nested deeper than {MAX_DEPTH} levels at line {} column {}; addonctl does not read YAML nested this deep",
            at.line, at.column
        ),
    })
}

/// Parses a multi-document YAML stream. Empty documents (a leading `---`, comments only) are
/// skipped. Texts over [`MAX_TEXT_BYTES`], nested deeper than [`MAX_DEPTH`] or holding more than
/// [`MAX_NODES`] values are refused.
pub fn parse_documents(text: &str) -> Result<Documents, YamlError> {
    check_bounds(text)?;
    let warnings = RefCell::new(Vec::new());
    let budget = std::cell::Cell::new(MAX_NODES);
    let mut documents = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let seed = Lenient {
            path: String::new(),
            warnings: &warnings,
            budget: &budget,
        };
        let value = seed.deserialize(document).map_err(|e| YamlError {
            message: e.to_string(),
        })?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(Documents {
        documents,
        warnings: warnings.into_inner(),
    })
}

/// Parses a YAML text that must hold at most one document; an empty text is `null`.
pub fn parse_single(text: &str) -> Result<(Value, Vec<String>), YamlError> {
    let mut parsed = parse_documents(text)?;
    match parsed.documents.len() {
        0 => Ok((Value::Null, parsed.warnings)),
        1 => Ok((parsed.documents.remove(0), parsed.warnings)),
        n => Err(YamlError {
            message: format!("expected one YAML document, found {n}"),
        }),
    }
}

/// Serialises a value as YAML text.
pub fn to_string(value: &Value) -> Result<String, YamlError> {
    serde_yaml::to_string(value).map_err(|e| YamlError {
        message: e.to_string(),
    })
}

struct Lenient<'w> {
    path: String,
    warnings: &'w RefCell<Vec<String>>,
    /// Values left to build.
    budget: &'w std::cell::Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for Lenient<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        let Some(left) = self.budget.get().checked_sub(1) else {
            return Err(de::Error::custom(format!(
                "more than {MAX_NODES} values; addonctl does not read YAML this large"
            )));
        };
        self.budget.set(left);
        deserializer.deserialize_any(self)
    }
}

impl Lenient<'_> {
    fn child(&self, segment: &str) -> Self {
        let path = if self.path.is_empty() {
            segment.to_owned()
        } else {
            format!("{}.{segment}", self.path)
        };
        Lenient {
            path,
            warnings: self.warnings,
            budget: self.budget,
        }
    }
}

impl<'de> Visitor<'de> for Lenient<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if let Some(n) = Number::from_f64(v) {
            Ok(Value::Number(n))
        } else {
            self.warnings.borrow_mut().push(format!(
                "`{}`: the number {v} cannot be represented in JSON; kept as a string",
                self.path
            ));
            Ok(Value::String(v.to_string()))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.child(&items.len().to_string()))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(Key)? {
            let value = map.next_value_seed(self.child(&key))?;
            if out.insert(key.clone(), value).is_some() {
                let path = self.child(&key).path;
                self.warnings.borrow_mut().push(format!(
                    "key `{path}` appears more than once; the last value is used"
                ));
            }
        }
        Ok(Value::Object(out))
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, _data: A) -> Result<Value, A::Error> {
        Err(de::Error::custom(format!(
            "`{}`: YAML tags are not supported here",
            self.path
        )))
    }
}

/// A mapping key: scalars become strings; collections as keys are rejected.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Visitor<'_> for Key {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicated_key_keeps_last_value_and_warns() {
        let parsed = parse_documents("a: 1\nb:\n  c: x\n  c: y\na: 2\n").unwrap();
        assert_eq!(parsed.documents, vec![json!({"a": 2, "b": {"c": "y"}})]);
        assert_eq!(parsed.warnings.len(), 2);
        assert!(
            parsed.warnings[0].contains("`b.c`"),
            "{:?}",
            parsed.warnings
        );
        assert!(parsed.warnings[1].contains("`a`"), "{:?}", parsed.warnings);
    }

    #[test]
    fn leading_separator_comments_and_empty_documents_are_skipped() {
        let text = "# header\n---\n# only a comment\n---\nkind: A\n---\n---\nkind: B\n";
        let parsed = parse_documents(text).unwrap();
        assert_eq!(
            parsed.documents,
            vec![json!({"kind": "A"}), json!({"kind": "B"})]
        );
    }

    #[test]
    fn alias_bomb_is_rejected() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            let refs = vec![format!("*a{p}"); 10].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let err = parse_documents(&text).unwrap_err();
        assert!(err.message.contains("repetition limit"), "{}", err.message);
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing() {
        let text = "[".repeat(200_000);
        let err = parse_documents(&text).unwrap_err();
        assert!(
            err.message.contains("nested deeper than"),
            "{}",
            err.message
        );
        assert!(err.message.contains("line 1 column 100"), "{}", err.message);
        let ok = format!(
            "a: {}{}",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert!(parse_documents(&ok).is_ok());
    }

    #[test]
    fn non_string_keys_become_strings() {
        let parsed = parse_single("1: one\ntrue: yes\n").unwrap().0;
        assert_eq!(parsed, json!({"1": "one", "true": "yes"}));
    }

    #[test]
    fn syntax_error_names_the_position() {
        let err = parse_documents("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(err.message.contains("line"), "{}", err.message);
    }
}
