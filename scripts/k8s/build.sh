#!/usr/bin/env bash
# Build kube-apiserver and kube-controller-manager from Debian's `kubernetes`
# source package (v1.20.2) with Debian's Go, and cache the binaries.
#
# Usage: scripts/k8s/build.sh [--rebuild]
#
# Progress goes to stderr; the only line on stdout is the directory that holds
# the binaries, so callers can do: BIN_DIR="$(scripts/k8s/build.sh)".
#
# Cache: ${ADDONCTL_CACHE:-$HOME/.cache/addonctl}/kube/<source package version>/
#        with a `current` symlink next to it pointing at the last good build.
# Environment:
#   ADDONCTL_CACHE        cache root (default: $HOME/.cache/addonctl)
#   ADDONCTL_KEEP_BUILD=1 keep the temporary build tree (for debugging)
set -euo pipefail

T0="$(date +%s)"
log() { printf '[k8s-build +%ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { printf '[k8s-build] error: %s\n' "$*" >&2; exit 1; }

REBUILD=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --rebuild) REBUILD=1 ;;
    -h | --help)
      sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
  shift
done

CACHE_ROOT="${ADDONCTL_CACHE:-${HOME:-/root}/.cache/addonctl}"
KUBE_CACHE="${CACHE_ROOT}/kube"
BINARIES=(kube-apiserver kube-controller-manager)
# Needed to run the test environment (scripts/k8s/up.sh).
RUNTIME_PKGS=(etcd-server openssl curl ca-certificates)
# Needed only to build.
BUILD_PKGS=(golang-go golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev tar gzip)

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C

have_binaries() {
  local dir="$1" b
  [ -f "${dir}/.complete" ] || return 1
  for b in "${BINARIES[@]}"; do
    [ -x "${dir}/${b}" ] || return 1
  done
}

missing_pkgs() {
  local p status
  for p in "$@"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
    [ "$status" = "installed" ] || printf '%s\n' "$p"
  done
}

APT_UPDATED=0
ensure_pkgs() {
  local missing
  mapfile -t missing < <(missing_pkgs "$@")
  [ "${#missing[@]}" -gt 0 ] || return 0
  [ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}) and not root; install them first"
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    apt-get update -qq >&2
    APT_UPDATED=1
  fi
  log "apt-get install ${missing[*]}"
  local aptlog
  aptlog="$(mktemp "${TMPDIR:-/tmp}/addonctl-apt.XXXXXX")"
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$aptlog" 2>&1; then
    tail -n 30 "$aptlog" >&2
    rm -f "$aptlog"
    die "apt-get install failed"
  fi
  rm -f "$aptlog"
}

print_result() {
  local dir="$1"
  log "kube-apiserver:          ${dir}/kube-apiserver"
  log "kube-controller-manager: ${dir}/kube-controller-manager"
  printf '%s\n' "$dir"
}

# ---------------------------------------------------------------- fast path
if [ "$REBUILD" -eq 0 ] && have_binaries "${KUBE_CACHE}/current"; then
  ensure_pkgs "${RUNTIME_PKGS[@]}"
  dir="$(cd "${KUBE_CACHE}/current" && pwd -P)"
  log "cached build found ($(cat "${dir}/.complete")), nothing to do"
  print_result "$dir"
  exit 0
fi

mkdir -p "$KUBE_CACHE"
# One build at a time per cache.
exec 9>"${KUBE_CACHE}/.lock"
if ! flock -n 9; then
  log "another build holds ${KUBE_CACHE}/.lock, waiting"
  flock 9
  if [ "$REBUILD" -eq 0 ] && have_binaries "${KUBE_CACHE}/current"; then
    print_result "$(cd "${KUBE_CACHE}/current" && pwd -P)"
    exit 0
  fi
fi

START="$(date +%s)"
ensure_pkgs "${RUNTIME_PKGS[@]}" "${BUILD_PKGS[@]}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/addonctl-kube-build.XXXXXX")"
cleanup() {
  if [ "${ADDONCTL_KEEP_BUILD:-0}" = "1" ]; then
    log "build tree kept in ${WORK}"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
# apt downloads as the unprivileged `_apt` user: let it reach the work dir.
chmod 0755 "$WORK"

# ------------------------------------------------------- fetch the source
# A deb-src list derived from the machine's own apt sources, used through
# apt's ordinary options so that the machine's apt configuration and lists
# stay untouched.
log "deriving a deb-src list from the machine's apt sources"
mkdir -p "${WORK}/apt/parts" "${WORK}/apt/lists/partial" "${WORK}/apt/cache/archives/partial" "${WORK}/dl"
if id -u _apt >/dev/null 2>&1; then chown _apt "${WORK}/dl"; fi
n=0
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  sed -E 's/^Types:.*$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
    >"${WORK}/apt/parts/debian-src.sources"
  n=$((n + 1))
fi
if [ -f /etc/apt/sources.list ] && grep -Eq '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list; then
  grep -E '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list \
    | sed -E 's/^[[:space:]]*deb[[:space:]]/deb-src /' >"${WORK}/apt/parts/debian-src.list"
  n=$((n + 1))
fi
[ "$n" -gt 0 ] || die "no Debian apt sources found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"

APT_OPTS=(
  -o "Dir::Etc::sourcelist=/dev/null"
  -o "Dir::Etc::sourceparts=${WORK}/apt/parts"
  -o "Dir::State::Lists=${WORK}/apt/lists"
  -o "Dir::Cache=${WORK}/apt/cache"
  -q
)
log "apt-get update (source indexes only, into the work dir)"
apt-get "${APT_OPTS[@]}" update >"${WORK}/apt-update.log" 2>&1 || {
  tail -n 30 "${WORK}/apt-update.log" >&2
  die "apt-get update for the source indexes failed"
}
log "apt-get source --download-only kubernetes"
(cd "${WORK}/dl" && apt-get "${APT_OPTS[@]}" source --download-only --only-source kubernetes) \
  >"${WORK}/apt-source.log" 2>&1 || {
  tail -n 30 "${WORK}/apt-source.log" >&2
  die "apt-get source kubernetes failed"
}

dsc="$(find "${WORK}/dl" -maxdepth 1 -name 'kubernetes_*.dsc' | head -n1)"
[ -n "$dsc" ] || die "apt-get source did not produce a .dsc"
SRC_VERSION="$(sed -n 's/^Version: *//p' "$dsc" | head -n1)"
[ -n "$SRC_VERSION" ] || die "no Version in ${dsc}"
# 1.20.5+really1.20.2-1 -> 1.20.2
UPSTREAM="${SRC_VERSION#*:}"
UPSTREAM="${UPSTREAM%-*}"
case "$UPSTREAM" in *+really*) UPSTREAM="${UPSTREAM##*+really}" ;; esac
UPSTREAM="${UPSTREAM%%[+~]*}"
MAJOR="${UPSTREAM%%.*}"
MINOR="${UPSTREAM#*.}"
MINOR="${MINOR%%.*}"
log "source package kubernetes ${SRC_VERSION} (upstream v${UPSTREAM})"

DEST="${KUBE_CACHE}/${SRC_VERSION}"
if [ "$REBUILD" -eq 0 ] && have_binaries "$DEST"; then
  ln -sfn "$SRC_VERSION" "${KUBE_CACHE}/current"
  log "already built for this source version"
  print_result "$DEST"
  exit 0
fi

orig="$(find "${WORK}/dl" -maxdepth 1 -name 'kubernetes_*.orig.tar.*' | head -n1)"
[ -n "$orig" ] || die "no upstream tarball among the downloaded files"

# --------------------------------------------------------------- unpack
export GOPATH="${WORK}/gopath"
TREE="${GOPATH}/src/k8s.io/kubernetes"
mkdir -p "${WORK}/unpack" "$(dirname "$TREE")"
log "unpacking $(basename "$orig")"
tar -xf "$orig" -C "${WORK}/unpack"
top="$(find "${WORK}/unpack" -mindepth 1 -maxdepth 1 -type d | head -n1)"
if [ -z "$top" ] || [ ! -d "${top}/cmd/kube-apiserver" ]; then
  die "unexpected tarball layout"
fi
mv "$top" "$TREE"

# --------------------------------------------------------- build setup
export GO111MODULE=off GOPROXY=off GOFLAGS="" CGO_ENABLED=0
export GOCACHE="${WORK}/go-build"
command -v go >/dev/null || die "go not found after installing golang-go"
log "using $(go version)"
cd "$TREE"

# The vendored reflect2 1.0.1 crashes on Go >= 1.18 (first custom-resource
# write); use Debian's maintained copies of reflect2 and json-iterator.
for pkg in github.com/modern-go/reflect2 github.com/json-iterator/go; do
  src="/usr/share/gocode/src/${pkg}"
  [ -d "$src" ] || die "${src} missing (Debian Go package not installed?)"
  log "replacing vendor/${pkg} with Debian's copy"
  rm -rf "vendor/${pkg}"
  mkdir -p "vendor/${pkg}"
  cp -rL "${src}/." "vendor/${pkg}/"
  find "vendor/${pkg}" -name '*_test.go' -delete
done

# pkg/generated/openapi/zz_generated.openapi.go is produced by `make`.
log "building openapi-gen"
mkdir -p "${WORK}/bin"
go build -o "${WORK}/bin/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen

log "collecting packages tagged +k8s:openapi-gen"
find . \( -path ./vendor -o -path ./.git -o -path './_*' -o -name testdata \
  -o -path ./staging/src/k8s.io/code-generator -o -path ./staging/src/k8s.io/sample-apiserver \) -prune \
  -o -type f -name '*.go' -print0 \
  | { xargs -0 grep -l -e '+k8s:openapi-gen=' || true; } \
  | xargs -n1 dirname | sort -u \
  | sed -e 's|^\./||' -e 's|^staging/src/|vendor/|' -e 's|^|k8s.io/kubernetes/|' \
    >"${WORK}/openapi-dirs.txt"
log "$(wc -l <"${WORK}/openapi-dirs.txt") packages"
log "running openapi-gen"
"${WORK}/bin/openapi-gen" \
  --input-dirs "$(paste -sd, "${WORK}/openapi-dirs.txt")" \
  --output-base "${GOPATH}/src" \
  --output-package k8s.io/kubernetes/pkg/generated/openapi \
  --output-file-base zz_generated.openapi \
  --go-header-file hack/boilerplate/boilerplate.generatego.txt \
  --report-filename "${WORK}/api-rule-violations.list" \
  >"${WORK}/openapi-gen.log" 2>&1 || {
  tail -n 40 "${WORK}/openapi-gen.log" >&2
  die "openapi-gen failed"
}
[ -s pkg/generated/openapi/zz_generated.openapi.go ] || die "openapi-gen wrote nothing"

# ------------------------------------------------------------------ build
# gitCommit needs no stamp: the upstream tarball carries it in version/base.go.
BUILD_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
LDFLAGS="-s -w"
for vpkg in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X ${vpkg}.gitMajor=${MAJOR}"
  LDFLAGS+=" -X ${vpkg}.gitMinor=${MINOR}"
  LDFLAGS+=" -X ${vpkg}.gitVersion=v${UPSTREAM}"
  LDFLAGS+=" -X ${vpkg}.gitTreeState=clean"
  LDFLAGS+=" -X ${vpkg}.buildDate=${BUILD_DATE}"
done

log "go build ${BINARIES[*]} (several minutes)"
mkdir -p "${WORK}/out"
pkgs=()
for b in "${BINARIES[@]}"; do pkgs+=("./cmd/${b}"); done
go build -trimpath -ldflags "$LDFLAGS" -o "${WORK}/out/" "${pkgs[@]}"
for b in "${BINARIES[@]}"; do
  [ -x "${WORK}/out/${b}" ] || die "go build produced no ${b}"
  log "built ${b} ($(du -h "${WORK}/out/${b}" | cut -f1))"
done

ver_line="$("${WORK}/out/kube-apiserver" --version)"
[ "$ver_line" = "Kubernetes v${UPSTREAM}" ] || die "unexpected version from kube-apiserver: ${ver_line}"

# ----------------------------------------------------------------- cache
STAGE="${KUBE_CACHE}/.${SRC_VERSION}.tmp.$$"
rm -rf "$STAGE"
mkdir -p "$STAGE"
for b in "${BINARIES[@]}"; do
  cp "${WORK}/out/${b}" "${STAGE}/${b}"
done
cp "$dsc" "${STAGE}/"
cp "${WORK}/api-rule-violations.list" "${STAGE}/" 2>/dev/null || true
printf 'kubernetes %s (v%s), %s, built %s\n' "$SRC_VERSION" "$UPSTREAM" "$(go version)" "$BUILD_DATE" \
  >"${STAGE}/.complete"
rm -rf "$DEST"
mv "$STAGE" "$DEST"
ln -sfn "$SRC_VERSION" "${KUBE_CACHE}/current"

log "built and cached in $(($(date +%s) - START))s"
print_result "$DEST"
