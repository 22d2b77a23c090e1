//! Plain-text tables: each column as wide as its widest cell (header included), two spaces
//! between columns, a blank cell shown as `-`; a column may be capped, its longer cells cut
//! with `…`.

/// The table of `header` and `rows`, one line each, every line ending in a newline. A row
/// shorter than the header has `-` in its missing cells.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    render_capped(header, rows, &[])
}

/// [`render`], with column `i` at most `caps[i]` characters wide (`None`, or no entry: as wide
/// as its widest cell): a longer cell keeps its first `caps[i] - 1` characters and ends in `…`.
pub fn render_capped(header: &[&str], rows: &[Vec<String>], caps: &[Option<usize>]) -> String {
    let cell = |row: &[String], i: usize| -> String {
        match row.get(i).map(|c| c.trim()) {
            Some(c) if !c.is_empty() => match caps.get(i).copied().flatten() {
                Some(cap) => truncate(c, cap),
                None => c.to_owned(),
            },
            _ => "-".to_owned(),
        }
    };
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, width) in widths.iter_mut().enumerate() {
            *width = (*width).max(cell(row, i).chars().count());
        }
    }
    let line = |cells: Vec<String>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, &width)| format!("{c:<width$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(header.iter().map(|h| (*h).to_owned()).collect());
    for row in rows {
        out.push_str(&line((0..header.len()).map(|i| cell(row, i)).collect()));
    }
    out
}

/// `text` when it has at most `cap` characters; else its first `cap - 1` and `…`.
pub fn truncate(text: &str, cap: usize) -> String {
    if text.chars().count() <= cap {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(cap.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::{render, render_capped, truncate};

    #[test]
    fn a_capped_column_cuts_long_cells_with_an_ellipsis_and_keeps_the_next_column_aligned() {
        let long = "x".repeat(100);
        let text = render_capped(
            &["NAME", "DEFAULT", "DESCRIPTION"],
            &[
                vec!["a".to_owned(), long.clone(), "first".to_owned()],
                vec!["bb".to_owned(), "1".to_owned(), "second".to_owned()],
            ],
            &[None, Some(12)],
        );
        let lines: Vec<&str> = text.lines().collect();
        // Where `needle` starts, in characters (`…` is one, of three bytes).
        let column =
            |line: &str, needle: &str| line.find(needle).map(|b| line[..b].chars().count());
        let at = column(lines[0], "DESCRIPTION");
        assert_eq!(column(lines[1], "first"), at, "{text}");
        assert_eq!(column(lines[2], "second"), at, "{text}");
        assert!(lines[1].contains(&format!("{}…", "x".repeat(11))), "{text}");
        assert!(!lines[1].contains(&"x".repeat(12)), "{text}");
        assert_eq!(truncate("short", 12), "short");
        assert_eq!(truncate("exactly-12ch", 12), "exactly-12ch");
        assert_eq!(truncate("héllo wörld!!", 5).chars().count(), 5);
    }

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_and_blanks_are_dashes() {
        let long = "a-name-of-twenty-five-chr";
        assert_eq!(long.len(), 25);
        let text = render(
            &["NAME", "PHASE", "LABELS"],
            &[
                vec![
                    long.to_owned(),
                    "enabled (declared)".to_owned(),
                    String::new(),
                ],
                vec!["b".to_owned(), "disabled".to_owned(), "env=prod".to_owned()],
                vec!["c".to_owned()],
            ],
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        // Every row's PHASE and LABELS start where the header's do.
        let phase_at = lines[0].find("PHASE").unwrap();
        let labels_at = lines[0].find("LABELS").unwrap();
        assert_eq!(
            lines[1].find("enabled (declared)"),
            Some(phase_at),
            "{text}"
        );
        assert_eq!(lines[2].find("disabled"), Some(phase_at), "{text}");
        assert_eq!(lines[2].find("env=prod"), Some(labels_at), "{text}");
        assert_eq!(&lines[1][labels_at..], "-", "{text}");
        assert_eq!(&lines[3][phase_at..=phase_at], "-", "{text}");
        assert!(lines.iter().all(|l| !l.ends_with(' ')), "{text}");
    }
}
