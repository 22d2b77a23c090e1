//! `addonctl registry add | update | list | get | remove`.

use std::io::Write;
use std::process::ExitCode;

use addonctl::apply::access;
use addonctl::cluster::Cluster;
use addonctl::model::secret::{ExposeSecret, SecretString};
use addonctl::registry::{
    self, check_name, strip_endpoint_credentials, Credentials, OpenOptions, Registry, RegistrySpec,
    RegistryType, Store,
};
use addonctl::source::builtin::BUILTIN_REGISTRY;
use addonctl::source::cache::CacheOptions;
use addonctl::state::lease;
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
    let writing = match &args.command {
        RegistryCommand::Add(_) => Some("add"),
        RegistryCommand::Update(_) => Some("update"),
        RegistryCommand::Remove { .. } => Some("remove"),
        RegistryCommand::List { .. } | RegistryCommand::Get { .. } => None,
    };
    if let (Some(verb), Store::Cluster { cluster, namespace }) = (writing, &store) {
        // Control plane first: refuse before reading credentials or writing anything.
        access::check(
            cluster,
            &format!("`addonctl registry {verb}`"),
            &access::registry_state(namespace),
        )
        .await?;
    }
    let locks = Locks {
        store: &store,
        force: args.force_unlock,
    };
    match args.command {
        RegistryCommand::Add(settings) => add(&store, &locks, *settings).await,
        RegistryCommand::Update(settings) => update(&store, &locks, *settings).await,
        RegistryCommand::List { output } => list(&store, printer, output).await,
        RegistryCommand::Get { name, output } => get(&store, printer, &name, output).await,
        RegistryCommand::Remove { name } => {
            let lock = locks.take(&name, "remove").await?;
            let removed = store.remove(&name).await;
            Locks::release(lock).await;
            if removed? {
                writeln!(printer.stdout(), "removed registry `{name}`")?;
                Ok(ExitCode::SUCCESS)
            } else {
                Err(user(format!("registry `{name}` does not exist")))
            }
        }
    }
}

/// Per-registry locks of a cluster store (a local file needs none).
struct Locks<'a> {
    store: &'a Store,
    force: bool,
}

impl Locks<'_> {
    /// Takes the lock of registry `name` for `verb`.
    async fn take(&self, name: &str, verb: &str) -> anyhow::Result<Option<lease::Lock>> {
        let Store::Cluster { cluster, namespace } = self.store else {
            return Ok(None);
        };
        let lock = lease::acquire(
            cluster,
            namespace,
            &lease::registry_lease(name),
            &format!("registry {name}"),
            &lease::holder_identity(&format!("registry {verb} {name}")),
            self.force,
        )
        .await?;
        Ok(Some(lock))
    }

    /// Releases a lock (one that cannot be released expires on its own).
    async fn release(lock: Option<lease::Lock>) {
        if let Some(lock) = lock {
            if let Err(e) = lock.release().await {
                tracing::debug!("a registry lock was left to expire: {e}");
            }
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

/// Lists a registry to check that it works.
async fn validate(registry: &Registry) -> anyhow::Result<usize> {
    let options = OpenOptions {
        cache: CacheOptions {
            refresh: true,
            ..CacheOptions::default()
        },
        http: addonctl::source::http::HttpOptions::from_env(),
    };
    let reader = registry::open(registry, &options).map_err(addonctl::Error::from)?;
    let addons = reader.list_addons().await.map_err(|e| {
        user(format!(
            "registry `{}` does not work: {e}\nnothing was stored; check the settings, or store it anyway with `--no-validate`",
            registry.spec.name
        ))
    })?;
    Ok(addons.len())
}

async fn add(
    store: &Store,
    locks: &Locks<'_>,
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
        let kind = settings
            .kind
            .as_deref()
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
    for mut registry in registries {
        check_name(&registry.spec.name).map_err(addonctl::Error::from)?;
        if store.get(&registry.spec.name).await?.is_some() {
            return Err(user(format!(
                "registry `{0}` already exists; change it with `addonctl registry update {0}`",
                registry.spec.name
            )));
        }
        if registry.spec.endpoint.trim().is_empty() {
            return Err(user(format!(
                "registry `{}` needs `--endpoint`",
                registry.spec.name
            )));
        }
        registry.spec.endpoint = strip_endpoint_credentials(
            registry.spec.kind,
            &registry.spec.endpoint,
            &mut registry.credentials,
        );
        let count = if settings.no_validate {
            None
        } else {
            Some(validate(&registry).await?)
        };
        let lock = locks.take(&registry.spec.name, "add").await?;
        let stored = store.add(registry.spec, registry.credentials).await;
        Locks::release(lock).await;
        let stored = stored?;
        match count {
            Some(n) => writeln!(
                stdout,
                "added registry `{}` ({} addon{}) to {}",
                stored.name,
                n,
                if n == 1 { "" } else { "s" },
                store.describe()
            )?,
            None => writeln!(
                stdout,
                "added registry `{}` to {} (not validated)",
                stored.name,
                store.describe()
            )?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn update(
    store: &Store,
    locks: &Locks<'_>,
    settings: RegistrySettingsArgs,
) -> anyhow::Result<ExitCode> {
    if settings.from.is_some() {
        return Err(user(
            "`registry update` takes options, not `--from`; remove the registry and add it again",
        ));
    }
    let name = settings.name.clone().unwrap_or_default();
    // Held from the read to the write: nobody else changes this registry in between.
    let lock = locks.take(&name, "update").await?;
    let result = update_locked(store, &name, &settings).await;
    Locks::release(lock).await;
    result
}

async fn update_locked(
    store: &Store,
    name: &str,
    settings: &RegistrySettingsArgs,
) -> anyhow::Result<ExitCode> {
    let existing = store.get(name).await?.ok_or_else(|| {
        user(format!(
            "registry `{name}` does not exist; add it with `addonctl registry add {name}`"
        ))
    })?;
    let mut registry = existing.clone();
    apply_flags(&mut registry.spec, settings)?;
    let new_credentials = credentials(settings);
    if let Some(credentials) = &new_credentials {
        registry.credentials = credentials.clone();
    }
    let before = registry.credentials.keys();
    registry.spec.endpoint = strip_endpoint_credentials(
        registry.spec.kind,
        &registry.spec.endpoint,
        &mut registry.credentials,
    );
    let moved = registry.credentials.keys() != before;
    if !settings.no_validate {
        validate(&registry).await?;
    }
    let credentials = (new_credentials.is_some() || moved).then_some(registry.credentials);
    store.update(registry.spec, credentials).await?;
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
    let specs = store.list().await?;
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
    let registry = store
        .get(name)
        .await?
        .ok_or_else(|| user(format!("registry `{name}` does not exist")))?;
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
