#!/usr/bin/env bash
# The main job: start a local real Kubernetes API server (kube-apiserver v1.20.2 built from Debian's
# source package), enable a built-in addon that has a dependency, and show its status.
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

echo "== building addonctl =="
cargo build --release --quiet
bin="$PWD/target/release/addonctl"

echo "== building (or reusing) kube-apiserver v1.20.2 from Debian's source package =="
bash scripts/k8s/build.sh >/dev/null

echo "== starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 =="
bash scripts/k8s/up.sh --dir "$ENV_DIR" --controller-manager
export KUBECONFIG="$ENV_DIR/kubeconfig-control-plane"

echo
echo "== addonctl list =="
"$bin" list

echo
echo "== addonctl enable $ADDON (its dependency comes first) =="
# No kubelet runs here, so Pods never start and workloads never become ready: do not wait for the
# dependency's workloads before applying the addon (on a real cluster, leave the default wait).
"$bin" enable "$ADDON" --dependency-timeout 0

echo
echo "== addonctl status -v $ADDON =="
echo "(no kubelet runs here, so its Deployment stays 0/1 ready and the phase stays \`enabling\`)"
"$bin" status "$ADDON" -v

echo
echo "== addonctl list =="
"$bin" list

echo
echo "The API server keeps running. Try:"
echo "  export KUBECONFIG=$KUBECONFIG"
echo "  $bin status strongbox-operator -v"
echo "  $bin disable $ADDON"
echo "Run 'bash scripts/demo.sh' again to stop it."
