//! Literals: strings (with interpolations), bytes and numbers.

use std::sync::Arc;

use num_bigint::BigInt;

use super::{from_lex, syntax, Base, PResult, Parser};
use crate::cue::ast::{Expr, ExprKind, Part};
use crate::cue::lexer::{self, Kind};

impl Parser<'_> {
    // --- literals ---------------------------------------------------------------------------

    pub(super) fn lex_pos(&self) -> lexer::Pos {
        self.tok(0)
            .map_or(lexer::Pos { line: 1, column: 1 }, |t| t.pos)
    }

    pub(super) fn plain_string(&self) -> PResult<String> {
        lexer::decode_string(self.text(), self.lex_pos())
            .map_err(|e| from_lex(&e, self.file, self.base))
    }

    pub(super) fn bytes(&self) -> PResult<Vec<u8>> {
        let raw = self.text();
        let hashes = raw.chars().take_while(|&c| c == '#').count();
        let inner = raw
            .get(hashes..raw.len().saturating_sub(hashes))
            .unwrap_or("");
        let body = if inner.starts_with("'''") {
            inner.get(3..inner.len().saturating_sub(3)).unwrap_or("")
        } else {
            inner.get(1..inner.len().saturating_sub(1)).unwrap_or("")
        };
        // `\xHH` escapes are bytes of their own; the rest unescapes as in strings.
        let mut out = Vec::new();
        let mut segment = String::new();
        let mut chars = body.chars().peekable();
        let unescape = |s: &str| {
            lexer::unescape(s, hashes, self.lex_pos())
                .map_err(|e| from_lex(&e, self.file, self.base))
        };
        while let Some(c) = chars.next() {
            if c != '\\' || hashes > 0 {
                segment.push(c);
                continue;
            }
            match chars.next() {
                Some('x') => {
                    let hex: String = chars.by_ref().take(2).collect();
                    let byte = u8::from_str_radix(&hex, 16)
                        .map_err(|_| syntax(self.pos(), format!("invalid escape `\\x{hex}`")))?;
                    out.extend(unescape(&segment)?.into_bytes());
                    segment.clear();
                    out.push(byte);
                }
                Some(other) => {
                    segment.push('\\');
                    segment.push(other);
                }
                None => segment.push('\\'),
            }
        }
        out.extend(unescape(&segment)?.into_bytes());
        Ok(out)
    }

    /// An interpolated string token as an [`ExprKind::Interpolation`].
    pub(super) fn string_expr(&self) -> PResult<Arc<Expr>> {
        let pos = self.pos();
        let raw = self.text();
        let lex_pos = self.lex_pos();
        let lex_err = |e: lexer::CueError| from_lex(&e, self.file, self.base);
        let hashes = raw.chars().take_while(|&c| c == '#').count();
        let after = raw.get(hashes..).unwrap_or("");
        let multiline = after.starts_with("\"\"\"");
        let quotes = if multiline { 3 } else { 1 };
        let body = raw
            .get(hashes + quotes..raw.len().saturating_sub(quotes + hashes))
            .ok_or_else(|| syntax(pos, "malformed string literal"))?;
        let body = if multiline {
            lexer::dedent_multiline(body, lex_pos).map_err(lex_err)?
        } else {
            body.to_string()
        };
        let marker: String = std::iter::once('\\')
            .chain(std::iter::repeat_n('#', hashes))
            .chain(std::iter::once('('))
            .collect();
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut rest = body.as_str();
        while let Some(at) = find_interpolation(rest, hashes) {
            text.push_str(rest.get(..at).unwrap_or(""));
            let after = rest.get(at + marker.len()..).unwrap_or("");
            let end = lexer::interpolation_end(after, lex_pos).map_err(lex_err)?;
            let inner = after.get(..end).unwrap_or("");
            if !text.is_empty() {
                parts.push(Part::Text(
                    lexer::unescape(&text, hashes, lex_pos).map_err(lex_err)?,
                ));
                text.clear();
            }
            let base = Base {
                line: pos.line,
                column: pos.column,
            };
            let mut sub = Parser::new(
                inner,
                self.file,
                base,
                self.max_depth.saturating_sub(self.depth),
            )?;
            sub.skip_commas();
            let expr = sub.expr()?;
            sub.skip_commas();
            if sub.kind() != Kind::Eof {
                return Err(sub.unexpected("`)` closing the interpolation"));
            }
            parts.push(Part::Expr(expr));
            rest = after.get(end + 1..).unwrap_or("");
        }
        text.push_str(rest);
        if !text.is_empty() {
            parts.push(Part::Text(
                lexer::unescape(&text, hashes, lex_pos).map_err(lex_err)?,
            ));
        }
        Ok(Arc::new(Expr {
            kind: ExprKind::Interpolation(parts),
            pos,
        }))
    }
}

/// The byte offset of the first unescaped `\(` (with `hashes` `#`s) in `text`.
pub(super) fn find_interpolation(text: &str, hashes: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes.get(i) == Some(&b'\\') {
            let marks = bytes
                .get(i + 1..)
                .map_or(0, |b| b.iter().take_while(|&&c| c == b'#').count());
            if marks >= hashes {
                match bytes.get(i + 1 + hashes) {
                    Some(b'(') => return Some(i),
                    Some(_) => {
                        i += 2 + hashes;
                        continue;
                    }
                    None => return None,
                }
            }
        }
        i += 1;
    }
    None
}

/// Decode a number literal into an integer (arbitrary size) or a float.
pub(super) fn number(raw: &str) -> Option<ExprKind> {
    let digits: String = raw.chars().filter(|&c| c != '_').collect();
    let lower = digits.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            return BigInt::parse_bytes(rest.as_bytes(), radix).map(ExprKind::Int);
        }
    }
    if let (mantissa, Some(factor)) = lexer::split_multiplier(&digits) {
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let all = BigInt::parse_bytes(format!("{whole}{fraction}").as_bytes(), 10)?;
        let scale = BigInt::from(10u32).pow(u32::try_from(fraction.len()).ok()?);
        let scaled = all * BigInt::from(factor);
        if (&scaled % &scale) != BigInt::from(0) {
            return None;
        }
        return Some(ExprKind::Int(scaled / scale));
    }
    if digits.contains(['.', 'e', 'E']) {
        let scale = if let Some((mantissa, exponent)) = digits.split_once(['e', 'E']) {
            // CUE keeps a literal's digits and exponent: `1.5e-3` is 0.0015 (four digits after
            // the point), `1.0e1` is 10 and `1e0` is 1 (no point: they print as whole numbers),
            // `1e10` is 1E+10.
            let fraction = mantissa.split_once('.').map_or(0, |(_, f)| f.len());
            let exponent = exponent.parse::<i64>().unwrap_or(0);
            let places = i64::try_from(fraction)
                .unwrap_or(i64::MAX)
                .saturating_sub(exponent);
            if places < 0 {
                crate::cue::value::SCIENTIFIC
            } else {
                i16::try_from(places).unwrap_or(i16::MAX)
            }
        } else {
            digits
                .split_once('.')
                .map_or(0, |(_, frac)| i16::try_from(frac.len()).unwrap_or(i16::MAX))
        };
        return digits
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(|f| ExprKind::Float(f, scale));
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) || digits.is_empty() {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return BigInt::parse_bytes(digits.get(1..)?.as_bytes(), 8).map(ExprKind::Int);
    }
    BigInt::parse_bytes(digits.as_bytes(), 10).map(ExprKind::Int)
}
