//! The controller against a real API server: pods from a pool, assignment by priority,
//! requeue when the assigned pod goes, replacement, and scale-down that spares the busy
//! prover.
//!
//! Needs `KUBECONFIG` naming a cluster where CRDs may be installed, such as the local API
//! server of `../shared/kube-testenv` (`eval "$(../shared/kube-testenv/start.sh)"`). Without
//! `KUBECONFIG` the test prints why it is skipped and passes. The testenv has no kubelet, so
//! the test plays it: it marks pods Running and Ready by writing their status.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use proofpipe_crds::{ASSIGNED_POD_LABEL, ProofJob, ProofJobPhase, ProverPool};
use proofpipe_operator::Config;
use proofpipe_testkit::cluster::TestNamespace;
use serde_json::json;

const TEST_MANAGER: &str = "reconcile-api-test";
const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_pods_assignment_requeue_and_scale_down() {
    let Some(test_namespace) = TestNamespace::create("reconcile-api").await else {
        return;
    };
    // The operator's logs, shown when the test fails (`RUST_LOG=debug` for more).
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .try_init();
    let started = Instant::now();
    let (client, namespace) = (test_namespace.client, test_namespace.name);
    let listen = free_local_address();
    let operator = tokio::spawn(proofpipe_operator::run(
        client.clone(),
        Config {
            listen: Some(listen),
            namespace: Some(namespace.clone()),
            lease_namespace: namespace.clone(),
            identity: "reconcile-api-test".into(),
            // Short, so that the requeued job is retried within the test's waits.
            retry_delay: Duration::from_secs(1),
            leader_election: proofpipe_operator::runtime::lease::Timing::default(),
            drain_timeout: proofpipe_operator::DEFAULT_DRAIN_TIMEOUT,
        },
    ));

    let pools: Api<ProverPool> = Api::namespaced(client.clone(), &namespace);
    let jobs: Api<ProofJob> = Api::namespaced(client.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);

    // A pool of 2 -> 2 pods, labelled, owned by the pool, with the daemon's env.
    let pool = apply(
        &pools,
        "gpu",
        json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
            "metadata": {"name": "gpu"},
            "spec": {
                "replicas": 2,
                "pipeline": {"partitionWorkers": "2"},
                "template": {"spec": {"containers": [{
                    "name": "prover", "image": "registry.example/proofpipe-prover:1",
                    "resources": {"limits": {"memory": "1Gi"}},
                }]}},
            },
        }),
    )
    .await;
    let names = eventually("2 prover pods", || async {
        Some(pod_names(&pods).await).filter(|n| n.len() == 2)
    })
    .await;
    assert_eq!(names, ["gpu-prover-0", "gpu-prover-1"]);
    let first = pods.get("gpu-prover-0").await.unwrap();
    assert_eq!(first.labels()["proofpipe.dev/pool"], "gpu");
    assert_eq!(first.labels()["app.kubernetes.io/name"], "proofpipe-prover");
    let owner = &first.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("ProverPool", pool.uid().unwrap().as_str(), Some(true))
    );
    let container = &first.spec.as_ref().unwrap().containers[0];
    assert_eq!(container.args.as_deref().unwrap()[0], "daemon");
    let env: Vec<(String, Option<String>)> = container
        .env
        .iter()
        .flatten()
        .map(|var| (var.name.clone(), var.value.clone()))
        .collect();
    assert!(
        env.contains(&("PROOFPIPE_POOL".into(), Some("gpu".into()))),
        "{env:?}"
    );
    assert!(
        env.contains(&("PROOFPIPE_PARTITION_WORKERS".into(), Some("2".into()))),
        "{env:?}"
    );
    assert!(
        env.iter().any(|(name, _)| name == "PROOFPIPE_MEMORY_LIMIT"),
        "{env:?}"
    );

    // One Ready prover, two jobs: the higher priority one gets it.
    create_job(&jobs, "low", 0).await;
    create_job(&jobs, "high", 10).await;
    mark_ready(&pods, "gpu-prover-0").await;
    let high = eventually("high assigned to gpu-prover-0", || async {
        let job = jobs.get("high").await.ok()?;
        let status = job.status.as_ref()?;
        (status.pod.as_deref() == Some("gpu-prover-0")
            && status.phase == Some(ProofJobPhase::Running))
        .then_some(job)
    })
    .await;
    assert_eq!(
        high.labels().get(ASSIGNED_POD_LABEL).map(String::as_str),
        Some("gpu-prover-0")
    );
    assert_eq!(high.status.as_ref().unwrap().attempts, Some(1));
    assert!(
        high.finalizers()
            .contains(&"proofpipe.dev/cleanup".to_owned())
    );
    let low = eventually("low Queued", || async {
        let job = jobs.get("low").await.ok()?;
        (job.status.as_ref()?.phase == Some(ProofJobPhase::Queued)).then_some(job)
    })
    .await;
    assert!(!low.labels().contains_key(ASSIGNED_POD_LABEL));
    // The finalizer comes with the assignment: a queued job has no daemon to stop.
    assert!(low.finalizers().is_empty(), "{:?}", low.finalizers());

    // The assigned pod goes: the job is requeued and the pod replaced.
    let lost_uid = pods.get("gpu-prover-0").await.unwrap().uid();
    pods.delete("gpu-prover-0", &DeleteParams::default())
        .await
        .unwrap();
    let requeued = eventually("high requeued", || async {
        let job = jobs.get("high").await.ok()?;
        let status = job.status.as_ref()?;
        let requeued = status.phase == Some(ProofJobPhase::Queued)
            && status.pod.is_none()
            && !job.labels().contains_key(ASSIGNED_POD_LABEL);
        requeued.then_some(job)
    })
    .await;
    // The failed attempt is on record, and the job waits out its retry delay (1 s here).
    let status = requeued.status.unwrap();
    assert_eq!(status.failed, Some(1));
    let failure = status.last_failure.expect("status.lastFailure");
    assert_eq!(
        (
            failure.attempt,
            failure.pod.as_str(),
            failure.reason.as_str()
        ),
        (1, "gpu-prover-0", "PodDeleted")
    );
    let retry_at = status
        .next_attempt_after
        .expect("status.nextAttemptAfter")
        .0;
    let wait = retry_at - k8s_openapi::jiff::Timestamp::now();
    if let Ok(wait) = Duration::try_from(wait) {
        tokio::time::sleep(wait + Duration::from_millis(200)).await;
    }
    eventually("a replacement pod", || async {
        let replacement = pods.get_opt("gpu-prover-0").await.ok()??;
        (replacement.uid() != lost_uid).then_some(())
    })
    .await;

    // The other pod becomes Ready: the requeued job, still first in line, goes there and
    // counts a second attempt.
    mark_ready(&pods, "gpu-prover-1").await;
    let high = eventually("high assigned to gpu-prover-1", || async {
        let job = jobs.get("high").await.ok()?;
        (job.status.as_ref()?.pod.as_deref() == Some("gpu-prover-1")).then_some(job)
    })
    .await;
    assert_eq!(high.status.as_ref().unwrap().attempts, Some(2));
    assert!(
        !jobs
            .get("low")
            .await
            .unwrap()
            .labels()
            .contains_key(ASSIGNED_POD_LABEL)
    );

    // Daemons report into status.provers, each with its own field manager; one report is
    // from a pod that no longer exists.
    report(&pools, "gpu-prover-1", 3 << 30).await;
    report(&pools, "gpu-prover-7", 5 << 30).await;

    // Scale to 1 while gpu-prover-1 is busy: the idle gpu-prover-0 goes.
    pools
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    eventually("only the busy pod left", || async {
        Some(pod_names(&pods).await).filter(|names| names == &["gpu-prover-1"])
    })
    .await;

    let pool = eventually("pool status", || async {
        let pool = pools.get("gpu").await.ok()?;
        let status = pool.status.as_ref()?;
        let provers = status.provers.as_ref()?;
        (status.replicas == Some(1) && status.queued_jobs == Some(1) && provers.len() == 1)
            .then_some(pool)
    })
    .await;
    let status = pool.status.unwrap();
    assert_eq!(
        status.provers.as_ref().unwrap()[0].pod,
        "gpu-prover-1",
        "the stale entry is removed"
    );
    let sizing = status
        .sizing
        .as_ref()
        .expect("sizing from the live prover's report");
    assert_eq!(sizing.predicted_peak_bytes, 3 << 30);
    assert_eq!(
        status.selector.as_deref(),
        Some("proofpipe.dev/pool=gpu,app.kubernetes.io/name=proofpipe-prover")
    );
    assert_eq!(
        (status.ready_replicas, status.queued_partitions),
        (Some(1), Some(4))
    );

    let events = eventually("Assigned, Requeued and Scaled events", || async {
        let events: Api<Event> = Api::namespaced(client.clone(), &namespace);
        let events: Vec<(String, String)> = events
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .map(|event| {
                (
                    event.reason.unwrap_or_default(),
                    event.note.unwrap_or_default(),
                )
            })
            .collect();
        ["Assigned", "Requeued", "Scaled"]
            .iter()
            .all(|wanted| events.iter().any(|(reason, _)| reason == wanted))
            .then_some(events)
    })
    .await;
    assert!(
        !events.iter().any(|(reason, _)| reason == "ReconcileFailed"),
        "{events:#?}"
    );

    let metrics = http_get(listen, "/metrics");
    assert!(
        metrics.contains("proofpipe_operator_jobs_assigned_total 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("proofpipe_operator_jobs_requeued_total 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "proofpipe_operator_queue_depth{{namespace=\"{namespace}\",pool=\"gpu\"}} 1"
        )),
        "{metrics}"
    );
    // One Ready prover, as status.readyReplicas says above.
    assert!(
        metrics.contains(&format!(
            "proofpipe_operator_ready_provers{{namespace=\"{namespace}\",pool=\"gpu\"}} 1"
        )),
        "{metrics}"
    );
    let readyz = http_get(listen, "/readyz");
    assert!(
        readyz
            .lines()
            .next()
            .is_some_and(|line| line.contains(" 200 ")),
        "{readyz}"
    );

    // A job whose finalizer another field manager added (as operators before ADR 0029 did
    // through kube-runtime's helper) still goes once deleted. Its pool does not exist, so
    // the operator never assigns it nor owns its finalizer.
    apply(
        &jobs,
        "legacy",
        json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
            "metadata": {"name": "legacy", "finalizers": ["proofpipe.dev/cleanup"]},
            "spec": {"pool": "gone", "circuit": "mul-chain", "constraints": 4096, "partitions": 1},
        }),
    )
    .await;
    jobs.delete("legacy", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "legacy deleted despite a finalizer of another manager",
        || async { jobs.get_opt("legacy").await.ok()?.is_none().then_some(()) },
    )
    .await;

    // Deleting the assigned job: unassigning it (its daemon cancels) drops its finalizer
    // in the same write, and it goes.
    jobs.delete("high", &DeleteParams::default()).await.unwrap();
    eventually("high deleted", || async {
        jobs.get_opt("high").await.ok()?.is_none().then_some(())
    })
    .await;

    operator.abort();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    // Without a garbage collector or namespace controller, the test's objects stay in its
    // namespace; a failed run keeps them for inspection.
    let namespaces: Api<Namespace> = Api::all(client);
    namespaces
        .delete(&namespace, &DeleteParams::default())
        .await
        .unwrap();
}

/// Polls `check` until it returns `Some`, for at most [`WAIT`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn apply<K>(api: &Api<K>, name: &str, body: serde_json::Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::apply(TEST_MANAGER),
        &Patch::Apply(&body),
    )
    .await
    .unwrap()
}

async fn create_job(jobs: &Api<ProofJob>, name: &str, priority: i32) {
    apply(jobs, name, json!({
        "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
        "metadata": {"name": name},
        "spec": {"pool": "gpu", "circuit": "mul-chain", "constraints": 4096, "partitions": 4, "priority": priority},
    }))
    .await;
}

async fn pod_names(pods: &Api<Pod>) -> Vec<String> {
    let mut names: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

/// Plays a daemon: applies its entry of the pool's `status.provers`.
async fn report(pools: &Api<ProverPool>, pod: &str, predicted_peak_bytes: i64) {
    let entry = json!({
        "pod": pod, "phase": "Busy", "currentJob": "high",
        "buffers": {"synthesizing": 1, "queued": 0, "gpu": 1, "finalizing": 0},
        "estimatedBytes": predicted_peak_bytes / 2, "proofsCompleted": 0,
        "lastReport": "2026-01-01T00:00:00Z",
        "sizing": {"partitionWorkers": 2, "channelCapacity": 1, "gpuWorkers": 1,
                   "predictedPeakBytes": predicted_peak_bytes, "memoryLimitBytes": 8_i64 << 30,
                   "memoryEstimate": "3GiB/8GiB"},
    });
    let body = json!({
        "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
        "metadata": {"name": "gpu"},
        "status": {"provers": [entry]},
    });
    let manager = format!("proofpipe-prover.{pod}");
    pools
        .patch_status("gpu", &PatchParams::apply(&manager), &Patch::Apply(&body))
        .await
        .unwrap();
}

/// Plays the kubelet: the pod runs and passes its readiness probe.
async fn mark_ready(pods: &Api<Pod>, name: &str) {
    let status = json!({"status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
    }});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
}

fn free_local_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// A bare HTTP/1.0 GET: the whole response, status line first.
fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}
