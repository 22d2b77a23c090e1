#!/usr/bin/env python3
"""Side-by-side benchmark of addonctl against Helm 3, Helm 4 and kubectl on the same real API servers.

Run by scripts/bench-compare.sh, which builds the binaries and starts the API servers (with audit logs).
Every figure is measured on whole processes: wall time, CPU (user + system of the process and its
children, from wait4), peak resident memory, API requests (lines the API servers' audit logs gained,
for the admin user the tools run as), and the CPU the API servers and etcd spent meanwhile (from /proc):
divided by the machine's cores, the floor no client can go below on this machine (and, for the N × K grid, that
floor with addonctl's own CPU added, since it runs on the same cores). Runs are interleaved (addonctl, then its
peers, round after round),
so all see the same machine; each pair gives a ratio addonctl / peer, printed as min / median / max.

Part A: the largest built-in addon (`strongbox-operator`, direct engine, control plane only) against a
Helm chart holding exactly the objects addonctl applies, installed by Helm 3 (client-side three-way merge
patches) and by Helm 4 (server-side apply by default, as addonctl): render, fresh install, unchanged re-run,
removal, and removal once the custom resources of its CRDs were listed (as an operator's informers would have).
Part B: N objects on K clusters: `addonctl enable` of a generated addon against `kubectl apply
--server-side` run in parallel, one process per cluster.
"""

import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("ADDONCTL_BENCH_ROUNDS", "5"))
NS = ["10", "50", "200"]
KS = ["1", "3", "10"]
if os.environ.get("ADDONCTL_BENCH_GRID"):
    # "10x1,200x1" — a smaller grid for a quick look
    GRID = [tuple(p.split("x")) for p in os.environ["ADDONCTL_BENCH_GRID"].split(",")]
else:
    GRID = [(n, k) for n in NS for k in KS]

addonctl, helm, helm4, kubectl, env_dir = sys.argv[1:6]
env = json.load(open(os.path.join(env_dir, "env.json")))
clusters = {c["name"]: c for c in env["clusters"]}
control = clusters["control-plane"]
managed = [clusters[f"managed-{i}"] for i in range(1, 11) if f"managed-{i}" in clusters]
logs = os.path.join(env_dir, "logs")
work = tempfile.mkdtemp(prefix="bench-compare-")


def audit_lines():
    """Requests so far per cluster, from the audit logs (admin user only)."""
    counts = {}
    for name in clusters:
        path = os.path.join(logs, f"audit-{name}.log")
        n = 0
        try:
            with open(path, "rb") as f:
                for line in f:
                    if b'"username":"admin"' in line:
                        n += 1
        except FileNotFoundError:
            sys.exit(f"no audit log {path}: start the environment with ADDONCTL_K8S_AUDIT=1")
        counts[name] = n
    return counts


def servers_cpu():
    """CPU seconds (user + system) the environment's API servers and etcd have used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    pids = os.path.join(env_dir, "pids")
    for name in os.listdir(pids):
        try:
            with open(os.path.join(pids, name)) as f:
                pid = int(f.read().strip())
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


def run(cmd, check=True, quiet=True):
    """Runs a command; returns wall seconds, CPU seconds, peak RSS (MiB) and requests per cluster."""
    before = audit_lines()
    cpu_before = servers_cpu()
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, shell=isinstance(cmd, str),
            stdout=subprocess.DEVNULL if quiet else None, stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        servers = servers_cpu() - cpu_before
        stderr.seek(0)
        err = stderr.read().decode(errors="replace")
    if check and proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {cmd if isinstance(cmd, str) else shlex.join(cmd)}\n{err}")
    after = audit_lines()
    requests = {c: after[c] - before[c] for c in after if after[c] != before[c]}
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024.0,
        "requests": sum(requests.values()),
        "per_cluster": requests,
        "servers": servers,
    }


def quiet(cmd):
    subprocess.run(cmd, shell=isinstance(cmd, str), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kubectl_cmd(cluster, *args):
    return [kubectl, "--kubeconfig", cluster["kubeconfig"], *args]


def wait_gone(cluster, kind, names):
    for name in names:
        subprocess.run(kubectl_cmd(cluster, "wait", "--for=delete", f"{kind}/{name}", "--timeout=60s"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stats(values):
    return min(values), statistics.median(values), max(values)


def fmt3(values, unit="", digits=3):
    lo, mid, hi = stats(values)
    return f"{lo:.{digits}f} / {mid:.{digits}f} / {hi:.{digits}f}{unit}"


def report(title, ours, peers):
    """One row per figure: addonctl, then each peer (name, measures), then addonctl / each peer."""
    print(f"\n{title}")
    header = f"  {'figure':<10} {'addonctl (min/med/max)':<28}"
    for peer, _ in peers:
        header += f" {peer + ' (min/med/max)':<28}"
    for peer, _ in peers:
        header += f" {'ratio to ' + peer:<20}"
    print(header.rstrip())
    for key, unit, digits in (("wall", " s", 3), ("cpu", " s", 3), ("rss", " MiB", 1), ("requests", "", 0),
                              ("servers", " s", 3)):
        a = [m[key] for m in ours]
        row = f"  {key:<10} {fmt3(a, unit, digits):<28}"
        ratios = []
        for _, theirs in peers:
            b = [m[key] for m in theirs]
            row += f" {fmt3(b, unit, digits):<28}"
            r = [x / y for x, y in zip(a, b) if y]
            ratios.append(fmt3(r, "", 2) if r else "-")
        for ratio in ratios:
            row += f" {ratio:<20}"
        print(row.rstrip())
    sys.stdout.flush()


def print_split(measures, targets, who):
    """Requests to the control plane and to each managed cluster (min / median / max)."""
    control_plane = [m["per_cluster"].get("control-plane", 0) for m in measures]
    managed_each = [m["per_cluster"].get(c["name"], 0) for m in measures for c in targets]
    print(f"  {who} requests: control plane {fmt3(control_plane, '', 0)}, "
          f"each managed cluster {fmt3(managed_each, '', 0)}")


# --------------------------------------------------------------------------- part A
def part_a():
    addon = "strongbox-operator"
    system_ns = "bench-system"
    kc = control["kubeconfig"]
    base = [addonctl, "-q", "--kubeconfig", kc, "--system-namespace", system_ns, "--engine", "direct"]
    rendered = json.loads(subprocess.run(
        [addonctl, "render", addon, "-o", "json", "--system-namespace", system_ns],
        check=True, capture_output=True).stdout)
    objects = []
    for item in rendered["items"]:
        if item["kind"] == "Application":
            for component in item["spec"].get("components", []):
                objects.extend(component.get("properties", {}).get("objects", []))
    crds = [o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"]
    chart = os.path.join(work, "chart")
    os.makedirs(os.path.join(chart, "templates"))
    with open(os.path.join(chart, "Chart.yaml"), "w") as f:
        f.write(f"apiVersion: v2\nname: {addon}\nversion: 1.3.0\ndescription: the objects addonctl applies\n")
    with open(os.path.join(chart, "templates", "objects.yaml"), "w") as f:
        for o in objects:
            # JSON is YAML; `{{` would be read as a template action, so it is escaped
            f.write("---\n" + json.dumps(o).replace("{{", '{{ "{{" }}') + "\n")
    quiet(kubectl_cmd(control, "create", "namespace", system_ns))
    # Helm 3 applies with client-side three-way merge patches; Helm 4 with server-side apply (its
    # default for a new release, and `upgrade --server-side=auto` keeps the release's method), as
    # addonctl does: the fairer peer. Both store the release in the same Secrets, so one release name
    # serves both (each uninstalls before the other installs).
    peers = (("helm 3", helm), ("helm 4", helm4))
    print(f"A. `{addon}` ({len(objects)} objects) on one API server, {ROUNDS} interleaved rounds"
          f" (addonctl, helm 3, helm 4)")
    figures = {k: {"addonctl": [], **{p: [] for p, _ in peers}}
               for k in ("render", "install", "rerun", "remove", "remove_listed")}
    # What an operator's informers do in a real cluster, and nobody does on these fresh servers: list
    # the custom resources of its CRDs once. The first list of a new CRD's resources makes the API
    # server set up their storage (tens of ms); addonctl's removal lists them (it refuses to delete
    # CRDs whose resources still exist), helm's does not look.
    kinds = ",".join(crds)
    list_resources = kubectl_cmd(control, "get", kinds, "--all-namespaces", "--ignore-not-found")
    for _ in range(ROUNDS):
        figures["render"]["addonctl"].append(run([addonctl, "render", addon, "--system-namespace", system_ns]))
        for peer, binary in peers:
            figures["render"][peer].append(run([binary, "template", "bench", chart, "-n", system_ns]))
        figures["install"]["addonctl"].append(run(base + ["enable", addon, "--dependency-timeout", "0"]))
        figures["rerun"]["addonctl"].append(run(base + ["enable", addon, "--dependency-timeout", "0"]))
        figures["remove"]["addonctl"].append(run(base + ["disable", addon]))
        wait_gone(control, "crd", crds)
        for peer, binary in peers:
            helm_base = [binary, "--kubeconfig", kc, "-n", system_ns]
            figures["install"][peer].append(run(helm_base + ["install", "bench", chart]))
            figures["rerun"][peer].append(run(helm_base + ["upgrade", "bench", chart]))
            figures["remove"][peer].append(run(helm_base + ["uninstall", "bench"]))
            wait_gone(control, "crd", crds)
        quiet(base + ["enable", addon, "--dependency-timeout", "0"])
        quiet(list_resources)
        figures["remove_listed"]["addonctl"].append(run(base + ["disable", addon]))
        wait_gone(control, "crd", crds)
        for peer, binary in peers:
            helm_base = [binary, "--kubeconfig", kc, "-n", system_ns]
            quiet(helm_base + ["install", "bench", chart])
            quiet(list_resources)
            figures["remove_listed"][peer].append(run(helm_base + ["uninstall", "bench"]))
            wait_gone(control, "crd", crds)

    def report_a(title, key):
        report(title, figures[key]["addonctl"], [(p, figures[key][p]) for p, _ in peers])

    report_a("render (addonctl render vs helm template)", "render")
    report_a("fresh install (enable vs helm install)", "install")
    report_a("unchanged re-run (enable vs helm upgrade)", "rerun")
    report_a("removal (disable vs helm uninstall)", "remove")
    report_a("removal, the CRDs' resources listed once before (as an operator's informers do)", "remove_listed")


# --------------------------------------------------------------------------- part B
# The fleet addon (N objects over four kinds): the one `tests/requests.rs` counts the requests of.
FLEET_ADDON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "fleet")


def part_b():
    system_ns = "bench-fleet-system"
    kc = control["kubeconfig"]
    base = [addonctl, "-q", "--kubeconfig", kc, "--system-namespace", system_ns, "--engine", "direct"]
    addon = os.path.join(work, "fleet")
    shutil.copytree(FLEET_ADDON, addon)
    quiet(kubectl_cmd(control, "create", "namespace", system_ns))
    for cluster in managed:
        quiet(base + ["cluster", "join", cluster["name"], "--from-kubeconfig", cluster["kubeconfig"]])
    print(f"\nB. N objects × K clusters (direct engine against kubectl apply --server-side, one process per"
          f" cluster in parallel), {ROUNDS} interleaved rounds")
    round_id = 0
    for n, k in GRID:
        targets = managed[: int(k)]
        if len(targets) < int(k):
            print(f"  skipping {n}×{k}: only {len(managed)} managed clusters")
            continue
        ours, theirs = [], []
        for _ in range(ROUNDS):
            round_id += 1
            ns_ours, ns_theirs = f"fleet-a{round_id}", f"fleet-k{round_id}"
            for cluster in targets:
                quiet(kubectl_cmd(cluster, "create", "namespace", ns_ours))
                quiet(kubectl_cmd(cluster, "create", "namespace", ns_theirs))
            names = ",".join(c["name"] for c in targets)
            ours.append(run(base + ["enable", addon, f"count={n}", f"namespace={ns_ours}",
                                    "--clusters", names]))
            manifest = os.path.join(work, f"fleet-{round_id}.json")
            rendered = json.loads(subprocess.run(
                [addonctl, "render", addon, f"count={n}", f"namespace={ns_theirs}", "-o", "json"],
                check=True, capture_output=True).stdout)
            objects = [o for item in rendered["items"] if item["kind"] == "Application"
                       for c in item["spec"]["components"] for o in c["properties"]["objects"]]
            with open(manifest, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, f)
            parallel = " & ".join(
                shlex.join(kubectl_cmd(c, "apply", "--server-side", "--field-manager", "bench", "-f", manifest))
                for c in targets) + " & wait"
            theirs.append(run(["bash", "-c", f"set -e; {parallel}"]))
            quiet(base + ["disable", "fleet"])
            # kubectl's objects go too (not measured), as addonctl's did: the rounds after see the
            # same servers, and Services do not use up the managed clusters' Service IP range.
            cleanup = " & ".join(
                shlex.join(kubectl_cmd(c, "delete", "--wait=false", "-f", manifest)) for c in targets
            ) + " & wait"
            quiet(["bash", "-c", f"set -e; {cleanup}"])
        report(f"{n} objects × {k} clusters (enable vs kubectl apply --server-side)", ours, [("kubectl", theirs)])
        per_object = [m["requests"] / (int(n) * int(k)) for m in ours]
        print(f"  addonctl requests per object per cluster: {fmt3(per_object, '', 2)}")
        print_split(ours, targets, "addonctl")
        print_split(theirs, targets, "kubectl")
        cores = os.cpu_count() or 1
        floor = [m["servers"] / cores for m in ours]
        print(f"  addonctl's floor (the servers' CPU over {cores} cores): {fmt3(floor, ' s')}; "
              f"wall / floor {fmt3([m['wall'] / f for m, f in zip(ours, floor) if f], '', 2)}")
        # addonctl runs on the same cores: its own CPU is not free either.
        shared = [(m["servers"] + m["cpu"]) / cores for m in ours]
        print(f"  with addonctl's own CPU (the servers' and addonctl's over {cores} cores): {fmt3(shared, ' s')}; "
              f"wall / that {fmt3([m['wall'] / f for m, f in zip(ours, shared) if f], '', 2)}")


if __name__ == "__main__":
    parts = os.environ.get("ADDONCTL_BENCH_PARTS", "AB")
    if "A" in parts:
        part_a()
    if "B" in parts:
        part_b()
