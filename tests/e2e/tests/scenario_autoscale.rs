//! An autoscaled pool under a burst: the queue builds, the pool grows to its maximum, every
//! job succeeds, and once the queue has been empty for the scale-down delay the pool shrinks
//! back to its minimum. No busy prover is removed on the way: every job is proved by one pod
//! in one attempt.
//!
//! Runs the real binaries (`cargo build -p proofpipe-prover -p proofpipe-operator`) against
//! the API server of `KUBECONFIG`; skips without it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use proofpipe_crds::ProverPool;
use proofpipe_e2e::stack::{Stack, check_all_succeeded, live_pods, pool_condition};

#[tokio::test]
async fn pool_grows_with_its_queue_and_shrinks_when_idle() {
    let Some(mut stack) = Stack::start("autoscale").await else {
        return;
    };
    let recorder = stack.record_assignments();
    stack.apply("autoscale-pool.yaml").await;
    stack.apply("queue-jobs.yaml").await;
    let jobs = stack.jobs();
    let pods = stack.namespace.api::<Pod>();
    let pools = stack.namespace.api::<ProverPool>();
    let most_pods = Arc::new(AtomicUsize::new(0));

    // 5 jobs, 18 partitions, 4 per prover: 5 wanted, 3 allowed.
    stack
        .wait_for("every job Succeeded", || {
            let (jobs, pods, most_pods) = (jobs.clone(), pods.clone(), most_pods.clone());
            async move {
                let alive = live_pods(&pods).await?.len();
                most_pods.fetch_max(alive, Ordering::Relaxed);
                let list = jobs
                    .list(&Default::default())
                    .await
                    .map_err(|e| e.to_string())?;
                check_all_succeeded(&list.items, 5).map_err(|e| format!("{alive} pods; {e}"))
            }
        })
        .await;
    assert_eq!(
        most_pods.load(Ordering::Relaxed),
        3,
        "the pool should have grown to maxReplicas"
    );

    let reason = stack
        .wait_for("the pool back at minReplicas", || async {
            let pool = pools.get("gpu").await.map_err(|e| e.to_string())?;
            let alive = live_pods(&pods).await?.len();
            let autoscaling = pool.status.as_ref().and_then(|s| s.autoscaling.clone());
            match (pool.spec.replicas, alive, autoscaling) {
                // The last prover's entry may still say busy for a moment after its job
                // ended (its report is throttled): wait for the idle one.
                (1, 1, Some(status))
                    if status.desired_replicas == 1 && status.reason.starts_with("0 busy") =>
                {
                    Ok(status.reason)
                }
                (replicas, alive, status) => Err(format!(
                    "spec.replicas {replicas}, {alive} pods, status.autoscaling {status:?}"
                )),
            }
        })
        .await;
    assert_eq!(
        reason,
        "0 busy + 0 for 0 queued partitions in 0 jobs (target 4 per prover), bounded to 1..=3"
    );

    let mut problems = recorder.with_log(|log| {
        let mut problems = log.violations().to_vec();
        for job in ["q1", "q2", "q3", "q4", "q5"] {
            let pods = log.pods_of(job);
            if pods.len() != 1 {
                problems.push(format!("job {job} was assigned to {pods:?}"));
            }
        }
        problems
    });
    for job in jobs.list(&Default::default()).await.unwrap().items {
        let attempts = job.status.as_ref().and_then(|s| s.attempts);
        if attempts != Some(1) {
            problems.push(format!("job {} took {attempts:?} attempts", job.name_any()));
        }
    }
    if !problems.is_empty() {
        panic!("{}\n{}", problems.join("\n"), stack.diagnostics());
    }
}

/// A pool whose provers no node can take reports it where `kubectl get pp` and `kubectl
/// describe pp` show it, and its jobs wait.
#[tokio::test]
async fn unschedulable_provers_are_reported_on_the_pool() {
    let Some(mut stack) = Stack::start("unschedulable").await else {
        return;
    };
    stack.apply("unschedulable-pool.yaml").await;
    let pools = stack.namespace.api::<ProverPool>();
    let message = stack
        .wait_for("the pool reporting an unschedulable prover", || async {
            let pool = pools.get("h200").await.map_err(|e| e.to_string())?;
            let status = pool.status.unwrap_or_default();
            match (status.unschedulable_replicas, schedulable(&status)) {
                (Some(1), Some(c)) if c.status == "False" && c.reason == "Unschedulable" => {
                    Ok(c.message)
                }
                (count, condition) => {
                    Err(format!("unschedulableReplicas {count:?}, {condition:?}"))
                }
            }
        })
        .await;
    assert!(
        message.contains("h200-prover-0: 0/1 nodes are available")
            && message.contains("proofpipe.dev/gpu=h200"),
        "{message}"
    );

    let events = stack.namespace.api::<k8s_openapi::api::events::v1::Event>();
    stack
        .wait_for("a ProversUnschedulable Warning Event", || async {
            let list = events
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            let warnings: Vec<_> = list
                .items
                .iter()
                .filter(|e| e.reason.as_deref() == Some("ProversUnschedulable"))
                .collect();
            match warnings.as_slice() {
                [one] if one.type_.as_deref() == Some("Warning") => Ok(()),
                other => Err(format!("{} such Events", other.len())),
            }
        })
        .await;

    // The job's first status write races the pool's Event: wait for it, then check it is
    // queued with no pod (no prover, no assignment).
    let jobs = stack.jobs();
    let status = stack
        .wait_for("the waiting job's status", || async {
            let job = jobs.get("waiting").await.map_err(|e| e.to_string())?;
            job.status
                .filter(|s| s.phase.is_some())
                .ok_or_else(|| "no phase yet".to_owned())
        })
        .await;
    assert_eq!(
        (status.phase, status.pod),
        (Some(proofpipe_crds::ProofJobPhase::Queued), None),
        "no prover, no assignment"
    );
}

/// A pool under Kueue: its prover pod, held by Kueue's scheduling gate, is reported as waiting
/// for quota (not unschedulable: no node autoscaler is signalled), its job waits; once the
/// gate is removed, as Kueue's admission removes it, the pod runs, the job succeeds and the
/// pool is schedulable again.
#[tokio::test]
async fn provers_held_by_kueue_wait_for_quota_then_prove() {
    let Some(mut stack) = Stack::start("kueue").await else {
        return;
    };
    stack.apply("kueue-pool.yaml").await;
    let pools = stack.namespace.api::<ProverPool>();
    let pods = stack.namespace.api::<Pod>();
    let message = stack
        .wait_for("the pool reporting a prover waiting for quota", || async {
            let status = pools
                .get("gpu")
                .await
                .map_err(|e| e.to_string())?
                .status
                .unwrap_or_default();
            match (status.unschedulable_replicas, schedulable(&status)) {
                (None | Some(0), Some(c))
                    if c.status == "False" && c.reason == "WaitingForQuota" =>
                {
                    Ok(c.message)
                }
                (count, condition) => {
                    Err(format!("unschedulableReplicas {count:?}, {condition:?}"))
                }
            }
        })
        .await;
    assert!(
        message.contains("gpu-prover-0: scheduling gate kueue.x-k8s.io/admission"),
        "{message}"
    );
    let pod = pods.get("gpu-prover-0").await.unwrap();
    let scheduled = pod
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled");
    assert_eq!(
        scheduled.and_then(|c| c.reason).as_deref(),
        Some("SchedulingGated"),
        "the runner leaves a gated pod unscheduled"
    );
    let events = stack.namespace.api::<k8s_openapi::api::events::v1::Event>();
    stack
        .wait_for(
            "one Normal ProversWaitingForQuota Event, no Warning",
            || async {
                let list = events
                    .list(&Default::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let of = |reason: &str| {
                    list.items
                        .iter()
                        .filter(|e| e.reason.as_deref() == Some(reason))
                        .map(|e| e.type_.clone().unwrap_or_default())
                        .collect::<Vec<_>>()
                };
                match (
                    of("ProversWaitingForQuota").as_slice(),
                    of("ProversUnschedulable").as_slice(),
                ) {
                    ([normal], []) if normal == "Normal" => Ok(()),
                    (quota, unschedulable) => Err(format!(
                        "ProversWaitingForQuota {quota:?}, ProversUnschedulable {unschedulable:?}"
                    )),
                }
            },
        )
        .await;
    let job = stack.jobs().get("admitted-later").await.unwrap();
    assert_eq!(
        job.status.and_then(|s| s.pod),
        None,
        "no prover is running: the job is not assigned"
    );

    // Kueue admits the pod: it removes its gate (the one change a gate allows).
    pods.patch(
        "gpu-prover-0",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"schedulingGates": []}})),
    )
    .await
    .expect("remove the scheduling gate");
    let jobs = stack.jobs();
    stack
        .wait_for("the job Succeeded and the pool schedulable", || async {
            let job = jobs
                .get("admitted-later")
                .await
                .map_err(|e| e.to_string())?;
            let status = pools
                .get("gpu")
                .await
                .map_err(|e| e.to_string())?
                .status
                .unwrap_or_default();
            match (
                proofpipe_e2e::stack::check_succeeded(&job),
                schedulable(&status),
            ) {
                (Ok(()), Some(c)) if c.status == "True" => Ok(()),
                (job, condition) => Err(format!("job: {job:?}; ProversSchedulable {condition:?}")),
            }
        })
        .await;
    let job = jobs.get("admitted-later").await.unwrap();
    if let Err(err) = stack.verify_proofs(&job) {
        panic!("{err}\n{}", stack.diagnostics());
    }
}

/// The pool's `ProversSchedulable` condition, if it has one.
fn schedulable(status: &proofpipe_crds::ProverPoolStatus) -> Option<Condition> {
    pool_condition(status, "ProversSchedulable")
}
