//! Where an ssh remote of a git registry is.

/// Where an ssh remote is: from `ssh://[user@]host[:port]/path` (also `ssh+git://`,
/// `git+ssh://`) or scp-like `[user@]host:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// The user the URL names.
    pub user: Option<String>,
    /// The host (without brackets).
    pub host: String,
    /// The port (22 unless the URL gives one).
    pub port: u16,
}

impl SshTarget {
    /// The remote of `url` when it is reached over ssh.
    pub fn from_url(url: &str) -> Option<SshTarget> {
        let url = url.trim();
        if let Some((scheme, _)) = url.split_once("://") {
            if !matches!(
                scheme.to_ascii_lowercase().as_str(),
                "ssh" | "ssh+git" | "git+ssh"
            ) {
                return None;
            }
            let parsed = reqwest::Url::parse(url).ok()?;
            let host = parsed
                .host_str()?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            if host.is_empty() {
                return None;
            }
            let user = Some(parsed.username().to_owned()).filter(|u| !u.is_empty());
            return Some(SshTarget {
                user,
                host,
                port: parsed.port().unwrap_or(22),
            });
        }
        // scp-like: `[user@]host:path`, where no `/` comes before the `:` (else it is a path).
        if url.starts_with('/') || url.starts_with('.') {
            return None;
        }
        let (authority, _path) = if let Some(rest) = url
            .split_once('@')
            .map(|(_, r)| r)
            .filter(|r| r.starts_with('['))
            .or_else(|| url.starts_with('[').then_some(url))
        {
            // `[host]:path` (IPv6)
            let end = rest.find("]:")?;
            let prefix_len = url.len() - rest.len();
            (&url[..=prefix_len + end], &rest[end + 2..])
        } else {
            let colon = url.find(':')?;
            if url[..colon].contains('/') {
                return None;
            }
            (&url[..colon], &url[colon + 1..])
        };
        let (user, host) = match authority.rsplit_once('@') {
            Some((user, host)) => (Some(user.to_owned()).filter(|u| !u.is_empty()), host),
            None => (None, authority),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || host.contains('/') {
            return None;
        }
        Some(SshTarget {
            user,
            host: host.to_owned(),
            port: 22,
        })
    }

    /// The host as known_hosts names it: `host`, or `[host]:port` for another port than 22.
    pub fn known_hosts_name(&self) -> String {
        if self.port == 22 {
            self.host.clone()
        } else {
            format!("[{}]:{}", self.host, self.port)
        }
    }
}
