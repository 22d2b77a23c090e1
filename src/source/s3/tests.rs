use super::*;

fn keys(list: &[&str]) -> BTreeMap<String, u64> {
    list.iter().map(|k| ((*k).to_owned(), 1)).collect()
}

#[test]
fn a_single_addon_at_the_top_is_one_candidate() {
    let layout = Layout::detect(&keys(&["metadata.yaml", "resources/a.yaml"]));
    assert_eq!(layout.candidates.len(), 1);
    assert_eq!(
        layout.candidates[""].versions,
        [(String::new(), String::new())]
    );
}

#[test]
fn version_folders_are_versions_highest_first() {
    let layout = Layout::detect(&keys(&[
        "a/metadata.yaml",
        "b/1.0.0/metadata.yaml",
        "b/1.10.0/metadata.yaml",
        "b/1.2.0/metadata.yaml",
        "b/1.2.0/resources/x.yaml",
        "c/readme.md",
    ]));
    assert_eq!(layout.candidates.len(), 2);
    assert!(!layout.candidates["a"].versioned);
    let b = &layout.candidates["b"];
    assert!(b.versioned);
    let versions: Vec<&str> = b.versions.iter().map(|v| v.1.as_str()).collect();
    assert_eq!(versions, ["1.10.0", "1.2.0", "1.0.0"]);
}

#[test]
fn files_below_a_directory_are_relative_to_it() {
    let all = keys(&["a/metadata.yaml", "a/x/y.yaml", "ab/metadata.yaml"]);
    let files: Vec<String> = files_below(&all, "a/").into_keys().collect();
    assert_eq!(files, ["metadata.yaml", "x/y.yaml"]);
}

#[test]
fn credentials_do_not_show_the_secret() {
    let c = S3Credentials {
        access_key_id: "AKID".into(),
        secret_access_key: "very-secret".into(),
    };
    let mut options = S3Options::new("http://127.0.0.1:1", "b");
    options.credentials = Some(c);
    let shown = format!("{options:?}");
    assert!(shown.contains("AKID"));
    assert!(!shown.contains("very-secret"));
}
