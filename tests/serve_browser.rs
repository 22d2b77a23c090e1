//! The web UI in a real browser: Debian's Chromium, driven through chromedriver (WebDriver),
//! against `addonctl serve` on the real API servers. A newcomer's path — open the printed URL,
//! find an addon, fill its form with one field wrong, see the error at the field, fix it,
//! preview, apply, watch it become enabled, plan a disable that shows what it deletes, apply
//! it — and the pages' safety: a README with scripts, handlers and `javascript:` links is
//! inert, a system addon is invisible to a user without rights. Every page is saved as a PNG
//! under `target/serve-screenshots/`.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{Kind, Sandbox};
use crate::support::root;
use crate::support::serve::{serve, Running};

/// The longest wait for anything (a process to start, a page to show a state).
const WAIT: Duration = Duration::from_secs(120);

/// Chromium and chromedriver, or `None` (a clear failure under CI).
fn browser_binaries() -> Option<(PathBuf, PathBuf)> {
    let find = |names: &[&str]| names.iter().map(PathBuf::from).find(|p| p.is_file());
    let chromium = find(&["/usr/bin/chromium", "/usr/lib/chromium/chromium"]);
    let driver = find(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]);
    if let (Some(c), Some(d)) = (chromium, driver) {
        return Some((c, d));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the browser tests need Debian's `chromium` and `chromium-driver` \
         (`apt-get install -y chromium chromium-driver`; scripts/test.sh installs them)"
    );
    eprintln!("skipped: no chromium/chromedriver (apt-get install -y chromium chromium-driver)");
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits (bounded) until something listens on `port`.
fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + WAIT;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A headless Chromium session with a fresh profile.
struct Browser {
    client: Client,
    _driver: Running,
    _profile: tempfile::TempDir,
    shots: PathBuf,
}

impl Browser {
    async fn start(chromium: &Path, chromedriver: &Path) -> Browser {
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let driver = Running(driver);
        wait_for_port(port, "chromedriver");
        let profile = tempfile::tempdir().unwrap();
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,1400",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = tokio::time::timeout(
            WAIT,
            ClientBuilder::new(connector)
                .capabilities(capabilities)
                .connect(&format!("http://127.0.0.1:{port}")),
        )
        .await
        .expect("a browser session within the wait")
        .expect("chromedriver opens a Chromium session");
        let shots = root().join("target/serve-screenshots");
        std::fs::create_dir_all(&shots).unwrap();
        Browser {
            client,
            _driver: driver,
            _profile: profile,
            shots,
        }
    }

    /// Saves the page as `name.png`.
    async fn shot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }

    /// The element `css` names, waiting (bounded) until the page has it.
    async fn find(&self, css: &str) -> fantoccini::elements::Element {
        match self
            .client
            .wait()
            .at_most(Duration::from_secs(15))
            .for_element(Locator::Css(css))
            .await
        {
            Ok(element) => element,
            Err(e) => {
                let body = self.client.source().await.unwrap_or_default();
                panic!(
                    "no `{css}` on {}: {e}\n{body}",
                    self.client
                        .current_url()
                        .await
                        .map(|u| u.to_string())
                        .unwrap_or_default()
                )
            }
        }
    }

    async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.unwrap()
    }

    async fn body(&self) -> String {
        self.text("body").await
    }

    async fn path(&self) -> String {
        self.client.current_url().await.unwrap().path().to_owned()
    }

    async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap();
    }

    /// Clicks what `css` names and waits (bounded) until the next page has replaced this one.
    async fn navigate(&self, css: &str) {
        let before = self.find("html").await;
        self.click(css).await;
        let deadline = Instant::now() + WAIT;
        while before.attr("lang").await.is_ok() {
            assert!(Instant::now() < deadline, "clicking `{css}` led nowhere");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = self
                .client
                .execute("return document.readyState;", vec![])
                .await
                .ok();
            if ready == Some(Value::from("complete")) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the page after `{css}` never loaded"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn fill(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Reloads the page until `done` holds for its body text (bounded).
    async fn until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let body = self.body().await;
            if done(&body) {
                return body;
            }
            assert!(Instant::now() < deadline, "{what} never showed: {body}");
            tokio::time::sleep(Duration::from_secs(1)).await;
            self.client.refresh().await.unwrap();
        }
    }

    /// Applies the plan on the page and waits until its state is `succeeded`.
    async fn apply_plan(&self) -> String {
        let plan = self.path().await;
        self.navigate("#apply-form button[type=submit]").await;
        let deadline = Instant::now() + WAIT;
        loop {
            // The script reloads the page when the apply's outcome arrives; without it, or
            // between reloads, the page is read again here.
            if let Ok(word) = self.client.find(Locator::Id("state-word")).await {
                if let Ok(state) = word.text().await {
                    assert_ne!(state, "failed", "the apply failed: {}", self.body().await);
                    if state == "succeeded" {
                        assert_eq!(self.path().await, plan);
                        return self.body().await;
                    }
                }
            }
            assert!(Instant::now() < deadline, "the apply never finished");
            tokio::time::sleep(Duration::from_millis(500)).await;
            if self.path().await == plan {
                let _ = self.client.refresh().await;
            } else {
                self.client.goto(&plan).await.unwrap();
            }
        }
    }
}

fn origin(url: &str) -> String {
    url.split("/login").next().unwrap().to_owned()
}

const HOSTILE_README: &str = "# Hostile\n\n<script>window.pwned = 'script'</script>\n\n\
<img src=\"x\" onerror=\"window.pwned = 'onerror'\">\n\n\
[click me](javascript:window.pwned='link') <a href=\"javascript:window.pwned='a'\">and me</a>\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_enables_and_disables_an_addon_in_a_real_browser() {
    let Some((chromium, chromedriver)) = browser_binaries() else {
        return;
    };
    let hostile = TestAddon::new("hostile-readme")
        .file(
            "metadata.yaml",
            "name: hostile-readme\nversion: 1.0.0\ndescription: A README that tries to run code\n",
        )
        .file("README.md", HOSTILE_README);
    let hidden = TestAddon::new("hidden-system").file(
        "metadata.yaml",
        "name: hidden-system\nversion: 1.0.0\ndescription: Only admins see it\ntags: [system]\n",
    );
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&hostile, &hidden]);
    let server = serve(sb.command());
    let url = server.url.clone();
    let base = origin(&url);
    let browser = Browser::start(&chromium, &chromedriver).await;
    let b = &browser;

    // The printed URL signs the browser in and lands on the catalogue.
    b.client.goto(&url).await.unwrap();
    assert_eq!(b.path().await, "/");
    let catalogue = b.body().await;
    assert!(catalogue.contains("Catalogue"), "{catalogue}");
    assert!(catalogue.contains("uptime-beacon"), "{catalogue}");
    b.shot("catalogue").await;

    // Find the addon by searching.
    b.fill("#search", "uptime").await;
    b.navigate("form.filters button[type=submit]").await;
    let found = b.body().await;
    assert!(found.contains("1 of"), "{found}");
    assert!(!found.contains("node-pulse"), "{found}");
    b.shot("catalogue-search").await;
    b.navigate("a[href='/addons/uptime-beacon']").await;
    assert_eq!(b.path().await, "/addons/uptime-beacon");
    let page = b.body().await;
    assert!(page.contains("Configure and preview"), "{page}");
    assert!(page.contains("addonctl enable uptime-beacon"), "{page}");
    b.shot("addon").await;

    // One field wrong: the server's error shows at that field, the other values stay.
    b.fill("#f-targets", "ftp://not-http.example").await;
    b.fill("#f-timeoutSeconds", "7").await;
    b.navigate("form.plan-form button.primary").await;
    assert_eq!(b.path().await, "/addons/uptime-beacon");
    let error = b.text("#f-targets-error").await;
    assert!(error.contains("Error"), "{error}");
    assert_eq!(
        b.client
            .find(Locator::Css("#f-targets"))
            .await
            .unwrap()
            .attr("aria-invalid")
            .await
            .unwrap()
            .as_deref(),
        Some("true")
    );
    let kept = b
        .client
        .find(Locator::Css("#f-timeoutSeconds"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap();
    assert_eq!(kept.as_deref(), Some("7"));
    assert!(b.body().await.contains("The plan was refused"));
    b.shot("addon-field-error").await;

    // Fixed: the preview shows every object it would create.
    b.fill("#f-targets", "https://status.example/health").await;
    b.navigate("form.plan-form button.primary").await;
    assert!(b.path().await.starts_with("/plans/"), "{}", b.body().await);
    let plan = b.body().await;
    assert!(plan.contains("Plan: enable uptime-beacon"), "{plan}");
    assert!(plan.contains("ConfigMap"), "{plan}");
    assert!(plan.contains("create"), "{plan}");
    assert!(plan.contains("timeoutSeconds"), "{plan}");
    assert!(plan.contains("--version=v1.0.0"), "{plan}");
    // The namespace both the control plane's Secret and the objects need: created once.
    let namespaces = b
        .client
        .execute(
            "return [...document.querySelectorAll('ul.objects > li')]\
             .filter(li => /create\\s+Namespace\\s/.test(li.textContent)).length;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(namespaces, json!(1), "{plan}");
    b.shot("plan-enable").await;

    // Apply, and watch it become enabled.
    let applied = b.apply_plan().await;
    assert!(applied.contains("succeeded"), "{applied}");
    b.shot("plan-enable-applied").await;
    b.client.goto(&format!("{base}/status")).await.unwrap();
    let status = b
        .until("uptime-beacon enabled on the status page", |body| {
            body.lines()
                .any(|l| l.contains("uptime-beacon") && l.contains("enabled"))
        })
        .await;
    assert!(status.contains("v1.0.0"), "{status}");
    b.shot("status").await;

    // Upgrade: the form starts from the installed values; one changed, planned, applied.
    b.client
        .goto(&format!("{base}/addons/uptime-beacon"))
        .await
        .unwrap();
    assert!(b
        .body()
        .await
        .contains("The fields show the installed values"));
    let installed = b
        .find("#f-timeoutSeconds")
        .await
        .prop("value")
        .await
        .unwrap();
    assert_eq!(
        installed.as_deref(),
        Some("7"),
        "the upgrade form starts from the installed values"
    );
    let target = b.find("#f-targets").await.prop("value").await.unwrap();
    assert_eq!(target.as_deref(), Some("https://status.example/health"));
    b.shot("addon-upgrade-prefilled").await;
    b.fill("#f-timeoutSeconds", "9").await;
    b.navigate("form.plan-form button.primary").await;
    let upgrade = b.body().await;
    assert!(upgrade.contains("Plan: upgrade uptime-beacon"), "{upgrade}");
    assert!(upgrade.contains("timeoutSeconds"), "{upgrade}");
    b.apply_plan().await;

    // Drift: an object deleted behind addonctl's back shows when the drift is checked.
    assert!(sb
        .api()
        .delete(&Kind::SERVICE_ACCOUNT.gvk(), Some(sb.ns()), "uptime-beacon")
        .await
        .unwrap());
    b.client.goto(&format!("{base}/status")).await.unwrap();
    b.navigate("tr[data-addon='uptime-beacon'] td.drift button")
        .await;
    let drift = b.text("tr[data-addon='uptime-beacon']").await;
    assert!(drift.contains("objects drifted"), "{drift}");
    assert!(drift.contains("ServiceAccount"), "{drift}");
    assert!(drift.contains("deleted"), "{drift}");
    b.shot("status-drift").await;

    // History: two revisions; a rollback to the first is planned, shown, applied.
    b.client
        .goto(&format!("{base}/addons/uptime-beacon/history"))
        .await
        .unwrap();
    let history = b.body().await;
    assert!(history.contains("Revision 2"), "{history}");
    assert!(history.contains("Revision 1"), "{history}");
    assert!(history.contains("deployed"), "{history}");
    b.shot("history").await;
    b.navigate("#revision-1 form button").await;
    assert!(b.path().await.starts_with("/plans/"), "{}", b.body().await);
    let rollback = b.body().await;
    assert!(
        rollback.contains("Plan: rollback uptime-beacon"),
        "{rollback}"
    );
    b.shot("plan-rollback").await;
    b.apply_plan().await;
    b.client
        .goto(&format!("{base}/addons/uptime-beacon/history"))
        .await
        .unwrap();
    let history = b.body().await;
    assert!(history.contains("Revision 3"), "{history}");
    assert!(history.contains("rollback to 1"), "{history}");
    // The rollback applied revision 1's values again, and the deleted object came back.
    let values = sb
        .cli()
        .args(["get", "values", "uptime-beacon", "-o", "json"])
        .output()
        .unwrap();
    let values: Value = serde_json::from_slice(&values.stdout).unwrap();
    assert_eq!(values["timeoutSeconds"], json!(7), "{values}");
    assert!(sb
        .get(Kind::SERVICE_ACCOUNT, "uptime-beacon")
        .await
        .is_some());

    // Disable: the plan shows what it deletes; apply it.
    b.client
        .goto(&format!("{base}/addons/uptime-beacon"))
        .await
        .unwrap();
    b.click("#action-disable").await;
    b.navigate("form.plan-form button.primary").await;
    assert!(b.path().await.starts_with("/plans/"), "{}", b.body().await);
    let disable = b.body().await;
    assert!(disable.contains("Plan: disable uptime-beacon"), "{disable}");
    assert!(disable.contains("Deleted ("), "{disable}");
    let deleted = b.text("ul.deleted").await;
    assert!(deleted.contains("ConfigMap"), "{deleted}");
    assert!(deleted.contains("uptime-beacon"), "{deleted}");
    b.shot("plan-disable").await;
    let applied = b.apply_plan().await;
    assert!(applied.contains("succeeded"), "{applied}");
    b.shot("plan-disable-applied").await;
    b.client.goto(&format!("{base}/status")).await.unwrap();
    b.until("uptime-beacon gone from the status page", |body| {
        !body.contains("uptime-beacon")
    })
    .await;

    // The registries, without credentials: one checked, added, synced and removed through
    // the page's forms.
    let extra = tempfile::tempdir().unwrap();
    let addon_dir = extra.path().join("page-added");
    std::fs::create_dir_all(&addon_dir).unwrap();
    std::fs::write(
        addon_dir.join("metadata.yaml"),
        "name: page-added\nversion: 1.0.0\ndescription: from a registry added in the page\n",
    )
    .unwrap();
    b.client.goto(&format!("{base}/registries")).await.unwrap();
    let registries = b.body().await;
    assert!(registries.contains("Registries"), "{registries}");
    b.fill("#r-name", "from-page").await;
    b.find("#r-type option[value='local']")
        .await
        .click()
        .await
        .unwrap();
    b.fill("#r-endpoint", &extra.path().display().to_string())
        .await;
    b.navigate("form.registry-form button[value='check']").await;
    let checked = b.text("#registry-notice").await;
    assert!(checked.contains("lists 1 addon."), "{checked}");
    assert!(checked.contains("Nothing was stored"), "{checked}");
    assert!(
        b.client
            .find(Locator::Css("tr[data-registry='from-page']"))
            .await
            .is_err(),
        "a check stores nothing"
    );
    b.shot("registries-checked").await;
    b.navigate("form.registry-form button[value='add']").await;
    assert!(b
        .text("#registry-notice")
        .await
        .contains("`from-page` added"));
    let row = b.text("tr[data-registry='from-page']").await;
    assert!(row.contains('1'), "{row}");
    b.shot("registries").await;
    b.navigate("tr[data-registry='from-page'] form[action$='/sync'] button")
        .await;
    assert!(b
        .text("#registry-notice")
        .await
        .contains("`from-page` synced"));
    b.client
        .goto(&format!("{base}/?search=page-added"))
        .await
        .unwrap();
    assert!(b.body().await.contains("page-added"));
    b.client.goto(&format!("{base}/registries")).await.unwrap();
    b.navigate("tr[data-registry='from-page'] form[action$='/remove'] button")
        .await;
    assert!(b.body().await.contains("Remove registry from-page?"));
    b.shot("registries-remove").await;
    b.navigate("form[action$='/remove'] button.danger").await;
    assert!(b
        .text("#registry-notice")
        .await
        .contains("`from-page` removed"));
    assert!(b
        .client
        .find(Locator::Css("tr[data-registry='from-page']"))
        .await
        .is_err());

    // A stranger's README: rendered, and inert.
    b.client
        .goto(&format!("{base}/addons/hostile-readme"))
        .await
        .unwrap();
    let readme = b
        .client
        .find(Locator::Id("readme"))
        .await
        .unwrap()
        .html(true)
        .await
        .unwrap()
        .to_lowercase();
    assert!(readme.contains("hostile"), "{readme}");
    for forbidden in ["<script", "onerror", "javascript:"] {
        assert!(
            !readme.contains(forbidden),
            "`{forbidden}` survived: {readme}"
        );
    }
    for link in ["click me", "and me"] {
        if let Ok(a) = b.client.find(Locator::LinkText(link)).await {
            let _ = a.click().await;
        }
    }
    let pwned = b
        .client
        .execute(
            "return window.pwned === undefined ? null : window.pwned;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(pwned, Value::Null, "the README ran code");
    assert!(b.client.get_alert_text().await.is_err());
    b.shot("addon-hostile-readme").await;

    // A system addon: marked for the admin, absent for a user without rights.
    b.client
        .goto(&format!("{base}/?search=hidden"))
        .await
        .unwrap();
    let admin_sees = b.body().await;
    assert!(admin_sees.contains("hidden-system"), "{admin_sees}");
    assert!(admin_sees.contains("system"), "{admin_sees}");
    let user_server = serve(sb.command_as_user());
    let user_url = user_server.url.clone();
    let user_base = origin(&user_url);
    b.client.goto(&user_url).await.unwrap();
    let user_catalogue = b.body().await;
    assert!(
        !user_catalogue.contains("hidden-system"),
        "{user_catalogue}"
    );
    b.shot("catalogue-user").await;
    b.client
        .goto(&format!("{user_base}/addons/hidden-system"))
        .await
        .unwrap();
    let hidden_page = b.body().await;
    assert!(hidden_page.contains("Not Found"), "{hidden_page}");
    assert!(!hidden_page.contains("Only admins see it"), "{hidden_page}");

    browser.client.close().await.unwrap();
}
