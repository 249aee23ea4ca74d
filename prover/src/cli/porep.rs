//! `prove --porep-c1`: a Filecoin PoRep C2 from a C1 output, through the pipeline; and
//! `porep-testdata`: parameters from a random setup and a sealed test sector's C1 output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use proofpipe_prover::ProverError;
use proofpipe_prover::filecoin::c1::{self, SectorIdentity};
use proofpipe_prover::filecoin::params::{self, DigestCheck};
use proofpipe_prover::filecoin::{self, RegisteredSealProof, porep, seal_proof_name, testdata};
use proofpipe_prover::groth16::SynthesisMode;
use proofpipe_prover::params::ProvingKey;
use proofpipe_prover::pipeline::{
    BufferSnapshot, JobEvent, JobOutcome, PartitionProof, PartitionSource, Pipeline, PipelineConfig,
};
use proofpipe_prover::rss;
use proofpipe_prover::sizing::{Plan, QueryPlacement, SizingInput, detect_memory_limit, plan};
use serde::Serialize;

use super::{SizingArgs, cpu_cores};

/// What `prove` needs for a Filecoin PoRep beyond the sizing.
#[derive(Args, Debug, Clone, Default)]
pub struct PorepArgs {
    /// Prove this C1 output (lotus-bench's commit-2 file, or the raw SealCommitPhase1Output
    /// JSON) instead of a synthetic circuit. --params-dir is then Filecoin's parameter directory
    /// (default: $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters).
    #[arg(long, value_name = "FILE", group = "filecoin_input")]
    pub porep_c1: Option<PathBuf>,
    /// Prove a SnapDeals (EmptySectorUpdate) proof from this file of vanilla partition proofs
    /// and commitments (JSON; docs/filecoin.md) instead. --params-dir as with --porep-c1.
    #[arg(long, value_name = "FILE", group = "filecoin_input")]
    pub snap_vanilla: Option<PathBuf>,
    /// Prove a WindowPoSt from this file of vanilla sector proofs, randomness and miner id
    /// (JSON, curio's request; docs/filecoin.md): one partition when it names one
    /// (`partition_index`), else every partition of its sectors. --params-dir as with --porep-c1.
    #[arg(long, value_name = "FILE", group = "filecoin_input")]
    pub window_post_vanilla: Option<PathBuf>,
    /// Prove a WinningPoSt from this file of vanilla sector proofs (JSON, as
    /// --window-post-vanilla).
    #[arg(long, value_name = "FILE", group = "filecoin_input")]
    pub winning_post_vanilla: Option<PathBuf>,
    /// Write the proof here: seal_commit_phase2's bytes (192 per partition), or
    /// generate_empty_sector_update_proof_with_vanilla's with --snap-vanilla, or the PoSt
    /// proof's (as generate_window_post_with_vanilla, generate_single_window_post_with_vanilla or
    /// generate_winning_post_with_vanilla return it).
    #[arg(long, value_name = "PROOF", requires = "filecoin_input")]
    pub out: Option<PathBuf>,
    /// Check the proof with filecoin-proofs-api's verifier (verify_seal,
    /// verify_empty_sector_update_proof, verify_window_post or verify_winning_post) before
    /// reporting success.
    #[arg(long, requires = "filecoin_input")]
    pub verify: bool,
    /// The miner's actor id; the prover id is made from it as filecoin-ffi does (default 1000,
    /// lotus-bench's t01000).
    #[arg(long, requires = "porep_c1", conflicts_with = "prover_id")]
    pub miner_id: Option<u64>,
    /// The prover id whole, 64 hex digits.
    #[arg(long, requires = "porep_c1")]
    pub prover_id: Option<String>,
    /// The sector number (required with a raw C1 output; a lotus-bench file has its own).
    #[arg(long, requires = "porep_c1")]
    pub sector_number: Option<u64>,
    /// Hash the .params file while reading it and refuse it unless it has the digest
    /// filecoin-proofs' parameters.json records (production parameters only).
    #[arg(long, requires = "filecoin_input")]
    pub verify_params_digest: bool,
    /// After our pipeline, prove the same C1 output with stock filecoin-proofs-api
    /// `seal_commit_phase2` (bellperson's prover: on the GPU in a `stock-gpu` build) and report
    /// both times and their ratio, from the same process and parameters (with --snap-vanilla:
    /// stock generate_empty_sector_update_proof_with_vanilla; with a PoSt input, its stock
    /// generate_*_post_with_vanilla).
    #[arg(long, requires = "filecoin_input")]
    pub compare_stock: bool,
}

/// Filecoin's parameter directory: the flag, else filecoin-proofs' own convention.
pub(super) fn parameter_dir(flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os(filecoin::PARAMETER_CACHE_ENV).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(filecoin::DEFAULT_PARAMETER_CACHE))
}

#[derive(Serialize)]
struct Summary {
    outcome: JobOutcome,
    seal_proof: String,
    sector_number: u64,
    partitions: u32,
    proof_path: Option<PathBuf>,
    proof_bytes: usize,
    /// Every partition's proof checked against its own public inputs by the pipeline.
    partitions_verified: usize,
    /// filecoin-proofs-api's verify_seal on the whole proof, when --verify.
    verify_seal: Option<bool>,
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
    /// `one-pass` or `matrices`, and the R1CS matrices' bytes (0 in one pass).
    synthesis: SynthesisMode,
    matrices_bytes: u64,
    /// `--compare-stock`: seal_commit_phase2's wall seconds for the same C1 output, and ours
    /// (pipeline plus assembly) as a speedup over it.
    stock_seconds: Option<f64>,
    speedup_vs_stock: Option<f64>,
}

/// `--verify-params-digest` as the parameter loader takes it.
pub(super) fn digest_check(args: &PorepArgs) -> DigestCheck {
    if args.verify_params_digest {
        DigestCheck::Verify
    } else {
        DigestCheck::Skip
    }
}

/// What a Filecoin job's partitions did in a pipeline of their own.
pub(super) struct PartitionsRun {
    pub plan: Plan,
    pub proofs: Vec<PartitionProof>,
    pub outcome: JobOutcome,
    /// From submission to the last event.
    pub seconds: f64,
    pub buffers: BufferSnapshot,
    pub backend: &'static str,
}

/// Sizes a pipeline for `key`'s circuit from the memory limit, proves `partitions` partitions
/// of `source` in it (each logged as it is proved) and shuts it down: what `prove
/// --porep-c1`, `--snap-vanilla` and the PoSt inputs share.
pub(super) fn prove_partitions(
    name: &str,
    key: &Arc<ProvingKey>,
    source: Arc<dyn PartitionSource>,
    partitions: u32,
    matrices_bytes: u64,
    sizing: &SizingArgs,
    memory_limit: u64,
) -> Result<PartitionsRun, ProverError> {
    let (backend, why) = proofpipe_kernels::select_backend();
    tracing::info!(backend = backend.name(), "GPU stage backend: {why}");
    let gpus = backend.gpu_devices();
    let plan = plan(&SizingInput {
        circuit: name.to_string(),
        shape: key.shape,
        memory_limit,
        params_bytes: key.heap_bytes(),
        query_bytes: Some(key.query_bytes()),
        matrices_bytes,
        headroom: sizing.headroom,
        cpu_cores: cpu_cores(),
        synthesis_threads: source.synthesis_threads(),
        evaluations_held_twice: source.synthesizes_in_subsystems()
            && backend.evaluation_alloc().is_pooled(),
        gpu_devices: gpus.len(),
        gpu_memory_bytes: gpus.iter().map(|g| g.total_bytes).min(),
        max_parallel_partitions: Some(partitions as usize),
        overrides: sizing.overrides(),
    })?;
    let pipeline = Pipeline::start(PipelineConfig::from_plan(&plan), backend)?;
    let started = Instant::now();
    let handle = pipeline.submit_source(source, Arc::clone(key), partitions, 0, &[])?;
    let mut proofs = Vec::new();
    let mut outcome = JobOutcome::Failed("the pipeline stopped".into());
    for event in handle.events.iter() {
        match event {
            JobEvent::PartitionProved(p) => {
                tracing::info!(
                    partition = p.partition,
                    verified = p.verified,
                    "partition proved"
                );
                proofs.push(p);
            }
            JobEvent::Finished(o) => {
                outcome = o;
                break;
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let buffers = pipeline.buffers();
    let backend = pipeline.backend_name();
    pipeline.shutdown();
    Ok(PartitionsRun {
        plan,
        proofs,
        outcome,
        seconds,
        buffers,
        backend,
    })
}

pub fn prove(
    args: &PorepArgs,
    c1_path: &Path,
    sizing: &SizingArgs,
    synthesis: SynthesisMode,
    params_dir: Option<&Path>,
    json: bool,
) -> Result<ExitCode, ProverError> {
    let identity =
        SectorIdentity::parse(args.prover_id.as_deref(), args.miner_id, args.sector_number)?;
    let input = c1::read(c1_path, identity)?;
    let job = porep::prepare(&input, synthesis)?;
    let matrices_bytes = job.matrices_bytes();
    let seal_proof = seal_proof_name(job.seal_proof);
    tracing::info!(proof = %seal_proof, partitions = job.partitions, "C1 output read");

    let dir = parameter_dir(params_dir);
    let check = digest_check(args);
    let limit = detect_memory_limit(sizing.memory_limit)?;
    let params_started = Instant::now();
    let key = Arc::new(params::load(job.seal_proof, &dir, check)?);
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
        &seal_proof,
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
        proof_bytes = porep::assemble(&proofs, job.partitions)?;
        if let Some(out) = &args.out {
            write_atomically(out, &proof_bytes)?;
        }
        if args.verify {
            let ok = porep::verify(&input, &proof_bytes)?;
            verified_by_filecoin = Some(ok);
        }
    }
    // Ours, before the stock prover (its own parameter mapping and buffers) adds to the peak.
    let peak_rss_bytes = rss::peak_rss_bytes();
    let (stock_seconds, speedup_vs_stock) = if args.compare_stock {
        let started = Instant::now();
        filecoin_proofs_api::seal::seal_commit_phase2(
            input.output.clone(),
            input.prover_id,
            input.sector_id,
        )
        .map_err(ProverError::filecoin("stock seal_commit_phase2"))?;
        let stock = started.elapsed().as_secs_f64();
        tracing::info!(
            stock_seconds = stock,
            ours = seconds,
            "stock seal_commit_phase2 (its own verify_seal included)"
        );
        (Some(stock), Some(stock / seconds))
    } else {
        (None, None)
    };
    let summary = Summary {
        outcome: outcome.clone(),
        seal_proof,
        sector_number: u64::from(input.sector_id),
        partitions: job.partitions,
        proof_path: args.out.clone().filter(|_| !proof_bytes.is_empty()),
        proof_bytes: proof_bytes.len(),
        partitions_verified,
        verify_seal: verified_by_filecoin,
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
        (JobOutcome::Succeeded, Some(false)) => "REJECTED by verify_seal".to_string(),
        (JobOutcome::Succeeded, Some(true)) => "OK, verify_seal accepts it".to_string(),
        (JobOutcome::Succeeded, None) => "OK (not checked with verify_seal)".to_string(),
        (JobOutcome::Failed(e), _) => format!("FAILED ({e})"),
        (JobOutcome::Cancelled, _) => "CANCELLED".to_string(),
    };
    println!(
        "{status}: {} sector {}, {} partitions ({} verified by the pipeline) in {:.2}s ({:.2}s/partition){}",
        summary.seal_proof,
        summary.sector_number,
        summary.partitions,
        partitions_verified,
        seconds,
        summary.seconds_per_partition,
        args.out
            .as_ref()
            .filter(|_| !proof_bytes.is_empty())
            .map_or(String::new(), |p| format!(
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

/// Writes `bytes` to `path` through a temporary file in the same directory, so a reader never
/// sees half a proof.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ProverError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(ProverError::io("writing the proof to", path))?;
    std::io::Write::write_all(&mut tmp, bytes)
        .map_err(ProverError::io("writing the proof to", path))?;
    tmp.persist(path)
        .map_err(|e| ProverError::io("writing the proof to", path)(e.error))?;
    Ok(())
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The C1 output the proof was made from (either form).
    #[arg(long, value_name = "FILE")]
    porep_c1: PathBuf,
    /// The proof: seal_commit_phase2's bytes.
    #[arg(long, value_name = "PROOF")]
    proof: PathBuf,
    /// Filecoin's parameter directory (the verifying key is read from it).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    #[arg(long, conflicts_with = "prover_id")]
    miner_id: Option<u64>,
    #[arg(long)]
    prover_id: Option<String>,
    #[arg(long)]
    sector_number: Option<u64>,
}

impl VerifyArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.params_dir.as_deref()
    }
}

/// `porep-verify`: filecoin-proofs-api's verify_seal on a proof file. Exit 0 valid, 1 not.
pub fn verify(args: VerifyArgs) -> Result<ExitCode, ProverError> {
    let identity =
        SectorIdentity::parse(args.prover_id.as_deref(), args.miner_id, args.sector_number)?;
    let input = c1::read(&args.porep_c1, identity)?;
    let proof =
        std::fs::read(&args.proof).map_err(ProverError::io("reading the proof", &args.proof))?;
    let valid = porep::verify(&input, &proof)?;
    println!(
        "{}: {} sector {}, {} bytes",
        if valid { "VALID" } else { "INVALID" },
        seal_proof_name(input.seal_proof()),
        u64::from(input.sector_id),
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
    /// The seal proof: a sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB: their V1_1 proof) or a
    /// registered proof's name.
    #[arg(long, default_value = "2KiB", value_parser = parse_seal_proof)]
    seal_proof: RegisteredSealProof,
    /// Parameter directory to generate missing files into (random setup: for tests only).
    #[arg(long)]
    params_dir: Option<PathBuf>,
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
    /// Seed of the random setup and of the sector's data, ticket and challenge seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Only generate the parameters; seal nothing.
    #[arg(long, conflicts_with = "out")]
    params_only: bool,
}

impl TestdataArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.params_dir.as_deref()
    }
}

pub(super) fn parse_seal_proof(s: &str) -> Result<RegisteredSealProof, String> {
    filecoin::parse_seal_proof(s).map_err(|e| e.to_string())
}

pub fn testdata(args: TestdataArgs) -> Result<ExitCode, ProverError> {
    let dir = parameter_dir(args.params_dir.as_deref());
    let files = testdata::generate_params(args.seal_proof, &dir, args.seed)?;
    println!("parameters: {}", files.params.display());
    if args.params_only {
        return Ok(ExitCode::SUCCESS);
    }
    let work = match &args.work_dir {
        Some(w) => w.clone(),
        None => tempfile::Builder::new()
            .prefix("proofpipe-seal-")
            .tempdir()
            .map_err(ProverError::io(
                "creating a temporary directory in",
                std::env::temp_dir(),
            ))?
            .keep(),
    };
    let started = Instant::now();
    let output = testdata::seal_sector(
        args.seal_proof,
        &work,
        c1::prover_id_of_miner(args.miner_id),
        args.sector_number,
        args.seed,
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
