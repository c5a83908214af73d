//! Files that survive a crash: written to a temporary name, synced, then renamed into place.

use std::io::Write;
use std::path::Path;

use crate::error::{IoContext, Result, TrainerError};

/// Writes `bytes` to `path` atomically: readers see the old file or the new one, never a part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).at("creating directory", dir)?;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{}.tmp", name.unwrap_or_default()));
    let mut f = std::fs::File::create(&tmp).at("creating", &tmp)?;
    f.write_all(bytes).at("writing", &tmp)?;
    f.sync_all().at("syncing", &tmp)?;
    std::fs::rename(&tmp, path).at("renaming into place", path)?;
    Ok(())
}

/// Pretty JSON of `value`, written atomically.
pub fn write_json<T: serde::Serialize>(path: &Path, what: &'static str, value: &T) -> Result<()> {
    let mut text =
        serde_json::to_vec_pretty(value).map_err(|source| TrainerError::Json { what, source })?;
    text.push(b'\n');
    write_atomic(path, &text)
}

/// Named tensors written atomically as safetensors (no metadata; see
/// [`crate::model::safetensors`]).
pub fn save_tensors_atomic(path: &Path, tensors: &[(String, tch::Tensor)]) -> Result<()> {
    crate::model::safetensors::write(path, tensors, &Default::default())
}

/// Reads named tensors (on the CPU) from a safetensors file, naming the file on error.
pub fn load_tensors(path: &Path) -> Result<Vec<(String, tch::Tensor)>> {
    Ok(crate::model::safetensors::read(path, tch::Device::Cpu)?.tensors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub").join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
    }
}
