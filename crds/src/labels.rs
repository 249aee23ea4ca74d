//! Labels proofpipe puts on the objects it manages, and selects them by.

/// Label on prover pods naming the ProverPool they belong to; the pool's scale selector
/// matches on it.
pub const POOL_LABEL: &str = "proofpipe.dev/pool";

/// Label on a ProofJob naming the prover pod it is assigned to, so a prover can watch just
/// its own jobs.
pub const ASSIGNED_POD_LABEL: &str = "proofpipe.dev/assigned-pod";
