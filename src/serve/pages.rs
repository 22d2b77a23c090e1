//! The web pages: server-rendered HTML (askama templates in `templates/`, escaped by default),
//! readable and usable without JavaScript — forms post to the server, which answers a redirect
//! or the form again with each field's error; `static/app.js` only enhances them (live status
//! from the event stream, the plan's apply progress, copy buttons).
//!
//! Every page calls the functions the JSON API calls ([`super::api`], [`super::plans`]) on the
//! server's workers, as the API handlers do: a page shows what the API answers, nothing more
//! (a system addon the caller may not see is absent here too).
//!
//! - `GET /`: the catalogue (search, tag, registry, installed only);
//! - `GET /addons/{name}`: one addon (`?version=`), its README, NOTES, dependencies,
//!   definitions, and the form of its parameters; `POST` plans what the form asks and
//!   redirects to the plan (or answers the form again, 400, with each field's error);
//! - `GET /plans/{id}`: the plan, its Apply button, its state; `POST /plans/{id}/apply`
//!   starts the apply and redirects back (409: what the plan showed has changed);
//! - `GET /addons/{name}/history`: an installed addon's revisions; `POST` plans a rollback to
//!   one of them and redirects to the plan;
//! - `GET /status`: installed addons × clusters (`?drift=<addon>`: that addon's objects
//!   compared with what it applied); `GET /registries`: the registries, with forms to add,
//!   check, sync and remove them (`POST /registries`, `POST /registries/{name}/…`);
//! - `GET /static/{file}`: the style sheet and the script.

mod addon;
mod catalogue;
mod form;
mod history;
mod plan;
mod preview;
mod registries;
mod status;

use std::sync::Arc;

use askama::Template;
use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use super::error::ApiError;
use super::App;

/// The pages' routes.
pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/", get(catalogue::page))
        .route("/addons/{name}", get(addon::page).post(addon::submit))
        .route(
            "/addons/{name}/history",
            get(history::page).post(history::submit),
        )
        .route("/plans/{id}", get(plan::page))
        .route("/plans/{id}/apply", post(plan::apply))
        .route("/status", get(status::page))
        .route(
            "/registries",
            get(registries::page).post(registries::submit),
        )
        .route("/registries/{name}/sync", post(registries::sync))
        .route("/registries/{name}/remove", post(registries::remove))
        .route("/static/{file}", get(static_file))
}

const APP_CSS: &str = include_str!("static/app.css");
const APP_JS: &str = include_str!("static/app.js");

/// `GET /static/{file}`: the style sheet and the script, compiled into the binary.
async fn static_file(Path(file): Path<String>) -> Response {
    let (body, content_type) = match file.as_str() {
        "app.css" => (APP_CSS, "text/css; charset=utf-8"),
        "app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        _ => return error_page(&ApiError::not_found(format!("no static file `{file}`"))),
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=300"),
            ),
        ],
        body,
    )
        .into_response()
}

/// A rendered template, or a plain error when it cannot be rendered.
pub(super) fn html(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(text) => (status, Html(text)).into_response(),
        Err(e) => {
            tracing::error!("a page cannot be rendered: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "this page cannot be rendered",
            )
                .into_response()
        }
    }
}

#[derive(Template)]
#[template(path = "refusal.html", config = "src/serve/askama.toml")]
struct Refusal<'a> {
    status: u16,
    message: &'a str,
}

/// The page of a refused request.
pub fn refusal(status: StatusCode, message: &str) -> Response {
    let page = Refusal {
        status: status.as_u16(),
        message,
    };
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(_) => message.to_owned().into_response(),
    }
}

#[derive(Template)]
#[template(path = "error.html", config = "src/serve/askama.toml")]
struct ErrorPage<'a> {
    nav: &'a str,
    status: u16,
    reason: &'a str,
    message: &'a str,
}

/// The page of an error of the library or the API.
pub(super) fn error_page(error: &ApiError) -> Response {
    let status = error.status();
    html(
        status,
        &ErrorPage {
            nav: "",
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("Error"),
            message: &error.message,
        },
    )
}

/// A query parameter as given, `None` when empty.
pub(super) fn given(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Runs `make` on the server's workers (the library's futures stay on one thread) and answers
/// the page it makes, or the page of its error.
pub(super) async fn render<P, F, Fut>(app: &App, make: F) -> Response
where
    P: Template + Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<P, ApiError>> + 'static,
{
    match app.workers.run(make).await.and_then(|made| made) {
        Ok(page) => html(StatusCode::OK, &page),
        Err(e) => error_page(&e),
    }
}
