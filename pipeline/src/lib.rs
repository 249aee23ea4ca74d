//! The Groth16 proving pipeline: partitions synthesized on CPU workers, handed through a bounded
//! channel to the GPU stage and finished on the CPU, with memory sized from the process's limit.
//! No Kubernetes, no async runtime and no Filecoin here: a proof kind is a
//! [`pipeline::PartitionSource`] handed in from above (the Filecoin crate's kinds, the
//! benchmark circuits of [`circuits`]).
//!
//! - [`circuits`]: the benchmark circuits, their shapes and deterministic witnesses;
//! - [`params`]: cached, checked Groth16 parameters;
//! - [`groth16`]: the prove split into stages over bellperson's public pieces, the R1CS
//!   matrices and the two-pass (native witness times matrices) synthesis;
//! - [`witness`]: where a native witness writes its values, in the gadgets' order;
//! - [`sizing`]: the memory model and the planner (pure), and where the limit comes from;
//! - [`pipeline`]: the stages, their threads and the buffer tracker;
//! - [`metrics`], [`rss`]: what is measured;
//! - [`error`]: every way proving fails, and what that means for a job; [`files`]: files
//!   written whole or not at all.

pub mod circuits;
pub mod error;
pub mod files;
pub mod groth16;
pub mod metrics;
pub mod params;
pub mod pipeline;
pub mod rss;
pub mod sizing;
pub mod witness;

pub use error::ProverError;
