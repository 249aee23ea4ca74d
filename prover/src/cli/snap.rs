//! `snap-testdata`: SnapDeals parameters from a random setup and a snap-updated test sector.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use proofpipe_filecoin::c1::{self, SectorIdentity};
use proofpipe_filecoin::snap::{self, update_proof_name};
use proofpipe_filecoin::{RegisteredUpdateProof, testdata};
use proofpipe_pipeline::ProverError;

use super::filecoin::write_atomically;
use super::testdata::{TestdataCommon, required_out, work_dir};

#[derive(Args, Debug)]
pub struct TestdataArgs {
    /// The update proof: a sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB) or a registered update
    /// proof's name.
    #[arg(long, default_value = "2KiB", value_parser = parse_update_proof)]
    update_proof: RegisteredUpdateProof,
    #[command(flatten)]
    common: TestdataCommon,
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
}

impl TestdataArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.common.params_dir()
    }
}

pub(super) fn parse_update_proof(s: &str) -> Result<RegisteredUpdateProof, String> {
    snap::parse_update_proof(s).map_err(|e| e.to_string())
}

pub fn testdata(args: TestdataArgs) -> Result<ExitCode, ProverError> {
    let generate = |dir: &Path, seed| {
        Ok(testdata::generate_update_params(args.update_proof, dir, seed)?.params)
    };
    if args.common.parameters(generate)?.is_none() {
        return Ok(ExitCode::SUCCESS);
    }
    let out = required_out(&args.out, "snap-testdata", "the SnapDeals input")?;
    let work = work_dir(&args.work_dir, "proofpipe-snap-")?;
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
                args.common.seed,
            )?;
            (sealed, c1.comm_r)
        }
    };
    let input = testdata::snap_update(
        args.update_proof,
        &sector_dir,
        comm_r_old,
        &work,
        args.common.seed,
    )?;
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
