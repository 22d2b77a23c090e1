//! The single integration-test binary: shared `support`, then one module per area.

mod support;

mod bad_input;
mod cli;
mod render;
mod sources;
