//! A pool's template changes (a new prover image) while one prover is busy: the idle prover
//! is replaced from the new template at once, the busy one only after its job has finished,
//! so the job runs to the end on its pod in one attempt. `kubectl get pp -o wide` and the
//! pool's `ProversUpToDate` condition follow the roll.
//!
//! Runs the real binaries (`cargo build -p proofpipe-prover -p proofpipe-operator`) against
//! the API server of `KUBECONFIG`; skips without it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use proofpipe_crds::ProverPool;
use proofpipe_e2e::stack::{Stack, check_succeeded, live_pods, phase};

const HASH_LABEL: &str = "proofpipe.dev/template-hash";

/// UID -> (name, template hash) of the pods not being deleted. (Names are reused: a
/// replacement takes the lowest free ordinal.)
async fn live_pod_hashes(
    pods: &kube::Api<Pod>,
) -> Result<BTreeMap<String, (String, String)>, String> {
    Ok(live_pods(pods)
        .await?
        .iter()
        .map(|pod| {
            let hash = pod.labels().get(HASH_LABEL).cloned().unwrap_or_default();
            (pod.uid().unwrap_or_default(), (pod.name_any(), hash))
        })
        .collect())
}

/// The pool's `ProversUpToDate` condition as (status, reason, message).
fn up_to_date(pool: &ProverPool) -> Option<(String, String, String)> {
    pool.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "ProversUpToDate")
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test]
async fn a_template_change_rolls_idle_provers_and_waits_for_busy_ones() {
    let Some(mut stack) = Stack::start("rollout").await else {
        return;
    };
    let recorder = stack.record_assignments();
    stack.apply("pool.yaml").await;
    stack.apply("rollout-job.yaml").await;
    let jobs = stack.jobs();
    let pods = stack.namespace.api::<Pod>();
    let pools = stack.namespace.api::<ProverPool>();

    // Both provers up, the job part-way through on one of them.
    let (busy_pod, old_hash) = stack
        .wait_for("two provers ready and the job part-way through", || async {
            let pool = pools.get("gpu").await.map_err(|e| e.to_string())?;
            let job = jobs.get("long").await.map_err(|e| e.to_string())?;
            let status = pool.status.unwrap_or_default();
            let job_status = job.status.clone().unwrap_or_default();
            let done = job_status.partitions_done.unwrap_or(0);
            match (status.ready_replicas, status.template_hash, job_status.pod) {
                (Some(2), Some(hash), Some(pod))
                    if done > 0 && done < job.spec.partition_count() =>
                {
                    Ok((pod, hash))
                }
                (ready, hash, pod) => Err(format!(
                    "ready {ready:?}, templateHash {hash:?}, job on {pod:?} with {done} done"
                )),
            }
        })
        .await;
    let before = live_pod_hashes(&pods).await.unwrap();
    assert_eq!(before.len(), 2, "{before:?}");
    assert!(
        before.values().all(|(_, hash)| *hash == old_hash),
        "every pod carries the pool's templateHash {old_hash}: {before:?}"
    );

    // A new prover image. (The pod runner maps every `proofpipe-prover:*` image to the same
    // binary; the operator sees a new template.) A merge patch replaces a list whole, so the
    // containers go back with only the image changed.
    let mut containers = pools
        .get("gpu")
        .await
        .unwrap()
        .spec
        .template
        .spec
        .containers;
    containers[0].image = Some("proofpipe-prover:e2e-next".into());
    pools
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({
                "spec": {"template": {"spec": {"containers": containers}}}
            })),
        )
        .await
        .unwrap();
    let job = jobs.get("long").await.unwrap();
    assert!(
        !phase(&job).is_some_and(|p| p.is_finished()),
        "the job finished before the template changed: rollout-job.yaml needs more partitions"
    );

    // While the busy prover works, the pool says it is rolling and waits for it.
    let saw_rolling = Arc::new(AtomicBool::new(false));
    let new_hash = stack
        .wait_for("the job to succeed and every pod to be replaced", || {
            let (jobs, pods, pools, saw_rolling) =
                (jobs.clone(), pods.clone(), pools.clone(), saw_rolling.clone());
            let (busy_pod, old_hash, before) = (busy_pod.clone(), old_hash.clone(), before.clone());
            async move {
                let pool = pools.get("gpu").await.map_err(|e| e.to_string())?;
                let condition = up_to_date(&pool);
                if let Some((status, reason, message)) = &condition
                    && status == "False"
                    && reason == "Rolling"
                    && message.contains(&format!("busy ones when their job ends: {busy_pod}"))
                {
                    saw_rolling.store(true, Ordering::Relaxed);
                }
                let job = jobs.get("long").await.map_err(|e| e.to_string())?;
                check_succeeded(&job)?;
                let live = live_pod_hashes(&pods).await?;
                let status = pool.status.unwrap_or_default();
                let hash = status.template_hash.unwrap_or_default();
                let all_new = live.len() == 2
                    && hash != old_hash
                    && live.iter().all(|(uid, (_, h))| *h == hash && !before.contains_key(uid));
                match (all_new, status.updated_replicas, status.ready_replicas, condition) {
                    (true, Some(2), Some(2), Some((s, _, _))) if s == "True" => Ok(hash),
                    (_, updated, ready, condition) => Err(format!(
                        "pods {live:?}, templateHash {hash}, updated {updated:?}, ready {ready:?}, condition {condition:?}"
                    )),
                }
            }
        })
        .await;
    assert_ne!(new_hash, old_hash);
    assert!(
        saw_rolling.load(Ordering::Relaxed),
        "the pool never reported ProversUpToDate=False/Rolling waiting for {busy_pod}"
    );

    // The busy prover was not touched: one attempt, every partition proved by it.
    let job = jobs.get("long").await.unwrap();
    stack.verify_proofs(&job).unwrap();
    let status = job.status.unwrap();
    assert_eq!(status.attempts, Some(1), "the job was requeued by the roll");
    let provers: Vec<String> = status
        .proofs
        .unwrap()
        .into_iter()
        .map(|proof| proof.proved_by)
        .filter(|by| *by != busy_pod)
        .collect();
    assert!(
        provers.is_empty(),
        "partitions proved elsewhere: {provers:?}"
    );
    let problems = recorder.with_log(|log| {
        let mut problems = log.violations().to_vec();
        if log.pods_of("long").len() != 1 {
            problems.push(format!("long was assigned to {:?}", log.pods_of("long")));
        }
        problems
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // Each original pod went by a Rolled Event naming it.
    let events = stack.namespace.api::<k8s_openapi::api::events::v1::Event>();
    let rolled: Vec<String> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("Rolled"))
        .filter_map(|event| event.note)
        .collect();
    for (pod, _) in before.values() {
        assert!(
            rolled
                .iter()
                .any(|note| note.contains(&format!("pod {pod} "))),
            "no Rolled Event for {pod}: {rolled:?}"
        );
    }
}
