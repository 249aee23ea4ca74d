//! What `job/` and `pool/` both read, below both of them so that neither
//! imports the other: a prover pod as the decisions see it ([`prover_pods`]), and which jobs
//! of a pool wait, in what order ([`queue`]).

pub mod prover_pods;
pub mod queue;
