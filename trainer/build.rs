include!("build_support.rs");

fn main() {
    emit_libtorch_link_args();
    emit_tch_version();
}

/// The tch version from the workspace's Cargo.lock, for `classwise doctor`.
fn emit_tch_version() {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let mut lines = text.lines();
    let mut version = "unknown".to_string();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"tch\"" {
            if let Some(v) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = "))
            {
                version = v.trim_matches('"').to_string();
            }
            break;
        }
    }
    println!("cargo:rustc-env=CLASSWISE_TCH_VERSION={version}");
}
