//! One module per command.

pub mod init;
pub mod lint;
pub mod manage;
pub mod publish;
pub mod registry;
pub mod render;
