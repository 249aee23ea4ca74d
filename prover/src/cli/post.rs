//! `prove --window-post-vanilla` / `--winning-post-vanilla`: a Filecoin WindowPoSt (whole, or
//! one partition as curio sends it) or WinningPoSt from curio's vanilla sector proofs, through
//! the pipeline; `window-post-verify` / `winning-post-verify`: filecoin-proofs-api's verifier on
//! a proof file; `post-testdata`: PoSt parameters from a random setup and test inputs from
//! sealed sectors.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use filecoin_proofs_api::PartitionSnarkProof;
use proofpipe_prover::ProverError;
use proofpipe_prover::filecoin::c1;
use proofpipe_prover::filecoin::params;
use proofpipe_prover::filecoin::post::{self, PostInput, PostKind, kind_name, post_proof_name};
use proofpipe_prover::filecoin::post_testdata::{self, SealedSector};
use proofpipe_prover::filecoin::{RegisteredPoStProof, RegisteredSealProof};
use proofpipe_prover::groth16::SynthesisMode;
use proofpipe_prover::pipeline::JobOutcome;
use proofpipe_prover::rss;
use proofpipe_prover::sizing::{QueryPlacement, detect_memory_limit};
use serde::Serialize;

use super::SizingArgs;
use super::porep::{
    PartitionsRun, PorepArgs, digest_check, parameter_dir, prove_partitions, write_atomically,
};

/// The verifier filecoin-proofs-api has for `kind`.
fn verifier(kind: &PostKind) -> &'static str {
    match kind {
        PostKind::Window => "verify_window_post",
        PostKind::Winning => "verify_winning_post",
    }
}

/// The flag that reads `kind`'s input.
fn flag(kind: &PostKind) -> &'static str {
    match kind {
        PostKind::Window => "--window-post-vanilla",
        PostKind::Winning => "--winning-post-vanilla",
    }
}

/// Reads a PoSt input and checks it is of `kind`.
fn read_input(path: &Path, kind: &PostKind) -> Result<PostInput, ProverError> {
    let input = PostInput::read(path)?;
    if input.kind() != *kind {
        return Err(ProverError::InvalidArgument {
            what: "PoSt input",
            reason: format!(
                "{}: its registered proof {} is a {} proof; give it with {}",
                path.display(),
                post_proof_name(input.post_proof),
                kind_name(&input.kind()),
                flag(&input.kind())
            ),
        });
    }
    Ok(input)
}

#[derive(Serialize)]
struct Summary {
    outcome: JobOutcome,
    /// `WindowPoSt` or `WinningPoSt`.
    kind: &'static str,
    post_proof: String,
    /// The WindowPoSt partition proved alone (curio's request), if one.
    partition_index: Option<u32>,
    sectors: usize,
    partitions: u32,
    proof_path: Option<PathBuf>,
    proof_bytes: usize,
    /// Every partition's proof checked against its own public inputs by the pipeline.
    partitions_verified: usize,
    /// verify_window_post or verify_winning_post.
    verifier: &'static str,
    /// Its verdict on the whole proof, when --verify.
    verified: Option<bool>,
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
    /// `one-pass`, or `matrices`: the native witness and the R1CS matrices.
    synthesis: SynthesisMode,
    /// The matrices' heap bytes (0 in one pass).
    matrices_bytes: u64,
    /// `--compare-stock`: filecoin-proofs-api's own prover's wall seconds for the same input
    /// (generate_window_post_with_vanilla, generate_single_window_post_with_vanilla or
    /// generate_winning_post_with_vanilla), and ours as a speedup over it.
    stock_seconds: Option<f64>,
    speedup_vs_stock: Option<f64>,
}

pub fn prove(
    args: &PorepArgs,
    input_path: &Path,
    kind: PostKind,
    sizing: &SizingArgs,
    synthesis: SynthesisMode,
    params_dir: Option<&Path>,
    json: bool,
) -> Result<ExitCode, ProverError> {
    let input = read_input(input_path, &kind)?;
    let job = post::prepare(&input, synthesis)?;
    let matrices_bytes = job.matrices.as_ref().map_or(0, |m| m.heap_bytes());
    let name = post_proof_name(job.post_proof);
    tracing::info!(
        proof = %name,
        sectors = job.sectors.len(),
        partitions = job.partitions,
        partition_index = ?input.partition_index,
        "PoSt vanilla proofs read"
    );

    let dir = parameter_dir(params_dir);
    let check = digest_check(args);
    let limit = detect_memory_limit(sizing.memory_limit)?;
    let params_started = Instant::now();
    let key = Arc::new(params::load_post(job.post_proof, &dir, check)?);
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
        matrices_bytes,
        sizing,
        limit.bytes,
    )?;

    let partitions_verified = proofs.iter().filter(|p| p.verified).count();
    let mut proof_bytes = Vec::new();
    let mut verified_by_filecoin = None;
    if outcome == JobOutcome::Succeeded {
        proof_bytes = post::assemble(&proofs, job.partitions)?;
        if args.verify {
            verified_by_filecoin = Some(post::verify_sectors(&input, &job.sectors, &proof_bytes)?);
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
        stock_prove(&input)?;
        let stock = started.elapsed().as_secs_f64();
        tracing::info!(
            stock_seconds = stock,
            ours = seconds,
            "stock filecoin-proofs-api prover"
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
        kind: kind_name(&kind),
        post_proof: name,
        partition_index: input.partition_index,
        sectors: job.sectors.len(),
        partitions: job.partitions,
        proof_path: written.clone(),
        proof_bytes: proof_bytes.len(),
        partitions_verified,
        verifier: verifier(&kind),
        verified: verified_by_filecoin,
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
        synthesis,
        matrices_bytes,
        stock_seconds,
        speedup_vs_stock,
    };
    let status = match (&outcome, verified_by_filecoin) {
        (JobOutcome::Succeeded, Some(false)) => format!("REJECTED by {}", verifier(&kind)),
        (JobOutcome::Succeeded, Some(true)) => format!("OK, {} accepts it", verifier(&kind)),
        (JobOutcome::Succeeded, None) => format!("OK (not checked with {})", verifier(&kind)),
        (JobOutcome::Failed(e), _) => format!("FAILED ({e})"),
        (JobOutcome::Cancelled, _) => "CANCELLED".to_string(),
    };
    println!(
        "{status}: {} {}{}, {} sectors, {} partitions ({} verified by the pipeline) in {:.2}s ({:.2}s/partition){}",
        summary.post_proof,
        summary.kind,
        input
            .partition_index
            .map_or(String::new(), |k| format!(" partition {k}")),
        summary.sectors,
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

/// The same input through filecoin-proofs-api's own prover (bellperson's batch prover).
fn stock_prove(input: &PostInput) -> Result<Vec<u8>, ProverError> {
    use filecoin_proofs_api::post;
    let vanilla = input.vanilla_proofs.to_vec();
    let (proof, randomness, prover_id) = (input.post_proof, &input.randomness, input.prover_id);
    match (input.kind(), input.partition_index) {
        (PostKind::Winning, _) => {
            post::generate_winning_post_with_vanilla(proof, randomness, prover_id, &vanilla)
                .map(|mut v| v.remove(0).1)
                .map_err(ProverError::filecoin(
                    "stock generate_winning_post_with_vanilla",
                ))
        }
        (PostKind::Window, None) => {
            post::generate_window_post_with_vanilla(proof, randomness, prover_id, &vanilla)
                .map(|mut v| v.remove(0).1)
                .map_err(ProverError::filecoin(
                    "stock generate_window_post_with_vanilla",
                ))
        }
        (PostKind::Window, Some(k)) => post::generate_single_window_post_with_vanilla(
            proof, randomness, prover_id, &vanilla, k as usize,
        )
        .map(|PartitionSnarkProof(bytes)| bytes)
        .map_err(ProverError::filecoin(
            "stock generate_single_window_post_with_vanilla",
        )),
    }
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The PoSt input the proof was made from (its sectors, randomness and prover id are used).
    #[arg(
        long = "post-vanilla",
        visible_aliases = ["window-post-vanilla", "winning-post-vanilla"],
        value_name = "FILE"
    )]
    input: PathBuf,
    /// The proof: the bytes filecoin-proofs returns (192 per partition).
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

/// `window-post-verify` / `winning-post-verify`: filecoin-proofs-api's verifier on a proof file.
/// Exit 0 valid, 1 not.
pub fn verify(args: VerifyArgs, kind: PostKind) -> Result<ExitCode, ProverError> {
    let input = read_input(&args.input, &kind)?;
    let sectors = post::sectors(&input)?;
    let proof =
        std::fs::read(&args.proof).map_err(ProverError::io("reading the proof", &args.proof))?;
    let partitions = match input.partition_index {
        Some(_) => 1,
        None => post::partitions_for(input.post_proof, sectors.len()),
    };
    let expected = post::PARTITION_PROOF_BYTES * partitions as usize;
    if proof.len() != expected {
        return Err(ProverError::InvalidArgument {
            what: "proof",
            reason: format!(
                "{} has {} bytes; a {} {} of {} sectors{} has {expected} (192 per partition)",
                args.proof.display(),
                proof.len(),
                post_proof_name(input.post_proof),
                kind_name(&kind),
                sectors.len(),
                input
                    .partition_index
                    .map_or(String::new(), |k| format!(" (partition {k})")),
            ),
        });
    }
    let valid = post::verify_sectors(&input, &sectors, &proof)?;
    println!(
        "{}: {} {}{}, {} sectors, {} bytes",
        if valid { "VALID" } else { "INVALID" },
        post_proof_name(input.post_proof),
        kind_name(&kind),
        input
            .partition_index
            .map_or(String::new(), |k| format!(" partition {k}")),
        sectors.len(),
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
    /// The registered PoSt proof: a name (StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1, …)
    /// or curio's number.
    #[arg(long, value_parser = parse_post_proof)]
    post_proof: RegisteredPoStProof,
    /// Parameter directory to generate missing files into (random setup: for tests only).
    #[arg(long)]
    params_dir: Option<PathBuf>,
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
    /// Seed of the random setup, of the randomness and of the new sectors.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the PoSt input (vanilla proofs, randomness, miner id; JSON) here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// WindowPoSt: write only curio's request for this partition of the sectors (its sectors'
    /// vanilla proofs and `partition_index`) instead of the whole WindowPoSt.
    #[arg(long)]
    partition_index: Option<u32>,
    /// Only generate the parameters.
    #[arg(long, conflicts_with = "out")]
    params_only: bool,
}

impl TestdataArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.params_dir.as_deref()
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
    let dir = parameter_dir(args.params_dir.as_deref());
    let started = Instant::now();
    let files = post_testdata::generate_post_params(args.post_proof, &dir, args.seed)?;
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
            what: "post-testdata",
            reason: "give --out FILE for the PoSt input, or --params-only".into(),
        });
    };
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
            args.seed,
        )?);
    }
    let input = post_testdata::post_input(
        args.post_proof,
        &sectors,
        args.miner_id,
        post_testdata::randomness_from_seed(args.seed),
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
