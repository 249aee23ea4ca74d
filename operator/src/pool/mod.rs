//! ProverPools: the prover pods a pool needs ([`scaling`], [`autoscale`], [`decision`]), how
//! each is built ([`pod_spec`], [`prover_rbac`]), how they are read ([`prover_pods`]), the
//! pool's status ([`status`]), and the reconciler that applies them.

pub mod autoscale;
pub mod decision;
pub mod pod_spec;
pub mod prover_pods;
pub mod prover_rbac;
pub(crate) mod reconcile;
pub mod scaling;
pub mod status;
