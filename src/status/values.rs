//! `get values`: the stored arguments of an installed addon, as a file `enable -f` takes back.

use serde_json::{Map, Value};

use super::Detail;
use crate::state::Store;
use crate::{Error, Result};

/// The stored arguments of an installed addon.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredValues {
    /// The arguments (its `clusters` among them), secrets masked unless asked otherwise.
    pub values: Value,
    /// Whether any secret was masked (a file of these values would store the mask).
    pub masked: bool,
}

/// The stored arguments of the installed addon `name` (its `clusters` among them), with every
/// `secret()` parameter masked unless `show_secrets`.
///
/// Masking needs the addon's parameter schema, read from the installed version in the
/// catalogue (`detail`); when no registry has that version any more, only `show_secrets`
/// prints them.
pub async fn stored_values(
    store: Store<'_>,
    detail: Detail<'_>,
    name: &str,
    show_secrets: bool,
) -> Result<StoredValues> {
    let all = store.installed().await?;
    let Some(current) = all.get(name) else {
        return Err(Error::NotEnabled {
            addon: name.to_owned(),
        });
    };
    let args = store.stored_args(name).await?;
    let plain = Value::Object(args.clone());
    if show_secrets || args.is_empty() {
        return Ok(StoredValues {
            values: plain,
            masked: false,
        });
    }
    let values = masked(detail, name, &current.version, &current.registry, args).await?;
    Ok(StoredValues {
        masked: values != plain,
        values,
    })
}

/// `args` with the secret parameters of `name` at `version` masked.
async fn masked(
    detail: Detail<'_>,
    name: &str,
    version: &str,
    registry: &str,
    args: Map<String, Value>,
) -> Result<Value> {
    let unknown = |reason: String| Error::SecretsUnknown {
        addon: name.to_owned(),
        version: version.to_owned(),
        reason,
    };
    let prefer = (!registry.is_empty()).then_some(registry);
    let found = detail
        .catalog
        .find(name, Some(version), None, prefer)
        .await
        .map_err(|e| unknown(e.to_string()))?;
    let package = crate::loader::load(found.reader.as_ref(), &found.addon)
        .await
        .map_err(|e| unknown(e.to_string()))?;
    let schema = detail
        .renderer
        .parameter_schema(&package)
        .map_err(|e| unknown(e.to_string()))?;
    Ok(schema.mask(&Value::Object(args)))
}
