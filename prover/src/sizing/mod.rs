//! Sizing the pipeline from a memory limit. The planner is the model's
//! ([`proofpipe_model::sizing`], shared with the operator); here are what only a prover
//! has: its cgroup's memory limit, the measured peaks the model is held to, and the
//! planner's errors as [`ProverError`]s.

pub mod measurements;
mod memory_limit;

pub use memory_limit::{LimitSource, MemoryLimit, detect_memory_limit, parse_memory_size};
pub use proofpipe_model::sizing::*;

use crate::error::ProverError;

/// Sizes the pipeline ([`proofpipe_model::sizing::plan`]), failing as a prover does.
pub fn plan(input: &SizingInput) -> Result<Plan, ProverError> {
    proofpipe_model::sizing::plan(input).map_err(ProverError::from)
}

#[cfg(test)]
mod tests;
