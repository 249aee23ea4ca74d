//! Sizing the pipeline from a memory limit. The planner is the model's
//! ([`proofpipe_model::sizing`], shared with the operator; its errors are
//! [`crate::error::ProverError::Sizing`]); here is what only a prover has: its cgroup's
//! memory limit, and the measured peaks the model is held to.

pub mod measurements;
mod memory_limit;

pub use memory_limit::{LimitSource, MemoryLimit, detect_memory_limit, parse_memory_size};
pub use proofpipe_model::sizing::*;

/// The devices a plan fits its GPU workers into, from the backend's list.
pub trait OnDevices {
    /// `gpus` in use (none: the GPU stage runs on the CPU), the plan fitted to the smallest.
    fn on_devices(self, gpus: &[proofpipe_kernels::GpuDevice]) -> Self;
}

impl OnDevices for SizingInput {
    fn on_devices(self, gpus: &[proofpipe_kernels::GpuDevice]) -> Self {
        self.with_gpus(gpus.len(), gpus.iter().map(|gpu| gpu.total_bytes).min())
    }
}

#[cfg(test)]
mod tests;
