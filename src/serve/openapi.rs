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
        super::api::addon_drift,
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
    modifiers(&Guarded),
    tags(
        (name = "addons", description = "The catalogue and the installed addons"),
        (name = "registries", description = "Where addons are read from"),
        (name = "plans", description = "What a change would do, then that change"),
        (name = "events", description = "Live phase changes and apply progress"),
    )
)]
pub struct ApiDoc;

/// What [`super::guard`] answers before any handler, on every operation: 401 without the
/// token, 421 for another `Host`, and for changes 403 from another site and 413 for a body over
/// [`super::MAX_BODY`]; 503 past [`super::REQUEST_TIMEOUT`]. With the two ways of carrying the
/// token as security schemes.
struct Guarded;

impl utoipa::Modify for Guarded {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{
            ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme,
        };
        use utoipa::openapi::{Content, Ref, ResponseBuilder};

        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    Content::new(Some(Ref::from_schema_name("ApiError"))),
                )
                .build()
        };
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                (false, item.get.as_mut()),
                (true, item.post.as_mut()),
                (true, item.put.as_mut()),
                (true, item.delete.as_mut()),
                (true, item.patch.as_mut()),
            ];
            for (changes, operation) in operations {
                let Some(operation) = operation else {
                    continue;
                };
                let mut common = vec![
                    ("401", "No valid token (cookie or `Authorization: Bearer`)"),
                    (
                        "421",
                        "The `Host` header is not the address the server is bound to",
                    ),
                    (
                        "503",
                        "Not answered in time, or the API server is unavailable",
                    ),
                ];
                if changes {
                    common.push((
                        "403",
                        "From another site (`Origin`, `Sec-Fetch-Site`), or the caller may not",
                    ));
                    common.push(("413", "The body is over the server's limit"));
                }
                for (status, description) in common {
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error(description).into());
                }
            }
        }
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
        components.add_security_scheme(
            "cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(super::guard::COOKIE))),
        );
        openapi.security = Some(vec![
            SecurityRequirement::new("bearer", Vec::<String>::new()),
            SecurityRequirement::new("cookie", Vec::<String>::new()),
        ]);
    }
}

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
