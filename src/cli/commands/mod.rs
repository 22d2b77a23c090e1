//! One module per command.

pub mod init;
pub mod lint;
pub mod manage;
pub mod render;
