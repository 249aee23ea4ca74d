//! The gateway's one error type. Every variant says what went wrong and what to do; each maps
//! to the gRPC status code a client can act on.

use std::net::SocketAddr;
use std::path::PathBuf;

use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The request is malformed or names something proofpipe does not know.
    #[error("{0}")]
    InvalidRequest(String),

    /// A valid request for something proofpipe does not serve (yet).
    #[error("{0}")]
    Unsupported(String),

    /// The job name of a request id is taken by a job that is not of that request id (made by
    /// hand, or another id with the same name digest).
    #[error(
        "ProofJob {job}, the name of request_id {request_id:?}, is taken by a job of another \
         request id; use another request_id, or delete that job"
    )]
    RequestIdReused { request_id: String, job: String },

    /// Other submissions of the same request id kept winning the race to create its job.
    #[error(
        "request_id {request_id:?}: concurrent submissions of it kept creating its jobs first; \
         submit again"
    )]
    AttemptRace { request_id: String },

    /// `--max-queued` submissions are already waiting for a prover.
    #[error(
        "{queued} proofs are already waiting for a prover in ProverPool {pool} (the gateway's \
         --max-queued is {limit}); submit again later, or add provers"
    )]
    QueueFull {
        queued: usize,
        limit: usize,
        pool: String,
    },

    #[error(
        "no proof job {job:?} in namespace {namespace}: it was never submitted here, was \
         cancelled, or was deleted after it finished (ttlSecondsAfterFinished)"
    )]
    JobNotFound { job: String, namespace: String },

    #[error("ProofJob {job} is a synthetic benchmark job: it has no Filecoin proof to return")]
    NotFilecoin { job: String },

    #[error(
        "ProverPool {pool} does not exist in namespace {namespace}: create it, or start the \
         gateway with --pool routing this kind to one that does"
    )]
    PoolMissing { pool: String, namespace: String },

    #[error("the gateway is shutting down; call again (another replica, or this one restarted)")]
    ShuttingDown,

    /// The proof in a finished job's status cannot be read.
    #[error("ProofJob {job} succeeded but its status.filecoin.proof is unreadable: {message}")]
    BadProof { job: String, message: String },

    /// Reading or writing the artifact store failed.
    #[error("{action} {url}: {source}")]
    Artifact {
        action: &'static str,
        url: String,
        #[source]
        source: object_store::Error,
    },

    /// A call to the Kubernetes API failed.
    #[error("{action}: {source}")]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },

    /// The artifact store URL cannot be used.
    #[error("artifact store {url}: {message}")]
    ArtifactStore { url: String, message: String },

    #[error("reading the bearer token from {}: {source}; mount the token Secret there or pass --allow-unauthenticated", path.display())]
    TokenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("the bearer token in {} is empty; put a token in the Secret", path.display())]
    EmptyToken { path: PathBuf },

    #[error("TLS: {0}")]
    Tls(String),

    #[error("serving on {addr}: {source}")]
    Serve {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },

    #[error("gRPC server on {addr}: {source}")]
    Grpc {
        addr: SocketAddr,
        #[source]
        source: tonic::transport::Error,
    },

    #[error("connecting to the Kubernetes API: {0}")]
    KubeConfig(#[source] kube::Error),
}

impl GatewayError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidRequest(message.into())
    }

    pub fn kube(action: impl Into<String>, source: kube::Error) -> Self {
        Self::Kube {
            action: action.into(),
            source,
        }
    }

    /// The gRPC code for this error.
    pub fn code(&self) -> Code {
        match self {
            Self::InvalidRequest(_) => Code::InvalidArgument,
            Self::Unsupported(_) => Code::Unimplemented,
            Self::RequestIdReused { .. } => Code::AlreadyExists,
            Self::QueueFull { .. } => Code::ResourceExhausted,
            Self::JobNotFound { .. } => Code::NotFound,
            Self::NotFilecoin { .. } | Self::PoolMissing { .. } => Code::FailedPrecondition,
            Self::BadProof { .. } => Code::DataLoss,
            // The store or the API server may be back on the client's retry.
            Self::Artifact { .. }
            | Self::Kube { .. }
            | Self::ShuttingDown
            | Self::AttemptRace { .. } => Code::Unavailable,
            Self::ArtifactStore { .. }
            | Self::TokenFile { .. }
            | Self::EmptyToken { .. }
            | Self::Tls(_)
            | Self::Serve { .. }
            | Self::Grpc { .. }
            | Self::KubeConfig(_) => Code::Internal,
        }
    }
}

impl From<GatewayError> for Status {
    fn from(error: GatewayError) -> Self {
        Status::new(error.code(), error.to_string())
    }
}
