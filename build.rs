include!("trainer/build_support.rs");

fn main() {
    emit_libtorch_link_args();
    emit_git_info();
}

/// The commit the binary is built from, and whether tracked files differed from it, as
/// `CLASSWISE_GIT_SHA` and `CLASSWISE_GIT_DIRTY` ("true", "false"; both "unknown" outside a git
/// checkout or without git). Run directories record them in `env.json`, so a run names the code
/// that made it wherever the binary is started from.
///
/// The script reruns when HEAD, the branch it points at, the index or any source directory of
/// the workspace changes, so the values follow commits and edits.
fn emit_git_info() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let sha = git(&["rev-parse", "HEAD"]);
    let dirty = sha.as_ref().and(
        git(&["status", "--porcelain", "--untracked-files=no"])
            .map(|s| (!s.is_empty()).to_string()),
    );
    println!(
        "cargo:rustc-env=CLASSWISE_GIT_SHA={}",
        sha.as_deref().unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=CLASSWISE_GIT_DIRTY={}",
        dirty.as_deref().unwrap_or("unknown")
    );
    let mut watched: Vec<std::path::PathBuf> = [
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "src",
        "theory",
        "toy",
        "trainer",
        "figures",
        "configs",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = std::path::PathBuf::from(dir);
        watched.push(dir.join("HEAD"));
        watched.push(dir.join("index"));
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            let common = root.join(common);
            watched.push(common.join("packed-refs"));
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watched.push(common.join(branch));
            }
        }
    }
    // A path that does not exist would make cargo rerun the script on every build.
    for p in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}
