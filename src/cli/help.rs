//! Help texts: each command's examples, and the global options shown once (in `addonctl
//! --help`), not repeated in every command's help.

use clap::{Arg, Command};

/// The line every command's help ends with, instead of the global options themselves.
pub(crate) const GLOBAL_NOTE: &str =
    "Global options (--kubeconfig, --context, --system-namespace, --registry-dir, --engine, \
--request-timeout, -q, …): see `addonctl --help`.";

pub const RENDER: &str = "Examples:
  addonctl render strongbox-dashboard ingress.enabled=true ingress.host=backup.example.com
  addonctl render myrepo/strongbox-dashboard
  addonctl render ./my-addon -f values.yaml replicas=3 -o json
  addonctl render ./my-addon --schema -o json";
pub const LINT: &str = "Examples:
  addonctl lint ./my-addon
  addonctl lint ./addons --strict -o json";
pub const INIT: &str = "Examples:
  addonctl init my-addon
  addonctl init my-addon --cue --dir ./addons/my-addon";
pub const ENABLE: &str = "Examples:
  addonctl enable strongbox-operator --declarative --cluster-selector env=prod --drift warn
  addonctl enable myrepo/strongbox-dashboard -f values.yaml --clusters edge-1,edge-2
  addonctl enable ./my-addon --dry-run=server
  addonctl enable strongbox-dashboard replicas=3 --reset-values";
pub const DISABLE: &str = "Examples:
  addonctl disable strongbox-dashboard
  addonctl disable strongbox-operator --prune-dependencies --dry-run
  addonctl disable strongbox-operator --declarative --wait";
pub const STATUS: &str = "Examples:
  addonctl status strongbox-operator
  addonctl status strongbox-operator -v -o json
  addonctl status strongbox-operator --watch";
pub const WAIT: &str =
    "Exit codes: 0 the phase was reached, 1 timed out (what is not ready is named per cluster),
2 the user's error, 130 interrupted (Ctrl-C).

Examples:
  addonctl wait strongbox-operator --for enabled --timeout 5m
  addonctl disable strongbox-operator && addonctl wait strongbox-operator --for disabled";
pub const LIST: &str = "Examples:
  addonctl list
  addonctl list --installed
  addonctl list --registry myrepo -o json";
pub const DIFF: &str = "Examples:
  addonctl diff strongbox-dashboard replicas=3
  addonctl diff strongbox-dashboard --version 1.2.0 -f values.yaml
  addonctl diff strongbox-dashboard --reset-values -o json
  addonctl diff strongbox-dashboard replicas=3 && echo 'nothing to change'

Exit codes: 0 no differences, 1 differences (or a cluster could not be compared),
2 the user's error (a bad argument, or an object the server would reject).";
pub const UPGRADE: &str = "Examples:
  addonctl upgrade strongbox-dashboard replicas=3 --dry-run=server
  addonctl upgrade strongbox-operator --latest
  addonctl upgrade strongbox-dashboard replicas=3 --version 1.2.0
  addonctl upgrade strongbox-dashboard --reset-values";
pub const HISTORY: &str = "Examples:
  addonctl history strongbox-dashboard
  addonctl history strongbox-dashboard -o json";
pub const ROLLBACK: &str = "Examples:
  addonctl rollback strongbox-dashboard
  addonctl rollback strongbox-dashboard 3";
pub const ROLLOUT: &str = "Examples:
  addonctl rollout run strongbox-operator --stages stages.yaml
  addonctl rollout status strongbox-operator
  addonctl rollout pause strongbox-operator";
pub const ROLLOUT_STATUS: &str = "Examples:
  addonctl rollout status strongbox-operator
  addonctl rollout status strongbox-operator -o json";
pub const ROLLOUT_PAUSE: &str = "Examples:
  addonctl rollout pause strongbox-operator";
pub const ROLLOUT_RESUME: &str = "Examples:
  addonctl rollout resume strongbox-operator";
pub const ROLLOUT_RUN: &str = "Examples:
  addonctl rollout run strongbox-operator --stages stages.yaml
  addonctl rollout run strongbox-dashboard --stages stages.yaml replicas=3 --version 1.2.0

stages.yaml:
  stages:
    - name: staging
      clusterSelector: {matchLabels: {env: staging}}
      soakSeconds: 300
    - name: production
      clusterSelector: {matchLabels: {env: prod}}
      maxConcurrency: 25%
      maxFailures: 1
      soakSeconds: 600
  progressDeadlineSeconds: 1800";
pub const GET: &str = "Examples:
  addonctl get values strongbox-dashboard > values.yaml";
pub const GET_VALUES: &str = "Examples:
  addonctl get values strongbox-dashboard > values.yaml
  addonctl enable strongbox-dashboard -f values.yaml --reset-values
  addonctl get values strongbox-dashboard --show-secrets -o json";
pub const PACKAGE: &str = "Examples:
  addonctl package ./my-addon
  addonctl package ./addons -d dist/";
pub const PUSH: &str = "Examples:
  addonctl push ./my-addon oci://registry.example.com/addons --username robot
  addonctl package ./addons -d dist/ && addonctl push dist/redis-1.2.0.tgz oci://registry.example.com/addons";
pub const INDEX: &str = "Examples:
  addonctl index dist/ --url https://addons.example.com/charts
  addonctl index dist/ --url https://addons.example.com/charts --merge old/index.yaml";
pub const REGISTRY: &str = "Examples:
  addonctl registry add myrepo --type helm --endpoint https://addons.example.com/charts
  addonctl registry list
  addonctl registry remove myrepo";
pub const REGISTRY_ADD: &str = "Examples:
  addonctl registry add myrepo --type helm --endpoint https://addons.example.com/charts
  addonctl registry add team --type git --endpoint https://git.example.com/team/addons.git --ref main
  addonctl registry add --from registries/kubevela.yaml";
pub const REGISTRY_UPDATE: &str = "Examples:
  addonctl registry update myrepo --priority 10
  addonctl registry update team --ref v2";
pub const REGISTRY_LIST: &str = "Examples:
  addonctl registry list
  addonctl registry list --local -o json";
pub const REGISTRY_GET: &str = "Examples:
  addonctl registry get myrepo -o yaml";
pub const REGISTRY_REMOVE: &str = "Examples:
  addonctl registry remove myrepo";
pub const CLUSTER: &str = "Examples:
  addonctl cluster join edge-1 --from-kubeconfig edge-1.kubeconfig --labels region=eu
  addonctl cluster list
  addonctl cluster detach edge-1 --dry-run";
pub const CLUSTER_JOIN: &str = "Examples:
  addonctl cluster join edge-1 --from-kubeconfig edge-1.kubeconfig --labels region=eu,tier=edge
  addonctl cluster join edge-2 --from-kubeconfig ~/.kube/config --from-context edge-2
  addonctl cluster join edge-1 --from-kubeconfig rotated.kubeconfig     # new credentials, labels kept
  addonctl cluster join edge-1 --from-kubeconfig edge-1.kubeconfig --reset-labels

An API server already joined under another name is refused (detach it first, or join it under
that name). On a re-join, `--labels` replaces the stored labels; without it they are kept.";
pub const CLUSTER_LIST: &str = "Examples:
  addonctl cluster list
  addonctl cluster list -o json";
pub const CLUSTER_DETACH: &str = "Examples:
  addonctl cluster detach edge-1 --dry-run
  addonctl cluster detach edge-1 --yes";
pub const CLUSTER_LABELS: &str = "Examples:
  addonctl cluster labels edge-1 region=eu tier=edge";
pub const RBAC: &str = "Examples:
  addonctl rbac | kubectl apply -f -";
pub const CONTROLLER: &str = "Examples:
  addonctl controller manifests --image example/addonctl:0.1 | kubectl apply -f -
  addonctl controller --kubeconfig ~/.kube/config --metrics-addr 127.0.0.1:9090
  addonctl controller --leader-elect=false --registry-interval 1m
  curl -X POST http://127.0.0.1:9090/webhook/registry   # a registry published a version";
pub const CONTROLLER_MANIFESTS: &str = "Examples:
  addonctl controller manifests --image example/addonctl:0.1 | kubectl apply -f -
  addonctl controller manifests --image example/addonctl:0.1 --admin --replicas 3";
pub const SERVE: &str = "Examples:
  addonctl serve                        # opens the app store in your browser
  addonctl serve --addr 127.0.0.1:8080 --no-browser

The printed URL carries a one-time token that signs the browser in (an HttpOnly cookie);
scripts send it as `Authorization: Bearer <token>`. The server listens on loopback only and
acts with your kubeconfig, as the CLI does.";
pub const COMPLETION: &str = "Examples:
  addonctl completion bash > ~/.local/share/bash-completion/completions/addonctl
  addonctl completion zsh > \"${fpath[1]}/_addonctl\"
  addonctl completion fish > ~/.config/fish/completions/addonctl.fish";
pub const MAN: &str = "Examples:
  addonctl man --dir ~/.local/share/man/man1 && man addonctl-enable
  addonctl man --dir target/man";
pub const VERSION: &str = "Examples:
  addonctl version
  addonctl version -o json --request-timeout 2";

/// The command line with each command's help ending in [`GLOBAL_NOTE`] instead of listing the
/// global options: every command gets hidden copies of them (clap propagates a global option only
/// where no option of that id exists, so the copies are the ones parsed; they stay global, so
/// their values still reach [`super::args::GlobalArgs`]). `addonctl --help` lists them.
pub fn command(top: Command) -> Command {
    let globals: Vec<Arg> = top
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.clone().hide(true))
        .collect();
    top.mut_subcommands(|sub| with_hidden(sub, &globals))
}

fn with_hidden(mut sub: Command, globals: &[Arg]) -> Command {
    for arg in globals {
        if sub.get_arguments().all(|a| a.get_id() != arg.get_id()) {
            sub = sub.arg(arg.clone());
        }
    }
    let note = match sub.get_after_help() {
        Some(examples) => format!("{examples}\n\n{GLOBAL_NOTE}"),
        None => GLOBAL_NOTE.to_owned(),
    };
    sub.after_help(note)
        .mut_subcommands(|nested| with_hidden(nested, globals))
}
