//! Publishing addons to an OCI registry as Helm does (`helm push`): the chart archive and its
//! config as blobs, an image manifest with Helm's media types under the chart version's tag
//! (`+` written `_`), then the catalog chart (`kubevela-addon-catalog`, its `catalog.json`
//! listing every addon and version) pushed again with the addon added, its version bumped.
//!
//! Blobs the registry already has are not sent again (`HEAD` first). Uploads are monolithic
//! (`POST` for a location, `PUT` with the digest), to the registry's own origin only.

use serde_json::{json, Map, Value};

use super::client::{pull_scope, sha256_digest, OciClient, HELM_CHART, HELM_CONFIG, OCI_MANIFEST};
use super::{
    tag_version, version_tag, Catalog, CatalogEntry, Location, CATALOG_CHART, CATALOG_FILE,
};
use crate::source::archive::{read_tgz, write_tgz, ArchiveLimits};
use crate::source::http::redact;
use crate::source::http::Call;
use crate::source::{Error, Result};

/// What one push wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pushed {
    /// `oci://host/prefix/name`.
    pub reference: String,
    /// The chart's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The tag written.
    pub tag: String,
    /// The manifest's digest.
    pub manifest_digest: String,
    /// The catalog chart version written, when the catalog was updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_version: Option<String>,
}

fn push_scope(repository: &str) -> String {
    format!(
        "{}:pull,push",
        pull_scope(repository).trim_end_matches(":pull")
    )
}

/// The chart metadata of an archive (its `Chart.yaml` as JSON: Helm's config blob).
fn chart_metadata(registry: &str, archive: &[u8]) -> Result<Map<String, Value>> {
    let invalid = |message: String| Error::InvalidContent {
        registry: registry.to_owned(),
        message,
    };
    let files = read_tgz(registry, "chart.tgz", archive, &ArchiveLimits::default())?;
    let text = files
        .iter()
        .find(|(path, _)| path == "Chart.yaml")
        .and_then(|(_, bytes)| std::str::from_utf8(bytes).ok())
        .ok_or_else(|| {
            invalid("the archive has no `Chart.yaml`; make it with `addonctl package`".to_owned())
        })?;
    let (value, _) = crate::yaml::parse_single(text)
        .map_err(|e| invalid(format!("`Chart.yaml` is not valid YAML: {e}")))?;
    let Value::Object(chart) = value else {
        return Err(invalid("`Chart.yaml` is not a mapping".to_owned()));
    };
    for key in ["name", "version"] {
        if !chart.get(key).is_some_and(Value::is_string) {
            return Err(invalid(format!("`Chart.yaml` has no `{key}`")));
        }
    }
    Ok(chart)
}

impl OciClient {
    /// Uploads a blob unless the registry has it; returns its descriptor.
    async fn upload(&self, repository: &str, media_type: &str, bytes: &[u8]) -> Result<Value> {
        let digest = sha256_digest(bytes);
        let scope = push_scope(repository);
        let blob = self.base_url(&format!("v2/{repository}/blobs/{digest}"))?;
        let head = self
            .send(
                &scope,
                Call {
                    method: http::Method::HEAD,
                    limit: 0,
                    answers: &[404],
                    ..Call::get(blob.as_str())
                },
            )
            .await?;
        if head.status != 200 {
            let start = self.base_url(&format!("v2/{repository}/blobs/uploads/"))?;
            let started = self
                .send(
                    &scope,
                    Call {
                        method: http::Method::POST,
                        body: Some(bytes::Bytes::new()),
                        limit: 64 * 1024,
                        ..Call::get(start.as_str())
                    },
                )
                .await?;
            let location = started
                .header("location")
                .and_then(|l| start.join(l).ok())
                .ok_or_else(|| {
                    self.invalid_content(format!(
                        "`{}` gave no upload location",
                        redact(start.as_str())
                    ))
                })?;
            if location.origin() != start.origin() {
                return Err(self.invalid_content(format!(
                    "the upload location `{}` is on another host; not followed",
                    redact(location.as_str())
                )));
            }
            let mut put = location.clone();
            put.query_pairs_mut().append_pair("digest", &digest);
            let headers = [("content-type", "application/octet-stream")];
            self.send(
                &scope,
                Call {
                    method: http::Method::PUT,
                    headers: &headers,
                    body: Some(bytes::Bytes::copy_from_slice(bytes)),
                    limit: 64 * 1024,
                    ..Call::get(put.as_str())
                },
            )
            .await?;
        }
        Ok(json!({"mediaType": media_type, "digest": digest, "size": bytes.len()}))
    }

    /// Pushes a chart archive as `helm push` does; returns the manifest digest and the tag.
    pub async fn push_chart(
        &self,
        repository: &str,
        chart: &Map<String, Value>,
        archive: &[u8],
    ) -> Result<(String, String)> {
        let version = chart
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = chart
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if tag_version(&version_tag(version)).is_none() {
            return Err(self.invalid_content(format!(
                "chart `{name}` version `{version}` is not strict semver; OCI registries keep \
                 versions as tags that Helm reads only when they are"
            )));
        }
        let config_bytes = serde_json::to_vec(chart)
            .map_err(|e| self.invalid_content(format!("cannot write the chart config: {e}")))?;
        let config = self.upload(repository, HELM_CONFIG, &config_bytes).await?;
        let layer = self.upload(repository, HELM_CHART, archive).await?;
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": config,
            "layers": [layer],
            "annotations": {
                "org.opencontainers.image.title": name,
                "org.opencontainers.image.version": version,
            },
        });
        let bytes = serde_json::to_vec(&manifest)
            .map_err(|e| self.invalid_content(format!("cannot write the manifest: {e}")))?;
        let tag = version_tag(version);
        let url = self.base_url(&format!("v2/{repository}/manifests/{tag}"))?;
        let headers = [("content-type", OCI_MANIFEST)];
        self.send(
            &push_scope(repository),
            Call {
                method: http::Method::PUT,
                headers: &headers,
                body: Some(bytes::Bytes::from(bytes.clone())),
                limit: 64 * 1024,
                ..Call::get(url.as_str())
            },
        )
        .await?;
        Ok((sha256_digest(&bytes), tag))
    }
}

/// Pushes a chart archive (from `addonctl package`) to `location` and adds it to the catalog
/// chart.
pub async fn push(client: &OciClient, location: &Location, archive: &[u8]) -> Result<Pushed> {
    let chart = chart_metadata(client.registry(), archive)?;
    let name = chart
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let version = chart
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let repository = location.repository(&name);
    let (manifest_digest, tag) = client.push_chart(&repository, &chart, archive).await?;
    let catalog_version = update_catalog(client, location, &chart).await?;
    Ok(Pushed {
        reference: format!("{}/{name}", location.url()),
        name,
        version,
        tag,
        manifest_digest,
        catalog_version: Some(catalog_version),
    })
}

/// Adds `chart` to the catalog chart and pushes it with its patch version bumped.
async fn update_catalog(
    client: &OciClient,
    location: &Location,
    chart: &Map<String, Value>,
) -> Result<String> {
    let repository = location.repository(CATALOG_CHART);
    let text = |key: &str| chart.get(key).and_then(Value::as_str).map(str::to_owned);
    let (name, version) = (
        text("name").unwrap_or_default(),
        text("version").unwrap_or_default(),
    );
    let (mut catalog, newest) = match client.tags(&repository).await {
        Ok(tags) => {
            let newest = tags.iter().filter_map(|t| tag_version(t)).max();
            let catalog = match &newest {
                Some(v) => read_catalog(client, &repository, &version_tag(&v.to_string())).await?,
                None => Catalog::default(),
            };
            (catalog, newest)
        }
        Err(Error::NotFound { .. }) => (Catalog::default(), None),
        Err(e) => return Err(e),
    };
    if !catalog.addons.iter().any(|a| a.name == name) {
        catalog.addons.push(CatalogEntry {
            name: name.clone(),
            ..CatalogEntry::default()
        });
    }
    let Some(entry) = catalog.addons.iter_mut().find(|a| a.name == name) else {
        return Err(client.invalid_content("the catalog lost an entry".to_owned()));
    };
    if !entry.versions.contains(&version) {
        entry.versions.push(version.clone());
    }
    entry
        .versions
        .sort_by_key(|v| std::cmp::Reverse(tag_version(&version_tag(v))));
    if entry.versions.first() == Some(&version) {
        entry.description = text("description");
        entry.tags = chart
            .get("keywords")
            .and_then(Value::as_array)
            .map(|k| {
                k.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
    }
    catalog.addons.sort_by(|a, b| a.name.cmp(&b.name));
    let next = newest.map_or_else(
        || semver::Version::new(0, 1, 0),
        |v| semver::Version::new(v.major, v.minor, v.patch + 1),
    );
    let catalog_chart = json!({
        "apiVersion": "v2",
        "name": CATALOG_CHART,
        "version": next.to_string(),
        "description": "The addons of this registry (KubeVela's addon catalog)",
        "type": "application",
    });
    let Value::Object(catalog_chart) = catalog_chart else {
        return Err(client.invalid_content("the catalog chart is not a mapping".to_owned()));
    };
    let json_bytes = serde_json::to_vec_pretty(&catalog)
        .map_err(|e| client.invalid_content(format!("cannot write `{CATALOG_FILE}`: {e}")))?;
    let chart_yaml =
        crate::yaml::to_string(&Value::Object(catalog_chart.clone())).map_err(|e| {
            client.invalid_content(format!("cannot write the catalog's `Chart.yaml`: {e}"))
        })?;
    let files = vec![
        ("Chart.yaml".to_owned(), chart_yaml.into_bytes()),
        (CATALOG_FILE.to_owned(), json_bytes),
    ];
    let archive = write_tgz(Some(CATALOG_CHART), &files)
        .map_err(|e| client.invalid_content(format!("cannot write the catalog chart: {e}")))?;
    client
        .push_chart(&repository, &catalog_chart, &archive)
        .await?;
    Ok(next.to_string())
}

async fn read_catalog(client: &OciClient, repository: &str, tag: &str) -> Result<Catalog> {
    let fetched = client.manifest(repository, tag).await?;
    let Some(layer) = fetched
        .manifest
        .layers
        .iter()
        .find(|l| l.media_type == HELM_CHART)
    else {
        return Err(client.invalid_content(format!("`{repository}:{tag}` holds no chart")));
    };
    let archive = client
        .blob(repository, layer, super::MAX_ARCHIVE_BYTES)
        .await?;
    let files = read_tgz(
        client.registry(),
        "catalog.tgz",
        &archive,
        &ArchiveLimits::default(),
    )?;
    let Some((_, json)) = files.iter().find(|(path, _)| path == CATALOG_FILE) else {
        return Err(client.invalid_content(format!("`{repository}:{tag}` has no `{CATALOG_FILE}`")));
    };
    serde_json::from_slice(json).map_err(|e| {
        client.invalid_content(format!(
            "`{CATALOG_FILE}` of `{repository}:{tag}` is not valid: {e}"
        ))
    })
}
