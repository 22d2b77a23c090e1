# Shared by the start/stop scripts of the registry stand-ins (moto.sh, s3s-fs.sh, lighttpd-git.sh,
# sshd-git.sh): free ports, waiting for a server, stopping it by PID. Source it after defining
# `log` and `die`.

# A free TCP port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_until NAME PID LOG TIMEOUT COMMAND...: runs COMMAND until it succeeds; fails (stopping
# PID) when the server exits or TIMEOUT seconds pass.
wait_until() {
  local name="$1" pid="$2" log_file="$3" timeout="$4"
  shift 4
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || die "$name exited; see $log_file"
    [ "$SECONDS" -lt "$deadline" ] || { kill "$pid" 2>/dev/null || true; die "$name did not answer within ${timeout}s"; }
    sleep 0.1
  done
}

# Whether something listens on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_for_port NAME PID PORT TIMEOUT STOP LOG...: waits until 127.0.0.1:PORT answers; fails
# (showing LOG... first) when PID exits, and (running the command STOP first) when TIMEOUT seconds
# pass.
wait_for_port() {
  local name="$1" pid="$2" port="$3" timeout="$4" stop_command="$5"
  shift 5
  for _ in $(seq 1 $((timeout * 10))); do
    kill -0 "$pid" 2>/dev/null || { cat "$@" >&2 2>/dev/null || true; die "$name exited"; }
    port_open "$port" && return 0
    sleep 0.1
  done
  "$stop_command"
  die "$name did not listen on 127.0.0.1:$port within ${timeout}s"
}

# stop_pid PID: stops process PID (TERM, then KILL after 5 s).
stop_pid() {
  local pid="$1"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

# stop_pid_file FILE: stops the process whose PID is in FILE, if it runs, and removes FILE.
stop_pid_file() {
  local pid_file="$1"
  [ -f "$pid_file" ] || return 0
  local pid
  pid="$(cat "$pid_file")"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    stop_pid "$pid"
  fi
  rm -f "$pid_file"
}

# serve_until_stdin_closes PID PID_FILE MAX_SECONDS: waits until standard input closes (or
# MAX_SECONDS pass), then stops PID and removes PID_FILE; so does any exit or signal before.
# By the PID held, not the PID file: the caller may have removed the file's directory already.
serve_until_stdin_closes() {
  SERVED_PID="$1"
  SERVED_PID_FILE="$2"
  trap 'stop_pid "$SERVED_PID"; rm -f "$SERVED_PID_FILE" 2>/dev/null || true' EXIT INT TERM
  while IFS= read -r -t "$3" _; do :; done || true
}

# watch_pid WATCHED PID: stops PID once process WATCHED has exited (holds none of our streams).
watch_pid() {
  local watched="$1" pid="$2"
  [ -n "$watched" ] || return 0
  (
    while kill -0 "$watched" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 1; done
    kill "$pid" 2>/dev/null || true
  ) >/dev/null 2>&1 </dev/null &
}

# stop_dir DIR FILE...: stops the server whose PID is in DIR/pid (TERM, then KILL after 5 s) and
# removes DIR/pid and DIR/FILE... .
stop_dir() {
  local dir="$1"
  shift
  [ -n "$dir" ] || die "--dir is required"
  [ -f "$dir/pid" ] || return 0
  local pid
  pid="$(cat "$dir/pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
  for file in "$@"; do rm -f "$dir/$file"; done
}

# parse_dir ARGS...: the value of --dir among ARGS (for the stop commands).
parse_dir() {
  local dir=""
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --dir) dir="$2"; shift ;;
      *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
  done
  printf '%s\n' "$dir"
}
