#!/usr/bin/env bash
# Mutation-fuzz the native CUE parser and evaluator for a bounded time (default 60 s):
#   scripts/fuzz-cue.sh [seconds]
# Seeds: the oracle corpus (tests/cue), the test fixtures and the benchmark template. Inputs
# that panic inside the evaluator or run far past its time budget are kept in target/fuzz-cue/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
cargo build --release --quiet --example fuzz_cue
exec target/release/examples/fuzz_cue --seconds "$seconds" tests/cue tests/fixtures benches/data
