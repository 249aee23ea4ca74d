//! An input read from a file, its refusals naming the file.

use std::path::Path;

use proofpipe_pipeline::error::ProverError;

/// Reads the input at `path` and parses it with `parse`; a refusal of its contents names the
/// file.
pub fn read<T>(
    path: &Path,
    parse: impl FnOnce(&[u8]) -> Result<T, ProverError>,
) -> Result<T, ProverError> {
    let bytes = std::fs::read(path).map_err(ProverError::io("reading the input", path))?;
    parse(&bytes).map_err(|e| naming(e, &path.display().to_string()))
}

/// `error`, an invalid input's, saying where the input came from (a path or a URL).
pub fn naming(error: ProverError, origin: &str) -> ProverError {
    match error {
        ProverError::InvalidArgument { what, reason } => ProverError::InvalidArgument {
            what,
            reason: format!("{origin}: {reason}"),
        },
        other => other,
    }
}
