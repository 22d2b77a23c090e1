#!/usr/bin/env bash
# Runs the CUE oracle over the corpus tests/cue/cases: the real Go CUE evaluator, cuelang.org/go at
# the version KubeVela 1.10 builds with (scripts/cue-oracle/go.mod), used as a library by the
# small program in scripts/cue-oracle, which evaluates every case in one process as
# `cue export --out json` does.
#
# Usage: scripts/cue-oracle.sh --check             # every golden still what CUE gives
#        scripts/cue-oracle.sh --update [case…]    # (re)write goldens after adding or editing cases
#        scripts/cue-oracle.sh --install           # only build the oracle (cached)
#        scripts/cue-oracle.sh --binary            # build (cached) and print the oracle's path
#
# The program is built once per machine with the machine's `go` (1.22 or newer), its modules
# fetched through the Go module proxy into the ordinary Go module cache, into a cache outside the
# repository keyed by the CUE version and the hash of the program's sources.
#
# Environment:
#   ADDONCTL_CUE_ORACLE_DIR   cache directory (default ${XDG_CACHE_HOME:-~/.cache}/addonctl/cue-oracle)
set -euo pipefail
cd "$(dirname "$0")/.."

SRC="scripts/cue-oracle"
CACHE="${ADDONCTL_CUE_ORACLE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/addonctl/cue-oracle}"

log() { printf '[cue-oracle.sh] %s\n' "$*" >&2; }
die() { printf '[cue-oracle.sh] error: %s\n' "$*" >&2; exit 1; }

# The version of cuelang.org/go the program requires.
cue_version() {
  awk '$1 == "cuelang.org/go" { print $2; exit } $1 == "require" && $2 == "cuelang.org/go" { print $3; exit }' \
    "$SRC/go.mod"
}

# A hash of the program's sources (go.mod, go.sum and every .go file, names and contents).
sources_hash() {
  (
    cd "$SRC"
    for f in go.mod go.sum $(ls ./*.go | LC_ALL=C sort); do
      printf '%s\n' "${f#./}"
      cat "$f"
    done
  ) | sha256sum | cut -c1-16
}

check_go() {
  command -v go >/dev/null 2>&1 || die "the Go toolchain (go 1.22 or newer) is needed to build the CUE oracle"
  local v
  v="$(go env GOVERSION 2>/dev/null || true)"
  case "$v" in
    go1.2[2-9]* | go1.[3-9][0-9]* | go[2-9]*) ;;
    *) die "go 1.22 or newer is needed to build the CUE oracle (found ${v:-an unknown version})" ;;
  esac
}

# Builds the program unless the cache holds it; sets BIN.
install() {
  local version hash dir
  version="$(cue_version)"
  [ -n "$version" ] || die "$SRC/go.mod names no version of cuelang.org/go"
  hash="$(sources_hash)"
  dir="$CACHE/$version-$hash"
  BIN="$dir/cue-oracle"
  [ -x "$BIN" ] && return 0
  check_go
  log "building the CUE oracle (cuelang.org/go $version) into $dir"
  mkdir -p "$dir"
  local started=$SECONDS tmp="$dir/cue-oracle.tmp.$$"
  (cd "$SRC" && GOWORK=off go build -trimpath -buildvcs=false -o "$tmp" .) \
    || { rm -f "$tmp"; die "go build of $SRC failed"; }
  mv -f "$tmp" "$BIN"
  log "built in $((SECONDS - started)) s"
  # Builds of older sources are of no more use.
  local old
  for old in "$CACHE"/*; do
    [ "$old" = "$dir" ] || [ ! -d "$old" ] || rm -rf "$old"
  done
}

case "${1:-}" in
  --install) install ;;
  --binary)
    install
    printf '%s\n' "$BIN"
    ;;
  --check | --update)
    install
    exec "$BIN" corpus --cases tests/cue/cases "$@"
    ;;
  *)
    printf '[cue-oracle.sh] usage: scripts/cue-oracle.sh --check | --update [case…] | --install | --binary\n' >&2
    exit 2
    ;;
esac
