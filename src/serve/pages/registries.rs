//! The registries page: every registry searched, with its last sync and error; forms to add
//! one (checked first if asked: listed, nothing stored), sync one now and remove one (after a
//! confirmation). Credentials are write-only: never shown, not even back in a refused form.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{error_page, form, given, html, render};
use crate::context::Session;
use crate::model::registry::RegistryType;
use crate::serve::api::{self, RegistryItem};
use crate::serve::error::{ApiError, FieldError};
use crate::serve::registries::{add_one, remove_one, sync_now, RegistryInput};
use crate::serve::{App, Caller};

#[derive(Template)]
#[template(path = "registries.html", config = "src/serve/askama.toml")]
struct RegistriesPage {
    nav: &'static str,
    registries: Vec<Shown>,
    kinds: Vec<KindChoice>,
    form: AddForm,
    /// What was just done (`?done=`), or what a check found.
    notice: Option<String>,
    /// Why the form was refused.
    error: Option<String>,
    /// The form's fields the error is about.
    invalid: Vec<FieldError>,
}

/// One registry as the page shows it.
struct Shown {
    item: RegistryItem,
    /// Its stored fields (none: built in, or given on the command line).
    fields: Vec<(String, String)>,
    /// Whether it is stored (and so can be removed here).
    stored: bool,
}

/// A registry kind of the form's select.
struct KindChoice {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

/// The add form's fields as given (never the secrets: they are not shown again).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(super) struct AddForm {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    endpoint: String,
    path: String,
    #[serde(rename = "ref")]
    reference: String,
    bucket: String,
    priority: String,
    username: String,
    token: String,
    password: String,
    ca_bundle: String,
    /// `check` (list it, store nothing) or `add`.
    #[serde(rename = "_do")]
    action: String,
}

/// What a stored registry's spec shows: its scalar fields (one level of nesting flattened),
/// never anything that looks like a credential.
fn spec_fields(spec: &Value) -> Vec<(String, String)> {
    fn credential(key: &str) -> bool {
        let key = key.to_lowercase();
        ["secret", "password", "token", "credential", "key", "auth"]
            .iter()
            .any(|w| key.contains(w))
    }
    let mut fields = Vec::new();
    let Some(map) = spec.as_object() else {
        return fields;
    };
    for (key, value) in map {
        if key == "name" || credential(key) {
            continue;
        }
        match value {
            Value::Object(inner) => {
                for (k, v) in inner {
                    if !credential(k) && !v.is_object() && !v.is_array() && !v.is_null() {
                        fields.push((format!("{key}.{k}"), form::display(v)));
                    }
                }
            }
            Value::Null | Value::Array(_) => {}
            other => fields.push((key.clone(), form::display(other))),
        }
    }
    fields
}

/// The kinds a registry may be of (those this build reads), with what each asks for.
const KINDS: &[(&str, &str)] = &[
    ("helm", "Helm chart repository (an index.yaml over HTTP)"),
    ("oci", "OCI registry (oci://host/prefix)"),
    ("github", "GitHub repository"),
    ("gitee", "Gitee repository"),
    ("gitlab", "GitLab repository"),
    ("git", "Git repository (HTTPS or SSH)"),
    ("s3", "S3 bucket"),
    ("oss", "Alibaba Cloud OSS bucket"),
    ("local", "A directory on the server's machine"),
];

fn kind_choices(chosen: &str) -> Vec<KindChoice> {
    KINDS
        .iter()
        .filter(|(value, _)| serde_json::from_value::<RegistryType>(json!(value)).is_ok())
        .map(|&(value, label)| KindChoice {
            value,
            label,
            selected: value == chosen,
        })
        .collect()
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct DoneQuery {
    /// What was done, to say so: `added`, `synced` or `removed`.
    done: Option<String>,
    /// To which registry.
    registry: Option<String>,
}

pub(super) async fn page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<DoneQuery>,
) -> Response {
    let notice = match (given(query.done).as_deref(), given(query.registry)) {
        (Some(done @ ("added" | "synced" | "removed")), Some(registry)) => {
            Some(format!("Registry `{registry}` {done}."))
        }
        _ => None,
    };
    let job = Arc::clone(&app);
    render(&app, move || async move {
        let session = job.session(&caller, None);
        Ok(RegistriesPage {
            notice,
            ..page_of(&job, &session, AddForm::default()).await
        })
    })
    .await
}

async fn page_of(app: &App, session: &Session, form: AddForm) -> RegistriesPage {
    let registries = api::registries(app, session)
        .await
        .into_iter()
        .map(|item| Shown {
            fields: spec_fields(&item.spec),
            stored: !item.spec.is_null(),
            item,
        })
        .collect();
    RegistriesPage {
        nav: "registries",
        registries,
        kinds: kind_choices(if form.kind.is_empty() {
            "helm"
        } else {
            &form.kind
        }),
        form: AddForm {
            token: String::new(),
            password: String::new(),
            ..form
        },
        notice: None,
        error: None,
        invalid: Vec::new(),
    }
}

/// The registry the form describes, or what is wrong with it.
fn input_of(form: &AddForm) -> Result<RegistryInput, ApiError> {
    let text = |s: &str| {
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_owned())
    };
    let priority = match form.priority.trim() {
        "" => 0,
        given => given.parse::<i32>().map_err(|_| {
            let mut e = ApiError::invalid(format!("priority `{given}` is not a whole number"));
            e.fields.push(FieldError {
                path: "priority".to_owned(),
                message: "a whole number (higher is searched first)".to_owned(),
            });
            e
        })?,
    };
    let kind = serde_json::from_value::<RegistryType>(json!(form.kind.trim())).map_err(|_| {
        ApiError::invalid(format!("`{}` is not a kind of registry", form.kind.trim()))
    })?;
    Ok(RegistryInput {
        name: form.name.trim().to_owned(),
        kind,
        endpoint: form.endpoint.trim().to_owned(),
        path: text(&form.path),
        reference: text(&form.reference),
        bucket: text(&form.bucket),
        priority,
        ca_bundle: text(&form.ca_bundle),
        token: text(&form.token),
        username: text(&form.username),
        password: text(&form.password),
    })
}

/// `POST /registries`: checks (`_do=check`) or adds the registry of the form.
pub(super) async fn submit(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Form(form): Form<AddForm>,
) -> Response {
    let job = Arc::clone(&app);
    let answered = app
        .workers
        .run(move || async move {
            let session = job.session(&caller, None);
            let check = form.action == "check";
            let done = match input_of(&form) {
                Ok(input) => add_one(&job, &session, input, check).await,
                Err(e) => Err(e),
            };
            match done {
                Ok((_, written)) if written.stored => Err(written.spec.name),
                Ok((_, written)) => {
                    let mut page = page_of(&job, &session, form).await;
                    let count = written.addon_count.unwrap_or(0);
                    page.notice = Some(format!(
                        "Registry `{}` answers and lists {count} {}. Nothing was stored: choose Add to keep it.",
                        written.spec.name,
                        if count == 1 { "addon" } else { "addons" }
                    ));
                    Ok((StatusCode::OK, page))
                }
                Err(e) => {
                    let mut page = page_of(&job, &session, form).await;
                    page.error = Some(e.message.clone());
                    page.invalid.clone_from(&e.fields);
                    Ok((e.status(), page))
                }
            }
        })
        .await;
    match answered {
        Ok(Ok((status, page))) => html(status, &page),
        Ok(Err(added)) => done("added", &added),
        Err(e) => error_page(&e),
    }
}

/// The redirect that says what was done.
fn done(what: &str, registry: &str) -> Response {
    let query =
        serde_urlencoded::to_string([("done", what), ("registry", registry)]).unwrap_or_default();
    Redirect::to(&format!("/registries?{query}")).into_response()
}

/// `POST /registries/{name}/sync`: lists it again now.
pub(super) async fn sync(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Response {
    let job = Arc::clone(&app);
    let registry = name.clone();
    let synced = app
        .workers
        .run(move || async move {
            let session = job.session(&caller, None);
            sync_now(&job, &session, Some(&registry)).await
        })
        .await
        .and_then(|r| r);
    match synced {
        Ok(list) if !list.is_empty() => done("synced", &name),
        Ok(_) => error_page(&ApiError::not_found(format!(
            "registry `{name}` is not searched"
        ))),
        Err(e) => error_page(&e),
    }
}

#[derive(Template)]
#[template(path = "registry_remove.html", config = "src/serve/askama.toml")]
struct RemovePage {
    nav: &'static str,
    name: String,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RemoveForm {
    /// `yes` once the confirmation page was answered.
    #[serde(default)]
    confirm: String,
}

/// `POST /registries/{name}/remove`: asks first (a page with the same button, `confirm=yes`),
/// then removes it and its Secret.
pub(super) async fn remove(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Form(form): Form<RemoveForm>,
) -> Response {
    if form.confirm != "yes" {
        return html(
            StatusCode::OK,
            &RemovePage {
                nav: "registries",
                name,
            },
        );
    }
    let job = Arc::clone(&app);
    let registry = name.clone();
    let removed = app
        .workers
        .run(move || async move {
            let session = job.session(&caller, None);
            remove_one(&job, &session, &registry).await
        })
        .await
        .and_then(|r| r);
    match removed {
        Ok(()) => done("removed", &name),
        Err(e) => error_page(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_fields_never_show_credentials() {
        let fields = spec_fields(&json!({"name": "r", "type": "helm",
            "helm": {"url": "https://x", "passwordSecret": "p", "token": "t"}, "accessKey": "k"}));
        assert_eq!(
            fields,
            [
                ("type".to_owned(), "helm".to_owned()),
                ("helm.url".to_owned(), "https://x".to_owned())
            ]
        );
    }

    #[test]
    fn the_form_reads_as_a_registry_and_refuses_what_it_cannot_read() {
        let form = AddForm {
            name: " team ".to_owned(),
            kind: "helm".to_owned(),
            endpoint: "https://charts.invalid/addons".to_owned(),
            priority: "5".to_owned(),
            password: "p".to_owned(),
            ..AddForm::default()
        };
        let input = input_of(&form).unwrap();
        assert_eq!(input.name, "team");
        assert_eq!(input.priority, 5);
        assert_eq!(input.password.as_deref(), Some("p"));
        assert_eq!(input.token, None);
        let bad = input_of(&AddForm {
            priority: "high".to_owned(),
            ..form.clone()
        })
        .unwrap_err();
        assert_eq!(bad.fields[0].path, "priority");
        assert!(input_of(&AddForm {
            kind: "ftp".to_owned(),
            ..form
        })
        .is_err());
        assert!(kind_choices("helm")
            .iter()
            .any(|k| k.selected && k.value == "helm"));
    }
}
