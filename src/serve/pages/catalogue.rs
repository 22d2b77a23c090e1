//! The catalogue: search, tag, registry and installed filters over every addon the caller may
//! see, with installed and update-available badges.

use std::collections::BTreeSet;
use std::sync::Arc;

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;

use super::{given, render};
use crate::serve::api::{self, AddonFilter, AddonItem, AddonList};
use crate::serve::{App, Caller};

#[derive(Debug, Default, Deserialize)]
pub(super) struct CatalogueQuery {
    search: Option<String>,
    tag: Option<String>,
    registry: Option<String>,
    installed: Option<String>,
}

/// A choice of a filter select.
struct Choice {
    value: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "catalogue.html", config = "src/serve/askama.toml")]
struct CataloguePage {
    nav: &'static str,
    search: String,
    tags: Vec<Choice>,
    registries: Vec<Choice>,
    installed: bool,
    filtered: bool,
    addons: Vec<AddonItem>,
    total: usize,
    warnings: Vec<String>,
}

pub(super) async fn page(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<CatalogueQuery>,
) -> Response {
    let filter = AddonFilter {
        search: given(query.search),
        tag: given(query.tag),
        registry: given(query.registry),
        installed: given(query.installed).is_some(),
    };
    let filtered = filter.search.is_some()
        || filter.tag.is_some()
        || filter.registry.is_some()
        || filter.installed;
    let job = Arc::clone(&app);
    render(&app, move || async move {
        let session = job.session(&caller, None);
        let all = api::catalogue(&job, &session, &AddonFilter::default()).await?;
        let shown = if filtered {
            Some(api::catalogue(&job, &session, &filter).await?)
        } else {
            None
        };
        Ok(page_of(all, shown, &filter, filtered))
    })
    .await
}

fn page_of(
    all: AddonList,
    shown: Option<AddonList>,
    filter: &AddonFilter,
    filtered: bool,
) -> CataloguePage {
    let tags: BTreeSet<&str> = all
        .addons
        .iter()
        .flat_map(|a| a.tags.iter().map(String::as_str))
        .collect();
    let registries: BTreeSet<&str> = all.addons.iter().map(|a| a.registry.as_str()).collect();
    let choices = |values: BTreeSet<&str>, chosen: &Option<String>| -> Vec<Choice> {
        values
            .into_iter()
            .map(|v| Choice {
                selected: chosen.as_deref() == Some(v),
                value: v.to_owned(),
            })
            .collect()
    };
    CataloguePage {
        nav: "catalogue",
        tags: choices(tags, &filter.tag),
        registries: choices(registries, &filter.registry),
        search: filter.search.clone().unwrap_or_default(),
        installed: filter.installed,
        filtered,
        total: all.addons.len(),
        warnings: all.warnings.clone(),
        addons: match shown {
            Some(shown) => shown.addons,
            None => all.addons,
        },
    }
}
