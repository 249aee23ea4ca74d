//! What the API-server tests share beyond the testkit's namespace (with the CRDs installed):
//! raw-JSON creation and rejection checks, and valid objects to vary.
// Each test file uses some of these.
#![allow(dead_code, unused_imports)]

pub use std::time::Duration;

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
pub use k8s_openapi::jiff::Timestamp;
pub use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams,
};
pub use kube::{Client, Resource};
pub use proofpipe_crds::{
    AttemptFailure, PartitionProof, PipelineSizing, ProofJob, ProofJobPhase, ProofJobStatus,
    ProverFailure, ProverPhase, ProverPool, ProverPoolStatus, ProverStatus, StageBuffers,
    StageSeconds,
};
pub use proofpipe_testkit::cluster::TestNamespace;
pub use serde_json::{Value, json};

/// A client and a fresh namespace, with both CRDs installed and established.
pub struct Cluster {
    pub client: Client,
    pub namespace: String,
}

impl Cluster {
    /// A namespace of its own on the API server of `KUBECONFIG`, with the CRDs installed
    /// (the testkit's: `None` without a cluster, a failure under CI).
    pub async fn connect(test: &str) -> Option<Self> {
        let namespace = TestNamespace::create(test).await?;
        Some(Self {
            client: namespace.client,
            namespace: namespace.name,
        })
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// An untyped API for `K`, to send objects the Rust types cannot express.
    pub fn raw_api<K: Resource<DynamicType = ()>>(&self) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &ApiResource::erase::<K>(&()),
        )
    }

    /// Creates `K` from raw JSON and returns the stored object, read back through the Rust
    /// types.
    pub async fn create<K>(&self, name: &str, spec: Value) -> K
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
    pub async fn assert_rejected<K: Resource<DynamicType = ()>>(
        &self,
        spec: Value,
        expected: &str,
    ) {
        self.assert_rejected_named::<K>("invalid", spec, &[expected])
            .await;
    }

    /// Asserts that creating `K` named `name` from `spec` fails with a message containing each
    /// of `expected` (the field's path and what is wrong with it).
    pub async fn assert_rejected_named<K: Resource<DynamicType = ()>>(
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
    pub async fn assert_admitted<K: Resource<DynamicType = ()>>(&self, name: &str, spec: Value) {
        self.raw_api::<K>()
            .create(&PostParams::default(), &raw_object::<K>(name, spec.clone()))
            .await
            .unwrap_or_else(|err| panic!("{} {name} {spec} was rejected: {err}", K::kind(&())));
    }

    pub async fn delete_namespace(self) {
        TestNamespace {
            client: self.client,
            name: self.namespace,
        }
        .delete()
        .await;
    }
}

pub fn raw_object<K: Resource<DynamicType = ()>>(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": { "name": name },
        "spec": spec,
    }))
    .expect("a well-formed object")
}

pub fn assert_api_error<T: std::fmt::Debug>(result: kube::Result<T>, expected: &str, what: &str) {
    match result {
        Err(kube::Error::Api(status)) => assert!(
            status.message.contains(expected),
            "{what}: expected the API server's message to contain {expected:?}, got {:?}",
            status.message
        ),
        other => panic!("{what}: expected rejection containing {expected:?}, got {other:?}"),
    }
}

pub fn valid_job() -> Value {
    json!({ "pool": "gpu", "circuit": "mul-chain", "constraints": 4096, "partitions": 4 })
}

/// A Filecoin PoRep job: no circuit, constraints or partitions.
pub fn valid_filecoin_job() -> Value {
    json!({ "pool": "gpu", "filecoin": {
        "sealProof": "StackedDrg32GiBV1_1", "minerId": 1000, "sectorNumber": 7,
        "input": { "url": "s3://sectors/7/c1.json", "sha256": "ab".repeat(32) },
        "output": { "url": "s3://sectors/7/proof" },
    }})
}

/// A SnapDeals job: the update proof, the input by reference, nothing of a PoRep.
pub fn valid_snap_job() -> Value {
    json!({ "pool": "gpu", "filecoin": {
        "kind": "SnapDealsUpdate", "updateProof": "StackedDrg32GiBV1",
        "input": { "url": "s3://sectors/7/snap.json", "sha256": "cd".repeat(32) },
        "output": { "url": "s3://sectors/7/update-proof" },
    }})
}

/// `valid_snap_job()` with `changes` merged into its `filecoin`.
pub fn snap_with(changes: Value) -> Value {
    let mut job = valid_snap_job();
    let work = job["filecoin"].clone();
    job["filecoin"] = with(work, changes);
    job
}

/// `valid_filecoin_job()` with `changes` merged into its `filecoin`.
pub fn filecoin_with(changes: Value) -> Value {
    let mut job = valid_filecoin_job();
    let work = job["filecoin"].clone();
    job["filecoin"] = with(work, changes);
    job
}

pub fn valid_pool() -> Value {
    json!({ "template": { "spec": { "containers": [
        { "name": "prover", "image": "registry.example/proofpipe-prover:1" },
    ] } } })
}

/// `valid_pool()` whose prover container has `changes` merged in.
pub fn pool_with_prover(changes: Value) -> Value {
    let mut pool = valid_pool();
    let prover = pool["template"]["spec"]["containers"][0].clone();
    pool["template"]["spec"]["containers"][0] = with(prover, changes);
    pool
}

/// `valid_pool()` whose pod spec has `changes` merged in.
pub fn pool_with_pod_spec(changes: Value) -> Value {
    let mut pool = valid_pool();
    let spec = pool["template"]["spec"].clone();
    pool["template"]["spec"] = with(spec, changes);
    pool
}

/// `valid_pool()` whose prover container has `resources`.
pub fn pool_with_resources(resources: Value) -> Value {
    pool_with_prover(json!({ "resources": resources }))
}

/// A malformed object, what the API server must say about it (the field's path, and what is
/// wrong), and a well-formed counterpart as close to it as possible, which it must admit.
pub struct Case {
    pub name: &'static str,
    pub bad: Value,
    pub expected: &'static [&'static str],
    pub good: Value,
}

impl Case {
    pub fn new(
        name: &'static str,
        bad: Value,
        expected: &'static [&'static str],
        good: Value,
    ) -> Self {
        Self {
            name,
            bad,
            expected,
            good,
        }
    }
}

/// `base` with `changes` merged in at the top level; a `null` change removes the field.
pub fn with(base: Value, changes: Value) -> Value {
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

/// A copy of `result` that [`assert_api_error`] can consume (kube's errors are not `Clone`).
pub fn result_message<T>(result: &kube::Result<T>) -> kube::Result<()> {
    match result {
        Err(kube::Error::Api(status)) => Err(kube::Error::Api(status.clone())),
        Err(other) => panic!("expected an API error, got {other}"),
        Ok(_) => Ok(()),
    }
}

/// The current time, truncated to the whole seconds that `Time` serializes.
pub fn now() -> Time {
    Time(Timestamp::from_second(Timestamp::now().as_second()).expect("in range"))
}
