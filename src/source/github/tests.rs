use super::*;

#[test]
fn a_browser_url_names_the_ref_and_the_path() {
    let o = GithubOptions::from_url("r", "https://github.com/kubevela/catalog/tree/v1.2/addons")
        .unwrap();
    assert_eq!(
        (
            o.owner.as_str(),
            o.repo.as_str(),
            o.git_ref.as_deref(),
            o.path.as_str()
        ),
        ("kubevela", "catalog", Some("v1.2"), "addons")
    );
    assert_eq!(o.api_base, None);
}

#[test]
fn a_plain_repository_url_uses_the_default_branch() {
    let o = GithubOptions::from_url("r", "https://github.com/o/r.git/").unwrap();
    assert_eq!(
        (o.repo.as_str(), o.git_ref, o.path.as_str()),
        ("r", None, "")
    );
}

#[test]
fn another_host_is_github_enterprise() {
    let o =
        GithubOptions::from_url("r", "https://git.corp.test/team/addons/tree/main/a/b").unwrap();
    assert_eq!(o.api_base.as_deref(), Some("https://git.corp.test/api/v3"));
    assert_eq!(o.path, "a/b");
}

#[test]
fn an_explicit_ref_with_slashes_takes_its_part_of_the_path() {
    let o = GithubOptions::from_url("r", "https://github.com/o/r/tree/release/1.2/addons")
        .unwrap()
        .with_ref("release/1.2");
    assert_eq!(
        (o.git_ref.as_deref(), o.path.as_str()),
        (Some("release/1.2"), "addons")
    );
}

#[test]
fn urls_that_are_not_repositories_are_refused() {
    for bad in [
        "github.com/o/r",
        "ftp://github.com/o/r",
        "https://github.com/o",
        "https://github.com/o/r/issues/1",
    ] {
        let err = GithubOptions::from_url("r", bad).unwrap_err();
        assert!(matches!(err, Error::InvalidContent { .. }), "{bad}: {err}");
    }
}

#[test]
fn the_token_is_not_in_debug_output() {
    let mut o = GithubOptions::new("o", "r");
    o.token = Some("ghp_secret".into());
    assert!(!format!("{o:?}").contains("ghp_secret"));
}
