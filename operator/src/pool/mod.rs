//! ProverPools: the prover pods a pool needs ([`scaling`], [`autoscale`], [`decision`]), how
//! each is built ([`pod_spec`], [`prover_rbac`]), which waiting job goes to which prover
//! ([`assignment`]), the pool's status ([`status`]), and the reconciler that applies them.
//! How a prover pod is read is [`crate::shared::prover_pods`], read by the job too.

pub mod assignment;
pub mod autoscale;
pub mod decision;
pub(crate) mod events;
pub mod pod_spec;
pub mod prover_rbac;
pub(crate) mod reconcile;
pub mod scaling;
pub mod status;
