#!/usr/bin/env bash
# How soon a wait sees what it waits for, on a real API server: a workload addon is enabled
# (direct engine), `addonctl wait <addon> --for enabled` runs, and its Deployment is made ready
# (its status written, as a kubelet would make it) after a delay; the figure is the time from
# that write to the wait's exit, min / median / max over rounds, per delay. Then the same for
# `disable --wait` while KubeVela's finalizer holds the Application, from the finalizer's
# removal to the command's exit; and for a one-stage `rollout run`, from the Deployment made ready to
# the run's exit. See scripts/bench-wait.py.
#   ADDONCTL_BIN           the binaries to compare, separated by spaces (default: a release build)
#   ADDONCTL_BENCH_ROUNDS  rounds per delay (default 5)
#   ADDONCTL_BENCH_WAIT_PARTS  the parts to run, e.g. "3" (default "123")
#   ADDONCTL_TEST_ENV      an environment to reuse (default: one started here and stopped after)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${ADDONCTL_BIN:-}" ]; then
  cargo build --release --quiet
  ADDONCTL_BIN="$PWD/target/release/addonctl"
fi
KUBECTL="$(bash scripts/sources/helm.sh kubectl)"
export ADDONCTL_TEST_ENV="${ADDONCTL_TEST_ENV:-$PWD/target/k8s-bench-wait-env}"
bash scripts/k8s/build.sh >/dev/null
if [ ! -f "$ADDONCTL_TEST_ENV/env.json" ]; then
  trap 'bash scripts/k8s/down.sh --dir "$ADDONCTL_TEST_ENV" || true' EXIT
  # No controllers: the benchmark writes the workload statuses itself, at times it knows.
  bash scripts/k8s/up.sh --workloads none --dir "$ADDONCTL_TEST_ENV"
fi
# shellcheck disable=SC2086
python3 scripts/bench-wait.py "$KUBECTL" "$ADDONCTL_TEST_ENV" $ADDONCTL_BIN
