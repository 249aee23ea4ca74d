//! A pool and three jobs from YAML: every job ends Succeeded with a verified proof per
//! partition and a complete status; the pool reports its ready provers, which sized their
//! pipelines from the memory cgroup the pod runner gave them.
//!
//! Runs the real binaries (`cargo build -p proofpipe-prover -p proofpipe-operator`) against
//! the API server of `KUBECONFIG`; skips without it.

use kube::ResourceExt;
use proofpipe_crds::ProverPool;
use proofpipe_e2e::stack::{Stack, check_all_succeeded};

#[tokio::test]
async fn pool_proves_three_jobs() {
    let Some(mut stack) = Stack::start("pool-jobs").await else {
        return;
    };
    stack.apply("pool.yaml").await;
    stack.apply("jobs.yaml").await;
    let jobs = stack.jobs();

    stack
        .wait_for("every job Succeeded with verified proofs", || async {
            let list = jobs
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            check_all_succeeded(&list.items, 3)
        })
        .await;

    let finished = jobs.list(&Default::default()).await.unwrap().items;
    for job in &finished {
        if let Err(err) = stack.verify_proofs(job) {
            panic!("job {}: {err}", job.name_any());
        }
    }
    // The same check refuses a proof presented with a wrong public input.
    let mut tampered = finished[0].clone();
    let proofs = tampered.status.as_mut().unwrap().proofs.as_mut().unwrap();
    proofs[0].public_inputs[0] = format!("{:064x}", 12345);
    assert!(
        stack.verify_proofs(&tampered).is_err(),
        "a wrong input verified"
    );

    let pools = stack.namespace.api::<ProverPool>();
    let total_partitions: i64 = jobs
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|job| i64::from(job.spec.partition_count()))
        .sum();
    stack
        .wait_for("the pool to report 2 ready provers and every proof", || async {
            let pool = pools.get("gpu").await.map_err(|e| e.to_string())?;
            let status = pool.status.unwrap_or_default();
            let provers = status.provers.unwrap_or_default();
            let proved: i64 = provers.iter().map(|p| p.proofs_completed).sum();
            let pods: Vec<&str> = provers.iter().map(|p| p.pod.as_str()).collect();
            let selector_ok = status.selector.as_deref()
                == Some("proofpipe.dev/pool=gpu,app.kubernetes.io/name=proofpipe-prover");
            if status.ready_replicas == Some(2)
                && status.replicas == Some(2)
                && provers.len() == 2
                && proved == total_partitions
                && selector_ok
            {
                Ok(())
            } else {
                Err(format!(
                    "replicas {:?}, ready {:?}, selector {:?}, provers {pods:?} with {proved} of \
                     {total_partitions} proofs",
                    status.replicas, status.ready_replicas, status.selector
                ))
            }
        })
        .await;
    // The limit reached each prover through its memory cgroup, as on a node: the daemon
    // names the cgroup file it read, and sized its pipeline under 1 GiB.
    let provers = pools
        .get("gpu")
        .await
        .unwrap()
        .status
        .unwrap()
        .provers
        .unwrap();
    for prover in &provers {
        let limit = prover.sizing.as_ref().and_then(|s| s.memory_limit_bytes);
        assert_eq!(limit, Some(1 << 30), "sizing of {}", prover.pod);
        if let Some(cgroup) = stack.runner.pod_cgroup_dir(&prover.pod) {
            let log = stack.runner.pod_log(&prover.pod);
            let limit_file = cgroup.display().to_string();
            assert!(
                log.contains(&limit_file),
                "{}'s log does not name its cgroup {limit_file}:\n{log}",
                prover.pod
            );
        }
    }
    eprintln!(
        "jobs: {:?}",
        jobs.list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|j| (j.name_any(), j.status.as_ref().and_then(|s| s.pod.clone())))
            .collect::<Vec<_>>()
    );
}
