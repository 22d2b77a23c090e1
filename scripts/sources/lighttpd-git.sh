#!/usr/bin/env bash
# Serves bare git repositories over smart HTTP (`git http-backend` under lighttpd) on 127.0.0.1,
# for the git registry tests. Installs lighttpd with apt when it is missing.
#
# Usage:
#   scripts/sources/lighttpd-git.sh start --root DIR --state DIR [--port P]
#       start in the background; prints the base URL (http://127.0.0.1:P/git); the PID goes to
#       STATE/lighttpd.pid, the port to STATE/port
#   scripts/sources/lighttpd-git.sh stop --state DIR
#       stop what `start` started (by PID)
#   scripts/sources/lighttpd-git.sh serve --root DIR --state DIR [--port P] [--max-seconds N]
#       start, print the base URL, then stop when standard input closes (or after N seconds,
#       default 1800): the test support runs it this way, so the server never outlives the tests
#
#   --tls-cert FILE --tls-key FILE
#       serve https with this certificate and key (PEM); installs lighttpd's TLS module
#       (lighttpd-mod-openssl) with apt when it is missing
#
# Repositories are served as http(s)://127.0.0.1:P/git/<path under DIR>; every request is logged, one
# line each, in STATE/access.log (the benchmark counts them).
# Environment: ADDONCTL_LIGHTTPD_TIMEOUT  seconds to wait for the server (default 20)
set -euo pipefail

log() { printf '[lighttpd-git] %s\n' "$*" >&2; }
die() { printf '[lighttpd-git] error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=scripts/sources/lib.sh
. "$(dirname "$0")/lib.sh"

MODE="${1:-}"
[ -n "$MODE" ] || die "usage: $0 start|stop|serve --root DIR --state DIR [--port P]"
shift
ROOT=""
STATE=""
PORT=""
MAX_SECONDS=1800
TLS_CERT=""
TLS_KEY=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --tls-cert) TLS_CERT="$2"; shift ;;
    --tls-key) TLS_KEY="$2"; shift ;;
    --root) ROOT="$2"; shift ;;
    --state) STATE="$2"; shift ;;
    --port) PORT="$2"; shift ;;
    --max-seconds) MAX_SECONDS="$2"; shift ;;
    *) die "unknown argument: $1" ;;
  esac
  shift
done
[ -n "$STATE" ] || die "--state DIR is required"
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd -P)"
TIMEOUT="${ADDONCTL_LIGHTTPD_TIMEOUT:-20}"

stop() { stop_pid_file "$STATE/lighttpd.pid"; }

if [ "$MODE" = stop ]; then
  stop
  exit 0
fi
[ "$MODE" = start ] || [ "$MODE" = serve ] || die "unknown mode: $MODE"
[ -n "$ROOT" ] || die "--root DIR is required"
[ -d "$ROOT" ] || die "--root $ROOT is not a directory"
ROOT="$(cd "$ROOT" && pwd -P)"

install_package() {
  log "installing $1 with apt"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends "$1" >&2; then
    apt-get update -q >&2 || true
    apt-get install -y -q --no-install-recommends "$1" >&2 || die "apt-get install $1 failed"
  fi
}

find_lighttpd() { command -v lighttpd 2>/dev/null || { [ -x /usr/sbin/lighttpd ] && echo /usr/sbin/lighttpd; } || true; }
LIGHTTPD="$(find_lighttpd)"
if [ -z "$LIGHTTPD" ]; then
  install_package lighttpd
  LIGHTTPD="$(find_lighttpd)"
  [ -n "$LIGHTTPD" ] || die "lighttpd is not on PATH after installing it"
fi

MODULES='"mod_alias", "mod_cgi", "mod_setenv"'
SCHEME=http
TLS_CONF=""
if [ -n "$TLS_CERT" ] || [ -n "$TLS_KEY" ]; then
  [ -f "$TLS_CERT" ] && [ -f "$TLS_KEY" ] || die "--tls-cert and --tls-key must both name PEM files"
  [ -f /usr/lib/lighttpd/mod_openssl.so ] || install_package lighttpd-mod-openssl
  [ -f /usr/lib/lighttpd/mod_openssl.so ] || die "lighttpd's TLS module is missing after installing it"
  MODULES="$MODULES, \"mod_openssl\""
  SCHEME=https
  TLS_CONF="ssl.engine = \"enable\"
ssl.pemfile = \"$(cd "$(dirname "$TLS_CERT")" && pwd -P)/$(basename "$TLS_CERT")\"
ssl.privkey = \"$(cd "$(dirname "$TLS_KEY")" && pwd -P)/$(basename "$TLS_KEY")\""
fi

BACKEND=""
for candidate in "$(git --exec-path 2>/dev/null)/git-http-backend" /usr/lib/git-core/git-http-backend; do
  if [ -x "$candidate" ]; then BACKEND="$candidate"; break; fi
done
[ -n "$BACKEND" ] || die "git-http-backend not found (is git installed?)"

[ -n "$PORT" ] || PORT="$(free_port)"

stop
mkdir -p "$STATE/www"
# The backend behind a wrapper that logs each request (lighttpd buffers its own access log).
cat >"$STATE/git-http-backend" <<WRAPPER
#!/bin/sh
printf '%s %s\\n' "\$REQUEST_METHOD" "\$REQUEST_URI" >>"$STATE/access.log"
exec "$BACKEND"
WRAPPER
chmod +x "$STATE/git-http-backend"
cat >"$STATE/lighttpd.conf" <<CONF
server.modules = ( $MODULES )
server.bind = "127.0.0.1"
server.port = $PORT
server.document-root = "$STATE/www"
server.errorlog = "$STATE/error.log"
$TLS_CONF
server.stream-request-body = 0
alias.url = ( "/git" => "$STATE/git-http-backend" )
\$HTTP["url"] =~ "^/git" {
  cgi.assign = ( "" => "" )
  setenv.add-environment = (
    "GIT_PROJECT_ROOT" => "$ROOT",
    "GIT_HTTP_EXPORT_ALL" => "1",
    "GIT_CONFIG_COUNT" => "1",
    "GIT_CONFIG_KEY_0" => "safe.directory",
    "GIT_CONFIG_VALUE_0" => "*"
  )
}
CONF
"$LIGHTTPD" -tt -f "$STATE/lighttpd.conf" >&2 || die "lighttpd rejects $STATE/lighttpd.conf"
"$LIGHTTPD" -D -f "$STATE/lighttpd.conf" </dev/null >"$STATE/stdout.log" 2>&1 &
PID=$!
echo "$PID" >"$STATE/lighttpd.pid"
echo "$PORT" >"$STATE/port"

wait_for_port lighttpd "$PID" "$PORT" "$TIMEOUT" stop "$STATE/stdout.log" "$STATE/error.log"

URL="$SCHEME://127.0.0.1:$PORT/git"
printf '%s\n' "$URL"
if [ "$MODE" = serve ]; then
  serve_until_stdin_closes "$PID" "$STATE/lighttpd.pid" "$MAX_SECONDS"
fi
