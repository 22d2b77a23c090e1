//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod builders;
pub mod conformance;
pub mod forges;
pub mod git_server;
pub mod helm_repo;
pub mod http_server;
pub mod k8s;
pub mod oci;
pub mod s3;
pub mod serve;
pub mod ssh_server;

use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/fixtures/registry`: the fixture registry every source serves.
pub fn fixture_registry() -> PathBuf {
    root().join("tests/fixtures/registry")
}

/// A multi-thread runtime for tests that are not `#[tokio::test]`.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}
