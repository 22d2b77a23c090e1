#!/usr/bin/env bash
# YAML hostile-input benchmark: the time to refuse deeply nested documents through addonctl's
# YAML entry point (pre-scan + serde_yaml) next to serde_yaml alone (before the pre-scan).
# ADDONCTL_BENCH_RAW_KB sets the sizes serde_yaml alone is timed on (default 12,25,50).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --bench yaml "$@"
