//! `prove --snap-vanilla`: a Filecoin SnapDeals (EmptySectorUpdate) proof from curio's vanilla
//! partition proofs, through the pipeline; `snap-verify`: filecoin-proofs-api's
//! verify_empty_sector_update_proof on a proof file; `snap-testdata`: SnapDeals parameters from
//! a random setup and a snap-updated test sector.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use proofpipe_prover::ProverError;
use proofpipe_prover::filecoin::c1::{self, SectorIdentity};
use proofpipe_prover::filecoin::params;
use proofpipe_prover::filecoin::snap::{self, SnapInput, update_proof_name};
use proofpipe_prover::filecoin::{RegisteredUpdateProof, testdata};
use proofpipe_prover::pipeline::JobOutcome;
use proofpipe_prover::rss;
use proofpipe_prover::sizing::{QueryPlacement, detect_memory_limit};
use serde::Serialize;

use super::SizingArgs;
use super::porep::{
    PartitionsRun, PorepArgs, digest_check, parameter_dir, prove_partitions, write_atomically,
};

#[derive(Serialize)]
struct Summary {
    outcome: JobOutcome,
    update_proof: String,
    partitions: u32,
    proof_path: Option<PathBuf>,
    proof_bytes: usize,
    /// Every partition's proof checked against its own public inputs by the pipeline.
    partitions_verified: usize,
    /// filecoin-proofs-api's verify_empty_sector_update_proof on the whole proof, when --verify.
    verify_empty_sector_update_proof: Option<bool>,
    seconds: f64,
    seconds_per_partition: f64,
    params_seconds: f64,
    constraints_domain: usize,
    peak_rss_bytes: Option<u64>,
    predicted_peak_bytes: u64,
    /// Which queries' bases stayed on the GPU and which streamed from host memory (none on
    /// the CPU backend).
    gpu_placement: Option<QueryPlacement>,
    memory_limit_bytes: u64,
    partition_workers: usize,
    channel_capacity: usize,
    gpu_workers: usize,
    max_synthesized_in_flight: u64,
    backend: &'static str,
    params_bytes: u64,
    /// `--compare-stock`: generate_empty_sector_update_proof_with_vanilla's wall seconds for the
    /// same input, and ours as a speedup over it.
    stock_seconds: Option<f64>,
    speedup_vs_stock: Option<f64>,
}

pub fn prove(
    args: &PorepArgs,
    input_path: &Path,
    sizing: &SizingArgs,
    params_dir: Option<&Path>,
    json: bool,
) -> Result<ExitCode, ProverError> {
    let input = SnapInput::read(input_path)?;
    let job = snap::prepare(&input)?;
    let name = update_proof_name(job.update_proof);
    tracing::info!(proof = %name, partitions = job.partitions, "SnapDeals vanilla proofs read");

    let dir = parameter_dir(params_dir);
    let check = digest_check(args);
    let limit = detect_memory_limit(sizing.memory_limit)?;
    let params_started = Instant::now();
    let key = Arc::new(params::load_update(job.update_proof, &dir, check)?);
    let params_seconds = params_started.elapsed().as_secs_f64();
    rss::reset_peak_rss();

    let PartitionsRun {
        plan,
        proofs,
        outcome,
        seconds,
        buffers,
        backend,
    } = prove_partitions(
        &name,
        &key,
        job.source,
        job.partitions,
        0,
        sizing,
        limit.bytes,
    )?;

    let partitions_verified = proofs.iter().filter(|p| p.verified).count();
    let mut proof_bytes = Vec::new();
    let mut verified_by_filecoin = None;
    if outcome == JobOutcome::Succeeded {
        proof_bytes = snap::assemble(&proofs, job.partitions)?;
        if args.verify {
            verified_by_filecoin = Some(snap::verify(&input, &proof_bytes)?);
        }
        // Never write out a proof Filecoin's verifier has rejected.
        if let Some(out) = args
            .out
            .as_ref()
            .filter(|_| verified_by_filecoin != Some(false))
        {
            write_atomically(out, &proof_bytes)?;
        }
    }
    let peak_rss_bytes = rss::peak_rss_bytes();
    let (stock_seconds, speedup_vs_stock) = if args.compare_stock {
        let started = Instant::now();
        filecoin_proofs_api::update::generate_empty_sector_update_proof_with_vanilla(
            input.update_proof,
            input
                .vanilla_proofs
                .iter()
                .cloned()
                .map(filecoin_proofs_api::PartitionProofBytes)
                .collect(),
            input.comm_r_old,
            input.comm_r_new,
            input.comm_d_new,
        )
        .map_err(ProverError::filecoin(
            "stock generate_empty_sector_update_proof_with_vanilla",
        ))?;
        let stock = started.elapsed().as_secs_f64();
        tracing::info!(
            stock_seconds = stock,
            ours = seconds,
            "stock generate_empty_sector_update_proof_with_vanilla"
        );
        (Some(stock), Some(stock / seconds))
    } else {
        (None, None)
    };
    let written = args
        .out
        .clone()
        .filter(|_| !proof_bytes.is_empty() && verified_by_filecoin != Some(false));
    let summary = Summary {
        outcome: outcome.clone(),
        update_proof: name,
        partitions: job.partitions,
        proof_path: written.clone(),
        proof_bytes: proof_bytes.len(),
        partitions_verified,
        verify_empty_sector_update_proof: verified_by_filecoin,
        seconds,
        seconds_per_partition: seconds / f64::from(job.partitions.max(1)),
        params_seconds,
        constraints_domain: key.shape.constraints,
        peak_rss_bytes,
        predicted_peak_bytes: plan.predicted_peak_bytes,
        gpu_placement: plan.gpu.as_ref().map(|g| g.placement),
        memory_limit_bytes: limit.bytes,
        partition_workers: plan.partition_workers,
        channel_capacity: plan.channel_capacity,
        gpu_workers: plan.gpu_workers,
        max_synthesized_in_flight: buffers.max_synthesized_in_flight,
        backend,
        params_bytes: key.heap_bytes(),
        stock_seconds,
        speedup_vs_stock,
    };
    let status = match (&outcome, verified_by_filecoin) {
        (JobOutcome::Succeeded, Some(false)) => {
            "REJECTED by verify_empty_sector_update_proof".to_string()
        }
        (JobOutcome::Succeeded, Some(true)) => {
            "OK, verify_empty_sector_update_proof accepts it".to_string()
        }
        (JobOutcome::Succeeded, None) => {
            "OK (not checked with verify_empty_sector_update_proof)".to_string()
        }
        (JobOutcome::Failed(e), _) => format!("FAILED ({e})"),
        (JobOutcome::Cancelled, _) => "CANCELLED".to_string(),
    };
    println!(
        "{status}: {} SnapDeals update, {} partitions ({} verified by the pipeline) in {:.2}s ({:.2}s/partition){}",
        summary.update_proof,
        summary.partitions,
        partitions_verified,
        seconds,
        summary.seconds_per_partition,
        written.as_ref().map_or(String::new(), |p| format!(
            "; proof written to {}",
            p.display()
        )),
    );
    if json {
        println!(
            "{}",
            serde_json::to_string(&summary).expect("summary serializes")
        );
    }
    let ok = outcome == JobOutcome::Succeeded
        && partitions_verified == job.partitions as usize
        && verified_by_filecoin != Some(false);
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The SnapDeals input the proof was made from (its update proof and commitments are used).
    #[arg(long, value_name = "FILE")]
    snap_vanilla: PathBuf,
    /// The proof: generate_empty_sector_update_proof_with_vanilla's bytes.
    #[arg(long, value_name = "PROOF")]
    proof: PathBuf,
    /// Filecoin's parameter directory (the verifying key is read from it).
    #[arg(long)]
    params_dir: Option<PathBuf>,
}

impl VerifyArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.params_dir.as_deref()
    }
}

/// `snap-verify`: filecoin-proofs-api's verify_empty_sector_update_proof on a proof file. Exit 0
/// valid, 1 not.
pub fn verify(args: VerifyArgs) -> Result<ExitCode, ProverError> {
    let input = SnapInput::read(&args.snap_vanilla)?;
    let proof =
        std::fs::read(&args.proof).map_err(ProverError::io("reading the proof", &args.proof))?;
    let expected = snap::PARTITION_PROOF_BYTES * snap::partitions(input.update_proof) as usize;
    if proof.len() != expected {
        return Err(ProverError::InvalidArgument {
            what: "proof",
            reason: format!(
                "{} has {} bytes; a {} proof has {expected} (192 per partition)",
                args.proof.display(),
                proof.len(),
                update_proof_name(input.update_proof)
            ),
        });
    }
    let valid = snap::verify(&input, &proof)?;
    println!(
        "{}: {} SnapDeals update, {} bytes",
        if valid { "VALID" } else { "INVALID" },
        update_proof_name(input.update_proof),
        proof.len()
    );
    Ok(if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

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
                        proofpipe_prover::filecoin::seal_proof_name(c1.seal_proof()),
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
