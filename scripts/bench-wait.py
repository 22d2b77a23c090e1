#!/usr/bin/env python3
"""How soon addonctl's waits see what they wait for (see scripts/bench-wait.sh).

usage: bench-wait.py KUBECTL ENV_DIR ADDONCTL...

Part 1, `wait --for enabled`: per delay D and round, a workload addon (a Deployment and a
ConfigMap) is enabled with the direct engine, `addonctl wait` starts, and D seconds later the
Deployment's status is written ready with kubectl; the figure is the time from kubectl's return
to the wait's exit.
Part 2, `disable --wait`: the addon is enabled with the KubeVela engine (KubeVela's CRDs, no
controller), a finalizer is set on its Application, `disable --wait` starts, and D seconds later
the finalizer is removed; the figure is the time from kubectl's return to the command's exit.
Part 3, `rollout run`: a one-stage rollout (every cluster, no soak) of the same workload with
the direct engine; D seconds after its Deployment appears, its status is written ready; the
figure is the time from kubectl's return to the run's exit (its gate passed).
Every server is the environment's (127.0.0.1); every process is bounded by a timeout.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

KUBECTL, ENV_DIR, *BINARIES = sys.argv[1:]
ROUNDS = int(os.environ.get("ADDONCTL_BENCH_ROUNDS", "5"))
DELAYS = [0.3, 1.5, 4.0]
KUBECONFIG = os.path.join(ENV_DIR, "kubeconfig-control-plane")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TEMPLATE = r'''let ns = context.namespace;
let addon = context.metadata.name;
let objects = [
    #{ apiVersion: "apps/v1", kind: "Deployment", metadata: #{ name: addon, namespace: ns },
       spec: #{ replicas: 1, selector: #{ matchLabels: #{ app: addon } },
                template: #{ metadata: #{ labels: #{ app: addon } },
                             spec: #{ containers: [#{ name: "main", image: "registry.example/app:1" }] } } } },
    #{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${addon}-settings`, namespace: ns },
       data: #{ key: "value" } },
];
#{ output: application(#{ components: [k8s_objects(addon, objects)] }) }
'''


def kubectl(*args, stdin=None):
    subprocess.run([KUBECTL, "--kubeconfig", KUBECONFIG, *args], input=stdin, text=True,
                   check=True, capture_output=True, timeout=60)


def addonctl(binary, namespace, registry, engine, *args, background=False):
    argv = [binary, "--kubeconfig", KUBECONFIG, "--system-namespace", namespace,
            "--registry-dir", registry, "--engine", engine, "-q", *args]
    if background:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {done.stderr}")


def finished(process, limit=60):
    try:
        process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        process.kill()
        sys.exit("a wait did not end within 60 s")
    end = time.monotonic()
    if process.returncode != 0:
        sys.exit(f"a wait failed: {process.stderr.read()}")
    return end


def make_ready(namespace, deployment):
    """Writes the Deployment's status ready, as its controller would once its pod runs."""
    kubectl("-n", namespace, "patch", "deployment", deployment, "--subresource=status",
            "--type=merge", "-p", json.dumps({"status": {
                "observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                "readyReplicas": 1, "availableReplicas": 1}}))


def seen_after_ready(binary, namespace, registry, delay, process, addon):
    """After `delay`, makes `addon`'s Deployment ready; returns how long `process` took to exit
    after that, and disables the addon."""
    time.sleep(delay)
    make_ready(namespace, addon)
    ready = time.monotonic()
    seen = finished(process)
    addonctl(binary, namespace, registry, "direct", "disable", addon)
    return seen - ready


def rollout_gate(binary, namespace, registry, delay):
    stages = os.path.join(registry, "stages.json")
    running = addonctl(binary, namespace, registry, "direct", "rollout", "run", "bench-rollout",
                       "--stages", stages, background=True)
    deadline = time.monotonic() + 60
    while subprocess.run([KUBECTL, "--kubeconfig", KUBECONFIG, "-n", namespace, "get",
                          "deployment", "bench-rollout"], capture_output=True, timeout=60).returncode:
        if time.monotonic() > deadline:
            running.kill()
            sys.exit("the rollout's Deployment did not appear within 60 s")
        time.sleep(0.05)
    return seen_after_ready(binary, namespace, registry, delay, running, "bench-rollout")


def wait_enabled(binary, namespace, registry, delay):
    addonctl(binary, namespace, registry, "direct", "enable", "bench")
    waiting = addonctl(binary, namespace, registry, "direct", "wait", "bench", "--for", "enabled",
                       "--timeout", "60s", background=True)
    return seen_after_ready(binary, namespace, registry, delay, waiting, "bench")


def disable_wait(binary, namespace, registry, delay):
    addonctl(binary, namespace, registry, "vela", "enable", "bench")
    kubectl("-n", namespace, "patch", "application", "addon-bench", "--type=merge", "-p",
            json.dumps({"metadata": {"finalizers": ["app.oam.dev/resource-tracker-finalizer"]}}))
    waiting = addonctl(binary, namespace, registry, "vela", "disable", "bench", "--wait",
                       "--timeout", "60", background=True)
    time.sleep(delay)
    kubectl("-n", namespace, "patch", "application", "addon-bench", "--type=merge", "-p",
            json.dumps({"metadata": {"finalizers": None}}))
    gone = time.monotonic()
    return finished(waiting) - gone


def write_addon(registry, name, description, parameter, template):
    """An addon of one parameter and `template` in the registry directory."""
    addon = os.path.join(registry, name)
    os.makedirs(addon)
    files = {"metadata.yaml": f"name: {name}\nversion: 1.0.0\ndescription: {description}\n",
             "parameter.rhai": f"#{{\n    {parameter},\n}}\n", "template.rhai": template}
    for file, text in files.items():
        with open(os.path.join(addon, file), "w") as f:
            f.write(text)


def main():
    kubectl("apply", "--server-side", "-f", os.path.join(ROOT, "tests/fixtures/crds/kubevela.yaml"))
    kubectl("wait", "--for=condition=Established", "crd/applications.core.oam.dev", "--timeout=60s")
    with tempfile.TemporaryDirectory() as registry:
        write_addon(registry, "bench", "A workload to wait for", "replicas: pint(1)", TEMPLATE)
        # The same workload, deployed where a rollout's `clusters` argument says.
        write_addon(registry, "bench-rollout", "A workload to roll out",
                    "clusters: list(string()).optional()",
                    TEMPLATE.replace("components: [k8s_objects(addon, objects)]",
                                     "components: [k8s_objects(addon, objects)], "
                                     'policies: [topology("where", parameter.clusters)]'))
        with open(os.path.join(registry, "stages.json"), "w") as f:
            json.dump({"stages": [{"name": "all", "clusterSelector": {}, "soakSeconds": 0}],
                       "progressDeadlineSeconds": 60}, f)
        parts = [("wait --for enabled, after the Deployment is ready", wait_enabled),
                 ("disable --wait, after the Application's finalizer is removed", disable_wait),
                 ("rollout run (one stage, no soak), after the Deployment is ready", rollout_gate)]
        chosen = os.environ.get("ADDONCTL_BENCH_WAIT_PARTS", "123")
        for p, (title, part) in enumerate(parts):
            if str(p + 1) not in chosen:
                continue
            print(f"\n{title} (seconds; min / median / max of {ROUNDS} rounds)")
            for delay in DELAYS:
                figures = {binary: [] for binary in BINARIES}
                for round_ in range(ROUNDS):
                    # Interleaved: each round runs every binary once, on the same server.
                    for i, binary in enumerate(BINARIES):
                        namespace = f"bench-wait-{os.getpid()}-{p}-{i}-{round_}-{int(delay * 10)}"
                        kubectl("create", "namespace", namespace)
                        figures[binary].append(part(binary, namespace, registry, delay))
                        kubectl("delete", "namespace", namespace, "--wait=false")
                for binary, values in figures.items():
                    print(f"  delay {delay:>4.1f} s  {binary}: {min(values):.3f} / "
                          f"{statistics.median(values):.3f} / {max(values):.3f}")


if __name__ == "__main__":
    main()
