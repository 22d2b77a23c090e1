//! An in-process fake API server for unit tests (the tier below the real API servers): fixed
//! answers by method and path, `404 NotFound` for anything else, every request recorded with
//! its body.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

use super::Cluster;

/// Answers (status, body) by `(method, path)`.
type Routes = BTreeMap<(String, String), (u16, Value)>;

/// Answers by `(method, path)`; the query string is ignored.
#[derive(Debug, Clone, Default)]
pub(crate) struct FakeApi {
    routes: Arc<Mutex<Routes>>,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

impl FakeApi {
    /// Answers `method path` with `status` and `body`.
    pub(crate) fn on(self, method: &str, path: &str, status: u16, body: Value) -> Self {
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((method.to_owned(), path.to_owned()), (status, body));
        self
    }

    /// Serves the namespaced `kind` (plural `plural`) of `group_version` in discovery.
    pub(crate) fn serves(self, group_version: &str, plural: &str, kind: &str) -> Self {
        self.serves_scoped(group_version, plural, kind, true)
    }

    /// Serves the cluster-scoped `kind` (plural `plural`) of `group_version` in discovery.
    pub(crate) fn serves_cluster_wide(self, group_version: &str, plural: &str, kind: &str) -> Self {
        self.serves_scoped(group_version, plural, kind, false)
    }

    fn serves_scoped(
        self,
        group_version: &str,
        plural: &str,
        kind: &str,
        namespaced: bool,
    ) -> Self {
        let path = if group_version.contains('/') {
            format!("/apis/{group_version}")
        } else {
            format!("/api/{group_version}")
        };
        let resource = json!({
            "name": plural, "singularName": kind.to_lowercase(), "namespaced": namespaced, "kind": kind,
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        });
        let mut list = self
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&("GET".to_owned(), path.clone()))
            .map_or_else(
                || json!({"kind": "APIResourceList", "groupVersion": group_version, "resources": []}),
                |(_, body)| body.clone(),
            );
        if let Some(resources) = list["resources"].as_array_mut() {
            resources.push(resource);
        }
        self.on("GET", &path, 200, list)
    }

    /// Every request so far, as `METHOD /path`.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(request, _)| request.clone())
            .collect()
    }

    /// The bodies of the requests `METHOD /path` so far (`null` for an empty body, a string for
    /// one that is not JSON).
    pub(crate) fn bodies(&self, request: &str) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(r, _)| r == request)
            .map(|(_, body)| body.clone())
            .collect()
    }

    /// The requests other than reads (discovery included) so far, as `METHOD /path`.
    pub(crate) fn writes(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|r| !r.starts_with("GET "))
            .collect()
    }

    /// A cluster whose client talks to this fake.
    pub(crate) fn cluster(&self, name: &str) -> Cluster {
        let api = self.clone();
        let service = tower::service_fn(move |request: Request<kube::client::Body>| {
            let api = api.clone();
            async move { Ok::<_, Infallible>(api.answer(request).await) }
        });
        Cluster::from_client(name, kube::Client::new(service, "default"))
    }

    /// A cluster whose client talks to this fake and whose writes are seen, as those of a
    /// cluster addonctl connects itself: its sessions ([`Cluster::scoped`]) reuse lists.
    pub(crate) fn watched_cluster(&self, name: &str) -> Cluster {
        let api = self.clone();
        let scopes = Arc::new(super::reuse::Scopes::default());
        let seen = Arc::clone(&scopes);
        let service = tower::service_fn(move |request: Request<kube::client::Body>| {
            let api = api.clone();
            if request.method() != http::Method::GET {
                seen.wrote(request.uri().path());
            }
            async move { Ok::<_, Infallible>(api.answer(request).await) }
        });
        let mut cluster = Cluster::from_client(name, kube::Client::new(service, "default"));
        cluster.reuse = scopes.open();
        cluster.scopes = scopes;
        cluster
    }

    async fn answer(&self, request: Request<kube::client::Body>) -> Response<Full<Bytes>> {
        let method = request.method().as_str().to_owned();
        let path = request.uri().path().to_owned();
        let bytes = request
            .into_body()
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .unwrap_or_default();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((format!("{method} {path}"), body));
        let (status, body) = self
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(method, path.clone()))
            .cloned()
            .unwrap_or_else(|| {
                (
                    404,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                           "message": format!("{path} not found"), "reason": "NotFound", "code": 404}),
                )
            });
        let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
        *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
        response.headers_mut().insert(
            "content-type",
            http::HeaderValue::from_static("application/json"),
        );
        response
    }
}
