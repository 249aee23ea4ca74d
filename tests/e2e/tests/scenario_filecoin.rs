//! A real Filecoin PoRep through the cluster: a 2 KiB sector's C1 output (lotus-bench's
//! commit-2 file, sealed by `scripts/filecoin-testdata.sh`) is put in an S3-compatible store
//! (moto's server, started here on loopback), a ProofJob names it by URL and SHA-256, a prover
//! pod (pod runner, memory cgroup) proves it, and the proof lands at the job's output URL and in
//! its status; Filecoin's own verifier (`proofpipe-prover porep-verify`, i.e. verify_seal)
//! accepts it. A job whose input does not have its SHA-256 fails, and says why.
//!
//! Beside it, a pool of small pods set up as docs/operating.md and docs/prover-daemon.md say
//! for pods too small to hold the R1CS matrices: `PROOFPIPE_POREP_SYNTHESIS=one-pass` in its
//! template's `env`. Its pod proves the same sector in one pass (the daemon's log says so for
//! that job, and `matrices` for the default pool's), and `verify_seal` accepts that proof too.
//!
//! Needs `KUBECONFIG` (skips without it), `PROOFPIPE_FILECOIN_TESTDATA` and
//! `PROOFPIPE_S3_SERVER` (the path of `moto_server`), which `scripts/test.sh` exports; under
//! CI their absence fails the test.

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DynamicObject, ListParams};
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use proofpipe_crds::{ProofJobPhase, ProverPool};
use proofpipe_e2e::filecoin::{assert_verify_seal, filecoin_pool, logged_synthesis, required_env};
use proofpipe_e2e::s3::{S3Server, hex};
use proofpipe_e2e::stack::{Stack, phase};
use sha2::{Digest, Sha256};

const BUCKET: &str = "sectors";
/// Proving a 2 KiB PoRep partition (~2^22 constraints) on 2 cores of a test build.
const PROVING_TIMEOUT: Duration = Duration::from_secs(900);
/// The pool of the small pods' choice, its job, and the pod that proves it.
const SMALL_POOL: &str = "fil-small";
const SMALL_JOB: &str = "sector-1-small";
const SMALL_POD: &str = "fil-small-prover-0";
/// The small pool's pod is held under this: the pods the one-pass choice is for are smaller
/// than the matrices' plans (docs/operating.md: a 32 GiB sector's smallest matrices plan needs
/// 92.6 GiB).
const SMALL_POD_BYTES: i64 = 99 << 30;

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("a well-formed object")
}

#[tokio::test]
async fn a_sealed_sector_is_proved_from_s3_and_verify_seal_accepts_the_proof() {
    let how = "scripts/test.sh exports it";
    let Some(testdata) = required_env("PROOFPIPE_FILECOIN_TESTDATA", how) else {
        return;
    };
    let Some(moto) = required_env("PROOFPIPE_S3_SERVER", how) else {
        return;
    };
    let Some(mut stack) = Stack::start("filecoin").await else {
        return;
    };
    let s3 = S3Server::start(&moto).await;
    s3.create_bucket(BUCKET).await;
    let c1_path = testdata.join("c1-2KiB.json");
    let c1 = std::fs::read(&c1_path).unwrap();
    let sha256 = hex(&Sha256::digest(&c1));
    let store = s3.client(BUCKET);
    store
        .put(&ObjectPath::from("sector-1/c1.json"), c1.clone().into())
        .await
        .unwrap();

    let params = testdata.join("params");
    // The small pods' pool: the remedy as the docs give it, one entry of the template's env.
    let mut small_env = s3.prover_env();
    small_env
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "name": "PROOFPIPE_POREP_SYNTHESIS", "value": "one-pass" }));
    stack
        .namespace
        .apply(&[
            filecoin_pool("fil", &params, &s3.prover_env(), &[]),
            filecoin_pool(SMALL_POOL, &params, &small_env, &[]),
        ])
        .await;
    let job = |name: &str, pool: &str, digest: &str, priority: i32, backoff_limit: i32| {
        object(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1",
            "kind": "ProofJob",
            "metadata": { "name": name },
            "spec": {
                "pool": pool,
                "priority": priority,
                "backoffLimit": backoff_limit,
                "filecoin": {
                    "sealProof": "StackedDrg2KiBV1_1",
                    "minerId": 1000,
                    "input": { "url": format!("s3://{BUCKET}/sector-1/c1.json"), "sha256": digest },
                    "output": { "url": format!("s3://{BUCKET}/sector-1/{name}.proof") },
                },
            },
        }))
    };
    // The job with the wrong digest goes first (higher priority) and must fail without a proof,
    // at once (an input that can never prove is not retried); its prover stays up and proves
    // the sector's job next.
    stack
        .namespace
        .apply(&[
            job("wrong-digest", "fil", &"0".repeat(64), 10, 0),
            job("sector-1", "fil", &sha256, 0, 2),
            job(SMALL_JOB, SMALL_POOL, &sha256, 0, 2),
        ])
        .await;

    let jobs = stack.jobs();
    let failed = stack
        .wait_for("the job with the wrong digest to fail", || async {
            let job = jobs.get("wrong-digest").await.map_err(|e| e.to_string())?;
            match phase(&job) {
                Some(ProofJobPhase::Failed) => Ok(job),
                other => Err(format!("phase {other:?}")),
            }
        })
        .await;
    assert!(
        failed
            .status
            .as_ref()
            .and_then(|s| s.filecoin.as_ref())
            .is_none()
    );
    // Why it failed is in the job's own status, in the prover's words, on its first attempt.
    let failed_status = failed.status.as_ref().expect("a failed job's status");
    let last_failure = failed_status
        .last_failure
        .clone()
        .expect("status.lastFailure");
    assert!(
        last_failure.message.contains("SHA-256") && last_failure.reason == "InvalidInput",
        "lastFailure: {last_failure:?}"
    );
    assert_eq!(failed_status.attempts, Some(1), "not retried");
    let condition = failed_status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Failed" && c.status == "True")
        .expect("a Failed condition");
    assert_eq!(condition.reason, "InvalidInput", "{condition:?}");
    let events = stack.namespace.api::<Event>();
    stack
        .wait_for("an Event saying the input's SHA-256 is wrong", || async {
            let list = events
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let notes: Vec<String> = list.items.iter().filter_map(|e| e.note.clone()).collect();
            if notes
                .iter()
                .any(|n| n.contains("its SHA-256 is") && n.contains("sector-1/c1.json"))
            {
                Ok(())
            } else {
                Err(format!("events: {notes:?}"))
            }
        })
        .await;

    let done = stack
        .wait_within("the sector's job to succeed", PROVING_TIMEOUT, || async {
            let job = jobs.get("sector-1").await.map_err(|e| e.to_string())?;
            match phase(&job) {
                Some(ProofJobPhase::Succeeded) => Ok(job),
                Some(ProofJobPhase::Failed) => panic!("the sector's job failed: {:?}", job.status),
                other => Err(format!(
                    "phase {other:?}, message {:?}",
                    job.status.as_ref().and_then(|s| s.message.clone())
                )),
            }
        })
        .await;
    let status = done.status.unwrap();
    // The bad input's prover was not replaced: it proved this job, on the first attempt.
    assert_eq!(status.attempts, Some(1), "{status:?}");
    assert_eq!(
        status.assigned_pods.as_deref(),
        Some(&["fil-prover-0".to_owned()][..])
    );
    let result = status
        .filecoin
        .expect("status.filecoin of a succeeded Filecoin job");
    assert!(result.verified);
    assert_eq!(result.proof_bytes, 192, "one partition at 2 KiB");
    let expected_url = format!("s3://{BUCKET}/sector-1/sector-1.proof");
    assert_eq!(result.output_url.as_deref(), Some(expected_url.as_str()));
    let partition_proofs = status.proofs.unwrap_or_default();
    assert!(
        partition_proofs.iter().all(|p| p.public_inputs.is_empty()),
        "Filecoin partition proofs go into the status without their public inputs"
    );

    // The proof at the output URL is the one in the status, and Filecoin's verifier takes it.
    let stored = store
        .get(&ObjectPath::from("sector-1/sector-1.proof"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let in_status = base64::engine::general_purpose::STANDARD
        .decode(&result.proof)
        .unwrap();
    assert_eq!(stored.as_ref(), in_status.as_slice());
    let work = tempfile::tempdir().unwrap();
    let proof_path = work.path().join("sector-1.proof");
    std::fs::write(&proof_path, &stored).unwrap();
    assert_verify_seal(&c1_path, &proof_path, &params);
    // The default pool's prover synthesized it from the 2 KiB R1CS matrices.
    let log = stack.runner.pod_log("fil-prover-0");
    assert_eq!(
        logged_synthesis(&log, "sector-1").as_deref(),
        Some("matrices"),
        "fil-prover-0's log:\n{log}"
    );

    // The small pods' pool (4Gi, filecoin_pool's limit) proved the same sector in one pass,
    // and Filecoin's verifier takes that proof too.
    let small = stack
        .wait_within(
            "the one-pass pool's job to succeed",
            PROVING_TIMEOUT,
            || async {
                let job = jobs.get(SMALL_JOB).await.map_err(|e| e.to_string())?;
                match phase(&job) {
                    Some(ProofJobPhase::Succeeded) => Ok(job),
                    Some(ProofJobPhase::Failed) => {
                        panic!("the one-pass job failed: {:?}", job.status)
                    }
                    other => Err(format!("phase {other:?}")),
                }
            },
        )
        .await;
    let status = small.status.unwrap();
    assert_eq!(
        status.assigned_pods.as_deref(),
        Some(&[SMALL_POD.to_owned()][..])
    );
    let result = status
        .filecoin
        .expect("status.filecoin of the one-pass job");
    assert!(result.verified);
    let log = stack.runner.pod_log(SMALL_POD);
    assert_eq!(
        logged_synthesis(&log, SMALL_JOB).as_deref(),
        Some("one-pass"),
        "the pool's PROOFPIPE_POREP_SYNTHESIS=one-pass did not reach the prover; its log:\n{log}"
    );
    let pool = stack
        .namespace
        .api::<ProverPool>()
        .get(SMALL_POOL)
        .await
        .unwrap();
    let limit = pool
        .status
        .and_then(|s| s.provers)
        .unwrap_or_default()
        .iter()
        .find(|p| p.pod == SMALL_POD)
        .and_then(|p| p.sizing.as_ref()?.memory_limit_bytes)
        .expect("the one-pass prover's memory limit in its pool entry");
    assert!(
        limit < SMALL_POD_BYTES,
        "{SMALL_POD} planned for {limit} bytes"
    );
    let stored = store
        .get(&ObjectPath::from(format!("sector-1/{SMALL_JOB}.proof")))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let proof_path = work.path().join(format!("{SMALL_JOB}.proof"));
    std::fs::write(&proof_path, &stored).unwrap();
    assert_verify_seal(&c1_path, &proof_path, &params);
}
