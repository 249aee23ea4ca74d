//! `prove` of a Filecoin input and `porep-verify` / `snap-verify` / `window-post-verify` /
//! `winning-post-verify`, once for every kind: the kind is the input flag given
//! (`--porep-c1`, `--snap-vanilla`, `--window-post-vanilla`, `--winning-post-vanilla`), and
//! everything else is the kind's `FilecoinInput` (proofpipe-filecoin's `kind`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use proofpipe_filecoin::c1::SectorIdentity;
use proofpipe_filecoin::kind::{self, FilecoinInput};
use proofpipe_filecoin::params::DigestCheck;
use proofpipe_filecoin::partition_proofs::{self, PARTITION_PROOF_BYTES};
use proofpipe_model::kinds::FilecoinProofKind;
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::groth16::SynthesisMode;
use proofpipe_pipeline::params::ProvingKey;
use proofpipe_pipeline::pipeline::{
    BufferSnapshot, JobEvent, JobOutcome, PartitionProof, PartitionSource, Pipeline, PipelineConfig,
};
use proofpipe_pipeline::rss;
use proofpipe_pipeline::sizing::{
    OnDevices, Plan, QueryPlacement, SizingInput, detect_memory_limit, plan,
};
use serde::Serialize;
use serde_json::{Map, Value};

use super::args::{SizingArgs, cpu_cores};

/// What `prove` needs for a Filecoin proof beyond the sizing: its input (one flag per kind)
/// and what to do with the proof.
#[derive(Args, Debug, Clone, Default)]
pub struct FilecoinArgs {
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

impl FilecoinArgs {
    /// The input to prove and its kind, if one was given.
    pub fn input(&self) -> Option<(FilecoinProofKind, &Path)> {
        [
            (FilecoinProofKind::PoRepC2, &self.porep_c1),
            (FilecoinProofKind::SnapDealsUpdate, &self.snap_vanilla),
            (
                FilecoinProofKind::WindowPoStPartition,
                &self.window_post_vanilla,
            ),
            (FilecoinProofKind::WinningPoSt, &self.winning_post_vanilla),
        ]
        .into_iter()
        .find_map(|(kind, path)| path.as_deref().map(|p| (kind, p)))
    }

    fn identity(&self) -> Result<SectorIdentity, ProverError> {
        SectorIdentity::parse(self.prover_id.as_deref(), self.miner_id, self.sector_number)
    }
}

/// The flag that reads an input of `kind`.
fn input_flag(kind: FilecoinProofKind) -> &'static str {
    match kind {
        FilecoinProofKind::PoRepC2 => "--porep-c1",
        FilecoinProofKind::SnapDealsUpdate => "--snap-vanilla",
        FilecoinProofKind::WindowPoStPartition => "--window-post-vanilla",
        FilecoinProofKind::WinningPoSt => "--winning-post-vanilla",
    }
}

/// Reads the input at `path` as `kind` (the flag it was given with) and refuses one of another
/// kind (a WinningPoSt input given as a WindowPoSt, say), naming its flag.
fn read_input(
    kind: FilecoinProofKind,
    path: &Path,
    identity: SectorIdentity,
) -> Result<Box<dyn FilecoinInput>, ProverError> {
    let input = kind::read_input(kind, path, identity)?;
    if input.kind() != kind {
        return Err(ProverError::InvalidArgument {
            what: kind.input_name(),
            reason: format!(
                "{}: its registered proof {} is a {} proof; give it with {}",
                path.display(),
                input.proof_name(),
                post_kind_name(input.kind()),
                input_flag(input.kind())
            ),
        });
    }
    Ok(input)
}

/// `WindowPoSt` or `WinningPoSt`, as PoSt inputs call their kind.
fn post_kind_name(kind: FilecoinProofKind) -> &'static str {
    match kind {
        FilecoinProofKind::WinningPoSt => "WinningPoSt",
        _ => "WindowPoSt",
    }
}

/// Filecoin's parameter directory: the flag, else filecoin-proofs' own convention.
pub(super) fn parameter_dir(flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os(proofpipe_filecoin::PARAMETER_CACHE_ENV).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(proofpipe_filecoin::DEFAULT_PARAMETER_CACHE))
}

#[derive(Serialize)]
struct Summary {
    outcome: JobOutcome,
    /// The kind's own: its registered proof, sector(s) or partition, and Filecoin's verdict
    /// under its verifier's name (verify_seal, verify_empty_sector_update_proof; a PoSt's
    /// `verified` beside `verifier`), when --verify.
    #[serde(flatten)]
    input: Map<String, Value>,
    partitions: u32,
    proof_path: Option<PathBuf>,
    proof_bytes: usize,
    /// Every partition's proof checked against its own public inputs by the pipeline.
    partitions_verified: usize,
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
    /// `--compare-stock`: Filecoin's own prover's wall seconds for the same input
    /// (seal_commit_phase2, generate_empty_sector_update_proof_with_vanilla or a
    /// generate_*_post_with_vanilla), and ours (pipeline plus assembly) as a speedup over it.
    stock_seconds: Option<f64>,
    speedup_vs_stock: Option<f64>,
}

/// `--verify-params-digest` as the parameter loader takes it.
fn digest_check(args: &FilecoinArgs) -> DigestCheck {
    if args.verify_params_digest {
        DigestCheck::Verify
    } else {
        DigestCheck::Skip
    }
}

/// What a Filecoin job's partitions did in a pipeline of their own.
struct PartitionsRun {
    pub plan: Plan,
    pub proofs: Vec<PartitionProof>,
    pub outcome: JobOutcome,
    /// From submission to the last event.
    pub seconds: f64,
    pub buffers: BufferSnapshot,
    pub backend: &'static str,
}

/// Sizes a pipeline for `key`'s circuit from the memory limit, proves `partitions` partitions
/// of `source` in it (each logged as it is proved) and shuts it down.
fn prove_partitions(
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
    let plan = plan(
        &SizingInput::new(name, key.shape, memory_limit)
            .with_params(key.heap_bytes(), Some(key.query_bytes()))
            .with_matrices(matrices_bytes)
            .with_headroom(sizing.headroom)
            .with_cores(cpu_cores())
            .with_synthesis(
                source.synthesis_profile(),
                backend.evaluation_alloc().is_pooled(),
            )
            .on_devices(&gpus)
            .with_partitions(partitions as usize)
            .with_overrides(sizing.overrides()),
    )?;
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

/// `prove` with a Filecoin input of `kind` at `input_path`: its partitions through a pipeline
/// sized from the memory limit, the proof assembled, checked with Filecoin's verifier when
/// `--verify` and written to `--out` (never a proof the verifier rejected).
pub fn prove(
    args: &FilecoinArgs,
    kind: FilecoinProofKind,
    input_path: &Path,
    sizing: &SizingArgs,
    synthesis: SynthesisMode,
    params_dir: Option<&Path>,
    json: bool,
) -> Result<ExitCode, ProverError> {
    let input = read_input(kind, input_path, args.identity()?)?;
    let job = input.prepare(synthesis)?;
    let matrices_bytes = job.matrices_bytes();
    let name = input.proof_name();
    tracing::info!(proof = %name, partitions = job.partitions, "{} read", kind.input_name());

    let dir = parameter_dir(params_dir);
    let limit = detect_memory_limit(sizing.memory_limit)?;
    let params_started = Instant::now();
    let key = Arc::new(input.param_set().load(&dir, digest_check(args))?);
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

    let verifier = kind.verifier();
    let partitions_verified = proofs.iter().filter(|p| p.verified).count();
    let mut proof_bytes = Vec::new();
    let mut verdict = None;
    if outcome == JobOutcome::Succeeded {
        proof_bytes = partition_proofs::assemble(&proofs, job.partitions)?;
        if args.verify {
            verdict = Some(input.verify(&proof_bytes)?);
        }
        // Never write out a proof Filecoin's verifier has rejected.
        if let Some(out) = args.out.as_ref().filter(|_| verdict != Some(false)) {
            write_atomically(out, &proof_bytes)?;
        }
    }
    // Ours, before the stock prover (its own parameter mapping and buffers) adds to the peak.
    let peak_rss_bytes = rss::peak_rss_bytes();
    let (stock_seconds, speedup_vs_stock) = if args.compare_stock {
        let started = Instant::now();
        input.stock_prove()?;
        let stock = started.elapsed().as_secs_f64();
        tracing::info!(
            stock_seconds = stock,
            ours = seconds,
            "Filecoin's own prover"
        );
        (Some(stock), Some(stock / seconds))
    } else {
        (None, None)
    };
    let written = args
        .out
        .clone()
        .filter(|_| !proof_bytes.is_empty() && verdict != Some(false));
    let summary = Summary {
        outcome: outcome.clone(),
        input: input.summary_fields(verdict),
        partitions: job.partitions,
        proof_path: written.clone(),
        proof_bytes: proof_bytes.len(),
        partitions_verified,
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
    let status = match (&outcome, verdict) {
        (JobOutcome::Succeeded, Some(false)) => format!("REJECTED by {verifier}"),
        (JobOutcome::Succeeded, Some(true)) => format!("OK, {verifier} accepts it"),
        (JobOutcome::Succeeded, None) => format!("OK (not checked with {verifier})"),
        (JobOutcome::Failed(e), _) => format!("FAILED ({e})"),
        (JobOutcome::Cancelled, _) => "CANCELLED".to_string(),
    };
    println!(
        "{status}: {}, {} partitions ({} verified by the pipeline) in {:.2}s ({:.2}s/partition){}",
        input.describe(),
        job.partitions,
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
        && verdict != Some(false);
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

/// What `porep-verify`, `snap-verify`, `window-post-verify` and `winning-post-verify` read.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// porep-verify: the C1 output the proof was made from (either form).
    #[arg(long, value_name = "FILE", group = "verify_input")]
    porep_c1: Option<PathBuf>,
    /// snap-verify: the SnapDeals input the proof was made from (its update proof and
    /// commitments are used).
    #[arg(long, value_name = "FILE", group = "verify_input")]
    snap_vanilla: Option<PathBuf>,
    /// window-post-verify / winning-post-verify: the PoSt input the proof was made from (its
    /// sectors, randomness and prover id are used).
    #[arg(
        long = "post-vanilla",
        visible_aliases = ["window-post-vanilla", "winning-post-vanilla"],
        value_name = "FILE",
        group = "verify_input"
    )]
    post_vanilla: Option<PathBuf>,
    /// The proof: the bytes Filecoin's prover returns (192 per partition).
    #[arg(long, value_name = "PROOF")]
    proof: PathBuf,
    /// Filecoin's parameter directory (the verifying key is read from it).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// porep-verify: the miner's actor id (default 1000), or the prover id whole.
    #[arg(long, requires = "porep_c1", conflicts_with = "prover_id")]
    miner_id: Option<u64>,
    #[arg(long, requires = "porep_c1")]
    prover_id: Option<String>,
    /// porep-verify: the sector number (required with a raw C1 output).
    #[arg(long, requires = "porep_c1")]
    sector_number: Option<u64>,
}

impl VerifyArgs {
    pub fn params_dir(&self) -> Option<&Path> {
        self.params_dir.as_deref()
    }

    /// The input file for a proof of `kind`, from the flag of its kind.
    fn input(&self, kind: FilecoinProofKind) -> Result<&Path, ProverError> {
        let (flag, path) = match kind {
            FilecoinProofKind::PoRepC2 => ("--porep-c1", &self.porep_c1),
            FilecoinProofKind::SnapDealsUpdate => ("--snap-vanilla", &self.snap_vanilla),
            FilecoinProofKind::WindowPoStPartition | FilecoinProofKind::WinningPoSt => {
                ("--post-vanilla", &self.post_vanilla)
            }
        };
        path.as_deref().ok_or_else(|| ProverError::InvalidArgument {
            what: "input",
            reason: format!("give the {} with {flag}", kind.input_name()),
        })
    }
}

/// Filecoin's verifier for `kind` on a proof file: exit 0 valid, 1 not.
pub fn verify(args: VerifyArgs, kind: FilecoinProofKind) -> Result<ExitCode, ProverError> {
    let identity =
        SectorIdentity::parse(args.prover_id.as_deref(), args.miner_id, args.sector_number)?;
    let path = args.input(kind)?;
    let input = read_input(kind, path, identity)?;
    let proof =
        std::fs::read(&args.proof).map_err(ProverError::io("reading the proof", &args.proof))?;
    let expected = PARTITION_PROOF_BYTES * input.partitions()? as usize;
    if proof.len() != expected {
        return Err(ProverError::InvalidArgument {
            what: "proof",
            reason: format!(
                "{} has {} bytes; a {} has {expected} (192 per partition)",
                args.proof.display(),
                proof.len(),
                input.proof_of(),
            ),
        });
    }
    let valid = input.verify(&proof)?;
    println!(
        "{}: {}, {} bytes",
        if valid { "VALID" } else { "INVALID" },
        input.describe(),
        proof.len()
    );
    Ok(if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
