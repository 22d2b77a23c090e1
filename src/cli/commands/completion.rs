//! `addonctl completion <shell>`: a completion script from the command definition itself.

use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::args::{Cli, CompletionArgs};
use crate::cli::printer::Printer;

/// `completion bash|zsh|fish|powershell`: the script on stdout. Built from the full definition
/// (global options included in every command, as they are accepted there).
pub fn run(printer: Printer, args: &CompletionArgs) -> anyhow::Result<ExitCode> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "addonctl", &mut script);
    std::io::Write::write_all(&mut printer.stdout(), &script)?;
    Ok(ExitCode::SUCCESS)
}
