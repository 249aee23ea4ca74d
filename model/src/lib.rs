//! proofpipe's domain rules, shared by the operator, the gateway and the provers, over plain
//! data: no Kubernetes client, no proving code (ADR 0024). Each rule lives here once:
//!
//! - [`kinds`]: the Filecoin proof kinds a ProofJob may ask for, their registered proofs and
//!   partition counts, which fields each needs, whose verifier decides;
//! - [`queue`]: which jobs wait for a pool's provers, in the order they are served;
//! - [`progress`]: which partitions of a job are proved, by whose proofs count;
//! - [`sizing`]: the memory model and the pipeline planner the provers size themselves with,
//!   and the registered proofs' partition shapes, with which the operator holds a job that
//!   cannot fit its pool.

pub mod kinds;
pub mod progress;
pub mod queue;
pub mod sizing;
