#!/usr/bin/env bash
# Debian's docker-registry (distribution 2.8) on 127.0.0.1: the real OCI registry for the OCI
# reader's tests. Three registries share one storage directory, so that what the tests push to the
# anonymous one (with the real `helm push`) the others serve too:
#   - anonymous (push and pull without credentials);
#   - htpasswd basic auth (user oci-user, password in DIR/password);
#   - token auth, with scripts/sources/oci-token-server.py as its token server (GET and OAuth2 POST;
#     anonymous pulls of `public/…` only), and a second token server that answers POST only.
#
# Usage: scripts/sources/oci-registry.sh install
#        scripts/sources/oci-registry.sh start --dir DIR [--watch-pid PID]
#        scripts/sources/oci-registry.sh stop --dir DIR
#
#   install          apt-get install docker-registry and gnupg (gpg signs the Helm provenance tests'
#                    charts); pip install bcrypt and cryptography when missing
#   start            start all on free ports, wait until they answer; prints `KEY=VALUE` lines
#                    (ANONYMOUS, BASIC, TOKEN, TOKEN_POST_ONLY: host:port; USER, PASSWORD, REFRESH;
#                    TOKEN_LOG, TOKEN_POST_LOG: the token servers' request logs) and writes them
#                    to DIR/env; logs in DIR/*.log
#   --watch-pid PID  also stop everything (by PID) once process PID has exited
#   stop             stop what was started in DIR (by the PIDs in DIR/*.pid)
#
# Environment: ADDONCTL_SOURCES_TIMEOUT  seconds to wait for each server (default 60)
set -euo pipefail

log() { printf '[oci-registry] %s\n' "$*" >&2; }
die() { printf '[oci-registry] error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
# shellcheck source=scripts/sources/lib.sh
. "$(dirname "$0")/lib.sh"

PYTHON="${PYTHON:-python3}"
TIMEOUT="${ADDONCTL_SOURCES_TIMEOUT:-60}"
HERE="$(cd "$(dirname "$0")" && pwd)"

install() {
  if ! command -v docker-registry >/dev/null 2>&1; then
    log "installing docker-registry with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-registry >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-registry >/dev/null; }
  fi
  if ! command -v gpg >/dev/null 2>&1; then
    log "installing gnupg with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnupg >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnupg >/dev/null; }
  fi
  if ! "$PYTHON" -c 'import bcrypt, cryptography' >/dev/null 2>&1; then
    log "installing bcrypt and cryptography with pip"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check bcrypt cryptography >&2
  fi
}

# registry_config FILE PORT AUTH_YAML: writes a registry configuration.
registry_config() {
  cat >"$1" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DIR/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$2
  secret: addonctl-test-secret
$3
EOF
}

# start_registry NAME PORT: starts docker-registry with DIR/NAME.yml.
start_registry() {
  docker-registry serve "$DIR/$1.yml" >"$DIR/$1.log" 2>&1 </dev/null &
  local pid=$!
  printf '%s\n' "$pid" >"$DIR/$1.pid"
  wait_for_port "docker-registry ($1)" "$pid" "$2" "$TIMEOUT" stop_all "$DIR/$1.log"
  watch_pid "$WATCH" "$pid"
}

# start_token NAME PORT EXTRA...: starts a token server.
start_token() {
  local name="$1" port="$2"
  shift 2
  "$PYTHON" "$HERE/oci-token-server.py" --port "$port" --key "$DIR/token.key" --cert "$DIR/token.crt" \
    --issuer addonctl-test-issuer --user oci-user --password "$PASSWORD" --refresh "$REFRESH" \
    --log "$DIR/$name-requests.log" "$@" >"$DIR/$name.log" 2>&1 </dev/null &
  local pid=$!
  printf '%s\n' "$pid" >"$DIR/$name.pid"
  wait_for_port "token server ($name)" "$pid" "$port" "$TIMEOUT" stop_all "$DIR/$name.log"
  watch_pid "$WATCH" "$pid"
}

stop_all() {
  for file in "$DIR"/*.pid; do
    [ -f "$file" ] && stop_pid_file "$file"
  done
  return 0
}

start() {
  DIR="" WATCH=""
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --dir) DIR="$2"; shift ;;
      --watch-pid) WATCH="$2"; shift ;;
      *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
  done
  [ -n "$DIR" ] || die "--dir is required"
  install
  mkdir -p "$DIR/storage"
  DIR="$(cd "$DIR" && pwd)"
  PASSWORD="oci-pass-$RANDOM$RANDOM"
  REFRESH="oci-refresh-$RANDOM$RANDOM"
  printf '%s' "$PASSWORD" >"$DIR/password"
  "$PYTHON" -c 'import bcrypt, sys; print("oci-user:" + bcrypt.hashpw(sys.argv[1].encode(), bcrypt.gensalt(5)).decode())' \
    "$PASSWORD" >"$DIR/htpasswd"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$DIR/token.key" \
    -out "$DIR/token.crt" -days 2 -subj /CN=addonctl-test-token >/dev/null 2>&1 \
    || die "openssl could not make the token signing key"

  local anonymous basic token token_post realm realm_post
  anonymous="$(free_port)"; basic="$(free_port)"; token="$(free_port)"; token_post="$(free_port)"
  realm="$(free_port)"; realm_post="$(free_port)"
  registry_config "$DIR/anonymous.yml" "$anonymous" ""
  registry_config "$DIR/basic.yml" "$basic" "auth:
  htpasswd:
    realm: addonctl-test
    path: $DIR/htpasswd"
  for pair in "token:$token:$realm" "token-post:$token_post:$realm_post"; do
    IFS=: read -r name port realm_port <<<"$pair"
    registry_config "$DIR/$name.yml" "$port" "auth:
  token:
    realm: http://127.0.0.1:$realm_port/token
    service: addonctl-test-registry
    issuer: addonctl-test-issuer
    rootcertbundle: $DIR/token.crt"
  done
  start_registry anonymous "$anonymous"
  start_registry basic "$basic"
  start_registry token "$token"
  start_registry token-post "$token_post"
  start_token realm "$realm"
  start_token realm-post "$realm_post" --no-get
  cat >"$DIR/env" <<EOF
ANONYMOUS=127.0.0.1:$anonymous
BASIC=127.0.0.1:$basic
TOKEN=127.0.0.1:$token
TOKEN_POST_ONLY=127.0.0.1:$token_post
USER=oci-user
PASSWORD=$PASSWORD
REFRESH=$REFRESH
TOKEN_LOG=$DIR/realm-requests.log
TOKEN_POST_LOG=$DIR/realm-post-requests.log
EOF
  log "registries on 127.0.0.1:$anonymous (anonymous), :$basic (basic), :$token and :$token_post (token)"
  cat "$DIR/env"
}

stop() {
  DIR="$(parse_dir "$@")"
  [ -n "$DIR" ] || die "--dir is required"
  stop_all
}

case "${1:-}" in
  install) shift; install "$@" ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  -h | --help | "") usage ;;
  *) die "unknown command: $1 (see --help)" ;;
esac
