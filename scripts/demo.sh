#!/usr/bin/env bash
# The main job: start a local real Kubernetes cluster (kube-apiserver, kube-controller-manager and
# kube-scheduler of the current release, etcd, and kwok playing the kubelet of one node), enable a
# built-in addon that has a dependency, wait until its workloads are ready, and show its status.
# Run it again to tear everything down.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_DIR="${ADDONCTL_DEMO_DIR:-/tmp/addonctl-demo}"
ADDON="${ADDONCTL_DEMO_ADDON:-strongbox-dashboard}"

if [ -f "$ENV_DIR/env.json" ]; then
  echo "== tearing down the demo environment in $ENV_DIR =="
  bash scripts/k8s/down.sh --dir "$ENV_DIR"
  exit 0
fi

echo "== building addonctl, and Kubernetes, etcd and kwok from the Go module proxy (cached after the first run) =="
log_dir="$(mktemp -d "${TMPDIR:-/tmp}/addonctl-demo-build.XXXXXX")"
bash scripts/k8s/build.sh >"$log_dir/out" 2>"$log_dir/err" &
k8s_build=$!
if ! cargo build --release --quiet; then
  kill "$k8s_build" 2>/dev/null || true
  exit 1
fi
if ! wait "$k8s_build"; then
  cat "$log_dir/err" >&2
  exit 1
fi
rm -rf "$log_dir"
bin="$PWD/target/release/addonctl"

echo "== starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on 127.0.0.1 =="
bash scripts/k8s/up.sh --dir "$ENV_DIR"
export KUBECONFIG="$ENV_DIR/kubeconfig-control-plane"

echo
echo "== addonctl list =="
"$bin" list

echo
echo "== addonctl enable $ADDON (its dependency comes first, and is ready before it is applied) =="
"$bin" enable "$ADDON"

echo
echo "== addonctl wait $ADDON (until its workloads are ready) =="
"$bin" wait "$ADDON" --timeout 120s

echo
echo "== addonctl status -v $ADDON =="
"$bin" status "$ADDON" -v

echo
echo "== addonctl list =="
"$bin" list

echo
echo "The cluster keeps running. Try:"
echo "  export KUBECONFIG=$KUBECONFIG"
echo "  $bin status strongbox-operator -v"
echo "  $bin disable $ADDON"
echo "Run 'bash scripts/demo.sh' again to stop it."
