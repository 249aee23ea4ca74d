//! ProofJobs: where a job waits ([`queue`]), whether it can fit its pool ([`proofpipe_crds::fit`]), which
//! prover takes it ([`assignment`]), its lifecycle as a pure function ([`state`]), and the
//! reconciler that applies it.

pub mod assignment;
pub mod queue;
pub(crate) mod reconcile;
pub mod state;
