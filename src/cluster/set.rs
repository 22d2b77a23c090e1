//! Managed clusters, stored as KubeVela stores them: an Opaque Secret named after the cluster in
//! the system namespace, labelled `cluster.core.oam.dev/cluster-credential-type` =
//! `ServiceAccountToken` (data `endpoint`, `ca.crt`, `token`) or `X509Certificate` (data
//! `endpoint`, `ca.crt`, `tls.crt`, `tls.key`). The Secret's other labels are the cluster's labels,
//! which `clusterLabelSelector` matches. `local` is the control plane itself.
//!
//! Credentials never leave this module except inside the clients it builds: listings carry the
//! endpoint, the credential type and the labels only.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use kube::config::{AuthInfo, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};
use serde::Serialize;
use serde_json::{json, Value};

use super::{Cluster, Error, Result};

/// The label holding a cluster Secret's credential type.
pub const LABEL_CREDENTIAL_TYPE: &str = "cluster.core.oam.dev/cluster-credential-type";
/// The control plane's cluster name.
pub use crate::model::wire::LOCAL_CLUSTER as LOCAL;

/// How a managed cluster authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CredentialType {
    /// A bearer token.
    ServiceAccountToken,
    /// A client certificate and key.
    X509Certificate,
}

impl CredentialType {
    fn label(self) -> &'static str {
        match self {
            CredentialType::ServiceAccountToken => "ServiceAccountToken",
            CredentialType::X509Certificate => "X509Certificate",
        }
    }
}

/// A managed cluster as listed (no credentials).
#[derive(Debug, Clone, Serialize)]
pub struct ClusterInfo {
    /// Its name.
    pub name: String,
    /// Its API server address.
    pub endpoint: String,
    /// How it authenticates.
    pub credential_type: CredentialType,
    /// Its labels (for `clusterLabelSelector`).
    pub labels: BTreeMap<String, String>,
}

/// Credentials read from a kubeconfig, ready to be stored.
#[derive(Clone)]
pub struct ClusterCredentials {
    endpoint: String,
    ca: Option<Vec<u8>>,
    token: Option<String>,
    client_certificate: Option<Vec<u8>>,
    client_key: Option<Vec<u8>>,
}

impl std::fmt::Debug for ClusterCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterCredentials")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
}

fn read_file(path: &str, what: &str) -> Result<Vec<u8>> {
    fs_err::read(path).map_err(|e| Error::Config(format!("cannot read the {what} file: {e}")))
}

impl ClusterCredentials {
    /// A digest of everything the connection uses, to tell whether a client made earlier in
    /// this process still fits (the credentials themselves are not kept a second time).
    pub fn fingerprint(&self) -> [u8; 32] {
        use sha2::Digest as _;
        let mut digest = sha2::Sha256::new();
        let mut part = |bytes: Option<&[u8]>| {
            let bytes = bytes.unwrap_or_default();
            digest.update((bytes.len() as u64).to_le_bytes());
            digest.update(bytes);
        };
        part(Some(self.endpoint.as_bytes()));
        part(self.ca.as_deref());
        part(self.token.as_ref().map(String::as_bytes));
        part(self.client_certificate.as_deref());
        part(self.client_key.as_deref());
        digest.finalize().into()
    }

    /// Reads the server, CA and credentials of a kubeconfig context (the current one by default).
    pub fn from_kubeconfig(path: &Path, context: Option<&str>) -> Result<Self> {
        let config = Kubeconfig::read_from(path)
            .map_err(|e| Error::Config(format!("cannot read `{}`: {e}", path.display())))?;
        let context_name = context
            .map(str::to_owned)
            .or_else(|| config.current_context.clone())
            .ok_or_else(|| {
                Error::Config(format!(
                    "`{}` has no current context; pass `--context`",
                    path.display()
                ))
            })?;
        let named = config
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .and_then(|c| c.context.as_ref())
            .ok_or_else(|| {
                Error::Config(format!(
                    "`{}` has no context `{context_name}`",
                    path.display()
                ))
            })?;
        let cluster = config
            .clusters
            .iter()
            .find(|c| c.name == named.cluster)
            .and_then(|c| c.cluster.as_ref())
            .ok_or_else(|| {
                Error::Config(format!(
                    "context `{context_name}` names a missing cluster `{}`",
                    named.cluster
                ))
            })?;
        let endpoint = cluster
            .server
            .clone()
            .ok_or_else(|| Error::Config(format!("cluster `{}` has no server", named.cluster)))?;
        let ca =
            match (
                &cluster.certificate_authority_data,
                &cluster.certificate_authority,
            ) {
                (Some(data), _) => Some(unb64(data).ok_or_else(|| {
                    Error::Config("certificate-authority-data is not base64".into())
                })?),
                (None, Some(file)) => Some(read_file(file, "certificate authority")?),
                (None, None) => None,
            };
        let user = named
            .user
            .as_ref()
            .and_then(|u| config.auth_infos.iter().find(|a| &a.name == u))
            .and_then(|a| a.auth_info.as_ref())
            .ok_or_else(|| {
                Error::Config(format!("context `{context_name}` has no user credentials"))
            })?;
        let token = match (&user.token, &user.token_file) {
            (Some(t), _) => Some(secrecy::ExposeSecret::expose_secret(t).to_owned()),
            (None, Some(file)) => Some(
                String::from_utf8_lossy(&read_file(file, "token")?)
                    .trim()
                    .to_owned(),
            ),
            (None, None) => None,
        };
        let client_certificate = match (&user.client_certificate_data, &user.client_certificate) {
            (Some(data), _) => unb64(data),
            (None, Some(file)) => Some(read_file(file, "client certificate")?),
            (None, None) => None,
        };
        let client_key = match (&user.client_key_data, &user.client_key) {
            (Some(data), _) => unb64(secrecy::ExposeSecret::expose_secret(data)),
            (None, Some(file)) => Some(read_file(file, "client key")?),
            (None, None) => None,
        };
        if token.is_none() && (client_certificate.is_none() || client_key.is_none()) {
            return Err(Error::Config(format!(
                "context `{context_name}` uses neither a token nor a client certificate and key; addonctl stores only those"
            )));
        }
        Ok(ClusterCredentials {
            endpoint,
            ca,
            token,
            client_certificate,
            client_key,
        })
    }

    /// The credential type these credentials are stored as.
    pub fn credential_type(&self) -> CredentialType {
        if self.token.is_some() {
            CredentialType::ServiceAccountToken
        } else {
            CredentialType::X509Certificate
        }
    }

    /// The API server URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The cluster Secret KubeVela reads.
    pub fn to_secret(
        &self,
        name: &str,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Value {
        let mut all_labels: BTreeMap<String, String> = labels.clone();
        all_labels.insert(
            LABEL_CREDENTIAL_TYPE.to_owned(),
            self.credential_type().label().to_owned(),
        );
        let mut data = serde_json::Map::new();
        data.insert("endpoint".into(), json!(b64(self.endpoint.as_bytes())));
        if let Some(ca) = &self.ca {
            data.insert("ca.crt".into(), json!(b64(ca)));
        }
        match self.credential_type() {
            CredentialType::ServiceAccountToken => {
                data.insert(
                    "token".into(),
                    json!(b64(self.token.as_deref().unwrap_or_default().as_bytes())),
                );
            }
            CredentialType::X509Certificate => {
                data.insert(
                    "tls.crt".into(),
                    json!(b64(self.client_certificate.as_deref().unwrap_or_default())),
                );
                data.insert(
                    "tls.key".into(),
                    json!(b64(self.client_key.as_deref().unwrap_or_default())),
                );
            }
        }
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "labels": all_labels},
            "type": "Opaque",
            "data": data,
        })
    }

    /// Reads a cluster Secret (KubeVela's or ours).
    pub fn from_secret(secret: &Value) -> Result<(ClusterInfo, Self)> {
        let name = secret
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let field = |key: &str| -> Option<Vec<u8>> {
            secret
                .pointer(&format!("/data/{}", key.replace('/', "~1")))
                .and_then(Value::as_str)
                .and_then(unb64)
        };
        let bad = |what: &str| Error::Config(format!("cluster Secret `{name}`: {what}"));
        let endpoint = field("endpoint")
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| bad("has no readable `endpoint`"))?;
        let labels: BTreeMap<String, String> = secret
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| k.as_str() != LABEL_CREDENTIAL_TYPE)
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let credential_type = match secret
            .pointer(&format!(
                "/metadata/labels/{}",
                LABEL_CREDENTIAL_TYPE.replace('/', "~1")
            ))
            .and_then(Value::as_str)
        {
            Some("X509Certificate") => CredentialType::X509Certificate,
            Some("ServiceAccountToken") => CredentialType::ServiceAccountToken,
            other => return Err(bad(&format!("unsupported credential type {other:?}"))),
        };
        let credentials = ClusterCredentials {
            endpoint: endpoint.clone(),
            ca: field("ca.crt"),
            token: field("token").and_then(|b| String::from_utf8(b).ok()),
            client_certificate: field("tls.crt"),
            client_key: field("tls.key"),
        };
        if credential_type == CredentialType::ServiceAccountToken && credentials.token.is_none() {
            return Err(bad("has no `token`"));
        }
        if credential_type == CredentialType::X509Certificate
            && (credentials.client_certificate.is_none() || credentials.client_key.is_none())
        {
            return Err(bad("has no `tls.crt`/`tls.key`"));
        }
        Ok((
            ClusterInfo {
                name,
                endpoint,
                credential_type,
                labels,
            },
            credentials,
        ))
    }

    /// A client for the cluster.
    pub async fn connect(&self, name: &str, timeout: Duration) -> Result<Cluster> {
        let kubeconfig = Kubeconfig {
            clusters: vec![NamedCluster {
                name: name.to_owned(),
                cluster: Some(kube::config::Cluster {
                    server: Some(self.endpoint.clone()),
                    certificate_authority_data: self.ca.as_deref().map(b64),
                    ..kube::config::Cluster::default()
                }),
            }],
            auth_infos: vec![NamedAuthInfo {
                name: name.to_owned(),
                auth_info: Some(AuthInfo {
                    token: self.token.clone().map(Into::into),
                    client_certificate_data: self.client_certificate.as_deref().map(b64),
                    client_key_data: self.client_key.as_deref().map(|k| b64(k).into()),
                    ..AuthInfo::default()
                }),
            }],
            contexts: vec![NamedContext {
                name: name.to_owned(),
                context: Some(kube::config::Context {
                    cluster: name.to_owned(),
                    user: Some(name.to_owned()),
                    ..kube::config::Context::default()
                }),
            }],
            current_context: Some(name.to_owned()),
            ..Kubeconfig::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| Error::Config(format!("cluster `{name}`: {e}")))?;
        super::bound(&mut config, timeout);
        Cluster::from_config(name, config)
    }
}
