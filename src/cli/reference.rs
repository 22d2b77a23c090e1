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
        out.push((man.get_filename(), text));
        for sub in visible(command) {
            walk(sub, out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(&built(), &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod markdown;
#[cfg(test)]
mod tests;
