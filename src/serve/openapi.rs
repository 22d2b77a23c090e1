//! The API's OpenAPI 3 document, written from the handlers' own types and paths (utoipa), served
//! at `/api/v1/openapi.json` and committed as `docs/openapi.json` (a test fails when they differ).

use axum::Json;
use utoipa::OpenApi;

/// The document's source: every path and schema of the API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "addonctl app store API",
        description = "Browse the catalogue, plan and apply addon changes, watch their status. Every request carries the launch token (cookie or `Authorization: Bearer`); system addons are visible only to subjects allowed to create `addons.addonctl.io` in the system namespace.",
        license(name = "Apache-2.0")
    ),
    paths(
        super::api::list_addons,
        super::api::addon_detail,
        super::api::addon_status,
        super::api::list_registries,
        super::api::addon_history,
        super::api::addon_values,
        super::registries::add,
        super::registries::update,
        super::registries::remove,
        super::registries::sync,
        super::plans::create,
        super::plans::get,
        super::plans::apply,
        super::events::stream,
        document,
    ),
    components(schemas(super::ApiError, super::error::FieldError)),
    tags(
        (name = "addons", description = "The catalogue and the installed addons"),
        (name = "registries", description = "Where addons are read from"),
        (name = "plans", description = "What a change would do, then that change"),
        (name = "events", description = "Live phase changes and apply progress"),
    )
)]
pub struct ApiDoc;

/// The document as JSON text (pretty, with a final newline: what is committed).
pub fn json() -> String {
    let mut text = ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// `GET /api/v1/openapi.json`.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    tag = "addons",
    responses((status = 200, description = "This document", body = Object))
)]
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
