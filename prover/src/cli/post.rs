//! `post-testdata`: PoSt parameters from a random setup and test inputs from sealed sectors.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use proofpipe_filecoin::c1;
use proofpipe_filecoin::post::{self, post_proof_name};
use proofpipe_filecoin::post_testdata::{self, SealedSector};
use proofpipe_filecoin::{RegisteredPoStProof, RegisteredSealProof};
use proofpipe_pipeline::ProverError;

use super::filecoin::write_atomically;
use super::testdata::{TestdataCommon, required_out};

#[derive(Args, Debug)]
pub struct TestdataArgs {
    /// The registered PoSt proof: a name (StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1, …)
    /// or curio's number.
    #[arg(long, value_parser = parse_post_proof)]
    post_proof: RegisteredPoStProof,
    #[command(flatten)]
    common: TestdataCommon,
    /// A sector sealed by `porep-testdata` (its --work-dir: `sealed` and `cache/`); repeat for
    /// more, each followed by its --porep-c1.
    #[arg(long, value_name = "DIR")]
    sector_dir: Vec<PathBuf>,
    /// The C1 output of the --sector-dir before it (lotus-bench's commit-2 file: its sector
    /// number and comm_r).
    #[arg(long, value_name = "FILE")]
    porep_c1: Vec<PathBuf>,
    /// Also seal this many new sectors (numbers after the highest given, miner --miner-id) into
    /// --work-dir, each with its c1.json, to be reused with --sector-dir.
    #[arg(long, default_value_t = 0, requires = "work_dir")]
    seal_sectors: u32,
    /// Where new sectors are sealed.
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// The miner's actor id (the prover id is made from it).
    #[arg(long, default_value_t = c1::DEFAULT_MINER_ID)]
    miner_id: u64,
    /// Write the PoSt input (vanilla proofs, randomness, miner id; JSON) here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// WindowPoSt: write only curio's request for this partition of the sectors (its sectors'
    /// vanilla proofs and `partition_index`) instead of the whole WindowPoSt.
    #[arg(long)]
    partition_index: Option<u32>,
}

impl TestdataArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.common.params_dir()
    }
}

pub(super) fn parse_post_proof(s: &str) -> Result<RegisteredPoStProof, String> {
    post::parse_post_proof(s).map_err(|e| e.to_string())
}

/// The V1_1 seal proof of `proof`'s sector size: what new test sectors are sealed with.
fn seal_proof_of(proof: RegisteredPoStProof) -> Result<RegisteredSealProof, ProverError> {
    let size = u64::from(proof.sector_size());
    [
        RegisteredSealProof::StackedDrg2KiBV1_1,
        RegisteredSealProof::StackedDrg8MiBV1_1,
        RegisteredSealProof::StackedDrg512MiBV1_1,
        RegisteredSealProof::StackedDrg32GiBV1_1,
        RegisteredSealProof::StackedDrg64GiBV1_1,
    ]
    .into_iter()
    .find(|s| u64::from(s.sector_size()) == size)
    .ok_or_else(|| ProverError::InvalidArgument {
        what: "PoSt proof",
        reason: format!(
            "no seal proof has the sector size of {}",
            post_proof_name(proof)
        ),
    })
}

pub fn testdata(args: TestdataArgs) -> Result<ExitCode, ProverError> {
    let generate = |dir: &Path, seed| {
        Ok(post_testdata::generate_post_params(args.post_proof, dir, seed)?.params)
    };
    if args.common.parameters(generate)?.is_none() {
        return Ok(ExitCode::SUCCESS);
    }
    let out = required_out(&args.out, "post-testdata", "the PoSt input")?;
    if args.sector_dir.len() != args.porep_c1.len() {
        return Err(ProverError::InvalidArgument {
            what: "post-testdata",
            reason: format!(
                "{} --sector-dir but {} --porep-c1: give each sealed sector's directory and its \
                 C1 output",
                args.sector_dir.len(),
                args.porep_c1.len()
            ),
        });
    }
    let started = Instant::now();
    let mut sectors = args
        .sector_dir
        .iter()
        .zip(&args.porep_c1)
        .map(|(d, c)| SealedSector::open(d, c))
        .collect::<Result<Vec<_>, _>>()?;
    if args.seal_sectors > 0 {
        let work = args.work_dir.as_ref().expect("clap requires --work-dir");
        let first = sectors.iter().map(|s| s.sector_number).max().unwrap_or(0) + 1;
        let numbers: Vec<u64> = (first..first + u64::from(args.seal_sectors)).collect();
        sectors.extend(post_testdata::seal_sectors(
            seal_proof_of(args.post_proof)?,
            work,
            c1::prover_id_of_miner(args.miner_id),
            &numbers,
            args.common.seed,
        )?);
    }
    let input = post_testdata::post_input(
        args.post_proof,
        &sectors,
        args.miner_id,
        post_testdata::randomness_from_seed(args.common.seed),
    )?;
    let partitions = post::partitions_for(args.post_proof, sectors.len());
    let input = match args.partition_index {
        Some(k) => input.window_partition(k)?,
        None => input,
    };
    write_atomically(out, &input.to_json())?;
    println!(
        "{} input of sectors {:?} ({}) made in {:.1}s: {}",
        post_proof_name(args.post_proof),
        sectors.iter().map(|s| s.sector_number).collect::<Vec<_>>(),
        match args.partition_index {
            Some(k) => format!("partition {k} of {partitions}"),
            None => format!("{partitions} partitions"),
        },
        started.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
