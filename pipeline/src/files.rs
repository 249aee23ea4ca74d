//! Files written so that a crash never leaves half of one under its real name.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::error::ProverError;

/// Writes `path` through `write` under a temporary name in its directory (created if need
/// be), then renames it into place: a crash never leaves a partial file under the real name.
/// Each writer has a name of its own: provers sharing a volume may write the same file at
/// once, and each must rename only what it wrote itself.
pub fn write_then_rename(
    path: &Path,
    write: impl FnOnce(&File) -> io::Result<()>,
) -> Result<(), ProverError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(ProverError::io("creating the directory", dir))?;
    let tmp = tempfile::Builder::new()
        .prefix(path.file_name().unwrap_or_default())
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(ProverError::io("creating a temporary file in", dir))?;
    let tmp_path = tmp.path().to_path_buf();
    write(tmp.as_file()).map_err(ProverError::io("writing", &tmp_path))?;
    tmp.persist(path)
        .map_err(|err| err.error)
        .map_err(ProverError::io("renaming into place at", path))?;
    Ok(())
}
