//! proofpipe's end-to-end harness: the real `proofpipe-operator` and `proofpipe-prover`
//! binaries against an API server without kubelets (`../shared/kube-testenv`), with
//! [`PodRunner`] playing the kubelet.
//!
//! - [`runner`]: the kubelet stand-in, over the pure pieces [`env`] (Downward API),
//!   [`quantity`] (memory limits), [`cgroup`] (where pod cgroups go) and [`status`] (what a
//!   kubelet reports), and [`process`] (starting and signalling containers);
//! - [`cluster`], [`fixtures`], [`binaries`], [`operator`], [`wait`]: what a scenario needs
//!   around it: a namespace with the CRDs, YAML objects, the binaries, the operator process,
//!   and polling with a deadline.

pub mod binaries;
pub mod cgroup;
pub mod cluster;
pub mod env;
pub mod fixtures;
pub mod operator;
pub mod process;
pub mod quantity;
pub mod runner;
pub mod status;
pub mod wait;

pub use runner::{ImageMap, PodRunner};
