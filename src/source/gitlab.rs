//! A registry in a GitLab project (REST API v4), on the public service or a self-hosted one,
//! in a group or any depth of subgroups.
//!
//! Expected flow: without a ref, `GET /projects/{id}` names the project's default branch (KubeVela
//! assumed `master`); then one `GET /projects/{id}/repository/archive.tar.gz?sha={ref}&path={path}`
//! fetches just the registry directory. With a disk cache, one
//! `GET /projects/{id}/repository/commits?per_page=1[&ref_name={ref}]` names the commit instead
//! (the default branch's without a ref), the archive is fetched at that commit and kept, and the
//! next run whose ref has not moved costs that one request. Every listing and read of the run is answered from that
//! archive (see the `forge` module): two requests for any number of addons, where a
//! `repository/tree` walk would need a page per 100 entries plus one file per addon, and where
//! KubeVela's reader silently dropped entries past the first page.
//!
//! Guarantees: every HTTP status is checked; the token travels in the `PRIVATE-TOKEN` header to
//! the API origin only and never into an error; retries, timeouts and size caps are the shared
//! [`http`](super::http) layer's.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use secrecy::ExposeSecret as _;

use crate::source::cache::DiskCache;
use crate::source::forge::{
    self, archive_over_http, encode, forge_reader, ref_and_path, Download, ForgeApi, ForgeCore,
};
use crate::source::http::HttpClient;
use crate::source::{Error, Result};

/// The largest archive downloaded (compressed), 64 MiB.
pub const MAX_ARCHIVE_BYTES: u64 = 64 * 1024 * 1024;

forge::api_forge_options! {
    /// Where a GitLab registry lives and how to reach it.
    pub struct GitlabOptions {
        /// The project: its full path (`group/subgroup/project`) or its numeric id.
        pub project: String,
    }
}

impl GitlabOptions {
    /// Reads a project URL as users copy it from the browser:
    /// `https://<host>/<group>[/<subgroup>…]/<project>[.git]` or
    /// `https://<host>/<group>/…/<project>/-/tree/<ref>/<path>`; the API is then
    /// `https://<host>/api/v4`.
    pub fn from_url(registry: &str, url: &str) -> Result<Self> {
        let (url, invalid) = forge::browser_url(
            registry,
            url,
            "GitLab project",
            "https://<host>/<group>/<project>[/-/tree/<ref>/<path>]",
        )?;
        let segments = &url.segments;
        let (project, tail) = match segments.iter().position(|s| *s == "-") {
            Some(i) => (&segments[..i], &segments[i + 1..]),
            None => (&segments[..], &[][..]),
        };
        if project.len() < 2 {
            return Err(invalid("no group and project"));
        }
        let project = project.join("/");
        let project = project.strip_suffix(".git").unwrap_or(&project);
        let mut options =
            GitlabOptions::new(format!("{}://{}/api/v4", url.scheme, url.host), project);
        let ref_and_path = ref_and_path(tail)
            .ok_or_else(|| invalid("expected `/-/tree/<ref>/<path>` after the project"))?;
        (options.git_ref, options.path) = ref_and_path;
        Ok(options)
    }
}

/// Reads addons from a GitLab project.
#[derive(Debug, Clone)]
pub struct GitlabReader {
    core: Arc<ForgeCore<Api>>,
}

/// GitLab's side of the reader.
#[derive(Debug)]
struct Api {
    client: HttpClient,
    options: GitlabOptions,
}

/// The part of `GET /projects/:id` used here.
#[derive(Debug, serde::Deserialize)]
struct Project {
    default_branch: Option<String>,
}

/// The part of one `GET /projects/:id/repository/commits` item used here.
#[derive(Debug, serde::Deserialize)]
struct Commit {
    id: String,
}

impl GitlabReader {
    /// A reader for the project in `options`, under the registry name `registry`. The token is
    /// sent as `PRIVATE-TOKEN` to the API's origin only.
    pub fn new(options: GitlabOptions, registry: &str) -> Result<Self> {
        let headers = options
            .token
            .iter()
            .map(|token| ("PRIVATE-TOKEN".to_owned(), token.expose_secret().to_owned()))
            .collect();
        let client = forge::api_client(registry, &options.http, &options.api_base, headers)?;
        Ok(Self::with_client(client, options))
    }

    /// A reader over an HTTP client the caller built (its registry name and credentials are
    /// used; `options.token` is then only descriptive).
    pub fn with_client(client: HttpClient, options: GitlabOptions) -> Self {
        let place = forge::Place::new(
            &options.cache,
            format_args!("gitlab {} {}", options.api_base, options.project),
            options.git_ref.as_deref(),
            &options.path,
        );
        GitlabReader {
            core: Arc::new(ForgeCore::new(Api { client, options }, place)),
        }
    }
}

forge_reader!(GitlabReader, api: GitlabOptions);

impl Api {
    fn project_url(&self) -> String {
        format!(
            "{}/projects/{}",
            self.options.api_base.trim_end_matches('/'),
            encode(&self.options.project)
        )
    }

    /// The project as a not-found answer names it.
    fn project_not_found(&self, registry: String) -> Error {
        Error::NotFound {
            registry,
            what: format!(
                "project `{}`{}",
                self.options.project,
                if self.options.token.is_some() {
                    ""
                } else {
                    " (a private project needs a token)"
                }
            ),
        }
    }

    /// `GET url` as JSON, a 404 naming the project.
    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str, what: &str) -> Result<T> {
        let what = format!("{what} of project `{}`", self.options.project);
        let not_found = |registry| self.project_not_found(registry);
        forge::get_json(&self.client, url, 1024 * 1024, not_found, &what).await
    }

    /// The ref to read: the one given, else the project's default branch.
    async fn git_ref(&self) -> Result<String> {
        if let Some(git_ref) = &self.options.git_ref {
            return Ok(git_ref.clone());
        }
        let project: Project = self
            .get_json(&self.project_url(), "the description")
            .await?;
        project
            .default_branch
            .filter(|b| !b.is_empty())
            .ok_or_else(|| Error::NotFound {
                registry: self.client.registry().to_owned(),
                what: format!(
                    "a default branch of project `{}` (is the repository empty?)",
                    self.options.project
                ),
            })
    }
}

#[async_trait]
impl ForgeApi for Api {
    fn registry(&self) -> &str {
        self.client.registry()
    }

    fn describe(&self) -> String {
        let o = &self.options;
        match &o.git_ref {
            Some(git_ref) => format!("project `{}` at ref `{git_ref}`", o.project),
            None => format!("project `{}`", o.project),
        }
    }

    /// `GET /projects/:id/repository/commits?per_page=1[&ref_name=]`: the newest commit of the
    /// ref (of the default branch without one), in one request.
    async fn resolve_commit(&self, _cache: &DiskCache) -> Result<String> {
        let mut url = format!("{}/repository/commits?per_page=1", self.project_url());
        if let Some(git_ref) = &self.options.git_ref {
            url.push_str("&ref_name=");
            url.push_str(&encode(git_ref));
        }
        let commits: Vec<Commit> = self.get_json(&url, "the commits").await?;
        forge::newest_commit(
            commits.into_iter().map(|c| c.id),
            self.client.registry(),
            &self.describe(),
        )
    }

    async fn download(&self, commit: Option<&str>) -> Result<Download> {
        let git_ref = match commit {
            Some(commit) => commit.to_owned(),
            None => self.git_ref().await?,
        };
        let o = &self.options;
        let mut url = format!(
            "{}/repository/archive.tar.gz?sha={}",
            self.project_url(),
            encode(&git_ref)
        );
        let path = o.path.trim_matches('/');
        if !path.is_empty() {
            url.push_str("&path=");
            url.push_str(&encode(path));
        }
        let what = format!("project `{}` at ref `{git_ref}`", o.project);
        archive_over_http(&self.client, &url, &[], o.max_archive_bytes, &what)
            .await
            .map(Download::Archive)
    }

    async fn fetch(&self, path: String, _commit: Option<&str>) -> Result<Vec<u8>> {
        // Snapshots are always taken from an archive here, which holds every file.
        Err(Error::NotFound {
            registry: self.registry().to_owned(),
            what: format!("file `{path}`"),
        })
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        forge::write_location(
            f,
            format_args!("GitLab project `{}`", o.project),
            o.git_ref.as_deref(),
            &o.path,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_url_with_subgroups_names_the_project_ref_and_path() {
        let o = GitlabOptions::from_url(
            "r",
            "https://code.example.test/group/sub/project/-/tree/release/addons",
        )
        .unwrap();
        assert_eq!(o.api_base, "https://code.example.test/api/v4");
        assert_eq!(
            (o.project.as_str(), o.git_ref.as_deref(), o.path.as_str()),
            ("group/sub/project", Some("release"), "addons")
        );
    }

    #[test]
    fn a_plain_project_url_uses_the_default_branch() {
        let o = GitlabOptions::from_url("r", "https://code.example.test/a/b/c.git").unwrap();
        assert_eq!((o.project.as_str(), o.git_ref), ("a/b/c", None));
    }

    #[test]
    fn the_token_is_not_in_debug_output() {
        let mut o = GitlabOptions::new("http://127.0.0.1:1/api/v4", "g/p");
        o.token = Some("glpat-secret".into());
        assert!(!format!("{o:?}").contains("glpat-secret"));
    }
}
