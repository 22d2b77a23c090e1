#!/usr/bin/env bash
# Writes or checks the goldens of the CUE fixture addons (tests/fixtures/cue-addons/goldens) with
# the real Go CUE evaluator (the CUE oracle of scripts/cue-oracle.sh, built and cached there),
# the files built as `vela` builds addons (see scripts/cue-oracle/addons.go).
#
# Usage: scripts/cue-addon-goldens.sh --check | --update
set -euo pipefail
cd "$(dirname "$0")/.."

die() { printf '[cue-addon-goldens.sh] error: %s\n' "$*" >&2; exit 1; }

case "${1:-}" in
  --check | --update)
    BIN="$(bash scripts/cue-oracle.sh --binary)" || die "the CUE oracle could not be built"
    exec "$BIN" addons --root tests/fixtures/cue-addons "$1"
    ;;
  *) die "usage: scripts/cue-addon-goldens.sh --check | --update" ;;
esac
