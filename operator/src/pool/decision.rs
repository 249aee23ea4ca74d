//! Everything a ProverPool reconcile decides, as one pure function of what it observed and
//! one `now`: replicas (autoscaling), the pod changes, which queued jobs go to which idle
//! provers, and the status. The controller only observes (from its caches) and applies.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use proofpipe_crds::{AutoscalingSpec, AutoscalingStatus, ProofJob, ProverPool};

use crate::pool::assignment::{
    Assignment, assign, busy_pods, idle_ready_pods, out_of_rotation, urgent_hosts,
};
use crate::pool::autoscale::{self, AutoscaleDecision, AutoscaleObservation, Demand, Policy};
use crate::pool::scaling::{PodPlan, plan};
use crate::pool::status::{self as pool_status, PoolObservation, PoolStatusPlan};
use crate::shared::prover_pods::ProverPod;
use crate::shared::queue::{queue, remaining_partitions};
use proofpipe_crds::fit::ProverLimits;
use proofpipe_model::sizing::Fit;

/// How often a pool is reconciled with nothing changing, to pick up its provers' reports
/// (status writes, which do not trigger a reconcile) into `status.sizing`.
pub const RESYNC: Duration = Duration::from_secs(15);

/// What one pool reconcile observed.
pub struct PoolInput<'a> {
    pub pool: &'a ProverPool,
    /// The pool's prover pods, as observed against `template_hash`.
    pub provers: &'a [ProverPod],
    /// The hash of the pool's current template ([`crate::pool::pod_spec::template_hash`]),
    /// computed once per reconcile: it builds and hashes a whole pod spec.
    pub template_hash: &'a str,
    /// The jobs naming the pool.
    pub jobs: &'a [ProofJob],
    pub now: Timestamp,
}

/// What one pool reconcile makes true.
pub struct PoolDecision<'a> {
    /// Replicas the pool should have now.
    pub replicas: i32,
    /// The autoscaler's decision, when the pool autoscales; `change` set means
    /// `spec.replicas` is to be written.
    pub autoscale: Option<AutoscaleDecision>,
    pub pod_plan: PodPlan,
    pub assignments: Vec<Assignment<'a>>,
    /// Jobs left waiting after the assignments, head first.
    pub still_queued: Vec<&'a ProofJob>,
    pub status: PoolStatusPlan,
    /// When to look again with nothing changing: a pending scale-down or a job's retry
    /// delay falls due, else [`RESYNC`].
    pub requeue_after: Duration,
}

pub fn decide<'a>(input: &PoolInput<'a>) -> PoolDecision<'a> {
    let PoolInput {
        pool,
        provers,
        template_hash,
        jobs,
        now,
    } = *input;
    let name = pool.name_any();
    let busy = busy_pods(jobs);
    // A job no prover of the pool can fit is held, not queued: no prover is offered it and
    // the autoscaler does not add provers for it (its own status says why).
    let limits = ProverLimits::of(pool);
    let queue: Vec<&ProofJob> = queue(&name, jobs)
        .into_iter()
        .filter(|job| !matches!(limits.fit(&job.spec), Fit::TooLarge(_)))
        .collect();

    let (replicas, autoscale, autoscaling_status) = match &pool.spec.autoscaling {
        None => (pool.spec.replicas, None, None),
        Some(spec) => {
            let decision = autoscale_decision(pool, spec, provers, &busy, &queue, now);
            let status = autoscaling_status(pool, &decision, now);
            (
                i32::try_from(decision.replicas).unwrap_or(i32::MAX),
                Some(decision),
                Some(status),
            )
        }
    };
    let pod_plan = plan(&name, replicas, provers, &busy);

    // Pods about to be deleted are not offered work, nor provers that lost their GPU; jobs in
    // their retry delay wait.
    let out = out_of_rotation(
        pool.status
            .iter()
            .flat_map(|status| status.provers.iter().flatten()),
    );
    let offered: Vec<&ProverPod> = idle_ready_pods(provers, &busy, &out)
        .into_iter()
        .filter(|pod| !pod_plan.deletes(&pod.name))
        .collect();
    let due: Vec<&ProofJob> = queue
        .iter()
        .copied()
        .filter(|job| retry_due_in(job, now).is_none())
        .collect();
    let mut assignments = assign(&due, &offered);
    // Urgent work that found no idle prover goes beside a busy prover's long job.
    let urgent_left: Vec<&ProofJob> = due
        .iter()
        .copied()
        .filter(|job| job.spec.is_urgent())
        .filter(|job| !assignments.iter().any(|a| std::ptr::eq(a.job, *job)))
        .collect();
    let hosts: Vec<&ProverPod> = urgent_hosts(provers, jobs, &out)
        .into_iter()
        .filter(|pod| !pod_plan.deletes(&pod.name))
        .collect();
    assignments.extend(assign(&urgent_left, &hosts));
    let assigned: BTreeSet<String> = assignments.iter().map(|a| a.job.name_any()).collect();
    let still_queued: Vec<&ProofJob> = queue
        .iter()
        .copied()
        .filter(|job| !assigned.contains(&job.name_any()))
        .collect();

    let mut busy_after = busy;
    busy_after.extend(assignments.iter().map(|a| a.pod.name.clone()));
    let current = pool.status.clone().unwrap_or_default();
    let status = pool_status::compute(&PoolObservation {
        name: &name,
        generation: pool.metadata.generation,
        desired_replicas: replicas,
        template_hash,
        pods: provers,
        busy: &busy_after,
        queue: &still_queued,
        current: &current,
        autoscaling: autoscaling_status,
        wants_gpu: crate::pool::pod_spec::pool_requests_gpu(pool),
        now,
    });

    let retry_due = still_queued
        .iter()
        .filter_map(|job| retry_due_in(job, now))
        .min();
    let scale_down_due = autoscale.as_ref().and_then(|a| a.scale_down_in);
    let requeue_after = [retry_due, scale_down_due]
        .into_iter()
        .flatten()
        .map(|due| due.clamp(Duration::from_secs(1), RESYNC))
        .min()
        .unwrap_or(RESYNC);
    PoolDecision {
        replicas,
        autoscale,
        pod_plan,
        assignments,
        still_queued,
        status,
        requeue_after,
    }
}

/// How long until a queued job's retry delay ends; `None` when it may be assigned now.
pub fn retry_due_in(job: &ProofJob, now: Timestamp) -> Option<Duration> {
    let not_before = job.status.as_ref()?.next_attempt_after.as_ref()?.0;
    (not_before > now).then(|| Duration::try_from(not_before - now).unwrap_or_default())
}

/// Queued jobs and partitions, the autoscaler's measure of demand.
pub fn queued_partitions(queue: &[&ProofJob]) -> u64 {
    queue
        .iter()
        .map(|job| u64::try_from(remaining_partitions(job)).unwrap_or(0))
        .sum()
}

fn autoscale_decision(
    pool: &ProverPool,
    spec: &AutoscalingSpec,
    provers: &[ProverPod],
    busy: &BTreeSet<String>,
    queue: &[&ProofJob],
    now: Timestamp,
) -> AutoscaleDecision {
    let alive_busy = provers
        .iter()
        .filter(|pod| pod.health.is_alive() && busy.contains(&pod.name))
        .count();
    let demand = Demand {
        busy_provers: u32::try_from(alive_busy).unwrap_or(u32::MAX),
        queued_jobs: u32::try_from(queue.len()).unwrap_or(u32::MAX),
        queued_partitions: queued_partitions(queue),
    };
    let previous = pool.status.as_ref().and_then(|s| s.autoscaling.as_ref());
    autoscale::decide(&AutoscaleObservation {
        policy: Policy::from_spec(spec),
        replicas: u32::try_from(pool.spec.replicas).unwrap_or(0),
        demand,
        surplus_since: previous.and_then(|a| a.surplus_since.as_ref()).map(|t| t.0),
        now,
    })
}

/// `status.autoscaling` for a decision: the scale time moves only when replicas changed.
fn autoscaling_status(
    pool: &ProverPool,
    decision: &AutoscaleDecision,
    now: Timestamp,
) -> AutoscalingStatus {
    let previous = pool.status.as_ref().and_then(|s| s.autoscaling.as_ref());
    let last_scale_time = if decision.change.is_some() {
        Some(Time(now))
    } else {
        previous.and_then(|a| a.last_scale_time.clone())
    };
    AutoscalingStatus {
        desired_replicas: i32::try_from(decision.desired).unwrap_or(i32::MAX),
        reason: decision.reason.clone(),
        surplus_since: decision.surplus_since.map(Time),
        last_scale_time,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;
    use proofpipe_crds::{ProofJobPhase, ProofJobStatus};

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::names::{ASSIGNED_POD_LABEL, TEMPLATE_HASH_LABEL};
    use crate::pool::pod_spec::template_hash;
    use crate::shared::prover_pods::tests::pod;
    use crate::shared::queue::tests::job;

    fn pool(replicas: i32) -> ProverPool {
        let mut pool: ProverPool = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
            "metadata": {"name": "gpu", "namespace": "ns", "generation": 1},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "prover", "image": "prover:1"}]}}},
        }))
        .unwrap();
        pool.metadata.uid = Some("pool-uid".into());
        pool
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_100).unwrap()
    }

    /// The provers of `pods`, all on the pool's current template (`hash`).
    fn provers(hash: &str, mut pods: Vec<Pod>) -> Vec<ProverPod> {
        for pod in &mut pods {
            pod.labels_mut()
                .insert(TEMPLATE_HASH_LABEL.into(), hash.to_owned());
        }
        pods.iter()
            .map(|p| ProverPod::observe("gpu", p, hash))
            .collect()
    }

    fn decide_at<'a>(
        pool: &'a ProverPool,
        hash: &'a str,
        provers: &'a [ProverPod],
        jobs: &'a [ProofJob],
        now: Timestamp,
    ) -> PoolDecision<'a> {
        decide(&PoolInput {
            pool,
            provers,
            template_hash: hash,
            jobs,
            now,
        })
    }

    #[test]
    fn queued_jobs_go_to_idle_ready_provers_and_the_rest_wait() {
        let pool = pool(2);
        let hash = template_hash(&pool);
        let provers = provers(
            &hash,
            vec![
                pod("gpu-prover-0", "Running", true),
                pod("gpu-prover-1", "Running", true),
            ],
        );
        let jobs = [job("a", 0, 0), job("b", 0, 1), job("c", 0, 2)];
        let decision = decide_at(&pool, &hash, &provers, &jobs, now());
        let pairs: Vec<(String, &str)> = decision
            .assignments
            .iter()
            .map(|a| (a.job.name_any(), a.pod.name.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [("a".into(), "gpu-prover-0"), ("b".into(), "gpu-prover-1")]
        );
        assert_eq!(decision.still_queued.len(), 1);
        assert_eq!(decision.status.status.queued_jobs, Some(1));
        assert!(decision.pod_plan.is_empty());
    }

    #[test]
    fn a_job_no_prover_can_fit_is_neither_assigned_nor_queued() {
        let mut pool = pool(1);
        pool.spec.template.spec.containers[0].resources = Some(
            serde_json::from_value(serde_json::json!({"limits": {"memory": "16Gi"}})).unwrap(),
        );
        let hash = template_hash(&pool);
        let provers = provers(&hash, vec![pod("gpu-prover-0", "Running", true)]);
        // First in line, but a 32 GiB PoRep's proving key alone is 44 GiB.
        let mut too_large = job("porep-32gib", 10, 0);
        too_large.spec = serde_json::from_value(serde_json::json!({
            "pool": "gpu", "priority": 10,
            "filecoin": {"kind": "PoRepC2", "input": {"url": "s3://b/c1", "sha256": "00"},
                         "sealProof": "StackedDrg32GiBV1_1"},
        }))
        .unwrap();
        let jobs = [too_large, job("small", 0, 1)];
        let decision = decide_at(&pool, &hash, &provers, &jobs, now());
        let assigned: Vec<String> = decision
            .assignments
            .iter()
            .map(|a| a.job.name_any())
            .collect();
        assert_eq!(assigned, ["small"]);
        assert!(decision.still_queued.is_empty());
        assert_eq!(decision.status.status.queued_jobs, Some(0));
    }

    #[test]
    fn a_job_in_its_retry_delay_is_not_assigned_and_the_pool_looks_again_when_it_ends() {
        let pool = pool(1);
        let hash = template_hash(&pool);
        let provers = provers(&hash, vec![pod("gpu-prover-0", "Running", true)]);
        let mut waiting = job("retry", 10, 0);
        waiting.status = Some(ProofJobStatus {
            phase: Some(ProofJobPhase::Queued),
            next_attempt_after: Some(Time(now() + SignedDuration::from_secs(4))),
            ..ProofJobStatus::default()
        });
        let jobs = [waiting, job("next", 0, 1)];
        let decision = decide_at(&pool, &hash, &provers, &jobs, now());
        assert_eq!(decision.assignments.len(), 1);
        assert_eq!(decision.assignments[0].job.name_any(), "next");
        assert_eq!(decision.requeue_after, Duration::from_secs(4));
        // Once the delay is over it is first in line again.
        let later = now() + SignedDuration::from_secs(5);
        let decision = decide_at(&pool, &hash, &provers, &jobs, later);
        assert_eq!(decision.assignments[0].job.name_any(), "retry");
    }

    /// A WinningPoSt job (urgent work) named `name`, as the queue's test jobs are.
    fn urgent(name: &str, created: i64) -> ProofJob {
        let mut job = job(name, 1000, created);
        job.spec.filecoin = Some(
            serde_json::from_value(serde_json::json!({
                "kind": "WinningPoSt",
                "postProof": "StackedDrgWinning2KiBV1",
                "input": {"url": "file:///in", "sha256": "00"},
            }))
            .unwrap(),
        );
        job
    }

    fn on(mut job: ProofJob, pod: &str) -> ProofJob {
        job.labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), pod.into());
        job
    }

    #[test]
    fn urgent_work_goes_beside_a_busy_prover_s_long_job_one_at_a_time() {
        let pool = pool(3);
        let hash = template_hash(&pool);
        let provers = provers(
            &hash,
            vec![
                pod("gpu-prover-0", "Running", true),
                pod("gpu-prover-1", "Running", true),
                pod("gpu-prover-2", "Running", true),
            ],
        );
        let jobs = [
            on(job("porep-a", 0, 0), "gpu-prover-0"),
            on(job("porep-b", 0, 0), "gpu-prover-1"),
            // Prover 1 already proves an urgent job beside its PoRep; prover 2 proves one alone.
            on(urgent("winning-old", 0), "gpu-prover-1"),
            on(urgent("window-alone", 0), "gpu-prover-2"),
            job("porep-waiting", 0, 1),
            urgent("winning-1", 2),
            urgent("winning-2", 3),
        ];
        let decision = decide_at(&pool, &hash, &provers, &jobs, now());
        let decided: Vec<(String, String)> = decision
            .assignments
            .iter()
            .map(|a| (a.job.name_any(), a.pod.name.clone()))
            .collect();
        assert_eq!(
            decided,
            [("winning-1".to_owned(), "gpu-prover-0".to_owned())],
            "one urgent job beside prover 0's PoRep; the long job and the second urgent one wait"
        );
        let waiting: Vec<String> = decision
            .still_queued
            .iter()
            .map(|job| job.name_any())
            .collect();
        assert_eq!(waiting, ["winning-2", "porep-waiting"]);
    }

    #[test]
    fn a_busy_prover_gets_nothing_more() {
        let pool = pool(1);
        let hash = template_hash(&pool);
        let provers = provers(&hash, vec![pod("gpu-prover-0", "Running", true)]);
        let mut running = job("running", 0, 0);
        running
            .labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), "gpu-prover-0".into());
        let jobs = [running, job("waiting", 0, 1)];
        let decision = decide_at(&pool, &hash, &provers, &jobs, now());
        assert!(decision.assignments.is_empty());
        assert_eq!(decision.still_queued.len(), 1);
    }
}
