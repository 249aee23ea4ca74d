//! `proofpipe-gateway`: the seed engine's gRPC API, `cuzk.v1.ProvingEngine` (vendored in
//! `proto/`, see its README), served over ProofJobs, so curio sends its proofs to a Kubernetes
//! GPU fleet unchanged.
//!
//! - [`submission`]: a SubmitProof request to the job it becomes (pure);
//! - [`attempts`]: which job a request id's submission goes to (pure);
//! - [`job_spec`]: that job as a ProofJob (pure);
//! - [`routes`]: which ProverPool proves each kind (pure);
//! - [`outcome`]: a job's state as AwaitProof's answer, queue positions, GetStatus (pure);
//! - [`cache`], [`artifacts`], [`service`], [`server`]: the I/O edges.

pub mod artifacts;
pub mod attempts;
pub mod auth;
pub mod cache;
pub mod error;
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
