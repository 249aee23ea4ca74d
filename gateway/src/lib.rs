//! `proofpipe-gateway`: the seed engine's gRPC API, `cuzk.v1.ProvingEngine` (vendored in
//! `proto/`, see its README), served over ProofJobs, so curio sends its proofs to a Kubernetes
//! GPU fleet unchanged.
//!
//! From the bottom layer up (a module uses those above it in this list, never one below;
//! `scripts/import-cycles.py gateway` checks that no two modules use each other):
//! - [`job_meta`]: the labels and annotations on the gateway's jobs (pure, a leaf);
//! - [`attempts`]: which job a request id's submission goes to (pure);
//! - [`submission`]: a SubmitProof request to the job it becomes (pure);
//! - [`routes`]: which ProverPool proves each kind (pure);
//! - [`job_spec`]: a submission's job as a ProofJob (pure);
//! - [`outcome`]: a job's state as AwaitProof's answer, queue positions, GetStatus (pure);
//! - [`cache`], [`artifacts`], [`service`], [`server`]: the I/O edges.

pub mod artifacts;
pub mod attempts;
pub mod auth;
pub mod cache;
pub mod error;
pub mod job_meta;
pub mod job_spec;
pub mod metrics;
pub mod observe;
pub mod outcome;
pub mod routes;
pub mod server;
pub mod service;
pub mod submission;

pub mod proto {
    //! The generated `cuzk.v1` messages, client and server.
    #![allow(clippy::all, clippy::pedantic)]
    tonic::include_proto!("cuzk.v1");
}

pub use error::GatewayError;
