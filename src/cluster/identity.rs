//! Acting for someone else: who a bearer token belongs to (a TokenReview), and a client of the
//! same API server that impersonates them (`Impersonate-User`, `Impersonate-Group`,
//! `Impersonate-Extra-*`), so that the API server's RBAC decides what they may do (authorizers
//! and webhooks that read `extra`, such as scopes, included) and its audit log names them.

use std::collections::BTreeMap;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::{Api, PostParams};

use super::{Cluster, Error, Result};

/// Who a token belongs to, as the API server says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    /// The user name.
    pub user: String,
    /// Their groups.
    pub groups: Vec<String>,
    /// What else the authenticator says of them (scopes, the node or pod of a token, …).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Cluster {
    /// Asks the API server who `token` belongs to (a TokenReview, which needs `create` on
    /// `tokenreviews`); `None` when it does not authenticate.
    pub async fn review_token(&self, token: &str) -> Result<Option<Reviewed>> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| self.map_error(e, "TokenReview"))?;
        let Some(status) = answer.status else {
            return Ok(None);
        };
        if status.authenticated != Some(true) {
            return Ok(None);
        }
        let Some(user) = status.user else {
            return Ok(None);
        };
        let Some(name) = user.username else {
            return Ok(None);
        };
        Ok(Some(Reviewed {
            user: name,
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default().into_iter().collect(),
        }))
    }

    /// A client of the same API server, with the same credentials, impersonating `user` in
    /// `groups` with `extra` (the credentials need `impersonate` on users, groups and
    /// `userextras/<key>`). Its connections, discovery and rate bucket are its own.
    pub fn impersonating(
        &self,
        user: &str,
        groups: &[String],
        extra: &BTreeMap<String, Vec<String>>,
    ) -> Result<Cluster> {
        let Some(config) = &self.config else {
            return Err(Error::Config(format!(
                "cluster `{}` was not built from a configuration: it cannot act for `{user}`",
                self.name
            )));
        };
        let mut config = kube::Config::clone(config);
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups = Some(groups.to_vec());
        let headers = extra_headers(extra)?;
        let cluster = Cluster::from_config_headers(&self.name, config, self.timeout, headers)?;
        cluster.limits.set(self.limits.get());
        Ok(cluster)
    }

    /// Whether this client acts for someone else.
    pub fn impersonates(&self) -> Option<&str> {
        self.config
            .as_ref()
            .and_then(|c| c.auth_info.impersonate.as_deref())
    }
}

/// The `Impersonate-Extra-<key>` headers of `extra`: one per value, the key percent-encoded
/// where a header name cannot hold it (as the API server decodes it).
fn extra_headers(
    extra: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<(http::HeaderName, http::HeaderValue)>> {
    let mut headers = Vec::new();
    for (key, values) in extra {
        let name = format!("impersonate-extra-{}", encode_key(key));
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| Error::Config(format!("the extra key `{key}` cannot be sent: {e}")))?;
        for value in values {
            let value = http::HeaderValue::from_str(value).map_err(|e| {
                Error::Config(format!(
                    "a value of the extra key `{key}` cannot be sent: {e}"
                ))
            })?;
            headers.push((name.clone(), value));
        }
    }
    Ok(headers)
}

/// `key` with every byte a header name's token cannot hold percent-encoded (RFC 7230 `tchar`,
/// `%` itself included), as Kubernetes' clients send it.
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for byte in key.to_lowercase().bytes() {
        let plain = byte.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&byte);
        if plain {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_percent_encoded_and_every_value_sent() {
        assert_eq!(
            encode_key("scopes.example.com/team"),
            "scopes.example.com%2Fteam"
        );
        assert_eq!(encode_key("a%b c"), "a%25b%20c");
        let extra = BTreeMap::from([(
            "authentication.kubernetes.io/pod-name".to_owned(),
            vec!["web-1".to_owned(), "web-2".to_owned()],
        )]);
        let headers = extra_headers(&extra).unwrap();
        assert_eq!(headers.len(), 2);
        assert_eq!(
            headers[0].0.as_str(),
            "impersonate-extra-authentication.kubernetes.io%2fpod-name"
        );
        assert_eq!(headers[1].1, "web-2");
        let bad = BTreeMap::from([("k".to_owned(), vec!["line\nbreak".to_owned()])]);
        assert!(extra_headers(&bad).is_err());
    }
}
