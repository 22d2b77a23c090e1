//! YAML hostile-input benchmark: the time to refuse a deeply nested flow document (`[[[[…`,
//! `{{{{…`, `- - - -…` and a block mapping nested by indentation) through addonctl's one YAML
//! entry point (`addonctl::yaml::parse_documents`: linear pre-scan, then `serde_yaml`), next to
//! `serde_yaml` alone (what addonctl did before the pre-scan). `serde_yaml` alone is quadratic in
//! the flow depth, so it runs on smaller documents (`ADDONCTL_BENCH_RAW_KB`, default 12,25,50)
//! while addonctl runs on 200 KB and 4 MiB. `scripts/bench-yaml.sh` runs it.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods
)]

use std::time::{Duration, Instant};

fn documents(kb: usize) -> Vec<(&'static str, String)> {
    let bytes = kb * 1024;
    vec![
        ("flow [[[[", "[".repeat(bytes)),
        ("flow {{{{", "{".repeat(bytes)),
        ("key: [[[[", format!("key: {}", "[".repeat(bytes))),
        ("- - - -", "- ".repeat(bytes / 2)),
        (
            "indented",
            (0..)
                .map(|i| format!("{}k:\n", " ".repeat(i)))
                .scan(0, |size, line| {
                    *size += line.len();
                    (*size <= bytes).then_some(line)
                })
                .collect(),
        ),
    ]
}

/// A valid multi-document stream of about `kb` KiB of ordinary manifests: what the pre-scan
/// costs on the files addonctl reads every day.
fn manifests(kb: usize) -> String {
    let one = [
        "---",
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata:",
        "  name: web",
        "  labels: {app: web, tier: \"front\"}",
        "spec:",
        "  replicas: 2",
        "  template:",
        "    spec:",
        "      containers:",
        "        - name: web # the server",
        "          image: 'nginx:1.25'",
        "          args: [\"--port\", \"8080\", '[x]']",
        "          env:",
        "            - {name: A, value: \"b: c\"}",
        "          command: |",
        "            sh -c '[ -f x ] && echo {ok}'",
        "",
    ]
    .join("\n");
    one.repeat(kb * 1024 / one.len() + 1)
}

fn time(f: impl Fn() -> bool) -> (Duration, bool) {
    let start = Instant::now();
    let refused = f();
    (start.elapsed(), refused)
}

fn main() {
    let raw_sizes: Vec<usize> = std::env::var("ADDONCTL_BENCH_RAW_KB").ok().map_or_else(
        || vec![12, 25, 50],
        |v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
    );
    println!(
        "{:<12} {:>8} {:>12} {:>8}",
        "document", "size", "time", "refused"
    );
    for kb in [200, 4096] {
        for (name, text) in documents(kb) {
            let (elapsed, refused) = time(|| addonctl::yaml::parse_documents(&text).is_err());
            println!(
                "{name:<12} {:>6}KB {:>10.3}ms {refused:>8}   addonctl::yaml",
                kb,
                elapsed.as_secs_f64() * 1e3
            );
        }
    }
    let valid = manifests(4096);
    if let Err(e) = addonctl::yaml::parse_documents(&valid) {
        panic!("the valid manifests were refused: {e}");
    }
    let (ours, refused) = time(|| addonctl::yaml::parse_documents(&valid).is_err());
    let (raw, _) = time(|| {
        serde_yaml::Deserializer::from_str(&valid)
            .map(<serde_json::Value as serde::Deserialize>::deserialize)
            .any(|r| r.is_err())
    });
    println!(
        "{:<12} {:>6}KB {:>10.3}ms {:>8}   addonctl::yaml (serde_yaml alone: {:.3}ms)",
        "manifests",
        valid.len() / 1024,
        ours.as_secs_f64() * 1e3,
        refused,
        raw.as_secs_f64() * 1e3
    );
    for kb in raw_sizes {
        for (name, text) in documents(kb) {
            let (elapsed, refused) = time(|| {
                serde_yaml::Deserializer::from_str(&text)
                    .map(<serde_json::Value as serde::Deserialize>::deserialize)
                    .any(|r| r.is_err())
            });
            println!(
                "{name:<12} {:>6}KB {:>10.3}ms {refused:>8}   serde_yaml alone (before)",
                kb,
                elapsed.as_secs_f64() * 1e3
            );
        }
    }
}
