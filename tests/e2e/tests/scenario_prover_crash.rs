//! A prover killed mid-job: the job completes (on the other prover or a replacement pod)
//! without redoing the partitions proved before the crash.
//!
//! Runs the real binaries (`cargo build -p proofpipe-prover -p proofpipe-operator`) against
//! the API server of `KUBECONFIG`; skips without it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use proofpipe_e2e::stack::{Stack, check_succeeded};

#[tokio::test]
async fn killed_prover_loses_no_finished_partition() {
    let Some(mut stack) = Stack::start("prover-crash").await else {
        return;
    };
    stack.apply("pool.yaml").await;
    stack.apply("long-job.yaml").await;
    let jobs = stack.jobs();

    // (pod, partition -> (proof, provedBy)) once some but not all partitions are proved.
    let (pod, before) = stack
        .wait_for("the job to be part-way through", || async {
            let job = jobs.get("long").await.map_err(|e| e.to_string())?;
            let status = job.status.unwrap_or_default();
            let proofs: BTreeMap<i32, (String, String)> = status
                .proofs
                .unwrap_or_default()
                .into_iter()
                .filter(|p| p.verified)
                .map(|p| (p.partition, (p.proof, p.proved_by)))
                .collect();
            match status.pod {
                Some(pod)
                    if !proofs.is_empty() && proofs.len() < job.spec.partition_count() as usize =>
                {
                    Ok((pod, proofs))
                }
                pod => Err(format!("pod {pod:?}, {} proofs", proofs.len())),
            }
        })
        .await;
    eprintln!(
        "killing the prover of pod {pod} after {} proofs",
        before.len()
    );
    stack.runner.kill_pod_process(&pod).unwrap();

    let job = stack
        .wait_for("the job to succeed after the crash", || async {
            let job = jobs.get("long").await.map_err(|e| e.to_string())?;
            check_succeeded(&job).map(|()| job)
        })
        .await;
    stack.verify_proofs(&job).unwrap();
    let status = job.status.unwrap();
    assert!(
        status.attempts.unwrap_or(0) >= 2,
        "attempts {:?}: the crash should have started a second attempt",
        status.attempts
    );
    let after: BTreeMap<i32, (String, String)> = status
        .proofs
        .unwrap()
        .into_iter()
        .map(|p| (p.partition, (p.proof, p.proved_by)))
        .collect();
    let mut proved_by: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, by) in after.values() {
        *proved_by.entry(by).or_default() += 1;
    }
    let pods: Vec<(String, Option<String>)> = stack
        .namespace
        .api::<Pod>()
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|pod| (pod.name_any(), pod.status.and_then(|s| s.phase)))
        .collect();
    eprintln!(
        "attempts {:?}, partitions proved by {proved_by:?}, pods now {pods:?}",
        status.attempts
    );
    for (partition, proof) in &before {
        assert_eq!(
            after.get(partition),
            Some(proof),
            "partition {partition}, proved before the crash, was proved again"
        );
    }
}
