//! `cargo xtask setup --cuda` on a machine without GPU or network: the committed CUDA manifest
//! (pins, sizes, what it keeps), an assembly from small fake wheels with the real file layout,
//! and the refusals.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Setup, expect_failure, script, sha256, shared_object, zip_bytes};
use toml::Value;

const CUDA_MANIFEST: &str = include_str!("../libtorch-wheels-cuda.toml");
const CPU_MANIFEST: &str = include_str!("../libtorch-wheels.toml");

/// The nvidia-* packages that `pip install torch==2.13.0` installs on linux x86_64, with the
/// versions pinned. torch's METADATA (`Requires-Dist`, platform_system == "Linux") names
/// nvidia-cudnn-cu13==9.20.0.48, nvidia-cusparselt-cu13==0.8.1, nvidia-nccl-cu13==2.29.7,
/// nvidia-nvshmem-cu13==3.4.5 and cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,
/// cusparse,nvjitlink,nvrtc,nvtx]==13.0.3, whose extras pin the other eleven (`==X.*`;
/// nvidia-nvjitlink only `>=13.0.88,<14`, pinned here at its lower bound).
const TORCH_NVIDIA_REQUIREMENTS: [&str; 15] = [
    "nvidia-cudnn-cu13==9.20.0.48",
    "nvidia-cusparselt-cu13==0.8.1",
    "nvidia-nccl-cu13==2.29.7",
    "nvidia-nvshmem-cu13==3.4.5",
    "nvidia-cublas==13.1.1.3",
    "nvidia-cuda-nvrtc==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cufft==12.0.0.61",
    "nvidia-nvjitlink==13.0.88",
    "nvidia-cufile==1.15.1.6",
    "nvidia-cuda-cupti==13.0.85",
    "nvidia-curand==10.4.0.35",
    "nvidia-cusolver==12.0.4.66",
    "nvidia-cusparse==12.6.3.3",
    "nvidia-nvtx==13.0.85",
];

fn parse(text: &str) -> Value {
    Value::Table(toml::from_str(text).expect("the manifest is valid TOML"))
}

fn wheels(manifest: &Value) -> &Vec<Value> {
    manifest["wheel"].as_array().expect("[[wheel]] entries")
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("`{key}` is a string"))
}

/// Every `keep` rule of the manifest as (wheel file, from, to).
fn keeps(manifest: &Value) -> Vec<(String, String, String)> {
    wheels(manifest)
        .iter()
        .flat_map(|w| {
            let file = str_of(w, "file").to_string();
            w["keep"]
                .as_array()
                .expect("keep is a list")
                .iter()
                .map(move |k| {
                    (
                        file.clone(),
                        str_of(k, "from").into(),
                        str_of(k, "to").into(),
                    )
                })
        })
        .collect()
}

#[test]
fn cuda_manifest_pins_every_wheel_by_name_size_and_sha256() {
    let m = parse(CUDA_MANIFEST);
    assert_eq!(str_of(&m, "torch_version"), "2.13.0");
    assert_eq!(str_of(&m, "build_version"), "2.13.0+cu130");
    assert_eq!(str_of(&m, "platform"), "linux-x86_64");
    assert_ne!(
        str_of(&m, "dir_name"),
        str_of(&parse(CPU_MANIFEST), "dir_name")
    );
    assert!(m.get("stub").is_none(), "the CUDA libtorch has no stub");
    assert!(m["unpacked_size"].as_integer().unwrap() > 1_000_000_000);
    for w in wheels(&m) {
        let (req, file, hash) = (
            str_of(w, "requirement"),
            str_of(w, "file"),
            str_of(w, "sha256"),
        );
        assert!(
            hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
            "{file}: sha256 `{hash}`"
        );
        assert!(w["size"].as_integer().unwrap() > 0, "{file}: size");
        let (name, version) = req.split_once("==").expect("name==version");
        let stem = format!("{}-{version}-", name.replace('-', "_"));
        assert!(
            file.starts_with(&stem) && file.ends_with("x86_64.whl"),
            "{file} is not {req} for x86_64"
        );
        assert!(!w["keep"].as_array().unwrap().is_empty(), "{file}: keep");
    }
}

#[test]
fn torch_wheel_is_the_same_file_as_the_cpu_manifests() {
    let torch = |text: &str| {
        let m = parse(text);
        wheels(&m)
            .iter()
            .find(|w| str_of(w, "requirement") == "torch==2.13.0")
            .cloned()
            .expect("a torch==2.13.0 wheel")
    };
    let (cpu, cuda) = (torch(CPU_MANIFEST), torch(CUDA_MANIFEST));
    for key in ["file", "sha256", "pip_tags"] {
        assert_eq!(cpu[key], cuda[key], "`{key}` differs");
    }
}

#[test]
fn every_nvidia_requirement_of_torch_is_pinned_and_nothing_else() {
    let m = parse(CUDA_MANIFEST);
    let mut pinned: Vec<&str> = wheels(&m)
        .iter()
        .map(|w| str_of(w, "requirement"))
        .filter(|r| *r != "torch==2.13.0")
        .collect();
    let mut wanted = TORCH_NVIDIA_REQUIREMENTS.to_vec();
    pinned.sort_unstable();
    wanted.sort_unstable();
    assert_eq!(pinned, wanted);
}

#[test]
fn cuda_manifest_keeps_the_cuda_libraries_flat_in_lib() {
    let m = parse(CUDA_MANIFEST);
    let kept = keeps(&m);
    let targets: Vec<&str> = kept.iter().map(|(_, _, to)| to.as_str()).collect();
    for lib in [
        "lib/libtorch_cuda.so",
        "lib/libc10_cuda.so",
        "lib/libtorch_cuda_linalg.so",
        "lib/libtorch_nvshmem.so",
        "lib/libcudart.so.13",
        "lib/libcublasLt.so.13",
        "lib/libnccl.so.2",
        "lib/libnvrtc-builtins.so.13.0",
    ] {
        assert!(targets.contains(&lib), "{lib} is not kept");
    }
    assert!(targets.contains(&"include/"), "the headers are kept");
    for (_, from, to) in &kept {
        let flat = to.starts_with("lib/") && !to["lib/".len()..].contains('/');
        assert!(
            flat || to == "include/",
            "{from} -> {to} is not flat in lib/"
        );
    }
    // What set-up checks with ldd must be something it extracts.
    for c in m["check"].as_array().unwrap() {
        let c = c.as_str().unwrap();
        let covered = targets
            .iter()
            .any(|t| *t == c || (t.ends_with('/') && c.starts_with(t)));
        assert!(covered, "check entry {c} is not extracted");
    }
}

/// Whether this machine has an NVIDIA driver (then set-up prints no driver note).
fn driver_installed() -> bool {
    ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|p| Command::new(p).arg("-p").output().ok())
        .is_some_and(|o| String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1"))
}

/// Fake wheels with the real manifest's file names and the entries its `keep` rules select: each
/// file rule's file; for a directory rule, the `check` libraries it alone provides, else one
/// header. And the manifest with the fake wheels' hashes.
struct FakeCuda {
    wheels: PathBuf,
    manifest: PathBuf,
}

/// Shared objects for the fake wheels: a plain one; libtorch_cuda.so needing libnccl.so.2
/// through `$ORIGIN`, as the real one finds its nvidia libraries once flattened into lib/; and
/// libcaffe2_nvrtc.so needing the driver's libcuda.so.1, which is not shipped.
struct Objects {
    plain: Vec<u8>,
    cuda: Vec<u8>,
    nvrtc: Vec<u8>,
}

impl Objects {
    /// Builds them with the C compiler in `dir`.
    fn new(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let plain = dir.join("plain.so");
        shared_object(&plain, &[]);
        for soname in ["libnccl.so.2", "libcuda.so.1"] {
            shared_object(&dir.join(soname), &[&format!("-Wl,-soname,{soname}")]);
        }
        let needing = |name: &str, dep: &str| {
            let out = dir.join(name);
            let dep = dir.join(dep).display().to_string();
            shared_object(&out, &["-Wl,--no-as-needed", &dep, "-Wl,-rpath,$ORIGIN"]);
            std::fs::read(out).unwrap()
        };
        Objects {
            plain: std::fs::read(plain).unwrap(),
            cuda: needing("libtorch_cuda.so", "libnccl.so.2"),
            nvrtc: needing("libcaffe2_nvrtc.so", "libcuda.so.1"),
        }
    }

    /// The content of the archive entry `name`; `broken` (a file name) is not a library.
    fn content(&self, name: &str, broken: Option<&str>) -> Vec<u8> {
        match name.rsplit('/').next().unwrap_or(name) {
            b if Some(b) == broken => b"not a library".to_vec(),
            "libtorch_cuda.so" => self.cuda.clone(),
            "libcaffe2_nvrtc.so" => self.nvrtc.clone(),
            b if b.contains(".so") => self.plain.clone(),
            _ => b"header".to_vec(),
        }
    }
}

/// The archive entries that the keep rule `from` -> `to` selects in a fake wheel: the file
/// itself, or under a directory the `checks` that no file rule (`exact`) provides, else a header.
fn entries_of_rule(from: &str, to: &str, checks: &[String], exact: &[String]) -> Vec<String> {
    if !to.ends_with('/') {
        return vec![from.to_string()];
    }
    let under: Vec<String> = checks
        .iter()
        .filter(|c| !exact.contains(c))
        .filter_map(|c| c.strip_prefix(to))
        .map(|rest| format!("{from}{rest}"))
        .collect();
    if under.is_empty() {
        vec![format!("{from}fake.h")]
    } else {
        under
    }
}

impl FakeCuda {
    /// Writes the wheels and the manifest under `root`. `broken` (a kept file name) is written
    /// as text instead of a shared object.
    fn new(root: &Path, broken: Option<&str>) -> Self {
        let mut m = parse(CUDA_MANIFEST);
        let objects = Objects::new(&root.join("objects"));
        let checks: Vec<String> = m["check"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        let exact: Vec<String> = keeps(&m)
            .into_iter()
            .map(|(_, _, to)| to)
            .filter(|to| !to.ends_with('/'))
            .collect();
        let wheels = root.join("wheels");
        std::fs::create_dir_all(&wheels).unwrap();
        for w in m["wheel"].as_array_mut().unwrap() {
            let mut entries: Vec<(String, Vec<u8>)> = w["keep"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|k| entries_of_rule(str_of(k, "from"), str_of(k, "to"), &checks, &exact))
                .map(|name| {
                    let bytes = objects.content(&name, broken);
                    (name, bytes)
                })
                .collect();
            entries.push(("dropped/libnot-kept.so".into(), b"dropped".to_vec()));
            let refs: Vec<(&str, &[u8])> = entries
                .iter()
                .map(|(n, b)| (n.as_str(), b.as_slice()))
                .collect();
            let bytes = zip_bytes(&refs);
            std::fs::write(wheels.join(str_of(w, "file")), &bytes).unwrap();
            w["sha256"] = Value::String(sha256(&bytes));
        }
        // The real size would have the free-space check ask for gigabytes.
        m["unpacked_size"] = Value::Integer(1000);
        let manifest = root.join("libtorch-wheels-cuda.toml");
        std::fs::write(&manifest, toml::to_string(m.as_table().unwrap()).unwrap()).unwrap();
        FakeCuda { wheels, manifest }
    }

    /// The set-up command (`--cuda`, private cache and link under `root`) on these wheels.
    fn command(&self, root: &Path) -> Command {
        let mut cmd = Setup::command(root);
        cmd.arg("--cuda")
            .arg("--manifest")
            .arg(&self.manifest)
            .arg("--wheel-dir")
            .arg(&self.wheels)
            .arg("--no-data");
        cmd
    }
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    text
}

#[test]
fn cuda_assembly_from_fake_wheels_keeps_cuda_libraries_and_no_stub() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let fake = FakeCuda::new(root, None);
    let first = run_ok(&mut fake.command(root));
    assert!(
        first.contains("libtorch 2.13.0+cu130: 16 wheels"),
        "{first}"
    );
    assert!(first.contains("0 B to download"), "{first}");
    assert!(first.contains("assembled; 0 wheels downloaded"), "{first}");
    assert_eq!(
        first.contains("no NVIDIA driver"),
        !driver_installed(),
        "{first}"
    );
    let dir = root.join("cache/libtorch-2.13.0-cu130");
    assert_eq!(std::fs::read_link(root.join("libtorch-link")).unwrap(), dir);
    assert_eq!(
        std::fs::read_to_string(dir.join("build-version")).unwrap(),
        "2.13.0+cu130\n"
    );
    // The wheel's libtorch_cuda.so, not a stub; it finds libnccl.so.2 next to it.
    let ldd = Command::new("ldd")
        .arg(dir.join("lib/libtorch_cuda.so"))
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(
        ldd.contains(&format!("{}", dir.join("lib/libnccl.so.2").display())),
        "{ldd}"
    );
    for lib in ["libcudnn_graph.so.9", "libnccl.so.2", "libcublasLt.so.13"] {
        assert!(dir.join("lib").join(lib).is_file(), "{lib} missing");
    }
    assert!(dir.join("include/fake.h").is_file());
    assert!(!dir.join("dropped").exists());
    let second = run_ok(&mut fake.command(root));
    assert!(second.contains("up to date"), "{second}");

    // Back to a CPU libtorch without --cuda: set-up says that the CUDA one is no longer linked.
    let cpu = Setup::command(root)
        .env("LIBTORCH", fake_cpu_libtorch(root))
        .arg("--no-data")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cpu.stderr);
    assert!(cpu.status.success(), "{text}");
    assert!(
        text.contains("pointed at the CUDA libtorch") && text.contains("--cuda"),
        "{text}"
    );
}

/// A minimal libtorch directory with a CPU build-version.
fn fake_cpu_libtorch(root: &Path) -> PathBuf {
    let dir = root.join("cpu-libtorch");
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::create_dir_all(dir.join("include")).unwrap();
    shared_object(&dir.join("lib/libtorch_cpu.so"), &[]);
    std::fs::write(dir.join("build-version"), "2.13.0+cpu\n").unwrap();
    dir
}

#[test]
fn a_runtime_loaded_library_that_does_not_load_is_named() {
    let mut s = Setup::new();
    let fake = FakeCuda::new(s.dir.path(), Some("libcudnn_graph.so.9"));
    s.cmd = fake.command(s.dir.path());
    expect_failure(
        s,
        &[
            "cannot be loaded",
            "libcudnn_graph.so.9 is not a loadable shared library",
        ],
    );
}

#[test]
fn cuda_with_libtorch_set_is_refused_naming_the_variable() {
    let mut s = Setup::new();
    let dir = s.path("my-libtorch");
    s.cmd.arg("--cuda").env("LIBTORCH", &dir);
    expect_failure(
        s,
        &[
            "--cuda",
            &format!("LIBTORCH={}", dir.display()),
            "Unset LIBTORCH",
        ],
    );
}

#[test]
fn cuda_with_pytorch_set_is_refused_naming_the_variable() {
    let mut s = Setup::new();
    s.cmd
        .env("CLASSWISE_CUDA", "1")
        .env("LIBTORCH_USE_PYTORCH", "1");
    expect_failure(
        s,
        &[
            "CLASSWISE_CUDA=1",
            "LIBTORCH_USE_PYTORCH=1",
            "the torch package of the active Python",
        ],
    );
}

#[test]
fn cuda_on_another_platform_is_refused() {
    let mut s = Setup::new();
    s.cmd
        .args(["--cuda", "--platform", "linux-aarch64"])
        .arg("--no-data");
    expect_failure(
        s,
        &[
            "libtorch-wheels-cuda.toml",
            "built for linux-x86_64",
            "this machine is linux-aarch64",
            "LIBTORCH",
        ],
    );
}

#[test]
fn cuda_without_the_disk_space_is_refused_before_downloading() {
    let mut s = Setup::new();
    let bin = s.path("bin");
    script(
        &bin.join("df"),
        "echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n\
         echo '/dev/fake 2000000 1000000 1000000 50% /'",
    );
    s.cmd.env("PATH", &bin).arg("--cuda").arg("--no-data");
    let dir = expect_failure(
        s,
        &[
            "16 wheels, 2.52 GB in all, 2.52 GB to download",
            "not enough disk space",
            "1.02 GB is free",
            "--cache-dir",
        ],
    );
    assert!(!dir.path().join("cache/downloads").exists());
}
