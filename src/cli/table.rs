//! Plain-text tables: each column as wide as its widest cell (header included), two spaces
//! between columns, a blank cell shown as `-`.

/// The table of `header` and `rows`, one line each, every line ending in a newline. A row
/// shorter than the header has `-` in its missing cells.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let cell = |row: &[String], i: usize| -> String {
        match row.get(i).map(|c| c.trim()) {
            Some(c) if !c.is_empty() => c.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::render;

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
