//! A pool's queue: the ProofJobs waiting for a prover, in the order they are served.

use proofpipe_crds::ProofJob;
use proofpipe_model::queue::QueueEntry;

/// Whether `job` waits in its pool's queue: not finished, not suspended, not assigned, not
/// being deleted.
pub fn is_queued(job: &ProofJob) -> bool {
    job.is_waiting()
}

/// The queued jobs of `pool` among `jobs`, head first: highest `spec.priority`, then oldest,
/// then by name so that the order is total (the model's order, which the gateway reports).
pub fn queue<'a>(pool: &str, jobs: impl IntoIterator<Item = &'a ProofJob>) -> Vec<&'a ProofJob> {
    proofpipe_model::queue::queue(pool, jobs)
}

/// Partitions of `job` that still need a proof.
pub fn remaining_partitions(job: &ProofJob) -> i32 {
    i32::try_from(job.remaining_partitions()).unwrap_or(i32::MAX)
}

#[cfg(test)]
pub(crate) mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use kube::ResourceExt;
    use proofpipe_crds::{ProofJobPhase, ProofJobStatus};

    use super::*;
    use crate::names::ASSIGNED_POD_LABEL;

    /// A job of pool `gpu` created `age_rank` seconds after an epoch, with `priority`.
    pub(crate) fn job(name: &str, priority: i32, created: i64) -> ProofJob {
        let mut job: ProofJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"pool": "gpu", "circuit": "mul-chain", "constraints": 4096, "partitions": 4, "priority": priority},
        }))
        .unwrap();
        job.metadata.creation_timestamp = Some(Time(
            Timestamp::from_second(1_800_000_000 + created).unwrap(),
        ));
        job
    }

    fn names(queue: &[&ProofJob]) -> Vec<String> {
        queue.iter().map(|job| job.name_any()).collect()
    }

    #[test]
    fn priority_first_then_age_then_name() {
        let jobs = [
            job("old-low", 0, 0),
            job("new-high", 10, 50),
            job("old-high", 10, 10),
            job("b-tie", 0, 5),
            job("a-tie", 0, 5),
            job("negative", -1, 0),
        ];
        assert_eq!(
            names(&queue("gpu", &jobs)),
            [
                "old-high", "new-high", "old-low", "a-tie", "b-tie", "negative"
            ]
        );
    }

    #[test]
    fn only_waiting_jobs_of_the_pool_are_queued() {
        let mut other_pool = job("other-pool", 0, 0);
        other_pool.spec.pool = "cpu".into();
        let mut suspended = job("suspended", 0, 0);
        suspended.spec.suspend = true;
        let mut assigned = job("assigned", 0, 0);
        assigned
            .labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), "gpu-prover-0".into());
        let mut done = job("done", 0, 0);
        done.status = Some(ProofJobStatus {
            phase: Some(ProofJobPhase::Succeeded),
            ..ProofJobStatus::default()
        });
        let mut deleting = job("deleting", 0, 0);
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        let mut requeued = job("requeued", 0, 0);
        requeued.status = Some(ProofJobStatus {
            phase: Some(ProofJobPhase::Queued),
            attempts: Some(1),
            ..ProofJobStatus::default()
        });

        let jobs = [
            other_pool,
            suspended,
            assigned,
            done,
            deleting,
            requeued,
            job("new", 0, 1),
        ];
        assert_eq!(names(&queue("gpu", &jobs)), ["requeued", "new"]);
    }

    #[test]
    fn remaining_partitions_subtract_verified_proofs() {
        let mut half = job("half", 0, 0);
        half.status = Some(ProofJobStatus {
            proofs: Some(
                [0, 2]
                    .map(|partition| proofpipe_crds::PartitionProof {
                        partition,
                        proof: String::new(),
                        verified: true,
                        public_inputs: vec![],
                        proved_by: "p".into(),
                    })
                    .to_vec(),
            ),
            // Proofs count only by a pod the job was assigned to.
            assigned_pods: Some(vec!["p".into()]),
            ..ProofJobStatus::default()
        });
        assert_eq!(remaining_partitions(&half), 2);
        assert_eq!(remaining_partitions(&job("fresh", 0, 0)), 4);
    }
}
