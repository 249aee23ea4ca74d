//! `snap-testdata`: SnapDeals parameters from a random setup and a snap-updated test sector.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use proofpipe_filecoin::c1::{self, SectorIdentity};
use proofpipe_filecoin::snap::{self, update_proof_name};
use proofpipe_filecoin::{RegisteredUpdateProof, testdata};
use proofpipe_pipeline::ProverError;

use super::filecoin::{parameter_dir, write_atomically};

#[derive(Args, Debug)]
pub struct TestdataArgs {
    /// The update proof: a sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB) or a registered update
    /// proof's name.
    #[arg(long, default_value = "2KiB", value_parser = parse_update_proof)]
    update_proof: RegisteredUpdateProof,
    /// Parameter directory to generate missing files into (random setup: for tests only).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// A sector sealed by `porep-testdata` (its --work-dir: `sealed` and `cache/`), with
    /// --porep-c1 its C1 output (for comm_r_old). Without it, a new sector is sealed into
    /// --work-dir first (miner 1000, --sector-number, --seed).
    #[arg(long, requires = "porep_c1")]
    sector_dir: Option<PathBuf>,
    /// The C1 output of --sector-dir's sector (lotus-bench's commit-2 file).
    #[arg(long, requires = "sector_dir")]
    porep_c1: Option<PathBuf>,
    /// Where the updated replica is written (and a new sector sealed, without --sector-dir).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Write the SnapDeals input (commitments and vanilla proofs, JSON) here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The sector number of a sector sealed here.
    #[arg(long, default_value_t = 1)]
    sector_number: u64,
    /// Seed of the random setup, of the new data and of a sector sealed here.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Only generate the parameters.
    #[arg(long, conflicts_with = "out")]
    params_only: bool,
}

impl TestdataArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.params_dir.as_deref()
    }
}

pub(super) fn parse_update_proof(s: &str) -> Result<RegisteredUpdateProof, String> {
    snap::parse_update_proof(s).map_err(|e| e.to_string())
}

pub fn testdata(args: TestdataArgs) -> Result<ExitCode, ProverError> {
    let dir = parameter_dir(args.params_dir.as_deref());
    let started = Instant::now();
    let files = testdata::generate_update_params(args.update_proof, &dir, args.seed)?;
    println!(
        "parameters: {} ({:.1}s)",
        files.params.display(),
        started.elapsed().as_secs_f64()
    );
    if args.params_only {
        return Ok(ExitCode::SUCCESS);
    }
    let Some(out) = &args.out else {
        return Err(ProverError::InvalidArgument {
            what: "snap-testdata",
            reason: "give --out FILE for the SnapDeals input, or --params-only".into(),
        });
    };
    let work = match &args.work_dir {
        Some(w) => w.clone(),
        None => tempfile::Builder::new()
            .prefix("proofpipe-snap-")
            .tempdir()
            .map_err(ProverError::io(
                "creating a temporary directory in",
                std::env::temp_dir(),
            ))?
            .keep(),
    };
    let started = Instant::now();
    let (sector_dir, comm_r_old) = match (&args.sector_dir, &args.porep_c1) {
        (Some(sector), Some(c1_path)) => {
            let c1 = c1::read(c1_path, SectorIdentity::parse(None, None, None)?)?;
            if c1.seal_proof() != testdata::seal_proof_of_update(args.update_proof) {
                return Err(ProverError::InvalidArgument {
                    what: "sealed sector",
                    reason: format!(
                        "{} is a C1 output of a {} sector, not of {}'s size",
                        c1_path.display(),
                        proofpipe_filecoin::seal_proof_name(c1.seal_proof()),
                        update_proof_name(args.update_proof)
                    ),
                });
            }
            (sector.clone(), c1.output.comm_r)
        }
        _ => {
            let seal_proof = testdata::seal_proof_of_update(args.update_proof);
            let sealed = work.join("sector");
            let c1 = testdata::seal_sector(
                seal_proof,
                &sealed,
                c1::prover_id_of_miner(c1::DEFAULT_MINER_ID),
                args.sector_number,
                args.seed,
            )?;
            (sealed, c1.comm_r)
        }
    };
    let input =
        testdata::snap_update(args.update_proof, &sector_dir, comm_r_old, &work, args.seed)?;
    write_atomically(out, &input.to_json())?;
    println!(
        "SnapDeals input of a {} update ({} vanilla partition proofs) made in {:.1}s in {}: {}",
        update_proof_name(args.update_proof),
        input.vanilla_proofs.len(),
        started.elapsed().as_secs_f64(),
        work.display(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
