#!/usr/bin/env bash
# Render benchmarks: criterion (warm render of one addon, all built-in addons with cold caches,
# a KubeVela CUE addon of about 20 objects), a whole cold process linting (= loading, compiling
# and rendering) every built-in addon, and a cold process rendering the CUE addon.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
cargo bench --bench render -- --noplot "$@"
cargo bench --bench cue -- --noplot "$@"
echo "== cold process: addonctl lint addons (renders every built-in addon) =="
bin=target/release/addonctl
runs=20
start=$(date +%s%N)
for _ in $(seq "$runs"); do "$bin" lint addons >/dev/null; done
end=$(date +%s%N)
echo "mean over $runs runs: $(( (end - start) / runs / 1000 )) us per process"
echo "== cold process: addonctl render of a CUE addon of about 20 objects (goal <= 30 ms) =="
cue_addon=tests/fixtures/cue-addons/cue-large
start=$(date +%s%N)
for _ in $(seq "$runs"); do "$bin" render "$cue_addon" -o json >/dev/null; done
end=$(date +%s%N)
echo "mean over $runs runs: $(( (end - start) / runs / 1000 )) us per process"
echo "== cold process: the native CUE evaluator on a 20-object template =="
cargo build --release --quiet --example cue_export
cue_bin=target/release/examples/cue_export
start=$(date +%s%N)
for _ in $(seq "$runs"); do "$cue_bin" --path output benches/data/addon20.cue >/dev/null; done
end=$(date +%s%N)
echo "mean over $runs runs: $(( (end - start) / runs / 1000 )) us per process"
