//! The gateway under load: many curio-style `Prove` calls at once (each blocks until its proof
//! is back), some repeated with the same request id as a retrying caller would, through
//! `proofpipe-gateway` into a pool of stand-in provers on the API server of `KUBECONFIG`. This
//! process stands in for the kubelet (a prover pod is Ready once it exists) and for the provers
//! (an assigned job is "proved" after `prove_ms`, its proof a digest of its input), so what is
//! measured is the gateway and the operator, not proving.
//!
//! Used by `examples/gateway_load.rs` (the benchmark, 500 calls) and
//! `tests/gateway_load.rs` (the same invariants at CI size).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use proofpipe_crds::{ASSIGNED_POD_LABEL, ProofJob, ProverPool};
use proofpipe_gateway::proto::await_proof_response::Status as AwaitStatus;
use proofpipe_gateway::proto::proving_engine_client::ProvingEngineClient;
use proofpipe_gateway::proto::{Priority, ProofKind, ProveRequest, SubmitProofRequest};
use serde_json::json;
use sha2::{Digest, Sha256};
use tonic::Request;

use crate::binaries::binary;
use crate::cluster::TestNamespace;
use crate::operator::OperatorProcess;
use crate::process::free_port;
use crate::stand_ins::{proc_status, stand_in_kubelet};

const TOKEN: &str = "load-test-token";
const POOL: &str = "load";

/// The load to run.
#[derive(Clone, Debug)]
pub struct LoadArgs {
    /// Distinct request ids, each sent as one Prove call.
    pub submissions: usize,
    /// Stand-in prover pods in the pool.
    pub provers: usize,
    /// Request ids sent a second time (the first `duplicates` ones), as a retrying caller would.
    pub duplicates: usize,
    /// How long a stand-in prover takes per job.
    pub prove_ms: u64,
    /// Size of each C1 input.
    pub input_bytes: usize,
}

impl Default for LoadArgs {
    fn default() -> Self {
        Self {
            submissions: 500,
            provers: 4,
            duplicates: 50,
            prove_ms: 100,
            input_bytes: 4096,
        }
    }
}

/// The C1 envelope of submission `n`: unique per submission, `size` bytes.
fn input(n: usize, size: usize) -> Vec<u8> {
    let head = format!(r#"{{"SectorNum":{n},"SectorSize":2048,"Phase1Out":""#);
    let mut bytes = head.into_bytes();
    bytes.resize(size.saturating_sub(2).max(bytes.len()), b'A');
    bytes.extend_from_slice(b"\"}");
    bytes
}

/// The stand-in proof of an input with SHA-256 `digest_hex`: 192 bytes derived from it, so
/// a caller given another job's proof is caught.
fn stand_in_proof(digest_hex: &str) -> Vec<u8> {
    Sha256::digest(digest_hex.as_bytes()).repeat(6)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a run saw.
#[derive(Debug)]
pub struct LoadReport {
    pub args: LoadArgs,
    /// Calls answered COMPLETED with the proof of their own input.
    pub answered: usize,
    /// Calls that did not, with why.
    pub failures: Vec<String>,
    pub distinct_jobs: usize,
    pub jobs_in_namespace: usize,
    /// Jobs a stand-in prover was asked to prove more than once.
    pub proved_twice: Vec<String>,
    pub all_answered: Duration,
    pub latency_p50: f64,
    pub latency_p99: f64,
    pub latency_max: f64,
    /// The gateway's RSS before, peak sampled every 100 ms, VmHWM, after; KiB.
    pub rss_kib: [u64; 4],
}

impl LoadReport {
    /// What went wrong: calls lost or answered wrongly, more or fewer jobs than request ids,
    /// jobs proved twice. Empty when the run was correct.
    pub fn problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = self.failures.iter().take(10).cloned().collect();
        let calls = self.args.submissions + self.args.duplicates;
        if self.answered != calls {
            problems.push(format!(
                "{} of {calls} calls answered with their proof",
                self.answered
            ));
        }
        if self.distinct_jobs != self.args.submissions
            || self.jobs_in_namespace != self.args.submissions
        {
            problems.push(format!(
                "{} distinct jobs answered and {} in the namespace, want {} (one per request id)",
                self.distinct_jobs, self.jobs_in_namespace, self.args.submissions
            ));
        }
        if !self.proved_twice.is_empty() {
            problems.push(format!("proved more than once: {:?}", self.proved_twice));
        }
        problems
    }

    /// The report as a Markdown table.
    pub fn table(&self) -> String {
        let a = &self.args;
        let mib = |kib: u64| kib as f64 / 1024.0;
        let [before, peak, hwm, after] = self.rss_kib;
        format!(
            "## Gateway load: {} Prove calls (+{} repeated request ids), {} stand-in provers, \
             {} ms per proof, {} B inputs\n\n\
             | measure | value |\n|---|---|\n\
             | calls answered COMPLETED with their own proof | {} of {} |\n\
             | distinct jobs answered / ProofJobs in the namespace | {} / {} |\n\
             | jobs proved more than once | {} |\n\
             | every call answered | {:.1} s (provers alone: {:.1} s) |\n\
             | Prove latency p50 / p99 / max | {:.1} / {:.1} / {:.1} s |\n\
             | gateway RSS before / peak (sampled) / VmHWM / after | {:.0} / {:.0} / {:.0} / {:.0} MiB |\n",
            a.submissions,
            a.duplicates,
            a.provers,
            a.prove_ms,
            a.input_bytes,
            self.answered,
            a.submissions + a.duplicates,
            self.distinct_jobs,
            self.jobs_in_namespace,
            self.proved_twice.len(),
            self.all_answered.as_secs_f64(),
            (a.submissions as f64 * a.prove_ms as f64 / 1000.0) / a.provers as f64,
            self.latency_p50,
            self.latency_p99,
            self.latency_max,
            mib(before),
            mib(peak),
            mib(hwm),
            mib(after),
        )
    }
}

/// Runs `args` in `namespace`: the operator and the gateway as child processes, the stand-ins
/// in this process.
pub async fn run(namespace: &TestNamespace, args: &LoadArgs) -> LoadReport {
    let ns = namespace.name.clone();
    let client = namespace.client.clone();
    let work = tempfile::tempdir().expect("a scratch directory");
    let _operator = OperatorProcess::start(
        &binary("proofpipe-operator"),
        &ns,
        &work.path().join("operator.log"),
    );
    let proved: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    // The status writes of the stand-in kubelet, a few at a time.
    let writes = Arc::new(tokio::sync::Semaphore::new(32));
    tokio::spawn(stand_in_kubelet(
        Api::namespaced(client.clone(), &ns),
        writes,
    ));
    tokio::spawn(stand_in_provers(
        Api::namespaced(client.clone(), &ns),
        proved.clone(),
        Duration::from_millis(args.prove_ms),
    ));
    let pools: Api<ProverPool> = Api::namespaced(client.clone(), &ns);
    let pool: ProverPool = serde_json::from_value(json!({
        "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
        "metadata": {"name": POOL},
        "spec": {"replicas": args.provers, "template": {"spec": {"containers": [
            {"name": "prover", "image": "stand-in"}]}}},
    }))
    .expect("a valid pool");
    pools
        .create(&PostParams::default(), &pool)
        .await
        .expect("create the pool");

    std::fs::write(work.path().join("token"), TOKEN).unwrap();
    let port = free_port();
    let gateway = std::process::Command::new(binary("proofpipe-gateway"))
        .args(["--namespace", &ns, "--pool", POOL, "--artifacts"])
        .arg(format!("file://{}/artifacts", work.path().display()))
        .arg("--token-file")
        .arg(work.path().join("token"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--metrics-listen", "127.0.0.1:0", "--log", "warn"])
        .spawn()
        .expect("start proofpipe-gateway");
    let gateway = KillOnDrop(gateway);
    let gateway_pid = gateway.0.id();
    let channel = loop {
        match tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect()
            .await
        {
            Ok(channel) => break channel,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let engine = ProvingEngineClient::new(channel);
    let rss_before = proc_status(gateway_pid, "VmRSS:").unwrap_or(0);
    eprintln!(
        "namespace {ns}; gateway pid {gateway_pid}; {} Prove calls (+{} repeated) into {} provers",
        args.submissions, args.duplicates, args.provers
    );

    let started = Instant::now();
    let mut calls = Vec::new();
    for n in 0..args.submissions + args.duplicates {
        // The repeats are submissions 0..duplicates again, as a caller retrying would send.
        let id = n % args.submissions;
        let bytes = input(id, args.input_bytes);
        let expected = stand_in_proof(&hex(&Sha256::digest(&bytes)));
        let mut engine = engine.clone();
        calls.push(tokio::spawn(async move {
            let mut request = Request::new(ProveRequest {
                submit: Some(SubmitProofRequest {
                    request_id: format!("porep-1000-{id}"),
                    proof_kind: ProofKind::PorepSealCommit as i32,
                    sector_size: 2048,
                    registered_proof: 5,
                    priority: Priority::Normal as i32,
                    vanilla_proof: bytes,
                    sector_number: id as u64,
                    miner_id: 1000,
                    ..Default::default()
                }),
            });
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
            let call_started = Instant::now();
            let result = engine.prove(request).await;
            let latency = call_started.elapsed();
            let answer = match result {
                Ok(response) => response.into_inner().result.expect("a result"),
                Err(status) => return Err(format!("porep-1000-{id}: {status}")),
            };
            if AwaitStatus::try_from(answer.status) != Ok(AwaitStatus::Completed) {
                return Err(format!("porep-1000-{id}: {answer:?}"));
            }
            if answer.proof != expected {
                return Err(format!("porep-1000-{id}: the proof of another input"));
            }
            Ok((answer.job_id, latency))
        }));
    }
    let mut peak_rss = 0;
    let sampler = {
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        let handle = tokio::spawn(async move {
            let mut peak = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(proc_status(gateway_pid, "VmRSS:").unwrap_or(0));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        });
        (done, handle)
    };
    let mut failures = Vec::new();
    let mut latencies = Vec::new();
    let mut job_ids = HashSet::new();
    for call in calls {
        match call.await.expect("call task") {
            Ok((job, latency)) => {
                job_ids.insert(job);
                latencies.push(latency);
            }
            Err(failure) => failures.push(failure),
        }
    }
    let all_answered = started.elapsed();
    sampler.0.store(true, std::sync::atomic::Ordering::Relaxed);
    peak_rss = peak_rss.max(sampler.1.await.unwrap_or(0));
    let hwm = proc_status(gateway_pid, "VmHWM:").unwrap_or(0);
    let rss_after = proc_status(gateway_pid, "VmRSS:").unwrap_or(0);

    let jobs: Api<ProofJob> = Api::namespaced(client.clone(), &ns);
    let listed = jobs.list(&ListParams::default()).await.expect("list jobs");
    let proved = proved.lock().expect("lock").clone();
    let proved_twice: Vec<_> = proved.iter().filter(|(_, n)| **n > 1).collect();
    latencies.sort();
    let quantile = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64())
    };

    drop(gateway);
    LoadReport {
        args: args.clone(),
        answered: latencies.len(),
        failures,
        distinct_jobs: job_ids.len(),
        jobs_in_namespace: listed.items.len(),
        proved_twice: proved_twice
            .iter()
            .map(|(name, _)| (*name).clone())
            .collect(),
        all_answered,
        latency_p50: quantile(0.5),
        latency_p99: quantile(0.99),
        latency_max: latencies.last().map_or(0.0, |d| d.as_secs_f64()),
        rss_kib: [rss_before, peak_rss, hwm, rss_after],
    }
}

/// A child process killed (and reaped) when dropped, also when the run panics.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Answers each assignment after `prove_time` with what a prover writes for a 1-partition
/// Filecoin job: its partition proof and the finished, verified proof, a digest of the job's
/// input. Counts how often each job was proved.
async fn stand_in_provers(
    jobs: Api<ProofJob>,
    proved: Arc<Mutex<HashMap<String, usize>>>,
    prove_time: Duration,
) {
    let mut answered = HashSet::new();
    let mut events = watcher(jobs.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(job) = events.next().await {
        let Ok(job) = job else { continue };
        let name = job.name_any();
        let Some(pod) = job.labels().get(ASSIGNED_POD_LABEL).cloned() else {
            continue;
        };
        let Some(work) = job.spec.filecoin.clone() else {
            continue;
        };
        if job
            .status
            .as_ref()
            .is_some_and(|s| s.phase.is_some_and(|p| p.is_finished()))
            || !answered.insert((name.clone(), pod.clone()))
        {
            continue;
        }
        *proved
            .lock()
            .expect("lock")
            .entry(name.clone())
            .or_default() += 1;
        let jobs = jobs.clone();
        tokio::spawn(async move {
            tokio::time::sleep(prove_time).await;
            let proof = stand_in_proof(&work.input.sha256);
            let encoded = base64::engine::general_purpose::STANDARD.encode(&proof);
            let body = json!({
                "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
                "metadata": {"name": name},
                "status": {
                    "proofs": [{"partition": 0, "proof": encoded, "verified": true,
                                "publicInputs": [], "provedBy": pod}],
                    "filecoin": {"proof": encoded, "proofBytes": proof.len(),
                                 "verified": true, "provedBy": pod},
                },
            });
            let params = PatchParams::apply(&format!("proofpipe-prover-{pod}"));
            if let Err(err) = jobs
                .patch_status(&name, &params, &Patch::Apply(&body))
                .await
            {
                eprintln!("proving {name} on {pod}: {err}");
            }
        });
    }
}
