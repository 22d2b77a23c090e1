//! `addonctl registry add | update | list | get | remove`.

use std::io::Write;
use std::process::ExitCode;

use addonctl::cluster::Cluster;
use addonctl::model::secret::{ExposeSecret, SecretString};
use addonctl::registry::{self, Credentials, Registry, RegistrySpec, RegistryType, Store};
use addonctl::source::builtin::BUILTIN_REGISTRY;
use serde_json::json;

use crate::cli::args::{RegistryArgs, RegistryCommand, RegistrySettingsArgs, ReportFormat};
use crate::cli::diagnostics::user;
use crate::cli::printer::Printer;
use crate::cli::settings::{ClusterSettings, GlobalSettings};

/// Runs one `registry` subcommand; `cluster`: how to reach the control plane (`None` when the
/// command keeps to a local registry file, `--local` or `--registry-file`).
pub async fn run(
    global: &GlobalSettings,
    cluster: Option<&ClusterSettings>,
    printer: Printer,
    args: RegistryArgs,
) -> anyhow::Result<ExitCode> {
    let store = store(global, cluster, printer, &args).await?;
    let writing = addonctl::ops::registry::Writing {
        force_unlock: args.force_unlock,
    };
    match args.command {
        RegistryCommand::Add(settings) => add(&store, writing, *settings).await,
        RegistryCommand::Update(settings) => update(&store, writing, *settings).await,
        RegistryCommand::List { output } => list(&store, printer, output).await,
        RegistryCommand::Get { name, output } => get(&store, printer, &name, output).await,
        RegistryCommand::Remove { name } => {
            addonctl::ops::registry::remove(&store, &name, writing).await?;
            writeln!(printer.stdout(), "removed registry `{name}`")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The cluster's store, or the local file (asked for, or when there is no kubeconfig).
async fn store(
    global: &GlobalSettings,
    cluster: Option<&ClusterSettings>,
    printer: Printer,
    args: &RegistryArgs,
) -> anyhow::Result<Store> {
    if let Some(file) = &args.registry_file {
        return Ok(Store::File(file.clone()));
    }
    let (false, Some(settings)) = (args.local, cluster) else {
        return Ok(Store::File(registry::default_file()));
    };
    match Cluster::connect(&settings.connect_options()).await {
        Ok(cluster) => {
            if let Some(notice) = printer.notice() {
                cluster.set_notice(notice);
            }
            Ok(Store::Cluster {
                cluster: Box::new(cluster),
                namespace: global.namespace.clone(),
            })
        }
        Err(addonctl::cluster::Error::Config(message)) => {
            let file = registry::default_file();
            tracing::warn!(
                "no cluster ({message}); using the local registry file `{}`",
                file.display()
            );
            Ok(Store::File(file))
        }
        Err(e) => Err(addonctl::Error::from(e).into()),
    }
}

/// The credentials the flags give (`None` when no credential flag was used).
fn credentials(settings: &RegistrySettingsArgs) -> Option<Credentials> {
    let credentials = Credentials {
        token: given(settings.token.as_ref()),
        username: settings.username.clone().filter(|s| !s.is_empty()),
        password: given(settings.password.as_ref()),
        ssh_passphrase: given(settings.ssh_key_passphrase.as_ref()),
        docker_config: None,
        policy_keys: addonctl::source::oci::SecretKeys::new(),
    };
    (!credentials.is_empty()).then_some(credentials)
}

/// A credential flag's value; an empty one is no credential.
fn given(flag: Option<&SecretString>) -> Option<SecretString> {
    flag.filter(|secret| !secret.expose_secret().is_empty())
        .cloned()
}

/// Applies the flags to a spec.
fn apply_flags(spec: &mut RegistrySpec, settings: &RegistrySettingsArgs) -> anyhow::Result<()> {
    if let Some(kind) = &settings.kind {
        spec.kind = kind
            .parse::<RegistryType>()
            .map_err(addonctl::Error::from)?;
    }
    if let Some(endpoint) = &settings.endpoint {
        endpoint.clone_into(&mut spec.endpoint);
    }
    // KubeVela keeps an OCI registry as a Helm entry with an `oci://` URL: so does `--type helm`.
    if spec.kind == RegistryType::Helm && spec.endpoint.trim_start().starts_with("oci://") {
        spec.kind = RegistryType::Oci;
    }
    let text = |value: &Option<String>| value.clone().filter(|s| !s.is_empty());
    if settings.path.is_some() {
        spec.path = text(&settings.path);
    }
    if settings.reference.is_some() {
        spec.reference = text(&settings.reference);
    }
    if settings.bucket.is_some() {
        spec.bucket = text(&settings.bucket);
    }
    if let Some(priority) = settings.priority {
        spec.priority = priority;
    }
    if let Some(insecure) = settings.insecure_skip_tls {
        spec.insecure_skip_tls = insecure;
    }
    if let Some(file) = &settings.ca_file {
        let pem = fs_err::read_to_string(file)?;
        if !pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(user(format!(
                "`{}` holds no PEM certificate",
                file.display()
            )));
        }
        spec.ca_bundle = Some(pem);
    }
    // ssh settings of git registries: file paths only (the key itself stays in its file).
    for (flag, key, value) in [
        ("--ssh-key", registry::SSH_KEY_OPTION, &settings.ssh_key),
        (
            "--known-hosts",
            registry::KNOWN_HOSTS_OPTION,
            &settings.known_hosts,
        ),
    ] {
        let Some(path) = value else { continue };
        if path.as_os_str().is_empty() {
            spec.options.remove(key);
            continue;
        }
        if spec.kind != RegistryType::Git {
            return Err(user(format!(
                "`{flag}` is for registries of type `git` (over ssh), not `{}`",
                spec.kind
            )));
        }
        // Stored absolute, so that it means the same file from any directory.
        let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        if !path.is_file() {
            return Err(user(format!("`{flag} {}`: no such file", path.display())));
        }
        spec.options
            .insert(key.to_owned(), path.to_string_lossy().into_owned());
    }
    for option in &settings.options {
        let Some((key, value)) = option.split_once('=') else {
            return Err(user(format!(
                "`--option {option}`: write it as `key=value`"
            )));
        };
        if value.is_empty() {
            spec.options.remove(key);
        } else {
            spec.options.insert(key.to_owned(), value.to_owned());
        }
    }
    Ok(())
}

async fn add(
    store: &Store,
    writing: addonctl::ops::registry::Writing,
    settings: RegistrySettingsArgs,
) -> anyhow::Result<ExitCode> {
    let registries = if let Some(file) = &settings.from {
        let mut registries = registry::read_definitions(file)?;
        if registries.len() > 1 && settings.name.is_some() {
            return Err(user(format!(
                "`{}` defines {} registries; give no name to add them all",
                file.display(),
                registries.len()
            )));
        }
        for registry in &mut registries {
            if let Some(name) = &settings.name {
                name.clone_into(&mut registry.spec.name);
            }
            apply_flags(&mut registry.spec, &settings)?;
            if let Some(credentials) = credentials(&settings) {
                registry.credentials = credentials;
            }
        }
        registries
    } else {
        let name = settings.name.clone().unwrap_or_default();
        let oci = settings
            .endpoint
            .as_deref()
            .is_some_and(|e| e.trim_start().starts_with("oci://"));
        let kind = settings
            .kind
            .as_deref()
            .or(oci.then_some("oci"))
            .ok_or_else(|| user("`registry add` needs `--type` (or `--from FILE`)"))?
            .parse::<RegistryType>()
            .map_err(addonctl::Error::from)?;
        let mut spec = RegistrySpec {
            name,
            kind,
            ..RegistrySpec::default()
        };
        apply_flags(&mut spec, &settings)?;
        vec![Registry {
            spec,
            credentials: credentials(&settings).unwrap_or_default(),
        }]
    };
    let mut stdout = std::io::stdout().lock();
    for registry in registries {
        let added =
            addonctl::ops::registry::add(store, vec![registry], !settings.no_validate, writing)
                .await?;
        for added in added {
            match added.addons {
                Some(n) => writeln!(
                    stdout,
                    "added registry `{}` ({} addon{}) to {}",
                    added.spec.name,
                    n,
                    if n == 1 { "" } else { "s" },
                    store.describe()
                )?,
                None => writeln!(
                    stdout,
                    "added registry `{}` to {} (not validated)",
                    added.spec.name,
                    store.describe()
                )?,
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn update(
    store: &Store,
    writing: addonctl::ops::registry::Writing,
    settings: RegistrySettingsArgs,
) -> anyhow::Result<ExitCode> {
    if settings.from.is_some() {
        return Err(user(
            "`registry update` takes options, not `--from`; remove the registry and add it again",
        ));
    }
    let name = settings.name.clone().unwrap_or_default();
    addonctl::ops::registry::update(
        store,
        &name,
        |spec| apply_flags(spec, &settings),
        credentials(&settings),
        !settings.no_validate,
        writing,
    )
    .await
    .map_err(|e| match e {
        addonctl::ops::registry::UpdateError::Library(e) => anyhow::Error::from(e),
        addonctl::ops::registry::UpdateError::Change(e) => e,
    })?;
    writeln!(std::io::stdout().lock(), "updated registry `{name}`")?;
    Ok(ExitCode::SUCCESS)
}

fn row(spec: &RegistrySpec) -> [String; 6] {
    [
        spec.name.clone(),
        spec.kind.to_string(),
        spec.endpoint.clone(),
        spec.path.clone().unwrap_or_default(),
        spec.reference.clone().unwrap_or_default(),
        spec.priority.to_string(),
    ]
}

async fn list(store: &Store, printer: Printer, output: ReportFormat) -> anyhow::Result<ExitCode> {
    let specs = addonctl::ops::registry::list(store).await?;
    let mut values: Vec<serde_json::Value> = specs
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    values.push(json!({"name": BUILTIN_REGISTRY, "type": "builtin", "endpoint": ""}));
    if !printer.structured(&values, output)? {
        let mut stdout = printer.stdout();
        let mut rows = vec![[
            "NAME".to_owned(),
            "TYPE".to_owned(),
            "ENDPOINT".to_owned(),
            "PATH".to_owned(),
            "REF".to_owned(),
            "PRIORITY".to_owned(),
        ]];
        rows.extend(specs.iter().map(row));
        rows.push([
            BUILTIN_REGISTRY.to_owned(),
            "builtin".to_owned(),
            "(embedded in addonctl)".to_owned(),
            String::new(),
            String::new(),
            "last".to_owned(),
        ]);
        let widths: Vec<usize> = (0..6)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for row in rows {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            writeln!(stdout, "{}", line.join("  ").trim_end())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn get(
    store: &Store,
    printer: Printer,
    name: &str,
    output: ReportFormat,
) -> anyhow::Result<ExitCode> {
    let registry = addonctl::ops::registry::get(store, name).await?;
    let mut value = serde_json::to_value(&registry.spec)?;
    if let Some(object) = value.as_object_mut() {
        if object.contains_key("caBundle") {
            object.insert("caBundle".into(), json!("(PEM, set)"));
        }
        object.insert("credentials".into(), json!(registry.credentials.keys()));
    }
    // One registry reads best as YAML.
    let format = match output {
        ReportFormat::Text => ReportFormat::Yaml,
        other => other,
    };
    printer.structured(&value, format)?;
    Ok(ExitCode::SUCCESS)
}
