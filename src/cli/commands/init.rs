//! `addonctl init`: scaffold a new addon.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::args::InitArgs;
use crate::cli::printer::Printer;

/// Runs the command.
pub fn run(printer: Printer, args: &InitArgs) -> anyhow::Result<ExitCode> {
    let dir = args.dir.clone().unwrap_or_else(|| args.name.clone().into());
    let flavour = if args.cue {
        addonctl::scaffold::Flavour::Cue
    } else {
        addonctl::scaffold::Flavour::Rhai
    };
    let written = addonctl::scaffold::scaffold(&dir, &args.name, flavour)?;
    let mut stdout = printer.stdout();
    for path in written {
        writeln!(stdout, "created {}", path.display())?;
    }
    writeln!(
        stdout,
        "next: `addonctl lint {0}` and `addonctl render {0}`",
        dir.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
