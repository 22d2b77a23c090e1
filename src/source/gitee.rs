//! A registry in a Gitee repository (REST API v5), on the public service or a self-hosted one.
//!
//! Expected flow: the first question downloads the repository archive at the wanted ref
//! (`GET /repos/{owner}/{repo}/tarball?ref=`, answered with a redirect to the archive: one API
//! request, two HTTP requests); every listing and read of the run is answered from the files below
//! the registry path (see the `forge` module). With a disk cache, one
//! `GET /repos/{owner}/{repo}/commits?per_page=1[&sha={ref}]` names the commit first, the archive
//! is fetched at that commit and kept, and the next run whose ref has not moved costs that one
//! request.
//!
//! Guarantees: every HTTP status is checked (KubeVela's reader did not); the token travels as the
//! `access_token` query parameter the API expects and is redacted from every error and log line;
//! retries, timeouts and size caps are the shared [`http`](super::http) layer's.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use secrecy::ExposeSecret as _;

use crate::source::cache::DiskCache;
use crate::source::forge::{
    self, archive_over_http, encode, encode_path, forge_reader, Download, ForgeApi, ForgeCore,
    Snapshot, Tree,
};
use crate::source::http::HttpClient;
use crate::source::{Error, Result};

/// The largest repository archive downloaded (compressed), 64 MiB.
pub const MAX_ARCHIVE_BYTES: u64 = 64 * 1024 * 1024;

forge::api_forge_options! {
    /// Where a Gitee registry lives and how to reach it.
    pub struct GiteeOptions {
        /// The repository owner (user, organisation or enterprise path).
        pub owner: String,
        /// The repository path.
        pub repo: String,
    }
}

impl GiteeOptions {
    /// Reads a repository URL as users copy it from the browser:
    /// `https://<host>/<owner>/<repo>[.git]` or `https://<host>/<owner>/<repo>/tree/<ref>/<path>`;
    /// the API is then `https://<host>/api/v5`.
    pub fn from_url(registry: &str, url: &str) -> Result<Self> {
        let url = forge::repository_url(registry, url, "Gitee repository")?;
        let api = format!("{}://{}/api/v5", url.scheme, url.host);
        let mut options = GiteeOptions::new(api, url.owner, url.repo);
        (options.git_ref, options.path) = (url.git_ref, url.path);
        Ok(options)
    }
}

/// Reads addons from a Gitee repository.
#[derive(Debug, Clone)]
pub struct GiteeReader {
    core: Arc<ForgeCore<Api>>,
}

/// Gitee's side of the reader.
#[derive(Debug)]
struct Api {
    client: HttpClient,
    options: GiteeOptions,
    /// The ref a tree listing was read at (files are then fetched at the same ref).
    tree_ref: std::sync::OnceLock<String>,
}

impl GiteeReader {
    /// A reader for the repository in `options`, under the registry name `registry`.
    pub fn new(options: GiteeOptions, registry: &str) -> Result<Self> {
        // The token is in the query; nothing else is a credential.
        let client = forge::api_client(registry, &options.http, &options.api_base, Vec::new())?;
        Ok(Self::with_client(client, options))
    }

    /// A reader over an HTTP client the caller built (its registry name is used).
    pub fn with_client(client: HttpClient, options: GiteeOptions) -> Self {
        let place = forge::Place::new(
            &options.cache,
            format_args!(
                "gitee {} {}/{}",
                options.api_base, options.owner, options.repo
            ),
            options.git_ref.as_deref(),
            &options.path,
        );
        let api = Api {
            client,
            options,
            tree_ref: std::sync::OnceLock::new(),
        };
        GiteeReader {
            core: Arc::new(ForgeCore::new(api, place)),
        }
    }
}

forge_reader!(GiteeReader, api: GiteeOptions);

/// `GET /repos/{owner}/{repo}`, the part used here.
#[derive(Debug, serde::Deserialize)]
struct Repository {
    default_branch: Option<String>,
}

/// One item of `GET /repos/{owner}/{repo}/commits`, the part used here.
#[derive(Debug, serde::Deserialize)]
struct Commit {
    sha: String,
}

impl Api {
    fn repo_url(&self) -> String {
        let o = &self.options;
        format!(
            "{}/repos/{}/{}",
            o.api_base.trim_end_matches('/'),
            encode(&o.owner),
            encode(&o.repo)
        )
    }

    /// `url` with the query parameters and the access token appended.
    fn with_query(&self, url: String, parameters: &[(&str, &str)]) -> String {
        let mut query: Vec<String> = parameters
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        if let Some(token) = &self.options.token {
            query.push(format!("access_token={}", encode(token.expose_secret())));
        }
        if query.is_empty() {
            url
        } else {
            format!("{url}?{}", query.join("&"))
        }
    }

    fn what(&self) -> String {
        let o = &self.options;
        format!(
            "repository `{}/{}`{}",
            o.owner,
            o.repo,
            o.git_ref
                .as_ref()
                .map(|r| format!(" at ref `{r}`"))
                .unwrap_or_default()
        )
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str, what: &str) -> Result<T> {
        let not_found = |registry| Error::NotFound {
            registry,
            what: self.what(),
        };
        forge::get_json(&self.client, url, 64 * 1024 * 1024, not_found, what).await
    }

    async fn tree_snapshot(&self, commit: Option<&str>) -> Result<Snapshot> {
        let o = &self.options;
        let git_ref = if let Some(git_ref) = commit.or(o.git_ref.as_deref()) {
            git_ref.to_owned()
        } else {
            let url = self.with_query(self.repo_url(), &[]);
            let repository: Repository = self.get_json(&url, "the repository").await?;
            repository
                .default_branch
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| "master".to_owned())
        };
        let _ = self.tree_ref.set(git_ref.clone());
        let url = self.with_query(
            format!("{}/git/trees/{}", self.repo_url(), encode(&git_ref)),
            &[("recursive", "1")],
        );
        let tree: Tree = self.get_json(&url, "the tree").await?;
        let repository = format!("{}/{}", o.owner, o.repo);
        let files = tree.files(self.client.registry(), &repository, "Gitee")?;
        Snapshot::from_tree(self.client.registry(), &o.path, files, |path| {
            self.fetch_at(path, git_ref.clone())
        })
        .await
    }

    /// One file by its path in the repository (`GET /repos/{o}/{r}/raw/{path}?ref=`).
    async fn fetch_at(&self, path: String, git_ref: String) -> Result<Vec<u8>> {
        let url = self.with_query(
            format!("{}/raw/{}", self.repo_url(), encode_path(&path)),
            &[("ref", git_ref.as_str())],
        );
        match self
            .client
            .get_limited(&url, &[], crate::source::MAX_FILE_SIZE)
            .await
        {
            Ok(response) => Ok(response.body),
            Err(Error::NotFound { registry, .. }) => Err(Error::NotFound {
                registry,
                what: format!("file `{path}` of {}", self.what()),
            }),
            Err(e) => Err(e),
        }
    }
}

#[async_trait]
impl ForgeApi for Api {
    fn registry(&self) -> &str {
        self.client.registry()
    }

    fn describe(&self) -> String {
        self.what()
    }

    /// `GET /repos/{o}/{r}/commits?per_page=1[&sha={ref}]`: the newest commit of the ref (of the
    /// default branch without one), in one request.
    async fn resolve_commit(&self, _cache: &DiskCache) -> Result<String> {
        let mut parameters = vec![("per_page", "1")];
        if let Some(git_ref) = &self.options.git_ref {
            parameters.push(("sha", git_ref.as_str()));
        }
        let url = self.with_query(format!("{}/commits", self.repo_url()), &parameters);
        let commits: Vec<Commit> = self.get_json(&url, "the commits").await?;
        forge::newest_commit(
            commits.into_iter().map(|c| c.sha),
            self.client.registry(),
            &self.what(),
        )
    }

    /// The archive first; when it is over the size cap, a tree listing plus the metadata files
    /// (the rest is fetched file by file when read).
    async fn download(&self, commit: Option<&str>) -> Result<Download> {
        let o = &self.options;
        let parameters: Vec<(&str, &str)> = commit
            .or(o.git_ref.as_deref())
            .map(|r| ("ref", r))
            .into_iter()
            .collect();
        let url = self.with_query(format!("{}/tarball", self.repo_url()), &parameters);
        let archive = archive_over_http(
            &self.client,
            &url,
            &[("accept", "application/json")],
            o.max_archive_bytes,
            &self.what(),
        )
        .await;
        match archive {
            Ok(bytes) => Ok(Download::Archive(bytes)),
            Err(Error::TooLarge { size, limit, .. }) => {
                tracing::info!(
                    registry = %self.client.registry(),
                    "the archive of `{}/{}` is over {limit} bytes ({size}); reading the tree instead",
                    o.owner,
                    o.repo
                );
                Ok(Download::Tree(self.tree_snapshot(commit).await?))
            }
            Err(e) => Err(e),
        }
    }

    async fn fetch(&self, path: String, commit: Option<&str>) -> Result<Vec<u8>> {
        let git_ref = commit
            .map(str::to_owned)
            .or_else(|| self.tree_ref.get().cloned())
            .unwrap_or_default();
        self.fetch_at(path, git_ref).await
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        forge::write_location(
            f,
            format_args!("Gitee repository `{}/{}`", o.owner, o.repo),
            o.git_ref.as_deref(),
            &o.path,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_url_gives_the_api_the_ref_and_the_path() {
        let o =
            GiteeOptions::from_url("r", "https://code.example.test/o/r/tree/dev/addons").unwrap();
        assert_eq!(o.api_base, "https://code.example.test/api/v5");
        assert_eq!(
            (
                o.owner.as_str(),
                o.repo.as_str(),
                o.git_ref.as_deref(),
                o.path.as_str()
            ),
            ("o", "r", Some("dev"), "addons")
        );
    }

    #[test]
    fn the_token_is_not_in_debug_output() {
        let mut o = GiteeOptions::new("http://127.0.0.1:1/api/v5", "o", "r");
        o.token = Some("gitee-secret".into());
        assert!(!format!("{o:?}").contains("gitee-secret"));
    }
}
