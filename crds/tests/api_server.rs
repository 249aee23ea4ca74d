//! The ProofJob CRD against a real API server: defaulting, validation messages, immutability
//! and status round trips (the ProverPool's are in api_server_pools.rs).
//!
//! Needs `KUBECONFIG` naming a cluster where CRDs may be installed, such as the local API
//! server of `../shared/kube-testenv` (`eval "$(../shared/kube-testenv/start.sh)"`). Without
//! `KUBECONFIG` each test prints why it is skipped and passes.
//!
//! Every test works in a namespace of its own. A test that passes deletes it; one that fails
//! leaves it behind for inspection.

mod support;

use support::*;

#[tokio::test]
async fn valid_objects_are_accepted_with_defaults() {
    let Some(cluster) = Cluster::connect("defaults").await else {
        return;
    };

    let job: ProofJob = cluster.create("job", valid_job()).await;
    assert_eq!(job.spec.pool, "gpu");
    assert_eq!(job.spec.circuit.as_deref(), Some("mul-chain"));
    assert_eq!(
        (job.spec.constraints, job.spec.partitions),
        (Some(4096), Some(4))
    );
    assert_eq!(job.spec.seed, 0);
    assert_eq!(job.spec.priority, 0);
    assert!(!job.spec.suspend);
    assert_eq!(job.spec.backoff_limit, 3);
    assert_eq!(job.spec.active_deadline_seconds, None);
    assert_eq!(job.spec.ttl_seconds_after_finished, None);

    let every_field = json!({
        "pool": "gpu", "circuit": "merkle-sha256", "constraints": 1 << 27, "partitions": 1024,
        "seed": 42, "priority": -5, "suspend": true, "backoffLimit": 0,
        "activeDeadlineSeconds": 1, "ttlSecondsAfterFinished": 0,
    });
    let job: ProofJob = cluster.create("every-field", every_field).await;
    assert_eq!(job.spec.seed, 42);
    assert_eq!(job.spec.active_deadline_seconds, Some(1));

    let pool: ProverPool = cluster
        .create(
            "pool",
            with(valid_pool(), json!({ "autoscaling": { "maxReplicas": 4 } })),
        )
        .await;
    assert_eq!(pool.spec.replicas, 1);
    for knob in [
        &pool.spec.pipeline.partition_workers,
        &pool.spec.pipeline.channel_capacity,
        &pool.spec.pipeline.gpu_workers,
    ] {
        assert_eq!(knob.as_str(), "auto");
    }
    let autoscaling = pool.spec.autoscaling.expect("autoscaling kept");
    assert_eq!((autoscaling.min_replicas, autoscaling.max_replicas), (0, 4));
    assert_eq!(autoscaling.target_queued_partitions_per_prover, 4);
    assert_eq!(autoscaling.scale_down_delay_seconds, 300);

    let fixed = with(
        valid_pool(),
        json!({ "pipeline": { "partitionWorkers": "6", "gpuWorkers": "auto" } }),
    );
    let pool: ProverPool = cluster.create("fixed", fixed).await;
    assert_eq!(pool.spec.pipeline.partition_workers.count(), Ok(Some(6)));
    assert_eq!(pool.spec.pipeline.channel_capacity.count(), Ok(None));

    cluster.delete_namespace().await;
}

#[tokio::test]
async fn invalid_proof_jobs_are_rejected() {
    let Some(cluster) = Cluster::connect("invalid-jobs").await else {
        return;
    };
    let cases = [
        (json!({ "pool": null }), "spec.pool: Required value"),
        (json!({ "pool": "" }), "spec.pool"),
        (
            json!({ "circuit": "foo" }),
            "circuit must be one of mul-chain, merkle-sha256",
        ),
        (
            json!({ "partitions": 0 }),
            "spec.partitions in body should be greater than or equal to 1",
        ),
        (
            json!({ "partitions": 1025 }),
            "spec.partitions in body should be less than or equal to 1024",
        ),
        (
            json!({ "constraints": -1 }),
            "spec.constraints in body should be greater than or equal to 1024",
        ),
        (
            json!({ "constraints": 1023 }),
            "spec.constraints in body should be greater than or equal to 1024",
        ),
        (
            json!({ "constraints": (1 << 27) + 1 }),
            "spec.constraints in body should be less than or equal to 134217728",
        ),
        (
            json!({ "seed": -1 }),
            "spec.seed in body should be greater than or equal to 0",
        ),
        (
            json!({ "backoffLimit": -1 }),
            "spec.backoffLimit in body should be greater than or equal to 0",
        ),
        (
            json!({ "activeDeadlineSeconds": 0 }),
            "spec.activeDeadlineSeconds in body should be greater than or equal to 1",
        ),
        (
            json!({ "ttlSecondsAfterFinished": -1 }),
            "spec.ttlSecondsAfterFinished in body should be greater than or equal to 0",
        ),
    ];
    for (change, expected) in cases {
        cluster
            .assert_rejected::<ProofJob>(with(valid_job(), change), expected)
            .await;
    }
    let either = "set either filecoin (a Filecoin proof) or circuit, constraints and partitions";
    let filecoin_cases = [
        (
            with(valid_filecoin_job(), json!({ "circuit": "mul-chain" })),
            either,
        ),
        (with(valid_job(), json!({ "circuit": null })), either),
        (
            with(valid_job(), json!({ "constraints": null })),
            "a synthetic job needs circuit, constraints and partitions",
        ),
        (
            with(valid_filecoin_job(), json!({ "partitions": 10 })),
            "a Filecoin job takes its partitions from its registered proof",
        ),
        (
            with(valid_snap_job(), json!({ "constraints": 1024 })),
            "a Filecoin job takes its partitions from its registered proof",
        ),
        (
            filecoin_with(json!({ "sealProof": null })),
            "a PoRepC2 job needs sealProof",
        ),
        (
            filecoin_with(json!({ "updateProof": "StackedDrg32GiBV1" })),
            "a PoRepC2 job names its proof by sealProof: leave updateProof, postProof unset",
        ),
        (
            snap_with(json!({ "updateProof": null })),
            "a SnapDealsUpdate job needs updateProof",
        ),
        (
            snap_with(json!({ "kind": "WindowPoStPartition", "updateProof": null })),
            "a WindowPoStPartition job needs postProof",
        ),
        (
            snap_with(json!({
                "kind": "WinningPoSt", "updateProof": null, "postProof": "StackedDrgWindow2KiBV1_2",
            })),
            "a WinningPoSt job's postProof is a StackedDrgWinning… proof",
        ),
        (
            snap_with(
                json!({ "kind": "WindowPoStPartition", "postProof": "StackedDrgWindow2KiBV1_2" }),
            ),
            "a PoSt job names its proof by postProof, and its miner and sectors in its input: \
             leave sealProof, minerId, proverId, sectorNumber, updateProof unset",
        ),
        (
            snap_with(json!({
                "kind": "WindowPoStPartition", "updateProof": null,
                "postProof": "StackedDrgWindow32GiBV1",
            })),
            "postProof must be one of StackedDrgWinning2KiBV1",
        ),
        (
            snap_with(json!({ "updateProof": "StackedDrg32GiBV1_1" })),
            "updateProof must be one of StackedDrg2KiBV1, StackedDrg8MiBV1",
        ),
        (
            snap_with(json!({ "sealProof": "StackedDrg32GiBV1_1" })),
            "leave sealProof, minerId, proverId, sectorNumber, postProof unset",
        ),
        (
            snap_with(json!({ "minerId": 1000 })),
            "a SnapDealsUpdate job names its proof by updateProof, and its sector by the \
             commitments in its input",
        ),
        (
            snap_with(json!({ "sectorNumber": 7 })),
            "leave sealProof, minerId, proverId, sectorNumber, postProof unset",
        ),
        (
            snap_with(json!({ "kind": "PoRepC2" })),
            "a PoRepC2 job needs sealProof",
        ),
        (
            filecoin_with(json!({ "sealProof": "StackedDrg16GiBV1_1" })),
            "sealProof must be one of StackedDrg2KiBV1_1",
        ),
        (
            filecoin_with(json!({ "proverId": "00".repeat(32) })),
            "give minerId or proverId, not both",
        ),
        (
            filecoin_with(json!({ "minerId": null, "proverId": "XY" })),
            "spec.filecoin.proverId in body should match",
        ),
        (
            filecoin_with(
                json!({ "input": { "url": "ftp://host/c1", "sha256": "ab".repeat(32) } }),
            ),
            "url must start with s3://, http://, https:// or file:///",
        ),
        (
            filecoin_with(json!({ "input": { "url": "s3://b/k", "sha256": "abc" } })),
            "spec.filecoin.input.sha256 in body should match",
        ),
        (
            filecoin_with(json!({ "input": { "url": "s3://b/k" } })),
            "spec.filecoin.input.sha256: Required value",
        ),
        (
            filecoin_with(json!({ "kind": "WindowPoSt" })),
            "spec.filecoin.kind: Unsupported value",
        ),
        (
            snap_with(json!({ "input": { "url": "s3://b/k", "sha256": "abc" } })),
            "spec.filecoin.input.sha256 in body should match",
        ),
    ];
    for (spec, expected) in filecoin_cases {
        cluster.assert_rejected::<ProofJob>(spec, expected).await;
    }
    let longest_pool = "p".repeat(proofpipe_crds::MAX_POOL_NAME);
    let cases = [
        Case::new(
            "pool-not-a-name",
            with(valid_job(), json!({ "pool": "GPU_pool" })),
            &["spec.pool in body should match"],
            with(valid_job(), json!({ "pool": "gpu-pool" })),
        ),
        Case::new(
            "pool-too-long",
            with(valid_job(), json!({ "pool": format!("{longest_pool}p") })),
            &["spec.pool: Too long"],
            with(valid_job(), json!({ "pool": longest_pool })),
        ),
        Case::new(
            "merkle-too-small",
            with(
                valid_job(),
                json!({ "circuit": "merkle-sha256", "constraints": 26_869 }),
            ),
            &[
                "spec.constraints: Invalid value",
                "merkle-sha256 needs at least 26870",
            ],
            with(
                valid_job(),
                json!({ "circuit": "merkle-sha256", "constraints": 26_870 }),
            ),
        ),
    ];
    for case in cases {
        cluster
            .assert_rejected_named::<ProofJob>(case.name, case.bad, case.expected)
            .await;
        cluster
            .assert_admitted::<ProofJob>(case.name, case.good)
            .await;
    }
    // mul-chain's own minimum is below the common one, which is its bound.
    cluster
        .assert_admitted::<ProofJob>(
            "mul-chain-smallest",
            with(
                valid_job(),
                json!({ "constraints": proofpipe_crds::MIN_CONSTRAINTS }),
            ),
        )
        .await;
    let job: ProofJob = cluster.create("sector-7", valid_filecoin_job()).await;
    assert_eq!(job.spec.partition_count(), 10);
    assert_eq!(
        job.spec.filecoin.as_ref().map(|f| f.kind),
        Some(proofpipe_crds::FilecoinProofKind::PoRepC2),
        "kind defaults to PoRepC2"
    );
    let snap: ProofJob = cluster.create("snap-7", valid_snap_job()).await;
    assert_eq!(
        snap.spec.partition_count(),
        16,
        "16 partitions for a 32 GiB update"
    );
    assert_eq!(
        snap.spec.work_name(),
        "SnapDealsUpdate StackedDrg32GiBV1",
        "what the prover logs"
    );
    for (kind, post_proof) in [
        ("WindowPoStPartition", "StackedDrgWindow32GiBV1_2"),
        ("WinningPoSt", "StackedDrgWinning32GiBV1"),
    ] {
        let post: ProofJob = cluster
            .create(
                &kind.to_ascii_lowercase(),
                snap_with(json!({ "kind": kind, "updateProof": null, "postProof": post_proof })),
            )
            .await;
        assert_eq!(post.spec.partition_count(), 1, "{kind}: one partition");
        assert_eq!(post.spec.work_name(), format!("{kind} {post_proof}"));
    }
    for (update_proof, partitions) in proofpipe_crds::UPDATE_PROOFS {
        let name = format!("snap-{}", update_proof.to_ascii_lowercase());
        let job: ProofJob = cluster
            .create(&name, snap_with(json!({ "updateProof": update_proof })))
            .await;
        assert_eq!(job.spec.partition_count(), *partitions, "{update_proof}");
    }
    cluster.delete_namespace().await;
}

#[tokio::test]
async fn proof_job_identity_is_immutable() {
    let Some(cluster) = Cluster::connect("immutable").await else {
        return;
    };
    let _: ProofJob = cluster.create("job", valid_job()).await;
    let jobs = cluster.api::<ProofJob>();
    let params = PatchParams::default();
    // Each field's change is refused with a message naming that field.
    for (change, expected) in [
        (
            json!({ "pool": "other" }),
            ["spec.pool: Invalid value", "pool is immutable"],
        ),
        (
            json!({ "circuit": "merkle-sha256", "constraints": 32768 }),
            ["spec.circuit: Invalid value", "circuit is immutable"],
        ),
        (
            json!({ "constraints": 8192 }),
            [
                "spec.constraints: Invalid value",
                "constraints is immutable",
            ],
        ),
        (
            json!({ "partitions": 5 }),
            ["spec.partitions: Invalid value", "partitions is immutable"],
        ),
        (
            json!({ "seed": 7 }),
            ["spec.seed: Invalid value", "seed is immutable"],
        ),
    ] {
        let result = jobs
            .patch("job", &params, &Patch::Merge(json!({ "spec": change })))
            .await;
        for part in expected {
            assert_api_error(result_message(&result), part, &format!("changing {change}"));
        }
    }
    let added_or_removed =
        "filecoin, circuit, constraints and partitions cannot be added or removed";
    let to_filecoin = json!({ "spec": with(valid_filecoin_job(), json!({
        "circuit": null, "constraints": null, "partitions": null })) });
    let result = jobs.patch("job", &params, &Patch::Merge(to_filecoin)).await;
    assert_api_error(
        result,
        added_or_removed,
        "turning a synthetic job into a Filecoin one",
    );

    let _: ProofJob = cluster.create("sector", valid_filecoin_job()).await;
    let moved = json!({ "spec": { "filecoin": { "input": { "url": "s3://other/c1.json" } } } });
    let result = jobs.patch("sector", &params, &Patch::Merge(moved)).await;
    assert_api_error(
        result_message(&result),
        "spec.filecoin: Invalid value",
        "changing a Filecoin job's input",
    );
    assert_api_error(
        result,
        "filecoin is immutable",
        "changing a Filecoin job's input",
    );
    let _: ProofJob = cluster.create("snap", valid_snap_job()).await;
    for change in [
        json!({ "updateProof": "StackedDrg64GiBV1" }),
        json!({ "input": { "url": "s3://other/snap.json" } }),
    ] {
        let result = jobs
            .patch(
                "snap",
                &params,
                &Patch::Merge(json!({ "spec": { "filecoin": change } })),
            )
            .await;
        assert_api_error(
            result,
            "filecoin is immutable",
            &format!("changing a SnapDeals job's {change}"),
        );
    }

    let scheduling = json!({ "spec": { "priority": 10, "suspend": true, "backoffLimit": 1 } });
    let job = jobs
        .patch("job", &params, &Patch::Merge(scheduling))
        .await
        .expect("priority, suspend and backoffLimit may change");
    assert_eq!((job.spec.priority, job.spec.suspend), (10, true));
    cluster.delete_namespace().await;
}

#[tokio::test]
async fn proof_job_status_round_trips() {
    let Some(cluster) = Cluster::connect("job-status").await else {
        return;
    };
    let _: ProofJob = cluster.create("job", valid_job()).await;
    let status = ProofJobStatus {
        phase: Some(ProofJobPhase::Running),
        pod: Some("gpu-0".into()),
        assigned_at: Some(now()),
        partitions_done: Some(1),
        partitions_total: Some(4),
        progress: Some("1/4".into()),
        attempts: Some(2),
        assigned_pods: Some(vec!["gpu-1".into(), "gpu-0".into()]),
        failed: Some(1),
        next_attempt_after: Some(now()),
        last_failure: Some(AttemptFailure {
            attempt: 1,
            pod: "gpu-1".into(),
            reason: "OOMKilled".into(),
            message: "prover pod gpu-1 terminated during attempt 1".into(),
            time: now(),
        }),
        prover_failure: Some(ProverFailure {
            pod: "gpu-1".into(),
            attempt: 1,
            reason: "StorageUnavailable".into(),
            message: "reading s3://b/c1.json: connection refused".into(),
            permanent: false,
            time: now(),
        }),
        stage_seconds: Some(StageSeconds {
            synthesis: 1.5,
            queue_wait: 0.25,
            gpu: 3.0,
            finalize: 0.125,
        }),
        proofs: Some(vec![PartitionProof {
            partition: 0,
            proof: "cHJvb2Y=".into(),
            verified: true,
            public_inputs: vec!["0x2a".into()],
            proved_by: "gpu-0".into(),
        }]),
        start_time: Some(now()),
        completion_time: None,
        message: Some("proving".into()),
        filecoin: None,
        conditions: Some(vec![Condition {
            type_: "Assigned".into(),
            status: "True".into(),
            reason: "ProverAvailable".into(),
            message: "assigned to gpu-0".into(),
            last_transition_time: now(),
            observed_generation: Some(1),
        }]),
        observed_generation: Some(1),
    };
    let jobs = cluster.api::<ProofJob>();
    let patch = Patch::Merge(json!({ "status": status }));
    let job = jobs
        .patch_status("job", &PatchParams::default(), &patch)
        .await
        .expect("the status schema accepts a full ProofJobStatus");
    assert_eq!(job.status, Some(status));

    // Conditions keep Kubernetes' constraints on metav1.Condition.
    let condition = |status: &str, reason: &str| {
        json!({ "status": { "conditions": [{
            "type": "Assigned", "status": status, "reason": reason, "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }] } })
    };
    for (patch, expected) in [
        (
            condition("Yes", "ProverAvailable"),
            "status.conditions[0].status: Unsupported value: \"Yes\"",
        ),
        (
            condition("True", "no spaces allowed"),
            "status.conditions[0].reason: Invalid value: \"no spaces allowed\"",
        ),
        (
            condition("True", ""),
            "status.conditions[0].reason: Invalid value: \"\"",
        ),
    ] {
        let result = jobs
            .patch_status("job", &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        assert_api_error(result, expected, &format!("patching {patch}"));
    }
    jobs.patch_status(
        "job",
        &PatchParams::default(),
        &Patch::Merge(condition("Unknown", "Requeued")),
    )
    .await
    .expect("a well-formed condition is admitted");
    cluster.delete_namespace().await;
}
