//! Proving backends for the pipeline's GPU stage.
//!
//! The pipeline never calls FFT or MSM code directly: it calls a [`ProvingBackend`], so the
//! same pipeline runs on the CPU (always available, [`CpuBackend`]) or on a GPU backend
//! (added behind the `cuda` feature). A backend is chosen once per process, at run time.

mod backend;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod domain;
mod error;
mod gather;
mod gpu_options;
mod host_memory;
mod ledger;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod split;
mod stream;

use std::sync::Arc;

pub use ec_gpu_gen::multiexp_cpu::DensityTracker;

pub use backend::{
    Bases, Density, GpuDevice, KernelStat, Placement, ProvingBackend, QuotientBuffers, Reservation,
    holds_device,
};
pub use cpu::CpuBackend;
#[cfg(feature = "cuda")]
pub use cuda::CudaBackend;
pub use domain::domain_size;
pub use error::{DEVICE_LOST_ERRORS, KernelError, device_lost};
pub use gpu_options::GpuOptions;
pub use host_memory::{
    EvalAlloc, Evaluations, HostPool, evaluations, heap_evaluations, into_std_vec,
};
pub use ledger::DeviceLedger;
pub use stream::{
    DEFAULT_STREAM_ENGINE_POINTS, GPU_CONTEXT_BYTES, GPU_MEMORY_ENV, GpuMemoryConfig, MAX_SM_COUNT,
    STREAM_ENGINE_POINTS_ENV, gpu_memory_cap_from_env, msm_engine_device_bytes,
    msm_temp_device_bytes, msm_window_bits, parse_gpu_memory, stream_batches,
    stream_engine_points_from_env, stream_schedule_fits, streamed_msm_device_bytes,
};

/// Set to `cpu` to keep the GPU stage on the CPU even where a GPU is present.
pub const BACKEND_ENV: &str = "PROOFPIPE_BACKEND";

/// The backend this process proves with, and why it was chosen (for the one log line that
/// says so): CUDA when this build has it and a GPU is usable, else the CPU; a GPU backend's
/// options from the environment ([`GpuOptions::from_env`]).
pub fn select_backend() -> (Arc<dyn ProvingBackend>, String) {
    select_backend_with(GpuOptions::from_env())
}

/// [`select_backend`] with these GPU options.
pub fn select_backend_with(options: GpuOptions) -> (Arc<dyn ProvingBackend>, String) {
    select_backend_with_memory(options, None)
}

/// [`select_backend`] with these GPU options and, when given, these memory settings instead
/// of the environment's (a benchmark that compares caps in one process).
pub fn select_backend_with_memory(
    options: GpuOptions,
    memory: Option<GpuMemoryConfig>,
) -> (Arc<dyn ProvingBackend>, String) {
    if std::env::var(BACKEND_ENV).is_ok_and(|v| v == "cpu") {
        return (
            Arc::new(CpuBackend::new()),
            format!("{BACKEND_ENV}=cpu; the GPU stage runs on the CPU"),
        );
    }
    select_gpu_backend(options, memory)
}

#[cfg(feature = "cuda")]
fn select_gpu_backend(
    options: GpuOptions,
    memory: Option<GpuMemoryConfig>,
) -> (Arc<dyn ProvingBackend>, String) {
    let made = match memory {
        Some(memory) => CudaBackend::with_memory(options, memory),
        None => CudaBackend::with_options(options),
    };
    match made {
        Ok(b) => {
            let devices = b.gpu_devices();
            let list = devices
                .iter()
                .map(|d| {
                    format!(
                        "#{} sm_{}{} {} SMs {:.0} GiB",
                        d.id,
                        d.compute_capability.0,
                        d.compute_capability.1,
                        d.sm_count,
                        d.total_bytes as f64 / (1u64 << 30) as f64
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let cap = match b.memory_config().cap {
                Some(cap) => format!(" (capped by {GPU_MEMORY_ENV}={})", bytesize::ByteSize(cap)),
                None => String::new(),
            };
            (
                Arc::new(b),
                format!(
                    "CUDA on {} GPU(s): {list}{cap}; GPU options {}",
                    devices.len(),
                    options.name()
                ),
            )
        }
        Err(e) => (
            Arc::new(CpuBackend::new()),
            format!(
                "this build has CUDA but it cannot be used ({e}); the GPU stage runs on the CPU"
            ),
        ),
    }
}

#[cfg(not(feature = "cuda"))]
fn select_gpu_backend(
    _: GpuOptions,
    _: Option<GpuMemoryConfig>,
) -> (Arc<dyn ProvingBackend>, String) {
    (
        Arc::new(CpuBackend::new()),
        "this build has no GPU backend (built without the `cuda` feature); the GPU stage runs on the CPU".into(),
    )
}
