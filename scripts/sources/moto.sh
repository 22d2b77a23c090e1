#!/usr/bin/env bash
# moto's S3 server (PyPI `moto[server]`) on 127.0.0.1, the stand-in for an S3 / OSS bucket that
# answers anonymous requests (it checks no signature).
#
# Usage: scripts/sources/moto.sh install
#        scripts/sources/moto.sh start --dir DIR [--watch-pid PID]
#        scripts/sources/moto.sh stop --dir DIR
#
#   install          pip install "moto[server]" boto3 unless moto_server is already there
#   start            install if needed, start on a free port, wait until it answers; prints the
#                    URL and writes DIR/url and DIR/pid (logs in DIR/moto.log)
#   --watch-pid PID  also stop the server (by its PID) once process PID has exited
#   stop             stop the server started in DIR (by the PID in DIR/pid)
#
# Environment: ADDONCTL_SOURCES_TIMEOUT  seconds to wait for the server (default 60)
set -euo pipefail

log() { printf '[moto] %s\n' "$*" >&2; }
die() { printf '[moto] error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
# shellcheck source=scripts/sources/lib.sh
. "$(dirname "$0")/lib.sh"

PYTHON="${PYTHON:-python3}"
TIMEOUT="${ADDONCTL_SOURCES_TIMEOUT:-60}"

moto_bin() {
  if command -v moto_server >/dev/null 2>&1; then
    command -v moto_server
  else
    local bin
    bin="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/moto_server"
    [ -x "$bin" ] && printf '%s\n' "$bin"
  fi
}

install() {
  if [ -n "$(moto_bin || true)" ] && "$PYTHON" -c 'import moto.server, boto3' >/dev/null 2>&1; then
    return 0
  fi
  log "installing moto[server] and boto3 with pip"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check "moto[server]" boto3 >&2
  [ -n "$(moto_bin || true)" ] || die "moto_server is not on PATH after installing"
}

start() {
  local dir="" watch=""
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --dir) dir="$2"; shift ;;
      --watch-pid) watch="$2"; shift ;;
      *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
  done
  [ -n "$dir" ] || die "--dir is required"
  install
  mkdir -p "$dir"
  local port pid url bin
  bin="$(moto_bin)"
  port="$(free_port)"
  url="http://127.0.0.1:${port}"
  "$bin" -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 </dev/null &
  pid=$!
  printf '%s\n' "$pid" >"$dir/pid"
  wait_until moto_server "$pid" "$dir/moto.log" "$TIMEOUT" \
    "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/moto-api/", timeout=2)' "$url"
  watch_pid "$watch" "$pid"
  printf '%s\n' "$url" >"$dir/url"
  log "listening on $url (pid $pid)"
  printf '%s\n' "$url"
}

stop() {
  stop_dir "$(parse_dir "$@")" url
}

case "${1:-}" in
  install) shift; install "$@" ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  -h | --help | "") usage ;;
  *) die "unknown command: $1 (see --help)" ;;
esac
