//! Files that survive a crash, for every crate that writes run files, reports or figures:
//! written to a temporary name in the same directory, synced, then renamed into place.

use std::fs::File;
use std::io::{BufWriter, Write as _};
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
/// Creates the parent directory ([`AtomicFile`] for a file written piece by piece).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = AtomicFile::create(path)?;
    file.write(bytes)?;
    file.commit()
}

/// A file written piece by piece under a temporary name in its directory, and renamed into
/// place by [`AtomicFile::commit`] after a sync; dropped without a commit, it leaves nothing.
/// The temporary name carries the process id, so that two processes writing the same file do
/// not share one.
pub struct AtomicFile {
    tmp: PathBuf,
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the parent directory and the temporary file.
    pub fn create(path: &Path) -> Result<AtomicFile, WriteError> {
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
        let out = File::create(&tmp).map_err(fail("creating", &tmp))?;
        Ok(AtomicFile {
            tmp,
            path: path.to_path_buf(),
            out: Some(BufWriter::new(out)),
        })
    }

    /// Appends `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        let out = self
            .out
            .as_mut()
            .expect("an AtomicFile is written until its commit");
        out.write_all(bytes).map_err(fail("writing", &self.tmp))
    }

    /// Flushes and syncs the file, then renames it into place.
    pub fn commit(mut self) -> Result<(), WriteError> {
        let out = self.out.take().expect("an AtomicFile is committed once");
        let file = out
            .into_inner()
            .map_err(|e| e.into_error())
            .map_err(fail("writing", &self.tmp))?;
        file.sync_all().map_err(fail("syncing", &self.tmp))?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path).map_err(fail("renaming into place", &self.path))
    }
}

impl Drop for AtomicFile {
    /// An uncommitted file leaves no temporary behind.
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Maps an I/O error of `action` on `at` into a [`WriteError`].
fn fail(action: &'static str, at: &Path) -> impl FnOnce(std::io::Error) -> WriteError {
    let path = at.to_path_buf();
    move |source| WriteError {
        action,
        path,
        source,
    }
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

    #[test]
    fn a_file_written_in_pieces_appears_whole_or_not_at_all() {
        let dir =
            std::env::temp_dir().join(format!("classwise-core-io-parts-{}", std::process::id()));
        let p = dir.join("cache.bin");
        let mut f = AtomicFile::create(&p).unwrap();
        f.write(b"head").unwrap();
        f.write(b"-body").unwrap();
        assert!(!p.exists(), "the file appears only on commit");
        f.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"head-body");
        // Dropped before its commit: the old file stays, and no temporary is left.
        let mut g = AtomicFile::create(&p).unwrap();
        g.write(b"partial").unwrap();
        drop(g);
        assert_eq!(std::fs::read(&p).unwrap(), b"head-body");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
