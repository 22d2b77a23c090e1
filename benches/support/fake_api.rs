//! placeholder
pub const CHILD_ARGUMENT: &str = "fake-api-server";
pub async fn child_main() {}
