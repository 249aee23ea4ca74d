//! `prove`: one job through the pipeline, with progress, verified proofs and a summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::pipeline::{JobEvent, JobOutcome, JobSpec, Pipeline};
use proofpipe_pipeline::rss;
use serde::Serialize;

use clap::Args;

use super::args::{JobArgs, SizingArgs, SynthesisArgs, store};
use super::{filecoin, setup};

#[derive(Args, Debug)]
pub(super) struct ProveArgs {
    #[command(flatten)]
    pub(super) job: JobArgs,
    #[command(flatten)]
    pub(super) sizing: SizingArgs,
    #[command(flatten)]
    pub(super) synthesis: SynthesisArgs,
    #[command(flatten)]
    pub(super) filecoin: filecoin::FilecoinArgs,
    /// Witness seed: the same seed gives the same statements.
    #[arg(long, default_value_t = 0)]
    pub(super) seed: u64,
    /// Directory of cached parameters (with --porep-c1, --snap-vanilla or a PoSt input:
    /// Filecoin's parameter directory).
    #[arg(long)]
    pub(super) params_dir: Option<PathBuf>,
    /// End with one JSON object on the last line of stdout.
    #[arg(long)]
    pub(super) json: bool,
    /// Write the pipeline's Prometheus metrics (text format) to this file at the end.
    #[arg(long)]
    pub(super) metrics_file: Option<PathBuf>,
}

/// The `--json` summary: one object on the last line of stdout.
#[derive(Serialize)]
struct Summary {
    outcome: JobOutcome,
    circuit: String,
    constraints: usize,
    partitions: u32,
    proofs: usize,
    verified: usize,
    seconds: f64,
    seconds_per_proof: f64,
    peak_rss_bytes: Option<u64>,
    predicted_peak_bytes: u64,
    memory_limit_bytes: u64,
    memory_limit_source: String,
    partition_workers: usize,
    channel_capacity: usize,
    gpu_workers: usize,
    max_synthesized_in_flight: u64,
    backend: &'static str,
    params_bytes: u64,
    /// `one-pass` or `matrices`, and the matrices' bytes (0 for one-pass).
    synthesis: super::args::Synthesis,
    matrices_bytes: u64,
}

pub fn run(args: ProveArgs, progress: &MultiProgress) -> Result<ExitCode, ProverError> {
    let store = store(args.params_dir.clone());
    let (backend, why) = proofpipe_kernels::select_backend();
    tracing::info!(backend = backend.name(), "GPU stage backend: {why}");
    let prepared = setup::prepare(
        &args.job,
        &args.sizing,
        args.synthesis.synthesis,
        setup::ParamsSource::Store(&store),
        &backend.gpu_devices(),
    )?;
    let pipeline = Pipeline::start(prepared.pipeline_config(&args.job), backend)?;

    let mut spec = JobSpec::new(
        args.job.circuit,
        args.job.constraints,
        args.job.partitions(),
    );
    spec.seed = args.seed;
    let start = Instant::now();
    let handle = pipeline.submit(spec, prepared.params.clone())?;

    let bar = progress.add(ProgressBar::new(u64::from(args.job.partitions())));
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} partitions {msg}",
        )
        .expect("valid template"),
    );
    let mut outcome = JobOutcome::Failed("the pipeline stopped".into());
    let mut proofs = Vec::new();
    for event in handle.events.iter() {
        match event {
            JobEvent::PartitionProved(p) => {
                bar.inc(1);
                bar.set_message(format!("| {}", pipeline.buffers()));
                proofs.push(p);
            }
            JobEvent::Finished(o) => {
                outcome = o;
                break;
            }
        }
    }
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let buffers = pipeline.buffers();
    pipeline.shutdown();
    proofs.sort_by_key(|p| p.partition);

    if let Some(path) = &args.metrics_file {
        std::fs::write(path, pipeline.metrics_text())
            .map_err(ProverError::io("writing metrics to", path))?;
    }
    let verified = proofs.iter().filter(|p| p.verified).count();
    let summary = Summary {
        outcome: outcome.clone(),
        circuit: args.job.circuit.to_string(),
        constraints: args.job.constraints,
        partitions: args.job.partitions(),
        proofs: proofs.len(),
        verified,
        seconds,
        seconds_per_proof: seconds / proofs.len().max(1) as f64,
        peak_rss_bytes: rss::peak_rss_bytes(),
        predicted_peak_bytes: prepared.plan.predicted_peak_bytes,
        memory_limit_bytes: prepared.limit.bytes,
        memory_limit_source: prepared.limit.source.to_string(),
        partition_workers: prepared.plan.partition_workers,
        channel_capacity: prepared.plan.channel_capacity,
        gpu_workers: prepared.plan.gpu_workers,
        max_synthesized_in_flight: buffers.max_synthesized_in_flight,
        backend: pipeline.backend_name(),
        params_bytes: prepared.params.heap_bytes(),
        synthesis: args.synthesis.synthesis,
        matrices_bytes: prepared.matrices.as_ref().map_or(0, |m| m.heap_bytes()),
    };

    for p in &proofs {
        let t = &p.timings;
        println!(
            "partition {:>3}: {} | synthesis {:.2}s queueWait {:.2}s gpu {:.2}s finalize {:.2}s | {}",
            p.partition,
            if p.verified {
                "verified"
            } else {
                "NOT VERIFIED"
            },
            t.synthesis.as_secs_f64(),
            t.queue_wait.as_secs_f64(),
            t.gpu.as_secs_f64(),
            t.finalize.as_secs_f64(),
            proofpipe_pipeline::groth16::short_hex(&p.proof),
        );
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    println!(
        "{} {}x{} constraints: {}/{} proofs verified in {:.2}s ({:.2}s/proof); pw={} capacity={} max in flight={}; peak RSS {} predicted {:.2}GiB, limit {:.2}GiB ({})",
        match &outcome {
            JobOutcome::Succeeded => "OK".to_string(),
            JobOutcome::Failed(e) => format!("FAILED ({e})"),
            JobOutcome::Cancelled => "CANCELLED".to_string(),
        },
        summary.circuit,
        summary.constraints,
        verified,
        summary.partitions,
        seconds,
        summary.seconds_per_proof,
        summary.partition_workers,
        summary.channel_capacity,
        summary.max_synthesized_in_flight,
        summary
            .peak_rss_bytes
            .map_or("n/a".into(), |b| format!("{:.2}GiB", gib(b))),
        gib(summary.predicted_peak_bytes),
        gib(summary.memory_limit_bytes),
        summary.memory_limit_source,
    );
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&summary).expect("summary serializes")
        );
    }
    let ok = outcome == JobOutcome::Succeeded && verified == args.job.partitions() as usize;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
