//! placeholder
pub async fn run() {}
