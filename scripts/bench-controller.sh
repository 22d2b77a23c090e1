#!/usr/bin/env bash
# Controller benchmarks (benches/controller.rs), in the release profile (`--profile dev` for the
# unoptimized build, `--profile profiling` for the release build with line tables, to profile):
#   1. an unchanged `Addon` on 10 real managed API servers (requests per reconcile from the API
#      servers' audit logs, reconcile time),
#   2. with the default settings, the latency from a hand edit (and a deletion) on each of the
#      same 10 clusters to the object as recorded again,
#   3. a three-stage rollout (1 / 3 / 6 clusters, 2 s soak each) to the same 10 clusters,
#   4. 1,000 simulated clusters behind a fake API server with added latency (its own process),
#      `fleet-10k` the same with 10,000 clusters,
#   5. `fleet-cli`: `addonctl enable` of the same addon to 1,000 simulated clusters (the binary).
# Starts an environment of its own for 1 to 3 (a control plane and 10 managed kube-apiservers
# with audit logs, see scripts/k8s/README.md) and stops it afterwards (by PID, scripts/k8s/down.sh).
#   ADDONCTL_BENCH_CONTROLLER_ENV    the environment's directory (default target/k8s-bench-controller-env)
#   ADDONCTL_BENCH_CONTROLLER_KEEP   1 = leave it running afterwards
#   ADDONCTL_BENCH_RECONCILES        unchanged reconciles observed in 1 (default 20)
#   ADDONCTL_BENCH_FLEET_CLUSTERS    simulated clusters in 4 (default 1000)
#   ADDONCTL_BENCH_FLEET_LATENCY_MS  latency the fake server adds to every answer (default 5)
#   ADDONCTL_BENCH_FLEET_TIMEOUT_S   request (and socket read) timeout of every cluster in 4 (default: the library's)
#   ADDONCTL_BENCH_FLEET_HOLD_S      seconds the fleet part holds everything after its passes (for a heap snapshot)
#   ADDONCTL_BENCH_FLEET_PLAIN       1 = the fake server speaks plain HTTP/1.1 (default: TLS with HTTP/2, as
#                                    kube-apiserver; every simulated cluster then holds one connection)
#   ADDONCTL_BENCH_PROFILE           the Cargo profile (default release; `--profile` overrides it)
# Arguments: [--profile release|dev|profiling] then the parts to run (default: unchanged drift rollout
# fleet; also fleet-10k, fleet-cli).
set -euo pipefail
cd "$(dirname "$0")/.."
# Every simulated cluster holds a connection (and, with the plain fake, several): the fleet parts
# need as many descriptors as the hard limit allows.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
PROFILE="${ADDONCTL_BENCH_PROFILE:-release}"
if [ "${1:-}" = --profile ]; then
  [ "$#" -ge 2 ] || { echo "--profile needs a value: release, dev or profiling" >&2; exit 2; }
  PROFILE="$2"
  shift 2
fi
case "$PROFILE" in
  release | dev | profiling) ;;
  *) echo "unknown profile '$PROFILE': one of release, dev, profiling" >&2; exit 2 ;;
esac
PARTS=("$@")
[ "${#PARTS[@]}" -gt 0 ] || PARTS=(unchanged drift rollout fleet)
export CARGO_INCREMENTAL=0
echo "profile: $PROFILE" >&2
cargo bench --profile "$PROFILE" --bench controller --no-run
case " ${PARTS[*]} " in
  *" fleet-cli "*) cargo build --profile "$PROFILE" --bin addonctl ;;
esac
REAL=()
for part in "${PARTS[@]}"; do
  case "$part" in
    unchanged | drift | rollout) REAL+=("$part") ;;
    fleet | fleet-10k | fleet-cli) ;;
    *) echo "unknown part '$part': one of unchanged, drift, rollout, fleet, fleet-10k, fleet-cli" >&2; exit 2 ;;
  esac
done
if [ "${#REAL[@]}" -gt 0 ]; then
  DIR="${ADDONCTL_BENCH_CONTROLLER_ENV:-$PWD/target/k8s-bench-controller-env}"
  export ADDONCTL_TEST_ENV="$DIR"
  bash scripts/k8s/build.sh >/dev/null
  if [ "${ADDONCTL_BENCH_CONTROLLER_KEEP:-0}" != 1 ]; then
    trap 'bash scripts/k8s/down.sh --dir "$DIR" || true' EXIT
  fi
  ADDONCTL_K8S_AUDIT=1 bash scripts/k8s/up.sh --managed 10 --workloads none --dir "$DIR"
  cargo bench --profile "$PROFILE" --bench controller -- "${REAL[@]}"
fi
for part in "${PARTS[@]}"; do
  # In a process of its own, so that its memory figures are its own.
  case "$part" in
    fleet) cargo bench --profile "$PROFILE" --bench controller -- fleet ;;
    fleet-10k) ADDONCTL_BENCH_FLEET_CLUSTERS=10000 cargo bench --profile "$PROFILE" --bench controller -- fleet ;;
    fleet-cli) cargo bench --profile "$PROFILE" --bench controller -- fleet-cli ;;
  esac
done
