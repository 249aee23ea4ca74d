//! The operator at fleet scale: many queued ProofJobs and many prover pods on the API server
//! of `KUBECONFIG`, with this process standing in for the kubelet (a prover pod is Ready as
//! soon as it exists) and for the provers (an assigned job gets a verified proof of every
//! partition at once), so that what is measured is the operator alone.
//!
//!     eval "$(../shared/kube-testenv/start.sh)"        # a fresh one: nothing is cleaned up
//!     cargo build --release -p proofpipe-operator
//!     PROOFPIPE_BIN_DIR=target/release cargo run --release -p proofpipe-e2e \
//!         --example fleet_scale -- --jobs 10000 --provers 500
//!
//! Reports: time until every job was assigned and until every job succeeded, reconcile
//! latency p50/p99 by kind (from the operator's histogram), the operator's API requests per
//! job (its `api_requests_total`, by verb and resource), its peak RSS and CPU time, and its
//! API requests per second once everything has finished (`--idle-seconds`, default 60).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use proofpipe_crds::{ASSIGNED_POD_LABEL, ProofJob, ProofJobPhase, ProverPool};
use proofpipe_e2e::binaries::binary;
use proofpipe_e2e::cluster::TestNamespace;
use proofpipe_e2e::operator::OperatorProcess;
use proofpipe_e2e::stand_ins::{proc_status, stand_in_kubelet};
use serde_json::json;
use tokio::sync::Semaphore;

struct Args {
    jobs: usize,
    provers: usize,
    partitions: usize,
    idle_seconds: u64,
}

fn args() -> Args {
    let mut args = Args {
        jobs: 1000,
        provers: 50,
        partitions: 1,
        idle_seconds: 60,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given.next().unwrap_or_default();
        let number = || {
            value
                .parse()
                .unwrap_or_else(|_| panic!("{flag} takes a number, not {value:?}"))
        };
        match flag.as_str() {
            "--jobs" => args.jobs = number(),
            "--provers" => args.provers = number(),
            "--partitions" => args.partitions = number(),
            "--idle-seconds" => args.idle_seconds = number() as u64,
            other => {
                panic!("unknown flag {other}: --jobs N --provers N --partitions N --idle-seconds S")
            }
        }
    }
    args
}

/// In-flight writes of the stand-ins and of job creation: enough to keep the API server
/// busy, few enough not to drown it.
const CONCURRENT_WRITES: usize = 32;

#[tokio::main]
async fn main() {
    let args = args();
    let Some(namespace) = TestNamespace::create("fleet").await else {
        std::process::exit(2);
    };
    let ns = namespace.name.clone();
    let client = namespace.client.clone();
    let work = tempfile::tempdir().expect("a scratch directory");
    let operator = OperatorProcess::start(
        &binary("proofpipe-operator"),
        &ns,
        &work.path().join("operator.log"),
    );
    let metrics_url = operator.listen().to_owned();
    wait_until(Duration::from_secs(60), || {
        scrape(&metrics_url).is_some_and(|m| m.contains("api_requests_total"))
    })
    .await;
    eprintln!("namespace {ns}; operator pid {}", operator.pid());

    let writes = Arc::new(Semaphore::new(CONCURRENT_WRITES));
    let first_assigned: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let succeeded: Arc<Mutex<HashSet<String>>> = Arc::default();
    tokio::spawn(stand_in_kubelet(
        Api::namespaced(client.clone(), &ns),
        writes.clone(),
    ));
    tokio::spawn(stand_in_provers(
        Api::namespaced(client.clone(), &ns),
        writes.clone(),
        first_assigned.clone(),
        succeeded.clone(),
        args.partitions,
    ));

    let pools: Api<ProverPool> = Api::namespaced(client.clone(), &ns);
    let pool: ProverPool = serde_json::from_value(json!({
        "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
        "metadata": {"name": "fleet"},
        "spec": {"replicas": args.provers, "template": {"spec": {"containers": [{"name": "prover", "image": "stand-in"}]}}},
    }))
    .expect("a valid pool");
    pools
        .create(&PostParams::default(), &pool)
        .await
        .expect("create the pool");
    let ready_started = Instant::now();
    loop {
        let ready = pools
            .get("fleet")
            .await
            .ok()
            .and_then(|pool| pool.status?.ready_replicas)
            .unwrap_or(0);
        if ready as usize >= args.provers {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let pods_ready = ready_started.elapsed();
    let before = api_requests(&scrape(&metrics_url).unwrap_or_default());
    eprintln!(
        "{} provers Ready in {:.1} s; creating {} jobs",
        args.provers,
        pods_ready.as_secs_f64(),
        args.jobs
    );

    let jobs: Api<ProofJob> = Api::namespaced(client.clone(), &ns);
    let started = Instant::now();
    let mut creations = Vec::with_capacity(args.jobs);
    for n in 0..args.jobs {
        let jobs = jobs.clone();
        let writes = writes.clone();
        let partitions = args.partitions;
        creations.push(tokio::spawn(async move {
            let job: ProofJob = serde_json::from_value(json!({
                "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
                "metadata": {"name": format!("job-{n:05}")},
                "spec": {"pool": "fleet", "circuit": "mul-chain", "constraints": 1024,
                         "partitions": partitions},
            }))
            .expect("a valid job");
            let _permit = writes.acquire().await.expect("never closed");
            for _ in 0..5 {
                match jobs.create(&PostParams::default(), &job).await {
                    Ok(_) => return,
                    Err(err) => eprintln!("creating job-{n:05}: {err}; retrying"),
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            panic!("could not create job-{n:05}");
        }));
    }
    for creation in creations {
        creation.await.expect("creation task");
    }
    let created = started.elapsed();
    eprintln!(
        "{} jobs created in {:.1} s",
        args.jobs,
        created.as_secs_f64()
    );

    let mut peak_rss_kib = 0;
    loop {
        peak_rss_kib = peak_rss_kib.max(proc_status(operator.pid(), "VmHWM:").unwrap_or(0));
        let done = succeeded.lock().expect("lock").len();
        if done >= args.jobs {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3600),
            "only {done} of {} jobs succeeded within an hour",
            args.jobs
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let all_succeeded = started.elapsed();
    let all_assigned = first_assigned
        .lock()
        .expect("lock")
        .values()
        .max()
        .map(|last| *last - started)
        .unwrap_or_default();
    let at_finish_text = scrape(&metrics_url).unwrap_or_default();
    let at_finish = api_requests(&at_finish_text);
    let cpu_at_finish = cpu_seconds(operator.pid());

    tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
    let idle_text = scrape(&metrics_url).unwrap_or_default();
    let idle = api_requests(&idle_text);
    peak_rss_kib = peak_rss_kib.max(proc_status(operator.pid(), "VmHWM:").unwrap_or(0));

    let total = |counts: &BTreeMap<(String, String), f64>| counts.values().sum::<f64>();
    let during: BTreeMap<(String, String), f64> = at_finish
        .iter()
        .map(|(key, value)| (key.clone(), value - before.get(key).copied().unwrap_or(0.0)))
        .filter(|(_, value)| *value > 0.0)
        .collect();
    println!(
        "## Fleet scale: {} jobs x {} partition(s), {} provers",
        args.jobs, args.partitions, args.provers
    );
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| provers Ready after pool creation | {:.1} s |",
        pods_ready.as_secs_f64()
    );
    println!(
        "| jobs created (by this bench, {CONCURRENT_WRITES} at a time) | {:.1} s |",
        created.as_secs_f64()
    );
    println!(
        "| every job assigned | {:.1} s |",
        all_assigned.as_secs_f64()
    );
    println!(
        "| every job Succeeded | {:.1} s |",
        all_succeeded.as_secs_f64()
    );
    for kind in ["ProofJob", "ProverPool"] {
        let (p50, p99, count) = reconcile_quantiles(&at_finish_text, kind);
        println!(
            "| {kind} reconciles: count, p50, p99 | {count:.0}, {:.1} ms, {:.1} ms |",
            p50 * 1e3,
            p99 * 1e3
        );
    }
    for kind in ["ProofJob", "ProverPool"] {
        // A conflict is a write refused with 409 (it counts among the requests below).
        let outcomes: Vec<String> = reconcile_outcomes(&at_finish_text, kind)
            .iter()
            .map(|(outcome, count)| format!("{outcome} {count:.0}"))
            .collect();
        println!("| {kind} reconciles by outcome | {} |", outcomes.join(", "));
    }
    println!(
        "| operator API requests per job | {:.2} |",
        total(&during) / args.jobs as f64
    );
    println!(
        "| operator peak RSS | {:.0} MiB |",
        peak_rss_kib as f64 / 1024.0
    );
    println!(
        "| operator CPU time until all Succeeded | {:.1} s |",
        cpu_at_finish.unwrap_or(0.0)
    );
    println!(
        "| idle API requests per second ({} s after the last job) | {:.2} |",
        args.idle_seconds,
        (total(&idle) - total(&at_finish)) / args.idle_seconds as f64
    );
    println!();
    println!("| verb | resource | requests while proving | per job |");
    println!("|---|---|---|---|");
    for ((verb, resource), count) in &during {
        println!(
            "| {verb} | {resource} | {count:.0} | {:.2} |",
            count / args.jobs as f64
        );
    }
    drop(operator);
}

/// Answers every assignment with a verified proof of each partition, as the prover on the
/// assigned pod would (its own field manager, status.proofs only).
async fn stand_in_provers(
    jobs: Api<ProofJob>,
    writes: Arc<Semaphore>,
    first_assigned: Arc<Mutex<HashMap<String, Instant>>>,
    succeeded: Arc<Mutex<HashSet<String>>>,
    partitions: usize,
) {
    let mut answered = HashSet::new();
    let mut events = watcher(jobs.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(job) = events.next().await {
        let Ok(job) = job else { continue };
        let name = job.name_any();
        let phase = job.status.as_ref().and_then(|status| status.phase);
        if phase == Some(ProofJobPhase::Succeeded) {
            succeeded.lock().expect("lock").insert(name);
            continue;
        }
        let Some(pod) = job.labels().get(ASSIGNED_POD_LABEL).cloned() else {
            continue;
        };
        first_assigned
            .lock()
            .expect("lock")
            .entry(name.clone())
            .or_insert_with(Instant::now);
        if !answered.insert((name.clone(), pod.clone())) {
            continue;
        }
        let jobs = jobs.clone();
        let permit = writes.clone().acquire_owned().await.expect("never closed");
        tokio::spawn(async move {
            let proofs: Vec<_> = (0..partitions)
                .map(|partition| {
                    json!({
                        "partition": partition, "proof": "AAAA", "verified": true,
                        "publicInputs": [], "provedBy": pod,
                    })
                })
                .collect();
            let body = json!({
                "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
                "metadata": {"name": name},
                "status": {"proofs": proofs},
            });
            let params = PatchParams::apply(&format!("proofpipe-prover-{pod}"));
            if let Err(err) = jobs
                .patch_status(&name, &params, &Patch::Apply(&body))
                .await
            {
                eprintln!("proving {name} on {pod}: {err}");
            }
            drop(permit);
        });
    }
}

/// `proofpipe_operator_api_requests_total` by (verb, resource).
fn api_requests(metrics: &str) -> BTreeMap<(String, String), f64> {
    metrics
        .lines()
        .filter_map(|line| line.strip_prefix("proofpipe_operator_api_requests_total{"))
        .filter_map(|rest| {
            let (labels, value) = rest.split_once("} ")?;
            let label = |name: &str| {
                let start = labels.find(&format!("{name}=\""))? + name.len() + 2;
                let end = labels[start..].find('"')? + start;
                Some(labels[start..end].to_owned())
            };
            Some((
                (label("verb")?, label("resource")?),
                value.trim().parse().ok()?,
            ))
        })
        .collect()
}

/// `proofpipe_operator_reconciles_total` of `kind` by outcome (applied, unchanged,
/// conflict, failed).
fn reconcile_outcomes(metrics: &str, kind: &str) -> BTreeMap<String, f64> {
    let prefix = format!("proofpipe_operator_reconciles_total{{kind=\"{kind}\",outcome=\"");
    metrics
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .filter_map(|rest| {
            let (outcome, value) = rest.split_once("\"} ")?;
            Some((outcome.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

/// p50 and p99 of the reconcile duration of `kind` (linear within a bucket, as PromQL's
/// histogram_quantile), and the count.
fn reconcile_quantiles(metrics: &str, kind: &str) -> (f64, f64, f64) {
    let prefix =
        format!("proofpipe_operator_reconcile_duration_seconds_bucket{{kind=\"{kind}\",le=\"");
    let buckets: Vec<(f64, f64)> = metrics
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .filter_map(|rest| {
            let (le, value) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, value.trim().parse().ok()?))
        })
        .collect();
    let count = buckets.last().map_or(0.0, |(_, c)| *c);
    let quantile = |q: f64| {
        let rank = q * count;
        let mut lower = (0.0, 0.0);
        for &(le, cumulative) in &buckets {
            if cumulative >= rank {
                if le.is_infinite() {
                    return lower.0;
                }
                let within = (rank - lower.1) / (cumulative - lower.1).max(1.0);
                return lower.0 + (le - lower.0) * within;
            }
            lower = (le, cumulative);
        }
        lower.0
    };
    (quantile(0.5), quantile(0.99), count)
}

/// GET /metrics from the operator.
fn scrape(address: &str) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n").ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    Some(text)
}

/// User + system CPU seconds of a process.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / per_second)
}

async fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "the operator did not come up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
