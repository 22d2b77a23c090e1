//! Every source passes the conformance suite; source-specific cases follow.

use addonctl::source::builtin::BuiltinReader;
use addonctl::source::local::LocalReader;
use addonctl::source::{AddonRef, AsyncReader, Error, MAX_FILE_SIZE};

use crate::support::{builders::TestAddon, conformance, fixture_registry, root};

#[tokio::test]
async fn local_directory_of_addons_passes_the_conformance_suite() {
    let reader = LocalReader::new(fixture_registry()).unwrap();
    conformance::run(&reader, &fixture_registry()).await;
}

#[tokio::test]
async fn builtin_registry_passes_the_conformance_suite_against_addons_dir() {
    conformance::run(&BuiltinReader::new(), &root().join("addons")).await;
}

#[tokio::test]
async fn local_single_addon_directory_lists_that_addon() {
    let reader = LocalReader::new(fixture_registry().join("minimal")).unwrap();
    let listing = reader.list_addons().await.unwrap();
    assert_eq!(listing.len(), 1);
    assert_eq!(listing[0].name, "minimal");
    assert_eq!(listing[0].versions, ["0.1.0"]);
    let files = reader
        .list_files(&AddonRef::latest("minimal"))
        .await
        .unwrap();
    assert_eq!(files.len(), 1);
}

#[tokio::test]
async fn local_symlinks_leaving_the_root_are_neither_listed_nor_read() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    let addon = TestAddon::new("linky").file("resources/a.yaml", "kind: A\n");
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        addon.path().join("resources/leak.yaml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), addon.path().join("outside-dir")).unwrap();
    std::os::unix::fs::symlink(addon.path(), addon.path().join("resources/loop")).unwrap();
    let reader = LocalReader::new(addon.path()).unwrap();
    let files = reader.list_files(&AddonRef::latest("linky")).await.unwrap();
    let paths: Vec<_> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["metadata.yaml", "resources/a.yaml"]);
    let err = reader
        .read_file(&AddonRef::latest("linky"), "resources/leak.yaml")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidPath { .. }), "{err}");
    assert!(!err.to_string().contains("top secret"));
}

#[tokio::test]
async fn local_files_over_the_size_cap_are_refused() {
    let big = vec![b'a'; usize::try_from(MAX_FILE_SIZE).unwrap() + 1];
    let addon = TestAddon::new("big").bytes("resources/big.yaml", &big);
    let reader = LocalReader::new(addon.path()).unwrap();
    let err = reader
        .read_file(&AddonRef::latest("big"), "resources/big.yaml")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains("over the limit"), "{err}");
}

#[tokio::test]
async fn a_missing_directory_is_a_not_found_error() {
    let err = LocalReader::new("/no/such/dir").unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("/no/such/dir"), "{err}");
}
