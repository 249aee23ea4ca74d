//! The operator killed and restarted while jobs run and wait: every job still succeeds, and
//! no job is ever held by two pods, nor a pod given two jobs.
//!
//! Runs the real binaries (`cargo build -p proofpipe-prover -p proofpipe-operator`) against
//! the API server of `KUBECONFIG`; skips without it.

use kube::ResourceExt;
use proofpipe_crds::{ASSIGNED_POD_LABEL, ProofJobPhase};
use proofpipe_e2e::stack::{Stack, check_all_succeeded, phase};

#[tokio::test]
async fn operator_restart_assigns_no_job_twice() {
    let Some(mut stack) = Stack::start("operator-restart").await else {
        return;
    };
    let recorder = stack.record_assignments();
    stack.apply("pool.yaml").await;
    stack.apply("queue-jobs.yaml").await;
    let jobs = stack.jobs();

    let before = stack
        .wait_for("a job running while another waits", || async {
            let list = jobs
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            let assigned = list
                .items
                .iter()
                .filter(|j| j.labels().contains_key(ASSIGNED_POD_LABEL))
                .count();
            let waiting = list
                .items
                .iter()
                .filter(|j| phase(j) == Some(ProofJobPhase::Queued))
                .count();
            if assigned >= 1 && waiting >= 1 {
                Ok(format!("{assigned} assigned, {waiting} queued"))
            } else {
                Err(format!("{assigned} assigned, {waiting} queued"))
            }
        })
        .await;
    eprintln!("restarting the operator with {before}");
    stack.restart_operator();

    let names = stack
        .wait_for("every job Succeeded", || async {
            let list = jobs
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            check_all_succeeded(&list.items, 5)?;
            Ok(list.items.iter().map(|j| j.name_any()).collect::<Vec<_>>())
        })
        .await;

    let problems = recorder.with_log(|log| {
        let mut problems = log.violations().to_vec();
        // No prover failed, so no job had a reason to move.
        for name in &names {
            let pods = log.pods_of(name);
            if pods.len() != 1 {
                problems.push(format!("job {name} was assigned to {pods:?}"));
            }
        }
        problems
    });
    if !problems.is_empty() {
        panic!("{}\n{}", problems.join("\n"), stack.diagnostics());
    }
    for job in jobs.list(&Default::default()).await.unwrap().items {
        let attempts = job.status.as_ref().and_then(|s| s.attempts);
        assert_eq!(
            attempts,
            Some(1),
            "job {} was started more than once",
            job.name_any()
        );
    }
}
