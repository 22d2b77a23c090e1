//! The single integration-test binary: shared `support`, then one module per area.
#![allow(clippy::unwrap_used, clippy::disallowed_methods, clippy::print_stderr)]

mod support;

mod bad_input;
mod cli;
mod cli_conventions;
mod cli_edges;
mod cli_kubeconfig;
mod cli_lint;
mod cli_suggestions;
mod cli_vocabulary;
mod control_plane;
mod controller;
mod controller_faults;
mod controller_rollout;
mod controller_trust;
mod controller_truth;
mod cue_addons;
mod cue_oracle;
mod day_two;
mod declarative;
mod definition_apply;
mod definition_handover;
mod dependencies;
mod diff;
mod drift;
mod hostile_input;
mod lint_oracle;
mod multi_cluster;
mod publish;
mod registry;
mod render;
mod requests;
mod revisions;
mod rollout;
mod safety_authz;
mod safety_delete;
mod serve_cluster;
mod sources;
mod sources_git;
mod sources_helm;
mod sources_remote;
mod staged;
mod values;
mod vela_interop;
mod workloads;
