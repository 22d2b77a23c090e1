#!/usr/bin/env bash
# Builds the Kubernetes test components from the Go module proxy, once per machine, and prints the
# directory that holds them (one line on stdout):
#
#   kube-apiserver, kube-controller-manager, kube-scheduler   k8s.io/kubernetes vKUBE
#   etcd                                                       go.etcd.io/etcd/server/v3 vETCD
#   kwok (nodes and pod status without a kubelet)              sigs.k8s.io/kwok vKWOK
#
# Usage: scripts/k8s/build.sh [--kube-version X.Y.Z] [--rebuild]
#        BIN_DIR="$(scripts/k8s/build.sh)"
#
# Environment:
#   ADDONCTL_KUBE_VERSION   Kubernetes version (default: the current one, see KUBE_DEFAULT below)
#   ADDONCTL_ETCD_VERSION   etcd version (default ETCD_DEFAULT)
#   ADDONCTL_KWOK_VERSION   KWOK version (default KWOK_DEFAULT)
#   ADDONCTL_CACHE          cache root (default ${XDG_CACHE_HOME:-~/.cache}/addonctl)
#   ADDONCTL_KEEP_BUILD=1   keep the temporary build directory
#
# Each component is built in a wrapper module: k8s.io/kubernetes and etcd's server module replace
# their sibling modules with local paths, so the wrapper requires the release and replaces each
# sibling with the published module of the same release. The binaries are cached under
# $ADDONCTL_CACHE/{kube,etcd,kwok}/vX.Y.Z/ and the printed directory, $ADDONCTL_CACHE/k8s-bin/<versions>/,
# holds symlinks to them. The module downloads stay in the Go module cache.
set -euo pipefail

KUBE_DEFAULT="1.37.2"
ETCD_DEFAULT="3.6.16"
KWOK_DEFAULT="0.8.0"

log() { printf '[k8s-build] %s\n' "$*" >&2; }
die() { printf '[k8s-build] error: %s\n' "$*" >&2; exit 1; }

KUBE_VERSION="${ADDONCTL_KUBE_VERSION:-$KUBE_DEFAULT}"
ETCD_VERSION="${ADDONCTL_ETCD_VERSION:-$ETCD_DEFAULT}"
KWOK_VERSION="${ADDONCTL_KWOK_VERSION:-$KWOK_DEFAULT}"
REBUILD=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --kube-version) [ "$#" -ge 2 ] || die "--kube-version needs a version"; KUBE_VERSION="$2"; shift ;;
    --kube-version=*) KUBE_VERSION="${1#*=}" ;;
    --rebuild) REBUILD=1 ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
  shift
done
KUBE_VERSION="${KUBE_VERSION#v}"
ETCD_VERSION="${ETCD_VERSION#v}"
KWOK_VERSION="${KWOK_VERSION#v}"
for v in "$KUBE_VERSION" "$ETCD_VERSION" "$KWOK_VERSION"; do
  [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "'$v' is not a release version (X.Y.Z)"
done

CACHE="${ADDONCTL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/addonctl}"
KUBE_DIR="$CACHE/kube/v$KUBE_VERSION"
ETCD_DIR="$CACHE/etcd/v$ETCD_VERSION"
KWOK_DIR="$CACHE/kwok/v$KWOK_VERSION"
OUT="$CACHE/k8s-bin/kube-v$KUBE_VERSION-etcd-v$ETCD_VERSION-kwok-v$KWOK_VERSION"

have_kube() { [ -x "$KUBE_DIR/kube-apiserver" ] && [ -x "$KUBE_DIR/kube-controller-manager" ] && [ -x "$KUBE_DIR/kube-scheduler" ]; }
have_etcd() { [ -x "$ETCD_DIR/etcd" ]; }
have_kwok() { [ -x "$KWOK_DIR/kwok" ] && [ -s "$KWOK_DIR/stages.yaml" ]; }

link_out() {
  mkdir -p "$OUT"
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler; do ln -sfn "$KUBE_DIR/$b" "$OUT/$b"; done
  ln -sfn "$ETCD_DIR/etcd" "$OUT/etcd"
  ln -sfn "$KWOK_DIR/kwok" "$OUT/kwok"
  ln -sfn "$KWOK_DIR/stages.yaml" "$OUT/kwok-stages.yaml"
}

# Everything built already: print the directory and stop.
print_if_cached() {
  if [ "$REBUILD" -eq 0 ] && have_kube && have_etcd && have_kwok; then
    link_out
    printf '%s\n' "$OUT"
    exit 0
  fi
}

for tool in openssl curl setsid flock; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    MISSING_TOOLS=1
  fi
done
if [ "${MISSING_TOOLS:-0}" = 1 ]; then
  command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] || die "openssl, curl, setsid and flock are needed"
  log "installing openssl, curl and util-linux with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssl curl util-linux >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssl curl util-linux >/dev/null; } \
    || die "apt-get could not install openssl, curl and util-linux"
fi

print_if_cached

command -v go >/dev/null 2>&1 || die "the go command is needed (Go 1.26 or newer) to build Kubernetes, etcd and KWOK"
# The installed Go (1.26) satisfies every go directive of these releases: never switch toolchains.
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"

mkdir -p "$CACHE"
# One build at a time per cache (test.sh and demo.sh may both ask).
exec 8>"$CACHE/.k8s-build.lock"
flock 8
print_if_cached

WORK="$(mktemp -d "${TMPDIR:-/tmp}/addonctl-k8s-build.XXXXXX")"
cleanup() { if [ "${ADDONCTL_KEEP_BUILD:-0}" != 1 ]; then rm -rf "$WORK"; else log "build tree kept in $WORK"; fi; }
trap cleanup EXIT
# A build cache of its own, removed afterwards: the binaries are what is kept.
export GOCACHE="$WORK/gocache"
export GOTMPDIR="$WORK/tmp"
mkdir -p "$GOTMPDIR"

# go.mod of a module version, from the module cache (downloaded on first use).
module_gomod() { # MODULE VERSION
  local file
  file="$(cd "$WORK" && go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [ -n "$file" ] && [ -f "$file" ] || die "could not download $1@$2 (is the Go module proxy reachable?)"
  printf '%s\n' "$file"
}

# wrapper_module DIR MODULE VERSION SIBLING_VERSION PKG...: a module that requires MODULE@VERSION,
# replaces every sibling it replaces with a local path by the published SIBLING_VERSION, and
# imports PKG... (main packages, through a build-tagged file, as tools are pinned).
wrapper_module() {
  local dir="$1" module="$2" version="$3" sibling="$4"
  shift 4
  mkdir -p "$dir"
  local gomod
  gomod="$(module_gomod "$module" "v$version")"
  {
    printf 'module addonctl.test/build\n\ngo 1.26.0\n\nrequire %s v%s\n\nreplace (\n' "$module" "$version"
    # `name => ./path` and `name => ../path` lines, in or out of a replace block.
    grep -v FORBIDDEN "$gomod" \
      | sed -n 's/^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\([^[:space:]()]\{1,\}\)[[:space:]]\{1,\}=>[[:space:]]\{1,\}\.\{1,2\}\/.*$/\2/p' \
      | grep -v '^replace$' | sort -u \
      | while read -r name; do printf '\t%s => %s v%s\n' "$name" "$name" "$sibling"; done
    printf ')\n'
  } >"$dir/go.mod"
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    local p
    for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n'
  } >"$dir/tools.go"
  (cd "$dir" && go mod tidy >/dev/null 2>"$dir/tidy.log") || { tail -n 20 "$dir/tidy.log" >&2; die "resolving the modules of $module v$version failed"; }
}

build_kube() {
  local minor="${KUBE_VERSION#*.}"
  minor="${minor%%.*}"
  log "building kube-apiserver, kube-controller-manager and kube-scheduler v$KUBE_VERSION (several minutes on 2 cores)"
  local start=$SECONDS dir="$WORK/kube"
  wrapper_module "$dir" k8s.io/kubernetes "$KUBE_VERSION" "0.$minor.${KUBE_VERSION##*.}" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
  local ld="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitVersion=v$KUBE_VERSION -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  mkdir -p "$dir/out"
  (cd "$dir" && go build -trimpath -ldflags "$ld" -o out/ \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler) \
    2>"$dir/build.log" || { tail -n 20 "$dir/build.log" >&2; die "building Kubernetes v$KUBE_VERSION failed"; }
  local got
  got="$("$dir/out/kube-apiserver" --version 2>/dev/null | awk '{print $2}')"
  [ "$got" = "v$KUBE_VERSION" ] || die "the built kube-apiserver says '$got', not v$KUBE_VERSION"
  rm -rf "$KUBE_DIR.tmp" && mkdir -p "$KUBE_DIR.tmp" && mv "$dir"/out/* "$KUBE_DIR.tmp"/
  rm -rf "$KUBE_DIR" && mv "$KUBE_DIR.tmp" "$KUBE_DIR"
  log "Kubernetes v$KUBE_VERSION built in $((SECONDS - start)) s: $KUBE_DIR"
}

build_etcd() {
  log "building etcd v$ETCD_VERSION"
  local start=$SECONDS dir="$WORK/etcd"
  wrapper_module "$dir" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "$ETCD_VERSION" go.etcd.io/etcd/server/v3
  mkdir -p "$dir/out"
  local ld="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v$ETCD_VERSION"
  (cd "$dir" && go build -trimpath -ldflags "$ld" -o out/etcd go.etcd.io/etcd/server/v3) \
    2>"$dir/build.log" || { tail -n 20 "$dir/build.log" >&2; die "building etcd v$ETCD_VERSION failed"; }
  rm -rf "$ETCD_DIR.tmp" && mkdir -p "$ETCD_DIR.tmp" && mv "$dir/out/etcd" "$ETCD_DIR.tmp/etcd"
  rm -rf "$ETCD_DIR" && mv "$ETCD_DIR.tmp" "$ETCD_DIR"
  log "etcd v$ETCD_VERSION built in $((SECONDS - start)) s: $ETCD_DIR"
}

build_kwok() {
  log "building kwok v$KWOK_VERSION"
  local start=$SECONDS
  rm -rf "$KWOK_DIR.tmp" && mkdir -p "$KWOK_DIR.tmp"
  (cd "$WORK" && GOBIN="$KWOK_DIR.tmp" go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=v$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION") \
    2>"$WORK/kwok.log" || { tail -n 20 "$WORK/kwok.log" >&2; die "building kwok v$KWOK_VERSION failed"; }
  # kwok acts only through Stages: those of a fast cluster (nodes become Ready at once and keep a
  # Lease; pods are Ready as soon as they are bound, Job pods complete, deleted pods go), taken
  # from the module's own stage definitions.
  local src
  src="$(cd "$WORK" && go mod download -json "sigs.k8s.io/kwok@v$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [ -d "$src/kustomize/stage" ] || die "the stage definitions of kwok v$KWOK_VERSION are missing"
  local f first=1
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    [ -f "$src/kustomize/stage/$f" ] || die "kwok v$KWOK_VERSION has no stage $f"
    [ "$first" -eq 1 ] || printf -- '---\n'
    first=0
    if [ "$f" = pod/fast/pod-ready.yaml ]; then
      # A pod may ask to become Ready later (a slow rollout), as kwok's general stages allow:
      # annotation pod-ready.stage.kwok.x-k8s.io/delay, a duration such as "3s".
      sed '/^spec:$/a\  delay:\n    durationMilliseconds: 0\n    durationFrom:\n      expressionFrom: '"'"'.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]'"'"'' \
        "$src/kustomize/stage/$f"
    else
      cat "$src/kustomize/stage/$f"
    fi
  done >"$KWOK_DIR.tmp/stages.yaml"
  grep -q 'pod-ready.stage.kwok.x-k8s.io/delay' "$KWOK_DIR.tmp/stages.yaml" || die "could not add the ready delay to kwok's pod-ready stage"
  rm -rf "$KWOK_DIR" && mv "$KWOK_DIR.tmp" "$KWOK_DIR"
  log "kwok v$KWOK_VERSION built in $((SECONDS - start)) s: $KWOK_DIR"
}

if [ "$REBUILD" -eq 1 ] || ! have_etcd; then build_etcd; fi
if [ "$REBUILD" -eq 1 ] || ! have_kwok; then build_kwok; fi
if [ "$REBUILD" -eq 1 ] || ! have_kube; then build_kube; fi
link_out
printf '%s\n' "$OUT"
