//! proofpipe's Kubernetes API, group `proofpipe.dev`, version `v1alpha1`:
//!
//! - [`ProofJob`] asks for Groth16 proofs, split into partitions: of a Filecoin sector, or of
//!   a synthetic benchmark circuit;
//! - [`ProverPool`] runs the GPU prover pods that take those jobs from a shared queue.
//!
//! Validation lives in the generated schemas (bounds, defaults and CEL rules enforced by the
//! API server), so this crate is plain data plus pure helpers: no client, no I/O.

mod conditions;
mod filecoin;
pub mod fit;
mod labels;
mod pipeline;
mod pod_template;
mod proof_job;
mod prover_pool;
mod quantity;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use conditions::{CONDITION_REASON_PATTERN, CONDITION_TYPE_PATTERN};
pub use filecoin::{
    FilecoinProofKind, FilecoinResult, FilecoinWork, InputRef, KIND_FIELDS, OutputRef, POST_PROOFS,
    SEAL_PROOFS, UPDATE_PROOFS, forbidden_fields, post_proof_partitions, seal_proof_partitions,
    update_proof_partitions,
};
pub use labels::{ASSIGNED_POD_LABEL, POOL_LABEL};
pub use pipeline::{InvalidPipelineOverride, PipelineOverride, parse_pipeline_override};
pub use pod_template::{
    ENV_NAME_PATTERN, GPU_RESOURCE, PROVER_CONTAINER, PodTemplateMetadata, ProverPodTemplate,
    RESERVED_ENV_PREFIX, RESERVED_LABEL_PREFIX, RESERVED_LABELS, RESERVED_VOLUME_PREFIX,
    USER_PROVER_ENV,
};
pub use proof_job::{
    AttemptFailure, CIRCUIT_MIN_CONSTRAINTS, CIRCUITS, GPU_LOST_REASON, MAX_CONSTRAINTS,
    MAX_PARTITIONS, MAX_STATUS_PUBLIC_INPUTS, MIN_CONSTRAINTS, PartitionProof, ProofJob,
    ProofJobPhase, ProofJobSpec, ProofJobStatus, ProverFailure, StageSeconds,
    circuit_min_constraints,
};
pub use prover_pool::{
    AutoscalingSpec, AutoscalingStatus, GpuDeviceReport, GpuLoss, GpuReport, MAX_POOL_NAME,
    POOL_NAME_PATTERN, PipelineSizing, PipelineSpec, ProverPhase, ProverPool, ProverPoolSpec,
    ProverPoolStatus, ProverStatus, StageBuffers, default_progress_deadline_seconds,
};
pub use quantity::quantity_bytes;

/// Both CustomResourceDefinitions, ProofJob first.
pub fn crds() -> [CustomResourceDefinition; 2] {
    [ProofJob::crd(), ProverPool::crd()]
}
