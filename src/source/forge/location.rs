//! Where a forge registry lives: the repository URLs users copy from the browser, and the
//! options a stored registry sets on every forge reader ([`options_of`]).

use secrecy::SecretString;

use crate::model::registry::{Credentials, RegistrySpec};
use crate::source::cache::CacheOptions;
use crate::source::{Error, OpenOptions, Result};

/// The options of a forge reader that a stored registry sets ([`options_of`]).
pub(crate) trait StoredOptions: Sized {
    /// The options of the repository at `url` (as users copy it from the browser), for the
    /// registry `registry`.
    fn from_url(registry: &str, url: &str) -> Result<Self>;
    /// Sets the ref the registry names.
    fn set_ref(&mut self, git_ref: String);
    /// The registry path, the token and the disk cache, to be set.
    fn stored(&mut self) -> (&mut String, &mut Option<SecretString>, &mut CacheOptions);
}

/// Implements [`StoredOptions`] for a forge's options (fields `git_ref`, `path`, `token`,
/// `cache`, and an inherent `from_url`); the ref is set as given unless a setter is named.
macro_rules! stored_options {
    ($options:ty) => {
        crate::source::forge::stored_options!($options, |options: &mut $options, git_ref| {
            options.git_ref = Some(git_ref)
        });
    };
    ($options:ty, $set_ref:expr) => {
        impl crate::source::forge::StoredOptions for $options {
            fn from_url(registry: &str, url: &str) -> crate::source::Result<Self> {
                <$options>::from_url(registry, url)
            }

            fn set_ref(&mut self, git_ref: String) {
                ($set_ref)(self, git_ref);
            }

            fn stored(
                &mut self,
            ) -> (
                &mut String,
                &mut Option<secrecy::SecretString>,
                &mut crate::source::cache::CacheOptions,
            ) {
                (&mut self.path, &mut self.token, &mut self.cache)
            }
        }
    };
}
pub(crate) use stored_options;

/// Declares the options of a forge read through the shared HTTP layer (Gitee, GitLab): its API
/// base, the repository as the forge names it (the `String` fields given), and what every such
/// forge has: the ref, the registry path, the token, the HTTP settings, the archive cap
/// (`MAX_ARCHIVE_BYTES` of the forge's module) and the disk cache. It adds `new` (the API base
/// and the repository: default branch, whole repository, anonymous) and [`StoredOptions`].
macro_rules! api_forge_options {
    (
        $(#[$doc:meta])*
        pub struct $options:ident {
            $( $(#[$field_doc:meta])* pub $field:ident: String, )+
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $options {
            /// The API base URL (`https://<host>/api/v5` for Gitee, `https://<host>/api/v4` for
            /// GitLab).
            pub api_base: String,
            $( $(#[$field_doc])* pub $field: String, )+
            /// A branch, tag or commit; `None` for the repository's default branch.
            pub git_ref: Option<String>,
            /// The directory holding the registry (`""` for the whole repository).
            pub path: String,
            /// An access token; `None` for anonymous access.
            pub token: Option<secrecy::SecretString>,
            /// Timeouts, retries, concurrency and TLS of the HTTP layer.
            pub http: crate::source::http::HttpOptions,
            /// The largest archive downloaded.
            pub max_archive_bytes: u64,
            /// The disk cache of archives across runs; off unless set (a stored registry gets
            /// the run's cache settings).
            pub cache: crate::source::cache::CacheOptions,
        }

        impl $options {
            /// Options for the repository named after `api_base`: default branch, whole
            /// repository, anonymous.
            pub fn new(api_base: impl Into<String>, $($field: impl Into<String>),+) -> Self {
                $options {
                    api_base: api_base.into(),
                    $($field: $field.into(),)+
                    git_ref: None,
                    path: String::new(),
                    token: None,
                    http: crate::source::http::HttpOptions::default(),
                    max_archive_bytes: MAX_ARCHIVE_BYTES,
                    cache: crate::source::cache::CacheOptions::off(),
                }
            }
        }

        crate::source::forge::stored_options!($options);
    };
}
pub(crate) use api_forge_options;

/// The options of a stored forge registry: its URL, ref and path, its token, and the run's cache.
pub(crate) fn options_of<O: StoredOptions>(
    spec: &RegistrySpec,
    credentials: &Credentials,
    options: &OpenOptions,
) -> Result<O> {
    let mut forge = O::from_url(&spec.name, &spec.endpoint)?;
    if let Some(reference) = &spec.reference {
        forge.set_ref(reference.clone());
    }
    let (path, token, cache) = forge.stored();
    if let Some(spec_path) = &spec.path {
        path.clone_from(spec_path);
    }
    token.clone_from(&credentials.token);
    cache.clone_from(&options.cache);
    Ok(forge)
}

/// The error of a URL that is not a `what` (`GitHub repository`, …) URL, for a reason, saying
/// what is `expected`; the URL is redacted.
pub(crate) fn invalid_url<'a>(
    registry: &'a str,
    url: &'a str,
    what: &'a str,
    expected: &'a str,
) -> impl Fn(&str) -> Error + 'a {
    move |why: &str| Error::InvalidContent {
        registry: registry.to_owned(),
        message: format!(
            "`{}` is not a {what} URL ({why}); expected `{expected}`",
            crate::source::http::redact(url)
        ),
    }
}

/// Reads a URL users copied from the browser; `what` (`GitLab project`, …) and `expected` (its
/// form) make the error, and the returned function makes the error of a later problem.
pub(crate) fn browser_url<'a>(
    registry: &'a str,
    url: &'a str,
    what: &'a str,
    expected: &'a str,
) -> Result<(BrowserUrl<'a>, impl Fn(&str) -> Error + 'a)> {
    let invalid = invalid_url(registry, url, what, expected);
    Ok((BrowserUrl::parse(url, &invalid)?, invalid))
}

/// A repository URL of the form `https://<host>/<owner>/<repo>[.git][/tree/<ref>/<path>]`, read.
pub(crate) struct RepositoryUrl<'a> {
    /// `http` or `https`.
    pub scheme: &'a str,
    /// The host (and port).
    pub host: &'a str,
    /// The owner.
    pub owner: &'a str,
    /// The repository, without `.git`.
    pub repo: &'a str,
    /// The ref after `/tree/`, if any.
    pub git_ref: Option<String>,
    /// The path after the ref (`""` for the whole repository).
    pub path: String,
}

/// Reads the URL of a `what` (`GitHub repository`, …) as users copy it from the browser.
pub(crate) fn repository_url<'a>(
    registry: &'a str,
    url: &'a str,
    what: &'a str,
) -> Result<RepositoryUrl<'a>> {
    let expected = "https://<host>/<owner>/<repo>[/tree/<ref>/<path>]";
    let (url, invalid) = browser_url(registry, url, what, expected)?;
    let [owner, repo, tail @ ..] = url.segments.as_slice() else {
        return Err(invalid("no owner and repository"));
    };
    let (git_ref, path) = ref_and_path(tail)
        .ok_or_else(|| invalid("expected `/tree/<ref>/<path>` after the repository"))?;
    Ok(RepositoryUrl {
        scheme: url.scheme,
        host: url.host,
        owner,
        repo: repo.strip_suffix(".git").unwrap_or(repo),
        git_ref,
        path,
    })
}

/// A repository URL as users copy it from the browser, split.
pub(crate) struct BrowserUrl<'a> {
    /// `http` or `https`.
    pub scheme: &'a str,
    /// The host (and port), without user info.
    pub host: &'a str,
    /// The non-empty path segments, without query and fragment.
    pub segments: Vec<&'a str>,
}

impl<'a> BrowserUrl<'a> {
    /// Splits `url`; `invalid` makes the error for a reason (`no scheme`, …).
    pub fn parse(url: &'a str, invalid: &dyn Fn(&str) -> Error) -> Result<Self> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| invalid("no scheme"))?;
        if !matches!(scheme, "http" | "https") {
            return Err(invalid("not http or https"));
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or(authority);
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        let path = path.split(['?', '#']).next().unwrap_or_default();
        Ok(BrowserUrl {
            scheme,
            host,
            segments: path.split('/').filter(|s| !s.is_empty()).collect(),
        })
    }
}

/// What follows the repository in a browser URL: nothing (`(None, "")`), or
/// `tree|blob/<ref>/<path>`; `None` for anything else.
pub(crate) fn ref_and_path(tail: &[&str]) -> Option<(Option<String>, String)> {
    match tail {
        [] => Some((None, String::new())),
        ["tree" | "blob", git_ref, path @ ..] => {
            Some((Some((*git_ref).to_owned()), path.join("/")))
        }
        _ => None,
    }
}
