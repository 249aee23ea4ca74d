use crate::circuits::CircuitKind;
use bytesize::ByteSize;
use proptest::prelude::*;

use super::*;

fn input(limit: u64, constraints: usize, cores: usize) -> SizingInput {
    let circuit = CircuitKind::MulChain;
    let shape = circuit.shape(constraints).unwrap();
    SizingInput {
        circuit: circuit.to_string(),
        shape,
        memory_limit: limit,
        params_bytes: crate::params::estimated_params_bytes(shape),
        query_bytes: None,
        matrices_bytes: 0,
        headroom: 0.1,
        cpu_cores: cores,
        synthesis_threads: 1,
        evaluations_held_twice: false,
        gpu_devices: 0,
        gpu_memory_bytes: None,
        max_parallel_partitions: None,
        overrides: Overrides::default(),
    }
}

const GIB: u64 = 1 << 30;

#[test]
fn filecoin_scale_partitions_fit_as_the_engine_measured() {
    // ~2^27 constraints per partition: ~16 GiB synthesized, as the seed engine measured.
    let shape = CircuitShape {
        constraints: 130_000_000,
        aux: 130_000_000,
        inputs: 20,
    };
    let per = PartitionBytes::for_shape(shape);
    assert!(
        (15 * GIB..=20 * GIB).contains(&per.synthesized),
        "{}",
        ByteSize(per.synthesized)
    );
    let mut i = input(512 * GIB, 1 << 20, 96);
    i.shape = shape;
    i.params_bytes = 44 * GIB;
    i.gpu_devices = 1;
    let p = plan(&i).unwrap();
    assert!(p.predicted_peak_bytes <= 512 * GIB);
    assert!(p.partition_workers >= 10, "{p:?}");
}

#[test]
fn r1cs_matrices_are_counted_once_and_can_cost_a_worker() {
    let without = plan(&input(8 * GIB, 1 << 20, 64)).unwrap();
    let mut with = input(8 * GIB, 1 << 20, 64);
    with.matrices_bytes = 1 << 30;
    let with = plan(&with).unwrap();
    assert_eq!(with.breakdown.matrices_bytes, 1 << 30);
    assert!(with.predicted_peak_bytes <= 8 * GIB);
    assert!(
        with.partition_workers < without.partition_workers,
        "a GiB of matrices must come out of the synthesis workers: {} vs {}",
        with.partition_workers,
        without.partition_workers
    );
}

#[test]
fn too_small_a_limit_names_the_minimum() {
    let err = plan(&input(64 << 20, 1 << 16, 2)).unwrap_err();
    let SizingError::MemoryLimitTooSmall { minimum, .. } = &err else {
        panic!("{err}")
    };
    assert!(err.to_string().contains("at least"), "{err}");
    let ok = plan(&input(minimum.0, 1 << 16, 2)).unwrap();
    assert_eq!((ok.partition_workers, ok.channel_capacity), (1, 1));
}

#[test]
fn overrides_are_respected_or_refused() {
    let mut i = input(8 * GIB, 1 << 16, 2);
    i.overrides = Overrides {
        partition_workers: Some(3),
        channel_capacity: Some(5),
        gpu_workers: Some(1),
        stream_bases: false,
    };
    let p = plan(&i).unwrap();
    assert_eq!(
        (p.partition_workers, p.channel_capacity, p.gpu_workers),
        (3, 5, 1)
    );
    i.memory_limit = 200 << 20;
    assert!(matches!(
        plan(&i),
        Err(SizingError::MemoryLimitTooSmall { .. })
    ));
    i.overrides.partition_workers = Some(0);
    assert!(plan(&i).is_err());
}

#[test]
fn workers_never_exceed_useful_parallelism() {
    let mut i = input(64 * GIB, 1 << 12, 16);
    i.max_parallel_partitions = Some(3);
    assert_eq!(plan(&i).unwrap().partition_workers, 3);
}

proptest! {
    #[test]
    fn plans_stay_under_the_limit(limit_mib in 64u64..65_536, log_n in 10u32..22, cores in 1usize..64) {
        let i = input(limit_mib << 20, 1 << log_n, cores);
        match plan(&i) {
            Ok(p) => {
                prop_assert!(p.predicted_peak_bytes <= i.memory_limit);
                prop_assert!(p.partition_workers >= 1 && p.partition_workers <= cores + p.gpu_workers);
                prop_assert!(p.channel_capacity >= 1 && p.channel_capacity <= p.partition_workers);
                prop_assert_eq!(p.partition_budget, p.partition_workers);
                prop_assert_eq!(p.breakdown.synthesized_bytes, p.partition_budget as u64 * p.breakdown.per_partition.held());
            }
            Err(SizingError::MemoryLimitTooSmall { minimum, .. }) => {
                prop_assert!(minimum.0 > i.memory_limit);
                let mut at_min = i.clone();
                at_min.memory_limit = minimum.0;
                prop_assert!(plan(&at_min).is_ok());
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn more_memory_never_means_fewer_workers(limit_mib in 256u64..32_768, extra in 0u64..32_768, log_n in 10u32..20) {
        let a = plan(&input(limit_mib << 20, 1 << log_n, 32));
        let b = plan(&input((limit_mib + extra) << 20, 1 << log_n, 32));
        if let (Ok(a), Ok(b)) = (a, b) {
            prop_assert!(b.partition_workers >= a.partition_workers);
        }
    }
}

#[test]
fn gpu_memory_enters_the_plan() {
    // 2^22 constraints on one 141 GB H200: two workers per device, resident bases reported.
    let mut i = input(128 * GIB, 1 << 22, 16);
    i.gpu_devices = 1;
    i.gpu_memory_bytes = Some(141 * GIB);
    let p = plan(&i).unwrap();
    let g = p.gpu.clone().expect("GPU plan");
    assert_eq!((p.gpu_workers, g.workers_per_device, g.devices), (2, 2, 1));
    let points = (1u64 << 22).max((i.shape.inputs + i.shape.aux) as u64);
    assert_eq!(
        g.resident_bytes,
        i.params_bytes + GPU_CONTEXT_BYTES + GPU_MSM_BYTES_PER_POINT * points
    );
    // The worker's quotient workspace (a, b, c: 96 B/point, kept across partitions); the
    // MSM's temporaries are in the resident part (one MSM runs at a time per device).
    assert_eq!(g.per_worker_bytes, 96 * (1 << 22));
    assert!(g.predicted_device_bytes <= g.device_memory_bytes);

    // Four devices: one set of workers per device.
    i.gpu_devices = 4;
    assert_eq!(plan(&i).unwrap().gpu_workers, 8);

    // A GPU that holds the bases and one worker but not two: one worker per device.
    i.gpu_devices = 1;
    let one = g.resident_bytes + g.per_worker_bytes;
    i.gpu_memory_bytes = Some(one + g.per_worker_bytes / 2);
    let p = plan(&i).unwrap();
    assert_eq!((p.gpu_workers, p.gpu.unwrap().workers_per_device), (1, 1));

    // Too small for that: one worker with two of a, b, c on the card at once, then one.
    i.gpu_memory_bytes = Some(one - 1);
    let g2 = plan(&i).unwrap().gpu.unwrap();
    assert_eq!((g2.workers_per_device, g2.quotient_buffers), (1, 2));
    assert_eq!(g2.per_worker_bytes, 64 * (1 << 22));
    let least = g.resident_bytes + 32 * ((1 << 22) + (1 << 20));
    i.gpu_memory_bytes = Some(least);
    let g1 = plan(&i).unwrap().gpu.unwrap();
    assert_eq!((g1.workers_per_device, g1.quotient_buffers), (1, 1));
    assert_eq!(g1.predicted_device_bytes, least);

    // Too small for even one buffer: refused, naming GPU memory.
    i.gpu_memory_bytes = Some(least - 1);
    let err = plan(&i).unwrap_err();
    assert!(err.to_string().contains("GPU"), "{err}");

    // Unknown GPU size: no device plan, two workers per device.
    i.gpu_memory_bytes = None;
    let p = plan(&i).unwrap();
    assert_eq!((p.gpu_workers, p.gpu), (2, None));
}

#[test]
fn a_partition_synthesized_on_every_core_needs_few_workers() {
    let big = 1 << 40;
    let one_per_core = plan(&input(big, 1 << 16, 16)).unwrap();
    assert_eq!(
        one_per_core.partition_workers,
        16 + one_per_core.gpu_workers
    );
    let parallel = plan(&SizingInput {
        synthesis_threads: 16,
        ..input(big, 1 << 16, 16)
    })
    .unwrap();
    // One partition fills the cores, one more its last parts' idle ones, and one per GPU
    // worker sits in the GPU stage.
    assert_eq!(parallel.partition_workers, 2 + parallel.gpu_workers);
    // rayon's threads keep malloc arenas of their own: the base counts them.
    // (14 fewer workers, 16 rayon threads.)
    assert_eq!(
        parallel.breakdown.base_bytes,
        one_per_core.breakdown.base_bytes + 2 * PER_THREAD_BYTES
    );
    // Threads beyond the cores are the cores.
    let wide = plan(&SizingInput {
        synthesis_threads: 64,
        ..input(big, 1 << 16, 16)
    })
    .unwrap();
    assert_eq!(wide.partition_workers, parallel.partition_workers);
}

#[test]
fn when_memory_leaves_no_more_workers_than_gpu_workers_one_gpu_worker_keeps_synthesis_going() {
    // The 32 GiB PoRep partition from the matrices on the H200 host: 128 GiB, 16 cores, one
    // 140 GiB GPU; two partitions fit beside the parameters and the matrices.
    let shape = CircuitShape {
        constraints: 130_278_869,
        aux: 130_169_893,
        inputs: 328,
    };
    let h200 = SizingInput {
        circuit: "StackedDrg32GiBV1_1 partition".into(),
        shape,
        memory_limit: 128 * GIB,
        params_bytes: 47_372_000_000,
        query_bytes: None,
        matrices_bytes: 13_240_000_000,
        headroom: 0.1,
        cpu_cores: 16,
        synthesis_threads: 18,
        evaluations_held_twice: false,
        gpu_devices: 1,
        gpu_memory_bytes: Some(150_000_000_000),
        max_parallel_partitions: Some(10),
        overrides: Overrides::default(),
    };
    let p = plan(&h200).unwrap();
    assert_eq!((p.partition_workers, p.gpu_workers), (2, 1), "{p:?}");
    // Asked for, two GPU workers are given (and both permits may sit in the GPU stage).
    let asked = plan(&SizingInput {
        overrides: Overrides {
            gpu_workers: Some(2),
            ..Overrides::default()
        },
        ..h200.clone()
    })
    .unwrap();
    assert_eq!((asked.partition_workers, asked.gpu_workers), (2, 2));
    // With memory for more partitions the default two GPU workers stay.
    let roomy = plan(&SizingInput {
        memory_limit: 512 * GIB,
        ..h200
    })
    .unwrap();
    assert_eq!(roomy.gpu_workers, 2);
    assert!(roomy.partition_workers > roomy.gpu_workers);
}
