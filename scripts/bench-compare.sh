#!/usr/bin/env bash
# Side by side, interleaved, on the same real API servers: addonctl against Helm 3 and Helm 4 (the largest
# built-in addon and a chart of the same objects: render, fresh install, unchanged re-run, removal; Helm 4
# applies with server-side apply by default, as addonctl does) and against
# `kubectl apply --server-side` (N objects × K clusters, N ∈ {10, 50, 200}, K ∈ {1, 3, 10}). Prints wall
# time, CPU, peak memory and API requests (from the API servers' audit logs) with min / median / max of
# the ratios. See scripts/bench-compare.py.
#   ADDONCTL_BENCH_ROUNDS      rounds per figure (default 5)
#   ADDONCTL_BENCH_GRID        e.g. "10x1,200x1" instead of the whole N×K grid
#   ADDONCTL_BENCH_PARTS       A (helm 3 and 4), B (kubectl) or AB (default)
#   ADDONCTL_BENCH_COMPARE_ENV the environment's directory (default target/k8s-bench-compare-env)
#   ADDONCTL_BENCH_KEEP        1 = leave it running afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${ADDONCTL_BENCH_COMPARE_ENV:-$PWD/target/k8s-bench-compare-env}"
cargo build --release --quiet
HELM="$(bash scripts/sources/helm.sh)"
HELM4="$(bash scripts/sources/helm.sh helm4)"
KUBECTL="$(bash scripts/sources/helm.sh kubectl)"
bash scripts/k8s/build.sh >/dev/null
if [ "${ADDONCTL_BENCH_KEEP:-0}" != 1 ]; then
  trap 'bash scripts/k8s/down.sh --dir "$DIR" || true' EXIT
fi
# A fresh environment each time: the audit logs and the objects of earlier runs would skew the figures.
bash scripts/k8s/down.sh --dir "$DIR" >/dev/null 2>&1 || true
rm -rf "$DIR"
# The managed clusters only for part B. No controllers, schedulers or fake nodes (`--workloads none`): nothing
# here needs a Pod to run, and the servers' CPU (every process under pids/) stays that of the API servers and etcd.
MANAGED=10
case "${ADDONCTL_BENCH_PARTS:-AB}" in *B*) ;; *) MANAGED=0 ;; esac
ADDONCTL_K8S_AUDIT=1 bash scripts/k8s/up.sh --managed "$MANAGED" --workloads none --dir "$DIR"
echo "addonctl $(du -h target/release/addonctl | cut -f1) ($(target/release/addonctl --version)), helm $("$HELM" version --short), helm $("$HELM4" version --short), kubectl $("$KUBECTL" version --client 2>/dev/null | head -1)"
python3 scripts/bench-compare.py "$PWD/target/release/addonctl" "$HELM" "$HELM4" "$KUBECTL" "$DIR"
