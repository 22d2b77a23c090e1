#!/usr/bin/env bash
# Enable benchmark on a real API server: starts one (unless ADDONCTL_TEST_ENV already has one),
# runs `cargo bench --bench enable`, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
export ADDONCTL_TEST_ENV="${ADDONCTL_TEST_ENV:-$PWD/target/k8s-bench-env}"
bash scripts/k8s/build.sh >/dev/null
started=0
[ -f "$ADDONCTL_TEST_ENV/env.json" ] || started=1
bash scripts/k8s/up.sh --workloads none --dir "$ADDONCTL_TEST_ENV"
if [ "$started" = 1 ]; then
  trap 'bash scripts/k8s/down.sh --dir "$ADDONCTL_TEST_ENV" || true' EXIT
fi
cargo bench --bench enable
