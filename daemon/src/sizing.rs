//! Sizing a pipeline for one job, and how that sizing is shown in the pool status.

use proofpipe_crds::PipelineSizing;

use proofpipe_kernels::GpuDevice;

use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::sizing::{
    BasesPlacement, OnDevices, Overrides, Plan, SizingInput, SynthesisProfile, usable_bytes,
};

/// The fraction of the memory limit kept free, as `prove` does by default.
pub const HEADROOM: f64 = proofpipe_model::sizing::PROVER_HEADROOM;

/// What a parameter set may take within `limit`: the limit less the plan's headroom, the one
/// budget the main lane and the urgent lane load parameters against.
pub fn parameter_budget(limit: u64) -> u64 {
    usable_bytes(limit, HEADROOM)
}

/// The planner's input for a job proving `work` with `todo` partitions left (only those can
/// be in flight at once), beside parameters and R1CS matrices of the given bytes. `gpus` are the devices of the process's backend (none when the GPU
/// stage runs on the CPU); the plan fits its GPU workers into the smallest one.
#[allow(clippy::too_many_arguments)]
pub fn sizing_input(
    work: String,
    todo: usize,
    shape: CircuitShape,
    memory_limit: u64,
    (params_bytes, matrices_bytes): (u64, u64),
    cpu_cores: usize,
    synthesis: SynthesisProfile,
    gpus: &[GpuDevice],
    page_locked_evaluations: bool,
    overrides: Overrides,
) -> SizingInput {
    SizingInput::new(work, shape, memory_limit)
        .with_params(params_bytes, None)
        .with_matrices(matrices_bytes)
        .with_headroom(HEADROOM)
        .with_cores(cpu_cores)
        .with_synthesis(synthesis, page_locked_evaluations)
        .on_devices(gpus)
        .with_partitions(todo)
        .with_overrides(overrides)
}

/// The plan as the pool status shows it.
pub fn reported_sizing(plan: &Plan) -> PipelineSizing {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let bytes = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    PipelineSizing {
        partition_workers: count(plan.partition_workers),
        channel_capacity: count(plan.channel_capacity),
        gpu_workers: count(plan.gpu_workers),
        predicted_peak_bytes: bytes(plan.predicted_peak_bytes),
        memory_limit_bytes: Some(bytes(plan.memory_limit)),
        memory_estimate: memory_estimate(plan.predicted_peak_bytes, plan.memory_limit),
        predicted_device_bytes: plan.gpu.as_ref().map(|g| bytes(g.predicted_device_bytes)),
        streamed_queries: plan.gpu.as_ref().map_or_else(Vec::new, |g| {
            g.placement
                .queries(BasesPlacement::Streamed)
                .into_iter()
                .map(String::from)
                .collect()
        }),
    }
}

/// `41.2GiB/64GiB`: predicted peak against the limit, one decimal, none when whole.
pub fn memory_estimate(predicted_peak: u64, limit: u64) -> String {
    format!("{}/{}", gib(predicted_peak), gib(limit))
}

fn gib(bytes: u64) -> String {
    let tenths = (bytes as f64 / f64::from(1u32 << 30) * 10.0).round() as u64;
    if tenths.is_multiple_of(10) {
        format!("{}GiB", tenths / 10)
    } else {
        format!("{}.{}GiB", tenths / 10, tenths % 10)
    }
}

/// A plan for one 2^24-constraint partition on a 6 GiB GPU: some of its 9 GiB of bases
/// stream (tests of what the status and the metrics show of it).
#[cfg(test)]
pub(crate) fn plan_that_streams() -> Plan {
    use proofpipe_pipeline::circuits::CircuitKind;
    use proofpipe_pipeline::sizing::{QueryBytes, plan};
    let constraints = 1 << 24;
    let shape = CircuitKind::MulChain.shape(constraints).unwrap();
    let gpu = GpuDevice {
        id: 0,
        total_bytes: 6 << 30,
        free_bytes: 6 << 30,
        compute_capability: (9, 0),
        sm_count: 132,
    };
    let n = constraints as u64;
    let queries = QueryBytes::from_counts(n, n, n, n);
    let mut input = sizing_input(
        "test".into(),
        1,
        shape,
        64 << 30,
        (queries.total(), 0),
        16,
        SynthesisProfile::ONE_CORE,
        &[gpu],
        false,
        Overrides::default(),
    );
    input.query_bytes = Some(queries);
    plan(&input).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proofpipe_pipeline::circuits::CircuitKind;
    use proofpipe_pipeline::pipeline::JobSpec;
    use proofpipe_pipeline::sizing::plan;

    #[test]
    fn memory_estimates_read_like_kubectl_columns() {
        assert_eq!(memory_estimate(44_238_822_195, 64 << 30), "41.2GiB/64GiB");
        assert_eq!(memory_estimate(200 << 20, 1 << 30), "0.2GiB/1GiB");
    }

    #[test]
    fn a_job_is_sized_for_its_remaining_partitions() {
        let mut job = JobSpec::new(CircuitKind::MulChain, 1024, 8);
        job.skip = vec![0, 1, 2, 3, 4, 5];
        let shape = job.circuit.shape(job.constraints).unwrap();
        let input = sizing_input(
            job.circuit.to_string(),
            job.todo().len(),
            shape,
            16 << 30,
            (1 << 20, 0),
            16,
            SynthesisProfile::ONE_CORE,
            &[],
            false,
            Overrides::default(),
        );
        assert_eq!(input.max_parallel_partitions, Some(2));
        let plan = plan(&input).unwrap();
        assert_eq!(plan.partition_workers, 2);
        let sizing = reported_sizing(&plan);
        assert_eq!(sizing.partition_workers, 2);
        assert_eq!(sizing.memory_limit_bytes, Some(16 << 30));
        assert!(
            sizing.memory_estimate.ends_with("/16GiB"),
            "{}",
            sizing.memory_estimate
        );
        // On the CPU backend: no GPU figures.
        assert_eq!(sizing.predicted_device_bytes, None);
        assert!(sizing.streamed_queries.is_empty());
    }

    #[test]
    fn the_status_names_the_queries_that_stream_and_the_gpu_memory() {
        let plan = plan_that_streams();
        let gpu = plan.gpu.clone().unwrap();
        let streamed = gpu.placement.queries(BasesPlacement::Streamed);
        assert!(!streamed.is_empty() && streamed[0] == "h", "{gpu:?}");
        let sizing = reported_sizing(&plan);
        assert_eq!(sizing.streamed_queries, streamed);
        assert_eq!(
            sizing.predicted_device_bytes,
            Some(gpu.predicted_device_bytes as i64)
        );
        assert!(gpu.predicted_device_bytes <= 6 << 30);
    }
}
