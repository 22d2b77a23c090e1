//! Registry definition files (`registries/*.yaml`): one registry, a list of them, or
//! `registries: [...]`, with `${VAR}` expanded from the environment.

use std::path::Path;

use serde_json::Value;

use crate::error::{AuthoringError, RegistryError};
use crate::model::registry::{
    check_name, strip_endpoint_credentials, Credentials, Registry, RegistrySpec, StoredCredentials,
};
use crate::{Error, Result};

/// Reads registry definitions from a YAML file: one registry, a list of them, or
/// `registries: [...]`. `${VAR}` in string values is replaced by the environment variable (an
/// unset variable is an error naming it). Credentials in the file (`token`, `username`,
/// `password`) are returned apart.
pub fn read_definitions(path: &Path) -> Result<Vec<Registry>> {
    read_definitions_with(path, &|name| std::env::var(name).ok())
}

/// [`read_definitions`] with `${VAR}` looked up by `lookup` instead of in the environment.
pub fn read_definitions_with(
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Registry>> {
    let text = fs_err::read_to_string(path)?;
    let shown = path.display().to_string();
    let (value, _) = crate::yaml::parse_single(&text).map_err(|e| AuthoringError::InvalidYaml {
        file: shown.clone(),
        reason: e.to_string(),
    })?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut object) if object.contains_key("registries") => {
            match object.remove("registries") {
                Some(Value::Array(items)) => items,
                _ => return Err(RegistryError::RegistriesNotList { file: shown }.into()),
            }
        }
        object @ Value::Object(_) => vec![object],
        _ => return Err(RegistryError::NoDefinition { file: shown }.into()),
    };
    let mut registries = Vec::new();
    for item in items {
        let item = expand_env(&item, &shown, lookup)?;
        let mut credentials: Credentials =
            serde_json::from_value::<StoredCredentials>(item.clone())
                .unwrap_or_default()
                .into();
        let mut object = item.as_object().cloned().unwrap_or_default();
        for key in ["token", "username", "password", "sshPassphrase"] {
            object.remove(key);
        }
        let mut spec: RegistrySpec =
            serde_json::from_value(Value::Object(object)).map_err(|e| {
                RegistryError::NotDefinition {
                    file: shown.clone(),
                    reason: e.to_string(),
                }
            })?;
        check_name(&spec.name)?;
        spec.endpoint = strip_endpoint_credentials(spec.kind, &spec.endpoint, &mut credentials);
        spec.order = 0;
        spec.secret_ref = None;
        registries.push(Registry { spec, credentials });
    }
    Ok(registries)
}

fn expand_env(value: &Value, file: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Value> {
    Ok(match value {
        Value::String(text) => Value::String(expand_text(text, file, lookup)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| expand_env(v, file, lookup))
                .collect::<Result<_>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), expand_env(v, file, lookup)?)))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

fn expand_text(text: &str, file: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        let value = lookup(name).filter(|v| !v.is_empty()).ok_or_else(|| {
            Error::from(RegistryError::MissingVariable {
                file: file.to_string(),
                variable: name.to_owned(),
            })
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_variables_are_expanded_in_definitions() {
        let lookup = |name: &str| (name == "SET").then(|| "https://x.invalid".to_owned());
        let err = expand_text("${UNSET}/x", "f.yaml", &lookup).unwrap_err();
        assert!(err.to_string().contains("UNSET"));
        assert_eq!(
            expand_text("${SET}/experimental/", "f", &lookup).unwrap(),
            "https://x.invalid/experimental/"
        );
        assert_eq!(
            expand_text("no variables", "f", &lookup).unwrap(),
            "no variables"
        );
    }
}
