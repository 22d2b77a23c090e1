//! The CLI's answers to the library's questions ([`addonctl::ops::Question`]): the person at
//! the terminal, y/N; without a terminal (or with `--yes`) nobody is asked.

use addonctl::ops::{Consent, Question};

use crate::cli::printer::Printer;

/// Asks on the terminal, unless told not to.
#[derive(Debug, Clone, Copy)]
pub struct Asking {
    printer: Printer,
    asks: bool,
}

impl Asking {
    /// Asks on a terminal, unless `yes` (the command's `--yes`) answered already.
    pub fn unless(yes: bool, printer: Printer) -> Asking {
        Asking {
            printer,
            asks: !yes && printer.interactive(),
        }
    }
}

impl Consent for Asking {
    fn asks(&self) -> bool {
        self.asks
    }

    fn agree(&self, question: &Question) -> addonctl::Result<bool> {
        let (lines, prompt) = match question {
            Question::Adopt { adoptions } => {
                let mut lines = vec![
                    "these objects exist and addonctl did not create them; enabling adopts them (overwrites their fields; `disable` gives them back):".to_owned(),
                ];
                lines.extend(adoptions.iter().map(|adoption| format!("  {adoption}")));
                (lines, "adopt them? [y/N] ".to_owned())
            }
            Question::Detach {
                cluster,
                deleted,
                given_back,
                addons,
            } => {
                let mut lines = vec![format!(
                    "detaching cluster `{cluster}` deletes {} addons applied there{}, then forgets the cluster:",
                    crate::cli::commands::counted(*deleted, "object"),
                    if *given_back == 0 {
                        String::new()
                    } else {
                        format!(" and gives back {given_back}")
                    }
                )];
                lines.extend(addons.iter().map(|line| format!("  {line}")));
                (lines, format!("detach `{cluster}`? [y/N] "))
            }
            Question::Rejoin { cluster, dropped } => (
                vec![format!(
                    "cluster `{cluster}` is joined with labels {}; joining it again this way drops them (clusterLabelSelector stops matching it)",
                    dropped.join(",")
                )],
                format!("re-join `{cluster}`? [y/N] "),
            ),
        };
        self.printer
            .confirm(&lines, &prompt)
            .map_err(|e| addonctl::Error::Io(std::io::Error::other(e.to_string())))
    }
}
