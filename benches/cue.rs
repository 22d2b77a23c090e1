//! The native CUE evaluator on an addon template of about 20 objects (an Application with ten
//! components and ten auxiliary Services), warm: parse, evaluate and export `output` and
//! `outputs` (goal ≤ 2 ms; KubeVela's own CUE render costs about 100 ms per addon).
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use addonctl::cue::{evaluate, Limits, Source};
use criterion::{criterion_group, criterion_main, Criterion};

const TEMPLATE: &str = include_str!("data/addon20.cue");

fn render() -> (serde_json::Value, serde_json::Value) {
    let sources = [Source::new("template.cue", TEMPLATE)];
    let instance = evaluate(&sources, &Limits::default()).unwrap();
    let output = instance.export(&["output"]).unwrap().unwrap();
    let outputs = instance.export(&["outputs"]).unwrap().unwrap();
    (output, outputs)
}

fn bench(c: &mut Criterion) {
    let (output, outputs) = render();
    let components = output["spec"]["components"].as_array().map_or(0, Vec::len);
    let objects = outputs.as_object().map_or(0, serde_json::Map::len);
    assert_eq!((components, objects), (10, 10));
    c.bench_function("cue_template_20_objects_warm", |b| {
        b.iter(|| black_box(render()));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
