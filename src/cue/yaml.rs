//! `yaml.Marshal` output as CUE prints it (go-yaml v3 style: block style, lists at the key's
//! indentation, double quotes where a string would read as another type, `|-` literal blocks
//! for multi-line strings).

use serde_json::Value;

/// A JSON value as a YAML document.
pub(crate) fn marshal(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => mapping(value, 0, &mut out),
        Value::Array(items) if !items.is_empty() => sequence(value, 0, &mut out),
        other => {
            out.push_str(&scalar(other, 0));
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn is_block(value: &Value) -> bool {
    match value {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn mapping(value: &Value, indent: usize, out: &mut String) {
    let Value::Object(map) = value else {
        return;
    };
    for (i, (key, v)) in map.iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        out.push_str(&string(key, indent));
        out.push(':');
        match v {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                pad(out, indent + 2);
                mapping(v, indent + 2, out);
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                pad(out, indent);
                sequence(v, indent, out);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn sequence(value: &Value, indent: usize, out: &mut String) {
    let Value::Array(items) = value else {
        return;
    };
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        out.push_str("- ");
        if is_block(item) {
            match item {
                Value::Object(_) => mapping(item, indent + 2, out),
                _ => sequence(item, indent + 2, out),
            }
        } else {
            out.push_str(&scalar(item, indent + 2));
            out.push('\n');
        }
    }
}

fn scalar(value: &Value, indent: usize) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s, indent),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

fn string(s: &str, indent: usize) -> String {
    if s.contains('\n') && !s.contains(['\r', '\t']) && !s.starts_with(' ') {
        let chomp = if s.ends_with('\n') { "|" } else { "|-" };
        let mut out = String::from(chomp);
        for line in s.strip_suffix('\n').unwrap_or(s).split('\n') {
            out.push('\n');
            if !line.is_empty() {
                out.extend(std::iter::repeat_n(' ', indent.max(2)));
                out.push_str(line);
            }
        }
        return out;
    }
    if needs_quotes(s) {
        return serde_json::to_string(s).unwrap_or_default();
    }
    s.to_string()
}

fn needs_quotes(s: &str) -> bool {
    if s.is_empty() || s.trim() != s {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "true" | "false" | "null" | "~" | ".inf" | "-.inf" | ".nan"
    ) {
        return true;
    }
    if s.parse::<f64>().is_ok() || s.starts_with("0x") || s.starts_with("0o") {
        return true;
    }
    let first = s.chars().next().unwrap_or(' ');
    if "-?:,[]{}#&*!|>'\"%@`".contains(first)
        && !(first == '-' && s.len() > 1 && !s.starts_with("- ") && s != "---")
    {
        return true;
    }
    s.contains(": ") || s.contains(" #") || s.ends_with(':') || s.chars().any(char::is_control)
}
