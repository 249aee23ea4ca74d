//! Peaks measured on the H200, which the memory model is held to (its test below): predicted
//! within 10% above the measured peak, never under it, host and device.
//!
//! Produced on the lent H200 (16 cores, 128 GiB cgroup, one H200 of 139.8 GiB) on 2026-12-01
//! with a binary built as `scripts/cuda-build.sh` builds it (`PROOFPIPE_CUDA_ARCHS=90`), one run
//! per line:
//!
//! ```text
//! MATRIX=$'mul-chain 16777216 24\nmerkle-sha256 16777216 24\nmerkle-sha256 33554432 16\nmul-chain 33554432 12' \
//!     scripts/mem-sweep.sh OUT
//! MATRIX='merkle-sha256 67108864 8 --gpu-workers 3' scripts/mem-sweep.sh OUT
//! ```
//!
//! that is `proofpipe-prover bench --circuit C --constraints N --partitions P
//! --stock-partitions 0 --no-warmup --timing-only-params --json [--gpu-workers 3]`, the plan
//! made from the cgroup limit. Host peak: the kernel's VmHWM over the pipeline run (reset once
//! the parameters were made). Device peak: device memory in use (cudaMemGetInfo, sampled
//! every 20 ms; nvidia-smi's 100 ms trace peaked within 1% of it). Every run reached its
//! partition budget (max held = pw): a burst of full partitions, the case the bound is for.

use crate::circuits::CircuitKind;

/// One measured run.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub circuit: CircuitKind,
    pub constraints: usize,
    pub partitions: usize,
    /// `--gpu-workers`, if the run fixed it.
    pub gpu_workers_override: Option<usize>,
    /// The plan the run used (the model of the time chose it from the cgroup limit).
    pub partition_workers: usize,
    pub channel_capacity: usize,
    pub gpu_workers: usize,
    /// `CircuitParams::heap_bytes` of the run's (timing-only, exactly shaped) parameters.
    pub params_bytes: u64,
    /// VmHWM of the pipeline run.
    pub peak_rss_bytes: u64,
    /// Most device memory in use during the run.
    pub peak_device_bytes: u64,
    /// Steady-state seconds per partition (for the record; not part of the model).
    pub seconds_per_partition: f64,
}

/// The machine of the runs.
pub const CORES: usize = 16;
pub const MEMORY_LIMIT: u64 = 128 << 30;
/// `GpuDevice::total_bytes` of the H200 as the backend reported it.
pub const GPU_MEMORY: u64 = 150_109_880_320;

pub const RUNS: &[Measured] = &[
    Measured {
        circuit: CircuitKind::MulChain,
        constraints: 1 << 24,
        partitions: 24,
        gpu_workers_override: None,
        partition_workers: 18,
        channel_capacity: 9,
        gpu_workers: 2,
        params_bytes: 9_663_675_552,
        peak_rss_bytes: 48_525_905_920,
        peak_device_bytes: 14_615_904_256,
        seconds_per_partition: 1.564,
    },
    Measured {
        circuit: CircuitKind::MerkleSha256,
        constraints: 1 << 24,
        partitions: 24,
        gpu_workers_override: None,
        partition_workers: 18,
        channel_capacity: 9,
        gpu_workers: 2,
        params_bytes: 6_111_132_864,
        peak_rss_bytes: 44_539_260_928,
        peak_device_bytes: 10_857_807_872,
        seconds_per_partition: 0.844,
    },
    Measured {
        circuit: CircuitKind::MerkleSha256,
        constraints: 1 << 25,
        partitions: 16,
        gpu_workers_override: None,
        partition_workers: 16,
        channel_capacity: 8,
        gpu_workers: 2,
        params_bytes: 12_222_267_648,
        peak_rss_bytes: 83_011_543_040,
        peak_device_bytes: 20_892_680_192,
        seconds_per_partition: 1.436,
    },
    Measured {
        circuit: CircuitKind::MulChain,
        constraints: 1 << 25,
        partitions: 12,
        gpu_workers_override: None,
        partition_workers: 12,
        channel_capacity: 6,
        gpu_workers: 2,
        params_bytes: 19_327_351_968,
        peak_rss_bytes: 73_290_723_328,
        peak_device_bytes: 28_408_872_960,
        seconds_per_partition: 2.889,
    },
    Measured {
        circuit: CircuitKind::MerkleSha256,
        constraints: 1 << 26,
        partitions: 8,
        gpu_workers_override: Some(3),
        partition_workers: 8,
        channel_capacity: 4,
        gpu_workers: 3,
        params_bytes: 24_444_535_488,
        peak_rss_bytes: 99_624_755_200,
        peak_device_bytes: 47_509_733_376,
        seconds_per_partition: 2.118,
    },
];

/// Query point counts of merkle-sha256 at 2^27, read from the timing-only parameters the
/// H200 made for it (the run itself did not fit the session's device time): h, l, a, b.
pub const MERKLE_2_27_COUNTS: (u64, u64, u64, u64) =
    (134_217_727, 134_085_427, 134_086_058, 35_623_988);

/// Host bytes of those parameters: every G1 query (96 B a point) and B over G2 (192 B).
pub fn merkle_2_27_params_bytes() -> u64 {
    let (h, l, a, b) = MERKLE_2_27_COUNTS;
    96 * (h + l + a + b) + 192 * b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::{Overrides, Plan, SizingInput, plan};

    fn input(run: &Measured, memory_limit: u64) -> SizingInput {
        SizingInput {
            circuit: run.circuit.to_string(),
            shape: run.circuit.shape(run.constraints).unwrap(),
            memory_limit,
            params_bytes: run.params_bytes,
            query_bytes: None,
            matrices_bytes: 0,
            headroom: 0.1,
            cpu_cores: CORES,
            synthesis_threads: 1,
            evaluations_held_twice: false,
            gpu_devices: 1,
            gpu_memory_bytes: Some(GPU_MEMORY),
            max_parallel_partitions: Some(run.partitions),
            overrides: Overrides {
                gpu_workers: run.gpu_workers_override,
                ..Overrides::default()
            },
        }
    }

    fn planned(run: &Measured) -> Plan {
        plan(&input(run, MEMORY_LIMIT)).unwrap()
    }

    fn within(what: &str, run: &Measured, predicted: u64, measured: u64) {
        let ratio = predicted as f64 / measured as f64;
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        println!(
            "{what}: {} 2^{} measured {:.2} GiB predicted {:.2} GiB ({:+.1}%)",
            run.circuit,
            run.constraints.trailing_zeros(),
            gib(measured),
            gib(predicted),
            (ratio - 1.0) * 100.0
        );
        assert!(
            (1.0..=1.10).contains(&ratio),
            "{what} of {} at {}: predicted {predicted} for a measured {measured} ({ratio:.3})",
            run.circuit,
            run.constraints
        );
    }

    #[test]
    fn the_model_chooses_the_plan_each_run_used() {
        for run in RUNS {
            let p = planned(run);
            assert_eq!(
                (p.partition_workers, p.channel_capacity, p.gpu_workers),
                (run.partition_workers, run.channel_capacity, run.gpu_workers),
                "{} at {}",
                run.circuit,
                run.constraints
            );
            assert_eq!(p.partition_budget, run.partition_workers);
        }
    }

    #[test]
    fn host_peaks_are_predicted_within_ten_percent_never_under() {
        for run in RUNS {
            within(
                "host peak",
                run,
                planned(run).predicted_peak_bytes,
                run.peak_rss_bytes,
            );
        }
    }

    #[test]
    fn device_peaks_are_predicted_within_ten_percent_never_under() {
        for run in RUNS {
            let gpu = planned(run).gpu.expect("a GPU plan");
            within(
                "device peak",
                run,
                gpu.predicted_device_bytes,
                run.peak_device_bytes,
            );
        }
    }

    /// A Filecoin-sized (2^27) boolean-heavy partition with its measured parameter size: the
    /// plans the model gives a 128 GiB and a 256 GiB pod with one H200 and 16 cores, and a
    /// 256 GiB pod with two H200s and 32 cores (not measured yet: see docs/memory-model.md).
    #[test]
    fn merkle_2_27_plans() {
        let run = Measured {
            circuit: CircuitKind::MerkleSha256,
            constraints: 1 << 27,
            partitions: 10,
            gpu_workers_override: None,
            partition_workers: 0,
            channel_capacity: 0,
            gpu_workers: 0,
            params_bytes: merkle_2_27_params_bytes(),
            peak_rss_bytes: 0,
            peak_device_bytes: 0,
            seconds_per_partition: 0.0,
        };
        let at_128 = plan(&input(&run, 128 << 30)).unwrap();
        assert_eq!(at_128.partition_workers, 3, "{at_128:?}");
        println!(
            "2^27 at 128 GiB: predicted {:.2} GiB",
            at_128.predicted_peak_bytes as f64 / (1u64 << 30) as f64
        );
        let at_256 = plan(&input(&run, 256 << 30)).unwrap();
        assert_eq!(at_256.partition_workers, 10, "{at_256:?}");
        // Two GPUs: four GPU-stage workers, each with its 4 GiB staging buffer.
        let mut two_gpus = input(&run, 256 << 30);
        two_gpus.cpu_cores = 32;
        two_gpus.gpu_devices = 2;
        let two = plan(&two_gpus).unwrap();
        assert_eq!((two.partition_workers, two.gpu_workers), (9, 4), "{two:?}");
        assert!(at_256.predicted_peak_bytes <= 256 << 30);
    }
}
