//! Everything addonctl writes for people and programs: stdout (results, in text, JSON or YAML;
//! one place decides the format), stderr (progress steps, hidden with `-q`; questions). Commands
//! call it; they never pick a stream or a format themselves. Logs go through `tracing`, errors
//! through [`crate::cli::diagnostics`].

use std::io::{StdoutLock, Write};

use serde::Serialize;

use addonctl::cluster::watchdog::Notice;
use addonctl::context::Reporter;

use crate::cli::args::ReportFormat;

/// Where and how output goes.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    quiet: bool,
}

impl Printer {
    /// A printer; `quiet` hides progress (`-q`).
    pub fn new(quiet: bool) -> Self {
        Printer { quiet }
    }

    /// stdout, for text results.
    #[expect(
        clippy::unused_self,
        reason = "commands reach stdout only through the printer"
    )]
    pub fn stdout(self) -> StdoutLock<'static> {
        std::io::stdout().lock()
    }

    /// Prints `value` as JSON or YAML when `format` asks for one and returns `true`; `false` for
    /// text (the command then writes its own lines).
    pub fn structured<T: Serialize>(self, value: &T, format: ReportFormat) -> anyhow::Result<bool> {
        let mut stdout = self.stdout();
        match format {
            ReportFormat::Json => writeln!(stdout, "{}", serde_json::to_string_pretty(value)?)?,
            ReportFormat::Yaml => write!(
                stdout,
                "{}",
                addonctl::yaml::to_string(&serde_json::to_value(value)?)?
            )?,
            ReportFormat::Text => return Ok(false),
        }
        Ok(true)
    }

    /// Whether `-q` was given.
    pub fn quiet(self) -> bool {
        self.quiet
    }

    /// A progress line on stderr (hidden with `-q`).
    pub fn step(self, message: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "  {message}");
        }
    }

    /// A note on stderr (hidden with `-q`): something the result lacks, and why.
    pub fn note(self, message: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "note: {message}");
        }
    }

    /// Whether questions can be asked: stdin is a terminal (never in scripts, pipes or tests).
    #[expect(
        clippy::unused_self,
        reason = "commands reach the terminal only through the printer"
    )]
    pub fn interactive(self) -> bool {
        std::io::IsTerminal::is_terminal(&std::io::stdin())
    }

    /// Asks a y/N question ([`Printer::ask`]); only `y`/`yes` is a yes.
    pub fn confirm(self, lines: &[String], question: &str) -> anyhow::Result<bool> {
        let answer = self.ask(lines, question)?;
        Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
    }

    /// A question on stderr (shown even with `-q`: an answer is needed).
    #[expect(
        clippy::unused_self,
        reason = "commands reach the terminal only through the printer"
    )]
    pub fn ask(self, lines: &[String], question: &str) -> anyhow::Result<String> {
        let mut stderr = std::io::stderr().lock();
        for line in lines {
            writeln!(stderr, "{line}")?;
        }
        write!(stderr, "{question}")?;
        stderr.flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        Ok(answer)
    }

    /// Announces a cluster's slow requests on stderr (unless `-q`).
    pub fn notice(self) -> Option<Notice> {
        if self.quiet {
            return None;
        }
        Some(std::sync::Arc::new(|line: &str| {
            let _ = writeln!(std::io::stderr(), "  {line}");
        }))
    }
}

/// Progress of library work, as [`Printer::step`] lines.
impl Reporter for Printer {
    fn step(&self, message: &str) {
        Printer::step(*self, message);
    }
}
