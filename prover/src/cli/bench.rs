//! `bench`: the pipeline against bellperson's stock batch prover, same circuit, parameters
//! and machine, in one run; or, with `--porep-shape`, the pipeline alone over placeholder
//! Filecoin PoRep partitions of a sector size's exact shape, with timing-only parameters.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use proofpipe_prover::ProverError;
use proofpipe_prover::bench::{BenchReport, SourceWorkload, bench_source, compare};
use proofpipe_prover::filecoin::shape::{self, PartitionShape, Placeholder};
use proofpipe_prover::filecoin::{RegisteredSealProof, seal_proof_name};
use proofpipe_prover::groth16::{R1csMatrices, SynthesisMode};
use proofpipe_prover::params::ProvingKey;
use proofpipe_prover::pipeline::PipelineConfig;
use proofpipe_prover::plot::timeline_svg;
use proofpipe_prover::rss;
use proofpipe_prover::sizing::{Plan, SizingInput, detect_memory_limit, plan};
use serde_json::{Value, json};

use super::setup::{self, ParamsSource};
use super::{BenchArgs, cpu_cores, store};

pub fn run(args: BenchArgs) -> Result<ExitCode, ProverError> {
    if let Some(proof) = args.porep_shape {
        return porep_shape(&args, proof);
    }
    let store = store(args.params_dir.clone());
    let (backend, why) = proofpipe_kernels::select_backend();
    tracing::info!(backend = backend.name(), "GPU stage backend: {why}");
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
        &backend.gpu_devices(),
    )?;
    let report = compare(
        prepared.params.clone(),
        args.job.partitions(),
        args.stock_partitions.unwrap_or(args.job.partitions()),
        prepared.pipeline_config(&args.job),
        backend,
        !args.no_warmup,
    )?;
    let extra = json!({
        "params_bytes": prepared.params.heap_bytes(),
        "matrices_bytes": prepared.matrices.as_ref().map_or(0, |m| m.heap_bytes()),
    });
    output(&args, &report, &prepared.plan, extra)
}

/// Why `--porep-shape` has no stock run.
const NO_STOCK_RUN: &str = "stock prover not run: seal_commit_phase2 needs Filecoin's parameter \
     files for the sector size, and a placeholder partition proves nothing to compare";

/// `bench --porep-shape`: placeholder partitions of the seal proof's exact circuit, timing-only
/// parameters of its exact query counts, both from the committed counts (no synthesis before
/// the timed run but the warm-up's and, with `--synthesis matrices`, the recording's).
fn porep_shape(args: &BenchArgs, proof: RegisteredSealProof) -> Result<ExitCode, ProverError> {
    if args.stock_partitions.is_some_and(|n| n > 0) {
        return Err(ProverError::InvalidArgument {
            what: "--stock-partitions",
            reason: format!(
                "{NO_STOCK_RUN}; leave --stock-partitions out (or 0) with --porep-shape"
            ),
        });
    }
    let name = seal_proof_name(proof);
    let partition_shape = PartitionShape::of(proof)?;
    let counts = shape::counted(proof)?;
    let partitions = args.job.partitions.unwrap_or(partition_shape.partitions);
    if partitions == 0 {
        return Err(ProverError::ZeroPartitions);
    }
    let synthesis = SynthesisMode::from(args.synthesis.synthesis);
    let (backend, why) = proofpipe_kernels::select_backend();
    tracing::info!(backend = backend.name(), "GPU stage backend: {why}");
    let gpus = backend.gpu_devices();
    let limit = detect_memory_limit(args.sizing.memory_limit)?;
    let query = counts.query_counts();
    let mut input = SizingInput {
        circuit: format!("{name} partition"),
        shape: counts.shape(),
        memory_limit: limit.bytes,
        params_bytes: query.params_heap_bytes(),
        matrices_bytes: match synthesis {
            SynthesisMode::OnePass => 0,
            SynthesisMode::Matrices => R1csMatrices::predicted_heap_bytes(&counts),
        },
        headroom: args.sizing.headroom,
        cpu_cores: cpu_cores(),
        gpu_devices: gpus.len(),
        gpu_memory_bytes: gpus.iter().map(|g| g.total_bytes).min(),
        max_parallel_partitions: Some(partitions as usize),
        overrides: args.sizing.overrides(),
    };
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
    // What making them cost is not the pipeline's: measure the peak from here.
    rss::reset_peak_rss();
    let plan = plan(&input)?;
    tracing::info!(
        partition_workers = plan.partition_workers,
        channel_capacity = plan.channel_capacity,
        gpu_workers = plan.gpu_workers,
        predicted_peak = %bytesize::ByteSize(plan.predicted_peak_bytes),
        "pipeline sized from the memory limit"
    );
    let workload = SourceWorkload {
        name: format!("{name} (placeholder)"),
        source: job.source,
        key: key.clone(),
    };
    let report = bench_source(
        &workload,
        partitions,
        PipelineConfig::from_plan(&plan),
        backend,
        !args.no_warmup,
    )?;
    let extra = json!({
        "params_bytes": key.heap_bytes(),
        "matrices_bytes": input.matrices_bytes,
        "params_seconds": params_seconds,
        "matrices_seconds": matrices_seconds,
        "porep_shape": {
            "seal_proof": name,
            "partition": partition_shape,
            "counts": counts,
            "query_counts": {
                "inputs": query.inputs, "h": query.h, "l": query.l, "a": query.a, "b": query.b,
            },
        },
        "stock_not_run": NO_STOCK_RUN,
    });
    output(args, &report, &plan, extra)
}

/// Prints the report (text, then with `--json` one JSON object on the last line, `extra`'s
/// fields added) and decides the exit code.
fn output(
    args: &BenchArgs,
    report: &BenchReport,
    plan: &Plan,
    extra: Value,
) -> Result<ExitCode, ProverError> {
    if let Some(path) = &args.plot {
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
    if args.porep_shape.is_some() {
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
            "GPU memory plan per device: {:.2} GiB of {:.2} GiB (resident bases {:.2} GiB + {} worker(s) x {:.2} GiB)",
            g.predicted_device_bytes as f64 / (1u64 << 30) as f64,
            g.device_memory_bytes as f64 / (1u64 << 30) as f64,
            g.resident_bytes as f64 / (1u64 << 30) as f64,
            g.workers_per_device,
            g.per_worker_bytes as f64 / (1u64 << 30) as f64,
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
        if let (Value::Object(json), Value::Object(extra)) = (&mut json, extra) {
            json.extend(extra);
        }
        println!("{json}");
    }
    // Timing-only proofs are not checked (they cannot verify); any other unverified proof
    // fails the run.
    let all_verified = !report.params.verifiable()
        || (s.verified == s.proofs && p.result.verified == p.result.proofs);
    Ok(if all_verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
