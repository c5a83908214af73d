//! Files that survive a crash, for every crate that writes run files, reports or figures:
//! written to a temporary name in the same directory, synced, then renamed into place.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A step of [`write_atomic`] that failed, with the file it was acting on.
#[derive(Debug, thiserror::Error)]
#[error("{action} {}: {source}", path.display())]
pub struct WriteError {
    /// `creating directory`, `creating`, `writing`, `syncing` or `renaming into place`.
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` atomically: readers see the old file or the new one, never a part.
/// Creates the parent directory. The temporary name carries the process id, so that two
/// processes writing the same file do not share one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let fail = |action: &'static str, at: &Path| {
        let path = at.to_path_buf();
        move |source| WriteError {
            action,
            path,
            source,
        }
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(fail("creating directory", dir))?;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(
        ".{}.tmp{}",
        name.unwrap_or_default(),
        std::process::id()
    ));
    let mut f = std::fs::File::create(&tmp).map_err(fail("creating", &tmp))?;
    f.write_all(bytes).map_err(fail("writing", &tmp))?;
    f.sync_all().map_err(fail("syncing", &tmp))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(fail("renaming into place", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("classwise-core-io-{}", std::process::id()));
        let p = dir.join("sub").join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failure_names_the_step_and_the_file() {
        let blocker =
            std::env::temp_dir().join(format!("classwise-core-io-file-{}", std::process::id()));
        std::fs::write(&blocker, b"a file, not a directory").unwrap();
        let err = write_atomic(&blocker.join("x.json"), b"{}").unwrap_err();
        assert_eq!(err.action, "creating directory");
        assert!(
            err.to_string().contains(&blocker.display().to_string()),
            "{err}"
        );
        std::fs::remove_file(&blocker).unwrap();
    }
}
