//! Acting for someone else: who a bearer token belongs to (a TokenReview), and a client of the
//! same API server that impersonates them (`Impersonate-User`, `Impersonate-Group`), so that
//! the API server's RBAC decides what they may do and its audit log names them.

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
        let Some(user) = status
            .user
            .and_then(|u| u.username.map(|name| (name, u.groups)))
        else {
            return Ok(None);
        };
        Ok(Some(Reviewed {
            user: user.0,
            groups: user.1.unwrap_or_default(),
        }))
    }

    /// A client of the same API server, with the same credentials, impersonating `user` in
    /// `groups` (the credentials need `impersonate` on users and groups). Its connections,
    /// discovery and rate bucket are its own.
    pub fn impersonating(&self, user: &str, groups: &[String]) -> Result<Cluster> {
        let Some(config) = &self.config else {
            return Err(Error::Config(format!(
                "cluster `{}` was not built from a configuration: it cannot act for `{user}`",
                self.name
            )));
        };
        let mut config = kube::Config::clone(config);
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups = Some(groups.to_vec());
        let cluster = Cluster::from_config_with(&self.name, config, self.timeout)?;
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
