//! A prover's lifetime, not its first job: ONE prover pod proves 21 jobs back to back, mixing
//! real 2 KiB PoRep C2, SnapDeals, WindowPoSt-partition and WinningPoSt proofs (their parameter
//! sets kept between jobs), synthetic circuits, a job cancelled while it proves, and two inputs
//! that can never prove (a C1 output of another proof type than the job says, and a digest that
//! does not match). The pool requests a GPU that the test's prover (a build without CUDA) does
//! not have: the pool's `ProversOnGpu` condition, the prover's entry and its
//! `proofpipe_prover_gpu_missing` metric say so.
//!
//! Every proof is checked (Filecoin's verifiers through `proofpipe-prover porep-verify` /
//! `snap-verify` / `window-post-verify` / `winning-post-verify`, the synthetic ones against
//! their parameters); nothing hangs (each job has a
//! deadline); the bad inputs fail at once with `InvalidInput` on their first attempt; the pod
//! is never replaced; each parameter set is read once (`/metrics`); the prover's resident
//! memory is flat from the third job on (the series is printed).
//!
//! A warm prover used to hang on its second Filecoin job (a lock taken twice in the
//! parameter cache) and to exit on every bad input: this scenario fails on that code.
//!
//! Needs `KUBECONFIG` (skips without it), `PROOFPIPE_FILECOIN_TESTDATA` and
//! `PROOFPIPE_S3_SERVER`, which `scripts/test.sh` exports; under CI their absence fails it.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{DeleteParams, DynamicObject};
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use proofpipe_crds::{ProofJob, ProofJobPhase, ProverPool};
use proofpipe_e2e::filecoin::{
    assert_verify_post, assert_verify_seal, assert_verify_snap, filecoin_pool, required_env,
};
use proofpipe_e2e::prover_metrics::scrape;
use proofpipe_e2e::s3::{S3Server, hex};
use proofpipe_e2e::stack::{Stack, check_succeeded, live_pods, phase, pool_condition};
use sha2::{Digest, Sha256};

const BUCKET: &str = "soak";
const WINDOW_POST_KEY: &str = "window-post-p0.json";
const WINNING_POST_KEY: &str = "winning-post.json";
const POOL: &str = "soak";
const POD: &str = "soak-prover-0";
/// One job, from submission to its end, on 2 cores of a test build (a 2 KiB PoRep partition
/// is ~2^22 constraints).
const JOB_TIMEOUT: Duration = Duration::from_secs(600);

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("a well-formed object")
}

/// What one job of the series is, and how it must end.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    PoRep,
    Snap,
    /// Partition 0 of the test WindowPoSt, as curio sends it.
    WindowPost,
    WinningPost,
    /// mul-chain, `partitions` of 1024 constraints.
    Synthetic(i32),
    /// A synthetic job deleted once its first proof is in.
    Cancelled,
    /// A C1 output of StackedDrg2KiBV1_1 in a job that says another registered proof.
    WrongProofType,
    /// The right C1 output, the wrong SHA-256.
    WrongDigest,
}

const SERIES: [Kind; 21] = {
    use Kind::*;
    [
        PoRep,
        Snap,
        Synthetic(2),
        PoRep,
        WrongProofType,
        Snap,
        Synthetic(3),
        Cancelled,
        Synthetic(2),
        PoRep,
        WrongDigest,
        Synthetic(4),
        Snap,
        Synthetic(2),
        PoRep,
        Synthetic(3),
        WindowPost,
        Synthetic(2),
        WinningPost,
        Synthetic(2),
        Synthetic(2),
    ]
};

/// The SHA-256 of each stored input, by its key in the bucket.
struct Inputs {
    c1: String,
    snap: String,
    window_post: String,
    winning_post: String,
}

fn job_object(name: &str, kind: Kind, inputs: &Inputs) -> DynamicObject {
    let (c1_sha, snap_sha) = (inputs.c1.as_str(), inputs.snap.as_str());
    let post = |kind: &str, post_proof: &str, key: &str, sha: &str| {
        serde_json::json!({ "filecoin": {
            "kind": kind,
            "postProof": post_proof,
            "input": { "url": format!("s3://{BUCKET}/{key}"), "sha256": sha },
            "output": { "url": format!("s3://{BUCKET}/{name}.proof") },
        } })
    };
    let c1 = |seal_proof: &str, sha: &str| {
        serde_json::json!({
            "sealProof": seal_proof,
            "minerId": 1000,
            "input": { "url": format!("s3://{BUCKET}/c1.json"), "sha256": sha },
            "output": { "url": format!("s3://{BUCKET}/{name}.proof") },
        })
    };
    let spec = match kind {
        Kind::PoRep => serde_json::json!({ "filecoin": c1("StackedDrg2KiBV1_1", c1_sha) }),
        Kind::WrongProofType => {
            serde_json::json!({ "filecoin": c1("StackedDrg2KiBV1_1_Feat_SyntheticPoRep", c1_sha) })
        }
        Kind::WrongDigest => {
            serde_json::json!({ "filecoin": c1("StackedDrg2KiBV1_1", &"0".repeat(64)) })
        }
        Kind::Snap => serde_json::json!({ "filecoin": {
            "kind": "SnapDealsUpdate",
            "updateProof": "StackedDrg2KiBV1",
            "input": { "url": format!("s3://{BUCKET}/snap.json"), "sha256": snap_sha },
            "output": { "url": format!("s3://{BUCKET}/{name}.proof") },
        } }),
        Kind::WindowPost => post(
            "WindowPoStPartition",
            "StackedDrgWindow2KiBV1_2",
            WINDOW_POST_KEY,
            &inputs.window_post,
        ),
        Kind::WinningPost => post(
            "WinningPoSt",
            "StackedDrgWinning2KiBV1",
            WINNING_POST_KEY,
            &inputs.winning_post,
        ),
        Kind::Synthetic(partitions) => serde_json::json!({
            "circuit": "mul-chain", "constraints": 1024, "partitions": partitions,
            "seed": name.len(),
        }),
        Kind::Cancelled => serde_json::json!({
            "circuit": "mul-chain", "constraints": 4096, "partitions": 200,
        }),
    };
    let mut spec = spec;
    spec["pool"] = serde_json::json!(POOL);
    // A retry would hide a failure that should not have happened.
    spec["backoffLimit"] = serde_json::json!(0);
    object(serde_json::json!({
        "apiVersion": "proofpipe.dev/v1alpha1",
        "kind": "ProofJob",
        "metadata": { "name": name },
        "spec": spec,
    }))
}

/// The resident memory of `pid` in bytes (`VmRSS`).
fn resident_bytes(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Writes `job`'s Filecoin proof to a file in `dir` and returns its path.
fn proof_file(job: &ProofJob, dir: &Path) -> std::path::PathBuf {
    let result = job
        .status
        .as_ref()
        .and_then(|s| s.filecoin.as_ref())
        .expect("status.filecoin");
    assert!(result.verified, "{}: {result:?}", job.name_any());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&result.proof)
        .unwrap();
    let path = dir.join(format!("{}.proof", job.name_any()));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[tokio::test]
async fn one_prover_proves_many_jobs_of_mixed_kinds_without_hanging_or_growing() {
    let how = "scripts/test.sh exports it";
    let Some(testdata) = required_env("PROOFPIPE_FILECOIN_TESTDATA", how) else {
        return;
    };
    let Some(moto) = required_env("PROOFPIPE_S3_SERVER", how) else {
        return;
    };
    let Some(mut stack) = Stack::start("soak").await else {
        return;
    };
    let s3 = S3Server::start(&moto).await;
    s3.create_bucket(BUCKET).await;
    let c1_path = testdata.join("c1-2KiB.json");
    let snap_path = testdata.join("snap-2KiB.json");
    let c1 = std::fs::read(&c1_path).unwrap();
    let snap = std::fs::read(&snap_path).unwrap();
    let proofs = tempfile::tempdir().unwrap();
    // Partition 0 of the test WindowPoSt (two sectors of 2 KiB each), as curio sends one.
    let mut window: serde_json::Value =
        serde_json::from_slice(&std::fs::read(testdata.join("window-post-2KiB.json")).unwrap())
            .unwrap();
    let first_partition = window["vanilla_proofs"].as_array().unwrap()[..2].to_vec();
    window["vanilla_proofs"] = serde_json::json!(first_partition);
    window["partition_index"] = serde_json::json!(0);
    let window_post = serde_json::to_vec(&window).unwrap();
    std::fs::write(proofs.path().join(WINDOW_POST_KEY), &window_post).unwrap();
    let winning_post = std::fs::read(testdata.join("winning-post-2KiB.json")).unwrap();
    std::fs::write(proofs.path().join(WINNING_POST_KEY), &winning_post).unwrap();
    let store = s3.client(BUCKET);
    for (key, bytes) in [
        ("c1.json", &c1),
        ("snap.json", &snap),
        (WINDOW_POST_KEY, &window_post),
        (WINNING_POST_KEY, &winning_post),
    ] {
        store
            .put(&ObjectPath::from(key), bytes.clone().into())
            .await
            .unwrap();
    }
    let inputs = Inputs {
        c1: hex(&Sha256::digest(&c1)),
        snap: hex(&Sha256::digest(&snap)),
        window_post: hex(&Sha256::digest(&window_post)),
        winning_post: hex(&Sha256::digest(&winning_post)),
    };

    let params = testdata.join("params");
    let mut env = serde_json::json!([
        { "name": "PROOFPIPE_PARAMS_DIR", "value": stack.params_dir().display().to_string() },
    ]);
    env.as_array_mut()
        .unwrap()
        .extend(s3.prover_env().as_array().unwrap().iter().cloned());
    let mut pool = filecoin_pool(POOL, &params, &env, &[]);
    // A GPU this test's prover (built without CUDA) does not have.
    pool.data["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] =
        "1".into();
    stack.namespace.apply(&[pool]).await;

    let pods = stack.namespace.api::<Pod>();
    let pools = stack.namespace.api::<ProverPool>();
    let first_pod = stack
        .wait_for("the prover pod", || async {
            let live = live_pods(&pods).await?;
            match live.as_slice() {
                [pod] if pod.name_any() == POD => Ok(pod.uid().unwrap()),
                other => Err(format!("{} pods", other.len())),
            }
        })
        .await;

    let jobs = stack.jobs();
    let mut rss = Vec::new();
    for (index, kind) in SERIES.into_iter().enumerate() {
        let name = format!("job-{index:02}");
        stack
            .namespace
            .apply(&[job_object(&name, kind, &inputs)])
            .await;
        let what = format!("{name} ({kind:?}) to end");
        if kind == Kind::Cancelled {
            stack
                .wait_within(&what, JOB_TIMEOUT, || async {
                    let job = jobs.get(&name).await.map_err(|e| e.to_string())?;
                    let proved = job
                        .status
                        .as_ref()
                        .and_then(|s| s.proofs.as_ref())
                        .map_or(0, Vec::len);
                    if proved > 0 {
                        Ok(())
                    } else {
                        Err(format!("{proved} proofs"))
                    }
                })
                .await;
            jobs.delete(&name, &DeleteParams::default()).await.unwrap();
            stack
                .wait_within(&what, JOB_TIMEOUT, || async {
                    match jobs.get_opt(&name).await.map_err(|e| e.to_string())? {
                        None => Ok(()),
                        Some(_) => Err("still there".into()),
                    }
                })
                .await;
        } else {
            let job = stack
                .wait_within(&what, JOB_TIMEOUT, || async {
                    let job = jobs.get(&name).await.map_err(|e| e.to_string())?;
                    match phase(&job) {
                        Some(phase) if phase.is_finished() => Ok(job),
                        other => Err(format!(
                            "phase {other:?}: {:?}",
                            job.status.as_ref().and_then(|s| s.message.clone())
                        )),
                    }
                })
                .await;
            check_outcome(&stack, &job, kind, &testdata, proofs.path());
        }
        // The prover is idle again before the next job, in the same pod.
        stack
            .wait_within(
                &format!("the prover to be idle after {name}"),
                JOB_TIMEOUT,
                || async {
                    let pool = pools.get(POOL).await.map_err(|e| e.to_string())?;
                    let entry = pool
                        .status
                        .and_then(|s| s.provers)
                        .and_then(|p| p.into_iter().find(|e| e.pod == POD))
                        .ok_or("no entry")?;
                    match entry.current_job {
                        None => Ok(()),
                        Some(job) => Err(format!("busy with {job}")),
                    }
                },
            )
            .await;
        let live = live_pods(&pods).await.unwrap();
        assert_eq!(
            live.iter().map(|p| p.uid().unwrap()).collect::<Vec<_>>(),
            std::slice::from_ref(&first_pod),
            "after {name} ({kind:?}): the one prover pod was never replaced"
        );
        let pid = stack.runner.pod_pid(POD).expect("the prover runs");
        rss.push(resident_bytes(pid).expect("the prover's VmRSS"));
    }

    let mib: Vec<u64> = rss.iter().map(|b| b >> 20).collect();
    eprintln!("prover resident memory after each job (MiB): {mib:?}");
    // Flat from the third job on: both parameter sets are resident by then, and every job's
    // pipeline memory is given back. A leak of a parameter set (~0.5-1 GB at 2 KiB) or of a
    // pipeline per job would show here many times over.
    let settled = rss[2];
    let peak = *rss[2..].iter().max().unwrap();
    assert!(
        peak <= settled + settled / 5 + (64 << 20),
        "resident memory grew from {} MiB (after job 3) to {} MiB: {mib:?}",
        settled >> 20,
        peak >> 20
    );

    // Each Filecoin parameter set was read once, however many jobs used it.
    let metrics = scrape(&stack.runner.pod_log(POD)).await;
    let loads: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("proofpipe_daemon_parameter_loads_total{"))
        .collect();
    assert_eq!(
        loads.len(),
        4,
        "a PoRep, a SnapDeals, a WindowPoSt and a WinningPoSt set: {loads:?}"
    );
    assert!(loads.iter().all(|l| l.ends_with(" 1")), "{loads:?}");
    let failures: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("proofpipe_daemon_job_failures_total{"))
        .collect();
    assert_eq!(
        failures,
        ["proofpipe_daemon_job_failures_total{reason=\"InvalidInput\"} 2"]
    );

    // The pool asked for a GPU the prover does not have: its entry, the pool's condition and
    // the prover's metrics say so.
    for line in [
        "proofpipe_prover_gpu_missing 1",
        "proofpipe_prover_gpu_devices 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    }
    let pool = pools.get(POOL).await.unwrap();
    let status = pool.status.unwrap();
    let entry = status
        .provers
        .iter()
        .flatten()
        .find(|e| e.pod == POD)
        .expect("the prover's entry");
    assert_eq!(
        entry.gpu.as_ref().map(|g| g.backend.as_str()),
        Some("cpu"),
        "{entry:?}"
    );
    let resident = entry.resident_parameters.clone().unwrap_or_default();
    assert!(
        resident.iter().any(|p| p == "StackedDrg2KiBV1_1")
            && resident.iter().any(|p| p == "StackedDrgWinning2KiBV1"),
        "{resident:?}"
    );
    let gpu = pool_condition(&status, "ProversOnGpu").expect("the ProversOnGpu condition");
    assert_eq!(
        (gpu.status.as_str(), gpu.reason.as_str()),
        ("False", "ProvingOnCpu"),
        "{gpu:?}"
    );
    assert!(gpu.message.contains(POD), "{gpu:?}");
}

/// Fails the test unless `job` ended as `kind` must.
fn check_outcome(stack: &Stack, job: &ProofJob, kind: Kind, testdata: &Path, dir: &Path) {
    let name = job.name_any();
    let status = job.status.as_ref().unwrap();
    let params = testdata.join("params");
    match kind {
        Kind::Synthetic(_) => {
            check_succeeded(job).unwrap_or_else(|e| panic!("{name} ({kind:?}): {e}"));
            assert_eq!(status.attempts, Some(1), "{name}: one attempt");
        }
        Kind::PoRep | Kind::Snap | Kind::WindowPost | Kind::WinningPost => {
            // Filecoin partition proofs carry no public inputs: the assembled proof and
            // Filecoin's verifier (below) stand for them.
            assert_eq!(
                phase(job),
                Some(ProofJobPhase::Succeeded),
                "{name}: {status:?}"
            );
            let total = job.spec.partition_count();
            assert_eq!(status.partitions_done, Some(total), "{name}");
            assert_eq!(status.attempts, Some(1), "{name}: one attempt");
        }
        Kind::WrongProofType | Kind::WrongDigest => {
            assert_eq!(phase(job), Some(ProofJobPhase::Failed), "{name}");
            let failed = status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "Failed" && c.status == "True")
                .unwrap_or_else(|| panic!("{name}: no Failed condition: {status:?}"));
            assert_eq!(failed.reason, "InvalidInput", "{name}: {failed:?}");
            assert_eq!(
                (status.attempts, status.failed),
                (Some(1), Some(1)),
                "{name}: failed at once"
            );
            let why = if kind == Kind::WrongDigest {
                "its SHA-256 is"
            } else {
                "it is of StackedDrg2KiBV1_1, but the job says \
                 StackedDrg2KiBV1_1_Feat_SyntheticPoRep"
            };
            let last = status.last_failure.as_ref().expect("lastFailure");
            assert!(
                last.message.contains(why) && last.reason == "InvalidInput",
                "{name}: {last:?}"
            );
            assert!(status.proofs.as_deref().unwrap_or_default().is_empty());
        }
        Kind::Cancelled => unreachable!("deleted, not finished"),
    }
    match kind {
        Kind::PoRep => assert_verify_seal(
            &testdata.join("c1-2KiB.json"),
            &proof_file(job, dir),
            &params,
        ),
        Kind::Snap => assert_verify_snap(
            &testdata.join("snap-2KiB.json"),
            &proof_file(job, dir),
            &params,
        ),
        Kind::WindowPost => {
            assert_verify_post(&dir.join(WINDOW_POST_KEY), &proof_file(job, dir), &params)
        }
        Kind::WinningPost => {
            assert_verify_post(&dir.join(WINNING_POST_KEY), &proof_file(job, dir), &params)
        }
        Kind::Synthetic(_) => stack
            .verify_proofs(job)
            .unwrap_or_else(|e| panic!("{name}: {e}")),
        _ => {}
    }
}
