// Shared by `trainer/build.rs` and the root `build.rs` (through `include!`): link arguments that
// torch-sys cannot pass on to final binaries.
//
// - rpath to libtorch's lib directory, so binaries, tests and examples find libtorch_cpu.so
//   without LD_LIBRARY_PATH (tch-rs#824, #767);
// - `--no-as-needed -ltorch [-ltorch_cuda]`, so a CUDA libtorch is not dropped by the linker
//   because no symbol references it, which makes `Cuda::is_available()` false (tch-rs#907).
//
// `DEP_TCH_LIBTORCH_LIB` is set by torch-sys (`links = "tch"`) for its direct dependents only,
// hence `torch-sys` in both packages' dependencies.
fn emit_libtorch_link_args() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") else {
        return; // doc-only builds of torch-sys set nothing
    };
    let lib = std::path::Path::new(&lib);
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
    println!("cargo:rustc-link-arg=-L{}", lib.display());
    println!("cargo:rustc-link-arg=-ltorch");
    if lib.join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-ltorch_cuda");
    }
    println!("cargo:rustc-link-arg=-Wl,--as-needed");
    println!("cargo:rustc-env=CLASSWISE_LIBTORCH_LIB={}", lib.display());
    let version = std::fs::read_to_string(lib.join("..").join("build-version")).unwrap_or_default();
    println!("cargo:rustc-env=CLASSWISE_LIBTORCH_BUILD_VERSION={}", version.trim());
}
