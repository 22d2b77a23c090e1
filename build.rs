//! Rebuilds the crate when the built-in registry (`addons/`) changes, so the embedded copy is current.
fn main() {
    println!("cargo:rerun-if-changed=addons");
}
