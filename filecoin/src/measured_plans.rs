//! The plans of the Filecoin kinds' largest partitions against the peaks measured on a device:
//! the pipeline's memory model (proofpipe-pipeline's `sizing`) fed the counted shapes of this
//! crate's kinds, within 10% above each committed run's peak and never under it.

use proofpipe_pipeline::sizing::measurements::{CORES, GPU_MEMORY, MEMORY_LIMIT};
use proofpipe_pipeline::sizing::{Overrides, SizingInput, plan};

/// The 32 GiB WindowPoSt partition on the H200 (`scripts/gpu-post-shape.sh`, reports
/// `bench-results/2026-12-03-window-post32-run{1,2,3}.json`): page-locked evaluations,
/// peaks 95.74-95.90 GB, which the plan of that day (85.0 GiB) was under. Its sector
/// sub-systems are collected before the partition is extended with them, so the plan now
/// counts a, b, c twice during synthesis when they are page-locked.
#[test]
fn the_32gib_window_post_partition_is_predicted_within_ten_percent_never_under() {
    use crate::RegisteredPoStProof;
    use crate::post::shape::{PostShape, counted};

    let proof = RegisteredPoStProof::StackedDrgWindow32GiBV1_2;
    let counts = counted(proof).unwrap();
    let input = SizingInput {
        circuit: "StackedDrgWindow32GiBV1_2 partition".into(),
        shape: counts.shape(),
        memory_limit: MEMORY_LIMIT,
        // The report's `plan.breakdown.params_bytes`.
        params_bytes: 60_777_892_704,
        query_bytes: None,
        matrices_bytes: 0,
        headroom: 0.1,
        cpu_cores: CORES,
        synthesis_threads: PostShape::of(proof).unwrap().sectors_per_partition,
        evaluations_held_twice: true,
        gpu_devices: 1,
        gpu_memory_bytes: Some(GPU_MEMORY),
        max_parallel_partitions: Some(1),
        overrides: Overrides::default(),
    };
    let p = plan(&input).unwrap();
    assert_eq!((p.partition_workers, p.gpu_workers), (1, 1), "{p:?}");
    let highest = [95_892_508_672u64, 95_738_060_800, 95_901_093_888];
    let ratio = p.predicted_peak_bytes as f64 / highest.into_iter().max().unwrap() as f64;
    assert!(
        (1.0..=1.10).contains(&ratio),
        "predicted {} for measured {highest:?} ({ratio:.3})",
        p.predicted_peak_bytes
    );
    // With heap evaluations (the CPU backend, or PROOFPIPE_CUDA_PINNED_EVALUATIONS=0)
    // a, b, c fill only as the sub-systems drain: not held twice. The H200 runs with the
    // page-locked pool switched off (`bench-results/2026-12-03-window-post32-unpinned-
    // run{1,2}.json`) peaked at 83.85 and 83.76 GB.
    let heap = plan(&SizingInput {
        evaluations_held_twice: false,
        ..input
    })
    .unwrap();
    let highest = [83_853_000_704u64, 83_763_212_288];
    let ratio = heap.predicted_peak_bytes as f64 / highest.into_iter().max().unwrap() as f64;
    assert!(
        (1.0..=1.10).contains(&ratio),
        "predicted {} for measured {highest:?} ({ratio:.3})",
        heap.predicted_peak_bytes
    );
}

/// The whole 32 GiB PoRep proof on an H100 80 GB host (10 synthesized partitions from the
/// R1CS matrices, timing-only parameters, the whole card), as the committed reports of
/// `scripts/gpu-streamed.sh` recorded it: the plan the model makes today from each run's
/// own inputs is at most 10% above the run's peak RSS, never under it.
#[test]
fn the_32gib_porep_proof_is_predicted_within_ten_percent_never_under() {
    use crate::RegisteredSealProof;
    use crate::shape::{PartitionShape, counted};

    const REPORTS: [&str; 2] = [
        include_str!("../../bench-results/2026-12-06-streamed-porep32-synthesized-16gib-h100.json"),
        include_str!("../../bench-results/2026-12-06-streamed-porep32-synthesized-24gib-h100.json"),
    ];
    let proof = RegisteredSealProof::StackedDrg32GiBV1_1;
    let counts = counted(proof).unwrap();
    let shape = PartitionShape::of(proof).unwrap();
    let mut runs = 0;
    for line in REPORTS.iter().flat_map(|r| r.lines()) {
        let report: serde_json::Value = serde_json::from_str(line).unwrap();
        // The runs held to a GPU memory cap stream bases: another plan, checked elsewhere.
        if !report["gpu_memory_cap_bytes"].is_null() {
            continue;
        }
        let number = |v: &serde_json::Value| v.as_u64().expect("a number in the report");
        assert_eq!(number(&report["constraints"]), counts.constraints as u64);
        let input = SizingInput {
            circuit: "StackedDrg32GiBV1_1 (placeholder)".into(),
            shape: counts.shape(),
            memory_limit: number(&report["plan"]["memory_limit"]),
            params_bytes: number(&report["params_bytes"]),
            query_bytes: None,
            matrices_bytes: number(&report["matrices_bytes"]),
            headroom: 0.1,
            cpu_cores: number(&report["cpu_cores"]) as usize,
            synthesis_threads: shape.challenges_per_partition,
            evaluations_held_twice: false,
            gpu_devices: 1,
            gpu_memory_bytes: Some(number(&report["plan"]["gpu"]["device_memory_bytes"])),
            max_parallel_partitions: Some(number(&report["partitions"]) as usize),
            overrides: Overrides::default(),
        };
        let p = plan(&input).unwrap();
        assert_eq!(
            p.partition_workers as u64,
            number(&report["pipeline"]["config"]["partition_workers"]),
            "{p:?}"
        );
        let measured = number(&report["pipeline"]["peak_rss_bytes"]);
        let ratio = p.predicted_peak_bytes as f64 / measured as f64;
        assert!(
            (1.0..=1.10).contains(&ratio),
            "predicted {} for a measured peak of {measured} ({ratio:.3})",
            p.predicted_peak_bytes
        );
        runs += 1;
    }
    assert_eq!(runs, 6, "three whole-card runs in each report");
}
