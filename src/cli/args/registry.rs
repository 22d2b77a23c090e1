//! clap definitions of `registry`.

#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Debug, Args)]
pub struct RegistryArgs {
    /// Keep registries in the local file instead of the cluster (default: the cluster, or the
    /// local file when there is no kubeconfig).
    #[arg(long, global = true)]
    pub local: bool,
    /// The local registry file (implies `--local`).
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "ADDONCTL_REGISTRY_FILE"
    )]
    pub registry_file: Option<PathBuf>,
    /// Take a registry's lock even though another command holds it (that command is gone).
    #[arg(long, global = true)]
    pub force_unlock: bool,
    #[command(subcommand)]
    pub command: RegistryCommand,
}

#[derive(Debug, Subcommand)]
pub enum RegistryCommand {
    /// Add a registry; it is listed first to check it works (unless `--no-validate`).
    #[command(after_help = help::REGISTRY_ADD)]
    Add(Box<RegistrySettingsArgs>),
    /// Change a registry's settings (only the options given change).
    #[command(after_help = help::REGISTRY_UPDATE)]
    Update(Box<RegistrySettingsArgs>),
    /// List the registries in search order (the built-in one last).
    #[command(after_help = help::REGISTRY_LIST)]
    List {
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
        output: ReportFormat,
    },
    /// Show one registry (credentials are never shown).
    #[command(after_help = help::REGISTRY_GET)]
    Get {
        /// The registry's name.
        name: String,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
        output: ReportFormat,
    },
    /// Remove a registry and its credentials.
    #[command(after_help = help::REGISTRY_REMOVE)]
    Remove {
        /// The registry's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct RegistrySettingsArgs {
    /// The registry's name.
    #[arg(required_unless_present = "from")]
    pub name: Option<String>,
    /// Read the registry (or registries) from a YAML file, e.g. one of `registries/*.yaml`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["kind", "endpoint"])]
    pub from: Option<PathBuf>,
    /// helm, oci, github, gitee, gitlab, s3, oss, git or local (an `oci://` endpoint means oci).
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,
    /// The registry's URL (a directory for `local`); credentials in it are moved to the Secret.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// The directory of the addons inside the repository or bucket.
    #[arg(long)]
    pub path: Option<String>,
    /// A branch or tag.
    #[arg(long = "ref", value_name = "REF")]
    pub reference: Option<String>,
    /// The bucket (S3, OSS).
    #[arg(long)]
    pub bucket: Option<String>,
    /// A token (stored in Secret `addon-registry-<name>`).
    #[arg(long, env = "ADDONCTL_REGISTRY_TOKEN", hide_env_values = true, value_parser = secret_flag)]
    pub token: Option<SecretString>,
    /// A user name (stored in the Secret).
    #[arg(long)]
    pub username: Option<String>,
    /// A password (stored in the Secret).
    #[arg(long, env = "ADDONCTL_REGISTRY_PASSWORD", hide_env_values = true, value_parser = secret_flag)]
    pub password: Option<SecretString>,
    /// A PEM file of CA certificates to trust for this registry.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Accept any TLS certificate, and for git over ssh any host key (test registries only).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub insecure_skip_tls: Option<bool>,
    /// git over ssh: the private key file to log in with (its path is stored, never the key;
    /// without it, the ssh-agent at SSH_AUTH_SOCK is used). An empty value removes it.
    #[arg(long, value_name = "PATH")]
    pub ssh_key: Option<PathBuf>,
    /// git over ssh: the passphrase of --ssh-key (stored in the Secret).
    #[arg(long, env = "ADDONCTL_SSH_KEY_PASSPHRASE", hide_env_values = true, value_parser = secret_flag)]
    pub ssh_key_passphrase: Option<SecretString>,
    /// git over ssh: the known_hosts file the server's host key must be in (default
    /// ~/.ssh/known_hosts). An empty value removes it.
    #[arg(long, value_name = "PATH")]
    pub known_hosts: Option<PathBuf>,
    /// Search order: higher first (default 0); ties go by order of addition.
    #[arg(long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// A type-specific setting `key=value` (repeatable), e.g. `region=eu-west-1`.
    #[arg(long = "option", value_name = "KEY=VALUE")]
    pub options: Vec<String>,
    /// Do not list the registry to check it.
    #[arg(long)]
    pub no_validate: bool,
}

/// Parses a credential flag straight into a [`SecretString`]: it is never a plain `String` in
/// the parsed arguments, and their `Debug` output shows it redacted.
#[allow(
    clippy::unnecessary_wraps,
    reason = "clap's value parsers return a Result"
)]
pub(crate) fn secret_flag(text: &str) -> Result<SecretString, std::convert::Infallible> {
    Ok(SecretString::from(text))
}
