//! PoSt as curio sends it: a deadline's partitions under one request id, and pools per kind.

use super::*;

/// curio's WindowPoSt partition request (`GenerateWindowPoStCuzk`): the deadline's id and
/// randomness, partition index 0, and this partition's own sectors' vanilla proofs.
fn window_partition(request_id: &str, sector: u8) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::WindowPostPartition as i32,
        sector_size: 2048,
        registered_proof: 10,
        priority: Priority::High as i32,
        vanilla_proofs: vec![vec![sector; 80]],
        miner_id: 1000,
        randomness: vec![9; 32],
        partition_index: 0,
        ..Default::default()
    }
}

fn winning(request_id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::WinningPost as i32,
        registered_proof: 0,
        priority: Priority::Critical as i32,
        vanilla_proofs: vec![vec![4; 80]],
        miner_id: 1000,
        randomness: vec![8; 32],
        ..Default::default()
    }
}

fn succeeded(proof: &[u8]) -> serde_json::Value {
    serde_json::json!({
        "phase": "Succeeded",
        "filecoin": {
            "proof": base64::engine::general_purpose::STANDARD.encode(proof),
            "proofBytes": proof.len(), "verified": true, "provedBy": "gpu-prover-0"
        },
    })
}

/// Every partition of one deadline sent at once under the deadline's one request id: a job
/// each, none cancelled, each answered with its own proof; the same partition sent again
/// reattaches; a failed partition's retry proves again without touching the others.
#[tokio::test]
async fn a_deadline_s_partitions_under_one_request_id_never_cancel_each_other() {
    let Some(harness) = Harness::start("gateway-deadline", 256 << 20, true).await else {
        return;
    };
    let client = harness.client().await;
    let id = "wdpost-1000-0-0909090909090909";
    let sectors = [1u8, 2, 3, 4];
    let sent = sectors.map(|sector| {
        let mut client = client.clone();
        tokio::spawn(async move {
            let request = authed(window_partition(id, sector));
            client.submit_proof(request).await.map(|r| r.into_inner())
        })
    });
    let mut jobs = Vec::new();
    for answer in sent {
        jobs.push(answer.await.unwrap().unwrap().job_id);
    }
    let distinct: std::collections::BTreeSet<_> = jobs.iter().collect();
    assert_eq!(
        distinct.len(),
        sectors.len(),
        "a job per partition: {jobs:?}"
    );
    for job in &jobs {
        let found = harness.jobs().get(job).await.unwrap();
        assert!(
            found.metadata.deletion_timestamp.is_none(),
            "{job} was cancelled by another partition of its deadline"
        );
        assert!(
            !found
                .metadata
                .annotations
                .as_ref()
                .unwrap()
                .contains_key(REPLACES_ANNOTATION),
            "{job} replaces nothing"
        );
    }

    // Each is answered with its own proof.
    let waiting: Vec<_> = jobs.iter().map(|job| spawn_await(&client, job)).collect();
    for (k, job) in jobs.iter().enumerate() {
        harness.set_status(job, succeeded(&[k as u8; 192])).await;
    }
    for (k, answer) in waiting.into_iter().enumerate() {
        let done = answer.await.unwrap().unwrap();
        assert_eq!(status_of(&done), AwaitStatus::Completed);
        assert_eq!(
            (done.job_id.as_str(), done.proof),
            (jobs[k].as_str(), vec![k as u8; 192])
        );
    }

    // The same partition again, after it finished: the same job and proof, nothing new.
    for job in &jobs {
        harness.until_cached_in(job, ProofJobPhase::Succeeded).await;
    }
    let mut client = client;
    let again = client
        .prove(authed(ProveRequest {
            submit: Some(window_partition(id, sectors[1])),
        }))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(again.job_id, jobs[1]);
    assert_eq!(again.proof, vec![1u8; 192]);

    // A partition whose job failed: its retry is its own next attempt; the rest stand.
    harness
        .set_status(
            &jobs[2],
            serde_json::json!({"phase": "Failed", "message": "a vanilla proof does not verify"}),
        )
        .await;
    harness
        .until_cached_in(&jobs[2], ProofJobPhase::Failed)
        .await;
    let retry = client
        .submit_proof(authed(window_partition(id, sectors[2])))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(retry.job_id, attempt_name(&jobs[2], 2));
    let listed = harness
        .jobs()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(
        listed.len(),
        sectors.len() + 1,
        "the four partitions and one retry"
    );
    assert!(
        listed
            .iter()
            .all(|j| j.metadata.deletion_timestamp.is_none())
    );
    harness.namespace.delete().await;
}

/// `--pool gpu --pool winning-post=warm --pool window-post=warm`: each kind's jobs in its
/// pool, GetStatus's queues over both pools.
#[tokio::test]
async fn each_kind_goes_to_the_pool_routed_for_it() {
    let routes = PoolRoutes::parse(&["gpu", "winning-post=warm", "window-post=warm"]).unwrap();
    let Some(harness) = Harness::start_routed("gateway-routes", routes).await else {
        return;
    };
    let mut client = harness.client().await;
    let mut pool_of = async |request: SubmitProofRequest| {
        let job = client
            .submit_proof(authed(request))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        harness.jobs().get(&job).await.unwrap().spec.pool
    };
    assert_eq!(
        pool_of(porep("porep-1000-1", 1, Priority::Normal)).await,
        "gpu"
    );
    assert_eq!(pool_of(snap("snap-1000-1", 1)).await, "gpu");
    assert_eq!(
        pool_of(window_partition("wdpost-1000-0-1", 1)).await,
        "warm"
    );
    assert_eq!(pool_of(winning("winning-1000-1")).await, "warm");

    eventually("the four jobs in the cache", || {
        harness.gateway.caches().jobs().len() == 4
    })
    .await;
    let status = client
        .get_status(authed(GetStatusRequest {}))
        .await
        .unwrap()
        .into_inner();
    let pending: Vec<_> = status
        .queues
        .iter()
        .map(|q| (q.proof_kind.as_str(), q.pending))
        .collect();
    assert_eq!(
        pending,
        [
            ("porep-c2", 1),
            ("snap-update", 1),
            ("window-post", 1),
            ("winning-post", 1)
        ]
    );
    // Per-pool queue gauges on /metrics.
    let metrics = client
        .get_metrics(authed(GetMetricsRequest {}))
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    for line in [
        r#"proofpipe_gateway_queued_jobs{kind="winning-post",pool="warm"} 1"#,
        r#"proofpipe_gateway_queued_jobs{kind="porep-c2",pool="gpu"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
    harness.namespace.delete().await;
}
