//! Ssh remotes of a git registry: the check of a remote's host key against the known_hosts file
//! and the credentials offered to it.

use std::path::PathBuf;

use git2::RemoteCallbacks;

use super::known_hosts::{self, KnownHosts, Verdict};
use super::target::SshTarget;
use super::{Error, Inner, Result};
use crate::model::secret::ExposeSecret;

/// Checks an ssh server's host key against the known_hosts file; the error says what to do.
fn check_host_key(
    target: &SshTarget,
    hostkey: &git2::cert::CertHostkey<'_>,
    known: Option<&KnownHosts>,
) -> std::result::Result<(), String> {
    let host = target.known_hosts_name();
    let skip = "or skip the check with `--insecure-skip-tls` (test servers only)";
    let Some(key) = hostkey.hostkey() else {
        return Err(format!(
            "the ssh server `{host}` sent a host key that cannot be checked; {skip}"
        ));
    };
    let kind = known_hosts::key_type(key).unwrap_or("unknown");
    let fingerprint = known_hosts::fingerprint(key);
    let Some(known) = known else {
        return Err(format!(
            "the ssh host key of `{host}` ({kind} {fingerprint}) cannot be checked: there is no \
             known_hosts file (HOME is not set); name one with `--known-hosts PATH`, {skip}"
        ));
    };
    let file = known.path.display();
    let port = if target.port == 22 {
        String::new()
    } else {
        format!("-p {} ", target.port)
    };
    match known.check(target, key) {
        Verdict::Known => Ok(()),
        Verdict::Changed(lines) => Err(format!(
            "the ssh host key of `{host}` has CHANGED: the server sent {kind} {fingerprint}, \
             which is not the key `{file}` holds for it (line {}); someone may be intercepting \
             the connection, or the server's key was replaced. If the change is expected, remove \
             the old key (`ssh-keygen -R '{host}' -f {file}`) and add the new one after checking \
             its fingerprint with the server's administrator",
            lines
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Verdict::Revoked(line) => Err(format!(
            "the ssh host key of `{host}` ({kind} {fingerprint}) is marked revoked in `{file}` \
             (line {line}); ask the server's administrator for its current key"
        )),
        Verdict::Unknown(others) => Err(format!(
            "the ssh host key of `{host}` ({kind} {fingerprint}) is unknown: `{file}` {}; check \
             the fingerprint with the server's administrator, then add the key (for example \
             `ssh-keyscan {port}-t {kind} {} >> {file}`), name another file with \
             `--known-hosts PATH`, {skip}",
            if !known.exists {
                "does not exist".to_owned()
            } else if others.is_empty() {
                "does not list the host".to_owned()
            } else {
                format!("lists it only with keys of type {}", others.join(", "))
            },
            target.host,
        )),
    }
}

impl Inner {
    /// Authentication (a key file, else the ssh-agent) and host-key checking for ssh remotes.
    pub(super) fn ssh_callbacks<'a>(
        &'a self,
        callbacks: &mut RemoteCallbacks<'a>,
        target: &'a SshTarget,
        known_hosts: Option<&'a KnownHosts>,
    ) {
        let options = &self.options;
        let host = target.known_hosts_name();
        let mut key_attempts = 0;
        callbacks.credentials(move |_url, user_from_url, allowed| {
            let user = user_from_url
                .or(target.user.as_deref())
                .unwrap_or("git");
            let refuse = |message: String| {
                Err(git2::Error::new(
                    git2::ErrorCode::Auth,
                    git2::ErrorClass::Ssh,
                    message,
                ))
            };
            if allowed.is_username() {
                return git2::Cred::username(user);
            }
            if !allowed.is_ssh_key() {
                return refuse(format!(
                    "`{host}` accepts no public-key authentication for user `{user}`, the only kind \
                     addonctl uses over ssh"
                ));
            }
            key_attempts += 1;
            match &options.ssh_key {
                Some(key) if key_attempts > 1 => refuse(format!(
                    "`{host}` did not accept the ssh key `{}` for user `{user}`; check that its \
                     public key is authorized for that user on the server{}",
                    key.display(),
                    if options.ssh_passphrase.is_some() { " and that the passphrase is right" } else { "" }
                )),
                Some(key) => {
                    if !key.is_file() {
                        return refuse(format!(
                            "the ssh key file `{}` does not exist or is not a file; give the path \
                             of a private key with `--ssh-key`",
                            key.display()
                        ));
                    }
                    let mut public = key.clone().into_os_string();
                    public.push(".pub");
                    let public = PathBuf::from(public);
                    git2::Cred::ssh_key(
                        user,
                        public.is_file().then_some(public.as_path()),
                        key,
                        options
                            .ssh_passphrase
                            .as_ref()
                            .map(ExposeSecret::expose_secret),
                    )
                }
                None if key_attempts > 1 => refuse(format!(
                    "`{host}` accepted none of the ssh-agent's keys for user `{user}`; add the \
                     right key to the agent (`ssh-add`) or give one with `--ssh-key`"
                )),
                None if std::env::var_os("SSH_AUTH_SOCK").is_some_and(|s| !s.is_empty()) => {
                    git2::Cred::ssh_key_from_agent(user)
                }
                None => refuse(format!(
                    "`{host}` wants an ssh key for user `{user}` and none is configured: give the \
                     registry a private key with `--ssh-key PATH`, or run an ssh-agent holding \
                     the key (`SSH_AUTH_SOCK`)"
                )),
            }
        });
        let skip = options.insecure_skip_tls;
        callbacks.certificate_check(move |certificate, _host| {
            let Some(hostkey) = certificate.as_hostkey() else {
                return Ok(git2::CertificateCheckStatus::CertificatePassthrough);
            };
            if skip {
                return Ok(git2::CertificateCheckStatus::CertificateOk);
            }
            match check_host_key(target, hostkey, known_hosts) {
                Ok(()) => Ok(git2::CertificateCheckStatus::CertificateOk),
                Err(message) => {
                    if let Ok(mut problem) = self.host_key_problem.lock() {
                        *problem = Some(message.clone());
                    }
                    Err(git2::Error::new(
                        git2::ErrorCode::Certificate,
                        git2::ErrorClass::Ssh,
                        message,
                    ))
                }
            }
        });
    }

    /// The known_hosts file of an ssh remote, read (`None` for other remotes).
    pub(super) fn known_hosts(&self) -> Result<Option<KnownHosts>> {
        if self.ssh.is_none() || self.options.insecure_skip_tls {
            return Ok(None);
        }
        let Some(path) = self
            .options
            .known_hosts
            .clone()
            .or_else(known_hosts::default_path)
        else {
            return Ok(None);
        };
        KnownHosts::load(&path)
            .map(Some)
            .map_err(|e| Error::InvalidContent {
                registry: self.registry.clone(),
                message: format!(
                "cannot read the known_hosts file: {e}; name a readable one with `--known-hosts`"
            ),
            })
    }
}
