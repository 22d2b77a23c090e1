//! A fake Kubernetes API server for the `fleet` benchmark: one HTTP server on 127.0.0.1 that is
//! the control plane (paths from `/`) and N managed clusters (paths under `/c/<name>/`), each
//! answer delayed by a fixed latency. It runs in a child process of the benchmark (the
//! benchmark's binary started again with [`CHILD_ARGUMENT`]), so that the benchmark process's
//! memory and CPU figures are the controller's alone; it stops when its stdin closes.
//!
//! What it serves, enough for the controller's engine path (plan → apply → record → drift →
//! health) and no more:
//! - discovery (`/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`, `/version`) of the
//!   built-in kinds the benchmark addon and addonctl's state use;
//! - objects kept in memory per cluster: GET, LIST (label selectors `k`, `!k`, `k=v`, `k!=v`;
//!   metadata-only lists when asked with `as=PartialObjectMetadataList`), POST, PUT (a stale
//!   `resourceVersion` is a 409), PATCH (server-side apply, which changes nothing and keeps the
//!   `resourceVersion` when the object is already as applied, and records its field manager in
//!   `managedFields`; JSON merge and strategic merge patches as merge patches; JSON patches),
//!   DELETE; `dryRun=All` answered without storing;
//! - access reviews answered "allowed"; watches held open without events until their timeout;
//! - at start, N cluster Secrets (token credentials, endpoint `https://127.0.0.1:<port>/c/<name>`
//!   and the CA that signed the server's certificate, or `http://…` with `--plain`) in the system
//!   namespace, labelled `fleet=simulated`;
//! - TLS with HTTP/2 and HTTP/1.1 by ALPN, as kube-apiserver speaks (`--plain`: HTTP/1.1 without
//!   TLS); a connection whose first byte is not a TLS handshake is served as plain HTTP/1.1 (the
//!   benchmark's own reads of the statistics);
//! - `GET /_fake/stats`: requests so far by control plane / managed cluster and verb.
//!
//! Not served: field selectors, pagination (`limit` is ignored: a list is whole), `Table`
//! answers, server-side field ownership (an apply merges into what is stored).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use serde_json::{json, Map, Value};

/// The argument that makes the benchmark binary run the fake server.
pub const CHILD_ARGUMENT: &str = "fake-api-server";
/// The label of the simulated clusters' Secrets (the `Addon` selects it).
pub const FLEET_LABEL: (&str, &str) = ("fleet", "simulated");
/// The bearer token every simulated cluster accepts.
pub const TOKEN: &str = "fake-token";

/// (group/version, plural, kind, namespaced).
const RESOURCES: &[(&str, &str, &str, bool)] = &[
    ("v1", "configmaps", "ConfigMap", true),
    ("v1", "events", "Event", true),
    ("v1", "namespaces", "Namespace", false),
    ("v1", "pods", "Pod", true),
    ("v1", "secrets", "Secret", true),
    ("v1", "serviceaccounts", "ServiceAccount", true),
    ("v1", "services", "Service", true),
    ("apps/v1", "daemonsets", "DaemonSet", true),
    ("apps/v1", "deployments", "Deployment", true),
    ("apps/v1", "statefulsets", "StatefulSet", true),
    (
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "rolebindings",
        "RoleBinding",
        true,
    ),
    ("rbac.authorization.k8s.io/v1", "roles", "Role", true),
    ("coordination.k8s.io/v1", "leases", "Lease", true),
    (
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
    ),
    (
        "authorization.k8s.io/v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        false,
    ),
];

/// (cluster, group/version, plural, namespace) → name → object.
type Objects = BTreeMap<(String, String, String, String), BTreeMap<String, Value>>;

/// The server's state.
struct Fake {
    latency: Duration,
    objects: Mutex<Objects>,
    version: AtomicU64,
    /// (control plane?, verb) → requests.
    stats: Mutex<BTreeMap<(bool, String), u64>>,
}

/// Options of the child: `--clusters N --latency-ms L --namespace NS`.
fn option(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The child process: serves until stdin closes; prints `listening <address>` first.
pub async fn child_main() {
    let clusters: usize = option("--clusters")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let latency: u64 = option("--latency-ms")
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let namespace = option("--namespace").unwrap_or_else(|| "vela-system".to_owned());
    let plain = std::env::args().any(|a| a == "--plain");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let tls = (!plain).then(Tls::new);
    let fake = Arc::new(Fake {
        latency: Duration::from_millis(latency),
        objects: Mutex::new(BTreeMap::new()),
        version: AtomicU64::new(1000),
        stats: Mutex::new(BTreeMap::new()),
    });
    for i in 0..clusters {
        let name = cluster_name(i);
        let secret = match &tls {
            Some(tls) => cluster_secret(
                &name,
                &namespace,
                &format!("https://{address}/c/{name}"),
                Some(&tls.ca_pem),
            ),
            None => cluster_secret(
                &name,
                &namespace,
                &format!("http://{address}/c/{name}"),
                None,
            ),
        };
        fake.store("", "v1", "secrets", &namespace, &name, secret);
    }
    if let Some(tls) = &tls {
        println!("ca {}", b64(&tls.ca_pem));
    }
    println!("listening {address}");
    let acceptor = tls.map(|tls| tokio_rustls::TlsAcceptor::from(tls.config));
    let (gone, mut parent_gone) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        // Stop when the parent goes (its end of our stdin closes).
        let mut buffer = [0u8; 64];
        while let Ok(1..) = std::io::Read::read(&mut std::io::stdin(), &mut buffer) {}
        let _ = gone.send(());
    });
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut parent_gone => return,
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        let fake = Arc::clone(&fake);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let fake = Arc::clone(&fake);
                async move { Ok::<_, Infallible>(fake.answer(request).await) }
            });
            // A TLS handshake starts with a handshake record (22).
            let mut first = [0u8; 1];
            let tls = matches!(stream.peek(&mut first).await, Ok(1) if first[0] == 22);
            match acceptor.filter(|_| tls) {
                Some(acceptor) => {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                    let io = hyper_util::rt::TokioIo::new(stream);
                    if h2 {
                        let _ = hyper::server::conn::http2::Builder::new(
                            hyper_util::rt::TokioExecutor::new(),
                        )
                        .max_concurrent_streams(1000)
                        .serve_connection(io, service)
                        .await;
                    } else {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(io, service)
                            .await;
                    }
                }
                None => {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                }
            }
        });
    }
}

/// The server's TLS: a throw-away CA and a certificate for 127.0.0.1 signed by it.
struct Tls {
    ca_pem: String,
    config: Arc<rustls::ServerConfig>,
}

impl Tls {
    fn new() -> Tls {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "fleet benchmark CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls::pki_types::CertificateDer::from(cert.der().to_vec())],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Tls {
            ca_pem: ca.pem(),
            config: Arc::new(config),
        }
    }
}

/// The name of simulated cluster `i`.
pub fn cluster_name(i: usize) -> String {
    format!("sim-{i:04}")
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A cluster Secret as `addonctl cluster join` writes one for a token.
fn cluster_secret(name: &str, namespace: &str, endpoint: &str, ca: Option<&str>) -> Value {
    let mut secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {
            "cluster.core.oam.dev/cluster-credential-type": "ServiceAccountToken",
            FLEET_LABEL.0: FLEET_LABEL.1,
        }},
        "type": "Opaque",
        "data": {"endpoint": b64(endpoint), "token": b64(TOKEN)},
    });
    if let Some(ca) = ca {
        secret["data"]["ca.crt"] = json!(b64(ca));
    }
    secret
}

fn status(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": reason, "code": code}),
    )
}

/// RFC 7386.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(map) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// RFC 6902, the operations addonctl sends (`add`, `replace`, `remove`, `test`).
fn json_patch(target: &mut Value, operations: &Value) -> Result<(), String> {
    for op in operations.as_array().ok_or("a JSON patch is a list")? {
        let path = op["path"].as_str().ok_or("an operation without a path")?;
        let (parent, last) = path.rsplit_once('/').ok_or("a path without `/`")?;
        let last = last.replace("~1", "/").replace("~0", "~");
        match op["op"].as_str() {
            Some("test") => {
                if target.pointer(path) != Some(&op["value"]) {
                    return Err(format!("test of {path} failed"));
                }
            }
            Some("remove") => {
                if let Some(Value::Object(m)) = target.pointer_mut(parent) {
                    m.remove(&last);
                }
            }
            Some("add" | "replace") => match target.pointer_mut(parent) {
                Some(Value::Object(m)) => {
                    m.insert(last, op["value"].clone());
                }
                Some(Value::Array(a)) if last == "-" => a.push(op["value"].clone()),
                _ => return Err(format!("no parent at {path}")),
            },
            other => return Err(format!("operation {other:?} not served")),
        }
    }
    Ok(())
}

/// Whether `labels` satisfy the label selector `selector` (`k`, `!k`, `k=v`, `k==v`, `k!=v`).
fn selected(labels: &Value, selector: &str) -> bool {
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        if let Some((k, v)) = term.split_once("!=") {
            labels[k.trim()].as_str() != Some(v.trim())
        } else if let Some((k, v)) = term.split_once('=') {
            labels[k.trim()].as_str() == Some(v.trim_start_matches('=').trim())
        } else if let Some(k) = term.strip_prefix('!') {
            labels.get(k.trim()).is_none()
        } else {
            labels.get(term.trim()).is_some()
        }
    })
}

/// A parsed request path.
struct Target {
    cluster: String,
    group_version: String,
    plural: String,
    namespace: String,
    name: Option<String>,
    subresource: Option<String>,
}

fn query(uri: &http::Uri) -> BTreeMap<String, String> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| {
            let v = v
                .replace("%3D", "=")
                .replace("%2C", ",")
                .replace("%2F", "/")
                .replace("%21", "!");
            (k.to_owned(), v.replace('+', " "))
        })
        .collect()
}

impl Fake {
    fn next_version(&self) -> String {
        self.version.fetch_add(1, Ordering::Relaxed).to_string()
    }

    fn store(
        &self,
        cluster: &str,
        gv: &str,
        plural: &str,
        ns: &str,
        name: &str,
        mut object: Value,
    ) {
        let version = self.next_version();
        object["metadata"]["resourceVersion"] = json!(version);
        object["metadata"]["uid"] = json!(format!("uid-{version}"));
        object["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        self.objects
            .lock()
            .unwrap()
            .entry((
                cluster.to_owned(),
                gv.to_owned(),
                plural.to_owned(),
                ns.to_owned(),
            ))
            .or_default()
            .insert(name.to_owned(), object);
    }

    async fn answer(&self, request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let (parts, body) = request.into_parts();
        let body = body
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .unwrap_or_default();
        let path = parts.uri.path().to_owned();
        if path == "/_fake/stats" {
            let stats = self.stats.lock().unwrap().clone();
            let mut out = json!({"controlPlane": {}, "managed": {}});
            for ((control_plane, verb), n) in stats {
                let side = if control_plane {
                    "controlPlane"
                } else {
                    "managed"
                };
                out[side][verb] = json!(n);
            }
            return respond(200, &out);
        }
        tokio::time::sleep(self.latency).await;
        let params = query(&parts.uri);
        let (cluster, rest) = match path.strip_prefix("/c/") {
            Some(rest) => match rest.split_once('/') {
                Some((c, r)) => (c.to_owned(), format!("/{r}")),
                None => (rest.to_owned(), "/".to_owned()),
            },
            None => (String::new(), path.clone()),
        };
        let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
        let verb = verb(&parts.method, &segments, &params);
        *self
            .stats
            .lock()
            .unwrap()
            .entry((cluster.is_empty(), verb.clone()))
            .or_default() += 1;
        if let Some(discovery) = discovery(&segments, cluster.is_empty()) {
            return respond(200, &discovery);
        }
        let Some(target) = target(&cluster, &segments) else {
            let (code, body) = status(404, "NotFound", &format!("{path} is not served"));
            return respond(code, &body);
        };
        if verb == "watch" {
            let seconds: u64 = params
                .get("timeoutSeconds")
                .and_then(|s| s.parse().ok())
                .unwrap_or(30)
                .min(30);
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            return respond(200, &Value::Null);
        }
        let accept = parts
            .headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let content_type = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (code, answer) = match verb.as_str() {
            "list" => self.list(
                &target,
                &params,
                accept.contains("PartialObjectMetadataList"),
            ),
            "get" => self.get(&target),
            "create" => self.create(&target, body, &params),
            "update" => self.update(&target, body, &params),
            "patch" => self.patch(&target, &body, &content_type, &params),
            "delete" => self.delete(&target),
            other => status(405, "MethodNotAllowed", &format!("{other} is not served")),
        };
        respond(code, &answer)
    }

    fn kind_of(target: &Target) -> (&'static str, bool) {
        RESOURCES
            .iter()
            .find(|r| r.0 == target.group_version && r.1 == target.plural)
            .map_or(("Unknown", true), |r| (r.2, r.3))
    }

    fn key(target: &Target) -> (String, String, String, String) {
        (
            target.cluster.clone(),
            target.group_version.clone(),
            target.plural.clone(),
            target.namespace.clone(),
        )
    }

    fn list(
        &self,
        target: &Target,
        params: &BTreeMap<String, String>,
        metadata: bool,
    ) -> (u16, Value) {
        let selector = params.get("labelSelector").cloned().unwrap_or_default();
        let objects = self.objects.lock().unwrap();
        let mut items = Vec::new();
        // The keys of one cluster's kind are contiguous, from its empty namespace on: a list
        // reads them alone (a scan of every key made the server's cost grow with the square of
        // the clusters).
        let first = (
            target.cluster.clone(),
            target.group_version.clone(),
            target.plural.clone(),
            String::new(),
        );
        for (key, named) in objects.range(first..) {
            if key.0 != target.cluster || key.1 != target.group_version || key.2 != target.plural {
                break;
            }
            if !target.namespace.is_empty() && key.3 != target.namespace {
                continue;
            }
            for object in named.values() {
                if !selected(&object["metadata"]["labels"], &selector) {
                    continue;
                }
                items.push(if metadata {
                    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                           "metadata": object["metadata"]})
                } else {
                    object.clone()
                });
            }
        }
        let version = self.version.load(Ordering::Relaxed).to_string();
        let (kind, _) = Self::kind_of(target);
        let (api_version, kind) = if metadata {
            (
                "meta.k8s.io/v1".to_owned(),
                "PartialObjectMetadataList".to_owned(),
            )
        } else {
            (target.group_version.clone(), format!("{kind}List"))
        };
        (
            200,
            json!({"apiVersion": api_version, "kind": kind,
                   "metadata": {"resourceVersion": version}, "items": items}),
        )
    }

    fn stored(&self, target: &Target) -> Option<Value> {
        let name = target.name.as_ref()?;
        self.objects
            .lock()
            .unwrap()
            .get(&Self::key(target))
            .and_then(|m| m.get(name))
            .cloned()
    }

    fn get(&self, target: &Target) -> (u16, Value) {
        match self.stored(target) {
            Some(object) => (200, object),
            None => not_found(target),
        }
    }

    /// Stores `object` under `target` (a new `resourceVersion`; uid and creation kept).
    fn put(&self, target: &Target, name: &str, mut object: Value, before: Option<&Value>) -> Value {
        let version = self.next_version();
        let (kind, namespaced) = Self::kind_of(target);
        object["apiVersion"] = json!(target.group_version);
        object["kind"] = json!(kind);
        object["metadata"]["name"] = json!(name);
        if namespaced {
            object["metadata"]["namespace"] = json!(target.namespace);
        }
        object["metadata"]["resourceVersion"] = json!(version);
        let uid = before.map_or_else(
            || json!(format!("uid-{version}")),
            |b| b["metadata"]["uid"].clone(),
        );
        object["metadata"]["uid"] = uid;
        object["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        let generation = before
            .and_then(|b| b["metadata"]["generation"].as_i64())
            .unwrap_or(0)
            + 1;
        object["metadata"]["generation"] = json!(generation);
        self.objects
            .lock()
            .unwrap()
            .entry(Self::key(target))
            .or_default()
            .insert(name.to_owned(), object.clone());
        object
    }

    fn create(
        &self,
        target: &Target,
        body: Value,
        params: &BTreeMap<String, String>,
    ) -> (u16, Value) {
        if target.plural.ends_with("accessreviews") {
            let mut review = body;
            review["status"] = json!({"allowed": true});
            return (201, review);
        }
        let Some(name) = body["metadata"]["name"].as_str().map(str::to_owned) else {
            return status(422, "Invalid", "metadata.name is required");
        };
        let target = Target {
            name: Some(name.clone()),
            ..target.clone_target()
        };
        if self.stored(&target).is_some() {
            return status(409, "AlreadyExists", &format!("{name} already exists"));
        }
        if params.get("dryRun").is_some() {
            return (201, body);
        }
        (201, self.put(&target, &name, body, None))
    }

    fn update(
        &self,
        target: &Target,
        body: Value,
        params: &BTreeMap<String, String>,
    ) -> (u16, Value) {
        let Some(name) = target.name.clone() else {
            return status(405, "MethodNotAllowed", "PUT of a collection");
        };
        let before = self.stored(target);
        let Some(before) = before else {
            return not_found(target);
        };
        let given = body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        if !given.is_empty() && Some(given) != before["metadata"]["resourceVersion"].as_str() {
            return status(409, "Conflict", "the object has been modified");
        }
        if params.get("dryRun").is_some() {
            return (200, body);
        }
        (200, self.put(target, &name, body, Some(&before)))
    }

    fn patch(
        &self,
        target: &Target,
        body: &Value,
        content_type: &str,
        params: &BTreeMap<String, String>,
    ) -> (u16, Value) {
        let Some(name) = target.name.clone() else {
            return status(405, "MethodNotAllowed", "PATCH of a collection");
        };
        let before = self.stored(target);
        let mut object = before.clone().unwrap_or(Value::Null);
        if content_type.contains("apply-patch") {
            let manager = params.get("fieldManager").cloned().unwrap_or_default();
            let mut applied = body.clone();
            if let Value::Object(m) = &mut applied["metadata"] {
                m.remove("resourceVersion");
                m.remove("managedFields");
            }
            merge(&mut object, &applied);
            object["metadata"]["managedFields"] = json!([{"manager": manager, "operation": "Apply",
                "apiVersion": target.group_version, "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]);
            if let Some(before) = &before {
                let mut same = object.clone();
                same["metadata"]["resourceVersion"] = before["metadata"]["resourceVersion"].clone();
                for key in ["uid", "creationTimestamp", "generation"] {
                    same["metadata"][key] = before["metadata"][key].clone();
                }
                if &same == before {
                    return (200, before.clone());
                }
            }
        } else if before.is_none() {
            return not_found(target);
        } else if content_type.contains("json-patch") {
            if let Err(e) = json_patch(&mut object, body) {
                return status(422, "Invalid", &e);
            }
        } else {
            let given = body["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_owned);
            if given.is_some() && given.as_deref() != object["metadata"]["resourceVersion"].as_str()
            {
                return status(409, "Conflict", "the object has been modified");
            }
            merge(&mut object, body);
        }
        if params.get("dryRun").is_some() {
            return (200, object);
        }
        let code = if before.is_some() { 200 } else { 201 };
        (code, self.put(target, &name, object, before.as_ref()))
    }

    fn delete(&self, target: &Target) -> (u16, Value) {
        let Some(name) = &target.name else {
            return status(405, "MethodNotAllowed", "DELETE of a collection");
        };
        let removed = self
            .objects
            .lock()
            .unwrap()
            .get_mut(&Self::key(target))
            .and_then(|m| m.remove(name));
        match removed {
            Some(_) => (
                200,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
            ),
            None => not_found(target),
        }
    }
}

impl Target {
    fn clone_target(&self) -> Target {
        Target {
            cluster: self.cluster.clone(),
            group_version: self.group_version.clone(),
            plural: self.plural.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            subresource: self.subresource.clone(),
        }
    }
}

fn not_found(target: &Target) -> (u16, Value) {
    status(
        404,
        "NotFound",
        &format!(
            "{} \"{}\" not found",
            target.plural,
            target.name.as_deref().unwrap_or("")
        ),
    )
}

fn respond(code: u16, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn verb(method: &Method, segments: &[&str], params: &BTreeMap<String, String>) -> String {
    let is_item = {
        let n = segments.len();
        let base = if segments.first() == Some(&"api") {
            2
        } else {
            3
        };
        let rest = n.saturating_sub(base);
        let namespaced = segments.get(base) == Some(&"namespaces") && rest >= 3;
        if namespaced {
            rest >= 4
        } else {
            rest >= 2
        }
    };
    match *method {
        Method::GET if params.get("watch").is_some_and(|w| w == "true" || w == "1") => "watch",
        Method::GET if is_item => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "other",
    }
    .to_owned()
}

/// Discovery answers; `None` for a resource path.
fn discovery(segments: &[&str], control_plane: bool) -> Option<Value> {
    match segments {
        ["version"] => Some(
            json!({"major": "1", "minor": "20", "gitVersion": "v1.20.2", "platform": "linux/amd64"}),
        ),
        ["api"] => Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:443"}]})),
        ["apis"] => {
            let mut groups: Vec<&str> = RESOURCES
                .iter()
                .map(|r| r.0)
                .filter(|gv| gv.contains('/'))
                .collect();
            groups.dedup();
            let mut list: Vec<Value> = groups
                .iter()
                .map(|gv| {
                    let (group, version) = gv.split_once('/').unwrap_or((gv, ""));
                    let v = json!({"groupVersion": gv, "version": version});
                    json!({"name": group, "versions": [v], "preferredVersion": v})
                })
                .collect();
            if control_plane {
                let v = json!({"groupVersion": "addonctl.io/v1alpha1", "version": "v1alpha1"});
                list.push(json!({"name": "addonctl.io", "versions": [v], "preferredVersion": v}));
            }
            Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": list}))
        }
        ["api", "v1"] | ["apis", _, _] => {
            let gv = if segments[0] == "api" {
                "v1".to_owned()
            } else {
                format!("{}/{}", segments[1], segments[2])
            };
            let mut resources: Vec<Value> = RESOURCES
                .iter()
                .filter(|r| r.0 == gv)
                .map(|r| json!({"name": r.1, "singularName": r.2.to_lowercase(), "namespaced": r.3, "kind": r.2,
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}))
                .collect();
            if gv == "addonctl.io/v1alpha1" && control_plane {
                for name in ["addons", "addons/status"] {
                    resources.push(json!({"name": name, "singularName": "addon", "namespaced": true, "kind": "Addon",
                        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}));
                }
            }
            if resources.is_empty() {
                return None;
            }
            Some(
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
            )
        }
        _ => None,
    }
}

/// The object or collection a resource path names.
fn target(cluster: &str, segments: &[&str]) -> Option<Target> {
    let (group_version, rest) = match segments {
        ["api", "v1", rest @ ..] => ("v1".to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => ((*ns).to_owned(), rest),
        _ => (String::new(), rest),
    };
    let plural = (*rest.first()?).to_owned();
    Some(Target {
        cluster: cluster.to_owned(),
        group_version,
        plural,
        namespace,
        name: rest.get(1).map(|s| (*s).to_owned()),
        subresource: rest.get(2).map(|s| (*s).to_owned()),
    })
}
