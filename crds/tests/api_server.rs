//! The CRDs against a real API server: defaulting, validation messages, immutability, status
//! round trips and the scale subresource.
//!
//! Needs `KUBECONFIG` naming a cluster where CRDs may be installed, such as the local API
//! server of `../shared/kube-testenv` (`eval "$(../shared/kube-testenv/start.sh)"`). Without
//! `KUBECONFIG` each test prints why it is skipped and passes.
//!
//! Every test works in a namespace of its own. A test that passes deletes it; one that fails
//! leaves it behind for inspection.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::{Client, Resource};
use proofpipe_crds::{
    AttemptFailure, PartitionProof, PipelineSizing, ProofJob, ProofJobPhase, ProofJobStatus,
    ProverFailure, ProverPhase, ProverPool, ProverPoolStatus, ProverStatus, StageBuffers,
    StageSeconds,
};
use serde_json::{Value, json};

const FIELD_MANAGER: &str = "proofpipe-crds-tests";

/// A client and a fresh namespace, with both CRDs installed and established.
struct Cluster {
    client: Client,
    namespace: String,
}

impl Cluster {
    /// Connects through `KUBECONFIG`, or returns `None` (after saying so) when it is unset.
    async fn connect(test: &str) -> Option<Self> {
        if std::env::var_os("KUBECONFIG").is_none() {
            eprintln!(
                "SKIPPED {test}: KUBECONFIG is not set. Start an API server with \
                 `eval \"$(../shared/kube-testenv/start.sh)\"` to run it."
            );
            return None;
        }
        let client = Client::try_default()
            .await
            .expect("build a client from KUBECONFIG");
        install_crds(&client).await;

        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock after 1970")
            .as_nanos();
        let namespace = format!("{test}-{}-{nanos}", std::process::id());
        let object = Namespace {
            metadata: ObjectMeta {
                name: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &object)
            .await
            .expect("create the test namespace");
        Some(Self { client, namespace })
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// An untyped API for `K`, to send objects the Rust types cannot express.
    fn raw_api<K: Resource<DynamicType = ()>>(&self) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &ApiResource::erase::<K>(&()),
        )
    }

    /// Creates `K` from raw JSON and returns the stored object, read back through the Rust
    /// types.
    async fn create<K>(&self, name: &str, spec: Value) -> K
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned,
    {
        self.raw_api::<K>()
            .create(&PostParams::default(), &raw_object::<K>(name, spec))
            .await
            .unwrap_or_else(|err| panic!("{} {name} was rejected: {err}", K::kind(&())));
        self.api::<K>().get(name).await.expect("read back")
    }

    /// Asserts that creating `K` from `spec` fails with a message containing `expected`.
    async fn assert_rejected<K: Resource<DynamicType = ()>>(&self, spec: Value, expected: &str) {
        self.assert_rejected_named::<K>("invalid", spec, &[expected])
            .await;
    }

    /// Asserts that creating `K` named `name` from `spec` fails with a message containing each
    /// of `expected` (the field's path and what is wrong with it).
    async fn assert_rejected_named<K: Resource<DynamicType = ()>>(
        &self,
        name: &str,
        spec: Value,
        expected: &[&str],
    ) {
        let result = self
            .raw_api::<K>()
            .create(&PostParams::default(), &raw_object::<K>(name, spec.clone()))
            .await;
        let what = format!("creating {} {name} {spec}", K::kind(&()));
        let message = match result {
            Err(kube::Error::Api(status)) => status.message,
            other => panic!("{what}: expected a rejection naming {expected:?}, got {other:?}"),
        };
        for part in expected {
            assert!(
                message.contains(part),
                "{what}: expected the API server's message to contain {part:?}, got {message:?}"
            );
        }
    }

    /// Asserts that `K` named `name` from `spec` is admitted.
    async fn assert_admitted<K: Resource<DynamicType = ()>>(&self, name: &str, spec: Value) {
        self.raw_api::<K>()
            .create(&PostParams::default(), &raw_object::<K>(name, spec.clone()))
            .await
            .unwrap_or_else(|err| panic!("{} {name} {spec} was rejected: {err}", K::kind(&())));
    }

    async fn delete_namespace(self) {
        Api::<Namespace>::all(self.client)
            .delete(&self.namespace, &DeleteParams::default())
            .await
            .expect("delete the test namespace");
    }
}

fn raw_object<K: Resource<DynamicType = ()>>(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": { "name": name },
        "spec": spec,
    }))
    .expect("a well-formed object")
}

fn assert_api_error<T: std::fmt::Debug>(result: kube::Result<T>, expected: &str, what: &str) {
    match result {
        Err(kube::Error::Api(status)) => assert!(
            status.message.contains(expected),
            "{what}: expected the API server's message to contain {expected:?}, got {:?}",
            status.message
        ),
        other => panic!("{what}: expected rejection containing {expected:?}, got {other:?}"),
    }
}

/// Server-side applies both CRDs and waits until the API server serves them.
async fn install_crds(client: &Client) {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for crd in proofpipe_crds::crds() {
        let name = crd.metadata.name.clone().expect("CRDs are named");
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .unwrap_or_else(|err| panic!("apply CRD {name}: {err}"));
        wait_established(&api, &name).await;
    }
}

async fn wait_established(api: &Api<CustomResourceDefinition>, name: &str) {
    for _ in 0..300 {
        let crd = api.get(name).await.expect("read back the CRD");
        let established = crd
            .status
            .and_then(|status| status.conditions)
            .unwrap_or_default()
            .iter()
            .any(|condition| condition.type_ == "Established" && condition.status == "True");
        if established {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("CRD {name} was not Established within 30s");
}

fn valid_job() -> Value {
    json!({ "pool": "gpu", "circuit": "mul-chain", "constraints": 4096, "partitions": 4 })
}

/// A Filecoin PoRep job: no circuit, constraints or partitions.
fn valid_filecoin_job() -> Value {
    json!({ "pool": "gpu", "filecoin": {
        "sealProof": "StackedDrg32GiBV1_1", "minerId": 1000, "sectorNumber": 7,
        "input": { "url": "s3://sectors/7/c1.json", "sha256": "ab".repeat(32) },
        "output": { "url": "s3://sectors/7/proof" },
    }})
}

/// A SnapDeals job: the update proof, the input by reference, nothing of a PoRep.
fn valid_snap_job() -> Value {
    json!({ "pool": "gpu", "filecoin": {
        "kind": "SnapDealsUpdate", "updateProof": "StackedDrg32GiBV1",
        "input": { "url": "s3://sectors/7/snap.json", "sha256": "cd".repeat(32) },
        "output": { "url": "s3://sectors/7/update-proof" },
    }})
}

/// `valid_snap_job()` with `changes` merged into its `filecoin`.
fn snap_with(changes: Value) -> Value {
    let mut job = valid_snap_job();
    let work = job["filecoin"].clone();
    job["filecoin"] = with(work, changes);
    job
}

/// `valid_filecoin_job()` with `changes` merged into its `filecoin`.
fn filecoin_with(changes: Value) -> Value {
    let mut job = valid_filecoin_job();
    let work = job["filecoin"].clone();
    job["filecoin"] = with(work, changes);
    job
}

fn valid_pool() -> Value {
    json!({ "template": { "spec": { "containers": [
        { "name": "prover", "image": "registry.example/proofpipe-prover:1" },
    ] } } })
}

/// `valid_pool()` whose prover container has `changes` merged in.
fn pool_with_prover(changes: Value) -> Value {
    let mut pool = valid_pool();
    let prover = pool["template"]["spec"]["containers"][0].clone();
    pool["template"]["spec"]["containers"][0] = with(prover, changes);
    pool
}

/// `valid_pool()` whose pod spec has `changes` merged in.
fn pool_with_pod_spec(changes: Value) -> Value {
    let mut pool = valid_pool();
    let spec = pool["template"]["spec"].clone();
    pool["template"]["spec"] = with(spec, changes);
    pool
}

/// `valid_pool()` whose prover container has `resources`.
fn pool_with_resources(resources: Value) -> Value {
    pool_with_prover(json!({ "resources": resources }))
}

/// A malformed object, what the API server must say about it (the field's path, and what is
/// wrong), and a well-formed counterpart as close to it as possible, which it must admit.
struct Case {
    name: &'static str,
    bad: Value,
    expected: &'static [&'static str],
    good: Value,
}

impl Case {
    fn new(name: &'static str, bad: Value, expected: &'static [&'static str], good: Value) -> Self {
        Self {
            name,
            bad,
            expected,
            good,
        }
    }
}

/// `base` with `changes` merged in at the top level; a `null` change removes the field.
fn with(base: Value, changes: Value) -> Value {
    let mut merged = base;
    let object = merged.as_object_mut().expect("specs are objects");
    for (key, value) in changes.as_object().expect("changes are objects") {
        if value.is_null() {
            object.remove(key);
        } else {
            object.insert(key.clone(), value.clone());
        }
    }
    merged
}

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
            "a PoRepC2 job names its proof by sealProof: leave updateProof unset",
        ),
        (
            snap_with(json!({ "updateProof": null })),
            "a SnapDealsUpdate job needs updateProof",
        ),
        (
            snap_with(json!({ "updateProof": "StackedDrg32GiBV1_1" })),
            "updateProof must be one of StackedDrg2KiBV1, StackedDrg8MiBV1",
        ),
        (
            snap_with(json!({ "sealProof": "StackedDrg32GiBV1_1" })),
            "leave sealProof, minerId, proverId, sectorNumber unset",
        ),
        (
            snap_with(json!({ "minerId": 1000 })),
            "a SnapDealsUpdate job names its proof by updateProof, and its sector by the \
             commitments in its input",
        ),
        (
            snap_with(json!({ "sectorNumber": 7 })),
            "leave sealProof, minerId, proverId, sectorNumber unset",
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

/// A copy of `result` that [`assert_api_error`] can consume (kube's errors are not `Clone`).
fn result_message<T>(result: &kube::Result<T>) -> kube::Result<()> {
    match result {
        Err(kube::Error::Api(status)) => Err(kube::Error::Api(status.clone())),
        Err(other) => panic!("expected an API error, got {other}"),
        Ok(_) => Ok(()),
    }
}

/// The current time, truncated to the whole seconds that `Time` serializes.
fn now() -> Time {
    Time(Timestamp::from_second(Timestamp::now().as_second()).expect("in range"))
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
