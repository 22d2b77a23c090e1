//! Record storage benchmark: bytes per object×cluster and the largest Secret written, for an
//! addon of N objects on K clusters (pure serialisation: what `state::record::storage` would
//! write), plus the size of an addon's whole record (all Secrets) with its revisions. Run with
//! `cargo bench --bench record`; `ADDONCTL_BENCH_RECORD=200x10,200x1000` picks the shapes.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss
)]

use std::time::Instant;

use addonctl::state::record::storage::{self, Layout};
use addonctl::state::record::{ClusterInventory, DispatchedObject, ObjectRef, Record};
use addonctl::state::revisions::{self, Revision, RevisionStatus};
use serde_json::json;

/// A uid as servers make them (random version-4 style, from a fixed-seed generator).
fn uid(state: &mut u64) -> String {
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    };
    let (a, b) = (next(), next());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0x3fff | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

fn record(objects: usize, clusters: usize) -> Record {
    let mut record: Record = serde_json::from_value(json!({
        "name": "bench", "version": "1.0.0", "registry": "bench-registry", "installedBy": "user",
        "argsHash": "0".repeat(64), "application": false, "clusters": ["*"],
    }))
    .unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for c in 0..clusters {
        let objects = (0..objects)
            .map(|o| DispatchedObject {
                object: ObjectRef {
                    api_version: if o % 3 == 0 { "apps/v1" } else { "v1" }.to_owned(),
                    kind: ["Deployment", "ConfigMap", "Service"][o % 3].to_owned(),
                    namespace: Some("bench-system".to_owned()),
                    name: format!("bench-component-{o}"),
                },
                uid: uid(&mut seed),
                created: true,
            })
            .collect();
        record.dispatched.insert(
            format!("managed-{c:04}"),
            ClusterInventory {
                objects,
                error: None,
                revision: None,
            },
        );
    }
    record
}

/// A package of `objects` ConfigMaps, as its revision Secret keeps it.
fn packed_package(objects: usize) -> usize {
    let mut files = vec![(
        "metadata.yaml".to_owned(),
        b"name: bench\nversion: 1.0.0\n".to_vec(),
    )];
    for o in 0..objects {
        files.push((
            format!("resources/object-{o}.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-component-{o}\ndata:\n  key: value-{o}\n").into_bytes(),
        ));
    }
    let package = addonctl::loader::from_files("bench-registry", "bench", files).unwrap();
    revisions::pack(&package).1.len()
}

fn with_revisions(mut record: Record, count: u32) -> Record {
    for n in 1..=count {
        record.revisions.push(Revision {
            revision: n,
            updated: "2026-01-01T00:00:00Z".to_owned(),
            version: format!("1.0.{n}"),
            registry: "bench-registry".to_owned(),
            status: if n == count {
                RevisionStatus::Deployed
            } else {
                RevisionStatus::Superseded
            },
            description: "upgrade".to_owned(),
            args: serde_json::from_value(json!({"replicas": n, "clusters": ["*"]})).unwrap(),
            secret_args: vec!["auth.token".to_owned()],
            args_hash: "0".repeat(64),
            package_digest: "0".repeat(64),
            secret: Some(revisions::secret_name("bench", n)),
            package_kept: true,
            note: None,
            inventory_digest: "0".repeat(64),
            objects: 0,
            overrides: std::collections::BTreeMap::new(),
            source: None,
        });
    }
    record
}

fn main() {
    let shapes = std::env::var("ADDONCTL_BENCH_RECORD")
        .unwrap_or_else(|_| "200x10,800x10,200x1000".to_owned());
    println!("objects x clusters | JSON bytes | Secrets | total data bytes | bytes/pair | largest Secret data | encode ms | decode ms");
    for shape in shapes.split(',') {
        let (objects, clusters) = shape.split_once('x').expect("NxK");
        let (objects, clusters): (usize, usize) =
            (objects.parse().unwrap(), clusters.parse().unwrap());
        let record = record(objects, clusters);
        let json = serde_json::to_vec(&record).unwrap().len();
        let started = Instant::now();
        let encoded = storage::encode(&record, "vela-system", &Layout::DEFAULT).unwrap();
        let encode_ms = started.elapsed().as_secs_f64() * 1000.0;
        let started = Instant::now();
        let read = storage::decode(&encoded.main, &encoded.shards).unwrap();
        let decode_ms = started.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(read.as_ref(), Some(&record));
        let pairs = objects * clusters;
        println!(
            "{objects} x {clusters} | {json} | {} | {} | {:.1} | {} | {encode_ms:.1} | {decode_ms:.1}",
            1 + encoded.shards.len(),
            encoded.total_data(),
            encoded.total_data() as f64 / pairs as f64,
            encoded.largest_data(),
        );
    }
    // The whole record of an addon of 200 objects on 10 clusters with 10 revisions: the record
    // (and shards) plus 10 revision Secrets, each keeping the package and a secret argument.
    let record = with_revisions(record(200, 10), 10);
    let encoded = storage::encode(&record, "vela-system", &Layout::DEFAULT).unwrap();
    let package = packed_package(200);
    let secret_args = 64;
    let total = encoded.total_data() + 10 * (package + secret_args);
    println!(
        "200 objects x 10 clusters, 10 revisions: record {} bytes in {} Secret(s), package {package} bytes gzipped per revision Secret, total {total} bytes in {} Secrets",
        encoded.total_data(),
        1 + encoded.shards.len(),
        11 + encoded.shards.len(),
    );
}
