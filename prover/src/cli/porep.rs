//! `porep-testdata`: parameters from a random setup and a sealed test sector's C1 output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use proofpipe_filecoin::c1;
use proofpipe_filecoin::{RegisteredSealProof, seal_proof_name, testdata};
use proofpipe_pipeline::ProverError;

use super::filecoin::write_atomically;
use super::testdata::{TestdataCommon, work_dir};

#[derive(Args, Debug)]
pub struct TestdataArgs {
    /// The seal proof: a sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB: their V1_1 proof) or a
    /// registered proof's name.
    #[arg(long, default_value = "2KiB", value_parser = parse_seal_proof)]
    seal_proof: RegisteredSealProof,
    #[command(flatten)]
    common: TestdataCommon,
    /// Where the sector is sealed (kept afterwards for inspection).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Write lotus-bench's commit-2 input file for the sealed sector here.
    #[arg(long)]
    out: PathBuf,
    /// The miner's actor id (the prover id is made from it).
    #[arg(long, default_value_t = c1::DEFAULT_MINER_ID)]
    miner_id: u64,
    #[arg(long, default_value_t = 1)]
    sector_number: u64,
}

impl TestdataArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.common.params_dir()
    }
}

pub(super) fn parse_seal_proof(s: &str) -> Result<RegisteredSealProof, String> {
    proofpipe_filecoin::parse_seal_proof(s).map_err(|e| e.to_string())
}

pub fn testdata(args: TestdataArgs) -> Result<ExitCode, ProverError> {
    let generate =
        |dir: &Path, seed| Ok(testdata::generate_params(args.seal_proof, dir, seed)?.params);
    if args.common.parameters(generate)?.is_none() {
        return Ok(ExitCode::SUCCESS);
    }
    let work = work_dir(&args.work_dir, "proofpipe-seal-")?;
    let started = Instant::now();
    let output = testdata::seal_sector(
        args.seal_proof,
        &work,
        c1::prover_id_of_miner(args.miner_id),
        args.sector_number,
        args.common.seed,
    )?;
    let bytes = c1::to_lotus_bench_json(&output, args.sector_number)?;
    write_atomically(&args.out, &bytes)?;
    println!(
        "C1 output of {} sector {} (miner {}) sealed in {:.1}s in {}: {}",
        seal_proof_name(args.seal_proof),
        args.sector_number,
        args.miner_id,
        started.elapsed().as_secs_f64(),
        work.display(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
