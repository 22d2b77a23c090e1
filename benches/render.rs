//! Rendering benchmarks (DESIGN §8): one typical built-in addon warm (goal ≤ 1 ms), every
//! built-in addon with a fresh renderer, i.e. cold caches (goal ≤ 100 ms for all of them), and
//! a KubeVela CUE addon of about 20 objects (`tests/fixtures/cue-addons/cue-large`) warm (goal
//! ≤ 2 ms; its cold process is timed by `scripts/bench-render.sh`).
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stderr)]

use std::hint::black_box;

use addonctl::loader;
use addonctl::model::AddonPackage;
use addonctl::render::{RenderOptions, Renderer};
use addonctl::source::builtin::BuiltinReader;
use addonctl::source::local::LocalReader;
use addonctl::source::{AddonRef, AsyncReader};
use criterion::{criterion_group, criterion_main, Criterion};

fn packages() -> Vec<AddonPackage> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let reader = BuiltinReader::new();
        let mut out = Vec::new();
        for summary in reader.list_addons().await.unwrap() {
            out.push(
                loader::load(&reader, &AddonRef::latest(summary.name))
                    .await
                    .unwrap(),
            );
        }
        out
    })
}

/// The CUE addon of about 20 objects.
fn cue_package() -> AddonPackage {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cue-addons/cue-large");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let reader = LocalReader::new(dir).unwrap();
        loader::load(&reader, &AddonRef::latest("cue-large"))
            .await
            .unwrap()
    })
}

fn bench(c: &mut Criterion) {
    let packages = packages();
    let typical_name =
        std::env::var("ADDONCTL_BENCH_ADDON").unwrap_or_else(|_| "strongbox-operator".to_owned());
    let typical = packages
        .iter()
        .find(|p| p.name() == typical_name)
        .unwrap_or(&packages[0]);
    let options = RenderOptions::default();
    let renderer = Renderer::new();
    let objects = renderer.render(typical, &options).unwrap();
    let count = objects.objects().len()
        + objects.application["spec"]["components"]
            .as_array()
            .map_or(0, |cs| {
                cs.iter()
                    .map(|c| c["properties"]["objects"].as_array().map_or(1, Vec::len))
                    .sum()
            });
    eprintln!("typical addon `{}`: {count} objects", typical.name());

    c.bench_function("render_typical_warm", |b| {
        b.iter(|| black_box(renderer.render(black_box(typical), &options).unwrap()));
    });
    let cue = cue_package();
    let rendered = renderer.render(&cue, &options).unwrap();
    let components: usize = rendered.application["spec"]["components"]
        .as_array()
        .map_or(0, |cs| {
            cs.iter()
                .map(|c| c["properties"]["objects"].as_array().map_or(1, Vec::len))
                .sum()
        });
    eprintln!(
        "CUE addon `cue-large`: {} objects",
        rendered.objects().len() + components
    );
    c.bench_function("render_cue_addon_warm", |b| {
        b.iter(|| black_box(renderer.render(black_box(&cue), &options).unwrap()));
    });
    c.bench_function("render_all_builtin_cold_renderer", |b| {
        b.iter(|| {
            let fresh = Renderer::new();
            for p in &packages {
                black_box(fresh.render(p, &options).unwrap());
            }
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
