use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use super::*;
use crate::model::registry::{Credentials, RegistrySpec, RegistryType};
use crate::model::AddonVersion;
use crate::source::{choose_version, sorted_versions, AsyncReader, FileEntry};

/// A reader that counts how often it is listed.
#[derive(Debug)]
struct Counting {
    inner: Reader,
    lists: AtomicUsize,
}

impl Counting {
    fn wrap(inner: Reader) -> Arc<Self> {
        Arc::new(Counting {
            inner,
            lists: AtomicUsize::new(0),
        })
    }

    fn lists(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
    }
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

#[async_trait]
impl AsyncReader for Counting {
    fn registry(&self) -> &str {
        self.inner.registry()
    }

    async fn list_addons(&self) -> source::Result<Vec<AddonSummary>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list_addons().await
    }

    async fn list_files(&self, addon: &AddonRef) -> source::Result<Vec<FileEntry>> {
        self.inner.list_files(addon).await
    }

    async fn read_file(&self, addon: &AddonRef, path: &str) -> source::Result<Vec<u8>> {
        self.inner.read_file(addon, path).await
    }
}

/// A directory holding one folder per `(name, version)`.
fn registry_dir(addons: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, version) in addons {
        let addon = dir.path().join(name);
        fs_err::create_dir_all(&addon).unwrap();
        fs_err::write(
            addon.join("metadata.yaml"),
            format!("name: {name}\nversion: {version}\n"),
        )
        .unwrap();
    }
    dir
}

/// Two addons of the built-in registry, for shadowing.
async fn builtin_names() -> (String, String, String) {
    let addons = BuiltinReader::new().list_addons().await.unwrap();
    assert!(
        addons.len() >= 3,
        "the built-in registry holds three addons"
    );
    (
        addons[0].name.clone(),
        addons[1].name.clone(),
        addons[2].name.clone(),
    )
}

async fn found_in(catalog: &Catalog, name: &str) -> (String, String) {
    let found = catalog.find(name, None, None, None).await.unwrap();
    (
        found.reader.registry().to_owned(),
        found.addon.version.unwrap(),
    )
}

#[tokio::test]
async fn a_directory_shadows_a_stored_registry_which_shadows_the_builtin_and_each_is_listed_once() {
    let (x, y, z) = builtin_names().await;
    let directory = registry_dir(&[(&x, "9.0.0")]);
    let stored = registry_dir(&[(&x, "8.0.0"), (&y, "8.0.0")]);
    let counted: Vec<Arc<Counting>> = vec![
        Counting::wrap(Arc::new(LocalReader::new(directory.path()).unwrap())),
        Counting::wrap(Arc::new(
            LocalReader::with_registry(stored.path(), "stored").unwrap(),
        )),
    ];
    let builtin = Counting::wrap(Arc::new(BuiltinReader::new()));
    let mut readers: Vec<Reader> = counted.iter().map(|c| Arc::clone(c) as Reader).collect();
    readers.push(Arc::clone(&builtin) as Reader);
    let catalog = Catalog::from_readers(readers);

    assert_eq!(
        found_in(&catalog, &x).await,
        ("local".into(), "9.0.0".into())
    );
    assert_eq!(
        found_in(&catalog, &y).await,
        ("stored".into(), "8.0.0".into())
    );
    assert_eq!(found_in(&catalog, &z).await.0, BUILTIN_REGISTRY);
    // A pin reaches past the shadowing registries.
    let pinned = catalog
        .find(&format!("{BUILTIN_REGISTRY}/{x}"), None, None, None)
        .await
        .unwrap();
    assert_eq!(pinned.reader.registry(), BUILTIN_REGISTRY);
    // Every command of the run shares the listings: nothing is listed twice, clones included.
    let listings = catalog.clone().list().await;
    assert_eq!(listings.len(), 3);
    assert!(catalog.find_listed(&listings, &y, None, None).is_some());
    let first = catalog.with_first(Arc::new(LocalReader::new(directory.path()).unwrap()));
    assert_eq!(first.listing_owned(2).await.unwrap().unwrap().len(), 2);
    assert_eq!(first.names().await.len(), catalog.names().await.len());
    for reader in counted.iter().chain([&builtin]) {
        assert_eq!(
            reader.lists(),
            1,
            "`{}` was listed again",
            reader.registry()
        );
    }
}

#[tokio::test]
async fn stored_registries_come_between_the_directories_and_the_builtin() {
    let directory = registry_dir(&[("a", "1.0.0")]);
    let stored = registry_dir(&[("a", "2.0.0")]);
    let registry = |name: &str, endpoint: &str, kind| Registry {
        spec: RegistrySpec {
            name: name.into(),
            kind,
            endpoint: endpoint.into(),
            ..RegistrySpec::default()
        },
        credentials: Credentials::default(),
    };
    let stored = [
        registry(
            "kept",
            &stored.path().display().to_string(),
            RegistryType::Local,
        ),
        registry("broken", "https://s3.example.invalid", RegistryType::S3),
    ];
    let (catalog, failures) = Catalog::with_stored(
        &[directory.path().to_path_buf()],
        &stored,
        &OpenOptions::default(),
    )
    .unwrap();
    let names: Vec<&str> = catalog.readers().iter().map(|r| r.registry()).collect();
    assert_eq!(names, ["local", "kept", BUILTIN_REGISTRY]);
    assert_eq!(failures.len(), 1);
    assert!(failures[0].to_string().contains("needs `--bucket`"));
    assert_eq!(
        found_in(&catalog, "a").await,
        ("local".into(), "1.0.0".into())
    );
    assert_eq!(
        catalog.describe(),
        "registry `local`, registry `kept`, the built-in registry"
    );
}

#[tokio::test]
async fn a_missing_addon_names_the_registries_and_a_missing_version_the_versions() {
    let dir = registry_dir(&[("a", "1.0.0")]);
    let catalog = Catalog::from_readers(vec![Arc::new(
        LocalReader::with_registry(dir.path(), "mine").unwrap(),
    )]);
    let err = catalog.find("b", None, None, None).await.unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::NotFound);
    assert_eq!(err.to_string(), "no addon `b` in `mine`");
    let err = catalog
        .find("a", Some("2.0.0"), None, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no version of addon `a` version `2.0.0`; available: `1.0.0` in `mine`"
    );
    let err = catalog.find("other/a", None, None, None).await.unwrap_err();
    assert_eq!(err.to_string(), "no addon `a` in a registry named `other`");
}

#[test]
fn an_addon_is_found_in_listings_already_read_preferring_its_registry_and_version() {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let catalog = Catalog::from_readers(vec![
        Arc::new(LocalReader::with_registry(dirs[0].path(), "first").unwrap()),
        Arc::new(LocalReader::with_registry(dirs[1].path(), "second").unwrap()),
    ]);
    let listing = |registry: &str, versions: &[&str]| RegistryListing {
        registry: registry.to_owned(),
        addons: Ok(vec![AddonSummary {
            name: "a".to_owned(),
            versions: versions.iter().map(|v| (*v).to_owned()).collect(),
            description: None,
            tags: Vec::new(),
        }]),
    };
    let listings = [listing("first", &["2.0.0"]), listing("second", &["1.0.0"])];
    let found = |version: Option<&str>, prefer: Option<&str>| {
        catalog
            .find_listed(&listings, "a", version, prefer)
            .map(|f| (f.reader.registry().to_owned(), f.addon.version.unwrap()))
    };
    let at = |registry: &str, version: &str| Some((registry.to_owned(), version.to_owned()));

    assert_eq!(found(Some("1.0.0"), Some("second")), at("second", "1.0.0"));
    assert_eq!(found(Some("1.0.0"), None), at("second", "1.0.0"));
    // The installed version is gone from every registry: the newest in search order.
    assert_eq!(found(Some("0.9.0"), Some("second")), at("second", "1.0.0"));
    assert_eq!(found(None, None), at("first", "2.0.0"));
    assert!(catalog.find_listed(&listings, "b", None, None).is_none());
    let failed = [RegistryListing {
        registry: "first".to_owned(),
        addons: Err(source::Error::Backend {
            registry: "first".to_owned(),
            message: "down".to_owned(),
            source: None,
        }),
    }];
    assert!(catalog.find_listed(&failed, "a", None, None).is_none());
}

#[test]
fn versions_are_chosen_as_users_expect() {
    let versions = sorted_versions(&["2.0.0-rc.1", "1.4.0", "v1.10.0", "1.2.0", "nightly"]);
    let chosen = |choice| choose_version(&versions, choice).map(AddonVersion::raw);
    assert_eq!(chosen(Choice::Default), Some("v1.10.0"));
    assert_eq!(chosen(Choice::NewestStable), Some("v1.10.0"));
    assert_eq!(chosen(Choice::Exact("1.10.0")), Some("v1.10.0"));
    assert_eq!(chosen(Choice::Exact("2.0.0-rc.1")), Some("2.0.0-rc.1"));
    let c = Constraint::parse(">=1.0.0, <1.5.0").unwrap();
    assert_eq!(chosen(Choice::Matching(&c)), Some("1.4.0"));
    let c = Constraint::parse(">=3").unwrap();
    assert_eq!(chosen(Choice::Matching(&c)), None);
    let odd = sorted_versions(&["nightly", "0.1.0-rc.1"]);
    // A version that is not semver is no prerelease.
    assert_eq!(
        choose_version(&odd, Choice::Default).map(AddonVersion::raw),
        Some("nightly")
    );
    assert_eq!(choose_version(&odd, Choice::NewestStable), None);
    let nightly = sorted_versions(&["nightly"]);
    assert_eq!(
        choose_version(&nightly, Choice::Default).map(AddonVersion::raw),
        Some("nightly")
    );
}

#[tokio::test]
async fn a_reopened_catalogue_sees_a_version_published_after_the_first_listing() {
    let dir = registry_dir(&[]);
    let publish = |version: &str| {
        // A directory registry holds one version of an addon: publishing replaces it.
        let addon = dir.path().join("poller");
        fs_err::create_dir_all(&addon).unwrap();
        fs_err::write(
            addon.join("metadata.yaml"),
            format!("name: poller\nversion: {version}\n"),
        )
        .unwrap();
    };
    publish("1.0.0");
    let catalog = Catalog::new(&[dir.path().to_path_buf()]).unwrap();
    let newest = |c: &Catalog| {
        let c = c.clone();
        async move {
            c.find("poller", None, None, None)
                .await
                .unwrap()
                .addon
                .version
        }
    };
    assert_eq!(newest(&catalog).await.as_deref(), Some("1.0.0"));
    publish("1.1.0");
    assert_eq!(
        newest(&catalog).await.as_deref(),
        Some("1.0.0"),
        "a catalogue lists each registry once"
    );
    let (fresh, failures) = catalog.reopened().unwrap();
    assert!(failures.is_empty());
    assert_eq!(newest(&fresh).await.as_deref(), Some("1.1.0"));
    assert_eq!(
        fresh.readers().len(),
        catalog.readers().len(),
        "the same registries"
    );
}
