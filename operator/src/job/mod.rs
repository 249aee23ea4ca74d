//! ProofJobs: whether a job can fit its pool ([`proofpipe_crds::fit`]), its lifecycle as a
//! pure function ([`state`]), and the reconciler that applies it. Where a job waits is
//! [`crate::shared::queue`], read by the pool too; which prover takes it is the pool's
//! decision (`pool::assignment`).

pub(crate) mod events;
pub(crate) mod reconcile;
pub mod state;
