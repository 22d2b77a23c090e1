#!/usr/bin/env bash
# Stop the Kubernetes test environment started by scripts/k8s/up.sh: every
# process named by DIR/pids/*.pid (kwok, schedulers, controller-managers, then the API servers,
# then etcd), waiting for each to exit; then remove the etcd data, the keys,
# tokens, kubeconfigs and env files. Logs stay in DIR/logs unless --purge.
#
# Usage: scripts/k8s/down.sh [--dir DIR] [--purge]
#
#   --dir DIR   state directory (default ${ADDONCTL_TEST_ENV:-/tmp/addonctl-k8s})
#   --purge     remove DIR entirely, logs included
#
# A PID is signalled only if that process's command line names DIR, so a
# PID reused by an unrelated process is never touched.
set -euo pipefail

log() { printf '[k8s-down] %s\n' "$*" >&2; }
die() { printf '[k8s-down] error: %s\n' "$*" >&2; exit 1; }

DIR="${ADDONCTL_TEST_ENV:-/tmp/addonctl-k8s}"
PURGE=0
TERM_GRACE="${ADDONCTL_K8S_STOP_TIMEOUT:-30}"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --dir) [ "$#" -ge 2 ] || die "--dir needs a path"; DIR="$2"; shift ;;
    --dir=*) DIR="${1#*=}" ;;
    --purge) PURGE=1 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
  shift
done

if [ ! -d "$DIR" ]; then
  log "nothing to stop: ${DIR} does not exist"
  exit 0
fi
DIR="$(cd "$DIR" && pwd -P)"
PIDS="${DIR}/pids"
START_NS="$(date +%s%N)"

# up.sh calls this script while holding the lock itself.
if [ "${ADDONCTL_K8S_LOCK_HELD:-0}" != "1" ]; then
  exec 9>"${DIR}/.lock"
  flock 9
fi

# Running (exists, not a zombie).
proc_alive() {
  local pid="$1" state
  [ -r "/proc/${pid}/stat" ] || return 1
  state="$(sed 's/^.*) //' "/proc/${pid}/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
  [ -n "$state" ] && [ "$state" != "Z" ]
}
# A process started by up.sh for DIR: running, and its command line names DIR.
ours_alive() {
  local pid="$1"
  proc_alive "$pid" || return 1
  tr '\0' '\n' <"/proc/${pid}/cmdline" 2>/dev/null | grep -qF -- "${DIR}/"
}

# stop_group NAME...: SIGTERM each, wait (SIGKILL after the grace period).
STOPPED=0
stop_group() {
  local name file pid deadline
  local -a pids=() names=()
  for name in "$@"; do
    file="${PIDS}/${name}.pid"
    [ -f "$file" ] || continue
    pid="$(tr -dc '0-9' <"$file")"
    if [ -n "$pid" ] && ours_alive "$pid"; then
      log "stopping ${name} (pid ${pid})"
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
      names+=("$name")
    elif [ -n "$pid" ] && proc_alive "$pid"; then
      log "${name}: pid ${pid} is now another program, leaving it alone"
      rm -f "$file"
    else
      log "${name} (pid ${pid:-?}) had already exited"
      rm -f "$file"
    fi
  done
  [ "${#pids[@]}" -gt 0 ] || return 0
  deadline=$(($(date +%s) + TERM_GRACE))
  local i alive
  while :; do
    alive=0
    for i in "${!pids[@]}"; do
      ours_alive "${pids[$i]}" && alive=1
    done
    [ "$alive" -eq 1 ] || break
    if [ "$(date +%s)" -ge "$deadline" ]; then
      for i in "${!pids[@]}"; do
        if ours_alive "${pids[$i]}"; then
          log "${names[$i]} (pid ${pids[$i]}) still running after ${TERM_GRACE}s, sending SIGKILL"
          kill -KILL "${pids[$i]}" 2>/dev/null || true
        fi
      done
      deadline=$(($(date +%s) + 10))
      TERM_GRACE=0
    fi
    sleep 0.1
  done
  STOPPED=$((STOPPED + ${#pids[@]}))
  for name in "${names[@]}"; do rm -f "${PIDS}/${name}.pid"; done
}

if [ -d "$PIDS" ]; then
  # kwok, schedulers and controller-managers first, then every API server at once, etcd last.
  clients=()
  for f in "${PIDS}"/kwok-*.pid "${PIDS}"/kube-scheduler-*.pid "${PIDS}"/kube-controller-manager*.pid; do
    [ -f "$f" ] || continue
    clients+=("$(basename "$f" .pid)")
  done
  if [ "${#clients[@]}" -gt 0 ]; then stop_group "${clients[@]}"; fi
  apiservers=()
  for f in "${PIDS}"/kube-apiserver-*.pid; do
    [ -f "$f" ] || continue
    name="$(basename "$f" .pid)"
    apiservers+=("$name")
  done
  if [ "${#apiservers[@]}" -gt 0 ]; then stop_group "${apiservers[@]}"; fi
  stop_group etcd
  others=()
  for f in "${PIDS}"/*.pid; do
    [ -f "$f" ] || continue
    others+=("$(basename "$f" .pid)")
  done
  if [ "${#others[@]}" -gt 0 ]; then stop_group "${others[@]}"; fi
fi

rm -rf "${DIR}/etcd-data" "$PIDS" "${DIR}/pki" "${DIR}/clusters" \
  "${DIR}/env.json" "${DIR}/env.sh" "${DIR}/env.json.tmp" "${DIR}/env.sh.tmp"
rm -f "${DIR}"/kubeconfig "${DIR}"/kubeconfig-*
if [ "$PURGE" -eq 1 ]; then
  rm -rf "$DIR"
fi

elapsed_ms=$((($(date +%s%N) - START_NS) / 1000000))
msg="stopped ${STOPPED} process(es) in $((elapsed_ms / 1000)).$(printf '%03d' $((elapsed_ms % 1000)))s; etcd data removed"
if [ "$PURGE" -eq 1 ]; then msg+="; ${DIR} removed"; fi
log "$msg"
