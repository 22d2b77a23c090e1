//! `addonctl serve`: the app store on loopback, acting with the kubeconfig; the flags into
//! [`addonctl::serve::ServeOptions`], the URL printed (and opened), until Ctrl-C or SIGTERM.

use std::io::Write as _;
use std::process::ExitCode;

use addonctl::context::Runtime;
use addonctl::serve::{App, Mode, ServeOptions};
use secrecy::ExposeSecret as _;

use crate::cli::args::ServeArgs;
use crate::cli::diagnostics::user;
use crate::cli::printer::Printer;
use crate::cli::settings::{catalog, library, ClusterSettings, GlobalSettings};

/// `serve`.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: ServeArgs,
) -> anyhow::Result<ExitCode> {
    if !args.in_cluster && !args.addr.ip().is_loopback() {
        return Err(user(format!(
            "`--addr {}`: the app store listens on loopback only (127.0.0.1 or ::1), since it acts with your kubeconfig; use e.g. `--addr 127.0.0.1:{}`",
            args.addr,
            args.addr.port()
        )));
    }
    let runtime = Runtime::connect(&library(global, cluster, printer)).await?;
    let runtime = runtime.with_catalog(catalog(global, &runtime.cluster).await?);
    let mode = if args.in_cluster {
        Mode::InCluster
    } else {
        let token = addonctl::serve::guard::new_token();
        if token.expose_secret().is_empty() {
            anyhow::bail!("this system gives no randomness for the sign-in token; the app store does not start without one");
        }
        Mode::Local { token }
    };
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| {
            user(format!(
                "cannot listen on `{}`: {e}; choose another `--addr`",
                args.addr
            ))
        })?;
    let addr = listener.local_addr()?;
    let options = ServeOptions {
        mode,
        addr,
        sync_interval: args.sync_interval,
    };
    let app = App::new(runtime, &options)?;
    if args.in_cluster {
        writeln!(printer.stdout(), "http://{addr}/")?;
        if !printer.quiet() {
            let _ = writeln!(
                std::io::stderr(),
                "app store on http://{addr}/ for callers with a bearer token the API server accepts (each acts as themselves); SIGTERM stops it"
            );
        }
    } else {
        let url = app.access.login_url();
        // The URL is the output: scripts read it from stdout.
        writeln!(printer.stdout(), "{url}")?;
        if !printer.quiet() {
            let _ = writeln!(
                std::io::stderr(),
                "app store on http://{addr}/ (Ctrl-C stops it); the URL above signs a browser in"
            );
        }
        if !args.no_browser {
            open_browser(&url);
        }
    }
    addonctl::serve::serve(listener, app, shutdown()).await?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// Opens `url` in the desktop's browser; where there is none, the printed URL is enough.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        // Reaped when it exits (the opener returns at once; the browser is not its child).
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => tracing::info!("no browser opened (`{opener}`: {e}); open the printed URL"),
    }
}
