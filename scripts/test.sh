#!/usr/bin/env bash
# Runs every test on a fresh machine: checks formatting and lints, then the whole test suite.
# Everything the tests need is installed or started from here; `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

echo "== formatting =="
cargo fmt --all -- --check

echo "== lints =="
cargo clippy --locked --all-targets -- -D warnings

echo "== tests =="
cargo test --locked --all-targets "$@"
