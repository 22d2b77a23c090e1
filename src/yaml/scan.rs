//! A linear pre-scan that bounds the nesting of a YAML text before the parser sees it.
//!
//! libyaml (under `serde_yaml`) walks its whole stack of open flow collections for every token,
//! so a document of 200 000 `[` costs quadratic time before `serde_yaml`'s own depth limit
//! fires after parsing. This scan reads the text once, tracking flow collections (`[`, `{`,
//! outside quoted scalars and comments), block nesting (indentation levels and compact `- `
//! / `? ` indicators) and block scalars (`|`, `>`), and stops at the first line nested deeper
//! than the limit. It may count a little more than the parser would (a multi-line plain scalar
//! holding an unbalanced `[`), never less for flow collections.

/// Where the nesting went too deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooDeep {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// Scanner state carried from line to line.
#[derive(Default)]
struct Scan {
    /// Open flow collections.
    flow: usize,
    /// Indentation of every open block level.
    indents: Vec<usize>,
    /// An open block scalar (`|`, `>`): the indentation of the line that opened it, and of its
    /// text once the first non-blank line sets it; lines indented that deep are its text.
    block_scalar: Option<(usize, Option<usize>)>,
    /// The quote of a quoted scalar that continues on the next line.
    quote: Option<u8>,
    /// The block depth of the line that opened the current flow collection.
    base: usize,
}

/// Checks that no part of `text` is nested deeper than `max_depth`.
pub(crate) fn check_depth(text: &str, max_depth: usize) -> Result<(), TooDeep> {
    let mut scan = Scan::default();
    for (index, line) in text.split('\n').enumerate() {
        scan.line(line.as_bytes(), max_depth)
            .map_err(|column| TooDeep {
                line: index + 1,
                column: column + 1,
            })?;
    }
    Ok(())
}

fn indentation(line: &[u8]) -> usize {
    line.iter().take_while(|&&b| b == b' ').count()
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r'
}

impl Scan {
    /// Scans one line; `Err` holds the 0-based column where the limit was passed.
    fn line(&mut self, line: &[u8], max_depth: usize) -> Result<(), usize> {
        let indent = indentation(line);
        let blank = line[indent..].iter().all(|&b| is_blank(b));
        if let Some((parent, text)) = self.block_scalar {
            if blank {
                return Ok(());
            }
            match text {
                None if indent > parent => {
                    self.block_scalar = Some((parent, Some(indent)));
                    return Ok(());
                }
                Some(text) if indent >= text => return Ok(()),
                _ => self.block_scalar = None,
            }
        }
        let mut pos = 0;
        if let Some(quote) = self.quote {
            pos = self.skip_quoted(line, 0, quote);
        } else if self.flow == 0 {
            if blank || line[indent] == b'#' {
                return Ok(());
            }
            let marker = line.starts_with(b"---") || line.starts_with(b"...");
            if marker && line.get(3).is_none_or(|&b| is_blank(b)) {
                self.indents.clear();
                let mut depth = 0;
                return self.block_part(line, 3, 0, &mut depth, max_depth);
            }
            while self.indents.last().is_some_and(|&top| top >= indent) {
                self.indents.pop();
            }
            self.indents.push(indent);
            pos = indent;
        }
        let mut depth = self.indents.len();
        if depth > max_depth {
            return Err(pos);
        }
        if self.flow > 0 {
            return self.flow_part(line, pos, max_depth).and(Ok(()));
        }
        self.block_part(line, pos, indent, &mut depth, max_depth)
    }

    /// The rest of a line in block context, from `pos`.
    fn block_part(
        &mut self,
        line: &[u8],
        mut pos: usize,
        indent: usize,
        depth: &mut usize,
        max_depth: usize,
    ) -> Result<(), usize> {
        loop {
            while pos < line.len() && is_blank(line[pos]) {
                pos += 1;
            }
            let Some(&b) = line.get(pos) else {
                return Ok(());
            };
            let next_blank = line.get(pos + 1).is_none_or(|&n| is_blank(n));
            match b {
                b'-' | b'?' | b':' if next_blank => {
                    if b != b':' {
                        *depth += 1;
                        if *depth > max_depth {
                            return Err(pos);
                        }
                    }
                    pos += 1;
                }
                b'&' | b'!' => {
                    while pos < line.len() && !is_blank(line[pos]) {
                        pos += 1;
                    }
                }
                b'#' => return Ok(()),
                b'|' | b'>' => {
                    self.block_scalar = Some((indent, None));
                    return Ok(());
                }
                b'[' | b'{' => {
                    self.base = *depth;
                    pos = self.flow_part(line, pos, max_depth)?;
                    if self.flow > 0 {
                        return Ok(());
                    }
                }
                b'"' | b'\'' => {
                    pos = self.skip_quoted(line, pos + 1, b);
                    if self.quote.is_some() {
                        return Ok(());
                    }
                }
                _ => pos = plain_end(line, pos),
            }
        }
    }

    /// Scans flow context from `pos` until the outermost collection closes (returning the
    /// position after it) or the line ends.
    fn flow_part(&mut self, line: &[u8], mut pos: usize, max_depth: usize) -> Result<usize, usize> {
        let mut token_start = true;
        while pos < line.len() {
            let b = line[pos];
            match b {
                b'[' | b'{' => {
                    self.flow += 1;
                    if self.base + self.flow > max_depth {
                        return Err(pos);
                    }
                    token_start = true;
                }
                b']' | b'}' => {
                    self.flow = self.flow.saturating_sub(1);
                    if self.flow == 0 {
                        return Ok(pos + 1);
                    }
                    token_start = false;
                }
                b',' | b':' => token_start = true,
                b'#' if token_start => return Ok(line.len()),
                b'"' | b'\'' if token_start => {
                    pos = self.skip_quoted(line, pos + 1, b);
                    if self.quote.is_some() {
                        return Ok(line.len());
                    }
                    token_start = false;
                    continue;
                }
                _ if is_blank(b) => token_start = true,
                _ => token_start = false,
            }
            pos += 1;
        }
        Ok(pos)
    }

    /// Skips a quoted scalar's text from `pos` (after the opening quote); remembers the quote
    /// when the line ends inside it.
    fn skip_quoted(&mut self, line: &[u8], mut pos: usize, quote: u8) -> usize {
        while pos < line.len() {
            let b = line[pos];
            if quote == b'"' && b == b'\\' {
                pos += 2;
                continue;
            }
            if b == quote {
                if quote == b'\'' && line.get(pos + 1) == Some(&b'\'') {
                    pos += 2;
                    continue;
                }
                self.quote = None;
                return pos + 1;
            }
            pos += 1;
        }
        self.quote = Some(quote);
        line.len()
    }
}

/// The end of a plain scalar in block context: the position of a `: ` that follows it (the
/// scalar was a key), or the end of the line (a `#` after a blank starts a comment).
fn plain_end(line: &[u8], mut pos: usize) -> usize {
    while pos < line.len() {
        let b = line[pos];
        if b == b':' && line.get(pos + 1).is_none_or(|&n| is_blank(n)) {
            return pos;
        }
        if b == b'#' && pos > 0 && is_blank(line[pos - 1]) {
            return line.len();
        }
        pos += 1;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str, max: usize) -> bool {
        check_depth(text, max).is_ok()
    }

    #[test]
    fn flow_nesting_is_counted() {
        let deep = format!("{}{}", "[".repeat(20), "]".repeat(20));
        // The line's own level counts too.
        assert!(depth_ok(&deep, 21));
        assert!(!depth_ok(&deep, 20));
        let err = check_depth(&format!("a: 1\nb: {deep}\n"), 10).unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn unclosed_flow_over_many_lines_is_counted() {
        let text = format!("a:\n{}", "[\n".repeat(50));
        assert!(!depth_ok(&text, 40));
    }

    #[test]
    fn block_nesting_is_counted() {
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&" ".repeat(i));
            text.push_str("k:\n");
        }
        assert!(depth_ok(&text, 30));
        assert!(!depth_ok(&text, 29));
        let compact = format!("{}x\n", "- ".repeat(30));
        assert!(!depth_ok(&compact, 29));
        assert!(depth_ok(&compact, 31));
    }

    #[test]
    fn brackets_in_scalars_comments_and_block_text_are_not_nesting() {
        let text = r#"
a: "[[[[[[[[[[ {{{{{{{"
b: '[[[[[[[[[[ it''s'
c: text [[[[[[[[[[[[ with brackets
d: |
  [[[[[[[[[[[[[[[[[[[[
  {{{{{{{{{{{{{{{{{{{{
e: [x, "[[[[[[[[[[[[", '{{{{{{{{{{{{'] # [[[[[[[[[[[[
# [[[[[[[[[[[[[[[[[[
f: "multi
  line [[[[[[[[[[[[[[
  still"
g: {a: [1, 2], b: {c: d}}
"#;
        assert!(depth_ok(text, 5), "{:?}", check_depth(text, 5));
    }

    #[test]
    fn a_block_scalar_ends_where_its_text_does() {
        // `b` is a sibling of `a`, not text of its block scalar: its nesting counts.
        let text = format!("- a: |\n    text\n  b: {}\n", "[".repeat(50));
        assert!(!depth_ok(&text, 40));
        let text = format!("- a: |\n    text\n    {}\n  b: 1\n", "[".repeat(50));
        assert!(depth_ok(&text, 40));
    }

    #[test]
    fn indentation_going_back_closes_levels() {
        let mut text = String::new();
        for _ in 0..100 {
            text.push_str("a:\n  b:\n    c: 1\n");
        }
        assert!(depth_ok(&text, 3));
    }
}
