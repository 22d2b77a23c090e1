#!/usr/bin/env bash
# Provides the real KubeVela CLI (`vela`) for the interoperability tests (tests/vela_interop.rs)
# and prints its path on stdout.
#
# vela v1.10.9 is built from its Go module (`github.com/oam-dev/kubevela`, main package
# `references/cmd/cli`) once per machine, in a small wrapper module that requires the release and
# repeats its go.mod's replace directives (a dependency's replace directives are ignored, and the
# release needs them: docker, stern, apiserver-runtime…; any replace by a local path would be
# replaced with the published module of the same release, as scripts/k8s/build.sh does) and
# starts from the release's go.sum (the checksum database does not know every module it uses).
# It is built with -trimpath and without cgo, the version stamped as KubeVela's Makefile does
# (makefiles/const.mk: version.VelaVersion and version.GitRevision), with a build cache of its
# own that is removed afterwards; the module downloads (over 1 GB) stay in the Go module cache.
# Cold, downloads included: ≈17 minutes on 2 busy cores.
#
# Usage: scripts/sources/vela.sh              # builds if needed, prints the path of vela
#        scripts/sources/vela.sh --cached     # prints the path only if built already (else fails)
#        scripts/sources/vela.sh --rebuild    # builds again even if cached
#
# Environment:
#   ADDONCTL_VELA          use this vela binary instead (printed as is)
#   ADDONCTL_TOOLS_DIR     cache directory (default ${XDG_CACHE_HOME:-~/.cache}/addonctl/tools);
#                          the binary is $ADDONCTL_TOOLS_DIR/vela-v1.10.9/vela
#   ADDONCTL_KEEP_BUILD=1  keep the temporary build directory
set -euo pipefail

VELA_MODULE="github.com/oam-dev/kubevela"
VELA_VERSION="v1.10.9"
VELA_MAIN="$VELA_MODULE/references/cmd/cli"
# The toolchain the go command fetches when the module needs a newer Go than the installed one.
GO_TOOLCHAIN_NEWER="go1.27.3"

log() { printf '[vela.sh] %s\n' "$*" >&2; }
die() { printf '[vela.sh] error: %s\n' "$*" >&2; exit 1; }

REBUILD=0
CACHED=0
case "${1:-}" in
  "") ;;
  --rebuild) REBUILD=1 ;;
  --cached) CACHED=1 ;;
  -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument: $1 (see --help)" ;;
esac

if [ -n "${ADDONCTL_VELA:-}" ]; then
  [ -x "$ADDONCTL_VELA" ] || die "ADDONCTL_VELA=$ADDONCTL_VELA is not an executable"
  printf '%s\n' "$ADDONCTL_VELA"
  exit 0
fi

TOOLS="${ADDONCTL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/addonctl/tools}"
DEST_DIR="$TOOLS/vela-$VELA_VERSION"
DEST="$DEST_DIR/vela"

# Whether $1 is a vela that runs and says it is VELA_VERSION (`vela version` also asks a cluster
# for KubeVela's version: given none, it answers at once).
runs() {
  [ -x "$1" ] && KUBECONFIG=/dev/null timeout 60 "$1" version 2>/dev/null | grep -q "^CLI Version: *$VELA_VERSION\$"
}

if [ "$REBUILD" -eq 0 ] && runs "$DEST"; then
  printf '%s\n' "$DEST"
  exit 0
fi
[ "$CACHED" -eq 0 ] || die "vela $VELA_VERSION is not built on this machine: run \`bash scripts/sources/vela.sh\` (once, several minutes)"

command -v go >/dev/null 2>&1 || die "the go command is needed to build vela $VELA_VERSION"
command -v flock >/dev/null 2>&1 || die "flock (util-linux) is needed"
mkdir -p "$DEST_DIR"
# One build at a time per cache (test.sh and a developer may both ask).
exec 8>"$DEST_DIR/.build.lock"
flock 8
if [ "$REBUILD" -eq 0 ] && runs "$DEST"; then
  printf '%s\n' "$DEST"
  exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/addonctl-vela-build.XXXXXX")"
cleanup() { if [ "${ADDONCTL_KEEP_BUILD:-0}" != 1 ]; then rm -rf "$WORK"; else log "build tree kept in $WORK"; fi; }
trap cleanup EXIT
export CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"
export GOWORK=off
# A build cache of its own, removed afterwards: the binary is what is kept.
export GOCACHE="$WORK/gocache"
export GOTMPDIR="$WORK/tmp"
mkdir -p "$GOTMPDIR"

start=$SECONDS
info="$(cd "$WORK" && go mod download -json "$VELA_MODULE@$VELA_VERSION")" \
  || die "could not download $VELA_MODULE@$VELA_VERSION (is the Go module proxy reachable?)"
gomod="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
moddir="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
commit="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{7,\}\)",\{0,1\}$/\1/p' | head -1)"
[ -n "$gomod" ] && [ -f "$gomod" ] || die "the go.mod of $VELA_MODULE@$VELA_VERSION is missing from the module cache"
[ -n "$moddir" ] && [ -f "$moddir/go.sum" ] || die "the go.sum of $VELA_MODULE@$VELA_VERSION is missing from the module cache"

need="$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod" | head -1)"
have="$(go env GOVERSION | sed 's/^go//')"
if [ -n "$need" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -1)" != "$have" ]; then
  log "$VELA_MODULE@$VELA_VERSION needs go $need (installed: $have): using $GO_TOOLCHAIN_NEWER"
  export GOTOOLCHAIN="$GO_TOOLCHAIN_NEWER"
else
  export GOTOOLCHAIN=local
fi

# The replace directives of the release's go.mod, one `old [version] => new [version]` a line, in
# or out of a replace block. One that points to a local path (./… or ../…) becomes the published
# module of the same release.
replaces() {
  awk '
    /^replace[[:space:]]*\($/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    block { sub(/\/\/.*/, ""); if ($0 ~ /=>/) print; next }
    /^replace[[:space:]]/ { sub(/^replace[[:space:]]+/, ""); sub(/\/\/.*/, ""); print }
  ' "$1" | while read -r line; do
    local old="${line%%=>*}" new="${line#*=>}"
    old="$(printf '%s' "$old" | awk '{$1=$1; print}')"
    new="$(printf '%s' "$new" | awk '{$1=$1; print}')"
    case "$new" in
      ./* | ../*) printf '\t%s => %s %s\n' "${old%% *}" "${old%% *}" "$VELA_VERSION" ;;
      *) printf '\t%s => %s\n' "$old" "$new" ;;
    esac
  done
}

dir="$WORK/wrapper"
mkdir -p "$dir"
{
  printf 'module addonctl.test/vela\n\ngo %s\n\nrequire %s %s\n\nreplace (\n' "${need:-1.23}" "$VELA_MODULE" "$VELA_VERSION"
  replaces "$gomod"
  printf ')\n'
} >"$dir/go.mod"
printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$VELA_MAIN" >"$dir/tools.go"
# The release's go.sum: its dependencies are checked against the hashes it was released with (the
# checksum database does not know every one of them, e.g. the apiserver-runtime fork it replaces).
cp "$moddir/go.sum" "$dir/go.sum"
chmod u+w "$dir/go.sum"
log "building vela $VELA_VERSION from $VELA_MAIN (several minutes on 2 cores, once per machine)"
(cd "$dir" && go mod tidy) >"$WORK/tidy.log" 2>&1 \
  || { tail -n 20 "$WORK/tidy.log" >&2; die "resolving the modules of $VELA_MODULE@$VELA_VERSION failed"; }
revision="UNKNOWN"
[ -z "$commit" ] || revision="git-${commit:0:7}"
ld="-s -w -X $VELA_MODULE/version.VelaVersion=$VELA_VERSION -X $VELA_MODULE/version.GitRevision=$revision"
(cd "$dir" && go build -trimpath -ldflags "$ld" -o "$WORK/vela" "$VELA_MAIN") >"$WORK/build.log" 2>&1 \
  || { tail -n 20 "$WORK/build.log" >&2; die "building $VELA_MAIN@$VELA_VERSION failed"; }
runs "$WORK/vela" || { KUBECONFIG=/dev/null timeout 60 "$WORK/vela" version >&2 || true; die "the built vela does not say CLI Version: $VELA_VERSION"; }
mv "$WORK/vela" "$DEST.tmp"
mv "$DEST.tmp" "$DEST"
log "vela $VELA_VERSION built in $((SECONDS - start)) s: $DEST"
printf '%s\n' "$DEST"
