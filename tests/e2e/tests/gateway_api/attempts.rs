//! A request id as a series of attempts, as curio retries it, and a full queue.

use super::*;

#[tokio::test]
async fn a_request_id_resubmitted_after_its_cancel_starts_afresh() {
    let Some(harness) = Harness::start("gateway-resubmit", 256 << 20, true).await else {
        return;
    };
    let mut client = harness.client().await;
    let request = || authed(porep("porep-1000-9", 9, Priority::Normal));
    let first = client.submit_proof(request()).await.unwrap().into_inner();
    let first_uid = harness
        .jobs()
        .get(&first.job_id)
        .await
        .unwrap()
        .metadata
        .uid;
    // Something (the operator, in a cluster) holds the job while it is deleted.
    harness
        .jobs()
        .patch(
            &first.job_id,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"finalizers": ["test/hold"]}})),
        )
        .await
        .unwrap();
    client
        .cancel_proof(authed(CancelProofRequest {
            job_id: first.job_id.clone(),
        }))
        .await
        .unwrap();
    eventually("the cancelled job being deleted in the cache", || {
        harness
            .gateway
            .caches()
            .job(&first.job_id)
            .is_some_and(|job| job.metadata.deletion_timestamp.is_some())
    })
    .await;
    // While it is being deleted, the same request id starts its next attempt at once.
    let meanwhile = client.submit_proof(request()).await.unwrap().into_inner();
    assert_eq!(meanwhile.job_id, attempt_name(&first.job_id, 2));
    let second = harness.jobs().get(&meanwhile.job_id).await.unwrap();
    assert_eq!(
        second.metadata.annotations.as_ref().unwrap()[REPLACES_ANNOTATION],
        format!("{} (cancelled; previous_cancelled)", first.job_id)
    );

    harness
        .jobs()
        .patch(
            &first.job_id,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("the cancelled job gone from the cache", || {
        harness.gateway.caches().job(&first.job_id).is_none()
    })
    .await;
    // The new attempt is unfinished and proves the same: a retry reattaches to it.
    let again = client.submit_proof(request()).await.unwrap().into_inner();
    assert_eq!(again.job_id, meanwhile.job_id);
    let job = harness.jobs().get(&again.job_id).await.unwrap();
    assert!(job.metadata.deletion_timestamp.is_none());
    assert_ne!(
        job.metadata.uid, first_uid,
        "a new job, not the cancelled one"
    );
    harness.namespace.delete().await;
}

/// curio's request ids are deterministic per sector and it retries failed proofs under the
/// same id: each retry after a failure is a new attempt, a new input replaces the old job, the
/// same input reattaches (docs/gateway.md, "Request ids").
#[tokio::test]
async fn a_request_id_is_a_series_of_attempts_as_curio_retries_it() {
    let Some(harness) = Harness::start("gateway-attempts", 256 << 20, true).await else {
        return;
    };
    let mut client = harness.client().await;
    let id = "porep-1000-7";
    let submit = |sector: u64| authed(porep(id, sector, Priority::Normal));
    let annotation = |job: &ProofJob, key: &str| {
        job.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key).cloned())
    };

    let first = client.submit_proof(submit(7)).await.unwrap().into_inner();
    harness
        .set_status(
            &first.job_id,
            serde_json::json!({"phase": "Failed", "message": "the C1 output is corrupt"}),
        )
        .await;
    harness
        .until_cached_in(&first.job_id, ProofJobPhase::Failed)
        .await;

    // The retry after a failure is attempt 2; the failed job stays (its outcome is history).
    let second = client.submit_proof(submit(7)).await.unwrap().into_inner();
    assert_eq!(second.job_id, attempt_name(&first.job_id, 2));
    let second_job = harness.jobs().get(&second.job_id).await.unwrap();
    assert_eq!(
        annotation(&second_job, ATTEMPT_ANNOTATION).as_deref(),
        Some("2")
    );
    assert_eq!(
        annotation(&second_job, REPLACES_ANNOTATION),
        Some(format!("{} (Failed; previous_failed)", first.job_id))
    );
    assert!(
        harness
            .jobs()
            .get_opt(&first.job_id)
            .await
            .unwrap()
            .is_some()
    );
    // Its retry, while it is unfinished, reattaches.
    let again = client.submit_proof(submit(7)).await.unwrap().into_inner();
    assert_eq!(again.job_id, second.job_id);

    // A new C1 output for the sector (a new seed) replaces the unfinished attempt, whose
    // waiting caller is told it was cancelled.
    eventually("attempt 2 in the cache", || {
        harness.gateway.caches().job(&second.job_id).is_some()
    })
    .await;
    let waiting = spawn_await(&client, &second.job_id);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let third = client.submit_proof(submit(8)).await.unwrap().into_inner();
    assert_eq!(third.job_id, attempt_name(&first.job_id, 3));
    let answer = waiting.await.unwrap().unwrap();
    assert_eq!(status_of(&answer), AwaitStatus::Cancelled);
    assert!(
        harness
            .jobs()
            .get_opt(&second.job_id)
            .await
            .unwrap()
            .is_none()
    );
    let third_job = harness.jobs().get(&third.job_id).await.unwrap();
    assert_eq!(
        third_job.spec.filecoin.as_ref().unwrap().sector_number,
        Some(8)
    );

    // Once it succeeded, the same input answers its proof; the same bytes as another proof
    // type are other work (the old gateway returned the old proof for them).
    harness
        .set_status(
            &third.job_id,
            serde_json::json!({
                "phase": "Succeeded",
                "filecoin": {
                    "proof": base64::engine::general_purpose::STANDARD.encode([3u8; 192]),
                    "proofBytes": 192, "verified": true, "provedBy": "gpu-prover-0"
                },
            }),
        )
        .await;
    harness
        .until_cached_in(&third.job_id, ProofJobPhase::Succeeded)
        .await;
    let proved = client
        .prove(authed(ProveRequest {
            submit: Some(porep(id, 8, Priority::Normal)),
        }))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(
        (proved.job_id.as_str(), proved.proof.as_slice()),
        (third.job_id.as_str(), &[3u8; 192][..])
    );
    let mut synthetic = porep(id, 8, Priority::Normal);
    synthetic.registered_proof = 10;
    let fourth = client
        .submit_proof(authed(synthetic))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(fourth.job_id, attempt_name(&first.job_id, 4));
    assert_eq!(
        annotation(
            &harness.jobs().get(&fourth.job_id).await.unwrap(),
            REPLACES_ANNOTATION
        ),
        Some(format!("{} (Succeeded; other_work)", third.job_id))
    );
    assert!(
        harness
            .jobs()
            .get_opt(&third.job_id)
            .await
            .unwrap()
            .is_some(),
        "a finished attempt is kept until its TTL"
    );

    let metrics = harness.gateway.metrics().render();
    for line in [
        r#"proofpipe_gateway_new_attempts_total{reason="previous_failed"} 1"#,
        r#"proofpipe_gateway_new_attempts_total{reason="other_work"} 2"#,
        "proofpipe_gateway_jobs_created_total 4",
        "proofpipe_gateway_duplicate_submissions_total 2",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
    harness.namespace.delete().await;
}

/// `--max-queued`: new work is refused with RESOURCE_EXHAUSTED while that many jobs wait; a
/// resubmission of a waiting job is still answered.
#[tokio::test]
async fn a_full_queue_refuses_new_work_but_answers_resubmissions() {
    let limits = Limits {
        max_queued: Some(1),
    };
    let Some(harness) =
        Harness::start_with("gateway-queue-cap", 256 << 20, true, false, limits).await
    else {
        return;
    };
    let mut client = harness.client().await;
    let first = client
        .submit_proof(authed(porep("porep-1000-1", 1, Priority::Normal)))
        .await
        .unwrap()
        .into_inner();
    eventually("the first job in the cache", || {
        harness.gateway.caches().job(&first.job_id).is_some()
    })
    .await;
    let refused = client
        .submit_proof(authed(porep("porep-1000-2", 2, Priority::Normal)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("--max-queued is 1"),
        "{refused:?}"
    );
    let again = client
        .submit_proof(authed(porep("porep-1000-1", 1, Priority::Normal)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.job_id, first.job_id);

    // Once the first is on a prover, there is room again.
    harness
        .jobs()
        .patch(
            &first.job_id,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {
                proofpipe_crds::ASSIGNED_POD_LABEL: "gpu-prover-0"}}})),
        )
        .await
        .unwrap();
    eventually("the first job assigned in the cache", || {
        harness
            .gateway
            .caches()
            .job(&first.job_id)
            .and_then(|j| j.metadata.labels.clone())
            .is_some_and(|labels| labels.contains_key(proofpipe_crds::ASSIGNED_POD_LABEL))
    })
    .await;
    client
        .submit_proof(authed(porep("porep-1000-2", 2, Priority::Normal)))
        .await
        .unwrap();
    assert!(
        harness
            .gateway
            .metrics()
            .render()
            .contains(r#"proofpipe_gateway_refused_queue_full_total{pool="gpu"} 1"#)
    );
    harness.namespace.delete().await;
}
