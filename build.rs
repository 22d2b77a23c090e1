//! Rebuilds the crate when the built-in registry (`addons/`) changes, so the embedded copy is
//! current, and records the git commit `addonctl version` prints (`ADDONCTL_GIT_COMMIT`;
//! `unknown` outside a git checkout, e.g. from a published package, unless the variable is set
//! for the build).
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=addons");
    println!("cargo:rerun-if-env-changed=ADDONCTL_GIT_COMMIT");
    let commit = std::env::var("ADDONCTL_GIT_COMMIT")
        .ok()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty() && !c.contains(char::is_control))
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=ADDONCTL_GIT_COMMIT={commit}");
}

/// `git rev-parse HEAD` (12 digits, `-dirty` never added: the build does not decide what is
/// committed), and a rebuild when HEAD or the branch it names moves. Only files that exist are
/// watched: a missing one would rerun this script on every build.
fn git_commit() -> Option<String> {
    // Built from a package unpacked inside some other repository: that commit is not ours.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let manifest = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    if std::fs::canonicalize(top).ok()? != std::fs::canonicalize(manifest).ok()? {
        return None;
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch])?);
    }
    watched.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watched.iter().filter(|p| Path::new(p).is_file()) {
        println!("cargo:rerun-if-changed={path}");
    }
    Some(commit)
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
