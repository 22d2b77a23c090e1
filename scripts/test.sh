#!/usr/bin/env bash
# Runs every test on a fresh machine. Installs and starts what the tests need:
#   - kube-apiserver v1.20.2 built from Debian's source package (cached, see scripts/k8s/README.md),
#   - etcd plus a control-plane and a managed API server on 127.0.0.1 (stopped again on exit);
# then checks formatting and lints and runs the whole test suite. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export ADDONCTL_TEST_ENV="${ADDONCTL_TEST_ENV:-$PWD/target/k8s-test-env}"

echo "== formatting =="
cargo fmt --all -- --check

echo "== lints =="
cargo clippy --locked --all-targets -- -D warnings

echo "== Kubernetes API servers for the tests =="
bash scripts/k8s/build.sh >/dev/null
bash scripts/k8s/up.sh --managed 3 --dir "$ADDONCTL_TEST_ENV"
# Stopped by PID on exit; ADDONCTL_KEEP_ENV=1 keeps it running for the next run.
if [ "${ADDONCTL_KEEP_ENV:-0}" != 1 ]; then
  trap 'bash scripts/k8s/down.sh --dir "$ADDONCTL_TEST_ENV" || true' EXIT
fi

echo "== tests =="
cargo test --locked --all-targets "$@"
