//! The labels and annotations on the gateway's ProofJobs, and what they say of a job: the keys
//! [`job_spec`](crate::job_spec) writes and [`attempts`](crate::attempts) reads back. A leaf:
//! it uses no other module of the gateway.

use proofpipe_crds::ProofJob;

/// `app.kubernetes.io/managed-by` of the jobs the gateway creates.
pub const MANAGED_BY: &str = "proofpipe-gateway";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Label with the seed engine's name of the proof kind (`porep-c2`, `snap-update`): `kubectl
/// get pj -l proofpipe.dev/proof-kind=snap-update`.
pub const PROOF_KIND_LABEL: &str = "proofpipe.dev/proof-kind";
/// The caller's request id, whole (the job name holds a readable prefix and a digest of it).
pub const REQUEST_ID_ANNOTATION: &str = "proofpipe.dev/request-id";
/// 12 hex digits of the SHA-256 of the request id, on every attempt's job: `kubectl get pj -l
/// proofpipe.dev/request-key=<key>` lists a request id's attempts.
pub const REQUEST_KEY_LABEL: &str = "proofpipe.dev/request-key";
/// Which attempt of its request id a job is (1, 2, ...; absent means 1).
pub const ATTEMPT_ANNOTATION: &str = "proofpipe.dev/attempt";
/// The job an attempt followed, its outcome and why a new attempt started, e.g.
/// `porep-1000-1-3f2a9c1b0d4e (Failed; previous_failed)`.
pub const REPLACES_ANNOTATION: &str = "proofpipe.dev/replaces";
/// The API's priority name (`NORMAL`, `CRITICAL`...), beside the `spec.priority` it maps to.
pub const PRIORITY_ANNOTATION: &str = "proofpipe.dev/cuzk-priority";

/// The request id a job was created for, if the gateway created it.
pub fn request_id_of(job: &ProofJob) -> Option<&str> {
    job.metadata
        .annotations
        .as_ref()?
        .get(REQUEST_ID_ANNOTATION)
        .map(String::as_str)
}
