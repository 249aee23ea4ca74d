//! A GPU lost mid-job (ADR 0032), with the daemon's test fault hook standing in for the
//! hardware: the GPU stage of the first partition to reach it fails with
//! `cudaErrorECCUncorrectable`, classified as the CUDA backend classifies it. The prover hands
//! the job back; the operator requeues it without charging its `backoffLimit` (0 here, so a
//! charged attempt would fail the job); the other prover proves it; the faulty prover stays up
//! (no `PROOFPIPE_REQUIRE_GPU`) but out of rotation: its pool entry says `gpuLost`, the pool's
//! `ProversOnGpu` condition is False with reason `GpuLost`, its `/metrics` show
//! `proofpipe_prover_gpu_missing 1`, Warning Events `GpuLost` are on the job and the pool, and
//! the next job goes to the other prover although the faulty one is idle and Ready.
//!
//! The pod runner builds every pod of a pool from the one template, so the fault cannot be
//! given to one pod through its args alone: `--test-fault-pod gl-prover-0` makes only that
//! pod's daemon take `--test-fault gpu-lost`. The job is submitted once both provers report,
//! so the operator gives it to the lowest ordinal, the faulty one.
//!
//! Needs `KUBECONFIG` (skips without it).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::DynamicObject;
use proofpipe_crds::{ProofJob, ProverPool};
use proofpipe_e2e::prover_metrics::{sample, scrape};
use proofpipe_e2e::stack::{Stack, check_succeeded, live_pods, pool_condition};

const POOL: &str = "gl";
const FAULTY: &str = "gl-prover-0";
const HEALTHY: &str = "gl-prover-1";

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("a well-formed object")
}

/// Two provers; the first loses its GPU in its first GPU stage.
fn pool(params_dir: &str) -> DynamicObject {
    object(serde_json::json!({
        "apiVersion": "proofpipe.dev/v1alpha1",
        "kind": "ProverPool",
        "metadata": { "name": POOL },
        "spec": {
            "replicas": 2,
            "template": { "spec": { "containers": [{
                "name": "prover",
                "image": "proofpipe-prover:e2e",
                "args": [
                    "--listen", "127.0.0.1:0",
                    "--test-fault", "gpu-lost", "--test-fault-pod", FAULTY,
                ],
                "resources": { "limits": { "memory": "1Gi" } },
                "env": [{ "name": "PROOFPIPE_PARAMS_DIR", "value": params_dir }],
            }] } },
            "pipeline": { "partitionWorkers": "1", "channelCapacity": "1", "gpuWorkers": "1" },
        },
    }))
}

/// A small synthetic job that may not fail even once.
fn job(name: &str) -> DynamicObject {
    object(serde_json::json!({
        "apiVersion": "proofpipe.dev/v1alpha1",
        "kind": "ProofJob",
        "metadata": { "name": name },
        "spec": {
            "pool": POOL, "circuit": "mul-chain", "constraints": 1024, "partitions": 3,
            "seed": 11, "backoffLimit": 0,
        },
    }))
}

async fn succeeded(stack: &mut Stack, name: &str) -> ProofJob {
    let jobs = stack.jobs();
    stack
        .wait_for(&format!("job {name} to succeed"), || async {
            let job = jobs.get(name).await.map_err(|e| e.to_string())?;
            check_succeeded(&job).map(|()| job)
        })
        .await
}

#[tokio::test]
async fn a_lost_gpu_hands_the_job_back_uncharged_and_takes_its_prover_out_of_rotation() {
    let Some(mut stack) = Stack::start("gpu-lost").await else {
        return;
    };
    let params = stack.params_dir().display().to_string();
    stack.namespace.apply(&[pool(&params)]).await;
    let pools = stack.namespace.api::<ProverPool>();
    // Both daemons up and reporting: the job then goes to the lowest ordinal, the faulty one.
    stack
        .wait_for("both provers to report", || async {
            let pool = pools.get(POOL).await.map_err(|e| e.to_string())?;
            let entries = pool
                .status
                .and_then(|s| s.provers)
                .unwrap_or_default()
                .len();
            (entries == 2)
                .then_some(())
                .ok_or(format!("{entries} entries"))
        })
        .await;
    let pods = stack.namespace.api::<Pod>();
    let faulty_uid = pods.get(FAULTY).await.unwrap().uid();

    stack.namespace.apply(&[job("first")]).await;
    let first = succeeded(&mut stack, "first").await;
    stack.verify_proofs(&first).unwrap();
    let status = first.status.clone().unwrap();
    eprintln!(
        "attempts {:?}, failed {:?}, assignedPods {:?}, lastFailure {:?}",
        status.attempts, status.failed, status.assigned_pods, status.last_failure
    );
    // Requeued, not charged: with backoffLimit 0 a charged attempt would have failed it.
    assert_eq!(status.failed.unwrap_or(0), 0, "the lost GPU was charged");
    assert!(status.attempts.unwrap_or(0) >= 2, "{:?}", status.attempts);
    assert_eq!(
        status.assigned_pods.as_deref().and_then(<[String]>::first),
        Some(&FAULTY.to_owned()),
        "the first attempt was the faulty prover's"
    );
    // What the faulty prover reported stays on the job, and the operator's record of the
    // hand-back. (Once missing in about half the runs: the status write that records it lost
    // a race with the pool's reassignment of the job it had just unlabelled.)
    let report = status.prover_failure.clone().expect("proverFailure");
    assert_eq!(
        (report.reason.as_str(), report.pod.as_str(), report.attempt),
        ("GpuLost", FAULTY, 1)
    );
    assert!(
        report.message.contains("cudaErrorECCUncorrectable"),
        "{report:?}"
    );
    let last = status.last_failure.as_ref().expect("lastFailure");
    assert_eq!(
        (last.reason.as_str(), last.pod.as_str()),
        ("GpuLost", FAULTY)
    );
    // Proved by the other prover.
    assert_eq!(status.pod.as_deref(), Some(HEALTHY));
    for proof in status.proofs.iter().flatten() {
        assert_eq!(proof.proved_by, HEALTHY, "partition {}", proof.partition);
    }

    // The faulty prover is up, out of rotation, and says why.
    let pool = pools.get(POOL).await.unwrap();
    let pool_status = pool.status.unwrap();
    let entry = |pod: &str| {
        pool_status
            .provers
            .iter()
            .flatten()
            .find(|entry| entry.pod == pod)
            .unwrap_or_else(|| panic!("no entry for {pod}"))
            .clone()
    };
    let loss = entry(FAULTY).gpu_lost.expect("the faulty prover's gpuLost");
    assert_eq!(loss.device, 0);
    assert!(
        loss.message.contains("cudaErrorECCUncorrectable"),
        "{loss:?}"
    );
    assert!(entry(HEALTHY).gpu_lost.is_none());
    let condition =
        pool_condition(&pool_status, "ProversOnGpu").expect("the ProversOnGpu condition");
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "GpuLost"),
        "{condition:?}"
    );
    assert!(condition.message.contains(FAULTY), "{condition:?}");
    let live: Vec<(String, Option<String>)> = live_pods(&pods)
        .await
        .unwrap()
        .iter()
        .map(|pod| (pod.name_any(), pod.uid()))
        .collect();
    assert!(
        live.contains(&(FAULTY.to_owned(), faulty_uid)),
        "without PROOFPIPE_REQUIRE_GPU the prover stays up: {live:?}"
    );

    let faulty = scrape(&stack.runner.pod_log(FAULTY)).await;
    let healthy = scrape(&stack.runner.pod_log(HEALTHY)).await;
    assert_eq!(
        sample(&faulty, "proofpipe_prover_gpu_missing"),
        Some(1.0),
        "{faulty}"
    );
    assert_eq!(
        sample(
            &faulty,
            "proofpipe_daemon_job_failures_total{reason=\"GpuLost\"}"
        ),
        Some(1.0),
        "{faulty}"
    );
    assert_eq!(
        sample(&healthy, "proofpipe_prover_gpu_missing"),
        Some(0.0),
        "{healthy}"
    );

    // Warning Events on the job and on the pool.
    let events = stack.namespace.api::<Event>();
    let gpu_lost: Vec<Event> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("GpuLost"))
        .collect();
    for (kind, name) in [("ProofJob", "first"), ("ProverPool", POOL)] {
        let event = gpu_lost
            .iter()
            .find(|event| {
                let regarding = event.regarding.as_ref();
                regarding.and_then(|r| r.kind.as_deref()) == Some(kind)
                    && regarding.and_then(|r| r.name.as_deref()) == Some(name)
            })
            .unwrap_or_else(|| panic!("no GpuLost Event on {kind} {name}: {gpu_lost:?}"));
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        assert!(
            event
                .note
                .as_deref()
                .is_some_and(|note| note.contains(FAULTY)),
            "{event:?}"
        );
    }

    // Out of rotation: the next job goes to the other prover, though the faulty one is idle.
    stack.namespace.apply(&[job("second")]).await;
    let second = succeeded(&mut stack, "second").await;
    let status = second.status.unwrap();
    assert_eq!(
        status.assigned_pods.as_deref(),
        Some(&[HEALTHY.to_owned()][..]),
        "attempts {:?}, lastFailure {:?}",
        status.attempts,
        status.last_failure
    );
    assert_eq!(status.attempts, Some(1));
}
