//! The one conformance suite every [`AsyncReader`] must pass.
//!
//! A reader is checked against the directory it serves (the ground truth on disk): the listing
//! (names, versions, descriptions, sorted), every file's list and bytes, not-found answers for a
//! missing addon, version and file, and refusal of paths that are absolute or contain `..`.
//! Sources that can fail authentication or be rate limited add their own cases with
//! [`expect_unauthorized`] and [`expect_rate_limited`].

use std::collections::BTreeMap;
use std::path::Path;

use addonctl::source::{AddonRef, AsyncReader, Error};

/// Every file under `dir` (relative, `/`-separated, hidden entries skipped), sorted.
fn files_on_disk(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path
                    .strip_prefix(base)
                    .expect("prefix")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Runs the suite: `reader` must serve exactly the addons under `truth` (a directory of addons).
pub async fn run(reader: &dyn AsyncReader, truth: &Path) {
    let listing = reader.list_addons().await.expect("list_addons");
    let mut expected = Vec::new();
    for entry in std::fs::read_dir(truth).expect("read truth") {
        let dir = entry.expect("entry").path();
        let Ok(text) = std::fs::read_to_string(dir.join("metadata.yaml")) else {
            continue;
        };
        let (meta, _) = addonctl::model::AddonMeta::parse(&text).expect("fixture metadata");
        expected.push((
            meta.name.clone(),
            meta.version.raw().to_owned(),
            meta.description.clone(),
            dir,
        ));
    }
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<&str> = listing.iter().map(|a| a.name.as_str()).collect();
    let expected_names: Vec<&str> = expected.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, expected_names, "{reader}: listing");

    for (summary, (name, version, description, dir)) in listing.iter().zip(&expected) {
        assert_eq!(
            summary.versions.first(),
            Some(version),
            "{reader}: versions of `{name}`"
        );
        assert_eq!(
            &summary.description, description,
            "{reader}: description of `{name}`"
        );
        for version in [None, Some(version.clone())] {
            let addon = AddonRef {
                name: name.clone(),
                version,
            };
            let files = reader.list_files(&addon).await.expect("list_files");
            let truth_files = files_on_disk(dir);
            let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
            let truth_paths: Vec<&str> = truth_files.keys().map(String::as_str).collect();
            assert_eq!(paths, truth_paths, "{reader}: files of `{addon}`");
            for file in &files {
                let bytes = reader
                    .read_file(&addon, &file.path)
                    .await
                    .expect("read_file");
                assert_eq!(
                    bytes.len() as u64,
                    file.size,
                    "{reader}: size of `{}`",
                    file.path
                );
                assert_eq!(
                    &bytes, &truth_files[&file.path],
                    "{reader}: bytes of `{}`",
                    file.path
                );
            }
        }
    }

    // Not found: addon, version, file.
    let missing = AddonRef::latest("no-such-addon");
    assert!(
        matches!(
            reader.list_files(&missing).await,
            Err(Error::NotFound { .. })
        ),
        "{reader}: missing addon"
    );
    assert!(matches!(
        reader.read_file(&missing, "metadata.yaml").await,
        Err(Error::NotFound { .. })
    ));
    if let Some((name, ..)) = expected.first() {
        let wrong_version = AddonRef {
            name: name.clone(),
            version: Some("999.0.0".into()),
        };
        let err = reader
            .list_files(&wrong_version)
            .await
            .expect_err("wrong version");
        assert!(
            matches!(err, Error::NotFound { .. }),
            "{reader}: wrong version: {err}"
        );
        assert!(err.to_string().contains("999.0.0"), "{err}");
        let addon = AddonRef::latest(name.clone());
        let err = reader
            .read_file(&addon, "no/such/file.yaml")
            .await
            .expect_err("missing file");
        assert!(
            matches!(err, Error::NotFound { .. }),
            "{reader}: missing file: {err}"
        );
        for bad in ["../metadata.yaml", "/etc/passwd", "resources/../../x", ""] {
            let err = reader.read_file(&addon, bad).await.expect_err("bad path");
            assert!(
                matches!(err, Error::InvalidPath { .. }),
                "{reader}: path `{bad}`: {err}"
            );
        }
    }
}

/// Asserts that a reader refuses access with [`Error::Unauthorized`], without leaking `secret`.
pub async fn expect_unauthorized(reader: &dyn AsyncReader, secret: &str) {
    let err = reader.list_addons().await.expect_err("unauthorized");
    assert!(matches!(err, Error::Unauthorized { .. }), "{reader}: {err}");
    assert!(
        !err.to_string().contains(secret),
        "{reader}: the error leaks the credential: {err}"
    );
}

/// Asserts that a reader reports rate limiting with [`Error::RateLimited`].
pub async fn expect_rate_limited(reader: &dyn AsyncReader) {
    let err = reader.list_addons().await.expect_err("rate limited");
    assert!(matches!(err, Error::RateLimited { .. }), "{reader}: {err}");
}
