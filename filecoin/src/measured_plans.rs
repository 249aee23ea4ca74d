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

/// Every run of `reports` (bench JSON lines) against the plan the model makes today from the
/// run's own inputs (memory limit, parameters, matrices, cores, the GPU memory it was held to,
/// partitions): the plan's partition workers are the run's, and its peak is at most 10% above
/// the run's peak RSS, never under it. Returns the runs checked.
fn held_to_reports(
    reports: &[&str],
    counts: &proofpipe_pipeline::circuits::R1csCounts,
    synthesis_threads: usize,
    query_bytes: bool,
) -> usize {
    let mut runs = 0;
    for line in reports.iter().flat_map(|r| r.lines()) {
        let report: serde_json::Value = serde_json::from_str(line).unwrap();
        let number = |v: &serde_json::Value| v.as_u64().expect("a number in the report");
        assert_eq!(number(&report["constraints"]), counts.constraints as u64);
        let input = SizingInput {
            circuit: report["circuit"]
                .as_str()
                .unwrap_or("a report's circuit")
                .into(),
            shape: counts.shape(),
            memory_limit: number(&report["plan"]["memory_limit"]),
            params_bytes: number(&report["params_bytes"]),
            query_bytes: query_bytes.then(|| counts.query_counts().query_bytes()),
            matrices_bytes: number(&report["matrices_bytes"]),
            headroom: 0.1,
            cpu_cores: number(&report["cpu_cores"]) as usize,
            synthesis_threads,
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
            "{}, GPU held to {}: predicted {} for a measured peak of {measured} ({ratio:.3})",
            input.circuit,
            report["gpu_memory_cap_bytes"],
            p.predicted_peak_bytes
        );
        runs += 1;
    }
    runs
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
    // The runs held to a GPU memory cap stream bases: another plan, checked elsewhere.
    let whole_card: Vec<String> = REPORTS
        .iter()
        .flat_map(|r| r.lines())
        .filter(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["gpu_memory_cap_bytes"]
                .is_null()
        })
        .map(str::to_string)
        .collect();
    let whole_card: Vec<&str> = whole_card.iter().map(String::as_str).collect();
    let runs = held_to_reports(&whole_card, &counts, shape.challenges_per_partition, false);
    assert_eq!(runs, 6, "three whole-card runs in each report");
}

/// The whole 32 GiB SnapDeals proof on an H100 80 GB host (16 partitions synthesized from the
/// R1CS matrices and the native witness, timing-only parameters), on the whole card and held to
/// 24 GiB (bases streamed), as `SHAPE=snap FEED= CAPS=none,24GiB RUNS=3 ALONE=3
/// scripts/gpu-streamed.sh` recorded it.
#[test]
fn the_32gib_snap_proof_is_predicted_within_ten_percent_never_under() {
    use crate::RegisteredUpdateProof;
    use crate::snap::shape::{SnapShape, counted};

    let proof = RegisteredUpdateProof::StackedDrg32GiBV1;
    let counts = counted(proof).unwrap();
    let runs = held_to_reports(
        &[include_str!(
            "../../bench-results/2026-12-07-snap32-matrices-synthesized-24gib-h100.json"
        )],
        &counts,
        SnapShape::of(proof).challenges_per_partition,
        true,
    );
    assert_eq!(
        runs, 6,
        "three runs on the whole card, three held to 24 GiB"
    );
}

/// One 32 GiB WindowPoSt partition synthesized from its R1CS matrices and the native witness on
/// an H100 80 GB host (`SHAPE=window-post FEED= CAPS=none RUNS=3 scripts/gpu-streamed.sh`),
/// after the recording gives the allocator's freed pages back: the plan within 10% above each
/// run's peak, never under. (Before, the recording's 2,349 sector parts left ~10 GiB in glibc's
/// arenas and the peak was 2.4 GiB over the plan:
/// `bench-results/2026-12-07-window-post32-matrices-h100-before-trim.json`.)
#[test]
fn the_32gib_window_post_partition_from_its_matrices_is_predicted_within_ten_percent() {
    use crate::RegisteredPoStProof;
    use crate::post::shape::{PostShape, counted};

    let proof = RegisteredPoStProof::StackedDrgWindow32GiBV1_2;
    let counts = counted(proof).unwrap();
    let runs = held_to_reports(
        &[include_str!(
            "../../bench-results/2026-12-07-window-post32-matrices-h100.json"
        )],
        &counts,
        PostShape::of(proof).unwrap().sectors_per_partition,
        true,
    );
    assert_eq!(runs, 3);
}
