//! Which watch events are worth a reconcile, and of what: pure functions over an object's
//! previous and new version (`None` when it did not exist / no longer exists).
//!
//! The controllers read everything from the informers' caches, so a reconcile costs no API
//! request unless it writes; these rules keep them from running at all for changes that
//! cannot alter their decision (a prover's progress report on a pool, a proof arriving on a
//! running job, as far as the pool is concerned).

use kube::ResourceExt;
use proofpipe_crds::{ProofJob, ProverPool};

use crate::names::ASSIGNED_POD_LABEL;
use proofpipe_crds::fit::ProverLimits;

/// What a pool's decisions read from one of its jobs: whether and where it waits or runs,
/// and in which order it is served.
#[derive(Clone, Debug, PartialEq, Eq)]
struct JobAsSeenByPool<'a> {
    pool: &'a str,
    finished: bool,
    assigned_pod: Option<&'a str>,
    suspend: bool,
    priority: i32,
    deleting: bool,
    not_before: Option<String>,
    /// Partitions left, only while the job waits (the queue's depth in partitions); a
    /// running job's proofs do not concern its pool.
    queued_partitions: Option<i32>,
}

fn job_as_seen_by_pool(job: &ProofJob) -> JobAsSeenByPool<'_> {
    let status = job.status.as_ref();
    let assigned_pod = job.labels().get(ASSIGNED_POD_LABEL).map(String::as_str);
    let finished = status
        .and_then(|status| status.phase)
        .is_some_and(|phase| phase.is_finished());
    JobAsSeenByPool {
        pool: &job.spec.pool,
        finished,
        assigned_pod,
        suspend: job.spec.suspend,
        priority: job.spec.priority,
        deleting: job.metadata.deletion_timestamp.is_some(),
        not_before: status
            .and_then(|status| status.next_attempt_after.as_ref())
            .map(|time| time.0.to_string()),
        queued_partitions: (assigned_pod.is_none() && !finished)
            .then(|| crate::shared::queue::remaining_partitions(job)),
    }
}

/// Whether a job change can change its pool's decisions (queue, assignment, busy provers).
pub fn job_concerns_pool(old: Option<&ProofJob>, new: Option<&ProofJob>) -> bool {
    old.map(job_as_seen_by_pool) != new.map(job_as_seen_by_pool)
}

/// Whether a pool change needs the pool's reconcile: it appeared or went, its spec changed
/// (generation), or its deletion started. Status writes (the provers' reports, the
/// operator's own status) do not: the periodic resync picks those up.
pub fn pool_needs_reconcile(old: Option<&ProverPool>, new: Option<&ProverPool>) -> bool {
    let key = |pool: &ProverPool| {
        (
            pool.metadata.generation,
            pool.metadata.deletion_timestamp.is_some(),
        )
    };
    old.map(key) != new.map(key)
}

/// Whether a pool change concerns its jobs: it appeared or went (Pending vs Queued), or
/// what its provers can fit changed (their memory limit, the fixed pipeline counts).
pub fn pool_concerns_jobs(old: Option<&ProverPool>, new: Option<&ProverPool>) -> bool {
    old.map(ProverLimits::of) != new.map(ProverLimits::of)
}

/// The unfinished jobs of pool `pool` in `namespace`.
pub fn unfinished_jobs_of_pool<'a>(
    jobs: &'a [std::sync::Arc<ProofJob>],
    namespace: Option<&'a str>,
    pool: &'a str,
) -> impl Iterator<Item = &'a ProofJob> + 'a {
    jobs.iter().map(|job| &**job).filter(move |job| {
        job.metadata.namespace.as_deref() == namespace
            && job.spec.pool == pool
            && !job
                .status
                .as_ref()
                .and_then(|status| status.phase)
                .is_some_and(|phase| phase.is_finished())
    })
}

/// The jobs labelled as assigned to pod `pod` in `namespace`.
pub fn jobs_on_pod<'a>(
    jobs: &'a [std::sync::Arc<ProofJob>],
    namespace: Option<&'a str>,
    pod: &'a str,
) -> impl Iterator<Item = &'a ProofJob> + 'a {
    jobs.iter().map(|job| &**job).filter(move |job| {
        job.metadata.namespace.as_deref() == namespace
            && job.labels().get(ASSIGNED_POD_LABEL).map(String::as_str) == Some(pod)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use proofpipe_crds::{PartitionProof, ProofJobPhase, ProofJobStatus};

    use super::*;
    use crate::shared::queue::tests::job;

    fn with_status(mut job: ProofJob, phase: ProofJobPhase, proofs: i32) -> ProofJob {
        job.status = Some(ProofJobStatus {
            phase: Some(phase),
            proofs: Some(
                (0..proofs)
                    .map(|partition| PartitionProof {
                        partition,
                        proof: String::new(),
                        verified: true,
                        public_inputs: Vec::new(),
                        proved_by: "p-0".into(),
                    })
                    .collect(),
            ),
            // Proofs count only by a pod the job was assigned to.
            assigned_pods: Some(vec!["p-0".into()]),
            ..ProofJobStatus::default()
        });
        job
    }

    fn assigned(mut job: ProofJob, pod: &str) -> ProofJob {
        job.labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), pod.into());
        job
    }

    #[test]
    fn a_running_jobs_proofs_do_not_concern_its_pool() {
        let running = assigned(
            with_status(job("a", 0, 0), ProofJobPhase::Running, 1),
            "p-0",
        );
        let more = assigned(
            with_status(job("a", 0, 0), ProofJobPhase::Running, 2),
            "p-0",
        );
        assert!(!job_concerns_pool(Some(&running), Some(&more)));
    }

    #[test]
    fn what_a_pool_decides_from_concerns_it() {
        let queued = with_status(job("a", 0, 0), ProofJobPhase::Queued, 0);
        assert!(job_concerns_pool(None, Some(&queued)), "a new job");
        assert!(job_concerns_pool(Some(&queued), None), "a deleted job");
        let on_pod = assigned(queued.clone(), "p-0");
        assert!(job_concerns_pool(Some(&queued), Some(&on_pod)), "assigned");
        let done = assigned(
            with_status(job("a", 0, 0), ProofJobPhase::Succeeded, 1),
            "p-0",
        );
        assert!(job_concerns_pool(Some(&on_pod), Some(&done)), "finished");
        let mut urgent = queued.clone();
        urgent.spec.priority = 10;
        assert!(job_concerns_pool(Some(&queued), Some(&urgent)), "priority");
        let mut suspended = queued.clone();
        suspended.spec.suspend = true;
        assert!(
            job_concerns_pool(Some(&queued), Some(&suspended)),
            "suspend"
        );
        let mut later = queued.clone();
        later.status.as_mut().unwrap().next_attempt_after = Some(Time(Timestamp::UNIX_EPOCH));
        assert!(
            job_concerns_pool(Some(&queued), Some(&later)),
            "retry delay"
        );
        // A queued job's partitions count in the queue depth.
        let fewer = with_status(job("a", 0, 0), ProofJobPhase::Queued, 1);
        assert!(job_concerns_pool(Some(&queued), Some(&fewer)));
    }

    #[test]
    fn only_spec_changes_and_deletion_reconcile_a_pool() {
        let mut pool: ProverPool = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
            "metadata": {"name": "gpu", "namespace": "ns"},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "prover", "image": "prover:1"}]}}},
        }))
        .unwrap();
        pool.metadata.generation = Some(1);
        let mut reported = pool.clone();
        reported.status = Some(Default::default());
        assert!(!pool_needs_reconcile(Some(&pool), Some(&reported)));
        let mut edited = pool.clone();
        edited.metadata.generation = Some(2);
        assert!(pool_needs_reconcile(Some(&pool), Some(&edited)));
        assert!(pool_needs_reconcile(None, Some(&pool)));
        assert!(pool_concerns_jobs(None, Some(&pool)));
        assert!(pool_concerns_jobs(Some(&pool), None));
        assert!(!pool_concerns_jobs(Some(&pool), Some(&edited)));
        let mut smaller = pool.clone();
        smaller.spec.template.spec.containers[0].resources =
            Some(serde_json::from_value(serde_json::json!({"limits": {"memory": "8Gi"}})).unwrap());
        assert!(
            pool_concerns_jobs(Some(&pool), Some(&smaller)),
            "what its provers fit"
        );
    }

    #[test]
    fn jobs_are_found_by_pool_and_by_pod() {
        let mut other_pool = job("b", 0, 0);
        other_pool.spec.pool = "cpu".into();
        let jobs: Vec<Arc<ProofJob>> = vec![
            Arc::new(assigned(job("a", 0, 0), "p-0")),
            Arc::new(other_pool),
            Arc::new(with_status(job("c", 0, 0), ProofJobPhase::Succeeded, 1)),
        ];
        let namespace = jobs[0].metadata.namespace.clone();
        let names = |found: Vec<&ProofJob>| found.iter().map(|j| j.name_any()).collect::<Vec<_>>();
        let pool = jobs[0].spec.pool.clone();
        assert_eq!(
            names(unfinished_jobs_of_pool(&jobs, namespace.as_deref(), &pool).collect()),
            ["a"]
        );
        assert_eq!(
            names(jobs_on_pod(&jobs, namespace.as_deref(), "p-0").collect()),
            ["a"]
        );
    }
}
