//! An addon's README as HTML that does nothing: Markdown rendered by pulldown-cmark (raw HTML in
//! it passes through), then cleaned by ammonia's allow-list — no scripts, styles, forms, frames
//! or event handlers, links only to `http`, `https` and `mailto` (never `javascript:`), each
//! `rel="noopener noreferrer nofollow"`.

use pulldown_cmark::{html, Options, Parser};

/// The largest README rendered; longer ones are cut there (a registry is a stranger).
pub const MAX_README: usize = 512 * 1024;

/// `markdown` as sanitised HTML.
pub fn render(markdown: &str) -> String {
    let mut end = markdown.len().min(MAX_README);
    while !markdown.is_char_boundary(end) {
        end -= 1;
    }
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    let parser = Parser::new_ext(&markdown[..end], options);
    let mut raw = String::with_capacity(end * 3 / 2);
    html::push_html(&mut raw, parser);
    ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&raw)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn scripts_handlers_and_javascript_links_are_inert() {
        let html = render(
            "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=\"alert(2)\">\n\n\
             [click](javascript:alert(3)) <a href=\"JaVaScRiPt:alert(4)\">x</a>\n\n\
             <iframe src=\"https://example.invalid\"></iframe><style>body{}</style>\n\n\
             <svg><script>alert(5)</script></svg> <form action=\"/api/v1/plans\"><button>go</button></form>",
        );
        let lower = html.to_lowercase();
        for forbidden in [
            "<script",
            "onerror",
            "javascript:",
            "<iframe",
            "<style",
            "<form",
            "<svg",
        ] {
            assert!(!lower.contains(forbidden), "`{forbidden}` survived: {html}");
        }
        assert!(html.contains("<h1>Title</h1>"), "{html}");
    }

    #[test]
    fn markdown_renders_and_links_are_marked() {
        let html = render(
            "**bold** and [docs](https://docs.invalid/x)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(
            html.contains("rel=\"noopener noreferrer nofollow\""),
            "{html}"
        );
        assert!(html.contains("<table>"), "{html}");
    }

    #[test]
    fn a_huge_readme_is_cut_on_a_character_boundary() {
        let text = "é".repeat(super::MAX_README);
        let html = render(&text);
        assert!(html.len() <= super::MAX_README * 2);
    }
}
