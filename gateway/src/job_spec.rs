//! The ProofJob a submission becomes: built from plain data, no client.

use std::collections::BTreeMap;

use kube::api::ObjectMeta;
use proofpipe_crds::{FilecoinProofKind, FilecoinWork, InputRef, ProofJob, ProofJobSpec};

use crate::attempts::Replaced;
// The keys live in the leaf `job_meta`, which `attempts` reads too; re-exported here, where
// they have always been named.
pub use crate::job_meta::{
    ATTEMPT_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, PRIORITY_ANNOTATION, PROOF_KIND_LABEL,
    REPLACES_ANNOTATION, REQUEST_ID_ANNOTATION, REQUEST_KEY_LABEL, request_id_of,
};
use crate::routes::PoolRoutes;
use crate::submission::{Submission, Work, request_key};

/// How the gateway's jobs are made.
#[derive(Clone, Debug)]
pub struct JobDefaults {
    /// The ProverPool that proves each kind.
    pub pools: PoolRoutes,
    /// `spec.backoffLimit`.
    pub backoff_limit: i32,
    /// `spec.ttlSecondsAfterFinished`: finished jobs (and then their inputs) are removed after
    /// this long; an AwaitProof after that answers NOT_FOUND.
    pub ttl_seconds_after_finished: Option<i32>,
}

/// Attempt `attempt` of `submission` (named `submission.job_name`), its input at
/// `input_url`, following `replaces`.
pub fn proof_job(
    submission: &Submission,
    input_url: String,
    defaults: &JobDefaults,
    attempt: u32,
    replaces: Option<&Replaced>,
) -> ProofJob {
    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned()),
        (
            PROOF_KIND_LABEL.to_owned(),
            submission.work.kind_name().to_owned(),
        ),
        (
            REQUEST_KEY_LABEL.to_owned(),
            request_key(&submission.request_id),
        ),
    ]);
    let mut annotations = BTreeMap::from([
        (ATTEMPT_ANNOTATION.to_owned(), attempt.to_string()),
        (
            REQUEST_ID_ANNOTATION.to_owned(),
            submission.request_id.clone(),
        ),
        (
            PRIORITY_ANNOTATION.to_owned(),
            submission.priority_name.to_owned(),
        ),
    ]);
    if let Some(replaced) = replaces {
        annotations.insert(REPLACES_ANNOTATION.to_owned(), replaced.note());
    }
    ProofJob {
        metadata: ObjectMeta {
            name: Some(submission.job_name.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: ProofJobSpec {
            pool: defaults.pools.pool_of(&submission.work).to_owned(),
            filecoin: Some(filecoin_work(submission, input_url)),
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

/// `spec.filecoin` for `submission`: each kind sets only its own fields (the CRD's rules).
pub fn filecoin_work(submission: &Submission, input_url: String) -> FilecoinWork {
    let input = InputRef {
        url: input_url,
        sha256: submission.input_sha256.clone(),
    };
    let blank = FilecoinWork {
        kind: FilecoinProofKind::PoRepC2,
        seal_proof: None,
        update_proof: None,
        post_proof: None,
        miner_id: None,
        prover_id: None,
        sector_number: None,
        input,
        output: None,
    };
    match &submission.work {
        Work::PoRep {
            seal_proof,
            miner_id,
            sector_number,
        } => FilecoinWork {
            kind: FilecoinProofKind::PoRepC2,
            seal_proof: Some((*seal_proof).to_owned()),
            miner_id: Some(*miner_id),
            sector_number: *sector_number,
            ..blank
        },
        Work::SnapDeals { update_proof } => FilecoinWork {
            kind: FilecoinProofKind::SnapDealsUpdate,
            update_proof: Some((*update_proof).to_owned()),
            ..blank
        },
        Work::WindowPost { post_proof } => FilecoinWork {
            kind: FilecoinProofKind::WindowPoStPartition,
            post_proof: Some((*post_proof).to_owned()),
            ..blank
        },
        Work::WinningPost { post_proof } => FilecoinWork {
            kind: FilecoinProofKind::WinningPoSt,
            post_proof: Some((*post_proof).to_owned()),
            ..blank
        },
    }
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
    use kube::ResourceExt;
    use proofpipe_crds::forbidden_fields;

    use super::*;
    use crate::submission::{Submission, job_name};

    fn defaults() -> JobDefaults {
        JobDefaults {
            pools: PoolRoutes::single("gpu"),
            backoff_limit: 3,
            ttl_seconds_after_finished: Some(3600),
        }
    }

    fn submission(request_id: &str, work: Work) -> Submission {
        Submission {
            request_id: request_id.into(),
            job_name: job_name(request_id),
            work,
            priority: 100,
            priority_name: "HIGH",
            input_sha256: "ab".repeat(32),
        }
    }

    /// The CRD rules on `spec.filecoin` that the type can see: the kind's fields are set, the
    /// other kinds' are not.
    fn assert_kind_fields(value: &serde_json::Value, kind: FilecoinProofKind) {
        let work = &value["spec"]["filecoin"];
        assert_eq!(work["kind"], kind.as_str());
        for field in kind.required_fields() {
            assert!(work.get(*field).is_some(), "{kind:?} needs {field}: {work}");
        }
        for field in forbidden_fields(kind) {
            assert!(
                work.get(field).is_none(),
                "{kind:?} takes no {field}: {work}"
            );
        }
    }

    #[test]
    fn the_job_carries_the_request_and_passes_the_crd_rules_it_can_see() {
        let porep = Work::PoRep {
            seal_proof: "StackedDrg32GiBV1_1",
            miner_id: 1000,
            sector_number: Some(7),
        };
        let job = proof_job(
            &submission("porep-1000-7", porep),
            "s3://b/k".into(),
            &defaults(),
            1,
            None,
        );
        assert_eq!(request_id_of(&job), Some("porep-1000-7"));
        assert_eq!(input_sha256_of(&job), Some("ab".repeat(32).as_str()));
        assert_eq!(job.spec.partition_count(), 10);
        assert_eq!(job.spec.priority, 100);
        assert_eq!(job.labels()[PROOF_KIND_LABEL], "porep-c2");
        let value = serde_json::to_value(&job).unwrap();
        assert_eq!(value["spec"]["filecoin"]["sectorNumber"], 7);
        assert_kind_fields(&value, FilecoinProofKind::PoRepC2);
        // A Filecoin job leaves circuit, constraints and partitions unset (a CEL rule).
        assert!(value["spec"].get("partitions").is_none());
        assert!(value["spec"].get("circuit").is_none());
    }

    #[test]
    fn a_snap_job_names_its_update_proof_and_nothing_of_a_porep() {
        let snap = Work::SnapDeals {
            update_proof: "StackedDrg32GiBV1",
        };
        let job = proof_job(
            &submission("snap-1000-7", snap),
            "s3://b/k.snap.json".into(),
            &defaults(),
            1,
            None,
        );
        assert_eq!(job.spec.partition_count(), 16);
        assert_eq!(job.labels()[PROOF_KIND_LABEL], "snap-update");
        let value = serde_json::to_value(&job).unwrap();
        assert_eq!(
            value["spec"]["filecoin"]["updateProof"],
            "StackedDrg32GiBV1"
        );
        assert_eq!(
            value["spec"]["filecoin"]["input"]["url"],
            "s3://b/k.snap.json"
        );
        assert_kind_fields(&value, FilecoinProofKind::SnapDealsUpdate);
    }

    #[test]
    fn post_jobs_name_their_post_proof_and_are_one_partition() {
        for (work, kind, label) in [
            (
                Work::WindowPost {
                    post_proof: "StackedDrgWindow32GiBV1_2",
                },
                FilecoinProofKind::WindowPoStPartition,
                "window-post",
            ),
            (
                Work::WinningPost {
                    post_proof: "StackedDrgWinning32GiBV1",
                },
                FilecoinProofKind::WinningPoSt,
                "winning-post",
            ),
        ] {
            let job = proof_job(
                &submission("post-1000", work),
                "s3://b/k.post.json".into(),
                &defaults(),
                1,
                None,
            );
            assert_eq!(job.spec.partition_count(), 1);
            assert_eq!(job.labels()[PROOF_KIND_LABEL], label);
            let value = serde_json::to_value(&job).unwrap();
            assert!(
                value["spec"]["filecoin"]["postProof"].is_string(),
                "{value}"
            );
            assert_kind_fields(&value, kind);
        }
    }

    #[test]
    fn every_attempt_carries_its_request_key_number_and_what_it_followed() {
        let porep = || Work::PoRep {
            seal_proof: "StackedDrg2KiBV1_1",
            miner_id: 1000,
            sector_number: Some(1),
        };
        let first = proof_job(
            &submission("porep-1000-1", porep()),
            "s3://b/k".into(),
            &defaults(),
            1,
            None,
        );
        let replaced = crate::attempts::Replaced {
            job_name: first.name_any(),
            state: crate::attempts::AttemptState::Failed,
            reason: crate::attempts::Reason::PreviousFailed,
            cancel: false,
        };
        let mut second_submission = submission("porep-1000-1", porep());
        second_submission.job_name = crate::attempts::attempt_name(&second_submission.job_name, 2);
        let second = proof_job(
            &second_submission,
            "s3://b/k2".into(),
            &defaults(),
            2,
            Some(&replaced),
        );
        assert_eq!(
            first.labels()[REQUEST_KEY_LABEL],
            second.labels()[REQUEST_KEY_LABEL]
        );
        assert!(
            first
                .name_any()
                .ends_with(&first.labels()[REQUEST_KEY_LABEL])
        );
        assert_eq!(second.annotations()[ATTEMPT_ANNOTATION], "2");
        assert_eq!(
            second.annotations()[REPLACES_ANNOTATION],
            format!("{} (Failed; previous_failed)", first.name_any())
        );
        assert!(!first.annotations().contains_key(REPLACES_ANNOTATION));
        assert_eq!(second.name_any(), format!("{}-a2", first.name_any()));
    }
}
