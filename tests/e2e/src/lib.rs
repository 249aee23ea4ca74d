//! proofpipe's end-to-end harness: the real `proofpipe-operator` and `proofpipe-prover`
//! binaries against an API server without kubelets (`../shared/kube-testenv`), with
//! [`PodRunner`] playing the kubelet.
//!
//! - [`runner`]: the kubelet stand-in, over the pure pieces [`env`] (Downward API),
//!   [`quantity`] (memory limits), [`cgroup`] (where pod cgroups go) and [`status`] (what a
//!   kubelet reports), and [`process`] (starting and signalling containers);
//! - [`stack`]: a scenario's whole product (namespace, operator, runner), built from
//!   [`cluster`] and [`wait`] (re-exported from `proofpipe-testkit`, which the operator's
//!   cluster tests share), [`fixtures`], [`binaries`] and [`operator`];
//! - [`assignments`]: the record of ProofJob assignments the restart scenario checks;
//! - [`verify`]: finished jobs' proofs checked independently of the daemon; [`prover_metrics`]:
//!   a prover daemon's `/metrics`, at the address it logged;
//! - [`filecoin`]: the Filecoin scenarios' test data and their verifiers' checks
//!   (`verify_seal`, `verify_empty_sector_update_proof`); [`s3`]: their S3-compatible store;
//! - [`gateway`]: the gateway as a test's child process; [`doc_steps`]: the marked steps of a
//!   page CI runs (docs/quickstart-filecoin.md);
//! - [`stand_ins`], [`gateway_load`]: the kubelet stand-in and /proc reads of the benchmarks,
//!   and the gateway load run its example and test share.

pub mod assignments;
pub mod binaries;
pub mod cgroup;
pub mod doc_steps;
pub mod env;
pub mod filecoin;
pub mod fixtures;
pub mod gateway;
pub mod gateway_load;
pub mod operator;
pub mod process;
pub mod prover_metrics;
pub mod quantity;
pub mod runner;
pub mod s3;
pub mod stack;
pub mod stand_ins;
pub mod status;
pub mod verify;

pub use proofpipe_testkit::{cluster, wait};
pub use runner::{ImageMap, PodRunner};
