//! A real SnapDeals (EmptySectorUpdate) proof through the cluster: the 2 KiB test sector's
//! update (commitments and vanilla partition proofs, as curio sends them; made by
//! `scripts/filecoin-testdata.sh`) is put in an S3-compatible store (moto, on loopback), a
//! ProofJob of kind `SnapDealsUpdate` names it by URL and SHA-256, a prover pod (pod runner,
//! memory cgroup) proves it, and the proof lands at the job's output URL and in its status;
//! Filecoin's own verifier (`proofpipe-prover snap-verify`, i.e.
//! verify_empty_sector_update_proof) accepts it and rejects it with one byte flipped. A job
//! whose vanilla proofs are of another sector than its commitments fails before anything is
//! proved, and its status says why.
//!
//! Needs `KUBECONFIG` (skips without it), `PROOFPIPE_FILECOIN_TESTDATA` (with the SnapDeals
//! data) and `PROOFPIPE_S3_SERVER`, which `scripts/test.sh` exports; under CI their absence
//! fails the test.

use std::time::Duration;

use base64::Engine;
use kube::api::DynamicObject;
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use proofpipe_crds::ProofJobPhase;
use proofpipe_e2e::filecoin::{assert_verify_snap, filecoin_pool, required_env, verify_snap};
use proofpipe_e2e::s3::{S3Server, hex};
use proofpipe_e2e::stack::{Stack, phase};
use sha2::{Digest, Sha256};

const BUCKET: &str = "sectors";
/// Proving a 2 KiB SnapDeals partition (~2^21 constraints) on 2 cores of a test build.
const PROVING_TIMEOUT: Duration = Duration::from_secs(900);

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("a well-formed object")
}

/// `snap`'s commitments with `other`'s vanilla proofs: well-formed, but of two sectors.
fn mismatched(snap: &[u8], other: &[u8]) -> Vec<u8> {
    let mut mixed: serde_json::Value = serde_json::from_slice(snap).unwrap();
    let other: serde_json::Value = serde_json::from_slice(other).unwrap();
    mixed["vanilla_proofs"] = other["vanilla_proofs"].clone();
    serde_json::to_vec(&mixed).unwrap()
}

#[tokio::test]
async fn a_snap_deals_update_is_proved_from_s3_and_its_verifier_accepts_the_proof() {
    let how = "scripts/test.sh exports it";
    let Some(testdata) = required_env("PROOFPIPE_FILECOIN_TESTDATA", how) else {
        return;
    };
    let Some(moto) = required_env("PROOFPIPE_S3_SERVER", how) else {
        return;
    };
    let Some(mut stack) = Stack::start("snap").await else {
        return;
    };
    let s3 = S3Server::start(&moto).await;
    s3.create_bucket(BUCKET).await;
    let snap_path = testdata.join("snap-2KiB.json");
    let snap = std::fs::read(&snap_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (scripts/filecoin-testdata.sh makes it)",
            snap_path.display()
        )
    });
    let other = std::fs::read(testdata.join("snap-2KiB-other.json")).unwrap();
    let mixed = mismatched(&snap, &other);
    let store = s3.client(BUCKET);
    for (key, bytes) in [("sector-1/snap.json", &snap), ("mixed/snap.json", &mixed)] {
        store
            .put(&ObjectPath::from(key), bytes.clone().into())
            .await
            .unwrap();
    }

    let params = testdata.join("params");
    stack
        .namespace
        .apply(&[filecoin_pool("snap", &params, &s3.prover_env(), &[])])
        .await;
    let job = |name: &str, key: &str, input: &[u8], priority: i32, backoff_limit: i32| {
        object(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1",
            "kind": "ProofJob",
            "metadata": { "name": name },
            "spec": {
                "pool": "snap",
                "priority": priority,
                "backoffLimit": backoff_limit,
                "filecoin": {
                    "kind": "SnapDealsUpdate",
                    "updateProof": "StackedDrg2KiBV1",
                    "input": {
                        "url": format!("s3://{BUCKET}/{key}"),
                        "sha256": hex(&Sha256::digest(input)),
                    },
                    "output": { "url": format!("s3://{BUCKET}/{name}.proof") },
                },
            },
        }))
    };
    // The mismatched job goes first (higher priority) and must fail without a proof, at once
    // (Filecoin's vanilla verifier rejects it: it can never prove); its prover stays up.
    stack
        .namespace
        .apply(&[
            job("mismatched", "mixed/snap.json", &mixed, 10, 0),
            job("sector-1", "sector-1/snap.json", &snap, 0, 2),
        ])
        .await;

    let jobs = stack.jobs();
    let failed = stack
        .wait_for("the mismatched job to fail", || async {
            let job = jobs.get("mismatched").await.map_err(|e| e.to_string())?;
            match phase(&job) {
                Some(ProofJobPhase::Failed) => Ok(job),
                other => Err(format!("phase {other:?}")),
            }
        })
        .await;
    let status = failed.status.expect("a failed job's status");
    assert!(status.filecoin.is_none(), "no proof of a bad input");
    assert!(
        status.proofs.unwrap_or_default().is_empty(),
        "nothing is proved of a bad input"
    );
    // Why, in the job's own status: the prover's last words, in the attempt's record and in
    // the Failed condition.
    let why = "does not verify against comm_r_old, comm_r_new and comm_d_new";
    let last_failure = status.last_failure.expect("status.lastFailure");
    assert!(
        last_failure.message.contains(why) && last_failure.message.contains("mixed/snap.json"),
        "lastFailure: {last_failure:?}"
    );
    let condition = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Failed" && c.status == "True")
        .expect("a Failed condition");
    assert!(condition.message.contains(why), "{condition:?}");
    assert_eq!(condition.reason, "InvalidInput", "{condition:?}");
    assert_eq!(status.attempts, Some(1), "not retried");

    let done = stack
        .wait_within("the update's job to succeed", PROVING_TIMEOUT, || async {
            let job = jobs.get("sector-1").await.map_err(|e| e.to_string())?;
            match phase(&job) {
                Some(ProofJobPhase::Succeeded) => Ok(job),
                Some(ProofJobPhase::Failed) => panic!("the update's job failed: {:?}", job.status),
                other => Err(format!(
                    "phase {other:?}, message {:?}",
                    job.status.as_ref().and_then(|s| s.message.clone())
                )),
            }
        })
        .await;
    let status = done.status.unwrap();
    let result = status
        .filecoin
        .expect("status.filecoin of a succeeded Filecoin job");
    assert!(result.verified);
    assert_eq!(result.proof_bytes, 192, "one partition at 2 KiB");
    let expected_url = format!("s3://{BUCKET}/sector-1.proof");
    assert_eq!(result.output_url.as_deref(), Some(expected_url.as_str()));
    assert!(
        status
            .message
            .as_deref()
            .is_some_and(|m| m.contains("passed verify_empty_sector_update_proof")),
        "{:?}",
        status.message
    );
    let partition_proofs = status.proofs.unwrap_or_default();
    assert_eq!(partition_proofs.len(), 1);
    assert!(
        partition_proofs.iter().all(|p| p.public_inputs.is_empty()),
        "Filecoin partition proofs go into the status without their public inputs"
    );

    // The proof at the output URL is the one in the status, and Filecoin's verifier takes it,
    // and not with a byte flipped.
    let stored = store
        .get(&ObjectPath::from("sector-1.proof"))
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
    assert_verify_snap(&snap_path, &proof_path, &params);
    let mut flipped = stored.to_vec();
    flipped[100] ^= 1;
    let flipped_path = work.path().join("flipped.proof");
    std::fs::write(&flipped_path, &flipped).unwrap();
    assert!(
        !verify_snap(&snap_path, &flipped_path, &params),
        "verify_empty_sector_update_proof accepted a proof with a flipped byte"
    );
}
