//! Evaluate CUE files as one package and print `cue export --out json` of it (or of one
//! field with `--path a.b`): the cold-process figure of `scripts/bench-render.sh` and a tool
//! for comparing the native evaluator with `cue`.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use addonctl::cue::{evaluate, Limits, Source};

fn main() {
    let mut path: Option<String> = None;
    let mut sources = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--path" {
            path = args.next();
            continue;
        }
        match fs_err::read_to_string(&arg) {
            Ok(text) => sources.push(Source::new(arg, text)),
            Err(e) => {
                eprintln!("{arg}: {e}");
                std::process::exit(2);
            }
        }
    }
    let result = evaluate(&sources, &Limits::default()).and_then(|instance| match &path {
        Some(p) => {
            let parts: Vec<&str> = p.split('.').collect();
            instance
                .export_text(&parts)
                .map(|v| v.unwrap_or_else(|| "null".to_owned()))
        }
        None => instance.export_all_text(),
    });
    match result {
        // Exact JSON text: integers beyond 64 bits keep every digit.
        Ok(text) => println!("{text}"),
        Err(e) => {
            eprintln!("error ({:?}): {e}", e.kind);
            std::process::exit(1);
        }
    }
}
