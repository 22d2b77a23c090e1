#!/usr/bin/env bash
# Runs every test on a fresh machine. Installs and starts what the tests need:
#   - Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler), etcd and kwok, built from
#     the Go module proxy (cached, see scripts/k8s/README.md): the current release, and the oldest
#     supported one for the compatibility subset;
#   - a control plane and three managed clusters on 127.0.0.1 sharing one etcd, each with its
#     controllers, scheduler and a kwok node so workloads become ready (stopped again on exit);
#   - moto, s3s-fs, lighttpd + git http-backend, sshd (openssh-server), Debian's docker-registry
#     (OCI, with a token server and a cosign-style signer in Python) and the helm binaries
#     (Helm 3, and Helm 4 built from the Go module proxy) for the registry tests;
#   - the real `vela` CLI (v1.10.9, built from the Go module proxy) for the interop tests;
#   - Debian's chromium and chromium-driver for the web UI's browser tests;
#   - schemathesis (PyPI) for the API fuzz run against `addonctl serve`;
#   - the CUE oracle (the real Go CUE evaluator, v0.9.2 as KubeVela 1.10 uses, built once and
#     cached), which re-checks the goldens of the CUE corpus tests/cue/cases before the cargo
#     tests compare addonctl's evaluator with them;
# then checks formatting and lints and runs the whole test suite. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export ADDONCTL_TEST_ENV="${ADDONCTL_TEST_ENV:-$PWD/target/k8s-test-env}"

# The oldest Kubernetes release addonctl supports: the compatibility subset runs on it.
COMPAT_KUBE_VERSION="${ADDONCTL_COMPAT_KUBE_VERSION:-1.30.14}"
COMPAT_ENV="${ADDONCTL_COMPAT_ENV:-$PWD/target/k8s-compat-env}"

echo "== formatting =="
cargo fmt --all -- --check

# The Go builds (Kubernetes, etcd, kwok, Helm 4, the CUE oracle, vela: minutes, once per machine) run
# while cargo works.
mkdir -p target
K8S_BUILD_LOG="$PWD/target/k8s-build.log"
( bash scripts/k8s/build.sh >/dev/null && bash scripts/k8s/build.sh --kube-version "$COMPAT_KUBE_VERSION" >/dev/null \
  && bash scripts/sources/helm.sh helm4 >/dev/null && bash scripts/cue-oracle.sh --install \
  && bash scripts/sources/vela.sh >/dev/null ) \
  >"$K8S_BUILD_LOG" 2>&1 &
K8S_BUILD=$!
stop_all() {
  kill "$K8S_BUILD" 2>/dev/null || true
  if [ "${ADDONCTL_KEEP_ENV:-0}" != 1 ]; then
    bash scripts/k8s/down.sh --dir "$ADDONCTL_TEST_ENV" >/dev/null 2>&1 || true
  fi
  bash scripts/k8s/down.sh --dir "$COMPAT_ENV" >/dev/null 2>&1 || true
}
trap stop_all EXIT

echo "== lints =="
cargo clippy --locked --all-targets -- -D warnings

echo "== building the tests =="
cargo test --locked --lib --bins --tests --no-run

echo "== Kubernetes for the tests (current release; ADDONCTL_KEEP_ENV=1 keeps it running) =="
if ! wait "$K8S_BUILD"; then
  cat "$K8S_BUILD_LOG" >&2
  echo "building Kubernetes, etcd, kwok, Helm 4, the CUE oracle or vela failed" >&2
  exit 1
fi
grep -F 'built in' "$K8S_BUILD_LOG" || true
bash scripts/k8s/up.sh --managed 3 --dir "$ADDONCTL_TEST_ENV"

echo "== registry stand-ins for the source tests (installed once, started by the tests) =="
bash scripts/sources/moto.sh install
bash scripts/sources/s3s-fs.sh install
bash scripts/sources/helm.sh >/dev/null
bash scripts/sources/helm.sh helm4 >/dev/null
bash scripts/sources/sshd-git.sh install
# Debian's docker-registry (the OCI registry), bcrypt and cryptography for its htpasswd file, token
# server and signatures.
bash scripts/sources/oci-registry.sh install
if ! command -v lighttpd >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q lighttpd >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q lighttpd >/dev/null; }
fi

# The web UI's browser tests (tests/serve_browser.rs) drive Debian's Chromium through chromedriver.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null; }
fi

# The API fuzz run (tests/serve_api.rs) uses schemathesis from PyPI, in its own venv kept across runs.
SCHEMATHESIS_VERSION=4.32.5
SCHEMATHESIS_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/addonctl/schemathesis-$SCHEMATHESIS_VERSION"
if ! "$SCHEMATHESIS_VENV/bin/schemathesis" --version >/dev/null 2>&1; then
  rm -rf "$SCHEMATHESIS_VENV"
  python3 -m venv "$SCHEMATHESIS_VENV"
  "$SCHEMATHESIS_VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >/dev/null
fi
export ADDONCTL_SCHEMATHESIS="$SCHEMATHESIS_VENV/bin/schemathesis"

echo "== CUE oracle: the goldens of the corpus and of the CUE fixture addons still what the real CUE evaluator gives =="
bash scripts/cue-oracle.sh --check
bash scripts/cue-addon-goldens.sh --check

echo "== tests =="
cargo test --locked --lib --bins --tests "$@"

if [ "$#" -eq 0 ]; then
  echo "== compatibility subset on the oldest supported Kubernetes (v$COMPAT_KUBE_VERSION) =="
  if [ "${ADDONCTL_KEEP_ENV:-0}" != 1 ]; then bash scripts/k8s/down.sh --dir "$ADDONCTL_TEST_ENV" >/dev/null; fi
  bash scripts/k8s/up.sh --managed 3 --dir "$COMPAT_ENV" --kube-version "$COMPAT_KUBE_VERSION"
  # Enable with dependencies, many clusters, upgrade, drift, the controller, wait, disable.
  ADDONCTL_TEST_ENV="$COMPAT_ENV" cargo test --locked --test integration -- \
    dependencies::a_chain_of_three_is_planned_in_layers_and_enabled_dependencies_first \
    dependencies::with_the_direct_engine_a_dependency_is_ready_before_what_needs_it_is_applied \
    dependencies::disable_refuses_while_dependents_need_it_and_prunes_what_nothing_needs \
    multi_cluster::a_crd_and_its_custom_resource_are_applied_in_one_enable \
    multi_cluster::upgrade_prunes_on_every_cluster_and_an_unchanged_enable_changes_nothing \
    multi_cluster::disable_deletes_what_it_created_on_every_cluster_and_nothing_else \
    multi_cluster::status_reports_every_cluster_and_resource_and_is_enabled_once_workloads_are_ready \
    day_two::wait_returns_when_the_workloads_are_ready_or_gone_and_times_out_otherwise \
    drift::a_hand_edit_is_reported_under_warn_and_reverted_under_correct \
    drift::a_deleted_object_is_reported_and_recreated \
    controller::an_addon_resource_follows_its_selector_across_joins_label_changes_detach_and_deletion \
    controller::an_unchanged_addon_is_not_applied_again_and_an_edit_is \
    controller::a_hand_edit_is_corrected_under_correct \
    safety_authz::
  bash scripts/k8s/down.sh --dir "$COMPAT_ENV"
fi
