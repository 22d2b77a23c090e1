#!/usr/bin/env bash
# App store benchmark on the real API servers: `addonctl serve` (release build) over a
# generated 90-addon registry, in a namespace of its own on the cluster without KubeVela
# (direct engine). Prints, each the median of repeated requests after a warm-up:
#   - GET /api/v1/addons and the catalogue page `/` (90 addons + the built-in ones);
#   - the addon page `/addons/<name>`;
#   - a plan (POST /api/v1/plans) of the largest built-in addon vs `addonctl diff` of the same;
#   - the server's RSS idle and with 100 open event streams;
#   - the delay from a change (a record's annotation patched on the API server) to its event.
# Uses the environment in $ADDONCTL_TEST_ENV (starts one, and stops it again, when there is none).
# Not run by the tests. Environment: BENCH_RUNS (default 50) requests per median.
set -euo pipefail
cd "$(dirname "$0")/.."
export ADDONCTL_TEST_ENV="${ADDONCTL_TEST_ENV:-$PWD/target/k8s-test-env}"
if [ ! -f "$ADDONCTL_TEST_ENV/env.json" ]; then
  bash scripts/k8s/build.sh >/dev/null
  bash scripts/k8s/up.sh --managed 1 --dir "$ADDONCTL_TEST_ENV"
  trap 'bash scripts/k8s/down.sh --dir "$ADDONCTL_TEST_ENV" >/dev/null 2>&1 || true' EXIT
fi
cargo build --release --locked --quiet --bin addonctl
python3 - "$PWD/target/release/addonctl" "$ADDONCTL_TEST_ENV/env.json" "$PWD/addons" <<'PY'
import http.client, json, os, select, shutil, socket, ssl, statistics, subprocess, sys
import tempfile, time, urllib.request

BIN, ENV, BUILTIN = sys.argv[1], sys.argv[2], sys.argv[3]
RUNS = int(os.environ.get("BENCH_RUNS", "50"))
env = json.load(open(ENV))
cluster = next((c for c in env["clusters"] if c["name"] == "managed-1"), env["clusters"][0])
ctx = ssl.create_default_context(cafile=env["ca_file"])
ns = f"bench-serve-{os.getpid()}"


def kube(method, path, body=None, content="application/json"):
    request = urllib.request.Request(
        cluster["server"] + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + cluster["admin_token"], "Content-Type": content})
    with urllib.request.urlopen(request, context=ctx, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


def cli(*args, check=True):
    return subprocess.run(
        [BIN, "--kubeconfig", cluster["kubeconfig"], "--system-namespace", ns,
         "--engine", "direct", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300, check=check)


def median_ms(run, n):
    for _ in range(min(5, n)):
        run()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


registry = tempfile.mkdtemp(prefix="bench-serve-registry-")
server = None
try:
    kube("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": ns}})
    for i in range(90):
        name = f"bench-addon-{i:02d}"
        os.makedirs(f"{registry}/{name}/resources")
        open(f"{registry}/{name}/metadata.yaml", "w").write(
            f"name: {name}\nversion: 1.{i}.0\ndescription: Benchmark addon number {i}\n"
            f"tags: [bench, group-{i % 5}]\n")
        open(f"{registry}/{name}/README.md", "w").write(
            f"# {name}\n\nA generated addon.\n\n- one\n- two\n\n```yaml\nkey: value\n```\n")
        open(f"{registry}/{name}/resources/config.yaml", "w").write(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n")

    server = subprocess.Popen(
        [BIN, "--kubeconfig", cluster["kubeconfig"], "--system-namespace", ns, "--engine",
         "direct", "--registry-dir", registry, "serve", "--no-browser", "--addr", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ready, _, _ = select.select([server.stdout], [], [], 60)
    if not ready:
        sys.exit("addonctl serve printed no URL within 60 s")
    url = server.stdout.readline().strip()
    base, token = url.split("/login?token=")
    host, port = base.removeprefix("http://").split(":")
    headers = {"Authorization": "Bearer " + token}
    connection = http.client.HTTPConnection(host, int(port), timeout=120)

    def call(method, path, body=None):
        extra = dict(headers)
        if body is not None:
            extra.update({"Content-Type": "application/json", "Origin": base})
        connection.request(method, path, body=None if body is None else json.dumps(body),
                           headers=extra)
        answer = connection.getresponse()
        data = answer.read()
        return answer.status, data

    status, data = call("GET", "/api/v1/addons")
    count = len(json.loads(data)["addons"])
    time.sleep(2)
    idle = rss_mb(server.pid)
    print(f"catalogue: {count} addons")
    results = []
    for label, path in [("GET /api/v1/addons", "/api/v1/addons"),
                        ("catalogue page /", "/"),
                        ("addon page /addons/bench-addon-42", "/addons/bench-addon-42"),
                        ("GET /api/v1/addons/bench-addon-42", "/api/v1/addons/bench-addon-42")]:
        status, _ = call("GET", path)
        ms = median_ms(lambda: call("GET", path), RUNS)
        results.append((label, status, ms))
        print(f"{label:40} {status}  median {ms:7.2f} ms over {RUNS}")

    largest = max((d for d in os.listdir(BUILTIN) if os.path.isdir(f"{BUILTIN}/{d}")),
                  key=lambda d: sum(os.path.getsize(os.path.join(r, f))
                                    for r, _, fs in os.walk(f"{BUILTIN}/{d}") for f in fs))
    plan_body = {"action": "enable", "addon": largest}
    status, data = call("POST", "/api/v1/plans", plan_body)
    if status != 201:
        print(f"plan of {largest}: {status} {data[:300]!r}")
    plan_ms = median_ms(lambda: call("POST", "/api/v1/plans", plan_body), 10)
    diff = cli("diff", largest, check=False)
    if diff.returncode > 1:
        print(f"addonctl diff {largest}: exit {diff.returncode}: {diff.stderr[-300:]}")
    diff_ms = median_ms(lambda: cli("diff", largest, check=False), 10)
    print(f"plan of {largest} (largest built-in)   {status}  median {plan_ms:7.2f} ms over 10")
    print(f"addonctl diff {largest}                median {diff_ms:7.2f} ms over 10")
    print(f"plan / diff ratio                        {plan_ms / diff_ms:.2f}")

    print(f"RSS idle (after the catalogue warm-up)   {idle:.1f} MB")
    streams = []
    for _ in range(100):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(f"GET /api/v1/events HTTP/1.1\r\nHost: {host}:{port}\r\n"
                  f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n".encode())
        head = s.recv(4096)
        if not head.startswith(b"HTTP/1.1 200"):
            sys.exit(f"event stream refused: {head[:200]!r}")
        streams.append(s)
    time.sleep(2)
    print(f"RSS with 100 event streams               {rss_mb(server.pid):.1f} MB")
    for s in streams:
        s.close()

    enabled = cli("enable", "uptime-beacon", check=False)
    if enabled.returncode != 0:
        sys.exit(f"addonctl enable uptime-beacon failed: {enabled.stderr[-500:]}")
    stream = socket.create_connection((host, int(port)), timeout=10)
    stream.sendall(f"GET /api/v1/events HTTP/1.1\r\nHost: {host}:{port}\r\n"
                   f"Authorization: Bearer {token}\r\n\r\n".encode())
    stream.recv(4096)
    time.sleep(1)
    delays = []
    record = f"/api/v1/namespaces/{ns}/secrets/addon-record-uptime-beacon"
    for i in range(10):
        started = time.perf_counter()
        kube("PATCH", record, {"metadata": {"annotations": {"bench.addonctl.io/touch": str(i)}}},
             "application/merge-patch+json")
        pending = b""
        while b'"addon":"uptime-beacon"' not in pending:
            left = 10 - (time.perf_counter() - started)
            if left <= 0 or not select.select([stream], [], [], left)[0]:
                sys.exit("no event within 10 s of the change")
            pending += stream.recv(65536)
        delays.append((time.perf_counter() - started) * 1000)
        time.sleep(0.3)
    stream.close()
    print(f"change → event delay                     median {statistics.median(delays):7.2f} ms, "
          f"max {max(delays):.2f} ms over 10")
finally:
    if server is not None:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    shutil.rmtree(registry, ignore_errors=True)
    try:
        kube("DELETE", f"/api/v1/namespaces/{ns}")
    except Exception as e:  # noqa: BLE001 - the namespace may be gone already
        print(f"namespace {ns} not deleted: {e}", file=sys.stderr)
PY
