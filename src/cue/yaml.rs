//! `yaml.Marshal` output as CUE v0.9 prints it: CUE's encoder chooses a style per string (a
//! literal block when it holds a line break; double quotes for YAML 1.1 words such as `on`, `y`
//! or `no` and for date- or time-like text; double quotes again, from go-yaml v3, for any text
//! that would read back as another type: `true`, `null`, `1_000`, `0x1F`, `2024-01-02`), and
//! go-yaml v3's emitter writes the document: block style with an indentation of 2 (lists
//! indented under their key), single quotes where a plain scalar is not allowed, escapes in
//! double quotes, `|2`/`|+`/`|-` block headers, `? ` keys for long or multi-line keys, `{}` and
//! `[]` for empty collections. The emitter below follows go-yaml v3's `emitterc.go`
//! (`yaml_emitter_*`) for the subset a JSON value needs.

use serde_json::Value;

/// A JSON value as a YAML document.
pub(crate) fn marshal(value: &Value) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        indent: -1,
        indents: Vec::new(),
        whitespace: true,
        indention: true,
    };
    e.node(value, Parent::Other, false);
    // The document's end: a line break unless the last line is already ended.
    e.write_indent();
    e.out
}

/// go-yaml v3's indentation of one level.
const BEST_INDENT: i32 = 2;
/// The longest key (in bytes) written as a simple `key: value`; longer ones get `? key`.
const MAX_SIMPLE_KEY: usize = 128;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// What a node is inside of: the first indentation inside a sequence item only skips `- `.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parent {
    SequenceItem,
    Other,
}

struct Emitter {
    out: String,
    /// Characters on the current line.
    column: i32,
    indent: i32,
    indents: Vec<i32>,
    /// Whether the last character written is whitespace (no separating space needed).
    whitespace: bool,
    /// Whether only indentation has been written on the current line.
    indention: bool,
}

impl Emitter {
    fn node(&mut self, value: &Value, parent: Parent, simple_key: bool) {
        match value {
            Value::Object(map) if map.is_empty() => self.empty_collection("{", "}", parent),
            Value::Array(items) if items.is_empty() => self.empty_collection("[", "]", parent),
            Value::Object(map) => {
                self.increase_indent(false, parent);
                for (key, v) in map {
                    self.write_indent();
                    let style = string_style(key);
                    if is_simple_key(key) {
                        self.scalar(key, style, Parent::Other, true);
                        self.write_indicator(":", false, false, false);
                    } else {
                        self.write_indicator("?", true, false, true);
                        self.scalar(key, style, Parent::Other, false);
                        self.write_indent();
                        self.write_indicator(":", true, false, true);
                    }
                    self.node(v, Parent::Other, false);
                }
                self.pop_indent();
            }
            Value::Array(items) => {
                self.increase_indent(false, parent);
                for item in items {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.node(item, Parent::SequenceItem, false);
                }
                self.pop_indent();
            }
            Value::String(s) => self.scalar(s, string_style(s), parent, simple_key),
            Value::Null => self.scalar("null", Style::Plain, parent, simple_key),
            Value::Bool(b) => self.scalar(&b.to_string(), Style::Plain, parent, simple_key),
            Value::Number(n) => self.scalar(&n.to_string(), Style::Plain, parent, simple_key),
        }
    }

    /// `{}` or `[]` (go-yaml writes empty collections in flow style).
    fn empty_collection(&mut self, open: &str, close: &str, parent: Parent) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, parent);
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn increase_indent(&mut self, flow: bool, parent: Parent) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if parent == Parent::SequenceItem {
            self.indent += 2;
        } else {
            self.indent = BEST_INDENT * ((self.indent + BEST_INDENT) / BEST_INDENT);
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
        self.indention = true;
    }

    /// A line break of the value: `\n` as the emitter's break, others (`\r`, U+0085, U+2028,
    /// U+2029) written as they are.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
            self.indention = true;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn scalar(&mut self, value: &str, requested: Style, parent: Parent, simple_key: bool) {
        let a = analyze(value);
        let mut style = requested;
        if simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && simple_key)) {
            style = Style::Single;
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block_allowed || simple_key) {
            style = Style::Double;
        }
        self.increase_indent(true, parent);
        match style {
            Style::Plain => self.write_plain(value),
            Style::Single => self.write_single_quoted(value),
            Style::Double => self.write_double_quoted(value),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, value: &str) {
        if !value.is_empty() && !self.whitespace {
            self.put(' ');
        }
        for c in value.chars() {
            self.put(c);
        }
        if !value.is_empty() {
            self.whitespace = false;
        }
        self.indention = false;
    }

    fn write_single_quoted(&mut self, value: &str) {
        self.write_indicator("'", true, false, false);
        let mut breaks = false;
        for c in value.chars() {
            if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, value: &str) {
        self.write_indicator("\"", true, false, false);
        for c in value.chars() {
            if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let short = match c {
                    '\0' => Some('0'),
                    '\u{7}' => Some('a'),
                    '\u{8}' => Some('b'),
                    '\t' => Some('t'),
                    '\n' => Some('n'),
                    '\u{b}' => Some('v'),
                    '\u{c}' => Some('f'),
                    '\r' => Some('r'),
                    '\u{1b}' => Some('e'),
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '\u{85}' => Some('N'),
                    '\u{a0}' => Some('_'),
                    '\u{2028}' => Some('L'),
                    '\u{2029}' => Some('P'),
                    _ => None,
                };
                if let Some(s) = short {
                    self.put(s);
                } else {
                    let v = u32::from(c);
                    let (letter, digits) = if v <= 0xFF {
                        ('x', 2)
                    } else if v <= 0xFFFF {
                        ('u', 4)
                    } else {
                        ('U', 8)
                    };
                    self.put(letter);
                    for c in format!("{v:0digits$X}").chars() {
                        self.put(c);
                    }
                }
            } else {
                self.put(c);
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // The block header: an indentation indicator when the text starts with a space or a
        // line break, then the chomping: `-` without a final line break, `+` with more than one.
        if value.starts_with(' ') || value.chars().next().is_some_and(is_break) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let mut rev = value.chars().rev();
        let chomp = match (rev.next(), rev.next()) {
            (None, _) => Some("-"),
            (Some(last), _) if !is_break(last) => Some("-"),
            (Some(_), None) => Some("+"),
            (Some(_), Some(before)) if is_break(before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// A key written as `key: value` (not `? key`): one line of at most 128 bytes.
fn is_simple_key(key: &str) -> bool {
    key.len() <= MAX_SIMPLE_KEY && !key.chars().any(is_break)
}

/// The style CUE's YAML encoder and go-yaml's node encoder ask for a string.
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if cue_quotes(s) || !reads_as_string(s) {
        Style::Double
    } else {
        Style::Plain
    }
}

/// CUE's `shouldQuote`: a YAML 1.1 word, or text like a date, a time or a base-60 number.
fn cue_quotes(s: &str) -> bool {
    const LEGACY: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "n", "N", "t", "T", "f", "F", "no", "No", "NO", "true",
        "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", ".Nan",
    ];
    LEGACY.contains(&s) || date_or_time_like(s) || hex_like(s)
}

/// `^[\-+0-9:\. \t]+([-:]|[tT])[\-+0-9:\. \t]+[zZ]?$`: a separator (`-`, `:`, `t`, `T`) with
/// text of `-+0-9:. \t` on both sides, a `z` or `Z` at the end allowed.
fn date_or_time_like(s: &str) -> bool {
    let class = |c: &char| matches!(c, '-' | '+' | '0'..='9' | ':' | '.' | ' ' | '\t');
    let matches = |text: &[char]| {
        (1..text.len().saturating_sub(1)).any(|i| {
            matches!(text[i], '-' | ':' | 't' | 'T')
                && text[..i].iter().all(class)
                && text[i + 1..].iter().all(class)
        })
    };
    let chars: Vec<char> = s.chars().collect();
    matches(&chars)
        || (chars.last().is_some_and(|c| matches!(c, 'z' | 'Z'))
            && matches(&chars[..chars.len() - 1]))
}

/// `^0x[a-fA-F0-9]+$`
fn hex_like(s: &str) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether go-yaml v3 reads the plain text back as a string (its `resolve`): not null, a
/// boolean, an integer, a float or a timestamp.
fn reads_as_string(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "true", "True", "TRUE", "false", "False", "FALSE", "~", "null", "Null", "NULL", ".nan",
        ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
        "-.INF",
    ];
    let Some(first) = s.bytes().next() else {
        return false;
    };
    match first {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => {
            !WORDS.contains(&s)
        }
        b'.' => !WORDS.contains(&s) && !go_float(s),
        b'+' | b'-' | b'0'..=b'9' => {
            if WORDS.contains(&s) || timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            let yaml_float =
                yaml_style_float(&plain) && plain.parse::<f64>().is_ok_and(f64::is_finite);
            !(go_int(&plain)
                || yaml_float
                || plain
                    .strip_prefix("0b")
                    .is_some_and(|r| go_int_in_base(r, 2))
                || plain
                    .strip_prefix("-0b")
                    .is_some_and(|r| go_int_in_base(&format!("-{r}"), 2))
                || plain
                    .strip_prefix("0o")
                    .is_some_and(|r| go_int_in_base(r, 8))
                || plain
                    .strip_prefix("-0o")
                    .is_some_and(|r| go_int_in_base(&format!("-{r}"), 8)))
        }
        _ => true,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeds.
fn go_int(s: &str) -> bool {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let lower = digits.to_ascii_lowercase();
    let (base, rest) = if let Some(r) = lower.strip_prefix("0x") {
        (16, r)
    } else if let Some(r) = lower.strip_prefix("0b") {
        (2, r)
    } else if let Some(r) = lower.strip_prefix("0o") {
        (8, r)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    fits(rest, base, neg, s.starts_with(['+', '-']))
}

/// Go's `strconv.ParseInt(s, base, 64)` succeeds (an optional sign, then digits).
fn go_int_in_base(s: &str, base: u32) -> bool {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    fits(digits, base, neg, true)
}

/// Digits in `base` that fit an int64 (or, without a sign, a uint64).
fn fits(digits: &str, base: u32, neg: bool, signed: bool) -> bool {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(base)) {
        return false;
    }
    match u128::from_str_radix(digits, base) {
        Ok(v) if neg => v <= 1u128 << 63,
        Ok(v) if signed => v < 1u128 << 63,
        Ok(v) => v <= u128::from(u64::MAX),
        Err(_) => false,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn yaml_style_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((whole, frac)) => digits(whole) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// Go's `strconv.ParseFloat(s, 64)` succeeds, for text starting with `.`: `.5`, `.5e3`.
fn go_float(s: &str) -> bool {
    yaml_style_float(s) && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// go-yaml v3's timestamps (Go's `time.Parse` of `2006-1-2`, `2006-1-2T15:4:5.999999999Z07:00`,
/// the same with `t`, and `2006-1-2 15:4:5.999999999`): a four-digit year, a valid date.
fn timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if !s.is_ascii() || b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let rest = &s[5..];
    let (date, time) = match rest.find(['T', 't', ' ']) {
        Some(i) => (&rest[..i], Some((b[5 + i], &rest[i + 1..]))),
        None => (rest, None),
    };
    if !valid_date(year, date) {
        return false;
    }
    match time {
        None => true,
        Some((b' ', t)) => valid_clock(t),
        Some((_, t)) => match t.strip_suffix('Z') {
            Some(clock) => valid_clock(clock),
            None if t.len() > 6 => {
                let (clock, zone) = t.split_at(t.len() - 6);
                valid_clock(clock) && valid_zone(zone)
            }
            None => false,
        },
    }
}

/// One or two digits in `lo..=hi`.
fn small_number(t: &str, lo: u32, hi: u32) -> bool {
    (1..=2).contains(&t.len())
        && t.bytes().all(|c| c.is_ascii_digit())
        && t.parse::<u32>().is_ok_and(|v| (lo..=hi).contains(&v))
}

/// `M-D` of the year, the day within its month.
fn valid_date(year: u32, date: &str) -> bool {
    let Some((m, d)) = date.split_once('-') else {
        return false;
    };
    if !small_number(m, 1, 12) || !small_number(d, 1, 31) {
        return false;
    }
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match m.parse::<u32>().unwrap_or(0) {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    d.parse::<u32>().is_ok_and(|d| d <= days)
}

/// `h:m:s`, optionally with a fraction of a second (`.` or `,` and digits).
fn valid_clock(t: &str) -> bool {
    let (hms, fraction) = match t.find(['.', ',']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    parts.len() == 3
        && small_number(parts[0], 0, 23)
        && small_number(parts[1], 0, 59)
        && small_number(parts[2], 0, 59)
        && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()))
}

/// `+hh:mm` or `-hh:mm`.
fn valid_zone(zone: &str) -> bool {
    let b = zone.as_bytes();
    b.len() == 6
        && matches!(b[0], b'+' | b'-')
        && b[3] == b':'
        && zone[1..3].bytes().all(|c| c.is_ascii_digit())
        && zone[4..].bytes().all(|c| c.is_ascii_digit())
        && zone[1..3].parse::<u32>().is_ok_and(|h| h <= 24)
        && zone[4..].parse::<u32>().is_ok_and(|m| m <= 60)
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// go-yaml's `is_printable`: LF, printable ASCII, U+00A0..U+D7FF and U+E000..U+FFFD but
/// U+FEFF; nothing beyond the Basic Multilingual Plane.
fn is_printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7E}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        && c != '\u{FEFF}'
}

/// What go-yaml's `yaml_emitter_analyze_scalar` finds in a scalar.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = value.chars().collect();
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let (mut line_breaks, mut special_characters, mut tab_characters) = (false, false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let last = chars.len() - 1;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|n| *n == ' ' || *n == '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if c == '\t' {
            tab_characters = true;
        } else if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i == last {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i == last {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
    }
    let mut block_plain_allowed = true;
    let mut single_quoted_allowed = true;
    let mut block_allowed = true;
    if leading_space || leading_break || trailing_space || trailing_break {
        block_plain_allowed = false;
    }
    if trailing_space {
        block_allowed = false;
    }
    if break_space {
        block_plain_allowed = false;
        single_quoted_allowed = false;
    }
    if space_break || tab_characters || special_characters {
        block_plain_allowed = false;
        single_quoted_allowed = false;
    }
    if space_break || special_characters {
        block_allowed = false;
    }
    if line_breaks || block_indicators {
        block_plain_allowed = false;
    }
    Analysis {
        multiline: line_breaks,
        block_plain_allowed,
        single_quoted_allowed,
        block_allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_get_the_style_go_yaml_gives_them() {
        let doc = marshal(&json!({
            "on": "y", "a": "- x", "b": "it's", "c": "1_000", "d": "2024-01-02", "e": "10:30",
            "f": "a\tb", "g": "😀", "h": "1.2.3", "i": "<<", "": "", "j": "0x", "k": "0o17"
        }));
        assert_eq!(
            doc,
            "\"on\": \"y\"\na: '- x'\nb: it's\nc: \"1_000\"\nd: \"2024-01-02\"\ne: \"10:30\"\n\
             \"f\": \"a\\tb\"\ng: \"\\U0001F600\"\nh: 1.2.3\ni: <<\n\"\": \"\"\nj: 0x\nk: \"0o17\"\n"
        );
    }

    #[test]
    fn collections_nest_as_go_yaml_indents_them() {
        let doc = marshal(&json!({"l": [[1, 2], [], {}], "m": [{"a": 1, "b": [2]}], "e": {}}));
        assert_eq!(
            doc,
            "l:\n  - - 1\n    - 2\n  - []\n  - {}\nm:\n  - a: 1\n    b:\n      - 2\ne: {}\n"
        );
        assert_eq!(marshal(&json!("x")), "x\n");
        assert_eq!(marshal(&json!([])), "[]\n");
    }

    #[test]
    fn multi_line_strings_are_literal_blocks_with_go_yaml_headers() {
        let doc = marshal(&json!([
            "a\nb",
            "x\n",
            "\n",
            " lead\nx",
            "trail \nx",
            "a\n\n"
        ]));
        assert_eq!(
            doc,
            "- |-\n  a\n  b\n- |\n  x\n- |2+\n- |2-\n   lead\n  x\n- \"trail \\nx\"\n- |+\n  a\n\n"
        );
        let long = "k".repeat(130);
        assert_eq!(
            marshal(&json!({"a\nb": 1, long.clone(): 2})),
            format!("? |-\n  a\n  b\n: 1\n? {long}\n: 2\n")
        );
    }
}
