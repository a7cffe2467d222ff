//! The one atomic file write: the bytes go to `<file>.part` beside the target, then a rename puts them
//! under the target's name, so a reader (or a crash, or Ctrl-C) never sees a half-written file and a
//! failed write leaves whatever was there before.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The temporary name beside `path`: `<file name>.part` (`table.csv` → `table.csv.part`).
pub fn part_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

/// Writes `bytes` to `path` atomically (see the module). On error the `.part` file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let part = part_path(path);
    let result = std::fs::write(&part, bytes)
        .map_err(|e| Error::io(&part, e))
        .and_then(|()| std::fs::rename(&part, path).map_err(|e| Error::io(path, e)));
    if result.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_part_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert!(!part_path(&p).exists());
    }

    /// A target that cannot be written (its folder does not exist) is an error naming the path, and
    /// nothing is left behind.
    #[test]
    fn a_failed_write_names_the_path_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing/t.csv");
        let e = write_atomic(&p, b"x").unwrap_err().to_string();
        assert!(e.contains("t.csv.part"), "{e}");
        assert!(!part_path(&p).exists());
    }
}
