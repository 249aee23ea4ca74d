//! proofpipe's prover: Groth16 proofs through a bounded-channel pipeline whose memory is
//! sized from the process's memory limit.
//!
//! - [`circuits`]: the benchmark circuits and their deterministic witnesses;
//! - [`params`]: cached, checked Groth16 parameters;
//! - [`filecoin`]: Filecoin PoRep C2 from a C1 output, through the pipeline;
//! - [`groth16`]: the prove split into stages over bellperson's public pieces;
//! - [`witness`]: circuits' witnesses computed natively, value for value as their gadgets
//!   allocate them (PoRep's two-pass synthesis writes them);
//! - [`sizing`]: the memory model and the planner (pure), and where the limit comes from;
//! - [`pipeline`]: the stages, their threads and the buffer tracker;
//! - [`daemon`]: the prover of a Kubernetes pod, proving the ProofJobs assigned to it;
//! - [`metrics`], [`rss`]: what is measured; [`bench`], [`plot`]: comparing and drawing it.

pub mod artifacts;
pub mod circuits;
pub mod daemon;
pub mod error;
pub mod filecoin;
pub mod groth16;
pub mod metrics;
pub mod params;
pub mod pipeline;
pub mod rss;
pub mod sizing;
pub mod witness;

pub use error::ProverError;
pub mod bench;
pub mod plot;
