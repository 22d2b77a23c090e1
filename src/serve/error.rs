//! The API's errors: one JSON shape (`code`, `message`, and for parameters the fields at fault)
//! and one mapping from the library's [`ErrorKind`] to an HTTP status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::ErrorKind;

/// An error as the API answers it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ApiError {
    /// `invalid`, `notfound`, `denied`, `conflict`, `unavailable`, `internal`, or one of the
    /// server's own: `unauthenticated`, `forbiddenorigin`, `toolarge`, `timeout`.
    pub code: String,
    /// What happened, where and what to do (secrets never appear here).
    pub message: String,
    /// For parameter values: each field at fault (`ingress.host`) and its rule.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldError>,
    #[serde(skip)]
    status: u16,
}

/// One parameter at fault.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// Its dotted path (`resources.cpu`, `hosts[2]`).
    pub path: String,
    /// The rule it breaks.
    pub message: String,
}

impl ApiError {
    /// An error of `kind`.
    pub fn of_kind(kind: ErrorKind, message: impl Into<String>) -> Self {
        ApiError {
            code: kind.as_str().to_owned(),
            message: message.into(),
            fields: Vec::new(),
            status: kind.http_status(),
        }
    }

    /// An error with the server's own `code` and `status`.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            code: code.to_owned(),
            message: message.into(),
            fields: Vec::new(),
            status: status.as_u16(),
        }
    }

    /// The request is not valid.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::of_kind(ErrorKind::Invalid, message)
    }

    /// Nothing of that name (or the caller may not see it: the same answer).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::of_kind(ErrorKind::NotFound, message)
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl From<crate::Error> for ApiError {
    fn from(error: crate::Error) -> Self {
        let kind = error.kind();
        let fields = field_errors(&error);
        let message = crate::chain::chain(&error);
        if kind == ErrorKind::Internal {
            tracing::error!("{message}");
        }
        ApiError {
            fields,
            ..Self::of_kind(kind, message)
        }
    }
}

/// The parameters at fault, when `error` is (or wraps) a refusal of parameter values.
fn field_errors(error: &(dyn std::error::Error + 'static)) -> Vec<FieldError> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        let params = match e.downcast_ref::<crate::Error>() {
            Some(crate::Error::Params(params)) => Some(params),
            Some(crate::Error::Render(crate::render::Error::Parameters { error, .. })) => {
                Some(error)
            }
            _ => e.downcast_ref::<crate::params::Error>().or_else(|| {
                match e.downcast_ref::<crate::render::Error>() {
                    Some(crate::render::Error::Parameters { error, .. }) => Some(error),
                    _ => None,
                }
            }),
        };
        match params {
            Some(crate::params::Error::Invalid(violations)) => {
                return violations
                    .iter()
                    .map(|v| FieldError {
                        path: v.path.clone(),
                        message: v.rule.clone(),
                    })
                    .collect();
            }
            Some(crate::params::Error::UnknownParameters(unknown)) => {
                return unknown
                    .iter()
                    .map(|u| FieldError {
                        path: u.path.clone(),
                        message: u.to_string(),
                    })
                    .collect();
            }
            _ => {}
        }
        cause = e.source();
    }
    Vec::new()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        (status, axum::Json(self)).into_response()
    }
}

impl From<axum::extract::rejection::JsonRejection> for ApiError {
    /// A body that is not the JSON asked for: 413 when over the limit (the body is not read
    /// past it), 415 without a JSON content type, else 400.
    fn from(rejection: axum::extract::rejection::JsonRejection) -> Self {
        match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "toolarge",
                format!("the body is over {} KiB; send less", super::MAX_BODY / 1024),
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid",
                rejection.body_text(),
            ),
            _ => ApiError::invalid(rejection.body_text()),
        }
    }
}

/// A query string read into `T`, refused as a JSON [`ApiError`] (400) when it does not fit.
#[derive(Debug, Clone, Default)]
pub struct Query<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for Query<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Query(value))
            .map_err(|rejection| ApiError::invalid(rejection.body_text()))
    }
}

/// What a handler answers.
pub type ApiResult<T> = std::result::Result<T, ApiError>;
