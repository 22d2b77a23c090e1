//! The CUE lexer (with CUE's automatic comma insertion) and the decoding of literals, shared by
//! the evaluator's parser and the structural converters of definitions and config templates.

use serde_json::{Number, Value};

/// Where and why a CUE file could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct CueError {
    /// 1-based line of the offending text.
    pub line: usize,
    /// 1-based column of the offending text, counted in characters.
    pub column: usize,
    /// What is wrong, in words meant for the author of the file.
    pub message: String,
}

/// The deepest nesting of structs, lists, fields and string interpolations accepted.
pub(crate) const MAX_DEPTH: usize = 128;

pub(crate) type Result<T> = std::result::Result<T, CueError>;
// ---------------------------------------------------------------------------------------------
// Errors and positions
// ---------------------------------------------------------------------------------------------

/// A 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

pub(crate) fn error(pos: Pos, message: impl Into<String>) -> CueError {
    CueError {
        line: pos.line,
        column: pos.column,
        message: message.into(),
    }
}

pub(crate) fn not_literal(pos: Pos, what: &str) -> CueError {
    error(
        pos,
        format!(
            "{what} is not a literal: the metadata block must be literal CUE \
             (strings, numbers, bools, null, lists and structs)"
        ),
    )
}

pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An identifier or keyword, including `#Definition`, `_hidden` and `$name`.
    Ident,
    /// A number literal, undecoded.
    Number,
    /// A string literal, undecoded; `interpolated` when it contains `\(…)`.
    Str { interpolated: bool },
    /// A single-quoted bytes literal.
    Bytes,
    /// A `,` as written (`explicit`) or inserted at the end of a line.
    Comma { explicit: bool },
    /// An operator or bracket.
    Punct(&'static str),
    /// A character CUE does not use; an error only where a parser looks at it.
    Other,
    /// The end of the input.
    Eof,
}

/// One token, with its byte span, position and the doc comment lines right above it.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) pos: Pos,
    pub(crate) doc: Vec<String>,
}

/// Operators and brackets, longest first so that `...` wins over `.`.
pub(crate) const PUNCTUATION: [&str; 29] = [
    "...", "&&", "||", "==", "!=", "<=", ">=", "=~", "!~", "{", "}", "[", "]", "(", ")", ":", ".",
    "?", "!", "|", "&", "*", "=", "<", ">", "+", "-", "/", "@",
];

pub(crate) struct Lexer<'a> {
    src: &'a str,
    offset: usize,
    line: usize,
    column: usize,
    tokens: Vec<Token>,
    doc: Vec<String>,
    line_has_token: bool,
    line_has_comment: bool,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Lexer {
            src,
            offset: 0,
            line: 1,
            column: 1,
            tokens: Vec::new(),
            doc: Vec::new(),
            line_has_token: false,
            line_has_comment: false,
        }
    }

    fn rest(&self) -> &'a str {
        self.src.get(self.offset..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_nth(&self, n: usize) -> Option<char> {
        self.rest().chars().nth(n)
    }

    fn here(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.offset += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn bump_n(&mut self, n: usize) {
        for _ in 0..n {
            self.bump();
        }
    }

    /// Split the whole input into tokens, ending with [`Kind::Eof`].
    pub(crate) fn run(mut self) -> Result<Vec<Token>> {
        loop {
            match self.peek() {
                None => {
                    self.insert_comma();
                    let pos = self.here();
                    let end = self.src.len();
                    self.tokens.push(Token {
                        kind: Kind::Eof,
                        start: end,
                        end,
                        pos,
                        doc: Vec::new(),
                    });
                    return Ok(self.tokens);
                }
                Some('\n') => {
                    self.insert_comma();
                    self.bump();
                    if !self.line_has_token && !self.line_has_comment {
                        self.doc.clear();
                    }
                    self.line_has_token = false;
                    self.line_has_comment = false;
                }
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('/') if self.peek_nth(1) == Some('/') => self.comment(),
                Some(_) => {
                    let start = self.offset;
                    let pos = self.here();
                    let kind = self.token(0)?;
                    let doc = std::mem::take(&mut self.doc);
                    self.tokens.push(Token {
                        kind,
                        start,
                        end: self.offset,
                        pos,
                        doc,
                    });
                    self.line_has_token = true;
                }
            }
        }
    }

    /// CUE's automatic comma insertion: a line ending after a value gets a comma.
    fn insert_comma(&mut self) {
        let ends_value = self.tokens.last().is_some_and(|t| {
            matches!(
                t.kind,
                Kind::Ident
                    | Kind::Number
                    | Kind::Str { .. }
                    | Kind::Bytes
                    | Kind::Punct(")" | "]" | "}" | "?" | "...")
            )
        });
        if ends_value {
            let pos = self.here();
            let at = self.offset;
            self.tokens.push(Token {
                kind: Kind::Comma { explicit: false },
                start: at,
                end: at,
                pos,
                doc: Vec::new(),
            });
        }
    }

    /// A `//` comment; whole-line comments accumulate as the doc of the next token.
    fn comment(&mut self) {
        self.bump_n(2);
        let start = self.offset;
        while self.peek().is_some_and(|c| c != '\n') {
            self.bump();
        }
        if !self.line_has_token {
            let text = self.src.get(start..self.offset).unwrap_or("");
            self.doc.push(
                text.strip_prefix(' ')
                    .unwrap_or(text)
                    .trim_end()
                    .to_string(),
            );
        }
        self.line_has_comment = true;
    }

    /// Lex the token starting at the current character (which exists and is not blank).
    fn token(&mut self, depth: usize) -> Result<Kind> {
        let pos = self.here();
        let Some(c) = self.peek() else {
            return Ok(Kind::Eof);
        };
        if c == '#' {
            return self.hash_token(pos, depth);
        }
        if c == '"' || c == '\'' {
            return self.string(0, pos, depth);
        }
        if is_ident_start(c) {
            self.ident();
            return Ok(Kind::Ident);
        }
        if c.is_ascii_digit() || (c == '.' && self.peek_nth(1).is_some_and(|d| d.is_ascii_digit()))
        {
            self.number();
            return Ok(Kind::Number);
        }
        if c == ',' {
            self.bump();
            return Ok(Kind::Comma { explicit: true });
        }
        if let Some(p) = PUNCTUATION
            .iter()
            .copied()
            .find(|p| p.starts_with(c) && self.rest().starts_with(p))
        {
            self.bump_n(p.len());
            return Ok(Kind::Punct(p));
        }
        self.bump();
        Ok(Kind::Other)
    }

    /// `#"raw"#`, `#Definition`, or a stray `#`.
    fn hash_token(&mut self, pos: Pos, depth: usize) -> Result<Kind> {
        let hashes = self.rest().chars().take_while(|&c| c == '#').count();
        match self.peek_nth(hashes) {
            Some('"' | '\'') => {
                self.bump_n(hashes);
                self.string(hashes, pos, depth)
            }
            Some(c) if hashes == 1 && is_ident_start(c) => {
                self.bump();
                self.ident();
                Ok(Kind::Ident)
            }
            _ => {
                self.bump();
                Ok(Kind::Other)
            }
        }
    }

    fn ident(&mut self) {
        let hidden_definition = self.peek() == Some('_')
            && self.peek_nth(1) == Some('#')
            && self.peek_nth(2).is_some_and(is_ident_start);
        self.bump();
        if hidden_definition {
            self.bump();
        }
        while self.peek().is_some_and(is_ident_continue) {
            self.bump();
        }
    }

    /// Digits, letters (`0x`, exponents, `Ki` multipliers), `_` and `.`; decoded later.
    fn number(&mut self) {
        let hex = self.rest().starts_with("0x") || self.rest().starts_with("0X");
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                self.bump();
                let exponent = !hex && (c == 'e' || c == 'E');
                if exponent && matches!(self.peek(), Some('+' | '-')) {
                    self.bump();
                }
            } else if c == '.' && !hex && self.peek_nth(1) != Some('.') {
                self.bump();
            } else {
                break;
            }
        }
    }

    /// A string or bytes literal whose opening `#`s (if any) are already consumed.
    fn string(&mut self, hashes: usize, pos: Pos, depth: usize) -> Result<Kind> {
        let quote = self.bump().unwrap_or('"');
        let multiline = self.peek() == Some(quote) && self.peek_nth(1) == Some(quote);
        if multiline {
            self.bump_n(2);
        }
        let quotes = if multiline { 3 } else { 1 };
        let close: String = std::iter::repeat_n(quote, quotes)
            .chain(std::iter::repeat_n('#', hashes))
            .collect();
        let escape: String = std::iter::once('\\')
            .chain(std::iter::repeat_n('#', hashes))
            .collect();
        let mut interpolated = false;
        loop {
            let next = self.peek();
            if next == Some(quote) && self.rest().starts_with(close.as_str()) {
                self.bump_n(quotes + hashes);
                break;
            }
            if next == Some('\\') && self.rest().starts_with(escape.as_str()) {
                self.bump_n(1 + hashes);
                match self.bump() {
                    Some('(') => {
                        self.interpolation(pos, depth + 1)?;
                        interpolated = true;
                    }
                    Some('\n') if !multiline => {
                        return Err(error(
                            pos,
                            "string literal is not terminated before the end of the line",
                        ));
                    }
                    Some(_) => {}
                    None => return Err(error(pos, "string literal is not terminated")),
                }
                continue;
            }
            match self.bump() {
                None => return Err(error(pos, "string literal is not terminated")),
                Some('\n') if !multiline => {
                    return Err(error(
                        pos,
                        "string literal is not terminated before the end of the line",
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(if quote == '\'' {
            Kind::Bytes
        } else {
            Kind::Str { interpolated }
        })
    }

    /// Skip the tokens of a `\(…)` interpolation up to its closing parenthesis.
    fn interpolation(&mut self, pos: Pos, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(error(
                pos,
                format!("string interpolations nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        let mut level = 0usize;
        loop {
            match self.peek() {
                None => return Err(error(pos, "string interpolation `\\(` is not closed")),
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some(_) => match self.token(depth)? {
                    Kind::Punct("(") => level += 1,
                    Kind::Punct(")") if level == 0 => return Ok(()),
                    Kind::Punct(")") => level -= 1,
                    _ => {}
                },
            }
        }
    }
}

pub(crate) fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

pub(crate) fn is_ident_continue(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

// ---------------------------------------------------------------------------------------------
// Literal decoding
// ---------------------------------------------------------------------------------------------

/// Decode a string literal token (any quoting form) into its value.
pub(crate) fn decode_string(raw: &str, pos: Pos) -> Result<String> {
    let hashes = raw.chars().take_while(|&c| c == '#').count();
    let after_hashes = raw.get(hashes..).unwrap_or("");
    if after_hashes.starts_with('\'') {
        return Err(error(
            pos,
            "bytes literals ('…') are not supported here; use a double-quoted string",
        ));
    }
    let multiline = after_hashes.starts_with("\"\"\"");
    let delimiter = if multiline { 3 } else { 1 };
    let body = raw
        .get(hashes + delimiter..raw.len().saturating_sub(delimiter + hashes))
        .ok_or_else(|| error(pos, "malformed string literal"))?;
    if multiline {
        unescape(&dedent_multiline(body, pos)?, hashes, pos)
    } else {
        unescape(body, hashes, pos)
    }
}

/// Apply CUE's multi-line rule: the text must start on a new line, the closing quotes sit on
/// their own line, and their indentation is removed from every line.
pub(crate) fn dedent_multiline(body: &str, pos: Pos) -> Result<String> {
    let body = body.replace("\r\n", "\n");
    let rest = body.strip_prefix('\n').ok_or_else(|| {
        error(
            pos,
            "a multi-line string must start with a new line after the opening quotes",
        )
    })?;
    let (content, indent) = match rest.rfind('\n') {
        Some(i) => (rest.get(..i), rest.get(i + 1..).unwrap_or("")),
        None => (None, rest),
    };
    if !indent.chars().all(|c| c == ' ' || c == '\t') {
        return Err(error(
            pos,
            "the closing quotes of a multi-line string must be on a line of their own",
        ));
    }
    let Some(content) = content else {
        return Ok(String::new());
    };
    let mut lines = Vec::new();
    for line in content.split('\n') {
        if let Some(stripped) = line.strip_prefix(indent) {
            lines.push(stripped);
        } else if indent.starts_with(line) {
            lines.push("");
        } else {
            return Err(error(
                pos,
                "each line of a multi-line string must be indented like its closing quotes",
            ));
        }
    }
    Ok(lines.join("\n"))
}

/// Resolve escape sequences; with `hashes` > 0 (raw strings) only `\#…` escapes count.
pub(crate) fn unescape(body: &str, hashes: usize, pos: Pos) -> Result<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let marked = chars.clone().take(hashes).filter(|&h| h == '#').count() == hashes;
        if !marked {
            out.push('\\');
            continue;
        }
        for _ in 0..hashes {
            chars.next();
        }
        let escaped = match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some(c @ ('\\' | '/' | '"')) => c,
            Some('u') => unicode_escape(&mut chars, 4, pos)?,
            Some('U') => unicode_escape(&mut chars, 8, pos)?,
            Some('(') => return Err(not_literal(pos, "a string interpolation `\\(…)`")),
            Some(other) => {
                return Err(error(
                    pos,
                    format!(
                        "invalid escape sequence `\\{}` in string",
                        other.escape_debug()
                    ),
                ));
            }
            None => return Err(error(pos, "string ends with an unfinished escape sequence")),
        };
        out.push(escaped);
    }
    Ok(out)
}

pub(crate) fn unicode_escape(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    digits: usize,
    pos: Pos,
) -> Result<char> {
    let hex: String = chars.by_ref().take(digits).collect();
    let invalid = || error(pos, format!("invalid unicode escape `{hex}` in string"));
    if hex.len() != digits {
        return Err(invalid());
    }
    let code = u32::from_str_radix(&hex, 16).map_err(|_| invalid())?;
    char::from_u32(code).ok_or_else(invalid)
}

/// Decode a number literal: decimal, `0x`/`0o`/`0b`, `_` separators, exponents and the
/// `K M G T P` (×1000) and `Ki Mi Gi Ti Pi` (×1024) multipliers.
pub(crate) fn decode_number(raw: &str, negative: bool, pos: Pos) -> Result<Value> {
    let invalid = || error(pos, format!("invalid number `{raw}`"));
    let digits: String = raw.chars().filter(|&c| c != '_').collect();
    let lower = digits.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            let magnitude = u64::from_str_radix(rest, radix).map_err(|_| invalid())?;
            return integer_value(i128::from(magnitude), negative, pos);
        }
    }
    let (mantissa, multiplier) = split_multiplier(&digits);
    let is_float = mantissa.contains(['.', 'e', 'E']);
    if mantissa.is_empty() || !mantissa.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(invalid());
    }
    match (is_float, multiplier) {
        (false, multiplier) => {
            let magnitude: i128 = mantissa.parse().map_err(|_| invalid())?;
            let scaled = magnitude
                .checked_mul(i128::from(multiplier.unwrap_or(1)))
                .ok_or_else(invalid)?;
            integer_value(scaled, negative, pos)
        }
        (true, Some(multiplier)) => {
            let scaled = scale_decimal(mantissa, multiplier)
                .ok_or_else(|| error(pos, format!("`{raw}` is not a whole number")))?;
            integer_value(scaled, negative, pos)
        }
        (true, None) => {
            let magnitude: f64 = mantissa.parse().map_err(|_| invalid())?;
            let value = if negative { -magnitude } else { magnitude };
            Number::from_f64(value)
                .map(Value::Number)
                .ok_or_else(invalid)
        }
    }
}

/// `1.5` × 1024 computed exactly; `None` unless the result is a whole number in range.
pub(crate) fn scale_decimal(mantissa: &str, multiplier: u64) -> Option<i128> {
    if mantissa.contains(['e', 'E']) {
        return None;
    }
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    let denominator = 10_i128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let scaled = digits.checked_mul(i128::from(multiplier))?;
    (scaled % denominator == 0).then_some(scaled / denominator)
}

/// A number literal's mantissa and its multiplier: `K M G T P` (×1000) or `Ki Mi Gi Ti Pi`
/// (×1024); `None` without one.
pub(crate) fn split_multiplier(digits: &str) -> (&str, Option<u64>) {
    const UNITS: [(&str, u64); 10] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("Pi", 1 << 50),
        ("K", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
        ("P", 1_000_000_000_000_000),
    ];
    for (suffix, factor) in UNITS {
        if let Some(mantissa) = digits.strip_suffix(suffix) {
            return (mantissa, Some(factor));
        }
    }
    (digits, None)
}

pub(crate) fn integer_value(magnitude: i128, negative: bool, pos: Pos) -> Result<Value> {
    let value = if negative { -magnitude } else { magnitude };
    if let Ok(v) = i64::try_from(value) {
        return Ok(Value::from(v));
    }
    if let Ok(v) = u64::try_from(value) {
        return Ok(Value::from(v));
    }
    Err(error(pos, "integer is out of the 64-bit range"))
}

/// The byte offset of the `)` closing an interpolation whose text starts right after `\(`.
pub(crate) fn interpolation_end(src: &str, pos: Pos) -> Result<usize> {
    let mut lexer = Lexer::new(src);
    lexer.interpolation(pos, 1)?;
    Ok(lexer.offset.saturating_sub(1))
}
