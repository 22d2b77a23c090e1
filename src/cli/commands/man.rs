//! `addonctl man --dir DIR`: the man pages, from the command definition itself (clap_mangen),
//! so they say what `--help` says.

use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::args::ManArgs;
use crate::cli::printer::Printer;
use crate::cli::reference;

/// `man --dir DIR`: one page per command, section 1; the paths written go to stderr.
pub fn run(printer: Printer, args: &ManArgs) -> anyhow::Result<ExitCode> {
    fs_err::create_dir_all(&args.dir)?;
    let pages = reference::man_pages()?;
    for (name, text) in &pages {
        let path = args.dir.join(name);
        fs_err::write(&path, text).with_context(|| format!("writing the man page `{name}`"))?;
    }
    printer.note(&format!(
        "wrote {} man pages to `{}` (`man -l {}`)",
        pages.len(),
        args.dir.display(),
        args.dir.join("addonctl.1").display()
    ));
    Ok(ExitCode::SUCCESS)
}
