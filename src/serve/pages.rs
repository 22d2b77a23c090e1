//! The web pages: server-rendered HTML (askama templates in `templates/`, escaped by default),
//! readable without JavaScript; `static/app.js` only enhances them (live status, the plan's
//! apply progress).

use std::sync::Arc;

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Router;

use super::App;

/// The pages' routes.
pub fn routes() -> Router<Arc<App>> {
    Router::new()
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
