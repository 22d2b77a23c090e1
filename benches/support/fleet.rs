//! The `fleet` part of the controller benchmark: 1,000 simulated clusters (`support/fake_api.rs`,
//! a child process adding a fixed latency to every answer) and one `Addon` selecting them all.
//! What is measured is the controller's reconcile path through its public engine
//! (`addonctl::controller::{engine, targets}`), called as `converge` calls it:
//!
//! - targets: the cluster Secrets (listed once before the passes, standing in for the
//!   reflector cache) → known clusters → `targets::resolve` of the `Addon`'s `clusterSelector` → `targets::digest` and
//!   `targets::parameters`;
//! - pass "first apply": `engine::apply` (plan → apply to every cluster → record),
//!   `engine::record_revision`, then `engine::drift` (cold cache) and `engine::health` together;
//! - pass "unchanged": what a reconcile of an unchanged, healthy `Addon` does at each drift
//!   interval: targets and digest, then `engine::drift` with the warm cache;
//! - pass "re-plan": the registry poll's pass over unchanged inputs: the first pass again.
//!
//! Not measured: kube-runtime's watches and work queue, the `Addon`'s status write and the
//! finalizer (one request each per reconcile, independent of the number of clusters).
//! Memory: this process's resident set before the passes and its peak (`VmHWM`), and the bytes
//! allocated (counted by the benchmark's allocator) at the start of each pass and after the
//! last: what the passes keep. CPU: this process's user + system time per pass; the fake
//! server's CPU is shown beside it (not in it): on a machine of few cores the two share them.
//! The fake server speaks TLS with HTTP/2 (one connection per cluster, as kube-apiserver), or
//! plain HTTP/1.1 with `ADDONCTL_BENCH_FLEET_PLAIN=1`.

use std::time::{Duration, Instant};

use addonctl::context::{Context, EngineChoice, Settings};
use addonctl::controller::crd::AddonSpec;
use addonctl::controller::engine::{self, Desired, DriftMemo};
use addonctl::controller::targets;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt as _;

use super::fake_api::{CHILD_ARGUMENT, FLEET_LABEL, TOKEN};
use super::{write_addon, ADDON};

/// This process's figures at one moment.
#[derive(Debug, Clone, Copy)]
struct Usage {
    /// User + system CPU seconds.
    cpu: f64,
    /// Resident set, KiB.
    rss: u64,
    /// Peak resident set, KiB.
    peak: u64,
    /// Bytes allocated and not yet freed (the benchmark's counting allocator).
    heap: u64,
}

/// User + system CPU seconds of process `pid` (`self` for this one).
fn cpu_of(pid: &str, ticks_per_second: f64) -> f64 {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields 14 and 15 of stat(5), counted from the state (field 3).
    (ticks(11) + ticks(12)) / ticks_per_second
}

fn usage(ticks_per_second: f64) -> Usage {
    let status = fs_err::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |field: &str| {
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Usage {
        cpu: cpu_of("self", ticks_per_second),
        rss: kib("VmRSS:"),
        peak: kib("VmHWM:"),
        heap: super::ALLOCATOR.allocated() as u64,
    }
}

fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(100.0)
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Requests the fake server counted so far: (control plane, managed) by verb.
async fn stats(address: &str) -> Value {
    let text = super::http_get(address, "/_fake/stats").await;
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn delta(after: &Value, before: &Value, side: &str) -> Vec<(String, u64)> {
    let Some(map) = after[side].as_object() else {
        return Vec::new();
    };
    map.iter()
        .map(|(verb, n)| {
            let was = before[side][verb].as_u64().unwrap_or(0);
            (verb.clone(), n.as_u64().unwrap_or(0) - was)
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn show(counts: &[(String, u64)]) -> String {
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    let parts: Vec<String> = counts.iter().map(|(v, n)| format!("{v} {n}")).collect();
    format!("{total} ({})", parts.join(", "))
}

/// The cluster Secrets, listed once (the controller's reflector cache holds them).
async fn cluster_secrets(ctx: &Context) -> Vec<kube::api::DynamicObject> {
    ctx.cluster
        .list(
            &addonctl::model::wire::secret_gvk(),
            Some(&ctx.namespace),
            addonctl::cluster::set::LABEL_CREDENTIAL_TYPE,
        )
        .await
        .unwrap()
}

/// Known clusters → targets → parameters, as `converge` resolves them from its caches.
fn resolve(secrets: &[kube::api::DynamicObject], spec: &AddonSpec) -> (Desired, String, usize) {
    let joined = secrets
        .iter()
        .filter_map(|s| engine::known_cluster(&serde_json::to_value(s).ok()?))
        .collect();
    let known = targets::known_clusters(joined);
    let resolved = targets::resolve(spec, &known).unwrap();
    let digest = targets::digest(spec, &resolved, &known, &[]);
    let parameters = targets::parameters(spec, &resolved, &known, &[]).unwrap();
    let count = resolved.clusters.as_ref().map_or(0, Vec::len);
    let desired = Desired {
        name: ADDON.to_owned(),
        registry: None,
        version: None,
        args: parameters.base,
        overrides: parameters.overrides,
        hold: Vec::new(),
        trust: engine::Trust::default(),
    };
    (desired, digest, count)
}

struct Pass {
    name: &'static str,
    wall: Duration,
    steps: Vec<(&'static str, Duration)>,
    cpu: f64,
    /// The fake server's CPU seconds in the pass (it shares the machine's cores).
    server_cpu: f64,
    peak: u64,
    /// Bytes allocated and not freed at the start of the pass (what the passes before kept).
    heap: u64,
    control_plane: Vec<(String, u64)>,
    managed: Vec<(String, u64)>,
    note: String,
}

/// The fake API server (a child process) and what a client needs to reach it.
struct Fake {
    child: tokio::process::Child,
    address: String,
    kubeconfig: std::path::PathBuf,
    registry: std::path::PathBuf,
    /// Holds the kubeconfig and the registry.
    _dir: tempfile::TempDir,
}

impl Fake {
    async fn start(clusters: u64, latency: u64, namespace: &str) -> Fake {
        let plain = setting("ADDONCTL_BENCH_FLEET_PLAIN", 0) == 1;
        let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
            .args([CHILD_ARGUMENT, "--clusters", &clusters.to_string()])
            .args(plain.then_some("--plain"))
            .args([
                "--latency-ms",
                &latency.to_string(),
                "--namespace",
                namespace,
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the fake API server starts within 60 s")
            .unwrap()
            .unwrap_or_default();
        let ca = line.strip_prefix("ca ").map(str::to_owned);
        if ca.is_some() {
            line = lines.next_line().await.unwrap().unwrap_or_default();
        }
        let address = line
            .strip_prefix("listening ")
            .expect("the fake API server says where it listens")
            .to_owned();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let server = match &ca {
            Some(ca) => format!("https://{address}\n    certificate-authority-data: {ca}"),
            None => format!("http://{address}"),
        };
        fs_err::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {server}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: {TOKEN}\n"
            ),
        )
        .unwrap();
        let registry = dir.path().join("registry");
        write_addon(&registry);
        Fake {
            child,
            address,
            kubeconfig,
            registry,
            _dir: dir,
        }
    }

    async fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        let _ = self.child.kill().await;
    }
}

/// Runs the part; prints its table.
pub async fn run() {
    let clusters = setting("ADDONCTL_BENCH_FLEET_CLUSTERS", 1000);
    let latency = setting("ADDONCTL_BENCH_FLEET_LATENCY_MS", 5);
    let namespace = "bench-fleet";
    let fake = Fake::start(clusters, latency, namespace).await;
    let server_pid = fake.child.id().map_or_else(String::new, |p| p.to_string());
    let (address, kubeconfig, registry) = (
        fake.address.clone(),
        fake.kubeconfig.clone(),
        fake.registry.clone(),
    );
    let settings = Settings {
        engine: EngineChoice::Direct,
        registry_dirs: vec![registry],
        ..Settings::new(namespace)
    };
    // The request timeout (also every socket's read timeout) of the control plane and, through
    // it, of every simulated cluster; 0 = the library's default.
    let timeout = setting("ADDONCTL_BENCH_FLEET_TIMEOUT_S", 0);
    let control_plane = addonctl::cluster::Cluster::connect(&addonctl::cluster::ConnectOptions {
        kubeconfig: Some(kubeconfig.clone()),
        timeout: (timeout > 0).then(|| Duration::from_secs(timeout)),
        ..addonctl::cluster::ConnectOptions::default()
    })
    .await
    .unwrap();
    let ctx = Context::with_cluster(&settings, control_plane).unwrap();
    let spec: AddonSpec = serde_json::from_value(json!({
        "clusterSelector": {"matchLabels": {FLEET_LABEL.0: FLEET_LABEL.1}},
        "drift": {"policy": "correct"},
    }))
    .unwrap();
    let drift_spec = engine::drift_spec(spec.drift.as_ref());
    let secrets = cluster_secrets(&ctx).await;
    let tps = ticks_per_second();
    let before = usage(tps);
    let mut memo = DriftMemo::default();
    let mut passes = Vec::new();
    for name in ["first apply", "unchanged", "unchanged", "re-plan"] {
        let at = usage(tps);
        let server_at = cpu_of(&server_pid, tps);
        let requests = stats(&address).await;
        let started = Instant::now();
        let mut steps = Vec::new();
        let (desired, _digest, count) = resolve(&secrets, &spec);
        steps.push(("targets", started.elapsed()));
        let mut note = format!(
            "load average {} at the start; {count} target clusters",
            super::env::load_average()
        );
        if name != "unchanged" {
            let step = Instant::now();
            let applied = engine::apply(&ctx, &desired).await.unwrap();
            steps.push(("plan + apply + record", step.elapsed()));
            let failed = applied
                .clusters
                .iter()
                .filter(|c| c.outcome == "failed")
                .count();
            let changed = applied
                .clusters
                .iter()
                .filter(|c| c.outcome == "applied")
                .count();
            note.push_str(&format!(
                "; apply: {} clusters, {changed} changed, {failed} failed",
                applied.clusters.len()
            ));
        }
        let step = Instant::now();
        let revision = engine::record_revision(&ctx, ADDON).await.unwrap();
        let drift = engine::drift(
            &ctx,
            ADDON,
            revision.as_ref(),
            &drift_spec,
            &mut memo,
            std::collections::BTreeSet::new(),
            // As the controller's records cache answers with one addon: no other record.
            Some(&|| Some(addonctl::state::record::OtherRecords::default())),
        );
        // After an apply, `converge` reads the health while it checks drift.
        let applied = name != "unchanged";
        let (report, health) = tokio::join!(drift, async {
            if applied {
                Some(engine::health(&ctx, ADDON).await.unwrap())
            } else {
                None
            }
        });
        let report = report.unwrap();
        steps.push((
            if applied {
                "drift check + health"
            } else {
                "drift check"
            },
            step.elapsed(),
        ));
        note.push_str(&format!(
            "; drift: {} objects, {} drifted, {} full reads, {} cluster errors",
            report.objects,
            report.drifts.len(),
            report.full_reads,
            report.errors.len()
        ));
        if let Some(first) = report.errors.first() {
            note.push_str(&format!(" (first: `{}`: {})", first.cluster, first.error));
        }
        if let Some(health) = health {
            let healthy = health
                .clusters
                .values()
                .filter(|(s, _)| s == "healthy")
                .count();
            note.push_str(&format!("; health: {healthy} healthy"));
        }
        let wall = started.elapsed();
        let after = usage(tps);
        let requests_after = stats(&address).await;
        passes.push(Pass {
            name,
            wall,
            steps,
            cpu: after.cpu - at.cpu,
            server_cpu: cpu_of(&server_pid, tps) - server_at,
            peak: after.peak,
            heap: at.heap,
            control_plane: delta(&requests_after, &requests, "controlPlane"),
            managed: delta(&requests_after, &requests, "managed"),
            note,
        });
    }
    println!(
        "request timeout (and socket read timeout) of every cluster: {} s",
        ctx.cluster.request_timeout().as_secs()
    );
    // What the passes keep: allocated once their results are gone.
    let kept = usage(tps).heap;
    report(clusters, latency, before, kept, &passes);
    // Everything a controller keeps is still held here: time for a heap snapshot (valgrind's
    // `vgdb detailed_snapshot` under massif).
    let hold = setting("ADDONCTL_BENCH_FLEET_HOLD_S", 0);
    if hold > 0 {
        println!("holding for {hold} s (pid {})", std::process::id());
        tokio::time::sleep(Duration::from_secs(hold)).await;
    }
    drop(memo);
    fake.stop().await;
}

/// The `fleet-cli` part: `addonctl enable` of the benchmark addon to every simulated cluster
/// (`--clusters` naming them all, the direct engine), run as a command three times (a first
/// enable, then two unchanged re-enables), its stderr piped (the summary line, not a line per
/// cluster). Wall, CPU and peak memory of the command from `/usr/bin/time`; requests from the
/// fake server's counters.
pub async fn cli() {
    let clusters = setting("ADDONCTL_BENCH_FLEET_CLUSTERS", 1000);
    let latency = setting("ADDONCTL_BENCH_FLEET_LATENCY_MS", 5);
    let namespace = "bench-fleet";
    let binary = std::env::var_os("ADDONCTL_BENCH_BIN").map_or_else(
        || {
            let exe = std::env::current_exe().unwrap();
            exe.parent().unwrap().parent().unwrap().join("addonctl")
        },
        std::path::PathBuf::from,
    );
    assert!(
        binary.exists(),
        "no addonctl binary at {} (build it, or set ADDONCTL_BENCH_BIN)",
        binary.display()
    );
    let fake = Fake::start(clusters, latency, namespace).await;
    let settings = Settings {
        engine: EngineChoice::Direct,
        registry_dirs: vec![fake.registry.clone()],
        ..Settings::new(namespace)
    };
    let control_plane = addonctl::cluster::Cluster::connect(&addonctl::cluster::ConnectOptions {
        kubeconfig: Some(fake.kubeconfig.clone()),
        ..addonctl::cluster::ConnectOptions::default()
    })
    .await
    .unwrap();
    let ctx = Context::with_cluster(&settings, control_plane).unwrap();
    let names: Vec<String> = cluster_secrets(&ctx)
        .await
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    let out = tempfile::tempdir().unwrap();
    println!(
        "\n## `addonctl enable` to {} simulated clusters ({latency} ms added to every answer), stderr piped; {}",
        names.len(),
        binary.display()
    );
    println!("| run | exit | wall s | CPU s | CPU ms per cluster | peak RSS MiB | KiB per cluster | control-plane requests | managed-cluster requests (per cluster) | load average at the start |\n|---|---|---|---|---|---|---|---|---|---|");
    let mut summaries = Vec::new();
    for run in ["first enable", "unchanged re-enable", "unchanged re-enable"] {
        let load = super::env::load_average();
        let requests = stats(&fake.address).await;
        let times = out.path().join("time");
        let stderr = out.path().join("stderr");
        let started = Instant::now();
        let status = tokio::process::Command::new("/usr/bin/time")
            .arg("-f")
            .arg("%e %U %S %M")
            .arg("-o")
            .arg(&times)
            .arg(&binary)
            .arg("--kubeconfig")
            .arg(&fake.kubeconfig)
            .arg("--registry-dir")
            .arg(&fake.registry)
            .args(["--engine", "direct", "--system-namespace", namespace])
            .args(["enable", super::ADDON, "--clusters", &names.join(",")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::from(
                fs_err::File::create(&stderr).unwrap().into_parts().0,
            ))
            .status()
            .await
            .unwrap();
        let wall = started.elapsed().as_secs_f64();
        let after = stats(&fake.address).await;
        let measured = fs_err::read_to_string(&times).unwrap_or_default();
        let fields: Vec<f64> = measured
            .lines()
            .last()
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        let (cpu, rss_kib) = match fields.as_slice() {
            [_, user, system, rss] => (user + system, *rss),
            _ => (f64::NAN, f64::NAN),
        };
        let n = names.len().max(1) as f64;
        let managed = delta(&after, &requests, "managed");
        let managed_total: u64 = managed.iter().map(|(_, k)| k).sum();
        println!(
            "| {run} | {} | {wall:.2} | {cpu:.2} | {:.2} | {:.1} | {:.1} | {} | {} ({:.1}) | {load} |",
            status.code().unwrap_or(-1),
            cpu * 1e3 / n,
            rss_kib / 1024.0,
            rss_kib / n,
            show(&delta(&after, &requests, "controlPlane")),
            show(&managed),
            managed_total as f64 / n,
        );
        let text = fs_err::read_to_string(&stderr).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        summaries.push(format!(
            "{run}: stderr {} lines, the last: {}",
            text.lines().count(),
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ));
    }
    for summary in summaries {
        println!("{summary}");
    }
    fake.stop().await;
}

fn report(clusters: u64, latency: u64, before: Usage, kept: u64, passes: &[Pass]) {
    let n = clusters.max(1) as f64;
    println!(
        "\n## {clusters} simulated clusters (fake API server in a child process, {latency} ms added to every answer), one Addon selecting all"
    );
    println!(
        "this process before the passes: {:.1} MiB resident, {:.1} MiB allocated",
        before.rss as f64 / 1024.0,
        before.heap as f64 / MIB
    );
    println!("| pass | wall s | steps | CPU s | CPU ms per cluster | fake server CPU s | peak RSS MiB | allocated at the start, KiB per cluster | control-plane requests | managed-cluster requests (per cluster) |\n|---|---|---|---|---|---|---|---|---|---|");
    for p in passes {
        let steps: Vec<String> = p
            .steps
            .iter()
            .map(|(s, d)| format!("{s} {:.2}", d.as_secs_f64()))
            .collect();
        let managed_total: u64 = p.managed.iter().map(|(_, k)| k).sum();
        println!(
            "| {} | {:.2} | {} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {} | {} ({:.1}) |",
            p.name,
            p.wall.as_secs_f64(),
            steps.join(", "),
            p.cpu,
            p.cpu * 1e3 / n,
            p.server_cpu,
            p.peak as f64 / 1024.0,
            p.heap.saturating_sub(before.heap) as f64 / 1024.0 / n,
            show(&p.control_plane),
            show(&p.managed),
            managed_total as f64 / n,
        );
    }
    for p in passes {
        println!("{}: {}", p.name, p.note);
    }
    let peak = passes.last().map_or(0, |p| p.peak);
    println!(
        "memory: peak {:.1} MiB resident, {:.1} KiB per cluster above the start; kept between passes: {:.1} MiB allocated, {:.1} KiB per cluster above the start",
        peak as f64 / 1024.0,
        peak.saturating_sub(before.rss) as f64 / n,
        kept as f64 / MIB,
        kept.saturating_sub(before.heap) as f64 / 1024.0 / n
    );
}

const MIB: f64 = 1024.0 * 1024.0;
