//! `addonctl serve` for the app store's tests: the server as a child process (stopped by its
//! PID), a client of its JSON API (the printed token, or a caller's bearer token in a cluster),
//! its event stream read in the background, and ServiceAccount tokens to call it with. Every
//! wait is bounded.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api as KubeApi, PostParams};
use serde_json::{json, Value};

use super::k8s::Sandbox;

/// The longest wait for anything: a server to start, an apply to finish, an event to come.
pub const WAIT: Duration = Duration::from_secs(180);

/// A child process killed (by its PID) when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running `addonctl serve`, and a client of its API.
pub struct Server {
    _child: Running,
    /// The line it printed (local mode: the sign-in URL with the token).
    pub url: String,
    /// The client, with the printed token (local mode) or no token (in a cluster).
    pub api: Client,
}

impl std::ops::Deref for Server {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.api
    }
}

/// `addonctl serve --no-browser` of `command` (local mode), once it printed its URL.
pub fn serve(mut command: Command) -> Server {
    command.args(["serve", "--no-browser", "--addr", "127.0.0.1:0"]);
    let (child, url) = start(command);
    let (base, token) = url
        .split_once("/login?token=")
        .unwrap_or_else(|| panic!("not the sign-in URL: {url}"));
    assert!(base.starts_with("http://127.0.0.1:"), "{url}");
    Server {
        api: Client::new(base, Some(token)),
        url: url.clone(),
        _child: child,
    }
}

/// `addonctl serve --in-cluster` of `command`, once it printed its address.
pub fn serve_in_cluster(mut command: Command) -> Server {
    command.args(["serve", "--in-cluster", "--addr", "127.0.0.1:0"]);
    let (child, url) = start(command);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    Server {
        api: Client::new(url.trim_end_matches('/'), None),
        url,
        _child: child,
    }
}

/// Starts `command` and reads the first line it prints (bounded).
fn start(mut command: Command) -> (Running, String) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().expect("addonctl serve starts");
    let stdout = child.stdout.take().unwrap();
    let child = Running(child);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    let line = receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("addonctl serve printed its address within 60 s");
    (child, line.trim().to_owned())
}

/// A client of the server's API.
#[derive(Clone)]
pub struct Client {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The bearer token sent, if any.
    pub token: Option<String>,
    http: reqwest::Client,
}

impl Client {
    fn new(base: &str, token: Option<&str>) -> Client {
        Client {
            base: base.to_owned(),
            token: token.map(str::to_owned),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
        }
    }

    /// The same server, called with `token` (none: without one).
    pub fn with_token(&self, token: Option<&str>) -> Client {
        Client {
            token: token.map(str::to_owned),
            ..self.clone()
        }
    }

    /// A request to `path`, with the token and, unless a GET, the server's own `Origin`.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if method == reqwest::Method::GET {
            request
        } else {
            request.header("origin", &self.base)
        }
    }

    /// The status and body (JSON, or the text as a string) of a request.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self.request(method, path).timeout(WAIT);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// A plan of `body`, which must be made.
    pub async fn plan(&self, body: Value) -> Value {
        let (status, plan) = self.post("/api/v1/plans", body.clone()).await;
        assert_eq!(status, 201, "plan of {body}: {plan}");
        plan
    }

    /// Starts the apply of `plan` (it must be accepted).
    pub async fn start_apply(&self, plan: &Value) -> String {
        let id = plan["planId"].as_str().unwrap().to_owned();
        let (status, answer) = self
            .post(&format!("/api/v1/plans/{id}/apply"), json!({}))
            .await;
        assert_eq!(status, 202, "apply of {id}: {answer}");
        id
    }

    /// Waits (bounded) until the plan `id` succeeded; its final view.
    pub async fn until_applied(&self, id: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let (_, view) = self.get(&format!("/api/v1/plans/{id}")).await;
            match view["state"].as_str() {
                Some("succeeded") => return view,
                Some("failed") => panic!("the apply of {id} failed: {view}"),
                _ => {}
            }
            assert!(Instant::now() < deadline, "apply of {id} not done: {view}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Applies `plan` and waits (bounded) until it succeeded; its final view.
    pub async fn apply(&self, plan: &Value) -> Value {
        let id = self.start_apply(plan).await;
        self.until_applied(&id).await
    }

    /// Waits (bounded) until `addon`'s phase is `phase`.
    pub async fn until_phase(&self, addon: &str, phase: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let (status, body) = self.get(&format!("/api/v1/addons/{addon}/status")).await;
            if status == 200 && body["phase"] == phase {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "{addon} not {phase}: {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The event stream, read in the background.
    pub async fn events(&self) -> Events {
        let response = self
            .request(reqwest::Method::GET, "/api/v1/events")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream")));
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut response = response;
            let mut pending = String::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                pending.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = pending.find("\n\n") {
                    let frame: String = pending.drain(..end + 2).collect();
                    let data: String = frame
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim_start)
                        .collect();
                    if let Ok(event) = serde_json::from_str::<Value>(&data) {
                        if sender.send(event).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Events {
            receiver,
            seen: Vec::new(),
            reader,
        }
    }
}

/// Events of one stream, as they came.
pub struct Events {
    receiver: tokio::sync::mpsc::UnboundedReceiver<Value>,
    /// Every event read so far.
    pub seen: Vec<Value>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Events {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Events {
    /// Waits at most `limit` for an event `wanted` accepts.
    pub async fn until(
        &mut self,
        limit: Duration,
        what: &str,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(found) = self.seen.iter().find(|e| wanted(e)) {
            return found.clone();
        }
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(deadline, self.receiver.recv()).await {
                Ok(Some(event)) => {
                    self.seen.push(event.clone());
                    if wanted(&event) {
                        return event;
                    }
                }
                Ok(None) => panic!("the event stream ended before {what}: {:?}", self.seen),
                Err(elapsed) => panic!(
                    "no {what} within {limit:?} ({elapsed}); events: {:?}",
                    self.seen
                ),
            }
        }
    }
}

/// A token of ServiceAccount `name` in `namespace` (created), valid 10 minutes.
pub async fn token_of(sb: &Sandbox, namespace: &str, name: &str) -> String {
    let accounts: KubeApi<ServiceAccount> =
        KubeApi::namespaced(sb.api().client().clone(), namespace);
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    let _ = accounts.create(&PostParams::default(), &account).await;
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"expirationSeconds": 600}})).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
        {
            Ok(answer) => return answer.status.unwrap().token,
            Err(e) if Instant::now() < deadline => {
                eprintln!("token of {namespace}/{name} not yet: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("no token of {namespace}/{name}: {e}"),
        }
    }
}
