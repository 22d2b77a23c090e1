//! `addonctl completion <shell>`: a completion script from the command definition itself, plus
//! addon and cluster names.
//!
//! The commands, subcommands and options are clap_complete's static script. Names cannot be
//! static, so each script gets a small wrapper that, where a command takes an addon (`enable`,
//! `status`, `get values`, …) or a cluster (`--clusters`, `cluster detach|labels`), asks the
//! hidden `addonctl __complete addons|clusters` and falls back to the static script everywhere
//! else. Not clap_complete's dynamic completion: it is behind an unstable feature, and it would
//! run the binary for every completion, commands and options included.
//!
//! `__complete` is bounded: it answers within [`BOUND`] with what it has by then (the built-in and
//! directory registries at once; the installed addons, stored registries and joined clusters when
//! the control plane answers in time), never asks anything and never prints an error (the
//! scripts drop stderr as well).

use std::collections::BTreeSet;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::CommandFactory;
use tokio::time::{timeout_at, Instant};

use addonctl::source::catalog::Catalog;

use crate::cli::args::{Cli, CompleteWhat, CompletionArgs, GlobalArgs};
use crate::cli::printer::Printer;
use crate::cli::settings::{self, ClusterSettings, GlobalSettings};

/// How long `__complete` may take, the control plane and registries included.
pub const BOUND: Duration = Duration::from_secs(1);

/// Commands whose first argument is an addon (aliases included); `get values` and `rollout run`
/// are written into the scripts as the two-word cases.
const ADDON_COMMANDS: &[&str] = &[
    "enable",
    "install",
    "disable",
    "uninstall",
    "status",
    "upgrade",
    "diff",
    "history",
    "rollback",
    "wait",
    "render",
];

/// Global options passed on to `__complete`, so the names come from the cluster and directories
/// the command line names.
const PASSED_ON: &[&str] = &[
    "--kubeconfig",
    "--context",
    "--system-namespace",
    "--registry-dir",
];

/// `completion bash|zsh|fish|powershell`: the script on stdout. Built from the full definition
/// (global options included in every command, as they are accepted there).
pub fn run(printer: Printer, args: &CompletionArgs) -> anyhow::Result<ExitCode> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "addonctl", &mut script);
    let script = String::from_utf8(script)?;
    let options = value_options(&mut command);
    let script = match args.shell {
        clap_complete::Shell::Bash => format!("{script}{}", bash_names(&options)),
        clap_complete::Shell::Zsh => zsh_names(&script, &options),
        clap_complete::Shell::Fish => format!("{script}{}", fish_names(&options)),
        // PowerShell keeps the static script: commands and options only.
        _ => script,
    };
    printer.stdout().write_all(script.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// `__complete addons|clusters`: the names, sorted, one a line. Always exits 0.
pub async fn names(global: &GlobalArgs, printer: Printer, what: CompleteWhat) -> ExitCode {
    let deadline = Instant::now() + BOUND;
    let names = match (
        GlobalSettings::resolve(global),
        ClusterSettings::resolve(global),
    ) {
        (Ok(global), Ok(mut cluster)) => {
            cluster.request_timeout = cluster.request_timeout.min(BOUND);
            match what {
                CompleteWhat::Addons => addon_names(&global, &cluster, deadline).await,
                CompleteWhat::Clusters => cluster_names(&global, &cluster, deadline).await,
            }
        }
        _ => BTreeSet::new(),
    };
    let mut out = printer.stdout();
    for name in names {
        if writeln!(out, "{name}").is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// The addons of every registry that lists them before `deadline` (directories, the local
/// registry file, the stored registries, the built-in one) and the installed addons.
async fn addon_names(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    deadline: Instant,
) -> BTreeSet<String> {
    let quiet = Printer::new(true);
    let offline = async {
        match settings::offline_catalog(global).await {
            Ok(catalog) => listed(&catalog, deadline).await,
            Err(_) => BTreeSet::new(),
        }
    };
    let online = async {
        let Ok(Ok(ctx)) =
            timeout_at(deadline, settings::connect(global, cluster, quiet, false)).await
        else {
            return BTreeSet::new();
        };
        let installed = async {
            match timeout_at(deadline, ctx.state().installed()).await {
                Ok(Ok(installed)) => installed.into_keys().collect(),
                _ => BTreeSet::new(),
            }
        };
        let stored = async {
            match timeout_at(deadline, settings::catalog(global, &ctx.cluster)).await {
                Ok(Ok(catalog)) => listed(&catalog, deadline).await,
                _ => BTreeSet::new(),
            }
        };
        let (mut installed, stored) = tokio::join!(installed, stored);
        installed.extend(stored);
        installed
    };
    let (mut names, online) = tokio::join!(offline, online);
    names.extend(online);
    names
}

/// The names of the addons of every registry of `catalog` that lists them before `deadline`
/// (listed concurrently; a slow or failing registry is left out).
async fn listed(catalog: &Catalog, deadline: Instant) -> BTreeSet<String> {
    let listings = (0..catalog.readers().len()).map(|index| async move {
        match timeout_at(deadline, catalog.listing(index)).await {
            Ok(Some(Ok(addons))) => addons.iter().map(|a| a.name.clone()).collect(),
            _ => Vec::new(),
        }
    });
    futures::future::join_all(listings)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// `local` and the joined clusters, when the control plane answers before `deadline`.
async fn cluster_names(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    deadline: Instant,
) -> BTreeSet<String> {
    let mut names = BTreeSet::from([addonctl::model::wire::LOCAL_CLUSTER.to_owned()]);
    let quiet = Printer::new(true);
    if let Ok(Ok(ctx)) =
        timeout_at(deadline, settings::connect(global, cluster, quiet, false)).await
    {
        if let Ok(Ok(known)) = timeout_at(deadline, ctx.state().known_clusters()).await {
            names.extend(known);
        }
    }
    names
}

/// Every option of every command that takes its value as the next word (`-f FILE`), not
/// `--flag=value` only: the scripts skip those values when they look for a command's first
/// argument.
fn value_options(command: &mut clap::Command) -> Vec<String> {
    fn walk(command: &clap::Command, out: &mut BTreeSet<String>) {
        for arg in command.get_arguments() {
            let takes_next = !arg.is_positional()
                && arg.get_action().takes_values()
                && !arg.is_require_equals_set()
                && arg.get_num_args().is_some_and(|n| n.min_values() > 0);
            if takes_next {
                out.extend(arg.get_long().map(|long| format!("--{long}")));
                out.extend(arg.get_short().map(|short| format!("-{short}")));
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, out);
        }
    }
    command.build();
    let mut out = BTreeSet::new();
    walk(command, &mut out);
    out.into_iter().collect()
}

/// The bash wrapper, registered in place of clap's `_addonctl`.
fn bash_names(value_options: &[String]) -> String {
    format!(
        r#"
# Addon and cluster names from `addonctl __complete` (bounded; nothing on stderr).
_addonctl_names() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" flag="" what="" word value prefix="" i skip=0
    local -a globals=() positional=()
    (( COMP_CWORD > 0 )) && flag="${{COMP_WORDS[COMP_CWORD-1]}}"
    if [[ $cur == "=" ]]; then
        cur=""
    elif [[ $flag == "=" ]] && (( COMP_CWORD > 1 )); then
        flag="${{COMP_WORDS[COMP_CWORD-2]}}"
    fi
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        case " {passed} " in
            *" $word "*)
                value="${{COMP_WORDS[i+1]}}"
                [[ $value == "=" ]] && value="${{COMP_WORDS[i+2]}}"
                globals+=("$word" "${{value/#\~/$HOME}}") ;;
        esac
        if [[ $word == "=" ]]; then skip=1; continue; fi
        if (( skip )); then skip=0; continue; fi
        case "$word" in
            -*) [[ " {options} " == *" $word "* ]] && skip=1 ;;
            *) positional+=("$word") ;;
        esac
    done
    if [[ $flag == --clusters ]]; then
        what=clusters
    elif [[ $cur != -* ]] && (( ! skip )); then
        case "${{positional[0]}}" in
            {addon_commands}) (( ${{#positional[@]}} == 1 )) && what=addons ;;
            get) [[ ${{positional[1]}} == values ]] && (( ${{#positional[@]}} == 2 )) && what=addons ;;
            rollout) [[ ${{positional[1]}} == run ]] && (( ${{#positional[@]}} == 2 )) && what=addons ;;
            cluster) [[ ${{positional[1]}} == detach || ${{positional[1]}} == labels ]] && (( ${{#positional[@]}} == 2 )) && what=clusters ;;
        esac
    fi
    if [[ -z $what ]]; then
        _addonctl "$@"
        return
    fi
    if [[ $what == clusters && $cur == *,* ]]; then
        prefix="${{cur%,*}},"
        cur="${{cur##*,}}"
    fi
    local names
    names="$("${{COMP_WORDS[0]}}" "${{globals[@]}}" __complete "$what" 2>/dev/null)"
    COMPREPLY=( $(compgen -P "$prefix" -W "$names" -- "$cur") )
}}

if [[ "${{BASH_VERSINFO[0]}}" -eq 4 && "${{BASH_VERSINFO[1]}}" -ge 4 || "${{BASH_VERSINFO[0]}}" -gt 4 ]]; then
    complete -F _addonctl_names -o nosort -o bashdefault -o default addonctl
else
    complete -F _addonctl_names -o bashdefault -o default addonctl
fi
"#,
        passed = PASSED_ON.join(" "),
        options = value_options.join(" "),
        addon_commands = ADDON_COMMANDS.join("|"),
    )
}

/// clap's zsh script with a wrapper in front of `_addonctl`: the script's last lines (which call
/// or register `_addonctl`) call or register the wrapper instead.
fn zsh_names(script: &str, value_options: &[String]) -> String {
    let wrapper = format!(
        r#"
# Addon and cluster names from `addonctl __complete` (bounded; nothing on stderr).
_addonctl_names() {{
    local flag="${{words[CURRENT-1]}}" what="" word value i skip=0
    local -a globals positional names
    for ((i = 2; i < CURRENT; i++)); do
        word="${{words[i]}}"
        if (( ${{{passed_array}[(Ie)$word]}} )); then
            value="${{words[i+1]}}"
            globals+=("$word" "${{~value}}")
        fi
        if (( skip )); then skip=0; continue; fi
        case "$word" in
            -*) (( ${{{options_array}[(Ie)$word]}} )) && skip=1 ;;
            *) positional+=("$word") ;;
        esac
    done
    if [[ $flag == --clusters ]]; then
        what=clusters
    elif [[ $PREFIX == --clusters=* ]]; then
        what=clusters
        compset -P '--clusters='
    elif [[ $PREFIX != -* ]] && (( ! skip )); then
        case "${{positional[1]}}" in
            ({addon_commands}) (( ${{#positional}} == 1 )) && what=addons ;;
            (get) [[ ${{positional[2]}} == values ]] && (( ${{#positional}} == 2 )) && what=addons ;;
            (rollout) [[ ${{positional[2]}} == run ]] && (( ${{#positional}} == 2 )) && what=addons ;;
            (cluster) [[ ${{positional[2]}} == (detach|labels) ]] && (( ${{#positional}} == 2 )) && what=clusters ;;
        esac
    fi
    if [[ -z $what ]]; then
        _addonctl "$@"
        return
    fi
    [[ $what == clusters ]] && compset -P '*,'
    names=(${{(f)"$("${{words[1]}}" "${{globals[@]}}" __complete "$what" 2>/dev/null)"}})
    compadd -a names
}}
{passed_array}=({passed})
{options_array}=({options})
"#,
        passed_array = "_addonctl_passed_on",
        options_array = "_addonctl_value_options",
        passed = PASSED_ON.join(" "),
        options = value_options.join(" "),
        addon_commands = ADDON_COMMANDS.join("|"),
    );
    let tail = "if [ \"$funcstack[1]\" = \"_addonctl\" ]; then\n    _addonctl \"$@\"\nelse\n    compdef _addonctl addonctl\nfi";
    let ours = "if [ \"$funcstack[1]\" = \"_addonctl\" ]; then\n    _addonctl_names \"$@\"\nelse\n    compdef _addonctl_names addonctl\nfi";
    match script.rfind(tail) {
        Some(at) => format!(
            "{}{wrapper}\n{ours}{}",
            &script[..at],
            &script[at + tail.len()..]
        ),
        // A clap_complete whose script ends differently: the wrapper takes over registration.
        None => format!("{script}{wrapper}\ncompdef _addonctl_names addonctl\n"),
    }
}

/// fish: names as the values of the first argument of the addon and cluster commands and of
/// `--clusters`.
fn fish_names(value_options: &[String]) -> String {
    format!(
        r#"
# Addon and cluster names from `addonctl __complete` (bounded; nothing on stderr).
function __addonctl_names_wanted --argument-names what
    set -l words (commandline -opc)
    set -l positional
    set -l globals
    set -l skip 0
    for i in (seq 2 (count $words))
        set -l word $words[$i]
        if contains -- $word {passed}
            set -l next (math $i + 1)
            if test $next -le (count $words)
                set -a globals $word $words[$next]
            end
        end
        if test $skip = 1
            set skip 0
            continue
        end
        switch $word
            case '-*'
                contains -- $word {options}; and set skip 1
            case '*'
                set -a positional $word
        end
    end
    test $skip = 0; or return 1
    set -l want
    switch "$positional[1]"
        case {addon_commands}
            test (count $positional) = 1; and set want addons
        case get
            test "$positional[2]" = values -a (count $positional) = 2; and set want addons
        case rollout
            test "$positional[2]" = run -a (count $positional) = 2; and set want addons
        case cluster
            contains -- "$positional[2]" detach labels; and test (count $positional) = 2; and set want clusters
    end
    test "$want" = "$what"; or return 1
    set -g __addonctl_globals $globals
end
function __addonctl_names --argument-names what
    set -l words (commandline -opc)
    $words[1] $__addonctl_globals __complete $what 2>/dev/null
end
complete -c addonctl -n '__addonctl_names_wanted addons' -f -a '(__addonctl_names addons)'
complete -c addonctl -n '__addonctl_names_wanted clusters' -f -a '(__addonctl_names clusters)'
complete -c addonctl -l clusters -x -a '(__fish_append , (__addonctl_names clusters))'
"#,
        passed = PASSED_ON.join(" "),
        options = value_options.join(" "),
        addon_commands = ADDON_COMMANDS.join(" "),
    )
}
