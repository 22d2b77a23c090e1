//! The remote readers: GitHub, Gitee and GitLab against their protocol fakes
//! (`support::forges`), S3 / OSS against real moto and s3s-fs servers and an OSS listing fake.
//! Each passes the conformance suite; then credentials, rate limits, server errors, hanging
//! servers, truncated archives and the request budget of a 90-addon registry.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use addonctl::source::cache::CacheOptions;
use addonctl::source::gitee::{GiteeOptions, GiteeReader};
use addonctl::source::github::{GithubOptions, GithubReader};
use addonctl::source::gitlab::{GitlabOptions, GitlabReader};
use addonctl::source::http::HttpOptions;
use addonctl::source::s3::S3Reader;
use addonctl::source::{AddonRef, AsyncReader, Error};

use crate::support::forges::{files_from_dir, many_addons, Fault, Forge, Repo};
use crate::support::helm_repo::fresh_cache;
use crate::support::s3::{self as s3_support, OssFake};
use crate::support::{conformance, fixture_registry};

/// How many addons the request-budget fixture has.
const BUDGET_ADDONS: usize = 90;

fn github(forge: &Forge, path: &str) -> GithubOptions {
    let mut options = GithubOptions::new("acme", "addons");
    options.api_base = Some(forge.url.clone());
    path.clone_into(&mut options.path);
    options.request_timeout = Duration::from_secs(10);
    options.retries = 2;
    options.max_retry_wait = Duration::from_secs(2);
    options
}

fn fast_http() -> HttpOptions {
    HttpOptions {
        timeout: Duration::from_secs(10),
        retries: 2,
        initial_backoff: Duration::from_millis(10),
        max_retry_wait: Duration::from_secs(2),
        ..HttpOptions::default()
    }
}

fn gitee(forge: &Forge, path: &str) -> GiteeOptions {
    let mut options = GiteeOptions::new(format!("{}/api/v5", forge.url), "acme", "addons");
    path.clone_into(&mut options.path);
    options.http = fast_http();
    options
}

fn gitlab(forge: &Forge, project: &str, path: &str) -> GitlabOptions {
    let mut options = GitlabOptions::new(format!("{}/api/v4", forge.url), project);
    path.clone_into(&mut options.path);
    options.http = fast_http();
    options
}

/// A fake forge whose `acme/addons` holds the 90-addon request-budget fixture under `addons/`.
async fn budget_forge() -> Forge {
    Forge::start(Repo::new(
        "acme",
        "addons",
        many_addons(BUDGET_ADDONS, "addons"),
    ))
    .await
}

fn github_reader(forge: &Forge) -> GithubReader {
    GithubReader::new(github(forge, "addons"), "gh").unwrap()
}

fn gitee_reader(forge: &Forge) -> GiteeReader {
    GiteeReader::new(gitee(forge, "addons"), "gitee").unwrap()
}

fn gitlab_reader(forge: &Forge) -> GitlabReader {
    GitlabReader::new(gitlab(forge, "acme/addons", "addons"), "gl").unwrap()
}

/// [`github_reader`] with the disk cache `cache`.
fn cached_github_reader(forge: &Forge, cache: CacheOptions) -> GithubReader {
    let mut options = github(forge, "addons");
    options.cache = cache;
    GithubReader::new(options, "gh").unwrap()
}

/// [`gitee_reader`] with the disk cache `cache`.
fn cached_gitee_reader(forge: &Forge, cache: CacheOptions) -> GiteeReader {
    let mut options = gitee(forge, "addons");
    options.cache = cache;
    GiteeReader::new(options, "gitee").unwrap()
}

/// [`gitlab_reader`] with the disk cache `cache`.
fn cached_gitlab_reader(forge: &Forge, cache: CacheOptions) -> GitlabReader {
    let mut options = gitlab(forge, "acme/addons", "addons");
    options.cache = cache;
    GitlabReader::new(options, "gl").unwrap()
}

/// Lists a registry, then enables one addon the way `enable` reads it (the loader reads every
/// file); returns the requests each step made.
async fn list_then_enable(reader: &dyn AsyncReader, count: impl Fn() -> u64) -> (u64, u64) {
    let start = count();
    let listing = reader.list_addons().await.expect("list");
    assert_eq!(listing.len(), BUDGET_ADDONS);
    let listed = count() - start;
    let package = addonctl::loader::load(reader, &AddonRef::latest("addon-042"))
        .await
        .expect("load");
    assert_eq!(package.metadata.name, "addon-042");
    (listed, count() - start - listed)
}

// ---------------------------------------------------------------- GitHub

#[tokio::test]
async fn github_reader_passes_the_conformance_suite() {
    let forge = Forge::fixture().await;
    let reader = github_reader(&forge);
    conformance::run(&reader, &fixture_registry()).await;
    // One API call and the redirect to the archive, for everything.
    assert_eq!(forge.requests(), 2, "{:?}", forge.log());
}

#[tokio::test]
async fn github_enterprise_url_with_a_branch_reads_that_branch_through_api_v3() {
    let main = files_from_dir(&fixture_registry(), "addons");
    let stable = files_from_dir(&fixture_registry().join("minimal"), "catalog/minimal");
    let forge = Forge::start(Repo::new("acme", "addons", main).with_ref("stable", stable)).await;

    let url = format!("{}/acme/addons/tree/main/addons", forge.url);
    let options = GithubOptions::from_url("ghe", &url).unwrap();
    assert_eq!(options.api_base, Some(format!("{}/api/v3", forge.url)));
    let reader = GithubReader::new(options, "ghe").unwrap();
    conformance::run(&reader, &fixture_registry()).await;
    assert!(forge.log()[0].starts_with("GET /api/v3/repos/acme/addons/tarball/main"));

    let url = format!("{}/acme/addons/tree/stable/catalog", forge.url);
    let reader = GithubReader::new(GithubOptions::from_url("ghe", &url).unwrap(), "ghe").unwrap();
    let names: Vec<String> = reader
        .list_addons()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["minimal"]);
}

#[tokio::test]
async fn github_token_is_sent_and_a_wrong_one_is_unauthorized_without_leaking_it() {
    let forge = Forge::fixture().await;
    forge.require_token("ghp_right");
    let mut options = github(&forge, "addons");
    options.token = Some("ghp_right".into());
    let reader = GithubReader::new(options, "gh").unwrap();
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);

    let mut options = github(&forge, "addons");
    options.token = Some("ghp_wrong_secret".into());
    let reader = GithubReader::new(options, "gh").unwrap();
    conformance::expect_unauthorized(&reader, "ghp_wrong_secret").await;

    let anonymous = github_reader(&forge);
    let err = anonymous.list_addons().await.unwrap_err();
    assert!(err.to_string().contains("needs a token"), "{err}");
}

#[tokio::test]
async fn github_rate_limit_names_the_reset_time_and_is_not_waited_out() {
    let forge = Forge::fixture().await;
    forge.fail(Fault::RateLimitExhausted { reset_in: 3600 });
    let reader = github_reader(&forge);
    let started = Instant::now();
    conformance::expect_rate_limited(&reader).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let err = reader.list_addons().await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("resets at 20"), "{text}");
    assert!(text.contains("0 of 60 requests left"), "{text}");
    assert!(text.contains("token raises the limit"), "{text}");
}

#[tokio::test]
async fn github_secondary_rate_limit_with_a_short_retry_after_is_retried() {
    let forge = Forge::fixture().await;
    forge.fail_times(Fault::TooManyRequests { retry_after: 1 }, 1);
    let reader = github_reader(&forge);
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);
    assert_eq!(forge.requests(), 3, "{:?}", forge.log());

    let forge = Forge::fixture().await;
    forge.fail(Fault::TooManyRequests { retry_after: 3600 });
    let reader = github_reader(&forge);
    conformance::expect_rate_limited(&reader).await;
    assert_eq!(forge.requests(), 1, "a long Retry-After is not waited for");
}

#[tokio::test]
async fn github_server_errors_are_retried_then_reported() {
    let forge = Forge::fixture().await;
    forge.fail(Fault::Status(500));
    let reader = github_reader(&forge);
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(err.to_string().contains("HTTP 500"), "{err}");
    assert_eq!(forge.requests(), 3, "one try and two retries");

    let forge = Forge::fixture().await;
    forge.fail_times(Fault::Status(502), 1);
    let reader = github_reader(&forge);
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);
}

#[tokio::test]
async fn github_missing_repository_or_ref_is_not_found() {
    let forge = Forge::fixture().await;
    let mut options = github(&forge, "addons");
    options.git_ref = Some("no-such-branch".into());
    let err = GithubReader::new(options, "gh")
        .unwrap()
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("no-such-branch"), "{err}");

    let err = GithubReader::new(github(&forge, "no/such/path"), "gh")
        .unwrap()
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
}

#[tokio::test]
async fn github_hanging_server_is_bounded_by_the_timeout() {
    let forge = Forge::fixture().await;
    forge.fail(Fault::Hang);
    let mut options = github(&forge, "addons");
    options.request_timeout = Duration::from_secs(1);
    options.retries = 1;
    let reader = GithubReader::new(options, "gh").unwrap();
    let started = Instant::now();
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn github_truncated_archive_is_refused() {
    let forge = Forge::fixture().await;
    forge.fail(Fault::TruncateArchives);
    let reader = github_reader(&forge);
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::InvalidContent { .. }), "{err}");
}

#[tokio::test]
async fn github_archive_over_the_size_cap_falls_back_to_the_tree_and_raw_files() {
    let forge = Forge::fixture().await;
    let mut options = github(&forge, "addons");
    options.max_archive_bytes = 100;
    let reader = GithubReader::new(options, "gh").unwrap();
    conformance::run(&reader, &fixture_registry()).await;
    let log = forge.log();
    assert!(
        log.iter()
            .any(|l| l.contains("/git/trees/HEAD?recursive=1")),
        "{log:?}"
    );
    // The listing fetched the three metadata files only; the rest came when read.
    assert!(
        log.iter()
            .any(|l| l.contains("/contents/addons/full/metadata.yaml")),
        "{log:?}"
    );
}

#[tokio::test]
async fn github_truncated_tree_is_an_error_not_a_partial_listing() {
    let forge = Forge::fixture().await;
    forge.truncate_trees();
    let mut options = github(&forge, "addons");
    options.max_archive_bytes = 100;
    let err = GithubReader::new(options, "gh")
        .unwrap()
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidContent { .. }), "{err}");
    assert!(err.to_string().contains("truncated"), "{err}");
}

#[tokio::test]
async fn github_lists_90_addons_and_enables_one_within_the_request_budget() {
    let forge = budget_forge().await;
    let reader = github_reader(&forge);
    let (listed, enabled) = list_then_enable(&reader, || forge.requests()).await;
    eprintln!("github: list {listed} requests, enable {enabled} more");
    assert!(listed <= 3, "{listed}: {:?}", forge.log());
    assert!(enabled <= 3, "{enabled}: {:?}", forge.log());

    // Enabling without listing first costs the same.
    let forge = budget_forge().await;
    let reader = github_reader(&forge);
    addonctl::loader::load(&reader, &AddonRef::latest("addon-007"))
        .await
        .unwrap();
    assert!(forge.requests() <= 3, "{:?}", forge.log());
}

// ---------------------------------------------------------------- Gitee

#[tokio::test]
async fn gitee_reader_passes_the_conformance_suite() {
    let forge = Forge::fixture().await;
    let reader = gitee_reader(&forge);
    conformance::run(&reader, &fixture_registry()).await;
    assert_eq!(forge.requests(), 2, "{:?}", forge.log());
    assert_eq!(reader.request_count(), 2);
}

#[tokio::test]
async fn gitee_token_is_a_query_parameter_and_a_wrong_one_does_not_leak() {
    let forge = Forge::fixture().await;
    forge.require_token("gitee-right");
    let mut options = gitee(&forge, "addons");
    options.token = Some("gitee-right".into());
    options.git_ref = Some("main".into());
    let reader = GiteeReader::new(options, "gitee").unwrap();
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);
    assert!(
        forge.log()[0].contains("access_token=gitee-right"),
        "{:?}",
        forge.log()
    );

    let mut options = gitee(&forge, "addons");
    options.token = Some("gitee-wrong-secret".into());
    let reader = GiteeReader::new(options, "gitee").unwrap();
    conformance::expect_unauthorized(&reader, "gitee-wrong-secret").await;
}

#[tokio::test]
async fn gitee_rate_limits_and_server_errors_are_reported() {
    let forge = Forge::fixture().await;
    forge.fail(Fault::TooManyRequests { retry_after: 3600 });
    let reader = gitee_reader(&forge);
    conformance::expect_rate_limited(&reader).await;

    let forge = Forge::fixture().await;
    forge.fail(Fault::Status(500));
    let reader = gitee_reader(&forge);
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert_eq!(forge.requests(), 3);

    let forge = Forge::fixture().await;
    let mut options = gitee(&forge, "addons");
    options.repo = "missing".into();
    let err = GiteeReader::new(options, "gitee")
        .unwrap()
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("acme/missing"), "{err}");
}

#[tokio::test]
async fn gitee_archive_over_the_size_cap_falls_back_to_the_tree_and_raw_files() {
    let forge = Forge::fixture().await;
    forge.require_token("gitee-token");
    let mut options = gitee(&forge, "addons");
    options.max_archive_bytes = 100;
    options.token = Some("gitee-token".into());
    let reader = GiteeReader::new(options, "gitee").unwrap();
    conformance::run(&reader, &fixture_registry()).await;
    let log = forge.log();
    assert!(
        log.iter()
            .any(|l| l.contains("/git/trees/main?recursive=1")),
        "{log:?}"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("/raw/addons/full/README.md?ref=main")),
        "{log:?}"
    );

    let forge = Forge::fixture().await;
    forge.truncate_trees();
    let mut options = gitee(&forge, "addons");
    options.max_archive_bytes = 100;
    let err = GiteeReader::new(options, "gitee")
        .unwrap()
        .list_addons()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
}

#[tokio::test]
async fn gitee_lists_90_addons_and_enables_one_within_the_request_budget() {
    let forge = budget_forge().await;
    let reader = gitee_reader(&forge);
    let (listed, enabled) = list_then_enable(&reader, || forge.requests()).await;
    eprintln!("gitee: list {listed} requests, enable {enabled} more");
    assert!(listed <= 3 && enabled <= 3, "{:?}", forge.log());
}

// ---------------------------------------------------------------- GitLab

#[tokio::test]
async fn gitlab_reader_passes_the_conformance_suite_in_a_subgroup_on_the_default_branch() {
    let files = files_from_dir(&fixture_registry(), "addons");
    let mut repo = Repo::new("group/sub", "addons", BTreeMap::new());
    repo.default_branch = "trunk".into();
    repo.refs = BTreeMap::from([("trunk".to_owned(), files)]);
    let forge = Forge::start(repo).await;
    let reader = GitlabReader::new(gitlab(&forge, "group/sub/addons", "addons"), "gl").unwrap();
    conformance::run(&reader, &fixture_registry()).await;
    let log = forge.log();
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0], "GET /api/v4/projects/group%2Fsub%2Faddons");
    assert!(
        log[1].contains("archive.tar.gz?sha=trunk&path=addons"),
        "{log:?}"
    );
}

#[tokio::test]
async fn gitlab_browser_url_with_a_ref_skips_the_project_lookup() {
    let forge = Forge::start(
        Repo::new("group/sub", "addons", BTreeMap::new())
            .with_ref("v1.0.0", files_from_dir(&fixture_registry(), "addons")),
    )
    .await;
    let url = format!("{}/group/sub/addons/-/tree/v1.0.0/addons", forge.url);
    let mut options = GitlabOptions::from_url("gl", &url).unwrap();
    options.http = fast_http();
    let reader = GitlabReader::new(options, "gl").unwrap();
    conformance::run(&reader, &fixture_registry()).await;
    assert_eq!(forge.requests(), 1, "{:?}", forge.log());
}

#[tokio::test]
async fn gitlab_private_token_is_a_header_and_a_wrong_one_does_not_leak() {
    let forge = Forge::start(Repo::new(
        "group",
        "addons",
        files_from_dir(&fixture_registry(), "addons"),
    ))
    .await;
    forge.require_token("glpat-right");
    let mut options = gitlab(&forge, "group/addons", "addons");
    options.token = Some("glpat-right".into());
    let reader = GitlabReader::new(options, "gl").unwrap();
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);
    assert!(forge.log().iter().all(|l| !l.contains("glpat")));

    let mut options = gitlab(&forge, "group/addons", "addons");
    options.token = Some("glpat-wrong-secret".into());
    let reader = GitlabReader::new(options, "gl").unwrap();
    conformance::expect_unauthorized(&reader, "glpat-wrong-secret").await;
}

#[tokio::test]
async fn gitlab_failures_map_to_their_meaning() {
    let forge = Forge::fixture().await;
    forge.fail(Fault::TooManyRequests { retry_after: 3600 });
    let reader = gitlab_reader(&forge);
    conformance::expect_rate_limited(&reader).await;

    let forge = Forge::fixture().await;
    forge.fail(Fault::Status(503));
    let reader = gitlab_reader(&forge);
    assert!(matches!(
        reader.list_addons().await,
        Err(Error::Backend { .. })
    ));

    let forge = Forge::fixture().await;
    let reader = GitlabReader::new(gitlab(&forge, "acme/missing", "addons"), "gl").unwrap();
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("project `acme/missing`"), "{err}");

    let forge = Forge::fixture().await;
    forge.fail(Fault::TruncateArchives);
    let reader = gitlab_reader(&forge);
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::InvalidContent { .. }), "{err}");
}

#[tokio::test]
async fn gitlab_hanging_server_is_bounded_by_the_timeout() {
    let forge = Forge::fixture().await;
    forge.fail(Fault::Hang);
    let mut options = gitlab(&forge, "acme/addons", "addons");
    options.http.timeout = Duration::from_secs(1);
    options.http.retries = 1;
    let reader = GitlabReader::new(options, "gl").unwrap();
    let started = Instant::now();
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn gitlab_lists_90_addons_and_enables_one_within_the_request_budget() {
    let forge = budget_forge().await;
    let reader = gitlab_reader(&forge);
    let (listed, enabled) = list_then_enable(&reader, || forge.requests()).await;
    eprintln!("gitlab: list {listed} requests, enable {enabled} more");
    assert!(listed <= 3 && enabled <= 3, "{:?}", forge.log());
}

// ---------------------------------------------------------------- Disk cache across runs

/// The budget fixture with `addon-042`'s ConfigMap changed (a push).
fn pushed_files() -> BTreeMap<String, Vec<u8>> {
    let mut files = many_addons(BUDGET_ADDONS, "addons");
    files.insert(
        "addons/addon-042/resources/configmap.yaml".to_owned(),
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed\n".to_vec(),
    );
    files
}

/// The requests of four runs, each a new reader listing the budget registry and enabling
/// `addon-042` with the same disk cache: the first run, a second one, one after a push to the
/// default branch, and one with `--refresh`. Checks that the run after the push sees it.
async fn cost_of_four_runs<R: AsyncReader>(
    forge: &Forge,
    open: impl Fn(CacheOptions) -> R,
) -> [u64; 4] {
    let (_guard, cache) = fresh_cache();
    let mut costs = [0; 4];
    for (run, cost) in costs.iter_mut().enumerate() {
        if run == 2 {
            forge.push("main", pushed_files());
        }
        let options = CacheOptions {
            refresh: run == 3,
            ..cache.clone()
        };
        let reader = open(options);
        forge.reset_count();
        let (listed, enabled) = list_then_enable(&reader, || forge.requests()).await;
        *cost = listed + enabled;
        let configmap = reader
            .read_file(&AddonRef::latest("addon-042"), "resources/configmap.yaml")
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&configmap).contains("name: pushed"),
            run >= 2,
            "run {run}: {:?}",
            forge.log()
        );
    }
    costs
}

#[tokio::test]
async fn github_second_run_costs_one_conditional_commit_lookup() {
    let forge = budget_forge().await;
    let costs = cost_of_four_runs(&forge, |cache| cached_github_reader(&forge, cache)).await;
    // Commit lookup, tarball at that commit and its redirect; then the lookup alone.
    assert_eq!(costs, [3, 1, 3, 3]);

    // The unchanged second run is answered `304 Not Modified` (free of GitHub's rate limit).
    let (_guard, cache) = fresh_cache();
    for _ in 0..2 {
        forge.reset_count();
        cached_github_reader(&forge, cache.clone())
            .list_addons()
            .await
            .unwrap();
    }
    assert_eq!(forge.log(), ["GET /repos/acme/addons/commits/HEAD"]);
}

#[tokio::test]
async fn gitee_second_run_costs_one_commit_lookup() {
    let forge = budget_forge().await;
    let costs = cost_of_four_runs(&forge, |cache| cached_gitee_reader(&forge, cache)).await;
    assert_eq!(costs, [3, 1, 3, 3]);
    assert!(
        forge.log()[0].contains("/commits?per_page=1"),
        "{:?}",
        forge.log()
    );
}

#[tokio::test]
async fn gitlab_second_run_costs_one_commit_lookup() {
    let forge = budget_forge().await;
    let costs = cost_of_four_runs(&forge, |cache| cached_gitlab_reader(&forge, cache)).await;
    // The commit lookup names the default branch's commit too: no project lookup.
    assert_eq!(costs, [2, 1, 2, 2]);
}

#[tokio::test]
async fn a_ref_that_names_no_commit_is_not_found_with_the_disk_cache() {
    let forge = Forge::fixture().await;
    let (_guard, cache) = fresh_cache();
    let mut options = github(&forge, "addons");
    options.git_ref = Some("no-such-branch".into());
    options.cache = cache.clone();
    let err = GithubReader::new(options, "gh")
        .unwrap()
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let mut options = gitlab(&forge, "acme/addons", "addons");
    options.git_ref = Some("no-such-branch".into());
    options.cache = cache.clone();
    let err = GitlabReader::new(options, "gl")
        .unwrap()
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let mut options = gitee(&forge, "addons");
    options.git_ref = Some("no-such-branch".into());
    options.cache = cache;
    let err = GiteeReader::new(options, "gitee")
        .unwrap()
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
}

#[tokio::test]
async fn a_corrupt_cached_archive_is_downloaded_again() {
    let forge = budget_forge().await;
    let (guard, cache) = fresh_cache();
    let open = || cached_gitlab_reader(&forge, cache.clone());
    assert_eq!(open().list_addons().await.unwrap().len(), BUDGET_ADDONS);
    let mut archives = 0;
    for entry in walk(guard.path()) {
        if entry.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n.starts_with("archive-") && n.ends_with(".tar.gz")
        }) {
            std::fs::write(&entry, b"not an archive").unwrap();
            archives += 1;
        }
    }
    assert_eq!(archives, 1, "one archive, under its commit");
    forge.reset_count();
    assert_eq!(open().list_addons().await.unwrap().len(), BUDGET_ADDONS);
    assert_eq!(forge.requests(), 2, "{:?}", forge.log());
}

#[tokio::test]
async fn a_corrupt_cached_github_commit_is_dropped_not_revalidated() {
    let forge = budget_forge().await;
    let (guard, cache) = fresh_cache();
    let open = || cached_github_reader(&forge, cache.clone());
    assert_eq!(open().list_addons().await.unwrap().len(), BUDGET_ADDONS);
    let commits: Vec<_> = walk(guard.path())
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "commit"))
        .collect();
    assert_eq!(commits.len(), 1, "{:?}", walk(guard.path()));
    std::fs::write(&commits[0], b"<html>oops</html>").unwrap();
    // The cached answer is not sent as `If-None-Match` (GitHub would answer 304 to it).
    assert_eq!(open().list_addons().await.unwrap().len(), BUDGET_ADDONS);
    assert_eq!(
        std::fs::read(&commits[0]).unwrap().len(),
        40,
        "the good commit id is cached again"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn s3_second_run_costs_the_listing_only() {
    s3_support::upload_to_moto("budget-cache", &many_addons(BUDGET_ADDONS, "")).await;
    let server = s3_support::moto();
    let options = s3_support::options(server, "budget-cache", None);
    let (_guard, cache) = fresh_cache();
    let run = |cache: CacheOptions| {
        let (client, counter) = s3_support::client(&options, false);
        let reader =
            S3Reader::new(client, "budget-cache", "", "s3").with_cache(&cache, &server.url);
        (reader, counter)
    };
    let mut costs = Vec::new();
    for step in 0..4 {
        if step == 2 {
            s3_support::put_to_moto(
                "budget-cache",
                &BTreeMap::from([(
                    "addon-042/resources/configmap.yaml".to_owned(),
                    b"kind: ConfigMap\nmetadata:\n  name: pushed\n".to_vec(),
                )]),
            )
            .await;
        }
        let (reader, counter) = run(CacheOptions {
            refresh: step == 3,
            ..cache.clone()
        });
        let (listed, enabled) = list_then_enable(&reader, || counter.get()).await;
        costs.push(listed + enabled);
        let configmap = reader
            .read_file(&AddonRef::latest("addon-042"), "resources/configmap.yaml")
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&configmap).contains("pushed"),
            step >= 2
        );
    }
    let cold = 1 + BUDGET_ADDONS as u64 + 3;
    // Cold; the listing alone; the listing and the one changed object; cold again.
    assert_eq!(costs, [cold, 1, 2, cold]);
}

// ---------------------------------------------------------------- S3 / OSS

fn fixture_objects(prefix: &str) -> BTreeMap<String, Vec<u8>> {
    files_from_dir(&fixture_registry(), prefix)
}

#[tokio::test]
async fn s3_reader_on_moto_passes_the_conformance_suite_anonymously_path_style() {
    s3_support::upload_to_moto("conformance-path", &fixture_objects("addons")).await;
    let mut options = s3_support::options(s3_support::moto(), "conformance-path", None);
    options.prefix = "addons".into();
    let (client, counter) = s3_support::client(&options, false);
    let reader = S3Reader::new(client, "conformance-path", "addons", "s3");
    conformance::run(&reader, &fixture_registry()).await;
    assert!(counter.get() > 0);
}

#[tokio::test]
async fn s3_reader_on_moto_passes_the_conformance_suite_virtual_host_style() {
    s3_support::upload_to_moto("conformance-vhost", &fixture_objects("")).await;
    let server = s3_support::moto();
    let mut options = s3_support::options(server, "conformance-vhost", None);
    options.endpoint = format!("http://localhost:{}", server.port);
    options.path_style = false;
    let (client, _) = s3_support::client(&options, true);
    let reader = S3Reader::new(client, "conformance-vhost", "", "s3");
    conformance::run(&reader, &fixture_registry()).await;
}

#[tokio::test]
async fn s3_version_folders_are_versions() {
    let mut objects = BTreeMap::new();
    for version in ["1.0.0", "1.10.0", "1.2.0", "2.0.0-rc.1"] {
        objects.insert(
            format!("catalog/widget/{version}/metadata.yaml"),
            format!("name: widget\nversion: {version}\ndescription: Widget {version}\n")
                .into_bytes(),
        );
        objects.insert(
            format!("catalog/widget/{version}/resources/cm-{version}.yaml"),
            b"kind: ConfigMap\n".to_vec(),
        );
    }
    objects.insert(
        "catalog/plain/metadata.yaml".to_owned(),
        b"name: plain\nversion: 0.3.0\n".to_vec(),
    );
    s3_support::upload_to_moto("versioned", &objects).await;
    let options = s3_support::options(s3_support::moto(), "versioned", None);
    let (client, _) = s3_support::client(&options, false);
    let reader = S3Reader::new(client, "versioned", "catalog/", "s3");
    let listing = reader.list_addons().await.unwrap();
    assert_eq!(listing[0].name, "plain");
    assert_eq!(listing[1].name, "widget");
    assert_eq!(
        listing[1].versions,
        ["2.0.0-rc.1", "1.10.0", "1.2.0", "1.0.0"]
    );
    assert_eq!(listing[1].description.as_deref(), Some("Widget 2.0.0-rc.1"));

    // No version: the highest that is not a prerelease.
    let files = reader
        .list_files(&AddonRef::latest("widget"))
        .await
        .unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["metadata.yaml", "resources/cm-1.10.0.yaml"]);
    let old = AddonRef {
        name: "widget".into(),
        version: Some("v1.2.0".into()),
    };
    let text = reader.read_file(&old, "metadata.yaml").await.unwrap();
    assert!(String::from_utf8(text).unwrap().contains("version: 1.2.0"));
    let missing = AddonRef {
        name: "widget".into(),
        version: Some("3.0.0".into()),
    };
    let err = reader.list_files(&missing).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("available: `2.0.0-rc.1`, `1.10.0`"),
        "{err}"
    );
}

#[tokio::test]
async fn s3_listing_has_no_thousand_key_limit() {
    let mut objects = fixture_objects("");
    for i in 0..1_050 {
        objects.insert(format!("minimal/data/file-{i:04}.txt"), vec![b'x'; 3]);
    }
    s3_support::upload_to_moto("many-keys", &objects).await;
    let options = s3_support::options(s3_support::moto(), "many-keys", None);
    let (client, counter) = s3_support::client(&options, false);
    let reader = S3Reader::new(client, "many-keys", "", "s3");
    let files = reader
        .list_files(&AddonRef::latest("minimal"))
        .await
        .unwrap();
    assert_eq!(files.len(), 1_051);
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);
    // Two listing pages (1,000 keys each at most) and three metadata files.
    assert_eq!(counter.get(), 2 + 3);
}

#[tokio::test]
async fn s3_reader_on_s3s_fs_passes_the_conformance_suite_signed() {
    s3_support::write_to_s3s("signed", &fixture_objects("registry"));
    let server = s3_support::s3s_fs();
    let mut options = s3_support::options(
        server,
        "signed",
        Some((s3_support::ACCESS_KEY, s3_support::SECRET_KEY)),
    );
    options.prefix = "registry".into();
    let reader = S3Reader::from_options(&options, "s3");
    conformance::run(&reader, &fixture_registry()).await;

    // Virtual-host style, signed.
    options.endpoint = format!("http://localhost:{}", server.port);
    options.path_style = false;
    let (client, _) = s3_support::client(&options, true);
    let reader = S3Reader::new(client, "signed", "registry", "s3");
    conformance::run(&reader, &fixture_registry()).await;
}

#[tokio::test]
async fn s3_store_listing_no_etags_is_cached_by_modification_time_and_size() {
    // s3s-fs lists no `ETag`s, as some S3-compatible stores do.
    s3_support::write_to_s3s("cached", &many_addons(BUDGET_ADDONS, ""));
    let server = s3_support::s3s_fs();
    let options = s3_support::options(
        server,
        "cached",
        Some((s3_support::ACCESS_KEY, s3_support::SECRET_KEY)),
    );
    let (_guard, cache) = fresh_cache();
    let mut costs = Vec::new();
    for _ in 0..2 {
        let (client, counter) = s3_support::client(&options, false);
        let reader = S3Reader::new(client, "cached", "", "s3").with_cache(&cache, &server.url);
        let (listed, enabled) = list_then_enable(&reader, || counter.get()).await;
        costs.push(listed + enabled);
    }
    assert_eq!(costs, [1 + BUDGET_ADDONS as u64 + 3, 1]);
}

#[tokio::test]
async fn s3_wrong_secret_or_no_credentials_are_unauthorized_without_leaking() {
    s3_support::write_to_s3s("private", &fixture_objects(""));
    let options = s3_support::options(
        s3_support::s3s_fs(),
        "private",
        Some((s3_support::ACCESS_KEY, "wrong-secret-value")),
    );
    let reader = S3Reader::from_options(&options, "s3");
    conformance::expect_unauthorized(&reader, "wrong-secret-value").await;
    let err = reader.list_addons().await.unwrap_err();
    assert!(err.to_string().contains("SignatureDoesNotMatch"), "{err}");

    let anonymous = S3Reader::from_options(
        &s3_support::options(s3_support::s3s_fs(), "private", None),
        "s3",
    );
    let err = anonymous.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Unauthorized { .. }), "{err}");
}

#[tokio::test]
async fn s3_missing_bucket_is_not_found() {
    let options = s3_support::options(s3_support::moto(), "no-such-bucket", None);
    let err = S3Reader::from_options(&options, "s3")
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("no-such-bucket"), "{err}");
}

#[tokio::test]
async fn oss_style_listing_without_namespace_paginates_and_is_not_signed() {
    let fake = OssFake::start("oss-bucket", fixture_objects("addons"), 5).await;
    let mut options = oss_options(&fake.url);
    options.prefix = "addons".into();
    let reader = S3Reader::from_options(&options, "oss");
    conformance::run(&reader, &fixture_registry()).await;
    assert_eq!(fake.signed_requests(), 0, "{:?}", fake.log());
    let pages = fake
        .log()
        .iter()
        .filter(|l| l.contains("list-type=2"))
        .count();
    assert!(pages >= 4, "{:?}", fake.log());
}

fn oss_options(url: &str) -> addonctl::source::s3::S3Options {
    let mut options = addonctl::source::s3::S3Options::new(url, "oss-bucket");
    options.path_style = true;
    options.region = "oss-cn-hangzhou".into();
    options
}

#[tokio::test]
async fn s3_hanging_server_is_bounded_by_the_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let mut options = oss_options(&url);
    options.request_timeout = Duration::from_secs(1);
    let started = Instant::now();
    let err = S3Reader::from_options(&options, "oss")
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    held.abort();
}

#[tokio::test]
async fn s3_lists_90_addons_and_enables_one() {
    s3_support::upload_to_moto("budget", &many_addons(BUDGET_ADDONS, "")).await;
    let options = s3_support::options(s3_support::moto(), "budget", None);
    let (client, counter) = s3_support::client(&options, false);
    let reader = S3Reader::new(client, "budget", "", "s3");
    let (listed, enabled) = list_then_enable(&reader, || counter.get()).await;
    eprintln!("s3: list {listed} requests, enable {enabled} more");
    // One listing page and one metadata file per addon; then the addon's other files.
    assert_eq!(listed, 1 + BUDGET_ADDONS as u64);
    assert_eq!(enabled, 3);
}
