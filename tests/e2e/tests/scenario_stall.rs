//! Nothing hangs silently: a prover whose stage never returns (the daemon's test fault hook
//! hangs every partition's synthesis the way a deadlock would) is found by its watchdog
//! within the pool's `progressDeadlineSeconds`, reports the job back (`lastFailure` says "no
//! progress for N s in stage proving") and exits, and the pod is replaced; a job cancelled
//! while its stage is stuck frees the prover within the cancel grace (30 s) the same way.
//!
//! Needs `KUBECONFIG` (skips without it).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{DeleteParams, DynamicObject};
use proofpipe_crds::ProofJobPhase;
use proofpipe_e2e::stack::{Stack, live_pods, phase};

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("a well-formed object")
}

/// A pool of one prover whose synthesis hangs, with `deadline` seconds of progress deadline.
fn stalling_pool(name: &str, deadline: i32, params_dir: &str) -> DynamicObject {
    object(serde_json::json!({
        "apiVersion": "proofpipe.dev/v1alpha1",
        "kind": "ProverPool",
        "metadata": { "name": name },
        "spec": {
            "replicas": 1,
            "progressDeadlineSeconds": deadline,
            "template": { "spec": { "containers": [{
                "name": "prover",
                "image": "proofpipe-prover:e2e",
                "args": ["--listen", "127.0.0.1:0", "--test-fault", "stall-synthesis"],
                "resources": { "limits": { "memory": "1Gi" } },
                "env": [{ "name": "PROOFPIPE_PARAMS_DIR", "value": params_dir }],
            }] } },
        },
    }))
}

fn job(name: &str, pool: &str) -> DynamicObject {
    object(serde_json::json!({
        "apiVersion": "proofpipe.dev/v1alpha1",
        "kind": "ProofJob",
        "metadata": { "name": name },
        "spec": {
            "pool": pool, "circuit": "mul-chain", "constraints": 1024, "partitions": 2,
            "backoffLimit": 0,
        },
    }))
}

/// The uid of the pool's one live pod.
async fn only_pod(stack: &mut Stack) -> String {
    let pods = stack.namespace.api::<Pod>();
    stack
        .wait_for("one prover pod", || async {
            match live_pods(&pods).await?.as_slice() {
                [pod] => Ok(pod.uid().unwrap()),
                other => Err(format!("{} pods", other.len())),
            }
        })
        .await
}

#[tokio::test]
async fn a_stalled_stage_is_found_reported_and_its_prover_replaced() {
    let Some(mut stack) = Stack::start("stall").await else {
        return;
    };
    let params = stack.params_dir().display().to_string();
    stack
        .namespace
        .apply(&[stalling_pool("stuck", 5, &params)])
        .await;
    let first = only_pod(&mut stack).await;
    stack.namespace.apply(&[job("hangs", "stuck")]).await;
    let jobs = stack.jobs();
    let running = stack
        .wait_for("the job to run", || async {
            let job = jobs.get("hangs").await.map_err(|e| e.to_string())?;
            match phase(&job) {
                Some(ProofJobPhase::Running) => Ok(Instant::now()),
                other => Err(format!("phase {other:?}")),
            }
        })
        .await;
    let failed = stack
        .wait_for(
            "the stalled job to be given up (backoffLimit 0)",
            || async {
                let job = jobs.get("hangs").await.map_err(|e| e.to_string())?;
                match phase(&job) {
                    Some(ProofJobPhase::Failed) => Ok(job),
                    other => Err(format!("phase {other:?}: {:?}", job.status)),
                }
            },
        )
        .await;
    let took = running.elapsed();
    let status = failed.status.unwrap();
    let last = status.last_failure.expect("lastFailure");
    assert_eq!(last.reason, "Stalled", "{last:?}");
    assert!(
        last.message.contains("no progress for") && last.message.contains("in stage proving"),
        "{last:?}"
    );
    // Parameters for a 1024-constraint circuit take a second or two; the deadline is 5 s.
    assert!(took < Duration::from_secs(60), "found after {took:?}");
    // The stuck prover exited and the pool replaced it.
    let pods = stack.namespace.api::<Pod>();
    stack
        .wait_for("a new prover pod", || async {
            let live = live_pods(&pods).await?;
            if live.len() == 1 && live[0].uid().unwrap() != first {
                Ok(())
            } else {
                Err(format!("{} pods", live.len()))
            }
        })
        .await;
}

#[tokio::test]
async fn a_job_cancelled_while_its_stage_is_stuck_frees_the_prover() {
    let Some(mut stack) = Stack::start("stall-cancel").await else {
        return;
    };
    let params = stack.params_dir().display().to_string();
    // A deadline far away: only the cancel grace can free this prover.
    stack
        .namespace
        .apply(&[stalling_pool("stuck", 3600, &params)])
        .await;
    let first = only_pod(&mut stack).await;
    stack.namespace.apply(&[job("cancelled", "stuck")]).await;
    let jobs = stack.jobs();
    stack
        .wait_for("the job to run", || async {
            let job = jobs.get("cancelled").await.map_err(|e| e.to_string())?;
            match phase(&job) {
                Some(ProofJobPhase::Running) => Ok(()),
                other => Err(format!("phase {other:?}")),
            }
        })
        .await;
    // Give the pipeline time to start the hanging synthesis, then cancel (delete) the job.
    tokio::time::sleep(Duration::from_secs(3)).await;
    jobs.delete("cancelled", &DeleteParams::default())
        .await
        .unwrap();
    let pods = stack.namespace.api::<Pod>();
    stack
        .wait_for("the stuck prover to be replaced", || async {
            let live = live_pods(&pods).await?;
            if live.len() == 1 && live[0].uid().unwrap() != first {
                Ok(())
            } else {
                Err(format!("{} pods", live.len()))
            }
        })
        .await;
}
