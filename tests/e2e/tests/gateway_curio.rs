//! Curio's API, end to end, from a client that is not ours: `proofpipe-gateway` in front of
//! the API server, operator and pod runner; Python grpcio with stubs generated at test time from
//! the vendored upstream .proto (`curio-client/cuzk_client.py`) submits a real 2 KiB PoRep C1
//! output the way curio does, cancels a second one, and Proves the first with the same request
//! id; Filecoin's verifier (`proofpipe-prover porep-verify`, i.e. verify_seal) accepts the proof
//! it gets back. Then it Proves the 2 KiB test sector's SnapDeals update as curio's
//! ProveUpdateCuzk does (raw commitments, one vanilla proof per partition), and
//! `verify_empty_sector_update_proof` (`proofpipe-prover snap-verify`) accepts that proof.
//! Then it Proves a WindowPoSt deadline's partitions as curio's window tasks do (each sector of
//! the test WindowPoSt a partition: all at once, under the deadline's one request id, partition
//! index 0, HIGH; none cancels another, and one sent again after it finished reattaches) and a
//! WinningPoSt (`WINNING_POST`, CRITICAL), and `verify_window_post` / `verify_winning_post`
//! accept every proof.
//! A second test sends curio's WinningPoSt while the pool's one prover proves a long PoRep
//! (answered first, ADR 0026), then SIGKILLs the gateway during a `Prove` and restarts it
//! (the same request id gets the same job's proof, proved once).
//! Inputs go through a `file://` artifact store (the S3 path is scenario_filecoin's and
//! scenario_snap's).
//!
//! Needs `KUBECONFIG` (skips without it), `PROOFPIPE_FILECOIN_TESTDATA` and
//! `PROOFPIPE_GRPC_PYTHON` (python with grpcio and grpcio-tools), which `scripts/test.sh`
//! exports; under CI their absence fails the test.

use std::path::Path;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::ListParams;
use proofpipe_e2e::filecoin::{
    assert_verify_post, assert_verify_seal, assert_verify_snap, filecoin_pool, required_env,
};
use proofpipe_e2e::gateway::start_gateway;
use proofpipe_e2e::process::free_port;
use proofpipe_e2e::stack::Stack;
use proofpipe_gateway::attempts::attempt_name;
use proofpipe_gateway::job_spec::request_id_of;
use proofpipe_gateway::proto::await_proof_response::Status as AwaitStatus;
use proofpipe_gateway::proto::proving_engine_client::ProvingEngineClient;
use proofpipe_gateway::proto::{
    Priority, ProofKind, ProveRequest, ProveResponse, SubmitProofRequest,
};
use tokio::process::Command;

/// The client proves a 2 KiB PoRep partition (~2^22 constraints) and a 2 KiB SnapDeals one
/// (~2^21) on 2 cores of a test build.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(1200);
const TOKEN: &str = "curio-test-token";

/// curio's WinningPoSt (CRITICAL) while the pool's one prover proves a PoRep, made long by the
/// prover's `--test-fault slow-porep` (each PoRep partition starts 40 s late): the operator
/// puts it beside the PoRep, the prover proves it in its urgent lane (ADR 0026), and curio
/// has the WinningPoSt's proof before the PoRep's. Filecoin's verifiers accept both. Then, in
/// the same slow pool, the gateway is SIGKILLed during a PoRep's `Prove` and started again:
/// the same request id gets that job's proof, proved once.
#[tokio::test]
async fn curio_s_winning_post_is_answered_while_a_porep_proves_and_a_gateway_crash_loses_nothing() {
    let how = "scripts/test.sh exports it";
    let Some(testdata) = required_env("PROOFPIPE_FILECOIN_TESTDATA", how) else {
        return;
    };
    let Some(python) = required_env("PROOFPIPE_GRPC_PYTHON", how) else {
        return;
    };
    let Some(mut stack) = Stack::start("gateway-urgent").await else {
        return;
    };
    let params = testdata.join("params");
    stack
        .namespace
        .apply(&[filecoin_pool(
            "fil",
            &params,
            &serde_json::json!([]),
            &["--test-fault", "slow-porep"],
        )])
        .await;
    let work = tempfile::tempdir().unwrap();
    let token = work.path().join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let port = free_port();
    let mut gateway = start_gateway(
        &stack.namespace.name,
        "fil",
        &work.path().join("artifacts"),
        &token,
        port,
    )
    .await;

    let c1 = testdata.join("c1-2KiB.json");
    let winning_post = testdata.join("winning-post-2KiB.json");
    let out = work.path().join("urgent");
    let seen = run_client(&python, port, &mut stack, |client| {
        client
            .arg("--c1")
            .arg(&c1)
            .arg("--proof-out")
            .arg(work.path().join("unused"))
            .arg("--winning-post")
            .arg(&winning_post)
            .arg("--urgent-while-busy-out")
            .arg(&out);
    })
    .await;
    assert_eq!(seen["winning_status"], "COMPLETED", "{seen}");
    assert_eq!(seen["porep_status"], "COMPLETED", "{seen}");
    let (winning, porep) = (
        seen["winning_seconds"].as_f64().unwrap(),
        seen["porep_seconds"].as_f64().unwrap(),
    );
    assert!(
        winning < porep,
        "the WinningPoSt ({winning:.1} s) waited for the PoRep ({porep:.1} s): {seen}\n{}",
        stack.diagnostics()
    );
    eprintln!("WinningPoSt answered in {winning:.1} s while the PoRep took {porep:.1} s");

    // Both were proved by the one prover: the WinningPoSt beside the PoRep.
    let jobs = stack
        .jobs()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    for name in [&seen["winning_job"], &seen["porep_job"]] {
        let job = jobs
            .iter()
            .find(|job| job.metadata.name.as_deref() == name.as_str())
            .expect("the job is kept after it finished");
        let pods = job.status.as_ref().and_then(|s| s.assigned_pods.clone());
        assert!(
            pods.as_deref()
                .is_some_and(|pods| pods.len() == 1 && pods[0].ends_with("-prover-0")),
            "{name} ran on {pods:?}"
        );
    }
    assert_verify_post(
        &winning_post,
        &out.with_file_name("urgent-winning"),
        &params,
    );
    assert_verify_seal(&c1, &out.with_file_name("urgent-porep"), &params);

    // The gateway SIGKILLed during curio's Prove and started again: curio's retry of the same
    // request id gets the same job's proof, proved once.
    let c1_bytes = std::fs::read(&c1).unwrap();
    let sector = serde_json::from_slice::<serde_json::Value>(&c1_bytes).unwrap()["SectorNum"]
        .as_u64()
        .unwrap();
    let request = SubmitProofRequest {
        request_id: "porep-1000-crash".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: 5, // StackedDrg2KiBV1_1
        priority: Priority::Normal as i32,
        vanilla_proof: c1_bytes,
        sector_number: sector,
        miner_id: 1000,
        ..Default::default()
    };
    let first = tokio::spawn(prove(port, request.clone()));
    let job = until_job_of_request(&stack, "porep-1000-crash").await;
    gateway.kill().await.expect("SIGKILL the gateway");
    let lost = first.await.unwrap();
    assert!(
        lost.is_err(),
        "the Prove call outlived its gateway: {lost:?}"
    );
    let _gateway = start_gateway(
        &stack.namespace.name,
        "fil",
        &work.path().join("artifacts"),
        &token,
        port,
    )
    .await;
    let answer = prove(port, request)
        .await
        .expect("curio's retry of the same request id")
        .result
        .expect("a result");
    assert_eq!(
        (answer.status, answer.job_id.as_str()),
        (AwaitStatus::Completed as i32, job.as_str()),
        "{}: {}",
        answer.error_message,
        stack.diagnostics()
    );
    let jobs = stack
        .jobs()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let of_request: Vec<_> = jobs
        .iter()
        .filter(|job| request_id_of(job) == Some("porep-1000-crash"))
        .collect();
    assert_eq!(of_request.len(), 1, "one job for the request id");
    let status = of_request[0].status.as_ref().unwrap();
    assert_eq!(status.attempts, Some(1), "proved once: {status:?}");
    let proof = work.path().join("crash-porep");
    std::fs::write(&proof, &answer.proof).unwrap();
    assert_verify_seal(&c1, &proof, &params);
}

/// Runs curio's client (`curio-client/cuzk_client.py`, stubs from the vendored .proto) against
/// the gateway at `port` with the token and the arguments `add_args` gives; what it saw (its
/// JSON output).
async fn run_client(
    python: &Path,
    port: u16,
    stack: &mut Stack,
    add_args: impl FnOnce(&mut Command),
) -> serde_json::Value {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut client = Command::new(python);
    client
        .arg(manifest.join("curio-client/cuzk_client.py"))
        .args(["--address", &format!("127.0.0.1:{port}"), "--token", TOKEN])
        .arg("--proto-root")
        .arg(manifest.join("../../gateway/proto"))
        .kill_on_drop(true);
    add_args(&mut client);
    let output = match tokio::time::timeout(CLIENT_TIMEOUT, client.output()).await {
        Ok(output) => output.expect("run the Python client"),
        Err(_) => panic!(
            "the Python client did not finish within {CLIENT_TIMEOUT:?}\n{}",
            stack.diagnostics()
        ),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client failed: {stdout}\n{stderr}\n{}",
        stack.diagnostics()
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("client output is not JSON ({e}): {stdout}\n{stderr}"))
}

/// curio's `Prove` of `request` on the gateway at `port`, with the token.
async fn prove(port: u16, request: SubmitProofRequest) -> Result<ProveResponse, tonic::Status> {
    let mut client = ProvingEngineClient::connect(format!("http://127.0.0.1:{port}"))
        .await
        .map_err(|err| tonic::Status::unavailable(err.to_string()))?;
    let mut call = tonic::Request::new(ProveRequest {
        submit: Some(request),
    });
    call.metadata_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    client.prove(call).await.map(tonic::Response::into_inner)
}

/// The name of the job of `request_id`, once it is on a prover.
async fn until_job_of_request(stack: &Stack, request_id: &str) -> String {
    for _ in 0..600 {
        let jobs = stack
            .jobs()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        let on_a_prover = jobs.iter().find(|job| {
            request_id_of(job) == Some(request_id)
                && job
                    .labels()
                    .contains_key(proofpipe_crds::ASSIGNED_POD_LABEL)
        });
        if let Some(job) = on_a_prover {
            return job.name_any();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no job of {request_id} reached a prover within 120 s");
}

#[tokio::test]
async fn curio_s_calls_prove_a_sealed_sector_that_verify_seal_accepts() {
    let how = "scripts/test.sh exports it";
    let Some(testdata) = required_env("PROOFPIPE_FILECOIN_TESTDATA", how) else {
        return;
    };
    let Some(python) = required_env("PROOFPIPE_GRPC_PYTHON", how) else {
        return;
    };
    let Some(mut stack) = Stack::start("gateway-curio").await else {
        return;
    };
    let params = testdata.join("params");
    stack
        .namespace
        .apply(&[filecoin_pool("fil", &params, &serde_json::json!([]), &[])])
        .await;

    let work = tempfile::tempdir().unwrap();
    let token = work.path().join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let artifacts = work.path().join("artifacts");
    let port = free_port();
    let _gateway = start_gateway(&stack.namespace.name, "fil", &artifacts, &token, port).await;

    let c1 = testdata.join("c1-2KiB.json");
    let proof_path = work.path().join("proof");
    let snap = testdata.join("snap-2KiB.json");
    let snap_proof_path = work.path().join("snap-proof");
    let window_post = testdata.join("window-post-2KiB.json");
    let window_post_out = work.path().join("window-post");
    let winning_post = testdata.join("winning-post-2KiB.json");
    let winning_proof_path = work.path().join("winning-proof");
    let seen = run_client(&python, port, &mut stack, |client| {
        client
            .arg("--c1")
            .arg(&c1)
            .arg("--proof-out")
            .arg(&proof_path)
            .arg("--snap")
            .arg(&snap)
            .arg("--snap-proof-out")
            .arg(&snap_proof_path)
            .arg("--window-post")
            .arg(&window_post)
            .arg("--window-post-out")
            .arg(&window_post_out)
            .arg("--winning-post")
            .arg(&winning_post)
            .arg("--winning-post-proof-out")
            .arg(&winning_proof_path);
    })
    .await;

    assert_eq!(seen["token_none"], "UNAUTHENTICATED", "{seen}");
    assert_eq!(seen["token_wrong"], "UNAUTHENTICATED", "{seen}");
    // A C1 output under the wrong registered proof: FAILED, with the prover's own reason.
    assert_eq!(seen["wrong_type_status"], "FAILED", "{seen}");
    let why = seen["wrong_type_error"].as_str().unwrap();
    assert!(
        why.starts_with("InvalidInput: ")
            && why.contains(
                "it is of StackedDrg2KiBV1_1, but the job says \
                 StackedDrg2KiBV1_1_Feat_SyntheticPoRep"
            ),
        "{why}"
    );
    // Its retry under the same request id, the input put right: the next attempt, proved.
    assert_eq!(seen["retry_status"], "COMPLETED", "{seen}");
    assert_eq!(
        seen["retry_job"].as_str(),
        Some(attempt_name(seen["wrong_type_job"].as_str().unwrap(), 2).as_str()),
        "{seen}"
    );
    assert_eq!(seen["cancelled_waiter"], "CANCELLED", "{seen}");
    assert_eq!(seen["prove_status"], "COMPLETED", "{seen}");
    // The same request id twice (SubmitProof, then Prove) is one job.
    assert_eq!(seen["prove_job"], seen["submitted_job"], "{seen}");
    assert_eq!(seen["proof_bytes"], 192, "one partition at 2 KiB: {seen}");
    assert!(seen["timings_ms"]["total"].as_u64().unwrap() > 0, "{seen}");
    assert!(
        seen["timings_ms"]["synthesis"].as_u64().unwrap() > 0,
        "{seen}"
    );
    assert_eq!(seen["snap_status"], "COMPLETED", "{seen}");
    assert_eq!(
        seen["snap_proof_bytes"], 192,
        "one partition at 2 KiB: {seen}"
    );
    // The test WindowPoSt's three sectors as three partitions of one deadline, sent at once
    // under one request id: a job each, every one proved (none cancelled another).
    let window = seen["window_post"].as_array().expect("window_post");
    assert_eq!(window.len(), 3, "{seen}");
    for partition in window {
        assert_eq!(partition["status"], "COMPLETED", "{seen}");
        assert_eq!(partition["proof_bytes"], 192, "one partition: {seen}");
    }
    let window_jobs: std::collections::BTreeSet<_> =
        window.iter().map(|p| p["job"].as_str().unwrap()).collect();
    assert_eq!(window_jobs.len(), 3, "a job per partition: {seen}");
    // Sent again after it finished: the same job, the same proof.
    assert_eq!(seen["window_post_again"]["status"], "COMPLETED", "{seen}");
    assert_eq!(seen["window_post_again"]["job"], window[1]["job"], "{seen}");
    assert_eq!(seen["window_post_again"]["same_proof"], true, "{seen}");
    assert_eq!(seen["winning_post"]["status"], "COMPLETED", "{seen}");
    assert_eq!(seen["winning_post"]["proof_bytes"], 192, "{seen}");
    assert_eq!(
        seen["completed"], 7,
        "the PoRep, its retried twin, the SnapDeals, three WindowPoSt partitions and the \
         WinningPoSt (the failed one does not count): {seen}"
    );
    assert_eq!(seen["gpus"].as_array().map(Vec::len), Some(1), "{seen}");
    assert_eq!(seen["metrics_has_jobs_created"], true, "{seen}");

    let jobs = stack
        .jobs()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let of_request: Vec<_> = jobs
        .iter()
        .filter(|job| request_id_of(job) == Some("porep-1000-1"))
        .collect();
    assert_eq!(of_request.len(), 1, "one job per request id");
    // The bad input failed on its first attempt and its prover stayed: every job, that one
    // included, was proved by the pool's first and only pod.
    let wrong = jobs
        .iter()
        .find(|job| job.metadata.name.as_deref() == seen["wrong_type_job"].as_str())
        .expect("the failed job is kept");
    let wrong_status = wrong.status.as_ref().unwrap();
    assert_eq!(
        (wrong_status.attempts, wrong_status.failed),
        (Some(1), Some(1))
    );
    for job in &jobs {
        let pods = job.status.as_ref().and_then(|s| s.assigned_pods.clone());
        assert!(
            pods.as_deref()
                .is_none_or(|pods| pods.iter().all(|p| p.ends_with("-prover-0"))),
            "{:?} ran on {pods:?}: a prover pod was replaced\n{}",
            job.metadata.name,
            stack.diagnostics()
        );
    }
    let cancelled = seen["cancelled_job"].as_str().unwrap();
    assert!(
        jobs.iter()
            .all(|job| job.metadata.name.as_deref() != Some(cancelled)
                || job.metadata.deletion_timestamp.is_some()),
        "the cancelled job is deleted"
    );

    let snap_job = jobs
        .iter()
        .find(|job| job.metadata.name.as_deref() == seen["snap_job"].as_str())
        .expect("the SnapDeals job is kept after it finished");
    assert_eq!(
        snap_job.spec.filecoin.as_ref().map(|work| work.kind),
        Some(proofpipe_crds::FilecoinProofKind::SnapDealsUpdate)
    );

    for (name, kind, priority) in [
        (
            seen["window_post"][0]["job"].as_str(),
            proofpipe_crds::FilecoinProofKind::WindowPoStPartition,
            100,
        ),
        (
            seen["winning_post"]["job"].as_str(),
            proofpipe_crds::FilecoinProofKind::WinningPoSt,
            1000,
        ),
    ] {
        let job = jobs
            .iter()
            .find(|job| job.metadata.name.as_deref() == name)
            .expect("the PoSt job is kept after it finished");
        assert_eq!(job.spec.filecoin.as_ref().map(|work| work.kind), Some(kind));
        assert_eq!(job.spec.priority, priority, "curio's HIGH and CRITICAL");
    }

    // Filecoin's verifiers take the proofs the client got back.
    assert_verify_seal(&c1, &proof_path, &params);
    assert_verify_seal(&c1, &proof_path.with_extension("retry"), &params);
    assert_verify_snap(&snap, &snap_proof_path, &params);
    let deadline = seen["window_post_request_id"].as_str().unwrap();
    let of_deadline = jobs
        .iter()
        .filter(|job| request_id_of(job) == Some(deadline))
        .collect::<Vec<_>>();
    assert_eq!(of_deadline.len(), 3, "three jobs under the deadline's id");
    assert!(
        of_deadline
            .iter()
            .all(|job| job.metadata.deletion_timestamp.is_none()
                && job.status.as_ref().and_then(|s| s.phase)
                    == Some(proofpipe_crds::ProofJobPhase::Succeeded)),
        "no partition of the deadline was cancelled"
    );
    for k in 0..3 {
        let proof = work.path().join(format!("window-post-{k}"));
        assert_verify_post(&proof.with_extension("json"), &proof, &params);
    }
    assert_verify_post(&winning_post, &winning_proof_path, &params);
}
