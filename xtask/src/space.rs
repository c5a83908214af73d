//! What an assembly from wheels will download and take on disk: announced before anything is
//! downloaded (the CUDA libtorch is gigabytes) and checked against the free space of the cache.

use std::path::Path;
use std::process::Command;

use crate::error::{IoContext, SetupError};
use crate::manifest::Manifest;

/// Sizes of one assembly, from the manifest's `size` and `unpacked_size` entries.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// Number of wheels.
    pub wheels: usize,
    /// Bytes of all wheels together.
    pub total: u64,
    /// Bytes of the wheels that are neither in `--wheel-dir` nor in the cache's downloads.
    pub to_download: u64,
    /// Bytes of the assembled directory, when the manifest says.
    pub unpacked: Option<u64>,
}

impl Plan {
    /// The plan for `manifest`, or `None` when it gives no wheel sizes (the CPU manifest).
    pub fn new(manifest: &Manifest, wheel_dir: Option<&Path>, downloads: &Path) -> Option<Self> {
        if manifest.wheels.iter().all(|w| w.size.is_none()) {
            return None;
        }
        let present = |file: &str| {
            wheel_dir.is_some_and(|d| d.join(file).is_file()) || downloads.join(file).is_file()
        };
        let size = |w: &crate::manifest::Wheel| w.size.unwrap_or(0);
        Some(Plan {
            wheels: manifest.wheels.len(),
            total: manifest.wheels.iter().map(size).sum(),
            to_download: manifest
                .wheels
                .iter()
                .filter(|w| !present(&w.file))
                .map(size)
                .sum(),
            unpacked: manifest.unpacked_size,
        })
    }

    /// Bytes needed on the cache's disk: the downloads plus the assembled directory.
    pub fn needed(&self) -> u64 {
        self.to_download + self.unpacked.unwrap_or(0)
    }

    /// One line for the user, e.g. `16 wheels, 2.52 GB in all, 2.52 GB to download; about
    /// 3.56 GB once assembled`.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} wheels, {} in all, {} to download",
            self.wheels,
            human(self.total),
            human(self.to_download)
        );
        if let Some(u) = self.unpacked {
            text.push_str(&format!("; about {} once assembled", human(u)));
        }
        text
    }
}

/// Announces `manifest`'s sizes and refuses to start when the cache's disk is too small.
/// Does nothing for a manifest without sizes.
pub fn announce_and_check(
    manifest: &Manifest,
    cache: &Path,
    wheel_dir: Option<&Path>,
    downloads: &Path,
) -> Result<(), SetupError> {
    let Some(plan) = Plan::new(manifest, wheel_dir, downloads) else {
        return Ok(());
    };
    eprintln!("  libtorch {}: {}", manifest.build_version, plan.describe());
    std::fs::create_dir_all(cache).at("creating", cache)?;
    match available_bytes(cache) {
        Some(available) if available < plan.needed() => Err(SetupError::NotEnoughSpace {
            dir: cache.to_path_buf(),
            needed: human(plan.needed()),
            available: human(available),
        }),
        Some(_) => Ok(()),
        None => {
            eprintln!("  (free disk space not checked: `df -Pk` gave no answer)");
            Ok(())
        }
    }
}

/// Free bytes on the file system of `dir`, from POSIX `df -Pk` (the fourth column, in KiB).
fn available_bytes(dir: &Path) -> Option<u64> {
    let out = Command::new("df").arg("-Pk").arg(dir).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_df(&String::from_utf8_lossy(&out.stdout))
}

/// The `Available` column of `df -Pk`'s data line, in bytes.
fn parse_df(text: &str) -> Option<u64> {
    let line = text.lines().nth(1)?;
    let kib: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Bytes in decimal units, as the README and pip print them: `540 MB`, `2.52 GB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "kB")];
    for (size, unit) in UNITS {
        if bytes >= size {
            let value = bytes as f64 / size as f64;
            let digits = match value {
                v if v >= 100.0 => 0,
                v if v >= 10.0 => 1,
                _ => 2,
            };
            return format!("{value:.digits$} {unit}");
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_printed_in_decimal_units() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(999), "999 B");
        assert_eq!(human(1_500), "1.50 kB");
        assert_eq!(human(540_000_000), "540 MB");
        assert_eq!(human(52_440_000), "52.4 MB");
        assert_eq!(human(2_518_199_184), "2.52 GB");
    }

    #[test]
    fn df_output_is_parsed() {
        let text = "Filesystem     1024-blocks      Used Available Capacity Mounted on\n\
                    /dev/vda         263174212  26000000  70000000      28% /\n";
        assert_eq!(parse_df(text), Some(70_000_000 * 1024));
        assert_eq!(parse_df("Filesystem\n"), None);
        assert_eq!(parse_df("header\n/dev/x 1 2 lots 3% /\n"), None);
    }
}
