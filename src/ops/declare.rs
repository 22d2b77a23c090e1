//! Declaring an addon for the controller instead of applying it: an `Addon` resource (and the
//! Secret of its secret parameters) written after its arguments are validated by the same
//! plan an enable makes, or deleted (the controller's finalizer then disables the addon), with
//! the wait until it is gone.

use std::time::{Duration, Instant};

use crate::context::{Progress, Session};
use crate::controller::crd::Addon;
use crate::declare::{self, Declaration, Error, Request, Written};

/// An addon to declare.
#[derive(Debug, Clone)]
pub struct DeclareOp {
    /// The addon, its version, arguments, targets and policies.
    pub request: Request,
    /// Validate and build the `Addon`, write nothing.
    pub dry_run: bool,
    /// No control plane could be asked (a dry run planned against an empty cluster).
    pub offline: bool,
}

/// What [`declare`] made, and (unless a dry run) wrote.
#[derive(Debug)]
pub struct Declared {
    /// The `Addon` and its secret parameters.
    pub declaration: Declaration,
    /// What was written (`None`: a dry run).
    pub written: Option<Written>,
}

/// Validates and writes (unless a dry run) the `Addon` of `op`. Without the `Addon` resource
/// served, a write is refused and a dry run notes it.
pub async fn declare(session: &Session, op: &DeclareOp) -> Result<Declared, Error> {
    let ctx = session.ctx();
    if !op.offline && !declare::served(&ctx.cluster).await? {
        if !op.dry_run {
            return Err(Error::NotInstalled);
        }
        session.progress().event(&Progress::Note {
            message: Error::NotInstalled.to_string(),
        });
    }
    let declaration = declare::declare(ctx, &op.request).await?;
    let written = if op.dry_run {
        None
    } else {
        Some(declare::write(ctx, &declaration).await?)
    };
    Ok(Declared {
        declaration,
        written,
    })
}

/// Deletes the `Addon` of `name` (unless `dry_run`), then waits until it is gone when `wait`
/// says how long: its finalizer ran, the controller disabled the addon.
pub async fn undeclare(
    session: &Session,
    name: &str,
    dry_run: bool,
    wait: Option<Duration>,
) -> Result<(), Error> {
    let ctx = session.ctx();
    if !declare::served(&ctx.cluster).await? {
        return Err(Error::NotInstalled);
    }
    let ns = &ctx.namespace;
    if declare::find(&ctx.cluster, ns, name).await?.is_none() {
        return Err(Error::Invalid(format!(
            "no `Addon` `{name}` in namespace `{ns}`: nothing declares it (without `--declarative`, `disable` disables an addon enabled by the CLI)"
        )));
    }
    if dry_run {
        return Ok(());
    }
    declare::delete(&ctx.cluster, ns, name).await?;
    if let Some(timeout) = wait {
        wait_gone(session, name, timeout).await?;
    }
    Ok(())
}

/// Waits until the `Addon` is gone (its finalizer ran: the addon is disabled): read, and while
/// it is there, watch it from the version read for its next change (a pause of 100 ms, doubling
/// up to 1 s, when the watch cannot be made or ends at once without an event), and read again.
async fn wait_gone(session: &Session, name: &str, timeout: Duration) -> Result<(), Error> {
    let ctx = session.ctx();
    let started = Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        let found: Option<Addon> = declare::find(&ctx.cluster, &ctx.namespace, name).await?;
        let Some(addon) = found else {
            return Ok(());
        };
        if started.elapsed() > timeout {
            let refused = addon
                .status
                .as_ref()
                .and_then(|s| s.condition("Degraded"))
                .filter(|c| c.reason == "DisableRefused")
                .map(|c| format!(": {}", c.message))
                .unwrap_or_default();
            return Err(Error::Failed(format!(
                "the `Addon` `{name}` is still there after {}s (the controller has not disabled the addon{refused})",
                timeout.as_secs()
            )));
        }
        let left = timeout.saturating_sub(started.elapsed());
        let watched = Instant::now();
        let changed = match addon.metadata.resource_version.as_deref() {
            Some(version) => ctx
                .cluster
                .changed_since(
                    &declare::addon_gvk(),
                    Some(&ctx.namespace),
                    name,
                    version,
                    left,
                )
                .await
                .unwrap_or(false),
            None => false,
        };
        // No event: the watch could not be made, or ended at once (a pause before the next
        // read); a watch that lasted its time without an event is followed by a read at once.
        if !changed && watched.elapsed() < Duration::from_secs(1) {
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}
