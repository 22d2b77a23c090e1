//! Everything addonctl writes for people and programs: stdout (results, in text, JSON or YAML;
//! one place decides the format), stderr (progress steps, hidden with `-q`; questions). Commands
//! call it; they never pick a stream or a format themselves. Logs go through `tracing`, errors
//! through [`crate::cli::diagnostics`].

use std::io::{StdoutLock, Write};
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use addonctl::cluster::watchdog::Notice;
use addonctl::context::{Progress, Reporter};

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

    /// A note on stderr (hidden with `-q`): something the result lacks, and why. A note that
    /// is a warning (`warning: …`) reads as one, as addonctl's logged warnings do.
    pub fn note(self, message: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "{}", note_line(message));
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

/// Progress of library work, as [`Printer::step`] lines; the clusters of a dispatch to more
/// than [`CLUSTER_LINES`] clusters as a tally instead of a line each ([`Tally`]).
impl Reporter for Printer {
    fn step(&self, message: &str) {
        if self.quiet {
            return;
        }
        let mut tally = TALLY.lock().unwrap_or_else(PoisonError::into_inner);
        tally.clear_line();
        Printer::step(*self, message);
        tally.draw(true);
    }

    fn event(&self, event: &Progress) {
        if self.quiet {
            return;
        }
        let mut tally = TALLY.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Progress::Dispatching { clusters } if *clusters > CLUSTER_LINES => {
                Printer::step(*self, &event.to_string());
                *tally = Tally::start(*clusters);
                tally.draw(true);
            }
            Progress::ClusterApplied { .. } | Progress::ClusterFailed { .. } if tally.total > 0 => {
                if let Progress::ClusterFailed { .. } = event {
                    tally.failed += 1;
                    // Failures are always told, each on its line.
                    tally.clear_line();
                    Printer::step(*self, &event.to_string());
                } else {
                    tally.done += 1;
                }
                if tally.done + tally.failed >= tally.total {
                    tally.clear_line();
                    Printer::step(*self, &tally.line());
                    *tally = Tally::default();
                } else {
                    tally.draw(false);
                }
            }
            _ => {
                tally.clear_line();
                Printer::step(*self, &event.to_string());
                tally.draw(true);
            }
        }
    }
}

/// A dispatch to at most this many clusters is told a line per cluster.
const CLUSTER_LINES: usize = 20;

/// How often the tally line is drawn again on a terminal.
const TALLY_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// The clusters of the dispatch under way: on a terminal, one line drawn again as they finish
/// (`clusters: 812 done, 3 failed, 185 pending`); piped, nothing until the summary line. Each
/// failure is a line of its own either way.
#[derive(Debug, Default)]
struct Tally {
    total: usize,
    done: usize,
    failed: usize,
    terminal: bool,
    drawn: Option<std::time::Instant>,
}

static TALLY: Mutex<Tally> = Mutex::new(Tally {
    total: 0,
    done: 0,
    failed: 0,
    terminal: false,
    drawn: None,
});

impl Tally {
    fn start(total: usize) -> Self {
        Tally {
            total,
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            ..Tally::default()
        }
    }

    fn line(&self) -> String {
        format!(
            "clusters: {} done, {} failed, {} pending",
            self.done,
            self.failed,
            self.total - self.done - self.failed
        )
    }

    /// Draws the line on a terminal (at most every [`TALLY_EVERY`] unless `now`).
    fn draw(&mut self, now: bool) {
        if self.total == 0 || !self.terminal {
            return;
        }
        if !now && self.drawn.is_some_and(|at| at.elapsed() < TALLY_EVERY) {
            return;
        }
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K  {}", self.line());
        let _ = stderr.flush();
        self.drawn = Some(std::time::Instant::now());
    }

    /// Clears the drawn line, so that another line can be written.
    fn clear_line(&mut self) {
        if self.drawn.take().is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// The line of a note: `note: …`, or the warning itself for one that starts `warning: `.
fn note_line(message: &str) -> String {
    if message.starts_with("warning: ") {
        message.to_owned()
    } else {
        format!("note: {message}")
    }
}

/// How log events read on stderr outside controller mode: addonctl's own warnings and errors
/// are for the user, so they read `warning: …` and `error: …` like the `note: …` lines and the
/// final `error: …`; every other event (`-v`'s info, debug and trace, other crates' logs) keeps
/// the log format (level, message, fields).
pub struct UserLog {
    log: tracing_subscriber::fmt::format::Format<tracing_subscriber::fmt::format::Full, ()>,
}

impl Default for UserLog {
    fn default() -> Self {
        UserLog {
            log: tracing_subscriber::fmt::format()
                .with_target(false)
                .without_time(),
        }
    }
}

/// The word an event of addonctl's at `level` starts with (`None`: it reads as a log line).
fn user_word(target: &str, level: tracing::Level) -> Option<&'static str> {
    let ours = target == "addonctl" || target.starts_with("addonctl::");
    match level {
        tracing::Level::WARN if ours => Some("warning"),
        tracing::Level::ERROR if ours => Some("error"),
        _ => None,
    }
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for UserLog
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let metadata = event.metadata();
        let Some(word) = user_word(metadata.target(), *metadata.level()) else {
            return self.log.format_event(ctx, writer, event);
        };
        write!(writer, "{word}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn addonctls_warnings_and_errors_read_as_the_users_and_the_rest_as_logs() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .event_format(super::UserLog::default())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(target: "addonctl::source::local", registry = "dev", "skipping `x`");
            tracing::error!(target: "addonctl", "not compared: m1");
            tracing::info!(target: "addonctl", "applied");
            tracing::warn!(target: "kube_client", "a library's warning");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "warning: skipping `x` registry=\"dev\"", "{text}");
        assert_eq!(lines[1], "error: not compared: m1", "{text}");
        assert!(
            lines[2].contains("INFO") && lines[2].ends_with("applied"),
            "{text}"
        );
        assert!(
            lines[3].contains("WARN") && lines[3].ends_with("a library's warning"),
            "{text}"
        );
        assert_eq!(lines.len(), 4, "{text}");
    }

    #[test]
    fn a_note_that_is_a_warning_reads_as_one() {
        assert_eq!(super::note_line("no cluster"), "note: no cluster");
        assert_eq!(
            super::note_line("warning: a secret in plain text"),
            "warning: a secret in plain text"
        );
    }
}
