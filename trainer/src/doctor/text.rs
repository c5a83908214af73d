//! The doctor's report as text (`classwise doctor`; `--json` prints the [`Report`] itself).

use std::fmt::{self, Display, Formatter};
use std::path::PathBuf;

use super::{CudaInfo, DatasetStatus, LibtorchInfo, Report};
use crate::data::Located;

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

impl Display for Report {
    /// One line per fact, then the data sets, then the problems (or that there are none).
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "classwise doctor")?;
        writeln!(f, "  tch                  {}", self.tch_version)?;
        libtorch(f, &self.libtorch)?;
        cuda(f, &self.cuda)?;
        let t = &self.threads;
        writeln!(
            f,
            "  threads              intra-op {}, inter-op {}, cores {}",
            t.intra_op, t.inter_op, t.available_cores
        )?;
        writeln!(f, "  default device       {}", self.default_device)?;
        writeln!(f, "  data sets")?;
        for d in &self.datasets {
            writeln!(f, "    {:<18} {}", d.name, dataset(d))?;
        }
        if self.problems.is_empty() {
            return writeln!(f, "no problems found");
        }
        writeln!(f, "{} problem(s):", self.problems.len())?;
        for p in &self.problems {
            writeln!(f, "  - {p}")?;
        }
        Ok(())
    }
}

fn libtorch(f: &mut Formatter<'_>, lt: &LibtorchInfo) -> fmt::Result {
    let opt = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or("unknown".into(), |p| p.display().to_string())
    };
    writeln!(
        f,
        "  libtorch             {} (tch needs {})",
        lt.loaded_version.as_deref().unwrap_or("unknown"),
        lt.expected
    )?;
    writeln!(f, "  library directory    {}", opt(&lt.loaded_lib_dir))?;
    writeln!(
        f,
        "  linked against       {} ({})",
        lt.build_time_lib_dir, lt.build_time_version
    )?;
    writeln!(
        f,
        "  CPU features         openmp {}, mkl {}, mkldnn {}",
        yes(lt.has_openmp),
        yes(lt.has_mkl),
        yes(lt.has_mkldnn)
    )
}

fn cuda(f: &mut Formatter<'_>, c: &CudaInfo) -> fmt::Result {
    let version = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    writeln!(
        f,
        "  CUDA                 available {}, devices {}, libtorch_cuda loaded {}",
        yes(c.available),
        c.device_count,
        yes(c.cuda_library_loaded)
    )?;
    writeln!(
        f,
        "  cuDNN                available {}, version {}, cudart {}",
        yes(c.cudnn_available),
        version(c.cudnn_version),
        version(c.cudart_version)
    )
}

/// Where a data set was found, and its counts, or why it was not.
fn dataset(d: &DatasetStatus) -> String {
    match &d.located {
        Located::Found {
            path,
            train: Some(n),
            test: Some(m),
        } => format!("{} ({n} train, {m} test)", path.display()),
        Located::Found { path, .. } => path.display().to_string(),
        Located::Synthetic {
            path,
            counts: Some([n, m]),
            description,
        } => format!(
            "{} ({n} train, {m} test per class): {description}",
            path.display()
        ),
        Located::Synthetic {
            path, description, ..
        } => format!("{}: {description}", path.display()),
        Located::Invalid { path, reason } => format!("DAMAGED at {}: {reason}", path.display()),
        Located::Missing { .. } if !d.required => format!(
            "not found (optional): put `{}/` in --data-dir",
            d.id.dir_name()
        ),
        Located::Missing { .. } => "MISSING".to_string(),
    }
}
