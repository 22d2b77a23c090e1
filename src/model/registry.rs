//! The registry data model: what a registry is ([`RegistrySpec`], [`RegistryType`]), its
//! [`Credentials`], and the JSON shape KubeVela keeps registries in (ConfigMap
//! `vela-addon-registry`, key `registries`). Pure data: no I/O.
//!
//! Each entry of KubeVela's map carries KubeVela's sub-object (`helm`, `git` (GitHub), `gitee`,
//! `gitlab`, `oss`) so that `vela addon registry list` sees the registry, plus an `addonctl`
//! object with the whole [`RegistrySpec`], which KubeVela ignores. Entries `vela` added (no
//! `addonctl` object) are read from the KubeVela sub-objects.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::model::secret::{secret, ExposeSecret as _, SecretString};

/// The ConfigMap KubeVela keeps its registries in.
pub const CONFIG_MAP: &str = "vela-addon-registry";
/// Its key holding the JSON map.
pub const CONFIG_MAP_KEY: &str = "registries";
/// The prefix of the Secrets holding registry credentials.
pub const SECRET_PREFIX: &str = "addon-registry-";
/// The option (in [`RegistrySpec::options`]) naming a git registry's ssh private key file: its
/// path only; the key stays in that file.
pub const SSH_KEY_OPTION: &str = "sshKey";
/// The option naming the known_hosts file a git registry's ssh host key is checked against.
pub const KNOWN_HOSTS_OPTION: &str = "knownHosts";
/// The name of the registry embedded in the binary (this repository's `addons/`).
pub const BUILTIN_REGISTRY: &str = "builtin";
/// The registry name of addons read from a local directory.
pub const LOCAL_REGISTRY: &str = "local";
/// Names that cannot be used for a stored registry.
pub const RESERVED_NAMES: &[&str] = &[BUILTIN_REGISTRY, LOCAL_REGISTRY];

/// A registry definition that cannot be used: a bad name or type. The user's to fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRegistry(pub String);

type Result<T, E = InvalidRegistry> = std::result::Result<T, E>;

/// The kind of a registry.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum RegistryType {
    /// A Helm chart repository (`index.yaml` + archives).
    #[default]
    Helm,
    /// A GitHub repository (through the GitHub API).
    Github,
    /// A Gitee repository (REST v5).
    Gitee,
    /// A GitLab project (REST v4).
    Gitlab,
    /// An S3 bucket.
    S3,
    /// An Alibaba Cloud OSS bucket.
    Oss,
    /// Any git repository (cloned).
    Git,
    /// A local directory.
    Local,
    /// An OCI registry of Helm charts (`oci://host/prefix`; stored as KubeVela's `helm` entry).
    Oci,
}

impl RegistryType {
    /// Every type, in the order help texts list them.
    pub const ALL: [RegistryType; 9] = [
        RegistryType::Helm,
        RegistryType::Oci,
        RegistryType::Github,
        RegistryType::Gitee,
        RegistryType::Gitlab,
        RegistryType::S3,
        RegistryType::Oss,
        RegistryType::Git,
        RegistryType::Local,
    ];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            RegistryType::Helm => "helm",
            RegistryType::Github => "github",
            RegistryType::Gitee => "gitee",
            RegistryType::Gitlab => "gitlab",
            RegistryType::S3 => "s3",
            RegistryType::Oss => "oss",
            RegistryType::Git => "git",
            RegistryType::Local => "local",
            RegistryType::Oci => "oci",
        }
    }
}

impl fmt::Display for RegistryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RegistryType {
    type Err = InvalidRegistry;

    fn from_str(s: &str) -> Result<Self> {
        RegistryType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                InvalidRegistry(format!(
                    "unknown registry type `{s}`; use one of {}",
                    RegistryType::ALL
                        .iter()
                        .map(|t| format!("`{t}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

/// One registry, without its credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RegistrySpec {
    /// Its name (lowercase letters, digits and `-`).
    #[serde(default)]
    pub name: String,
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: RegistryType,
    /// Where it is: a URL (a directory for `local`).
    pub endpoint: String,
    /// The directory of the addons inside the repository or bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A branch or tag (git, GitHub, Gitee, GitLab).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The bucket (S3, OSS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    /// Search order: higher first (default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// Order of addition (set by the store).
    #[serde(default)]
    pub order: u64,
    /// Accept any TLS certificate (test registries only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_tls: bool,
    /// Extra trusted CA certificates (PEM text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    /// The Secret holding the credentials, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    /// Type-specific settings (for example `region`, `pathStyle` for S3).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if signature"
)]
fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// A registry's credentials. Not serialisable (the store writes them into the Secret or the
/// local file itself); `Debug` names the keys set, never their values.
#[derive(Clone, Default)]
pub struct Credentials {
    /// A token (bearer for Helm, API token for the forges, password for git).
    pub token: Option<SecretString>,
    /// A user name (the access key id for S3 and OSS).
    pub username: Option<String>,
    /// A password (the secret access key for S3 and OSS).
    pub password: Option<SecretString>,
    /// The passphrase of a git registry's ssh key (Secret key `sshPassphrase`).
    pub ssh_passphrase: Option<SecretString>,
    /// A Docker config (`{"auths": {…}}`) read from the `kubernetes.io/dockerconfigjson`
    /// Secret an OCI registry's `dockerConfigSecret` option names; never stored by addonctl.
    pub docker_config: Option<SecretString>,
    /// The public keys the verification policy keeps in Secrets (`k8s://NAMESPACE/NAME`), read
    /// by the store: by reference, the PEM text or why it could not be read.
    pub policy_keys: crate::source::oci::SecretKeys,
}

impl Credentials {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.token.is_none()
            && self.username.is_none()
            && self.password.is_none()
            && self.ssh_passphrase.is_none()
    }

    /// The names of the keys set (`token`, `username`, `password`), for display.
    pub fn keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.token.is_some() {
            keys.push("token");
        }
        if self.username.is_some() {
            keys.push("username");
        }
        if self.password.is_some() {
            keys.push("password");
        }
        if self.ssh_passphrase.is_some() {
            keys.push("sshPassphrase");
        }
        keys
    }
}

/// Credentials as a file holds them: the `credentials` section of the local registry file, the
/// keys of a registry definition. Only the store and the definitions reader use it, at the
/// file's edge; everywhere else credentials are [`Credentials`].
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct StoredCredentials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    password: Option<String>,
    #[serde(
        default,
        rename = "sshPassphrase",
        skip_serializing_if = "Option::is_none"
    )]
    ssh_passphrase: Option<String>,
}

impl fmt::Debug for StoredCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Credentials::from(self.clone()).fmt(f)
    }
}

impl From<StoredCredentials> for Credentials {
    fn from(stored: StoredCredentials) -> Self {
        Credentials {
            token: stored.token.and_then(secret),
            username: stored.username.filter(|u| !u.is_empty()),
            password: stored.password.and_then(secret),
            ssh_passphrase: stored.ssh_passphrase.and_then(secret),
            docker_config: None,
            policy_keys: crate::source::oci::SecretKeys::new(),
        }
    }
}

impl From<&Credentials> for StoredCredentials {
    fn from(credentials: &Credentials) -> Self {
        let expose = |s: &SecretString| s.expose_secret().to_owned();
        StoredCredentials {
            token: credentials.token.as_ref().map(expose),
            username: credentials.username.clone(),
            password: credentials.password.as_ref().map(expose),
            ssh_passphrase: credentials.ssh_passphrase.as_ref().map(expose),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credentials({})", self.keys().join(", "))
    }
}

/// A stored registry with its credentials: what [`crate::source::open`] needs.
#[derive(Debug, Clone)]
pub struct Registry {
    /// The registry.
    pub spec: RegistrySpec,
    /// Its credentials (empty when none).
    pub credentials: Credentials,
}

/// Checks a registry name.
pub fn check_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !valid {
        return Err(InvalidRegistry(format!(
            "`{name}` is not a valid registry name: use at most 63 lowercase letters, digits and \
             `-`, starting and ending with a letter or digit"
        )));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(InvalidRegistry(format!(
            "`{name}` is reserved for addonctl's own registry; choose another name"
        )));
    }
    Ok(())
}

/// Moves credentials embedded in the endpoint (`https://user:pass@host/…`) into `credentials`
/// (a lone user name is a token for GitHub, Gitee and GitLab) and returns the clean endpoint.
pub fn strip_endpoint_credentials(
    kind: RegistryType,
    endpoint: &str,
    credentials: &mut Credentials,
) -> String {
    let Ok(mut url) = reqwest::Url::parse(endpoint.trim()) else {
        return endpoint.trim().to_owned();
    };
    if url.username().is_empty() && url.password().is_none() {
        return endpoint.trim().to_owned();
    }
    let decode = |s: &str| {
        let mut bytes = Vec::new();
        let raw = s.as_bytes();
        let mut i = 0;
        while i < raw.len() {
            let hex = raw
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match (raw[i], hex) {
                (b'%', Some(byte)) => {
                    bytes.push(byte);
                    i += 3;
                }
                (b, _) => {
                    bytes.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let username = decode(url.username());
    let password = url.password().map(decode);
    if kind == RegistryType::Git && matches!(url.scheme(), "ssh" | "ssh+git" | "git+ssh") {
        // The user of an ssh URL says who to log in as: not a secret, and needed to connect.
        let Some(password) = password else {
            return endpoint.trim().to_owned();
        };
        if credentials.password.is_none() {
            credentials.password = secret(password);
        }
        let _ = url.set_password(None);
        return url.to_string();
    }
    match (password, kind) {
        (None, RegistryType::Github | RegistryType::Gitee | RegistryType::Gitlab) => {
            if credentials.token.is_none() {
                credentials.token = secret(username);
            }
        }
        (password, _) => {
            if !username.is_empty() {
                credentials.username.get_or_insert(username);
            }
            if let (None, Some(password)) = (&credentials.password, password) {
                credentials.password = secret(password);
            }
        }
    }
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let text = url.to_string();
    // Keep the user's trailing-slash choice.
    if !endpoint.trim().ends_with('/') && text.ends_with('/') && url.path() == "/" {
        text.trim_end_matches('/').to_owned()
    } else {
        text
    }
}

/// Sorts registries into search order: priority (highest first), order of addition, name.
pub fn sort(specs: &mut [RegistrySpec]) {
    specs.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.order.cmp(&b.order))
            .then_with(|| a.name.cmp(&b.name))
    });
}

// ---------------------------------------------------------------------------------------------
// KubeVela's JSON shape.

/// The entry written for one registry: KubeVela's sub-object plus ours.
pub(crate) fn to_kubevela(spec: &RegistrySpec) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(spec.name));
    let path = spec.path.clone().unwrap_or_default();
    let secret_ref = spec.secret_ref.clone();
    let with_secret = |mut object: Map<String, Value>| {
        if let Some(secret) = &secret_ref {
            object.insert("tokenSecretRef".into(), json!(secret));
        }
        Value::Object(object)
    };
    match spec.kind {
        RegistryType::Helm | RegistryType::Oci => {
            let mut helm = Map::new();
            helm.insert("url".into(), json!(spec.endpoint));
            if spec.insecure_skip_tls {
                helm.insert("insecureSkipTLS".into(), json!(true));
            }
            entry.insert("helm".into(), Value::Object(helm));
        }
        RegistryType::Github => {
            let mut git = Map::new();
            git.insert("url".into(), json!(spec.endpoint));
            git.insert("path".into(), json!(path));
            entry.insert("git".into(), with_secret(git));
        }
        RegistryType::Gitee => {
            let mut gitee = Map::new();
            gitee.insert("url".into(), json!(spec.endpoint));
            gitee.insert("path".into(), json!(path));
            entry.insert("gitee".into(), with_secret(gitee));
        }
        RegistryType::Gitlab => {
            let mut gitlab = Map::new();
            let (base, repo) = match reqwest::Url::parse(&spec.endpoint) {
                Ok(url) => (
                    url.origin().ascii_serialization(),
                    url.path()
                        .trim_matches('/')
                        .trim_end_matches(".git")
                        .to_owned(),
                ),
                Err(_) => (spec.endpoint.clone(), String::new()),
            };
            gitlab.insert("url".into(), json!(base));
            gitlab.insert("repo".into(), json!(repo));
            gitlab.insert("path".into(), json!(path));
            entry.insert("gitlab".into(), with_secret(gitlab));
        }
        RegistryType::Oss => {
            let mut oss = Map::new();
            oss.insert("end_point".into(), json!(spec.endpoint));
            oss.insert(
                "bucket".into(),
                json!(spec.bucket.clone().unwrap_or_default()),
            );
            oss.insert("path".into(), json!(path));
            entry.insert("oss".into(), Value::Object(oss));
        }
        RegistryType::S3 | RegistryType::Git | RegistryType::Local => {}
    }
    let mut ours = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Some(object) = ours.as_object_mut() {
        object.remove("name");
    }
    entry.insert("addonctl".into(), ours);
    Value::Object(entry)
}

/// Reads one entry of the map; inline credentials (as KubeVela may keep them) are returned apart.
pub(crate) fn from_kubevela(name: &str, entry: &Value) -> Option<(RegistrySpec, Credentials)> {
    let text = |object: &Value, key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let mut inline = Credentials::default();
    for object in ["helm", "git", "gitee", "gitlab"]
        .iter()
        .filter_map(|k| entry.get(*k))
    {
        inline.token = inline
            .token
            .or_else(|| text(object, "token").and_then(secret));
        inline.username = inline.username.or_else(|| text(object, "username"));
        inline.password = inline
            .password
            .or_else(|| text(object, "password").and_then(secret));
    }
    if let Some(ours) = entry.get("addonctl").filter(|v| v.is_object()) {
        let mut spec: RegistrySpec = serde_json::from_value(ours.clone()).ok()?;
        name.clone_into(&mut spec.name);
        return Some((spec, inline));
    }
    let mut spec = RegistrySpec {
        name: name.to_owned(),
        ..RegistrySpec::default()
    };
    if let Some(helm) = entry.get("helm") {
        spec.endpoint = text(helm, "url")?;
        spec.kind = if spec.endpoint.trim_start().starts_with("oci://") {
            RegistryType::Oci
        } else {
            RegistryType::Helm
        };
        spec.insecure_skip_tls = helm
            .get("insecureSkipTLS")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        spec.secret_ref = text(helm, "tokenSecretRef");
    } else if let Some((kind, object)) = [
        (RegistryType::Github, "git"),
        (RegistryType::Gitee, "gitee"),
        (RegistryType::Gitlab, "gitlab"),
    ]
    .into_iter()
    .find_map(|(kind, key)| entry.get(key).map(|o| (kind, o)))
    {
        spec.kind = kind;
        spec.endpoint = text(object, "url")?;
        if kind == RegistryType::Gitlab {
            if let Some(repo) = text(object, "repo") {
                if !spec.endpoint.trim_end_matches('/').ends_with(&repo) {
                    spec.endpoint = format!("{}/{repo}", spec.endpoint.trim_end_matches('/'));
                }
            }
        }
        spec.path = text(object, "path");
        spec.secret_ref = text(object, "tokenSecretRef");
    } else if let Some(oss) = entry.get("oss") {
        spec.kind = RegistryType::Oss;
        spec.endpoint = text(oss, "end_point").or_else(|| text(oss, "endpoint"))?;
        spec.bucket = text(oss, "bucket");
        spec.path = text(oss, "path");
    } else {
        return None;
    }
    Some((spec, inline))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::secret::ExposeSecret;

    fn exposed(secret: Option<&SecretString>) -> Option<&str> {
        secret.map(ExposeSecret::expose_secret)
    }

    fn spec(name: &str, kind: RegistryType, endpoint: &str) -> RegistrySpec {
        RegistrySpec {
            name: name.into(),
            kind,
            endpoint: endpoint.into(),
            ..RegistrySpec::default()
        }
    }

    #[test]
    fn endpoint_credentials_are_moved_out_of_the_url() {
        let mut credentials = Credentials::default();
        let clean = strip_endpoint_credentials(
            RegistryType::Helm,
            "https://me:p%40ss@charts.example.invalid/sub/",
            &mut credentials,
        );
        assert_eq!(clean, "https://charts.example.invalid/sub/");
        assert_eq!(credentials.username.as_deref(), Some("me"));
        assert_eq!(exposed(credentials.password.as_ref()), Some("p@ss"));

        let mut credentials = Credentials::default();
        let clean = strip_endpoint_credentials(
            RegistryType::Github,
            "https://ghp_abc@github.example.invalid/o/r",
            &mut credentials,
        );
        assert_eq!(clean, "https://github.example.invalid/o/r");
        assert_eq!(exposed(credentials.token.as_ref()), Some("ghp_abc"));
        assert!(!format!("{credentials:?}").contains("ghp_abc"));
    }

    #[test]
    fn specs_round_trip_through_kubevelas_shape() {
        let mut github = spec(
            "g",
            RegistryType::Github,
            "https://github.example.invalid/o/r",
        );
        github.path = Some("addons".into());
        github.secret_ref = Some("addon-registry-g".into());
        github.priority = 3;
        github.order = 2;
        let entry = to_kubevela(&github);
        assert_eq!(entry["git"]["url"], "https://github.example.invalid/o/r");
        assert_eq!(entry["git"]["tokenSecretRef"], "addon-registry-g");
        assert_eq!(from_kubevela("g", &entry).unwrap().0, github);

        // What `vela addon registry add` writes (no `addonctl` object), inline credentials apart.
        let vela = json!({"name": "kv", "helm": {"url": "https://h.example.invalid", "username": "u", "password": "p"}});
        let (parsed, inline) = from_kubevela("kv", &vela).unwrap();
        assert_eq!(parsed.kind, RegistryType::Helm);
        assert_eq!(parsed.endpoint, "https://h.example.invalid");
        assert_eq!(exposed(inline.password.as_ref()), Some("p"));
        let gitlab = json!({"name": "gl", "gitlab": {"url": "https://gl.example.invalid", "repo": "grp/sub/proj", "path": "addons"}});
        let (parsed, _) = from_kubevela("gl", &gitlab).unwrap();
        assert_eq!(parsed.endpoint, "https://gl.example.invalid/grp/sub/proj");
        let written = to_kubevela(&parsed);
        assert_eq!(written["gitlab"]["repo"], "grp/sub/proj");
        let oss = json!({"name": "o", "oss": {"end_point": "https://oss.example.invalid", "bucket": "b"}});
        assert_eq!(
            from_kubevela("o", &oss).unwrap().0.bucket.as_deref(),
            Some("b")
        );
        assert!(from_kubevela("x", &json!({"name": "x"})).is_none());
    }

    #[test]
    fn oci_registries_are_kept_as_kubevelas_helm_entries() {
        let oci = spec("o", RegistryType::Oci, "oci://127.0.0.1:5000/addons");
        let entry = to_kubevela(&oci);
        assert_eq!(entry["helm"]["url"], "oci://127.0.0.1:5000/addons");
        assert_eq!(from_kubevela("o", &entry).unwrap().0, oci);
        // What `vela` writes: a helm entry with an `oci://` URL.
        let vela = json!({"name": "o", "helm": {"url": "oci://registry.example.invalid/addons"}});
        assert_eq!(from_kubevela("o", &vela).unwrap().0.kind, RegistryType::Oci);
        assert_eq!("oci".parse::<RegistryType>().unwrap(), RegistryType::Oci);
    }

    #[test]
    fn search_order_is_priority_then_order_of_addition() {
        let mut specs = vec![
            RegistrySpec {
                order: 1,
                ..spec("a", RegistryType::Helm, "x")
            },
            RegistrySpec {
                order: 3,
                priority: 5,
                ..spec("b", RegistryType::Helm, "x")
            },
            RegistrySpec {
                order: 2,
                ..spec("c", RegistryType::Helm, "x")
            },
            RegistrySpec {
                order: 0,
                ..spec("d", RegistryType::Helm, "x")
            },
        ];
        sort(&mut specs);
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b", "d", "a", "c"]);
    }

    #[test]
    fn names_are_checked() {
        for ok in ["a", "kubevela", "my-repo-2"] {
            check_name(ok).unwrap();
        }
        for bad in [
            "",
            "Upper",
            "-a",
            "a-",
            "a_b",
            "builtin",
            "local",
            &"x".repeat(64),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
