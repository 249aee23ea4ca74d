//! Sizing the pipeline from a memory limit. The planner is the model's
//! ([`proofpipe_model::sizing`], shared with the operator; its errors are
//! [`crate::error::ProverError::Sizing`]); here is what only a prover has: its cgroup's
//! memory limit, and the measured peaks the model is held to.

pub mod measurements;
mod memory_limit;

pub use memory_limit::{LimitSource, MemoryLimit, detect_memory_limit, parse_memory_size};
pub use proofpipe_model::sizing::*;

#[cfg(test)]
mod tests;
