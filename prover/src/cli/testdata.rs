//! What the `porep-testdata`, `snap-testdata` and `post-testdata` commands share: the parameter
//! directory, the seed, `--params-only`, and the parameters made first.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use proofpipe_pipeline::ProverError;

use super::filecoin::parameter_dir;

/// Flags every test-data command takes.
#[derive(Args, Debug)]
pub struct TestdataCommon {
    /// Parameter directory to generate missing files into (random setup: for tests only).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Seed of the random setup and of what is made here (sector data, ticket and challenge
    /// seed, new data, randomness).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Only generate the parameters; make nothing else.
    #[arg(long, conflicts_with = "out")]
    params_only: bool,
}

impl TestdataCommon {
    pub fn params_dir(&self) -> Option<&Path> {
        self.params_dir.as_deref()
    }

    /// Makes the kind's parameters with `generate` (from the parameter directory and the seed,
    /// returning the parameter file) and says where they are and how long they took. `None`:
    /// --params-only, the command is done; else the parameter directory.
    pub fn parameters(
        &self,
        generate: impl FnOnce(&Path, u64) -> Result<PathBuf, ProverError>,
    ) -> Result<Option<PathBuf>, ProverError> {
        let dir = parameter_dir(self.params_dir());
        let started = Instant::now();
        let params = generate(&dir, self.seed)?;
        println!(
            "parameters: {} ({:.1}s)",
            params.display(),
            started.elapsed().as_secs_f64()
        );
        Ok((!self.params_only).then_some(dir))
    }
}

/// The --out of `command`, which writes `what` there.
pub fn required_out<'a>(
    out: &'a Option<PathBuf>,
    command: &'static str,
    what: &str,
) -> Result<&'a Path, ProverError> {
    out.as_deref().ok_or_else(|| ProverError::InvalidArgument {
        what: command,
        reason: format!("give --out FILE for {what}, or --params-only"),
    })
}

/// `--work-dir`, else a new temporary directory kept afterwards (named `prefix`...) for
/// inspection.
pub fn work_dir(flag: &Option<PathBuf>, prefix: &str) -> Result<PathBuf, ProverError> {
    match flag {
        Some(dir) => Ok(dir.clone()),
        None => Ok(tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map_err(ProverError::io(
                "creating a temporary directory in",
                std::env::temp_dir(),
            ))?
            .keep()),
    }
}
