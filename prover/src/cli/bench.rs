//! `bench`: the pipeline against bellperson's stock batch prover, same circuit, parameters
//! and machine, in one run; or, with `--porep-shape` / `--post-shape` / `--snap-shape`, the
//! pipeline alone over placeholder Filecoin PoRep, PoSt or SnapDeals partitions of a proof's
//! exact shape, with timing-only parameters.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use proofpipe_benches::compare::{
    BenchReport, Feed, FeedKind, SourceWorkload, bench_source, compare, spread,
};
use proofpipe_filecoin::shape::{self, PartitionShape, Placeholder};
use proofpipe_kernels::GpuOptions;
use proofpipe_pipeline::ProverError;

use proofpipe_benches::plot::timeline_svg;
use proofpipe_filecoin::post::{self, post_proof_name, shape::PostShape};
use proofpipe_filecoin::snap::{self, shape::SnapShape, update_proof_name};
use proofpipe_filecoin::{
    RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, seal_proof_name,
};
use proofpipe_pipeline::circuits::R1csCounts;
use proofpipe_pipeline::groth16::{R1csMatrices, SynthesisMode};
use proofpipe_pipeline::params::ProvingKey;
use proofpipe_pipeline::pipeline::{PartitionSource, PipelineConfig, ReplaySource};
use proofpipe_pipeline::rss;
use proofpipe_pipeline::sizing::{OnDevices, Plan, SizingInput, detect_memory_limit, plan};
use serde_json::{Value, json};

use super::setup::{self, ParamsSource};
use clap::Args;

use super::args::{JobArgs, SizingArgs, SynthesisArgs, cpu_cores, parse_size, store};
use super::bench_summary::{print_summary, summary_label};

#[derive(Args, Debug)]
pub(super) struct BenchArgs {
    #[command(flatten)]
    pub(super) job: JobArgs,
    #[command(flatten)]
    pub(super) sizing: SizingArgs,
    #[command(flatten)]
    pub(super) synthesis: SynthesisArgs,
    #[arg(long)]
    pub(super) params_dir: Option<PathBuf>,
    /// Draw the pipeline's stage occupancy and buffer counts into this SVG file.
    #[arg(long)]
    pub(super) plot: Option<PathBuf>,
    /// Partitions for bellperson's stock prover (default: --partitions); fewer keep a
    /// CPU-only stock run short at large sizes, 0 skips it. Throughput is compared per proof.
    #[arg(long)]
    pub(super) stock_partitions: Option<u32>,
    /// Benchmark with timing-only parameters: the right point counts for the circuit, made in
    /// seconds instead of a trusted setup (~20 min at 2^24 on 16 cores). Timings are real;
    /// no proof verifies and the report says so. Never written to the parameter cache.
    #[arg(long)]
    pub(super) timing_only_params: bool,
    /// Skip the one-partition warm-up run before the timed runs (saves a partition's
    /// synthesis at large sizes; the timed run then pays the first base uploads).
    #[arg(long)]
    pub(super) no_warmup: bool,
    /// GPU backend variants to run one after another, each with a fresh backend, comma
    /// separated: `all`, `none`, or options joined by `+` (`split`, `h`, `pinned`), e.g.
    /// `none,split,split+h,all`: what each optimisation does, in one run. A variant named
    /// again runs again (`none,all,all,all`: `all` three times, one warm-up). Default: the
    /// environment's (all on unless PROOFPIPE_CUDA_*=0).
    #[arg(long)]
    pub(super) gpu_variants: Option<String>,
    /// Timed pipeline runs per variant (the warm-up and the stock prover run once): with 3,
    /// the summary gives the median and the spread.
    #[arg(long, default_value_t = 1)]
    pub(super) runs: usize,
    /// Feed the pipeline copies of one synthesized partition instead of synthesizing each:
    /// measures the GPU stage (and finalize) at the rate they can go where the host's cores
    /// cannot synthesize fast enough. The kept partition costs one partition budget permit.
    #[arg(long)]
    pub(super) replay_synthesis: bool,
    /// Before the pipeline runs of a shape benchmark, synthesize its first partition alone
    /// this many times (nothing else running, every core the source uses) and report each
    /// one's wall and CPU seconds: one partition's synthesis cost, apart from the pipeline.
    #[arg(long, default_value_t = 0, value_name = "RUNS")]
    pub(super) synthesis_alone: usize,
    /// Benchmark the Filecoin PoRep partition of this seal proof (a sector size, 32GiB, or a
    /// registered proof's name) instead of a synthetic circuit: placeholder vanilla proofs of
    /// its exact shape (no sector needed) and timing-only parameters of its exact query counts
    /// (no parameter files), made from the committed counts. No proof verifies; no stock run.
    #[arg(long, value_name = "SEAL_PROOF", value_parser = super::porep::parse_seal_proof,
          conflicts_with_all = ["circuit", "constraints", "params_dir"])]
    pub(super) porep_shape: Option<proofpipe_filecoin::RegisteredSealProof>,
    /// Benchmark the Filecoin PoSt partition of this registered PoSt proof (its name, e.g.
    /// StackedDrgWinning32GiBV1 or StackedDrgWindow32GiBV1_2, or curio's number) instead of a
    /// synthetic circuit: placeholder vanilla proofs of its exact shape and timing-only
    /// parameters of its committed counts. One partition unless --partitions. No proof
    /// verifies; no stock run.
    #[arg(long, value_name = "POST_PROOF", value_parser = super::post::parse_post_proof,
          conflicts_with_all = ["circuit", "constraints", "params_dir", "porep_shape"])]
    pub(super) post_shape: Option<proofpipe_filecoin::RegisteredPoStProof>,
    /// Benchmark the Filecoin SnapDeals (EmptySectorUpdate) proof of this registered update
    /// proof (a sector size, 32GiB, or its name, StackedDrg32GiBV1) instead of a synthetic
    /// circuit: placeholder vanilla proofs of its exact shape and timing-only parameters of its
    /// committed counts. All its partitions (16 at 32 GiB) unless --partitions. No proof
    /// verifies; no stock run.
    #[arg(long, value_name = "UPDATE_PROOF", value_parser = super::snap::parse_update_proof,
          conflicts_with_all = ["circuit", "constraints", "params_dir", "porep_shape", "post_shape"])]
    pub(super) snap_shape: Option<proofpipe_filecoin::RegisteredUpdateProof>,
    /// With --porep-shape, --post-shape or --snap-shape: run the timed runs once per GPU memory
    /// cap, each with a fresh backend held to that cap (as PROOFPIPE_GPU_MEMORY holds a prover)
    /// and a plan for it, comma separated: sizes such as 24GiB, or `none` for the whole card. A
    /// plan for a cap too small for every base streams some from host memory.
    #[arg(long, value_name = "CAPS")]
    pub(super) gpu_memory_caps: Option<String>,
    /// With --porep-shape: urgent work beside the PoRep, as one prover serves it (ADR 0026).
    /// Each run proves the PoRep alone, this PoSt partition alone, then the PoRep again with
    /// the PoSt sent --urgent-after seconds into it, proved in a pipeline of its own planned
    /// into what the PoRep's plan leaves (or, when it does not fit there, after the PoRep).
    /// Reports the PoSt's latency and the PoRep's delay against the runs alone.
    #[arg(long, value_name = "POST_PROOF", value_parser = super::post::parse_post_proof,
          requires = "porep_shape")]
    pub(super) urgent_post_shape: Option<proofpipe_filecoin::RegisteredPoStProof>,
    /// Seconds into the PoRep at which the urgent PoSt is sent.
    #[arg(long, default_value_t = 20.0, requires = "urgent_post_shape")]
    pub(super) urgent_after: f64,
    /// Memory kept out of the PoRep's plan for urgent work, as PROOFPIPE_URGENT_RESERVE does
    /// in a pool (default: that variable, else none).
    #[arg(long, value_parser = parse_size, requires = "urgent_post_shape")]
    pub(super) urgent_reserve: Option<u64>,
    /// GPU memory (each GPU) kept out of the PoRep's plan for urgent work, as
    /// PROOFPIPE_URGENT_GPU_RESERVE does in a pool (default: that variable, else none).
    #[arg(long, value_parser = parse_size, requires = "urgent_post_shape")]
    pub(super) urgent_gpu_reserve: Option<u64>,
    /// Runs (of --runs) that also prove the PoRep and the PoSt alone: the baselines. Fewer
    /// keep a long PoSt's call short; the delay is then taken against the median baseline.
    #[arg(long, requires = "urgent_post_shape")]
    pub(super) urgent_baselines: Option<usize>,
    #[arg(long)]
    pub(super) json: bool,
}

pub fn run(args: BenchArgs) -> Result<ExitCode, ProverError> {
    if args.runs == 0 {
        return Err(ProverError::InvalidArgument {
            what: "--runs",
            reason: "at least one run".into(),
        });
    }
    if let Some(proof) = args.porep_shape {
        return porep_shape(&args, proof);
    }
    if let Some(proof) = args.post_shape {
        return post_shape(&args, proof);
    }
    if let Some(proof) = args.snap_shape {
        return snap_shape(&args, proof);
    }
    let store = store(args.params_dir.clone());
    let variants = match &args.gpu_variants {
        None => vec![(GpuOptions::from_env(), 1)],
        Some(list) => gpu_variants(list).map_err(|reason| ProverError::InvalidArgument {
            what: "--gpu-variants",
            reason,
        })?,
    };
    let (first_backend, why) = proofpipe_kernels::select_backend_with(variants[0].0);
    tracing::info!(backend = first_backend.name(), "GPU stage backend: {why}");
    let on_gpu = !first_backend.gpu_devices().is_empty();
    let source = if args.timing_only_params {
        ParamsSource::TimingOnly
    } else {
        ParamsSource::Store(&store)
    };
    let prepared = setup::prepare(
        &args.job,
        &args.sizing,
        args.synthesis.synthesis,
        source,
        &first_backend.gpu_devices(),
    )?;
    let feed = if args.replay_synthesis {
        Feed::replay(&prepared.params, 1)
    } else {
        Feed::Synthesis
    };
    let config = with_replay_permit(prepared.pipeline_config(&args.job), &args);
    let mut backend = Some(first_backend);
    let mut stock = None;
    let mut all_verified = true;
    let mut summary = Vec::new();
    for (v, (options, repeats)) in variants.iter().enumerate() {
        // One backend at a time: the previous one's resident bases leave the GPU first.
        let backend = match backend.take() {
            Some(b) => b,
            None => {
                let (b, why) = proofpipe_kernels::select_backend_with(*options);
                tracing::info!(backend = b.name(), "GPU stage backend: {why}");
                b
            }
        };
        for run in 0..args.runs * repeats {
            let first = v == 0 && run == 0;
            let mut report = compare(
                prepared.params.clone(),
                args.job.partitions(),
                if first {
                    args.stock_partitions.unwrap_or(args.job.partitions())
                } else {
                    0
                },
                config.clone(),
                backend.clone(),
                !args.no_warmup && run == 0,
                &feed,
            )?;
            // The stock prover runs once; every run's ratio is against that run.
            let stock_run = stock.get_or_insert_with(|| report.stock.clone()).clone();
            if stock_run.proofs > 0 {
                report.throughput_ratio =
                    report.pipeline.result.proofs_per_second / stock_run.proofs_per_second;
            }
            report.stock = stock_run;
            report.gpu_options = on_gpu.then(|| options.name());
            let extra = json!({
                "params_bytes": prepared.params.heap_bytes(),
                "matrices_bytes": prepared.matrices.as_ref().map_or(0, |m| m.heap_bytes()),
            });
            all_verified &= print_report(&args, &report, &prepared.plan, extra, v, run)?;
            summary.push((summary_label(&report, None), report));
        }
    }
    if summary.len() > 1 {
        print_summary(&summary);
    }
    Ok(if all_verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// With `--replay-synthesis` the replayed partition is kept beside the pipeline's own: one
/// partition-budget permit fewer.
fn with_replay_permit(mut config: PipelineConfig, args: &BenchArgs) -> PipelineConfig {
    if args.replay_synthesis {
        config.partition_budget = config.partition_budget.map(|b| b.saturating_sub(1).max(1));
    }
    config
}

/// The variants of `--gpu-variants` in the order they first appear, each with how many times
/// it is named: `none,all,all,all` runs `none` once and `all` three times (one backend and one
/// warm-up per variant).
fn gpu_variants(list: &str) -> Result<Vec<(GpuOptions, usize)>, String> {
    let mut out: Vec<(GpuOptions, usize)> = Vec::new();
    for name in list.split(',') {
        let o = GpuOptions::parse(name)?;
        match out.iter_mut().find(|(v, _)| *v == o) {
            Some((_, n)) => *n += 1,
            None => out.push((o, 1)),
        }
    }
    Ok(out)
}

pub(super) fn refuse_no_runs(args: &BenchArgs) -> Result<(), ProverError> {
    if args.runs == 0 {
        return Err(ProverError::InvalidArgument {
            what: "--runs",
            reason: "at least one run".into(),
        });
    }
    Ok(())
}

/// Why a shape benchmark has no stock run.
const NO_STOCK_RUN: &str = "stock prover not run: filecoin-proofs needs the parameter files of \
     the proof's circuit, and a placeholder partition proves nothing to compare";

pub(super) fn refuse_stock_run(args: &BenchArgs, flag: &str) -> Result<(), ProverError> {
    if args.stock_partitions.is_some_and(|n| n > 0) {
        return Err(ProverError::InvalidArgument {
            what: "--stock-partitions",
            reason: format!("{NO_STOCK_RUN}; leave --stock-partitions out (or 0) with {flag}"),
        });
    }
    Ok(())
}

/// `bench --porep-shape`: placeholder partitions of the seal proof's exact circuit, timing-only
/// parameters of its exact query counts, both from the committed counts (no synthesis before
/// the timed run but the warm-up's and, with `--synthesis matrices`, the recording's).
fn porep_shape(args: &BenchArgs, proof: RegisteredSealProof) -> Result<ExitCode, ProverError> {
    refuse_stock_run(args, "--porep-shape")?;
    let run = prepare_porep_shape(args, proof, shape_backend())?;
    run_shape(args, run)
}

/// The sizing input of `--porep-shape` from the committed counts alone (the parameters' and
/// matrices' bytes predicted, before either is made), and its partitions.
pub(super) fn porep_shape_input(
    args: &BenchArgs,
    proof: RegisteredSealProof,
    backend: &Arc<dyn proofpipe_kernels::ProvingBackend>,
) -> Result<(SizingInput, u32), ProverError> {
    let counts = shape::counted(proof)?;
    let partitions = args
        .job
        .partitions
        .unwrap_or(PartitionShape::of(proof)?.partitions);
    let circuit = format!("{} partition", seal_proof_name(proof));
    let mut input = counted_sizing(args, circuit, &counts, partitions, backend)?;
    input.matrices_bytes = match SynthesisMode::from(args.synthesis.synthesis) {
        SynthesisMode::OnePass => 0,
        SynthesisMode::Matrices => R1csMatrices::predicted_heap_bytes(&counts),
    };
    Ok((input, partitions))
}

/// The placeholder partitions and timing-only key of `--porep-shape`, planned for `backend`.
pub(super) fn prepare_porep_shape(
    args: &BenchArgs,
    proof: RegisteredSealProof,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
) -> Result<ShapeRun, ProverError> {
    let name = seal_proof_name(proof);
    let partition_shape = PartitionShape::of(proof)?;
    let counts = shape::counted(proof)?;
    let synthesis = SynthesisMode::from(args.synthesis.synthesis);
    let query = counts.query_counts();
    let (mut input, partitions) = porep_shape_input(args, proof, &backend)?;
    // Refuse a hopeless limit before a minute of parameters.
    plan(&input)?;
    // The matrices are recorded on one thread (about one partition's synthesis) while the
    // parameters are made on the others.
    let (key, params_seconds, job, matrices_seconds) = std::thread::scope(|scope| {
        let recording = scope.spawn(|| {
            let started = Instant::now();
            let job = shape::placeholder_job(Placeholder::of(proof), synthesis);
            (job, started.elapsed().as_secs_f64())
        });
        let started = Instant::now();
        let key = Arc::new(ProvingKey::timing_only(&name, counts.shape(), query));
        let params_seconds = started.elapsed().as_secs_f64();
        let (job, matrices_seconds) = recording.join().expect("the recording thread panicked");
        (key, params_seconds, job, matrices_seconds)
    });
    let job = job?;
    input.params_bytes = key.heap_bytes();
    input.matrices_bytes = job.matrices_bytes();
    input.synthesis_threads = job.source.synthesis_threads();
    input.evaluations_held_twice =
        job.source.synthesizes_in_subsystems() && backend.evaluation_alloc().is_pooled();
    let extra = json!({
        "params_bytes": key.heap_bytes(),
        "matrices_bytes": input.matrices_bytes,
        "params_seconds": params_seconds,
        "matrices_seconds": matrices_seconds,
        "porep_shape": {
            "seal_proof": name,
            "partition": partition_shape,
            "counts": counts,
            "query_counts": query,
        },
        "stock_not_run": NO_STOCK_RUN,
    });
    Ok(ShapeRun {
        name,
        partitions,
        input,
        key,
        source: job.source,
        backend,
        extra,
    })
}

/// `bench --post-shape`: placeholder partitions of the PoSt proof's exact circuit (one
/// WindowPoSt partition, as curio sends it, or the WinningPoSt), timing-only parameters of its
/// committed counts.
fn post_shape(args: &BenchArgs, proof: RegisteredPoStProof) -> Result<ExitCode, ProverError> {
    refuse_stock_run(args, "--post-shape")?;
    // curio sends one WindowPoSt partition per request; a WinningPoSt is one partition.
    let partitions = args.job.partitions.unwrap_or(1);
    let synthesis = args.synthesis.synthesis.into();
    let run = prepare_post_shape(args, proof, partitions, synthesis, shape_backend())?;
    run_shape(args, run)
}

/// The sizing input of `--post-shape` from the committed counts alone (the parameters' bytes
/// predicted, before they are made).
pub(super) fn post_shape_input(
    args: &BenchArgs,
    proof: RegisteredPoStProof,
    partitions: u32,
    backend: &Arc<dyn proofpipe_kernels::ProvingBackend>,
) -> Result<SizingInput, ProverError> {
    let circuit = format!("{} partition", post_proof_name(proof));
    counted_sizing(
        args,
        circuit,
        &post::shape::counted(proof)?,
        partitions,
        backend,
    )
}

/// The placeholder partitions and timing-only key of `--post-shape`, synthesized as
/// `synthesis` says, planned for `backend`.
pub(super) fn prepare_post_shape(
    args: &BenchArgs,
    proof: RegisteredPoStProof,
    partitions: u32,
    synthesis: SynthesisMode,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
) -> Result<ShapeRun, ProverError> {
    let name = post_proof_name(proof);
    let counts = post::shape::counted(proof)?;
    let report = json!({
        "post_shape": {
            "post_proof": name,
            "partition": PostShape::of(proof)?,
            "counts": counts,
            "query_counts": counts.query_counts(),
        },
    });
    // With --synthesis matrices, recorded on every core (or read from their file) first.
    let started = Instant::now();
    let post::shape::PlaceholderPost { source, matrices } =
        post::shape::placeholder_source(proof, 0, synthesis)?;
    let mut report = report;
    report["synthesis"] = json!(synthesis);
    report["matrices_bytes"] = json!(matrices.as_ref().map_or(0, |m| m.heap_bytes()));
    report["matrices_seconds"] = json!(matrices.as_ref().map(|_| started.elapsed().as_secs_f64()));
    let circuit = format!("{name} partition");
    shape_run(
        args,
        (name, circuit),
        (&counts, matrices.as_ref().map_or(0, |m| m.heap_bytes())),
        source,
        partitions,
        backend,
        report,
    )
}

/// A PoSt or SnapDeals shape benchmark: the sizing input from `counts` and the resident
/// matrices' bytes, planned before the timing-only key is made; `report` joins every run's
/// JSON.
fn shape_run(
    args: &BenchArgs,
    (name, circuit): (String, String),
    (counts, matrices_bytes): (&R1csCounts, u64),
    source: Arc<dyn PartitionSource>,
    partitions: u32,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
    mut report: Value,
) -> Result<ShapeRun, ProverError> {
    let mut input = counted_sizing(args, circuit, counts, partitions, &backend)?;
    input.matrices_bytes = matrices_bytes;
    input.synthesis_threads = source.synthesis_threads();
    input.evaluations_held_twice =
        source.synthesizes_in_subsystems() && backend.evaluation_alloc().is_pooled();
    // Refuse a hopeless limit before the parameters are made.
    plan(&input)?;
    let started = Instant::now();
    let key = Arc::new(ProvingKey::timing_only(
        &name,
        counts.shape(),
        counts.query_counts(),
    ));
    let params_seconds = started.elapsed().as_secs_f64();
    input.params_bytes = key.heap_bytes();
    let fields = report.as_object_mut().expect("the report is a JSON object");
    fields.insert("params_bytes".into(), key.heap_bytes().into());
    fields.insert("params_seconds".into(), params_seconds.into());
    fields.insert("stock_not_run".into(), NO_STOCK_RUN.into());
    Ok(ShapeRun {
        name,
        partitions,
        input,
        key,
        source,
        backend,
        extra: report,
    })
}

/// `bench --snap-shape`: placeholder partitions of the update proof's exact circuit,
/// timing-only parameters of its committed counts.
fn snap_shape(args: &BenchArgs, proof: RegisteredUpdateProof) -> Result<ExitCode, ProverError> {
    refuse_stock_run(args, "--snap-shape")?;
    // curio sends every partition of an update in one request.
    let partitions = args.job.partitions.unwrap_or(snap::partitions(proof));
    let run = prepare_snap_shape(args, proof, partitions, shape_backend())?;
    run_shape(args, run)
}

/// The placeholder partitions and timing-only key of `--snap-shape`, planned for `backend`.
pub(super) fn prepare_snap_shape(
    args: &BenchArgs,
    proof: RegisteredUpdateProof,
    partitions: u32,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
) -> Result<ShapeRun, ProverError> {
    let synthesis = SynthesisMode::from(args.synthesis.synthesis);
    let update_proof = update_proof_name(proof);
    let counts = snap::shape::counted(proof)?;
    let report = json!({
        "snap_shape": {
            "update_proof": update_proof,
            "partition": SnapShape::of(proof),
            "counts": counts,
            "query_counts": counts.query_counts(),
        },
    });
    // With --synthesis matrices, read from their file or recorded (one pass, one core) first.
    let started = Instant::now();
    let snap::SnapJob {
        source, matrices, ..
    } = snap::shape::placeholder_source(proof, 0, synthesis)?;
    let mut report = report;
    report["synthesis"] = json!(synthesis);
    report["matrices_bytes"] = json!(matrices.as_ref().map_or(0, |m| m.heap_bytes()));
    report["matrices_seconds"] = json!(matrices.as_ref().map(|_| started.elapsed().as_secs_f64()));
    let names = (
        format!("{update_proof} SnapDeals"),
        format!("{update_proof} SnapDeals partition"),
    );
    shape_run(
        args,
        names,
        (&counts, matrices.as_ref().map_or(0, |m| m.heap_bytes())),
        source,
        partitions,
        backend,
        report,
    )
}

/// The sizing input of a shape benchmark from its committed counts alone: the parameters'
/// bytes predicted, before they are made.
fn counted_sizing(
    args: &BenchArgs,
    circuit: String,
    counts: &R1csCounts,
    partitions: u32,
    backend: &Arc<dyn proofpipe_kernels::ProvingBackend>,
) -> Result<SizingInput, ProverError> {
    if partitions == 0 {
        return Err(ProverError::ZeroPartitions);
    }
    let query = counts.query_counts();
    let mut input = shape_sizing(args, circuit, counts.shape(), backend, partitions)?;
    input.params_bytes = query.params_heap_bytes();
    input.query_bytes = Some(query.query_bytes());
    Ok(input)
}

pub(super) fn shape_backend() -> Arc<dyn proofpipe_kernels::ProvingBackend> {
    let (backend, why) = proofpipe_kernels::select_backend_with(GpuOptions::from_env());
    tracing::info!(backend = backend.name(), "GPU stage backend: {why}");
    backend
}

/// The sizing input of a shape benchmark; the caller fills in the parameters' and matrices'
/// bytes and the synthesis threads.
fn shape_sizing(
    args: &BenchArgs,
    circuit: String,
    shape: proofpipe_pipeline::circuits::CircuitShape,
    backend: &Arc<dyn proofpipe_kernels::ProvingBackend>,
    partitions: u32,
) -> Result<SizingInput, ProverError> {
    let gpus = backend.gpu_devices();
    let limit = detect_memory_limit(args.sizing.memory_limit)?;
    Ok(SizingInput::new(circuit, shape, limit.bytes)
        .with_headroom(args.sizing.headroom)
        .with_cores(cpu_cores())
        .on_devices(&gpus)
        .with_partitions(partitions as usize)
        .with_overrides(args.sizing.overrides()))
}

/// A shape benchmark, ready to run: placeholder partitions and the timing-only key.
pub(super) struct ShapeRun {
    pub name: String,
    pub partitions: u32,
    pub input: SizingInput,
    pub key: Arc<ProvingKey>,
    pub source: Arc<dyn PartitionSource>,
    pub backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
    /// Fields added to every run's JSON report.
    pub extra: Value,
}

/// Plans, then times `--runs` runs of the placeholder partitions (the first after a warm-up
/// unless `--no-warmup`), each reported, and the summary.
fn run_shape(args: &BenchArgs, run: ShapeRun) -> Result<ExitCode, ProverError> {
    let synthesis_alone = synthesis_alone(args, &run)?;
    // Replayed: partition 0 synthesized once (kept for every run), the rest copies of it.
    let source: Arc<dyn PartitionSource> = if args.replay_synthesis {
        Arc::new(ReplaySource::new(run.source))
    } else {
        run.source
    };
    let workload = SourceWorkload {
        name: format!("{} (placeholder)", run.name),
        source,
        key: run.key,
    };
    let options = GpuOptions::from_env();
    let caps = match &args.gpu_memory_caps {
        None => vec![None],
        Some(list) => gpu_memory_caps(list).map_err(|reason| ProverError::InvalidArgument {
            what: "--gpu-memory-caps",
            reason,
        })?,
    };
    let mut backend = Some(run.backend);
    let mut all_verified = true;
    let mut summary = Vec::new();
    for (variant, cap) in caps.iter().enumerate() {
        // One backend at a time: the previous one's bases and buffers leave the GPU first.
        let backend = match (backend.take(), cap) {
            (Some(b), None) => b,
            (previous, cap) => {
                drop(previous);
                let memory = proofpipe_kernels::GpuMemoryConfig {
                    cap: *cap,
                    ..proofpipe_kernels::GpuMemoryConfig::from_env()
                        .map_err(|e| ProverError::kernel(0, &e))?
                };
                let (b, why) = proofpipe_kernels::select_backend_with_memory(options, Some(memory));
                tracing::info!(backend = b.name(), "GPU stage backend: {why}");
                b
            }
        };
        // The plan for the card as the backend reports it (at most the cap).
        let mut input = run.input.clone();
        input.gpu_memory_bytes = backend.gpu_devices().iter().map(|g| g.total_bytes).min();
        // What making the parameters cost is not the pipeline's: measure the peak from here.
        rss::reset_peak_rss();
        let plan = plan(&input)?;
        tracing::info!(
            partition_workers = plan.partition_workers,
            channel_capacity = plan.channel_capacity,
            gpu_workers = plan.gpu_workers,
            predicted_peak = %bytesize::ByteSize(plan.predicted_peak_bytes),
            gpu_memory_cap = ?cap,
            streamed = ?plan.gpu.as_ref().map(|g| g.placement),
            "pipeline sized from the memory limit"
        );
        let config = with_replay_permit(PipelineConfig::from_plan(&plan), args);
        let on_gpu = !backend.gpu_devices().is_empty();
        let mut extra = run.extra.clone();
        extra["gpu_memory_cap_bytes"] = json!(cap);
        extra["synthesis_alone"] = synthesis_alone.clone();
        for index in 0..args.runs {
            let mut report = bench_source(
                &workload,
                run.partitions,
                config.clone(),
                backend.clone(),
                !args.no_warmup && index == 0,
            )?;
            report.gpu_options = on_gpu.then(|| options.name());
            if args.replay_synthesis {
                report.feed = FeedKind::Replay;
            }
            let mut extra = extra.clone();
            extra["device_memory_held_bytes"] = json!(backend.device_memory_held());
            all_verified &= print_report(args, &report, &plan, extra, variant, index)?;
            summary.push((summary_label(&report, *cap), report));
        }
    }
    if summary.len() > 1 {
        print_summary(&summary);
    }
    Ok(if all_verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `--synthesis-alone N`: the shape's first partition synthesized N times on its own (before
/// any pipeline runs, so nothing else uses the cores), each run's wall and CPU seconds; the
/// summary is printed and the runs go into every report's JSON (`null` when not asked).
fn synthesis_alone(args: &BenchArgs, run: &ShapeRun) -> Result<Value, ProverError> {
    if args.synthesis_alone == 0 {
        return Ok(Value::Null);
    }
    let evaluations = run.backend.evaluation_alloc();
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..args.synthesis_alone {
        let cpu_before = rss::process_cpu_seconds();
        let started = Instant::now();
        let synthesized = run.source.synthesize(0, run.key.shape, &evaluations)?;
        wall.push(started.elapsed().as_secs_f64());
        cpu.push(
            rss::process_cpu_seconds()
                .zip(cpu_before)
                .map_or(f64::NAN, |(after, before)| after - before),
        );
        drop(synthesized);
    }
    let (wall_median, wall_low, wall_high) = spread(wall.clone());
    let (cpu_median, cpu_low, cpu_high) = spread(cpu.clone());
    println!(
        "synthesis alone: {wall_median:.2} s ({wall_low:.2}-{wall_high:.2}), \
         {cpu_median:.1} core-s ({cpu_low:.1}-{cpu_high:.1}), {} runs of partition 0, \
         {} synthesis threads",
        wall.len(),
        run.source.synthesis_threads(),
    );
    Ok(json!({
        "runs": wall.len(),
        "synthesis_threads": run.source.synthesis_threads(),
        "wall_seconds": wall,
        "cpu_seconds": cpu,
    }))
}

/// `--gpu-memory-caps`: sizes (`24GiB`) or `none` (the whole card), comma separated.
fn gpu_memory_caps(list: &str) -> Result<Vec<Option<u64>>, String> {
    list.split(',')
        .map(str::trim)
        .map(|cap| match cap {
            "none" => Ok(None),
            size => proofpipe_kernels::parse_gpu_memory(size)
                .map(Some)
                .map_err(|e| format!("{size:?}: {e}; give sizes such as 24GiB, or none")),
        })
        .collect()
}

/// Prints one run's report (text, then with `--json` one JSON object on the last line,
/// `extra`'s fields added); false if a proof that should verify did not.
fn print_report(
    args: &BenchArgs,
    report: &BenchReport,
    plan: &Plan,
    extra: Value,
    variant: usize,
    run: usize,
) -> Result<bool, ProverError> {
    if let Some(path) = &args.plot {
        // The first run's timeline, under the given name; later ones beside it.
        let path = if variant == 0 && run == 0 {
            path.clone()
        } else {
            let stem = path
                .file_stem()
                .map_or("timeline".into(), |s| s.to_string_lossy());
            path.with_file_name(format!(
                "{stem}-{}-run{}.svg",
                report.gpu_options.as_deref().unwrap_or("cpu"),
                run + 1
            ))
        };
        let path = &path;
        let title = format!(
            "{} x{} constraints, {} partitions: pipeline (pw={}, capacity={}, {})",
            report.circuit,
            report.constraints,
            report.partitions,
            report.pipeline.config.partition_workers,
            report.pipeline.config.channel_capacity,
            report.pipeline.backend
        );
        timeline_svg(
            path,
            &title,
            &report.pipeline.spans,
            &report.pipeline.timeline,
        )?;
        tracing::info!(path = %path.display(), "timeline plot written");
    }
    let s = &report.stock;
    let p = &report.pipeline;
    let gib = |b: Option<u64>| {
        b.map_or("n/a".into(), |b| {
            format!("{:.2}GiB", b as f64 / (1u64 << 30) as f64)
        })
    };
    if !report.params.verifiable() {
        println!(
            "TIMING-ONLY PARAMETERS (no trusted setup): timings are real, no proof can verify"
        );
    }
    if report.feed == FeedKind::Replay {
        println!(
            "REPLAYED SYNTHESIS: every partition is a copy of one synthesized partition; the stages after synthesis are measured, synthesis is not"
        );
    }
    if args.porep_shape.is_some() || args.post_shape.is_some() || args.snap_shape.is_some() {
        println!("{NO_STOCK_RUN}");
    } else {
        println!("stock prover: {}", report.stock_prover);
    }
    println!(
        "{:<10} {:>9} {:>12} {:>10} {:>10}",
        "prover", "seconds", "proofs/s", "verified", "peak RSS"
    );
    if s.proofs > 0 {
        println!(
            "{:<10} {:>9.2} {:>12.3} {:>7}/{:<2} {:>10}",
            "stock",
            s.seconds,
            s.proofs_per_second,
            s.verified,
            s.proofs,
            gib(s.peak_rss_bytes)
        );
    }
    println!(
        "{:<10} {:>9.2} {:>12.3} {:>7}/{:<2} {:>10}",
        "pipeline",
        p.result.seconds,
        p.result.proofs_per_second,
        p.result.verified,
        p.result.proofs,
        gib(p.result.peak_rss_bytes)
    );
    let m = &p.memory;
    let gib_ = |b: u64| b as f64 / (1u64 << 30) as f64;
    println!(
        "memory: RSS before {:.2} GiB, peak sampled {:.2} GiB at {:.1}s (synthesis={} queueWait={} gpu={} finalize={}), max held {}; device before {:.2} GiB, peak {:.2} GiB at {:.1}s (synthesis={} queueWait={} gpu={} finalize={})",
        gib_(m.rss_before_bytes),
        gib_(m.at_peak_rss.rss_bytes),
        m.at_peak_rss.seconds,
        m.at_peak_rss.synthesizing,
        m.at_peak_rss.queued,
        m.at_peak_rss.gpu,
        m.at_peak_rss.finalizing,
        p.max_held,
        gib_(m.device_before_bytes),
        gib_(m.at_peak_device.device_bytes),
        m.at_peak_device.seconds,
        m.at_peak_device.synthesizing,
        m.at_peak_device.queued,
        m.at_peak_device.gpu,
        m.at_peak_device.finalizing,
    );
    println!(
        "throughput ratio (pipeline / stock): {}; stage busy: synthesis {:.0}% gpu {:.0}% finalize {:.0}%; max synthesized in flight {} (pw={} + capacity={})",
        if s.proofs == 0 {
            "n/a (no stock run)".to_string()
        } else {
            format!("{:.2}", report.throughput_ratio)
        },
        p.busy.synthesis * 100.0,
        p.busy.gpu * 100.0,
        p.busy.finalize * 100.0,
        p.max_synthesized_in_flight,
        p.config.partition_workers,
        p.config.channel_capacity,
    );
    if let Some(st) = &p.steady {
        println!(
            "steady state (first partition into the GPU stage to the last out, {:.2}s): {:.3} s/proof; GPU stage busy {:.0}%{}",
            st.window_seconds,
            st.seconds_per_proof,
            st.gpu_stage_busy * 100.0,
            st.device_busy.map_or(String::new(), |d| format!(
                ", device running kernels {:.0}%",
                d * 100.0
            )),
        );
    }
    for k in &report.kernels {
        println!(
            "kernel {:<13} calls {:>5} total {:>8.3}s {:>9.2} ms/call {:>12} elements",
            k.kernel, k.calls, k.seconds, k.ms_per_call, k.elements
        );
    }
    if let Some(g) = &plan.gpu {
        println!(
            "GPU memory plan per device: {:.2} GiB of {:.2} GiB (resident bases {:.2} GiB + {} worker(s) x {:.2} GiB{})",
            g.predicted_device_bytes as f64 / (1u64 << 30) as f64,
            g.device_memory_bytes as f64 / (1u64 << 30) as f64,
            g.resident_bytes as f64 / (1u64 << 30) as f64,
            g.workers_per_device,
            g.per_worker_bytes as f64 / (1u64 << 30) as f64,
            super::plan::fewer_quotient_buffers(g.quotient_buffers),
        );
    }
    println!(
        "plan: pw={} budget={} capacity={} gpu_workers={} finalize_workers={} predicted peak {:.2} GiB of {:.2} GiB (measured peak {}; parameters {:.2} GiB, R1CS matrices {:.2} GiB)",
        plan.partition_workers,
        plan.partition_budget,
        plan.channel_capacity,
        plan.gpu_workers,
        plan.finalize_workers,
        gib_(plan.predicted_peak_bytes),
        gib_(plan.memory_limit),
        gib(p.result.peak_rss_bytes),
        gib_(plan.breakdown.params_bytes),
        gib_(plan.breakdown.matrices_bytes),
    );
    if args.json {
        let mut json = serde_json::to_value(report).expect("report serializes");
        json["synthesis"] = json!(args.synthesis.synthesis);
        json["plan"] = serde_json::to_value(plan).expect("plan serializes");
        json["machine"] = proofpipe_benches::machine::record();
        if let (Value::Object(json), Value::Object(extra)) = (&mut json, extra) {
            json.extend(extra);
        }
        println!("{json}");
    }
    // Timing-only proofs are not checked (they cannot verify); any other unverified proof
    // fails the run.
    Ok(!report.params.verifiable()
        || (s.verified == s.proofs && p.result.verified == p.result.proofs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_variants_are_grouped_in_first_order() {
        let v = gpu_variants("none,all,split,all,all").unwrap();
        let names: Vec<(String, usize)> = v.iter().map(|(o, n)| (o.name(), *n)).collect();
        assert_eq!(
            names,
            [("none".into(), 1), ("all".into(), 3), ("split".into(), 1)]
        );
        assert!(gpu_variants("all,turbo").is_err());
    }
}
