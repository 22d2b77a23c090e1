#!/usr/bin/env bash
# s3s-fs (crates.io `s3s-fs`, pinned) on 127.0.0.1: an S3 server that checks SigV4 signatures and
# keeps objects as plain files under DATA/<bucket>/<key>. The stand-in for a private bucket.
#
# Usage: scripts/sources/s3s-fs.sh install
#        scripts/sources/s3s-fs.sh start --dir DIR --access-key KEY --secret-key SECRET [--watch-pid PID]
#        scripts/sources/s3s-fs.sh stop --dir DIR
#
#   install          build s3s-fs once into the cache (about 80 s) unless it is there
#   start            install if needed, start on a free port serving DIR/data, wait until it
#                    answers; prints the URL and writes DIR/url, DIR/port and DIR/pid (log in
#                    DIR/s3s-fs.log). Virtual-host style works for `<bucket>.localhost:PORT`.
#   --watch-pid PID  also stop the server (by its PID) once process PID has exited
#   stop             stop the server started in DIR (by the PID in DIR/pid)
#
# Environment:
#   ADDONCTL_CACHE            cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/addonctl)
#   ADDONCTL_SOURCES_TIMEOUT  seconds to wait for the server (default 60)
set -euo pipefail

VERSION=0.14.1
log() { printf '[s3s-fs] %s\n' "$*" >&2; }
die() { printf '[s3s-fs] error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
# shellcheck source=scripts/sources/lib.sh
. "$(dirname "$0")/lib.sh"

CACHE="${ADDONCTL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/addonctl}"
ROOT="${CACHE}/s3s-fs-${VERSION}"
BIN="${ROOT}/bin/s3s-fs"
TIMEOUT="${ADDONCTL_SOURCES_TIMEOUT:-60}"

install() {
  [ -x "$BIN" ] && return 0
  log "building s3s-fs ${VERSION} into ${ROOT} (cached for later runs)"
  mkdir -p "$ROOT"
  # A lock, so that concurrent first runs build once.
  exec 9>"${ROOT}.lock"
  flock 9
  if [ ! -x "$BIN" ]; then
    cargo install --quiet --locked "s3s-fs@${VERSION}" --features binary --root "$ROOT" >&2
  fi
  flock -u 9
  [ -x "$BIN" ] || die "s3s-fs was not built"
}

start() {
  local dir="" key="" secret="" watch=""
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --dir) dir="$2"; shift ;;
      --access-key) key="$2"; shift ;;
      --secret-key) secret="$2"; shift ;;
      --watch-pid) watch="$2"; shift ;;
      *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
  done
  if [ -z "$dir" ] || [ -z "$key" ] || [ -z "$secret" ]; then
    die "--dir, --access-key and --secret-key are required"
  fi
  install
  mkdir -p "$dir/data"
  local port pid url
  port="$(free_port)"
  url="http://127.0.0.1:${port}"
  "$BIN" --host 127.0.0.1 --port "$port" --access-key "$key" --secret-key "$secret" \
    --domain "localhost:${port}" "$dir/data" >"$dir/s3s-fs.log" 2>&1 </dev/null &
  pid=$!
  printf '%s\n' "$pid" >"$dir/pid"
  wait_until s3s-fs "$pid" "$dir/s3s-fs.log" "$TIMEOUT" port_open "$port"
  watch_pid "$watch" "$pid"
  printf '%s\n' "$url" >"$dir/url"
  printf '%s\n' "$port" >"$dir/port"
  log "listening on $url (pid $pid)"
  printf '%s\n' "$url"
}

stop() {
  stop_dir "$(parse_dir "$@")" url port
}

case "${1:-}" in
  install) shift; install "$@" ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  -h | --help | "") usage ;;
  *) die "unknown command: $1 (see --help)" ;;
esac
