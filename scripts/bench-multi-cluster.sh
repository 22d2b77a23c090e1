#!/usr/bin/env bash
# Multi-cluster benchmark on real API servers: starts an environment of its own (a control plane
# and 10 managed kube-apiservers sharing one etcd, see scripts/k8s/README.md), runs
# `cargo bench --bench multi_cluster` against it, and stops it again (by PID, scripts/k8s/down.sh).
#   ADDONCTL_BENCH_MC_ENV   the environment's directory (default target/k8s-bench-mc-env)
#   ADDONCTL_BENCH_MC_KEEP  1 = leave it running afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${ADDONCTL_BENCH_MC_ENV:-$PWD/target/k8s-bench-mc-env}"
export ADDONCTL_TEST_ENV="$DIR"
bash scripts/k8s/build.sh >/dev/null
if [ "${ADDONCTL_BENCH_MC_KEEP:-0}" != 1 ]; then
  trap 'bash scripts/k8s/down.sh --dir "$DIR" || true' EXIT
fi
bash scripts/k8s/up.sh --managed 10 --workloads none --dir "$DIR"
cargo bench --bench multi_cluster
