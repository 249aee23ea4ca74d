//! The ProverPool CRD against a real API server: validation messages, pools that can never
//! work refused by field, status and the scale subresource. Needs `KUBECONFIG` (see
//! api_server.rs); without it each test says why it is skipped and passes.

mod support;

use support::*;

#[tokio::test]
async fn invalid_prover_pools_are_rejected() {
    let Some(cluster) = Cluster::connect("invalid-pools").await else {
        return;
    };
    let knob_message = "must be \"auto\" or a positive integer";
    let cases = [
        (json!({ "template": null }), "spec.template: Required value"),
        (
            json!({ "template": {} }),
            "spec.template.spec: Required value",
        ),
        (
            json!({ "replicas": -1 }),
            "spec.replicas in body should be greater than or equal to 0",
        ),
        (
            json!({ "autoscaling": { "minReplicas": 3, "maxReplicas": 2 } }),
            "minReplicas must not exceed maxReplicas",
        ),
        (
            json!({ "autoscaling": { "maxReplicas": 0 } }),
            "spec.autoscaling.maxReplicas in body should be greater than or equal to 1",
        ),
        (
            json!({ "autoscaling": { "maxReplicas": 2, "targetQueuedPartitionsPerProver": 0 } }),
            "spec.autoscaling.targetQueuedPartitionsPerProver in body should be greater than or equal to 1",
        ),
        (
            json!({ "pipeline": { "partitionWorkers": "abc" } }),
            knob_message,
        ),
        (
            json!({ "pipeline": { "channelCapacity": "0" } }),
            knob_message,
        ),
        (json!({ "pipeline": { "gpuWorkers": "-2" } }), knob_message),
        (json!({ "pipeline": { "gpuWorkers": "01" } }), knob_message),
    ];
    for (change, expected) in cases {
        cluster
            .assert_rejected::<ProverPool>(with(valid_pool(), change), expected)
            .await;
    }
    // The knob errors name the field they are about.
    cluster
        .assert_rejected::<ProverPool>(
            with(
                valid_pool(),
                json!({ "pipeline": { "partitionWorkers": "abc" } }),
            ),
            "spec.pipeline.partitionWorkers",
        )
        .await;
    cluster.delete_namespace().await;
}

/// What can never work in a pool's name and pod template is refused at admission, with a
/// message that names the field; the nearest well-formed pool is admitted.

#[tokio::test]
async fn pools_that_can_never_work_are_refused_by_field() {
    let Some(cluster) = Cluster::connect("pool-admission").await else {
        return;
    };
    let longest = "p".repeat(proofpipe_crds::MAX_POOL_NAME);
    let cases = [
        Case::new(
            "no-prover",
            pool_with_pod_spec(json!({ "containers": [{ "name": "sidecar", "image": "s:1" }] })),
            &[
                "spec.template.spec: Invalid value",
                "containers must include the one named prover",
            ],
            pool_with_pod_spec(json!({ "containers": [
                { "name": "sidecar", "image": "s:1" },
                { "name": "prover", "image": "p:1" },
            ] })),
        ),
        Case::new(
            "no-containers",
            pool_with_pod_spec(json!({ "containers": [] })),
            &["spec.template.spec.containers in body should have at least 1 items"],
            valid_pool(),
        ),
        Case::new(
            "no-image",
            pool_with_prover(json!({ "image": null })),
            &[
                "spec.template.spec.containers[0].image",
                "image is required",
            ],
            pool_with_prover(json!({ "image": "p:2" })),
        ),
        Case::new(
            "init-no-image",
            pool_with_pod_spec(json!({ "initContainers": [{ "name": "fetch" }] })),
            &[
                "spec.template.spec.initContainers[0].image",
                "image is required",
            ],
            pool_with_pod_spec(json!({ "initContainers": [{ "name": "fetch", "image": "f:1" }] })),
        ),
        Case::new(
            "pod-resources",
            pool_with_pod_spec(json!({ "resources": { "limits": { "memory": "lots" } } })),
            &[
                "spec.template.spec.resources.limits",
                "every value must be a non-negative quantity",
            ],
            pool_with_pod_spec(json!({ "resources": { "limits": { "memory": "120Gi" } } })),
        ),
        Case::new(
            "pull-policy",
            pool_with_prover(json!({ "imagePullPolicy": "Sometimes" })),
            &["spec.template.spec.containers[0].imagePullPolicy: Unsupported value"],
            pool_with_prover(json!({ "imagePullPolicy": "IfNotPresent" })),
        ),
        Case::new(
            "env-name",
            pool_with_prover(json!({ "env": [{ "name": "1-BAD", "value": "x" }] })),
            &["spec.template.spec.containers[0].env[0].name in body should match"],
            pool_with_prover(json!({ "env": [{ "name": "GOOD_1", "value": "x" }] })),
        ),
        Case::new(
            "reserved-env",
            pool_with_prover(json!({ "env": [
                { "name": "RUST_LOG", "value": "info" },
                { "name": "PROOFPIPE_POOL", "value": "other" },
            ] })),
            &[
                "spec.template.spec.containers[0].env[1].name",
                "PROOFPIPE_* variables are set by the operator",
            ],
            pool_with_prover(json!({ "env": [
                { "name": "RUST_LOG", "value": "info" },
                { "name": "PROOFPIPE_LOG", "value": "debug" },
            ] })),
        ),
        Case::new(
            "reserved-env-init",
            pool_with_pod_spec(
                json!({ "initContainers": [{ "name": "fetch", "image": "f:1",
                "env": [{ "name": "PROOFPIPE_GPU_WORKERS", "value": "9" }] }] }),
            ),
            &[
                "spec.template.spec.initContainers[0].env[0].name",
                "PROOFPIPE_* variables are set by the operator",
            ],
            pool_with_pod_spec(json!({ "initContainers": [{ "name": "fetch", "image": "f:1" }] })),
        ),
        Case::new(
            "not-a-quantity",
            pool_with_resources(json!({ "limits": { "memory": "64 GB" } })),
            &[
                "spec.template.spec.containers[0].resources.limits",
                "every value must be a non-negative quantity",
            ],
            pool_with_resources(json!({ "limits": { "memory": "64Gi" } })),
        ),
        Case::new(
            "negative-quantity",
            pool_with_resources(json!({ "requests": { "cpu": "-2" } })),
            &[
                "spec.template.spec.containers[0].resources.requests",
                "every value must be a non-negative quantity",
            ],
            pool_with_resources(json!({ "requests": { "cpu": 2 } })),
        ),
        Case::new(
            "requests-above-limits",
            pool_with_resources(json!({
                "requests": { "cpu": "16", "memory": "65Gi" },
                "limits": { "cpu": 16, "memory": "64Gi" },
            })),
            &[
                "spec.template.spec.containers[0].resources",
                "requests must not exceed limits",
            ],
            pool_with_resources(json!({
                "requests": { "cpu": "16", "memory": "64Gi" },
                "limits": { "cpu": 16, "memory": "65536Mi" },
            })),
        ),
        Case::new(
            "half-a-gpu",
            pool_with_resources(json!({ "limits": { "nvidia.com/gpu": "500m" } })),
            &[
                "spec.template.spec.containers[0].resources.limits",
                "nvidia.com/gpu must be a whole number of GPUs",
            ],
            pool_with_resources(json!({ "limits": { "nvidia.com/gpu": "1" } })),
        ),
        Case::new(
            "gpu-request-only",
            pool_with_resources(json!({ "requests": { "nvidia.com/gpu": 1 } })),
            &[
                "spec.template.spec.containers[0].resources",
                "GPUs cannot be overcommitted",
            ],
            pool_with_resources(json!({
                "requests": { "nvidia.com/gpu": 1 }, "limits": { "nvidia.com/gpu": "1" },
            })),
        ),
        Case::new(
            "restart-policy",
            pool_with_pod_spec(json!({ "restartPolicy": "Always" })),
            &[
                "spec.template.spec.restartPolicy",
                "restartPolicy is set by the operator",
            ],
            pool_with_pod_spec(json!({ "terminationGracePeriodSeconds": 60 })),
        ),
        Case::new(
            "service-account",
            pool_with_pod_spec(json!({ "serviceAccountName": "mine" })),
            &[
                "spec.template.spec.serviceAccountName",
                "serviceAccountName is set by the operator",
            ],
            pool_with_pod_spec(json!({ "priorityClassName": "proving" })),
        ),
        Case::new(
            "no-token",
            pool_with_pod_spec(json!({ "automountServiceAccountToken": false })),
            &[
                "spec.template.spec.automountServiceAccountToken",
                "the daemon reads and writes ProofJobs",
            ],
            pool_with_pod_spec(json!({ "automountServiceAccountToken": true })),
        ),
        Case::new(
            "scratch-volume",
            pool_with_pod_spec(json!({ "volumes": [{ "name": "proofpipe-tmp", "emptyDir": {} }] })),
            &[
                "spec.template.spec.volumes[0].name",
                "volume names starting with proofpipe- are the operator's",
            ],
            pool_with_pod_spec(json!({ "volumes": [{ "name": "scratch", "emptyDir": {} }] })),
        ),
        Case::new(
            "reserved-label",
            with(
                valid_pool(),
                json!({ "template": {
                "metadata": { "labels": { "proofpipe.dev/pool": "other" } },
                "spec": valid_pool()["template"]["spec"].clone(),
            } }),
            ),
            &["spec.template.metadata.labels", "are set by the operator"],
            with(
                valid_pool(),
                json!({ "template": {
                "metadata": { "labels": { "team": "proofs" },
                              "annotations": { "proofpipe.dev/note": "kept" } },
                "spec": valid_pool()["template"]["spec"].clone(),
            } }),
            ),
        ),
    ];
    for case in cases {
        cluster
            .assert_rejected_named::<ProverPool>(case.name, case.bad, case.expected)
            .await;
        cluster
            .assert_admitted::<ProverPool>(case.name, case.good)
            .await;
    }

    // Names: every derived name (`<pool>-prover-<n>`, a label value) must fit in 63.
    let too_long = format!("{longest}p");
    cluster
        .assert_rejected_named::<ProverPool>(
            &too_long,
            valid_pool(),
            &["metadata.name must be at most 45 characters"],
        )
        .await;
    cluster
        .assert_admitted::<ProverPool>(&longest, valid_pool())
        .await;
    cluster
        .assert_rejected_named::<ProverPool>(
            "gpu.pool",
            valid_pool(),
            &["metadata.name must be a DNS label"],
        )
        .await;
    cluster
        .assert_admitted::<ProverPool>("gpu-pool", valid_pool())
        .await;
    cluster.delete_namespace().await;
}

#[tokio::test]
async fn prover_pool_status_and_scale_subresource() {
    let Some(cluster) = Cluster::connect("scale").await else {
        return;
    };
    let _: ProverPool = cluster.create("gpu", valid_pool()).await;
    let pools = cluster.api::<ProverPool>();
    let selector = format!("{}=gpu", proofpipe_crds::POOL_LABEL);
    let status = ProverPoolStatus {
        replicas: Some(2),
        ready_replicas: Some(1),
        selector: Some(selector.clone()),
        sizing: Some(PipelineSizing {
            partition_workers: 4,
            channel_capacity: 2,
            gpu_workers: 1,
            predicted_peak_bytes: 44_236_390_400,
            memory_limit_bytes: Some(68_719_476_736),
            memory_estimate: "41.2GiB/64GiB".into(),
            predicted_device_bytes: Some(16_106_127_360),
            streamed_queries: vec!["h".into(), "b_g2".into()],
        }),
        queued_jobs: Some(3),
        queued_partitions: Some(12),
        unschedulable_replicas: Some(1),
        updated_replicas: Some(1),
        template_hash: Some("0a1b2c3d4e".into()),
        autoscaling: Some(proofpipe_crds::AutoscalingStatus {
            desired_replicas: 3,
            reason: "1 busy + 2 for 12 queued partitions in 3 jobs (target 4 per prover)".into(),
            surplus_since: None,
            last_scale_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap(),
            )),
        }),
        provers: Some(vec![ProverStatus {
            pod: "gpu-0".into(),
            phase: ProverPhase::Busy,
            current_job: Some("job".into()),
            buffers: StageBuffers {
                synthesizing: 4,
                queued: 2,
                gpu: 1,
                finalizing: 0,
            },
            estimated_bytes: 40_000_000_000,
            sizing: None,
            stage: Some("proving".into()),
            last_progress_time: Some(now()),
            proofs_completed: 17,
            gpu: None,
            gpu_lost: Some(proofpipe_crds::GpuLoss {
                device: 0,
                message: "GPU 0 is lost: CUDA running the quotient failed with \
                          cudaErrorECCUncorrectable (error 214)"
                    .into(),
                time: now(),
            }),
            resident_parameters: None,
            last_report: now(),
        }]),
        conditions: None,
        observed_generation: Some(1),
    };
    let patch = Patch::Merge(json!({ "status": status }));
    let pool = pools
        .patch_status("gpu", &PatchParams::default(), &patch)
        .await
        .expect("the status schema accepts a full ProverPoolStatus");
    assert_eq!(pool.status, Some(status));

    let scale = pools.get_scale("gpu").await.expect("GET /scale");
    assert_eq!(scale.spec.and_then(|spec| spec.replicas), Some(1));
    let scale_status = scale.status.expect("scale status");
    assert_eq!(scale_status.replicas, 2);
    assert_eq!(scale_status.selector.as_deref(), Some(selector.as_str()));

    let patch = Patch::Merge(json!({ "spec": { "replicas": 3 } }));
    pools
        .patch_scale("gpu", &PatchParams::default(), &patch)
        .await
        .expect("PATCH /scale");
    let pool = pools.get("gpu").await.expect("read back");
    assert_eq!(
        pool.spec.replicas, 3,
        "the scale subresource writes spec.replicas"
    );
    cluster.delete_namespace().await;
}
