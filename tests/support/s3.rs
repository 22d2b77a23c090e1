//! Real S3 servers for the S3 / OSS reader, and a fake of Alibaba OSS's listing format.
//!
//! - [`moto`]: moto's S3 server (anonymous requests accepted, no signature check), started once
//!   per test run by `scripts/sources/moto.sh` (installed by it if missing);
//! - [`s3s_fs`]: s3s-fs, which checks SigV4 signatures, started once per test run by
//!   `scripts/sources/s3s-fs.sh` (built once into the cache by it if missing);
//! - [`OssFake`]: an in-process server answering `ListObjectsV2` without the S3 XML namespace,
//!   as OSS does, and recording whether any request was signed.
//!
//! Both real servers listen on 127.0.0.1 and are stopped by PID when the test process exits (the
//! scripts' `--watch-pid`). `ADDONCTL_MOTO_URL` / `ADDONCTL_S3S_URL` (+ `ADDONCTL_S3S_PORT`) use
//! servers started beforehand instead.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use addonctl::source::s3::{S3Credentials, S3Options};
use aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_s3::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::client::dns::{DnsFuture, ResolveDns};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Response, Uri};

/// The access key s3s-fs is started with.
pub const ACCESS_KEY: &str = "addonctl-test-key";
/// The secret key s3s-fs is started with.
pub const SECRET_KEY: &str = "addonctl-test-secret-0123456789";

/// A running S3 server.
#[derive(Debug)]
pub struct S3Server {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its port.
    pub port: u16,
    /// Where s3s-fs keeps its objects (`<data>/<bucket>/<key>`), when known.
    pub data: Option<PathBuf>,
}

/// Removes the directories of earlier runs whose test process is gone.
fn remove_stale(envs: &std::path::Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(envs) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = file_name.strip_prefix(&format!("{name}-")) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !std::path::Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn start(script: &str, name: &str, extra: &[&str]) -> S3Server {
    let envs = crate::support::root().join("target/sources-env");
    remove_stale(&envs, name);
    let dir = envs.join(format!("{name}-{}", std::process::id()));
    let output = std::process::Command::new("bash")
        .arg(crate::support::root().join("scripts/sources").join(script))
        .arg("start")
        .arg("--dir")
        .arg(&dir)
        .args(extra)
        .arg("--watch-pid")
        .arg(std::process::id().to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run the start script");
    assert!(
        output.status.success(),
        "`scripts/sources/{script} start` failed; see {}",
        dir.display()
    );
    let url = String::from_utf8(output.stdout)
        .expect("utf-8")
        .trim()
        .to_owned();
    let port = url.rsplit(':').next().expect("port").parse().expect("port");
    S3Server {
        url,
        port,
        data: Some(dir.join("data")),
    }
}

fn from_env(url_var: &str) -> Option<S3Server> {
    let url = std::env::var(url_var).ok()?;
    let port = url.rsplit(':').next()?.trim_end_matches('/').parse().ok()?;
    Some(S3Server {
        url,
        port,
        data: std::env::var_os("ADDONCTL_S3S_DATA").map(PathBuf::from),
    })
}

/// moto, started once per test run.
pub fn moto() -> &'static S3Server {
    static SERVER: OnceLock<S3Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        from_env("ADDONCTL_MOTO_URL").unwrap_or_else(|| start("moto.sh", "moto", &[]))
    })
}

/// s3s-fs with [`ACCESS_KEY`] / [`SECRET_KEY`], started once per test run.
pub fn s3s_fs() -> &'static S3Server {
    static SERVER: OnceLock<S3Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        from_env("ADDONCTL_S3S_URL").unwrap_or_else(|| {
            start(
                "s3s-fs.sh",
                "s3s-fs",
                &["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY],
            )
        })
    })
}

/// Resolves every name to 127.0.0.1, so that virtual-host style requests
/// (`<bucket>.localhost:PORT`) reach the local server with that `Host` header.
#[derive(Debug, Clone, Copy)]
pub struct Loopback;

impl ResolveDns for Loopback {
    fn resolve_dns<'a>(&'a self, _name: &'a str) -> DnsFuture<'a> {
        DnsFuture::ready(Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]))
    }
}

/// Counts the HTTP requests a client sends (retries included).
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(pub Arc<AtomicU64>);

impl RequestCounter {
    /// Requests so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Options for `bucket` on `server`, path-style, signed with the given keys (or anonymous).
pub fn options(server: &S3Server, bucket: &str, keys: Option<(&str, &str)>) -> S3Options {
    let mut options = S3Options::new(&server.url, bucket);
    options.path_style = true;
    options.credentials = keys.map(|(id, secret)| S3Credentials {
        access_key_id: id.to_owned(),
        secret_access_key: secret.into(),
    });
    options.request_timeout = std::time::Duration::from_secs(20);
    options
}

/// An SDK client for `options` that counts its requests; `loopback` resolves every host to
/// 127.0.0.1 (for virtual-host style).
pub fn client(options: &S3Options, loopback: bool) -> (aws_sdk_s3::Client, RequestCounter) {
    let counter = RequestCounter::default();
    let http = if loopback {
        aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_with_resolver(Loopback)
    } else {
        aws_smithy_http_client::Builder::new().build_http()
    };
    let config = options
        .sdk_config_with_http_client(http)
        .to_builder()
        .interceptor(counter.clone())
        .build();
    (aws_sdk_s3::Client::from_conf(config), counter)
}

/// Creates the public bucket `bucket` on moto and uploads `files` readable by anyone (signed;
/// moto accepts any keys, and refuses anonymous reads of private objects).
pub async fn upload_to_moto(bucket: &str, files: &BTreeMap<String, Vec<u8>>) {
    let options = options(moto(), bucket, Some(("moto", "moto")));
    let (client, _) = client(&options, false);
    client
        .create_bucket()
        .bucket(bucket)
        .acl(aws_sdk_s3::types::BucketCannedAcl::PublicRead)
        .send()
        .await
        .expect("create bucket");
    put_to_moto(bucket, files).await;
}

/// Uploads `files` into the existing public bucket `bucket` on moto (readable by anyone), a few
/// at a time: moto answers one request at a time, and a thousand uploads sent at once would
/// wait behind each other past the request timeout on a loaded machine.
pub async fn put_to_moto(bucket: &str, files: &BTreeMap<String, Vec<u8>>) {
    use futures::stream::StreamExt as _;
    let options = options(moto(), bucket, Some(("moto", "moto")));
    let (client, _) = client(&options, false);
    let uploads = files.iter().map(|(key, bytes)| {
        let client = client.clone();
        async move {
            client
                .put_object()
                .bucket(bucket)
                .key(key)
                .acl(aws_sdk_s3::types::ObjectCannedAcl::PublicRead)
                .body(bytes.clone().into())
                .send()
                .await
                .unwrap_or_else(|e| {
                    panic!("put {key}: {}", aws_sdk_s3::error::DisplayErrorContext(&e))
                });
        }
    });
    futures::stream::iter(uploads)
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

/// Writes `files` into bucket `bucket` of s3s-fs (its objects are plain files).
pub fn write_to_s3s(bucket: &str, files: &BTreeMap<String, Vec<u8>>) {
    let data = s3s_fs().data.clone().expect("s3s-fs data directory");
    for (key, bytes) in files {
        let path = data.join(bucket).join(key);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }
    std::fs::create_dir_all(data.join(bucket)).expect("bucket");
}

/// A fake of Alibaba OSS's bucket listing: `ListObjectsV2` answered without the S3 XML namespace,
/// `max-keys` honoured with continuation tokens, `GetObject`. It records signed requests.
pub struct OssFake {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    state: Arc<OssState>,
    server: tokio::task::JoinHandle<()>,
}

struct OssState {
    bucket: String,
    objects: BTreeMap<String, Vec<u8>>,
    page_size: usize,
    requests: AtomicU64,
    signed: AtomicU64,
    log: Mutex<Vec<String>>,
}

impl Drop for OssFake {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl OssFake {
    /// Serves `objects` in `bucket` (path-style), `page_size` keys per listing page at most.
    pub async fn start(bucket: &str, objects: BTreeMap<String, Vec<u8>>, page_size: usize) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let state = Arc::new(OssState {
            bucket: bucket.to_owned(),
            objects,
            page_size,
            requests: AtomicU64::new(0),
            signed: AtomicU64::new(0),
            log: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .fallback(oss)
            .with_state(Arc::clone(&state));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        OssFake { url, state, server }
    }

    /// Requests served.
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// Requests that carried a signature (`Authorization` or `X-Amz-Signature`).
    pub fn signed_requests(&self) -> u64 {
        self.state.signed.load(Ordering::SeqCst)
    }

    /// The requests served (`path?query`).
    pub fn log(&self) -> Vec<String> {
        self.state.log.lock().expect("lock").clone()
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

async fn oss(State(state): State<Arc<OssState>>, uri: Uri, headers: HeaderMap) -> Response<Body> {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let path_and_query = uri.path_and_query().map_or("", |p| p.as_str()).to_owned();
    state.log.lock().expect("lock").push(path_and_query);
    if headers.contains_key("authorization")
        || uri.query().is_some_and(|q| q.contains("X-Amz-Signature"))
    {
        state.signed.fetch_add(1, Ordering::SeqCst);
    }
    let query: BTreeMap<String, String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), percent_decode(v))
        })
        .collect();
    let path = percent_decode(uri.path());
    let Some(rest) = path.strip_prefix(&format!("/{}", state.bucket)) else {
        return oss_error(404, "NoSuchBucket", "The specified bucket does not exist.");
    };
    let key = rest.trim_start_matches('/');
    if key.is_empty() {
        let prefix = query.get("prefix").cloned().unwrap_or_default();
        let after = query
            .get("continuation-token")
            .or_else(|| query.get("start-after"))
            .cloned()
            .unwrap_or_default();
        let max = query
            .get("max-keys")
            .and_then(|m| m.parse().ok())
            .unwrap_or(1000usize)
            .min(state.page_size);
        let matching: Vec<(&String, &Vec<u8>)> = state
            .objects
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix) && k.as_str() > after.as_str())
            .collect();
        let page: Vec<_> = matching.iter().take(max).collect();
        let truncated = matching.len() > page.len();
        // No xmlns attribute: OSS answers like this.
        let mut xml =
            String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult>");
        xml.push_str(&format!("<Name>{}</Name>", state.bucket));
        xml.push_str(&format!("<Prefix>{}</Prefix>", xml_escape(&prefix)));
        xml.push_str(&format!(
            "<MaxKeys>{max}</MaxKeys><KeyCount>{}</KeyCount>",
            page.len()
        ));
        xml.push_str(&format!("<IsTruncated>{truncated}</IsTruncated>"));
        if truncated {
            let last = page.last().map(|(k, _)| k.as_str()).unwrap_or_default();
            xml.push_str(&format!(
                "<NextContinuationToken>{}</NextContinuationToken>",
                xml_escape(last)
            ));
        }
        for (key, bytes) in &page {
            xml.push_str(&format!(
                "<Contents><Key>{}</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>\
                 <ETag>\"0\"</ETag><Type>Normal</Type><Size>{}</Size><StorageClass>Standard</StorageClass></Contents>",
                xml_escape(key),
                bytes.len()
            ));
        }
        xml.push_str("</ListBucketResult>");
        return Response::builder()
            .status(200)
            .header("content-type", "application/xml")
            .header("x-oss-request-id", "0")
            .body(Body::from(xml))
            .expect("response");
    }
    match state.objects.get(key) {
        Some(bytes) => Response::builder()
            .status(200)
            .header("content-type", "application/octet-stream")
            .header("content-length", bytes.len())
            .body(Body::from(bytes.clone()))
            .expect("response"),
        None => oss_error(404, "NoSuchKey", "The specified key does not exist."),
    }
}

fn oss_error(status: u16, code: &str, message: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/xml")
        .body(Body::from(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>0</RequestId><HostId>oss</HostId></Error>"
        )))
        .expect("response")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
