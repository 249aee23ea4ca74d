//! `proofpipe-prover daemon` against a real API server, with this test playing the operator:
//! it assigns jobs by label, and the daemon proves them into their status, skips a
//! partition already proved, reports into the pool status, cancels a job whose label goes,
//! and exits 0 on SIGTERM; a job it cannot prove gets a ProvingFailed Event and ends the
//! daemon with exit code 1.
//!
//! Needs `KUBECONFIG` naming a cluster where CRDs may be installed, such as the local API
//! server of `../shared/kube-testenv` (`eval "$(../shared/kube-testenv/start.sh)"`). Without
//! it the test prints why it is skipped and passes.

use std::fs::File;
use std::future::Future;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use proofpipe_crds::{
    ASSIGNED_POD_LABEL, PartitionProof, ProofJob, ProofJobPhase, ProverPhase, ProverPool,
};
use proofpipe_daemon::payload::status_proof;
use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::groth16::G2Placement;
use proofpipe_pipeline::params::ParamsStore;
use proofpipe_pipeline::pipeline::{JobSpec, Pipeline, PipelineConfig};
use proofpipe_testkit::cluster::TestNamespace;
use serde_json::{Value, json};

mod support;

const POD: &str = "gpu-prover-0";
const POOL: &str = "gpu";
const CONSTRAINTS: usize = 1024;
const SEED: i64 = 11;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_proves_resumes_reports_cancels_and_stops() {
    let Some(cluster) = TestNamespace::create("daemon-api").await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let params_dir = work.path().join("params");

    // A proof of partition 1 made "earlier, by another pod"; it also leaves the parameters
    // on disk for the daemon.
    let earlier = prove_one_partition(&params_dir, 1).await;
    let pools = create_pool(&cluster).await;
    let jobs: Api<ProofJob> = cluster.api();
    assign(&jobs, "first", CONSTRAINTS, 3).await;
    jobs.patch_status(
        "first",
        &PatchParams::apply("test-operator"),
        &Patch::Apply(json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob", "metadata": { "name": "first" },
            // As the operator records it: the job ran on "earlier-pod" before this one, so
            // that pod's proof counts (ADR 0014).
            "status": { "phase": "Running", "pod": POD, "attempts": 2,
                        "assignedPods": ["earlier-pod", POD], "proofs": [earlier] },
        })),
    )
    .await
    .expect("pre-fill partition 1");

    let listen = free_local_address();
    let mut daemon = Daemon::start(
        &cluster.name,
        &params_dir,
        &listen,
        &work.path().join("daemon.log"),
    );

    // Every partition ends verified; the pre-filled one is untouched.
    let first = daemon
        .wait(
            "job first to have 3 verified proofs",
            Duration::from_secs(60),
            || async {
                let job = jobs.get("first").await.ok()?;
                let proofs = job.status.as_ref()?.proofs.clone()?;
                (proofs.iter().filter(|p| p.verified).count() == 3).then_some(job)
            },
        )
        .await;
    let status = first.status.unwrap();
    let mut proofs = status.proofs.unwrap();
    proofs.sort_by_key(|p| p.partition);
    assert_eq!(
        proofs[1], earlier,
        "the pre-filled partition was proved again"
    );
    for proof in [&proofs[0], &proofs[2]] {
        assert_eq!(proof.proved_by, POD);
        assert_eq!(proof.public_inputs.len(), earlier.public_inputs.len());
        assert!(proof.public_inputs.iter().all(|input| input.len() == 64));
    }
    assert!(status.stage_seconds.is_some_and(|s| s.synthesis > 0.0));
    assert_eq!(
        status.phase,
        Some(ProofJobPhase::Running),
        "the daemon wrote an operator field"
    );

    // The pool status has this pod's entry.
    let entry = daemon
        .wait(
            "the pool to list this prover with 2 proofs",
            Duration::from_secs(20),
            || async {
                let pool = pools.get(POOL).await.ok()?;
                let provers = pool.status?.provers?;
                provers
                    .into_iter()
                    .find(|p| p.pod == POD && p.proofs_completed == 2)
            },
        )
        .await;
    let sizing = entry.sizing.expect("the entry carries the job's sizing");
    assert!(
        sizing.memory_estimate.contains("GiB/"),
        "{}",
        sizing.memory_estimate
    );

    let (ready, _) = http_get(&listen, "/readyz").await;
    assert_eq!(ready, 200);
    let (code, metrics) = http_get(&listen, "/metrics").await;
    assert_eq!(code, 200);
    for series in [
        "proofpipe_daemon_jobs_started_total 1",
        "proofpipe_daemon_jobs_finished_total{outcome=\"succeeded\"} 1",
        "proofpipe_daemon_status_writes_total{object=\"proofjob\"}",
        "proofpipe_partitions_total",
        "proofpipe_prover_resident_memory_bytes ",
        "proofpipe_prover_memory_limit_bytes ",
        "proofpipe_prover_predicted_peak_bytes ",
    ] {
        assert!(
            metrics.contains(series),
            "/metrics lacks {series}:\n{metrics}"
        );
    }

    // A long job loses its label mid-run: the daemon cancels it and stops adding proofs.
    let partitions = 400;
    assign(&jobs, "second", CONSTRAINTS, partitions).await;
    daemon
        .wait(
            "job second to have a proof",
            Duration::from_secs(60),
            || async {
                let proofs = jobs.get("second").await.ok()?.status?.proofs?;
                (!proofs.is_empty()).then_some(())
            },
        )
        .await;
    let unassign = json!({ "metadata": { "labels": { ASSIGNED_POD_LABEL: null } } });
    jobs.patch("second", &PatchParams::default(), &Patch::Merge(unassign))
        .await
        .expect("remove the label");
    daemon
        .wait(
            "the daemon to cancel job second",
            Duration::from_secs(20),
            || async {
                let (_, metrics) = http_get(&listen, "/metrics").await;
                metrics
                    .contains("proofpipe_daemon_jobs_finished_total{outcome=\"cancelled\"} 1")
                    .then_some(())
            },
        )
        .await;
    // Counters live for the process: the first job's success still counts once the second
    // job's pipeline has replaced the first's.
    let (_, metrics) = http_get(&listen, "/metrics").await;
    for series in [
        "proofpipe_jobs_total{outcome=\"succeeded\"} 1",
        "proofpipe_jobs_total{outcome=\"cancelled\"} 1",
    ] {
        assert!(
            metrics.contains(series),
            "/metrics lacks {series}:\n{metrics}"
        );
    }
    let count = || async {
        jobs.get("second")
            .await
            .unwrap()
            .status
            .and_then(|s| s.proofs)
            .map_or(0, |p| p.len())
    };
    let after_cancel = count().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        count().await,
        after_cancel,
        "proofs kept coming after the cancel"
    );
    assert!(
        after_cancel < partitions as usize,
        "the job finished before it could be cancelled"
    );
    daemon
        .wait(
            "the prover to report Idle",
            Duration::from_secs(20),
            || async {
                let provers = pools.get(POOL).await.ok()?.status?.provers?;
                provers.into_iter().find(|p| {
                    p.pod == POD && p.phase == ProverPhase::Idle && p.current_job.is_none()
                })
            },
        )
        .await;

    let exited_cleanly = daemon.terminate(Duration::from_secs(25));
    // Shown with --nocapture, or when the assertion fails.
    eprintln!("--- daemon log ---\n{}", daemon.log_text());
    assert!(exited_cleanly, "the daemon did not exit 0 on SIGTERM");
    cluster.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_can_never_fit_is_reported_permanent_and_the_daemon_stays_up() {
    let Some(cluster) = TestNamespace::create("daemon-fail").await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    create_pool(&cluster).await;
    let jobs: Api<ProofJob> = cluster.api();
    // 2^27 constraints need far more memory than this machine has: the daemon refuses the
    // job before loading parameters.
    assign(&jobs, "huge", 1 << 27, 1).await;
    let listen = free_local_address();
    let mut daemon = Daemon::start(
        &cluster.name,
        &work.path().join("params"),
        &listen,
        &work.path().join("daemon.log"),
    );

    // The failure goes into the job's status for the operator, marked permanent (ADR 0021).
    let failure = daemon
        .wait(
            "the failure report on job huge",
            Duration::from_secs(60),
            || async { jobs.get("huge").await.ok()?.status?.prover_failure },
        )
        .await;
    assert_eq!(
        (
            failure.pod.as_str(),
            failure.attempt,
            failure.reason.as_str(),
            failure.permanent
        ),
        (POD, 1, "DoesNotFit", true),
        "{failure:?}"
    );
    assert!(failure.message.contains("memory limit"), "{failure:?}");
    // The Event is recorded after the status write, so it may land a moment later.
    let events: Api<k8s_openapi::api::events::v1::Event> = cluster.api();
    let failed = daemon
        .wait(
            "a ProvingFailed Event on job huge",
            Duration::from_secs(30),
            || async {
                events
                    .list(&Default::default())
                    .await
                    .ok()?
                    .items
                    .into_iter()
                    .find(|e| {
                        e.reason.as_deref() == Some("ProvingFailed")
                            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("huge")
                    })
            },
        )
        .await;
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert!(
        failed
            .note
            .as_deref()
            .is_some_and(|note| note.contains("memory limit")),
        "{failed:?}"
    );
    // The daemon never exits on a job's error: it is up, healthy, and proves the next job.
    assert!(
        daemon.wait_exit(Duration::from_secs(2)).is_none(),
        "the daemon exited after a job's failure"
    );
    let (code, _) = http_get(&listen, "/healthz").await;
    assert_eq!(code, 200, "/healthz after a job's failure");
    assign(&jobs, "after", CONSTRAINTS, 1).await;
    daemon
        .wait(
            "job after to have its proof",
            Duration::from_secs(120),
            || async {
                let proofs = jobs.get("after").await.ok()?.status?.proofs?;
                (!proofs.is_empty()).then_some(())
            },
        )
        .await;
    let status = jobs.get("huge").await.unwrap().status.unwrap_or_default();
    assert_eq!(
        status.proofs, None,
        "the daemon wrote a proof to a job it could not prove"
    );
    cluster.delete().await;
}

/// `PROOFPIPE_PRELOAD_PARAMS` loads a PoSt parameter set before the prover is ready (its pool
/// entry lists it before any job came); a set whose files are missing stops the daemon at
/// start with the command that fetches them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preloaded_parameters_are_resident_before_the_first_job() {
    let Some(testdata) = support::filecoin_testdata("PoSt") else {
        return;
    };
    let Some(cluster) = TestNamespace::create("daemon-preload").await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let pools = create_pool(&cluster).await;
    let params = testdata.join("params");
    let listen = free_local_address();
    let mut daemon = Daemon::start_with(
        &cluster.name,
        &work.path().join("params"),
        &listen,
        &work.path().join("daemon.log"),
        &[
            ("FIL_PROOFS_PARAMETER_CACHE", params.as_os_str()),
            (
                "PROOFPIPE_PRELOAD_PARAMS",
                "post:StackedDrgWinning2KiBV1".as_ref(),
            ),
        ],
    );
    let resident = daemon
        .wait(
            "the preloaded set on the prover's pool entry",
            Duration::from_secs(60),
            || async {
                let provers = pools.get(POOL).await.ok()?.status?.provers?;
                provers
                    .into_iter()
                    .find(|p| p.pod == POD)?
                    .resident_parameters
                    .filter(|sets| !sets.is_empty())
            },
        )
        .await;
    assert_eq!(resident, ["StackedDrgWinning2KiBV1"]);
    daemon
        .wait(
            "the prover to be ready",
            Duration::from_secs(30),
            || async { (http_get(&listen, "/readyz").await.0 == 200).then_some(()) },
        )
        .await;
    assert!(
        daemon.log_text().contains("Filecoin parameters preloaded"),
        "{}",
        daemon.log_text()
    );
    assert!(daemon.terminate(Duration::from_secs(25)), "no clean exit");

    // The 32 GiB WindowPoSt set is not in the test data: the daemon refuses to start.
    let listen = free_local_address();
    let mut missing = Daemon::start_with(
        &cluster.name,
        &work.path().join("params"),
        &listen,
        &work.path().join("missing.log"),
        &[
            ("FIL_PROOFS_PARAMETER_CACHE", params.as_os_str()),
            (
                "PROOFPIPE_PRELOAD_PARAMS",
                "post:StackedDrgWindow32GiBV1_2".as_ref(),
            ),
        ],
    );
    let status = missing
        .wait_exit(Duration::from_secs(60))
        .expect("the daemon should stop when a preloaded set is missing");
    assert!(!status.success());
    let log = missing.log_text();
    assert!(
        log.contains("is missing") && log.contains("params fetch"),
        "{log}"
    );
    cluster.delete().await;
}

async fn create_pool(cluster: &TestNamespace) -> Api<ProverPool> {
    let pools: Api<ProverPool> = cluster.api();
    let spec = json!({ "template": { "spec": { "containers": [
        { "name": "prover", "image": "proofpipe-prover:test" },
    ] } } });
    pools
        .create(
            &PostParams::default(),
            &object::<ProverPool>(POOL, spec, None),
        )
        .await
        .expect("create the pool");
    pools
}

/// Proves one partition of the test's job through the library, as another pod would have.
async fn prove_one_partition(params_dir: &Path, partition: u32) -> PartitionProof {
    let params_dir = params_dir.to_owned();
    tokio::task::spawn_blocking(move || {
        let (params, _) = ParamsStore::new(params_dir)
            .get(CircuitKind::MulChain, CONSTRAINTS)
            .unwrap();
        let config = PipelineConfig {
            partition_workers: 1,
            channel_capacity: 1,
            gpu_workers: 1,
            finalize_workers: 1,
            finalize_queue: 1,
            partition_budget: None,
            g2: G2Placement::GpuStage,
            bases: proofpipe_pipeline::groth16::QueryPlacement::all_resident(),
            quotient_buffers: Default::default(),
            record_timeline: false,
            matrices: Default::default(),
        };
        let pipeline =
            Pipeline::start(config, Arc::new(proofpipe_kernels::CpuBackend::new())).unwrap();
        let mut spec = JobSpec::new(CircuitKind::MulChain, CONSTRAINTS, 3);
        spec.seed = SEED as u64;
        spec.skip = (0..3).filter(|&p| p != partition).collect();
        let report = pipeline.submit(spec, params).unwrap().wait();
        status_proof(&report.proofs[0], "earlier-pod")
    })
    .await
    .unwrap()
}

/// Creates a mul-chain job assigned to [`POD`] by label, as the operator would.
/// Creates a job assigned to the test's pod as the operator assigns one: the label, then the
/// assignment recorded in the status (the daemon starts a job only once `status.pod` is its
/// own, so the attempt it reports on is the operator's).
async fn assign(jobs: &Api<ProofJob>, name: &str, constraints: usize, partitions: i32) {
    let spec = json!({ "pool": POOL, "circuit": "mul-chain", "constraints": constraints, "partitions": partitions, "seed": SEED });
    jobs.create(
        &PostParams::default(),
        &object::<ProofJob>(name, spec, Some(json!({ ASSIGNED_POD_LABEL: POD }))),
    )
    .await
    .unwrap_or_else(|err| panic!("create job {name}: {err}"));
    jobs.patch_status(
        name,
        &PatchParams::apply("test-operator"),
        &Patch::Apply(json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob", "metadata": { "name": name },
            "status": { "phase": "Running", "pod": POD, "attempts": 1, "assignedPods": [POD] },
        })),
    )
    .await
    .unwrap_or_else(|err| panic!("record the assignment of job {name}: {err}"));
}

fn object<K: Resource<DynamicType = ()> + serde::de::DeserializeOwned>(
    name: &str,
    spec: Value,
    labels: Option<Value>,
) -> K {
    serde_json::from_value(json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": { "name": name, "labels": labels.unwrap_or(json!({})) },
        "spec": spec,
    }))
    .expect("a valid object")
}

fn free_local_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A bare HTTP/1.1 GET: the status code and the body.
async fn http_get(address: &str, path: &str) -> (u16, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    let address = address.to_owned();
    let response = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(&address).expect("connect to the daemon");
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    })
    .await
    .unwrap();
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, body)| body)
        .to_owned();
    (code, body)
}

/// The daemon process; killed if the test ends early.
struct Daemon {
    child: Child,
    log: std::path::PathBuf,
}

impl Daemon {
    fn start(namespace: &str, params_dir: &Path, listen: &str, log: &Path) -> Self {
        Self::start_with(namespace, params_dir, listen, log, &[])
    }

    /// [`Daemon::start`] with more environment.
    fn start_with(
        namespace: &str,
        params_dir: &Path,
        listen: &str,
        log: &Path,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_proofpipe-prover"))
            .envs(env.iter().copied())
            .arg("daemon")
            .arg("--params-dir")
            .arg(params_dir)
            .args(["--listen", listen])
            .env("PROOFPIPE_POD_NAME", POD)
            .env("PROOFPIPE_NAMESPACE", namespace)
            .env("PROOFPIPE_POOL", POOL)
            .env("PROOFPIPE_PARTITION_WORKERS", "auto")
            .env("PROOFPIPE_CHANNEL_CAPACITY", "auto")
            .env("PROOFPIPE_GPU_WORKERS", "auto")
            .env("PROOFPIPE_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(log).unwrap())
            .spawn()
            .expect("start the daemon");
        Self {
            child,
            log: log.to_owned(),
        }
    }

    /// Polls `check` until it yields a value; on timeout (or the daemon exiting) fails with
    /// the daemon's log.
    async fn wait<T, F, Fut>(&mut self, what: &str, timeout: Duration, check: F) -> T
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(value) = check().await {
                return value;
            }
            let exited = self.child.try_wait().unwrap();
            if exited.is_some() || Instant::now() > deadline {
                let log = self.log_text();
                panic!(
                    "waiting for {what}: {}\n--- daemon log ---\n{log}",
                    exited.map_or("timed out".into(), |s| format!("the daemon exited ({s})"))
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM; true if the daemon exits 0 within `timeout`.
    fn terminate(&mut self, timeout: Duration) -> bool {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -TERM failed");
        self.wait_exit(timeout)
            .is_some_and(|status| status.success())
    }

    /// The daemon's exit status, if it exits within `timeout`.
    fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
