#!/usr/bin/env bash
# Serves bare git repositories over ssh (OpenSSH's sshd running git-upload-pack) on 127.0.0.1,
# for the git registry tests. Installs openssh-server with apt when sshd is missing (without
# starting the system's ssh service).
#
# Usage:
#   scripts/sources/sshd-git.sh start --root DIR --state DIR --authorized-keys FILE [--port P]
#       start in the background; prints the base URL (ssh://USER@127.0.0.1:P); the PID goes to
#       STATE/sshd.pid, the port to STATE/port, the server's host key as a known_hosts line to
#       STATE/known_hosts
#   scripts/sources/sshd-git.sh stop --state DIR
#       stop what `start` started (by PID)
#   scripts/sources/sshd-git.sh serve ... [--max-seconds N]
#       start, print the base URL, then stop when standard input closes (or after N seconds,
#       default 1800): the test support runs it this way, so the server never outlives the tests
#   scripts/sources/sshd-git.sh install
#       only install openssh-server when sshd is missing
#
# sshd runs as the current user (no root needed; as root it needs /run/sshd, which is created),
# accepts only the public keys in the --authorized-keys file, and only for the current user. Every
# session runs a wrapper instead of the client's command: it allows `git-upload-pack '<path>'`
# only (read-only), maps <path> below DIR (`ssh://USER@127.0.0.1:P/fixtures.git` serves
# DIR/fixtures.git), and logs the command, one line each, in STATE/access.log (the benchmark counts
# them).
# Environment: ADDONCTL_SSHD_TIMEOUT  seconds to wait for the server (default 20)
set -euo pipefail

log() { printf '[sshd-git] %s\n' "$*" >&2; }
die() { printf '[sshd-git] error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=scripts/sources/lib.sh
. "$(dirname "$0")/lib.sh"

MODE="${1:-}"
[ -n "$MODE" ] || die "usage: $0 start|stop|serve|install --root DIR --state DIR --authorized-keys FILE [--port P]"
shift
ROOT=""
STATE=""
PORT=""
KEYS=""
MAX_SECONDS=1800
while [ "$#" -gt 0 ]; do
  case "$1" in
    --root) ROOT="$2"; shift ;;
    --state) STATE="$2"; shift ;;
    --port) PORT="$2"; shift ;;
    --authorized-keys) KEYS="$2"; shift ;;
    --max-seconds) MAX_SECONDS="$2"; shift ;;
    *) die "unknown argument: $1" ;;
  esac
  shift
done

find_sshd() { [ -x /usr/sbin/sshd ] && echo /usr/sbin/sshd || true; }

install_sshd() {
  [ -n "$(find_sshd)" ] && return 0
  log "installing openssh-server with apt"
  export DEBIAN_FRONTEND=noninteractive
  # Never start the system's ssh service while installing: a policy that denies it, for the
  # length of the install, unless the machine has one already.
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
  fi
  local ok=0
  if apt-get install -y -q --no-install-recommends openssh-server >&2; then
    ok=1
  elif apt-get update -q >&2 && apt-get install -y -q --no-install-recommends openssh-server >&2; then
    ok=1
  fi
  [ "$made_policy" = 1 ] && rm -f "$policy"
  [ "$ok" = 1 ] || die "apt-get install openssh-server failed"
  [ -n "$(find_sshd)" ] || die "/usr/sbin/sshd is missing after installing openssh-server"
}

if [ "$MODE" = install ]; then
  install_sshd
  exit 0
fi

[ -n "$STATE" ] || die "--state DIR is required"
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd -P)"
TIMEOUT="${ADDONCTL_SSHD_TIMEOUT:-20}"

stop() { stop_pid_file "$STATE/sshd.pid"; }

if [ "$MODE" = stop ]; then
  stop
  exit 0
fi
[ "$MODE" = start ] || [ "$MODE" = serve ] || die "unknown mode: $MODE"
[ -n "$ROOT" ] || die "--root DIR is required"
[ -d "$ROOT" ] || die "--root $ROOT is not a directory"
ROOT="$(cd "$ROOT" && pwd -P)"
[ -n "$KEYS" ] && [ -f "$KEYS" ] || die "--authorized-keys FILE (public keys, one a line) is required"
KEYS="$(cd "$(dirname "$KEYS")" && pwd -P)/$(basename "$KEYS")"

install_sshd
SSHD="$(find_sshd)"
UPLOAD_PACK=""
for candidate in "$(git --exec-path 2>/dev/null)/git-upload-pack" /usr/lib/git-core/git-upload-pack /usr/bin/git-upload-pack; do
  if [ -x "$candidate" ]; then UPLOAD_PACK="$candidate"; break; fi
done
[ -n "$UPLOAD_PACK" ] || die "git-upload-pack not found (is git installed?)"

USER_NAME="$(id -un)"
[ -n "$PORT" ] || PORT="$(free_port)"

stop
# A host key of the server's own, made once per state directory.
if [ ! -f "$STATE/host_ed25519" ]; then
  ssh-keygen -q -t ed25519 -N '' -C "addonctl test sshd" -f "$STATE/host_ed25519" >&2 \
    || die "ssh-keygen could not make a host key"
fi
chmod 600 "$STATE/host_ed25519"
printf '[127.0.0.1]:%s %s\n' "$PORT" "$(cut -d' ' -f1,2 "$STATE/host_ed25519.pub")" >"$STATE/known_hosts"

# The only command a session may run: git-upload-pack of a repository below ROOT.
cat >"$STATE/git-only" <<'WRAPPER'
#!/bin/sh
# $1 = repository root, $2 = access log, $3 = git-upload-pack
command="${SSH_ORIGINAL_COMMAND:-}"
printf '%s\n' "$command" >>"$2"
case "$command" in
  "git-upload-pack '"*"'") path="${command#git-upload-pack \'}" ;;
  "git upload-pack '"*"'") path="${command#git upload-pack \'}" ;;
  *) echo "only git-upload-pack is served here" >&2; exit 1 ;;
esac
path="${path%\'}"
path="${path#/}"
case "/$path/" in
  */../*|*\'*) echo "invalid repository path" >&2; exit 1 ;;
esac
[ -d "$1/$path" ] || { echo "fatal: '$path' does not appear to be a git repository" >&2; exit 128; }
GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*' exec "$3" "$1/$path"
WRAPPER
chmod +x "$STATE/git-only"

cat >"$STATE/sshd_config" <<CONF
ListenAddress 127.0.0.1
Port $PORT
HostKey $STATE/host_ed25519
PidFile $STATE/sshd.pid
AuthorizedKeysFile $KEYS
AllowUsers $USER_NAME
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PermitTTY no
PermitUserEnvironment no
AllowTcpForwarding no
AllowAgentForwarding no
AllowStreamLocalForwarding no
X11Forwarding no
PrintMotd no
MaxStartups 64:30:128
LogLevel VERBOSE
ForceCommand $STATE/git-only $ROOT $STATE/access.log $UPLOAD_PACK
CONF
if [ "$(id -u)" = 0 ]; then
  # sshd started as root separates privileges and wants its empty directory.
  mkdir -p -m 0755 /run/sshd
fi
"$SSHD" -t -f "$STATE/sshd_config" >&2 || die "sshd rejects $STATE/sshd_config"
"$SSHD" -D -e -f "$STATE/sshd_config" </dev/null >"$STATE/sshd.log" 2>&1 &
PID=$!
echo "$PID" >"$STATE/sshd.pid"
echo "$PORT" >"$STATE/port"

wait_for_port sshd "$PID" "$PORT" "$TIMEOUT" stop "$STATE/sshd.log"

printf 'ssh://%s@127.0.0.1:%s\n' "$USER_NAME" "$PORT"
if [ "$MODE" = serve ]; then
  serve_until_stdin_closes "$PID" "$STATE/sshd.pid" "$MAX_SECONDS"
fi
