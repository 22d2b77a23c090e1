//! What runs before a command writes: the permission to write the addon's state (control plane
//! first: every missing permission named before anything is read or planned), and the refusal
//! of an addon an `Addon` resource declares (the controller owns it and would undo the command).

use crate::context::{Context, EngineChoice, LockOptions, Progress, Session};
use crate::{Error, Result};

/// A command that changes an installed addon, as the refusals name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    /// `enable`.
    Enable,
    /// `upgrade`.
    Upgrade,
    /// `rollback`.
    Rollback,
    /// `disable`.
    Disable,
}

impl Command {
    /// The command's verb.
    pub fn verb(self) -> &'static str {
        match self {
            Command::Enable => "enable",
            Command::Upgrade => "upgrade",
            Command::Rollback => "rollback",
            Command::Disable => "disable",
        }
    }
}

/// What a writing command asks of [`check_write`].
#[derive(Debug, Clone)]
pub struct WriteGuard {
    /// The command.
    pub command: Command,
    /// The addon as the user named it (a `registry/name` reference too).
    pub addon: String,
    /// A dry run writes nothing, so nothing is checked.
    pub dry_run: bool,
    /// Apply even though an `Addon` resource declares the addon (a note instead of a refusal;
    /// never for `disable`).
    pub override_controller: bool,
}

/// The lock options of a writing command: who it is, as other commands are told, and whether
/// it takes locks others hold (`--force-unlock`).
pub fn lock_options(command: &str, force: bool) -> LockOptions {
    LockOptions {
        holder: crate::state::lease::holder_identity(command),
        force,
    }
}

/// Refuses, naming every missing permission, before a writing command reads or plans anything
/// (the full check, with every object of the plan, runs before the first write).
pub async fn check_state(ctx: &Context, command: &str) -> Result<()> {
    let served = ctx.engine != EngineChoice::Direct
        && ctx
            .cluster
            .serves(&crate::model::wire::application_gvk())
            .await?;
    crate::apply::access::check(
        &ctx.cluster,
        command,
        &crate::apply::access::addon_state(&ctx.namespace, served),
    )
    .await
}

/// Unless it is a dry run: [`check_state`] and [`refuse_if_declared`] at once; the permission's
/// refusal comes first.
pub async fn check_write(session: &Session, guard: &WriteGuard) -> Result<()> {
    if guard.dry_run {
        return Ok(());
    }
    let command = format!("`addonctl {} {}`", guard.command.verb(), guard.addon);
    crate::apply::checked_first(
        check_state(session.ctx(), &command),
        refuse_if_declared(
            session,
            &guard.addon,
            guard.command,
            guard.override_controller,
        ),
    )
    .await
}

/// Refuses ([`Error::DeclaredByAddon`]) to enable, upgrade, roll back or disable an addon an
/// `Addon` resource declares: the controller would undo it. `override_controller` (never for
/// `disable`) turns the refusal into a note. One GET; no CRD, or no permission to read `Addon`s,
/// is nothing declared.
pub async fn refuse_if_declared(
    session: &Session,
    reference: &str,
    command: Command,
    override_controller: bool,
) -> Result<()> {
    let Some(name) = addon_name(reference) else {
        return Ok(());
    };
    let ctx = session.ctx();
    let found = match crate::declare::find(&ctx.cluster, &ctx.namespace, name).await {
        Ok(found) => found,
        Err(e) => {
            tracing::debug!("cannot tell whether an `Addon` declares `{name}`: {e}");
            return Ok(());
        }
    };
    if found.is_none() {
        return Ok(());
    }
    if override_controller && command != Command::Disable {
        session.progress().event(&Progress::Note {
            message: format!(
                "addon `{name}` is declared by the `Addon` resource `{}/{name}`: applying anyway (`--override-controller`); the controller applies the `Addon`'s spec again at its next reconcile unless it is suspended",
                ctx.namespace
            ),
        });
        return Ok(());
    }
    Err(Error::DeclaredByAddon {
        addon: name.to_owned(),
        namespace: ctx.namespace.clone(),
        command,
    })
}

/// The addon's name in a reference (`registry/name` or `name`); `None` for a directory (an
/// addon enabled from a path is nobody's declaration).
fn addon_name(reference: &str) -> Option<&str> {
    if std::path::Path::new(reference).is_dir() {
        return None;
    }
    Some(
        reference
            .rsplit_once('/')
            .map_or(reference, |(_, name)| name),
    )
}
