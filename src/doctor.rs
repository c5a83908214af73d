//! `classwise doctor`: the environment report, as text or JSON.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use classwise_trainer::data::Located;
use classwise_trainer::doctor::{self, Report};

pub fn run(roots: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let report = doctor::report(roots);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(exit_code(&report))
}

pub fn exit_code(report: &Report) -> ExitCode {
    if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The human-readable report.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let lt = &r.libtorch;
    let opt = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or("unknown".into(), |p| p.display().to_string())
    };
    let _ = writeln!(s, "classwise doctor");
    let _ = writeln!(s, "  tch                  {}", r.tch_version);
    let _ = writeln!(
        s,
        "  libtorch             {} (tch needs {})",
        lt.loaded_version.as_deref().unwrap_or("unknown"),
        lt.expected
    );
    let _ = writeln!(s, "  library directory    {}", opt(&lt.loaded_lib_dir));
    let _ = writeln!(
        s,
        "  linked against       {} ({})",
        lt.build_time_lib_dir, lt.build_time_version
    );
    let _ = writeln!(
        s,
        "  CPU features         openmp {}, mkl {}, mkldnn {}",
        yes(lt.has_openmp),
        yes(lt.has_mkl),
        yes(lt.has_mkldnn)
    );
    let c = &r.cuda;
    let _ = writeln!(
        s,
        "  CUDA                 available {}, devices {}, libtorch_cuda loaded {}",
        yes(c.available),
        c.device_count,
        yes(c.cuda_library_loaded)
    );
    let version = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let _ = writeln!(
        s,
        "  cuDNN                available {}, version {}, cudart {}",
        yes(c.cudnn_available),
        version(c.cudnn_version),
        version(c.cudart_version)
    );
    let _ = writeln!(
        s,
        "  threads              intra-op {}, inter-op {}, cores {}",
        r.threads.intra_op, r.threads.inter_op, r.threads.available_cores
    );
    let _ = writeln!(s, "  default device       {}", r.default_device);
    let _ = writeln!(s, "  data sets");
    for d in &r.datasets {
        let need = if d.required { "" } else { " (optional)" };
        let status = match &d.located {
            Located::Found {
                path,
                train: Some(n),
                test: Some(m),
            } => format!("{} ({n} train, {m} test)", path.display()),
            Located::Found { path, .. } => path.display().to_string(),
            Located::Synthetic {
                path,
                counts,
                description,
            } => match counts {
                Some([n, m]) => format!(
                    "{} ({n} train, {m} test per class): {description}",
                    path.display()
                ),
                None => format!("{}: {description}", path.display()),
            },
            Located::Invalid { path, reason } => format!("DAMAGED at {}: {reason}", path.display()),
            Located::Missing { .. } if !d.required => {
                format!("not found{need}: put `{}/` in --data-dir", d.id.dir_name())
            }
            Located::Missing { .. } => "MISSING".to_string(),
        };
        let _ = writeln!(s, "    {:<18} {status}", d.name);
    }
    if r.problems.is_empty() {
        let _ = writeln!(s, "no problems found");
    } else {
        let _ = writeln!(s, "{} problem(s):", r.problems.len());
        for p in &r.problems {
            let _ = writeln!(s, "  - {p}");
        }
    }
    s
}
