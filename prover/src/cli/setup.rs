//! What `prove` and `bench` share: the memory limit, the parameters, the plan.

use std::sync::Arc;

use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::groth16::R1csMatrices;
use proofpipe_pipeline::params::{CircuitParams, ParamsStore};
use proofpipe_pipeline::pipeline::PipelineConfig;
use proofpipe_pipeline::rss;
use proofpipe_pipeline::sizing::{
    MemoryLimit, OnDevices, Plan, SizingInput, detect_memory_limit, plan,
};

use proofpipe_kernels::GpuDevice;

use super::args::{JobArgs, SizingArgs, Synthesis, cpu_cores};

pub struct Prepared {
    pub limit: MemoryLimit,
    pub params: Arc<CircuitParams>,
    /// R1CS matrices, with `--synthesis matrices`.
    pub matrices: Option<Arc<R1csMatrices>>,
    pub plan: Plan,
}

impl Prepared {
    /// The pipeline configuration for the plan, with the matrices if any.
    pub fn pipeline_config(&self, job: &JobArgs) -> PipelineConfig {
        let mut config = PipelineConfig::from_plan(&self.plan);
        if let Some(matrices) = &self.matrices {
            config
                .matrices
                .insert((job.circuit, job.constraints), matrices.clone());
        }
        config
    }
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
    synthesis: Synthesis,
    source: ParamsSource<'_>,
    gpus: &[GpuDevice],
) -> Result<Prepared, ProverError> {
    if job.partitions() == 0 {
        return Err(ProverError::ZeroPartitions);
    }
    let shape = job.circuit.shape(job.constraints)?;
    let limit = detect_memory_limit(sizing.memory_limit)?;
    tracing::info!(bytes = limit.bytes, limit = %bytesize::ByteSize(limit.bytes), source = %limit.source, "memory limit");
    let matrices = match synthesis {
        Synthesis::OnePass => None,
        Synthesis::Matrices => Some(Arc::new(record_matrices(job, shape)?)),
    };
    // Refuse a hopeless limit before spending minutes on parameters.
    let mut input = SizingInput::new(job.circuit.to_string(), shape, limit.bytes)
        .with_params(
            proofpipe_pipeline::params::estimated_params_bytes(shape),
            None,
        )
        .with_matrices(matrices.as_ref().map_or(0, |m| m.heap_bytes()))
        .with_headroom(sizing.headroom)
        .with_cores(cpu_cores())
        .on_devices(gpus)
        .with_partitions(job.partitions() as usize)
        .with_overrides(sizing.overrides());
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
    input.query_bytes = Some(params.key.query_bytes());
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
        matrices,
        plan,
    })
}

/// The R1CS matrices of the job's circuit size, from its first partition (the structure
/// does not depend on the witness).
fn record_matrices(job: &JobArgs, shape: CircuitShape) -> Result<R1csMatrices, ProverError> {
    let started = std::time::Instant::now();
    let circuit = job.circuit.partition(job.constraints, 0, 0)?;
    let matrices = R1csMatrices::record(circuit, shape).map_err(|e| ProverError::Synthesis {
        partition: 0,
        message: format!("recording the R1CS matrices: {e}"),
    })?;
    tracing::info!(
        nonzeros = matrices.nonzeros(),
        bytes = %bytesize::ByteSize(matrices.heap_bytes()),
        seconds = started.elapsed().as_secs_f64(),
        "R1CS matrices recorded for two-pass synthesis"
    );
    Ok(matrices)
}
