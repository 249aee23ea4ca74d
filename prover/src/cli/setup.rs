//! What `prove` and `bench` share: the memory limit, the parameters, the plan.

use std::sync::Arc;

use proofpipe_prover::ProverError;
use proofpipe_prover::params::{CircuitParams, ParamsStore};
use proofpipe_prover::rss;
use proofpipe_prover::sizing::{MemoryLimit, Plan, SizingInput, detect_memory_limit, plan};

use proofpipe_kernels::GpuDevice;

use super::{JobArgs, SizingArgs, cpu_cores};

pub struct Prepared {
    pub limit: MemoryLimit,
    pub params: Arc<CircuitParams>,
    pub plan: Plan,
}

/// Where `prepare` gets the parameters.
pub enum ParamsSource<'a> {
    /// The on-disk cache (generated on first use).
    Store(&'a ParamsStore),
    /// Made in memory, timing-only (`bench --timing-only-params`).
    TimingOnly,
}

/// `gpus`: the devices of the chosen backend (empty for the CPU backend).
pub fn prepare(
    job: &JobArgs,
    sizing: &SizingArgs,
    source: ParamsSource<'_>,
    gpus: &[GpuDevice],
) -> Result<Prepared, ProverError> {
    if job.partitions == 0 {
        return Err(ProverError::ZeroPartitions);
    }
    let shape = job.circuit.shape(job.constraints)?;
    let limit = detect_memory_limit(sizing.memory_limit)?;
    tracing::info!(bytes = limit.bytes, limit = %bytesize::ByteSize(limit.bytes), source = %limit.source, "memory limit");
    // Refuse a hopeless limit before spending minutes on parameters.
    let mut input = SizingInput {
        circuit: job.circuit,
        shape,
        memory_limit: limit.bytes,
        params_bytes: proofpipe_prover::params::estimated_params_bytes(shape),
        headroom: sizing.headroom,
        cpu_cores: cpu_cores(),
        gpu_devices: gpus.len(),
        gpu_memory_bytes: gpus.iter().map(|g| g.total_bytes).min(),
        max_parallel_partitions: Some(job.partitions as usize),
        overrides: sizing.overrides(),
    };
    plan(&input)?;
    let params = match source {
        ParamsSource::Store(store) => {
            let (params, origin) = store.get(job.circuit, job.constraints)?;
            tracing::info!(circuit = %job.circuit, constraints = job.constraints, ?origin, bytes = params.heap_bytes(), "parameters ready");
            params
        }
        ParamsSource::TimingOnly => {
            Arc::new(CircuitParams::timing_only(job.circuit, job.constraints)?)
        }
    };
    // The generation's transient memory is not the pipeline's: measure the peak from here.
    rss::reset_peak_rss();
    input.params_bytes = params.heap_bytes();
    let plan = plan(&input)?;
    tracing::info!(
        partition_workers = plan.partition_workers,
        channel_capacity = plan.channel_capacity,
        gpu_workers = plan.gpu_workers,
        predicted_peak = %bytesize::ByteSize(plan.predicted_peak_bytes),
        gpu_device_bytes = ?plan.gpu.as_ref().map(|g| bytesize::ByteSize(g.predicted_device_bytes).to_string()),
        "pipeline sized from the memory limit"
    );
    Ok(Prepared {
        limit,
        params,
        plan,
    })
}
