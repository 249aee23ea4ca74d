//! The ProofJob a submission becomes: built from plain data, no client.

use std::collections::BTreeMap;

use kube::api::ObjectMeta;
use proofpipe_crds::{FilecoinProofKind, FilecoinWork, InputRef, ProofJob, ProofJobSpec};

use crate::submission::Submission;

/// `app.kubernetes.io/managed-by` of the jobs the gateway creates.
pub const MANAGED_BY: &str = "proofpipe-gateway";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Label with the seed engine's name of the proof kind (`porep-c2`): `kubectl get pj -l
/// proofpipe.dev/proof-kind=porep-c2`.
pub const PROOF_KIND_LABEL: &str = "proofpipe.dev/proof-kind";
/// The caller's request id, whole (the job name holds a readable prefix and a digest of it).
pub const REQUEST_ID_ANNOTATION: &str = "proofpipe.dev/request-id";
/// The API's priority name (`NORMAL`, `CRITICAL`...), beside the `spec.priority` it maps to.
pub const PRIORITY_ANNOTATION: &str = "proofpipe.dev/cuzk-priority";

/// How the gateway's jobs are made.
#[derive(Clone, Debug)]
pub struct JobDefaults {
    /// The ProverPool that proves them.
    pub pool: String,
    /// `spec.backoffLimit`.
    pub backoff_limit: i32,
    /// `spec.ttlSecondsAfterFinished`: finished jobs (and then their inputs) are removed after
    /// this long; an AwaitProof after that answers NOT_FOUND.
    pub ttl_seconds_after_finished: Option<i32>,
}

/// The job for `submission`, its C1 output at `input_url`.
pub fn proof_job(submission: &Submission, input_url: String, defaults: &JobDefaults) -> ProofJob {
    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned()),
        (PROOF_KIND_LABEL.to_owned(), "porep-c2".to_owned()),
    ]);
    let annotations = BTreeMap::from([
        (
            REQUEST_ID_ANNOTATION.to_owned(),
            submission.request_id.clone(),
        ),
        (
            PRIORITY_ANNOTATION.to_owned(),
            submission.priority_name.to_owned(),
        ),
    ]);
    ProofJob {
        metadata: ObjectMeta {
            name: Some(submission.job_name.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: ProofJobSpec {
            pool: defaults.pool.clone(),
            filecoin: Some(FilecoinWork {
                kind: FilecoinProofKind::PoRepC2,
                seal_proof: submission.seal_proof.to_owned(),
                miner_id: Some(submission.miner_id),
                prover_id: None,
                sector_number: submission.sector_number,
                input: InputRef {
                    url: input_url,
                    sha256: submission.input_sha256.clone(),
                },
                output: None,
            }),
            circuit: None,
            constraints: None,
            partitions: None,
            seed: 0,
            priority: submission.priority,
            suspend: false,
            backoff_limit: defaults.backoff_limit,
            active_deadline_seconds: None,
            ttl_seconds_after_finished: defaults.ttl_seconds_after_finished,
        },
        status: None,
    }
}

/// The request id a job was created for, if the gateway created it.
pub fn request_id_of(job: &ProofJob) -> Option<&str> {
    job.metadata
        .annotations
        .as_ref()?
        .get(REQUEST_ID_ANNOTATION)
        .map(String::as_str)
}

/// The SHA-256 of a Filecoin job's input.
pub fn input_sha256_of(job: &ProofJob) -> Option<&str> {
    job.spec
        .filecoin
        .as_ref()
        .map(|work| work.input.sha256.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::submission::{Submission, job_name};

    #[test]
    fn the_job_carries_the_request_and_passes_the_crd_rules_it_can_see() {
        let submission = Submission {
            request_id: "porep-1000-7".into(),
            job_name: job_name("porep-1000-7"),
            seal_proof: "StackedDrg32GiBV1_1",
            priority: 100,
            priority_name: "HIGH",
            miner_id: 1000,
            sector_number: Some(7),
            input_sha256: "ab".repeat(32),
        };
        let defaults = JobDefaults {
            pool: "gpu".into(),
            backoff_limit: 3,
            ttl_seconds_after_finished: Some(3600),
        };
        let job = proof_job(&submission, "s3://b/k".into(), &defaults);
        assert_eq!(request_id_of(&job), Some("porep-1000-7"));
        assert_eq!(input_sha256_of(&job), Some("ab".repeat(32).as_str()));
        assert_eq!(job.spec.partition_count(), 10);
        assert_eq!(job.spec.priority, 100);
        let value = serde_json::to_value(&job).unwrap();
        assert_eq!(value["spec"]["filecoin"]["sectorNumber"], 7);
        assert_eq!(value["spec"]["filecoin"]["kind"], "PoRepC2");
        // A Filecoin job leaves circuit, constraints and partitions unset (a CEL rule).
        assert!(value["spec"].get("partitions").is_none());
        assert!(value["spec"].get("circuit").is_none());
    }
}
