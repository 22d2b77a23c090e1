//! The generated reference: the man pages (`addonctl man`), and (`markdown.rs`) the Markdown
//! CLI reference under `docs/reference/cli/` and the `Addon` resource reference
//! `docs/reference/addon-resource.md`. Each is written from what the code itself uses — clap's
//! command tree, the CRD's schema — so it cannot say something `--help` or the API server does
//! not; a test fails when the committed Markdown differs from what `markdown.rs` writes
//! (`UPDATE_REFERENCE=1` rewrites it).

use clap::{Command, CommandFactory as _};

use crate::cli::args::Cli;
use crate::cli::help;

/// The command tree as `--help` shows it (global options in `addonctl --help` only), built.
fn built() -> Command {
    let mut command = help::command(Cli::command()).disable_help_subcommand(true);
    command.build();
    command
}

/// The commands a user sees: not hidden, not clap's `help`.
fn visible(command: &Command) -> impl Iterator<Item = &Command> {
    command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// Every man page, as (file name, roff text): `addonctl.1`, then one per command and nested
/// command (`addonctl-cluster-join.1`).
pub fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    fn walk(command: &Command, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        let man = clap_mangen::Man::new(command.clone());
        let mut text = Vec::new();
        man.render(&mut text)?;
        out.push((man.get_filename(), examples_as_written(text)));
        for sub in visible(command) {
            walk(sub, out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(&built(), &mut out)?;
    Ok(out)
}

/// clap_mangen's page with the text after the options (the examples, the exit codes, the pointer
/// to the global options) as a section `EXAMPLES` of lines kept as written, not filled into a
/// paragraph: a command line of an example stays one line.
fn examples_as_written(page: Vec<u8>) -> Vec<u8> {
    let text = match String::from_utf8(page) {
        Ok(text) => text,
        Err(e) => return e.into_bytes(),
    };
    let Some(start) = text.find("\n.SH EXTRA\n") else {
        return text.into_bytes();
    };
    let body = start + "\n.SH EXTRA\n".len();
    let end = text[body..]
        .find("\n.SH ")
        .map_or(text.len(), |at| body + at);
    format!(
        "{}\n.SH EXAMPLES\n.nf\n{}\n.fi{}",
        &text[..start],
        text[body..end].trim_end(),
        &text[end..]
    )
    .into_bytes()
}

#[cfg(test)]
mod markdown;
#[cfg(test)]
mod tests;
