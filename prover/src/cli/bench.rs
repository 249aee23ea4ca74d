//! `bench`: the pipeline against bellperson's stock batch prover, same circuit, parameters
//! and machine, in one run.

use std::process::ExitCode;

use proofpipe_prover::ProverError;
use proofpipe_prover::bench::compare;
use proofpipe_prover::plot::timeline_svg;

use super::setup::{self, ParamsSource};
use super::{BenchArgs, store};

pub fn run(args: BenchArgs) -> Result<ExitCode, ProverError> {
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
        args.job.partitions,
        args.stock_partitions.unwrap_or(args.job.partitions),
        prepared.pipeline_config(&args.job),
        backend,
        !args.no_warmup,
    )?;

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
    println!("stock prover: {}", report.stock_prover);
    println!(
        "{:<10} {:>9} {:>12} {:>10} {:>10}",
        "prover", "seconds", "proofs/s", "verified", "peak RSS"
    );
    println!(
        "{:<10} {:>9.2} {:>12.3} {:>7}/{:<2} {:>10}",
        "stock",
        s.seconds,
        s.proofs_per_second,
        s.verified,
        s.proofs,
        gib(s.peak_rss_bytes)
    );
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
        "throughput ratio (pipeline / stock): {:.2}; stage busy: synthesis {:.0}% gpu {:.0}% finalize {:.0}%; max synthesized in flight {} (pw={} + capacity={})",
        report.throughput_ratio,
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
    if let Some(g) = &prepared.plan.gpu {
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
        "plan: pw={} budget={} capacity={} gpu_workers={} finalize_workers={} predicted peak {:.2} GiB of {:.2} GiB",
        prepared.plan.partition_workers,
        prepared.plan.partition_budget,
        prepared.plan.channel_capacity,
        prepared.plan.gpu_workers,
        prepared.plan.finalize_workers,
        prepared.plan.predicted_peak_bytes as f64 / (1u64 << 30) as f64,
        prepared.plan.memory_limit as f64 / (1u64 << 30) as f64,
    );
    if args.json {
        let mut json = serde_json::to_value(&report).expect("report serializes");
        json["synthesis"] = serde_json::json!(args.synthesis.synthesis);
        json["plan"] = serde_json::to_value(&prepared.plan).expect("plan serializes");
        json["params_bytes"] = serde_json::json!(prepared.params.heap_bytes());
        json["matrices_bytes"] =
            serde_json::json!(prepared.matrices.as_ref().map_or(0, |m| m.heap_bytes()));
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
