#!/usr/bin/env bash
# Start a local Kubernetes test environment: one etcd, a control-plane
# kube-apiserver and N managed-cluster kube-apiservers sharing that etcd
# (each under its own --etcd-prefix). Each cluster also gets, unless
# --workloads none, kube-controller-manager, kube-scheduler and kwok with one
# fake node, so Deployments, StatefulSets, DaemonSets and Jobs become ready
# through the real controllers. Everything listens on 127.0.0.1 on ports
# chosen at run time.
#
# Usage: scripts/k8s/up.sh [--managed N] [--dir DIR] [--workloads all|control-plane|none]
#                          [--kube-version X.Y.Z]
#
#   --managed N            number of managed clusters (default 0)
#   --dir DIR              state directory (default ${ADDONCTL_TEST_ENV:-/tmp/addonctl-k8s})
#   --workloads WHERE      the clusters that run controllers, a scheduler and a
#                          fake node (default all)
#   --kube-version V       Kubernetes version (default: scripts/k8s/build.sh's)
#
# Environment:
#   ADDONCTL_TEST_ENV           default for --dir
#   ADDONCTL_K8S_TIMEOUT        seconds to wait for each component (default 120)
#   ADDONCTL_K8S_CONTROLLERS    kube-controller-manager's controllers (default: those of workloads,
#                               namespaces and garbage collection)
#   KUBE_BIN_DIR                use the binaries in this directory instead of scripts/k8s/build.sh
#   ADDONCTL_K8S_AUDIT          1 = every API server writes an audit log of every request
#                               (level Metadata) to logs/audit-<cluster>.log (for benchmarks)
#
# Writes into DIR: kubeconfig-<cluster> (admin), kubeconfig-<cluster>-user
# (token of a user without any RBAC binding), kubeconfig (all contexts),
# env.json, env.sh, pids/*.pid, logs/*.log. Stop with scripts/k8s/down.sh.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"

log() { printf '[k8s-up] %s\n' "$*" >&2; }
die() { printf '[k8s-up] error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; }

MANAGED=0
DIR="${ADDONCTL_TEST_ENV:-/tmp/addonctl-k8s}"
WORKLOADS=all
KUBE_VERSION_ARG=""
TIMEOUT="${ADDONCTL_K8S_TIMEOUT:-120}"
CONTROLLERS="${ADDONCTL_K8S_CONTROLLERS:-namespace-controller,garbage-collector-controller,deployment-controller,replicaset-controller,statefulset-controller,daemonset-controller,job-controller,cronjob-controller,ttl-after-finished-controller,pod-garbage-collector-controller,clusterrole-aggregation-controller}"

while [ "$#" -gt 0 ]; do
  case "$1" in
    --managed) [ "$#" -ge 2 ] || die "--managed needs a number"; MANAGED="$2"; shift ;;
    --managed=*) MANAGED="${1#*=}" ;;
    --dir) [ "$#" -ge 2 ] || die "--dir needs a path"; DIR="$2"; shift ;;
    --dir=*) DIR="${1#*=}" ;;
    --workloads) [ "$#" -ge 2 ] || die "--workloads needs all, control-plane or none"; WORKLOADS="$2"; shift ;;
    --workloads=*) WORKLOADS="${1#*=}" ;;
    --controller-manager) ;; # accepted for older callers: every cluster runs one unless --workloads none
    --kube-version) [ "$#" -ge 2 ] || die "--kube-version needs a version"; KUBE_VERSION_ARG="$2"; shift ;;
    --kube-version=*) KUBE_VERSION_ARG="${1#*=}" ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
  shift
done
case "$MANAGED" in '' | *[!0-9]*) die "--managed must be a non-negative integer, got '${MANAGED}'" ;; esac
MANAGED=$((10#$MANAGED))
case "$WORKLOADS" in all | control-plane | none) ;; *) die "--workloads must be all, control-plane or none, got '${WORKLOADS}'" ;; esac
case "$TIMEOUT" in '' | *[!0-9]*) die "ADDONCTL_K8S_TIMEOUT must be a number of seconds" ;; esac

START_NS="$(date +%s%N)"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd -P)"
PIDS="${DIR}/pids"
LOGS="${DIR}/logs"
PKI="${DIR}/pki"

CLUSTERS=(control-plane)
for ((i = 1; i <= MANAGED; i++)); do CLUSTERS+=("managed-${i}"); done

# Serialise up/down on the same directory.
exec 9>"${DIR}/.lock"
flock 9

var_prefix() { # control-plane -> ADDONCTL_K8S_CONTROL_PLANE
  local n="${1^^}"
  printf 'ADDONCTL_K8S_%s' "${n//-/_}"
}

# Running (exists, not a zombie).
proc_alive() {
  local pid="$1" state
  [ -n "$pid" ] && [ -r "/proc/${pid}/stat" ] || return 1
  state="$(sed 's/^.*) //' "/proc/${pid}/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
  [ -n "$state" ] && [ "$state" != "Z" ]
}
# A process started by up.sh for DIR: running, and its command line names DIR
# (guards against a PID reused by an unrelated process).
ours_alive() {
  proc_alive "$1" || return 1
  tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "${DIR}/"
}

readyz() { # URL TOKEN -> 0 when the server answers "ok"
  local out
  out="$(curl -sS --noproxy '*' --max-time 3 --cacert "${PKI}/ca.crt" \
    -H "Authorization: Bearer $2" "$1/readyz" 2>/dev/null)" || return 1
  [ "$out" = "ok" ]
}

# ----------------------------------------------------- already running?
existing_env_healthy() {
  [ -f "${DIR}/env.sh" ] && [ -f "${DIR}/env.json" ] || return 1
  (
    # shellcheck disable=SC1091
    . "${DIR}/env.sh"
    for f in "${PIDS}"/*.pid; do
      [ -f "$f" ] || exit 1
      pid="$(cat "$f")"
      ours_alive "$pid" || exit 1
    done
    curl -fsS --noproxy '*' --max-time 3 "${ADDONCTL_K8S_ETCD_ENDPOINT}/health" >/dev/null 2>&1 || exit 1
    for c in ${ADDONCTL_K8S_CLUSTERS}; do
      p="$(var_prefix "$c")"
      server="${p}_SERVER"
      token="${p}_ADMIN_TOKEN"
      readyz "${!server}" "${!token}" || exit 1
    done
  )
}

existing_shape() {
  (
    # shellcheck disable=SC1091
    . "${DIR}/env.sh"
    printf '%s %s %s' "${ADDONCTL_K8S_MANAGED_COUNT}" "${ADDONCTL_K8S_WORKLOADS:-none}" "${ADDONCTL_K8S_VERSION#v}"
  )
}

if existing_env_healthy; then
  read -r have_managed have_workloads have_version <<<"$(existing_shape)"
  if [ "${have_managed} ${have_workloads}" = "${MANAGED} ${WORKLOADS}" ] \
    && { [ -z "$KUBE_VERSION_ARG" ] || [ "$have_version" = "${KUBE_VERSION_ARG#v}" ]; }; then
    log "environment in ${DIR} (Kubernetes v${have_version}) is already up and healthy"
    log "use: . ${DIR}/env.sh   or   ${DIR}/env.json"
    exit 0
  fi
  die "environment in ${DIR} is up with ${have_managed} managed cluster(s), workloads on ${have_workloads}, Kubernetes v${have_version}; asked for ${MANAGED}, ${WORKLOADS}${KUBE_VERSION_ARG:+, v${KUBE_VERSION_ARG#v}}: run scripts/k8s/down.sh --dir ${DIR} first"
fi
if compgen -G "${PIDS}/*.pid" >/dev/null; then
  log "stale environment in ${DIR}, stopping it first"
  ADDONCTL_K8S_LOCK_HELD=1 bash "${SCRIPT_DIR}/down.sh" --dir "$DIR"
fi

# --------------------------------------------------------------- binaries
if [ -n "${KUBE_BIN_DIR:-}" ]; then
  BIN_DIR="$KUBE_BIN_DIR"
elif [ -n "$KUBE_VERSION_ARG" ]; then
  BIN_DIR="$(bash "${SCRIPT_DIR}/build.sh" --kube-version "$KUBE_VERSION_ARG")"
else
  BIN_DIR="$(bash "${SCRIPT_DIR}/build.sh")"
fi
APISERVER="${BIN_DIR}/kube-apiserver"
CONTROLLER_MANAGER="${BIN_DIR}/kube-controller-manager"
SCHEDULER="${BIN_DIR}/kube-scheduler"
KWOK="${BIN_DIR}/kwok"
KWOK_STAGES="${BIN_DIR}/kwok-stages.yaml"
ETCD="${BIN_DIR}/etcd"
for b in "$APISERVER" "$ETCD"; do
  [ -x "$b" ] || die "${b} not found (run scripts/k8s/build.sh)"
done
if [ "$WORKLOADS" != none ]; then
  for b in "$CONTROLLER_MANAGER" "$SCHEDULER" "$KWOK"; do
    [ -x "$b" ] || die "${b} not found (run scripts/k8s/build.sh)"
  done
  [ -s "$KWOK_STAGES" ] || die "${KWOK_STAGES} not found (run scripts/k8s/build.sh)"
fi
for tool in openssl curl base64 setsid flock; do
  command -v "$tool" >/dev/null || die "${tool} not found"
done
KUBE_VERSION="$("$APISERVER" --version | awk '{print $2}')"

# ------------------------------------------------------ on failure: clean up
SUCCESS=0
on_exit() {
  if [ "$SUCCESS" -ne 1 ]; then
    log "start-up failed; stopping what was started (logs stay in ${LOGS})"
    ADDONCTL_K8S_LOCK_HELD=1 bash "${SCRIPT_DIR}/down.sh" --dir "$DIR" >&2 || true
  fi
}
trap on_exit EXIT

rm -rf "$PIDS" "$PKI" "${DIR}/clusters" "${DIR}/etcd-data"
rm -f "${LOGS}"/*.log
mkdir -p "$PIDS" "$LOGS" "$PKI" "${DIR}/clusters"
chmod 0700 "$PKI" "${DIR}/clusters"

# ------------------------------------------------------------------ ports
declare -A TAKEN=()
port_busy() { # any TCP socket bound to this local port?
  local hex
  hex="$(printf ':%04X' "$1")"
  awk -v p="$hex" 'FNR > 1 && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
free_port() { # sets FREE_PORT: below the usual ephemeral range, unused right now
  local p tries=0
  while :; do
    p=$((20000 + RANDOM % 12000))
    tries=$((tries + 1))
    [ "$tries" -lt 500 ] || die "no free port found"
    [ -z "${TAKEN[$p]:-}" ] || continue
    port_busy "$p" && continue
    TAKEN[$p]=1
    FREE_PORT="$p"
    return 0
  done
}

# -------------------------------------------------------------------- PKI
log "generating a CA, a serving certificate (IP:127.0.0.1) and a service-account key"
cat >"${PKI}/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = addonctl-test
[v3_ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
[v3_server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
EOF
(
  cd "$PKI"
  umask 077
  openssl req -x509 -new -config openssl.cnf -extensions v3_ca -newkey rsa:2048 -nodes \
    -keyout ca.key -out ca.crt -days 3650 -subj "/CN=addonctl-test-ca" 2>/dev/null
  openssl req -new -config openssl.cnf -newkey rsa:2048 -nodes \
    -keyout server.key -out server.csr -subj "/CN=127.0.0.1" 2>/dev/null
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
    -days 3650 -extfile openssl.cnf -extensions v3_server -out server.crt 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  chmod 0644 ca.crt server.crt sa.pub
)
CA_DATA="$(base64 -w0 "${PKI}/ca.crt")"

declare -A ADMIN_TOKEN=() USER_TOKEN=() PORT=() PREFIX=()
for c in "${CLUSTERS[@]}"; do
  ADMIN_TOKEN[$c]="$(openssl rand -hex 24)"
  USER_TOKEN[$c]="$(openssl rand -hex 24)"
  PREFIX[$c]="/registry/${c}"
  mkdir -p "${DIR}/clusters/${c}"
  # token,user,uid,"groups"
  {
    printf '%s,admin,admin,"system:masters"\n' "${ADMIN_TOKEN[$c]}"
    printf '%s,test-user,test-user\n' "${USER_TOKEN[$c]}"
  } >"${DIR}/clusters/${c}/tokens.csv"
  chmod 0600 "${DIR}/clusters/${c}/tokens.csv"
done

# --------------------------------------------------------- process helpers
# Detached from this shell (own session) so that the servers outlive it;
# the PID file holds the server's own PID. fd 9 (the lock) is not inherited.
start_bg() { # NAME LOGFILE CMD...
  local name="$1" logfile="$2"
  shift 2
  setsid "$@" >"$logfile" 2>&1 </dev/null 9>&- &
  printf '%s\n' "$!" >"${PIDS}/${name}.pid"
}

pid_of() { cat "${PIDS}/$1.pid"; }

fail_with_log() { # NAME LOGFILE MESSAGE
  log "$3"
  log "last lines of $2:"
  tail -n 25 "$2" >&2 || true
  exit 1
}

# wait_until NAME LOGFILE CHECK...: 0 ready, 2 died of a port clash
wait_until() {
  local name="$1" logfile="$2" deadline pid
  shift 2
  deadline=$(($(date +%s) + TIMEOUT))
  pid="$(pid_of "$name")"
  while :; do
    if "$@"; then return 0; fi
    if ! proc_alive "$pid"; then
      if grep -q 'address already in use' "$logfile" 2>/dev/null; then return 2; fi
      fail_with_log "$name" "$logfile" "${name} exited during start-up"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || fail_with_log "$name" "$logfile" "${name} not ready after ${TIMEOUT}s"
    sleep 0.2
  done
}

stop_one() { # NAME: used only to retry after a port clash
  local pid
  pid="$(pid_of "$1")"
  if proc_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "${PIDS}/$1.pid"
}

# ------------------------------------------------------------------- etcd
etcd_health() { curl -fsS --noproxy '*' --max-time 2 "http://127.0.0.1:${ETCD_PORT}/health" 2>/dev/null | grep -q '"health":"true"'; }
start_etcd() {
  free_port
  ETCD_PORT="$FREE_PORT"
  free_port
  ETCD_PEER_PORT="$FREE_PORT"
  rm -rf "${DIR}/etcd-data"
  start_bg etcd "${LOGS}/etcd.log" "$ETCD" \
    --name=addonctl-test \
    --data-dir="${DIR}/etcd-data" \
    --listen-client-urls="http://127.0.0.1:${ETCD_PORT}" \
    --advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
    --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster="addonctl-test=http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster-state=new \
    --initial-cluster-token=addonctl-test \
    --logger=zap --log-outputs=stderr
}

log "starting etcd"
for attempt in 1 2 3; do
  start_etcd
  rc=0
  wait_until etcd "${LOGS}/etcd.log" etcd_health || rc=$?
  [ "$rc" -eq 2 ] || break
  log "etcd: port clash, retrying (${attempt})"
  stop_one etcd
done
[ "$rc" -eq 0 ] || die "etcd could not start"
ETCD_ENDPOINT="http://127.0.0.1:${ETCD_PORT}"
log "etcd ready at ${ETCD_ENDPOINT}"

# ------------------------------------------------------------ apiservers
AUDIT_ARGS=()
if [ "${ADDONCTL_K8S_AUDIT:-0}" = 1 ]; then
  printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived", "ResponseStarted"]\nrules:\n- level: Metadata\n' \
    >"${DIR}/audit-policy.yaml"
fi
start_apiserver() { # CLUSTER
  local c="$1"
  if [ "${ADDONCTL_K8S_AUDIT:-0}" = 1 ]; then
    AUDIT_ARGS=(--audit-policy-file="${DIR}/audit-policy.yaml" --audit-log-path="${LOGS}/audit-${c}.log"
      --audit-log-mode=blocking --audit-log-maxsize=0)
  fi
  free_port
  PORT[$c]="$FREE_PORT"
  mkdir -p "${DIR}/clusters/${c}/cert-dir"
  start_bg "kube-apiserver-${c}" "${LOGS}/kube-apiserver-${c}.log" "$APISERVER" \
    --etcd-servers="$ETCD_ENDPOINT" \
    --etcd-prefix="${PREFIX[$c]}" \
    --secure-port="${PORT[$c]}" \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --endpoint-reconciler-type=none \
    --cert-dir="${DIR}/clusters/${c}/cert-dir" \
    --tls-cert-file="${PKI}/server.crt" \
    --tls-private-key-file="${PKI}/server.key" \
    --client-ca-file="${PKI}/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="${PKI}/sa.pub" \
    --service-account-signing-key-file="${PKI}/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --authorization-mode=RBAC \
    --token-auth-file="${DIR}/clusters/${c}/tokens.csv" \
    --allow-privileged=true \
    --disable-admission-plugins=ServiceAccount \
    --profiling=false \
    "${AUDIT_ARGS[@]}"
}
apiserver_ready() { readyz "https://127.0.0.1:${PORT[$1]}" "${ADMIN_TOKEN[$1]}"; }

log "starting ${#CLUSTERS[@]} kube-apiserver(s) ${KUBE_VERSION}: ${CLUSTERS[*]}"
for c in "${CLUSTERS[@]}"; do start_apiserver "$c"; done
for c in "${CLUSTERS[@]}"; do
  for attempt in 1 2 3; do
    rc=0
    wait_until "kube-apiserver-${c}" "${LOGS}/kube-apiserver-${c}.log" apiserver_ready "$c" || rc=$?
    [ "$rc" -eq 2 ] || break
    log "kube-apiserver ${c}: port clash, retrying (${attempt})"
    stop_one "kube-apiserver-${c}"
    start_apiserver "$c"
  done
  [ "$rc" -eq 0 ] || die "kube-apiserver ${c} could not start"
  log "kube-apiserver ${c} ready at https://127.0.0.1:${PORT[$c]} (etcd prefix ${PREFIX[$c]})"
done

# ------------------------------------------------------------ kubeconfigs
kc_cluster() { # CLUSTER
  printf -- '- name: %s\n  cluster:\n    server: https://127.0.0.1:%s\n    certificate-authority-data: %s\n' \
    "$1" "${PORT[$1]}" "$CA_DATA"
}
kc_context() { # CONTEXT CLUSTER USER
  printf -- '- name: %s\n  context:\n    cluster: %s\n    user: %s\n' "$1" "$2" "$3"
}
kc_user() { # USER TOKEN
  printf -- '- name: %s\n  user:\n    token: %s\n' "$1" "$2"
}
kc_write() { # FILE CURRENT-CONTEXT CLUSTERS CONTEXTS USERS
  local tmp
  tmp="$(mktemp "$1.XXXXXX")"
  printf 'apiVersion: v1\nkind: Config\npreferences: {}\ncurrent-context: %s\nclusters:\n%scontexts:\n%susers:\n%s' \
    "$2" "$3" "$4" "$5" >"$tmp"
  chmod 0600 "$tmp"
  mv "$tmp" "$1"
}

all_clusters="" all_contexts="" all_users=""
for c in "${CLUSTERS[@]}"; do
  cl="$(kc_cluster "$c")"$'\n'
  admin_ctx="$(kc_context "$c" "$c" "${c}-admin")"$'\n'
  admin_usr="$(kc_user "${c}-admin" "${ADMIN_TOKEN[$c]}")"$'\n'
  user_ctx="$(kc_context "${c}-user" "$c" "${c}-test-user")"$'\n'
  user_usr="$(kc_user "${c}-test-user" "${USER_TOKEN[$c]}")"$'\n'
  kc_write "${DIR}/kubeconfig-${c}" "$c" "$cl" "$admin_ctx" "$admin_usr"
  kc_write "${DIR}/kubeconfig-${c}-user" "${c}-user" "$cl" "$user_ctx" "$user_usr"
  all_clusters+="$cl"
  all_contexts+="${admin_ctx}${user_ctx}"
  all_users+="${admin_usr}${user_usr}"
done
kc_write "${DIR}/kubeconfig" control-plane "$all_clusters" "$all_contexts" "$all_users"

# ------------------------------- controllers, scheduler and a fake node per cluster
# The clusters that run workloads: kube-controller-manager (the controllers of workloads,
# namespace deletion and garbage collection), kube-scheduler, and kwok, which keeps one Node
# (`kwok-node`) Ready and plays the kubelet for the pods bound to it: they become Running and
# Ready (Job pods Succeeded) as soon as they are scheduled. A pod no node fits stays Pending, so a
# workload that must never become ready asks for a node selector no node has.
WORKLOAD_CLUSTERS=()
case "$WORKLOADS" in
  all) WORKLOAD_CLUSTERS=("${CLUSTERS[@]}") ;;
  control-plane) WORKLOAD_CLUSTERS=(control-plane) ;;
esac
declare -A CM_PORT=() SCHED_PORT=() KWOK_PORT=()

# Creates the fake node on CLUSTER (kwok makes it Ready and keeps its Lease).
create_node() {
  local c="$1" code
  code="$(curl -sS --noproxy '*' --max-time 10 --cacert "${PKI}/ca.crt" -o "${LOGS}/node-${c}.json" -w '%{http_code}' \
    -H "Authorization: Bearer ${ADMIN_TOKEN[$c]}" -H 'Content-Type: application/json' \
    -X POST "https://127.0.0.1:${PORT[$c]}/api/v1/nodes" --data-binary @- <<'EOF'
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "kwok-node",
   "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
   "labels": {"kubernetes.io/hostname": "kwok-node", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
     "kubernetes.io/role": "agent", "node-role.kubernetes.io/agent": "", "type": "kwok"}},
 "spec": {},
 "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "1000"},
   "capacity": {"cpu": "64", "memory": "256Gi", "pods": "1000"},
   "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "fake", "kubeProxyVersion": "fake"}}}
EOF
)" || return 1
  [ "$code" = 201 ] || [ "$code" = 409 ] || { log "creating the node on ${c}: HTTP ${code}"; cat "${LOGS}/node-${c}.json" >&2; return 1; }
  # Admission gives a new node the not-ready taint; kube-controller-manager's node lifecycle
  # controller (not run here: kwok's node never fails) would lift it once kwok reports it Ready.
  code="$(curl -sS --noproxy '*' --max-time 10 --cacert "${PKI}/ca.crt" -o "${LOGS}/node-${c}.json" -w '%{http_code}' \
    -H "Authorization: Bearer ${ADMIN_TOKEN[$c]}" -H 'Content-Type: application/merge-patch+json' \
    -X PATCH "https://127.0.0.1:${PORT[$c]}/api/v1/nodes/kwok-node" --data-binary '{"spec": {"taints": null}}')" || return 1
  [ "$code" = 200 ] || { log "lifting the not-ready taint of the node on ${c}: HTTP ${code}"; cat "${LOGS}/node-${c}.json" >&2; return 1; }
}
node_ready() { # CLUSTER
  curl -sS --noproxy '*' --max-time 3 --cacert "${PKI}/ca.crt" -H "Authorization: Bearer ${ADMIN_TOKEN[$1]}" \
    "https://127.0.0.1:${PORT[$1]}/api/v1/nodes/kwok-node" 2>/dev/null \
    | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}
https_healthy() { # PORT
  [ "$(curl -sS --noproxy '*' --max-time 2 -k "https://127.0.0.1:$1/healthz" 2>/dev/null)" = "ok" ]
}
http_healthy() { # PORT
  [ "$(curl -sS --noproxy '*' --max-time 2 "http://127.0.0.1:$1/healthz" 2>/dev/null)" = "ok" ]
}
# start_client NAME BINARY PORT_ARRAY CLUSTER ARGS...: kube-controller-manager or kube-scheduler for
# CLUSTER, serving /healthz on a free port recorded in PORT_ARRAY[CLUSTER].
start_client() {
  local name="$1" binary="$2" c="$4" kc="${DIR}/kubeconfig-$4"
  local -n ports="$3"
  shift 4
  free_port
  ports[$c]="$FREE_PORT"
  start_bg "${name}-${c}" "${LOGS}/${name}-${c}.log" "$binary" \
    --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" \
    --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 \
    --secure-port="${ports[$c]}" \
    --tls-cert-file="${PKI}/server.crt" \
    --tls-private-key-file="${PKI}/server.key" \
    --leader-elect=false \
    --kube-api-qps=100 \
    --kube-api-burst=200 \
    --profiling=false \
    "$@"
}
start_cm() { # CLUSTER
  start_client kube-controller-manager "$CONTROLLER_MANAGER" CM_PORT "$1" \
    --controllers="$CONTROLLERS" \
    --root-ca-file="${PKI}/ca.crt" \
    --service-account-private-key-file="${PKI}/sa.key"
}
start_scheduler() { # CLUSTER
  start_client kube-scheduler "$SCHEDULER" SCHED_PORT "$1"
}
start_kwok() { # CLUSTER
  local c="$1"
  free_port
  KWOK_PORT[$c]="$FREE_PORT"
  start_bg "kwok-${c}" "${LOGS}/kwok-${c}.log" "$KWOK" \
    --kubeconfig="${DIR}/kubeconfig-${c}" \
    --config="$KWOK_STAGES" \
    --manage-all-nodes=true \
    --node-lease-duration-seconds=40 \
    --server-address="127.0.0.1:${KWOK_PORT[$c]}" \
    --cidr=10.244.0.1/16 \
    --node-ip=127.0.0.1
}
if [ "${#WORKLOAD_CLUSTERS[@]}" -gt 0 ]; then
  log "starting kube-controller-manager, kube-scheduler and kwok for: ${WORKLOAD_CLUSTERS[*]}"
  for c in "${WORKLOAD_CLUSTERS[@]}"; do
    create_node "$c" || die "could not create the fake node on ${c}"
    start_cm "$c"
    start_scheduler "$c"
    start_kwok "$c"
  done
  for c in "${WORKLOAD_CLUSTERS[@]}"; do
    wait_until "kube-controller-manager-${c}" "${LOGS}/kube-controller-manager-${c}.log" https_healthy "${CM_PORT[$c]}" \
      || die "kube-controller-manager ${c} could not start (port clash)"
    wait_until "kube-scheduler-${c}" "${LOGS}/kube-scheduler-${c}.log" https_healthy "${SCHED_PORT[$c]}" \
      || die "kube-scheduler ${c} could not start (port clash)"
    wait_until "kwok-${c}" "${LOGS}/kwok-${c}.log" http_healthy "${KWOK_PORT[$c]}" || die "kwok ${c} could not start (port clash)"
    wait_until "kwok-${c}" "${LOGS}/kwok-${c}.log" node_ready "$c" || die "the fake node of ${c} never became Ready"
  done
  log "controllers, scheduler and kwok ready; every workload cluster has a Ready node"
fi

# ------------------------------------------------------- env.json, env.sh
json_str() {
  local s="$1"
  s="${s//\\/\\\\}"
  s="${s//\"/\\\"}"
  s="${s//$'\t'/\\t}"
  s="${s//$'\n'/\\n}"
  printf '"%s"' "$s"
}

{
  printf '{\n'
  printf '  "dir": %s,\n' "$(json_str "$DIR")"
  printf '  "kubernetes_version": %s,\n' "$(json_str "$KUBE_VERSION")"
  printf '  "ca_file": %s,\n' "$(json_str "${PKI}/ca.crt")"
  printf '  "kubeconfig": %s,\n' "$(json_str "${DIR}/kubeconfig")"
  printf '  "etcd": {"endpoint": %s, "pid_file": %s},\n' \
    "$(json_str "$ETCD_ENDPOINT")" "$(json_str "${PIDS}/etcd.pid")"
  printf '  "workloads": %s,\n' "$(json_str "$WORKLOADS")"
  printf '  "controllers": %s,\n' "$(json_str "$CONTROLLERS")"
  printf '  "clusters": [\n'
  n=0
  for c in "${CLUSTERS[@]}"; do
    n=$((n + 1))
    if [ "$c" = control-plane ]; then role=control-plane; else role=managed; fi
    printf '    {\n'
    printf '      "name": %s,\n' "$(json_str "$c")"
    printf '      "role": %s,\n' "$(json_str "$role")"
    printf '      "server": %s,\n' "$(json_str "https://127.0.0.1:${PORT[$c]}")"
    printf '      "ca_file": %s,\n' "$(json_str "${PKI}/ca.crt")"
    printf '      "admin_token": %s,\n' "$(json_str "${ADMIN_TOKEN[$c]}")"
    printf '      "user_token": %s,\n' "$(json_str "${USER_TOKEN[$c]}")"
    printf '      "user_name": "test-user",\n'
    printf '      "kubeconfig": %s,\n' "$(json_str "${DIR}/kubeconfig-${c}")"
    printf '      "user_kubeconfig": %s,\n' "$(json_str "${DIR}/kubeconfig-${c}-user")"
    printf '      "etcd_prefix": %s,\n' "$(json_str "${PREFIX[$c]}")"
    if [ -n "${KWOK_PORT[$c]:-}" ]; then
      printf '      "workloads": true,\n'
      printf '      "node": "kwok-node",\n'
    else
      printf '      "workloads": false,\n'
    fi
    printf '      "pid_file": %s\n' "$(json_str "${PIDS}/kube-apiserver-${c}.pid")"
    if [ "$n" -lt "${#CLUSTERS[@]}" ]; then printf '    },\n'; else printf '    }\n'; fi
  done
  printf '  ]\n'
  printf '}\n'
} >"${DIR}/env.json.tmp"
chmod 0600 "${DIR}/env.json.tmp"

{
  printf '# Kubernetes test environment started by scripts/k8s/up.sh\n'
  printf 'export %s=%q\n' \
    ADDONCTL_TEST_ENV "$DIR" \
    ADDONCTL_K8S_VERSION "$KUBE_VERSION" \
    ADDONCTL_K8S_CA_FILE "${PKI}/ca.crt" \
    ADDONCTL_K8S_KUBECONFIG "${DIR}/kubeconfig" \
    ADDONCTL_K8S_ETCD_ENDPOINT "$ETCD_ENDPOINT" \
    ADDONCTL_K8S_CLUSTERS "${CLUSTERS[*]}" \
    ADDONCTL_K8S_MANAGED_COUNT "$MANAGED" \
    ADDONCTL_K8S_WORKLOADS "$WORKLOADS"
  for c in "${CLUSTERS[@]}"; do
    p="$(var_prefix "$c")"
    printf 'export %s=%q\n' \
      "${p}_SERVER" "https://127.0.0.1:${PORT[$c]}" \
      "${p}_CA_FILE" "${PKI}/ca.crt" \
      "${p}_ADMIN_TOKEN" "${ADMIN_TOKEN[$c]}" \
      "${p}_USER_TOKEN" "${USER_TOKEN[$c]}" \
      "${p}_KUBECONFIG" "${DIR}/kubeconfig-${c}" \
      "${p}_USER_KUBECONFIG" "${DIR}/kubeconfig-${c}-user" \
      "${p}_ETCD_PREFIX" "${PREFIX[$c]}"
  done
} >"${DIR}/env.sh.tmp"
chmod 0600 "${DIR}/env.sh.tmp"
mv "${DIR}/env.json.tmp" "${DIR}/env.json"
mv "${DIR}/env.sh.tmp" "${DIR}/env.sh"

SUCCESS=1
elapsed_ms=$((($(date +%s%N) - START_NS) / 1000000))
log "up in $((elapsed_ms / 1000)).$(printf '%03d' $((elapsed_ms % 1000)))s: ${DIR}/env.json, ${DIR}/env.sh"
log "try: kubectl --kubeconfig ${DIR}/kubeconfig-control-plane get ns"
