//! The pipeline against bellperson's stock batch prover on the same circuits, parameters
//! and machine, in one run: throughput ratio, stage busy fractions, peak RSS.
//!
//! `cargo bench -p proofpipe-benches` runs the default matrix; set
//! `PROOFPIPE_BENCH="mul-chain:16384:8,merkle-sha256:32768:8"` (circuit:constraints:partitions)
//! to choose cases, and `PROOFPIPE_PARAMS_DIR` to reuse cached parameters.

use std::sync::Arc;

use proofpipe_benches::compare::compare;
use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::params::ParamsStore;
use proofpipe_pipeline::pipeline::PipelineConfig;
use proofpipe_pipeline::sizing::{SizingInput, detect_memory_limit, plan};

fn cases() -> Vec<(CircuitKind, usize, u32)> {
    let spec = std::env::var("PROOFPIPE_BENCH")
        .unwrap_or_else(|_| "mul-chain:16384:8,merkle-sha256:32768:8".into());
    spec.split(',')
        .map(|case| {
            let parts: Vec<&str> = case.split(':').collect();
            let [circuit, constraints, partitions] = parts[..] else {
                panic!("PROOFPIPE_BENCH case {case:?} is not circuit:constraints:partitions")
            };
            (
                circuit.parse().unwrap_or_else(|e| panic!("{e}")),
                constraints.parse().expect("constraints is a number"),
                partitions.parse().expect("partitions is a number"),
            )
        })
        .collect()
}

fn main() {
    let store = ParamsStore::new(
        std::env::var("PROOFPIPE_PARAMS_DIR")
            .map_or_else(|_| ParamsStore::default_dir(), Into::into),
    );
    let limit = detect_memory_limit(None).expect("a memory limit");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "| circuit | constraints | partitions | stock proofs/s | pipeline proofs/s | ratio | GPU-stage busy | pw | capacity | stock peak MiB | pipeline peak MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (circuit, constraints, partitions) in cases() {
        let (params, _) = store.get(circuit, constraints).expect("parameters");
        let input = SizingInput::new(circuit.to_string(), params.shape, limit.bytes)
            .with_params(params.heap_bytes(), None)
            .with_cores(cores)
            .with_partitions(partitions as usize);
        let plan = plan(&input).expect("the machine fits the benchmark");
        let (backend, _) = proofpipe_kernels::select_backend();
        let r = compare(
            Arc::clone(&params),
            partitions,
            partitions,
            PipelineConfig::from_plan(&plan),
            backend,
            true,
            &proofpipe_benches::compare::Feed::Synthesis,
        )
        .expect("benchmark run");
        let mib = |b: Option<u64>| {
            b.map_or("n/a".into(), |b| {
                format!("{:.0}", b as f64 / (1u64 << 20) as f64)
            })
        };
        println!(
            "| {circuit} | {constraints} | {partitions} | {:.3} | {:.3} | {:.2} | {:.0}% | {} | {} | {} | {} |",
            r.stock.proofs_per_second,
            r.pipeline.result.proofs_per_second,
            r.throughput_ratio,
            r.pipeline.busy.gpu * 100.0,
            r.pipeline.config.partition_workers,
            r.pipeline.config.channel_capacity,
            mib(r.stock.peak_rss_bytes),
            mib(r.pipeline.result.peak_rss_bytes),
        );
    }
}
