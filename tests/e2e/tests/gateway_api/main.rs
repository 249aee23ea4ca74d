//! The gateway's gRPC API against a real API server, the gateway in this process and no
//! operator or provers: the test writes job status as a prover would, so every answer the
//! gateway derives from a job (COMPLETED with the proof and timings, FAILED with the reason,
//! CANCELLED, TIMEOUT) is checked, as are idempotency, the queue, authentication and limits.
//! `gateway_curio.rs` runs the whole product against a client that is not ours.
//!
//! Needs `KUBECONFIG` (skips without it). Request ids as series of attempts, and the queue
//! limit, are in [`attempts`].

mod attempts;
mod post;

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use kube::api::{Api, ListParams, Patch, PatchParams};
use proofpipe_crds::{ProofJob, ProofJobPhase, ProverPool};
use proofpipe_e2e::cluster::TestNamespace;
use proofpipe_gateway::attempts::attempt_name;
use proofpipe_gateway::auth::{Auth, Token};
use proofpipe_gateway::job_spec::{
    ATTEMPT_ANNOTATION, JobDefaults, REPLACES_ANNOTATION, REQUEST_ID_ANNOTATION,
};
use proofpipe_gateway::proto::await_proof_response::Status as AwaitStatus;
use proofpipe_gateway::proto::proving_engine_client::ProvingEngineClient;
use proofpipe_gateway::proto::{
    AwaitProofRequest, AwaitProofResponse, CancelProofRequest, GetMetricsRequest, GetStatusRequest,
    PreloadSrsRequest, Priority, ProofKind, ProveRequest, SubmitProofRequest,
};
use proofpipe_gateway::routes::PoolRoutes;
use proofpipe_gateway::server::{self, Config};
use proofpipe_gateway::service::{Gateway, Limits};
use tokio::sync::oneshot;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request};

const TOKEN: &str = "test-token-1234";
const POOL: &str = "gpu";

/// A gateway serving in this process, over a test namespace.
struct Harness {
    namespace: TestNamespace,
    gateway: Gateway,
    grpc: SocketAddr,
    artifacts: tempfile::TempDir,
    _stop: oneshot::Sender<()>,
}

impl Harness {
    async fn start(test: &str, max_message_bytes: usize, with_pool: bool) -> Option<Self> {
        Self::start_with(test, max_message_bytes, with_pool, false, Limits::default()).await
    }

    /// Serving `routes`, with every pool they name.
    async fn start_routed(test: &str, routes: PoolRoutes) -> Option<Self> {
        Self::start_full(test, 256 << 20, Some(routes), false, Limits::default()).await
    }

    /// With `tls`, a self-signed certificate for `localhost` is made and served
    /// (`tls/cert.pem` in the artifacts directory).
    async fn start_with(
        test: &str,
        max_message_bytes: usize,
        with_pool: bool,
        tls: bool,
        limits: Limits,
    ) -> Option<Self> {
        let routes = with_pool.then(|| PoolRoutes::single(POOL));
        Self::start_full(test, max_message_bytes, routes, tls, limits).await
    }

    /// `routes`: the gateway's routes, and every pool they name made; `None`: every kind to
    /// [`POOL`], which is not made.
    async fn start_full(
        test: &str,
        max_message_bytes: usize,
        routes: Option<PoolRoutes>,
        tls: bool,
        limits: Limits,
    ) -> Option<Self> {
        let namespace = TestNamespace::create(test).await?;
        let pools: Vec<String> = routes
            .iter()
            .flat_map(|r| r.pools())
            .map(str::to_owned)
            .collect();
        for name in &pools {
            let pool: ProverPool = serde_json::from_value(serde_json::json!({
                "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
                "metadata": {"name": name},
                "spec": {"replicas": 0, "template": {"spec": {"containers": [
                    {"name": "prover", "image": "proofpipe-prover:e2e"}]}}},
            }))
            .unwrap();
            namespace
                .api::<ProverPool>()
                .patch(
                    name,
                    &PatchParams::apply("test").force(),
                    &Patch::Apply(&pool),
                )
                .await
                .unwrap();
        }
        let artifacts = tempfile::tempdir().unwrap();
        std::fs::write(artifacts.path().join("token"), TOKEN).unwrap();
        let tls = tls.then(|| {
            let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
            let dir = artifacts.path().join("tls");
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("cert.pem"), certified.cert.pem()).unwrap();
            std::fs::write(dir.join("key.pem"), certified.signing_key.serialize_pem()).unwrap();
            (dir.join("cert.pem"), dir.join("key.pem"))
        });
        let config = Config {
            namespace: namespace.name.clone(),
            defaults: JobDefaults {
                pools: routes.unwrap_or_else(|| PoolRoutes::single(POOL)),
                backoff_limit: 3,
                ttl_seconds_after_finished: None,
            },
            artifacts_url: format!("file://{}/inputs", artifacts.path().display()),
            auth: Auth::Token(Token::watch(&artifacts.path().join("token")).unwrap()),
            max_message_bytes,
            tls,
            limits,
            keepalive: Some(Duration::from_secs(30)),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let (started, running) = oneshot::channel();
        let client = namespace.client.clone();
        tokio::spawn(async move {
            server::serve(
                client,
                config,
                "127.0.0.1:0".parse().unwrap(),
                "127.0.0.1:0".parse().unwrap(),
                async move {
                    let _ = stopped.await;
                },
                move |running| {
                    let _ = started.send((running.gateway.clone(), running.grpc_addr));
                },
            )
            .await
            .unwrap();
        });
        let (gateway, grpc) = running.await.expect("the gateway started");
        for name in &pools {
            eventually("the pool in the gateway's cache", || {
                gateway.caches().pool(name).is_some()
            })
            .await;
        }
        Some(Self {
            namespace,
            gateway,
            grpc,
            artifacts,
            _stop: stop,
        })
    }

    async fn client(&self) -> ProvingEngineClient<Channel> {
        ProvingEngineClient::connect(format!("http://{}", self.grpc))
            .await
            .unwrap()
            .max_decoding_message_size(usize::MAX)
    }

    fn jobs(&self) -> Api<ProofJob> {
        self.namespace.api()
    }

    /// Waits until the gateway's cache shows job `name` in `phase`.
    async fn until_cached_in(&self, name: &str, phase: ProofJobPhase) {
        eventually(&format!("{name} {phase:?} in the cache"), || {
            self.gateway
                .caches()
                .job(name)
                .is_some_and(|job| proofpipe_e2e::stack::phase(&job) == Some(phase))
        })
        .await;
    }

    /// Writes `status` into job `name` as a prover and the operator would.
    async fn set_status(&self, name: &str, status: serde_json::Value) {
        self.jobs()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "status": status })),
            )
            .await
            .unwrap();
    }
}

fn authed<T>(message: T) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    request
}

/// A lotus-bench commit-2 envelope: the gateway does not parse it (the prover does).
fn c1(sector: u64) -> Vec<u8> {
    format!(r#"{{"SectorNum":{sector},"Phase1Out":"e30=","SectorSize":2048}}"#).into_bytes()
}

fn porep(request_id: &str, sector: u64, priority: Priority) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: 5,
        priority: priority as i32,
        vanilla_proof: c1(sector),
        sector_number: sector,
        miner_id: 1000,
        ..Default::default()
    }
}

/// A SnapDeals request as curio's ProveUpdateCuzk makes it for a 2 KiB sector: one vanilla
/// proof (the gateway does not decode it; the prover does) and raw 32-byte commitments.
fn snap(request_id: &str, sector: u64) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size: 2048,
        registered_proof: 0,
        priority: Priority::Normal as i32,
        vanilla_proofs: vec![vec![sector as u8; 64]],
        sector_number: sector,
        miner_id: 1000,
        comm_r_old: vec![1; 32],
        comm_r_new: vec![2; 32],
        comm_d_new: vec![3; 32],
        ..Default::default()
    }
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// AwaitProof of `job_id` (`timeout_ms` 0: no limit).
async fn await_job(
    client: &mut ProvingEngineClient<Channel>,
    job_id: &str,
    timeout_ms: u64,
) -> Result<AwaitProofResponse, tonic::Status> {
    let request = AwaitProofRequest {
        job_id: job_id.to_owned(),
        timeout_ms,
    };
    Ok(client.await_proof(authed(request)).await?.into_inner())
}

/// A caller waiting on `job_id` without a limit, in the background.
fn spawn_await(
    client: &ProvingEngineClient<Channel>,
    job_id: &str,
) -> tokio::task::JoinHandle<Result<AwaitProofResponse, tonic::Status>> {
    let mut client = client.clone();
    let job_id = job_id.to_owned();
    tokio::spawn(async move { await_job(&mut client, &job_id, 0).await })
}

fn status_of(response: &AwaitProofResponse) -> AwaitStatus {
    AwaitStatus::try_from(response.status).unwrap()
}

#[tokio::test]
async fn submissions_are_idempotent_and_answers_follow_the_job() {
    let Some(harness) = Harness::start("gateway-api", 256 << 20, true).await else {
        return;
    };
    let mut client = harness.client().await;

    // A submission stores its input by reference and creates one job; the same request id
    // again answers the same job.
    let first = client
        .submit_proof(authed(porep("porep-1000-1", 1, Priority::Normal)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.queue_position, 0);
    let again = client
        .submit_proof(authed(porep("porep-1000-1", 1, Priority::Normal)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.job_id, first.job_id);
    let job = harness.jobs().get(&first.job_id).await.unwrap();
    let work = job.spec.filecoin.clone().unwrap();
    assert_eq!(work.seal_proof.as_deref(), Some("StackedDrg2KiBV1_1"));
    assert_eq!((work.miner_id, work.sector_number), (Some(1000), Some(1)));
    let stored_at = work.input.url.strip_prefix("file://").unwrap();
    assert!(stored_at.starts_with(&harness.artifacts.path().display().to_string()));
    assert_eq!(std::fs::read(stored_at).unwrap(), c1(1));
    assert_eq!(
        job.metadata.annotations.as_ref().unwrap()[REQUEST_ID_ANNOTATION],
        "porep-1000-1"
    );

    // Queue positions follow the pool's queue: a later NORMAL job waits behind the first, a
    // CRITICAL one behind none.
    eventually("the first job in the cache", || {
        harness.gateway.caches().job(&first.job_id).is_some()
    })
    .await;
    let second = client
        .submit_proof(authed(porep("porep-1000-2", 2, Priority::Normal)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.queue_position, 1);
    let critical = client
        .submit_proof(authed(porep("porep-1000-3", 3, Priority::Critical)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(critical.queue_position, 0);
    let critical_job = harness.jobs().get(&critical.job_id).await.unwrap();
    assert!(critical_job.spec.priority > job.spec.priority);

    // Not finished within timeout_ms: TIMEOUT.
    let waited = await_job(&mut client, &first.job_id, 300).await.unwrap();
    assert_eq!(status_of(&waited), AwaitStatus::Timeout);

    // A caller waiting without a timeout gets the proof once the job succeeds, with timings
    // from the job's status.
    let waiting = spawn_await(&client, &first.job_id);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let created = job.metadata.creation_timestamp.clone().unwrap().0;
    let at = |seconds: i64| {
        (created + k8s_openapi::jiff::SignedDuration::from_secs(seconds)).to_string()
    };
    let proof = vec![42u8; 192];
    harness
        .set_status(
            &first.job_id,
            serde_json::json!({
                "phase": "Succeeded",
                "startTime": at(1),
                "completionTime": at(5),
                "stageSeconds": {"synthesis": 2.0, "queueWait": 0.0, "gpu": 0.5, "finalize": 0.1},
                "filecoin": {
                    "proof": base64::engine::general_purpose::STANDARD.encode(&proof),
                    "proofBytes": 192, "verified": true, "provedBy": "gpu-prover-0"
                },
            }),
        )
        .await;
    let done = waiting.await.unwrap().unwrap();
    assert_eq!(status_of(&done), AwaitStatus::Completed);
    assert_eq!(done.proof, proof);
    assert_eq!((done.queue_wait_ms, done.total_ms), (1000, 5000));
    assert_eq!((done.synthesis_ms, done.gpu_compute_ms), (2000, 500));

    // A failed job answers FAILED with the reason.
    harness
        .set_status(
            &second.job_id,
            serde_json::json!({"phase": "Failed", "message": "the input's SHA-256 is wrong"}),
        )
        .await;
    let failed = await_job(&mut client, &second.job_id, 10_000)
        .await
        .unwrap();
    assert_eq!(status_of(&failed), AwaitStatus::Failed);
    assert!(failed.error_message.contains("SHA-256"), "{failed:?}");

    // Cancelling deletes the job; its waiting caller gets CANCELLED, later ones NOT_FOUND.
    let waiting = spawn_await(&client, &critical.job_id);
    eventually("the critical job in the cache", || {
        harness.gateway.caches().job(&critical.job_id).is_some()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancelled = client
        .cancel_proof(authed(CancelProofRequest {
            job_id: critical.job_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(!cancelled.was_running);
    let answer = waiting.await.unwrap().unwrap();
    assert_eq!(status_of(&answer), AwaitStatus::Cancelled);
    assert!(
        harness
            .jobs()
            .get_opt(&critical.job_id)
            .await
            .unwrap()
            .is_none()
    );
    let gone = await_job(&mut client, &critical.job_id, 0)
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
    let unknown = client
        .cancel_proof(authed(CancelProofRequest {
            job_id: "never-submitted".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    // Cancelling a finished job keeps it: its result stands.
    let kept = client
        .cancel_proof(authed(CancelProofRequest {
            job_id: first.job_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(!kept.was_running);
    assert!(
        harness
            .jobs()
            .get_opt(&first.job_id)
            .await
            .unwrap()
            .is_some()
    );

    // Prove is Submit and Await in one call.
    let proving = {
        let mut client = client.clone();
        tokio::spawn(async move {
            client
                .prove(authed(ProveRequest {
                    submit: Some(porep("porep-1000-4", 4, Priority::High)),
                }))
                .await
        })
    };
    let fourth = proofpipe_gateway::submission::job_name("porep-1000-4");
    eventually("the Prove call's job in the cache", || {
        harness.gateway.caches().job(&fourth).is_some()
    })
    .await;
    harness
        .set_status(
            &fourth,
            serde_json::json!({
                "phase": "Succeeded",
                "filecoin": {
                    "proof": base64::engine::general_purpose::STANDARD.encode([9u8; 192]),
                    "proofBytes": 192, "verified": true, "provedBy": "gpu-prover-0"
                },
            }),
        )
        .await;
    let proved = proving.await.unwrap().unwrap().into_inner().result.unwrap();
    assert_eq!(status_of(&proved), AwaitStatus::Completed);
    assert_eq!(proved.job_id, fourth);
    assert_eq!(proved.proof, vec![9u8; 192]);

    // The fleet view: one job of each outcome, none waiting.
    eventually("the finished jobs in the cache", || {
        harness.gateway.caches().jobs().len() == 3
    })
    .await;
    let status = client
        .get_status(authed(GetStatusRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (status.total_proofs_completed, status.total_proofs_failed),
        (2, 1)
    );
    let porep_queue = status
        .queues
        .iter()
        .find(|q| q.proof_kind == "porep-c2")
        .unwrap();
    assert_eq!((porep_queue.pending, porep_queue.in_progress), (0, 0));

    let metrics = client
        .get_metrics(authed(GetMetricsRequest {}))
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    assert!(
        metrics.contains("proofpipe_gateway_jobs_created_total 4"),
        "{metrics}"
    );
    assert!(metrics.contains("proofpipe_gateway_duplicate_submissions_total 1"));

    let preload = client
        .preload_srs(authed(PreloadSrsRequest {
            circuit_id: "porep-32g".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(preload.code(), Code::Unimplemented);
    assert!(preload.message().contains("minReplicas"), "{preload:?}");

    let listed = harness.jobs().list(&ListParams::default()).await.unwrap();
    assert_eq!(
        listed.items.len(),
        3,
        "one job per request id, the cancelled one gone"
    );
    harness.namespace.delete().await;
}

#[tokio::test]
async fn a_snap_deals_submission_becomes_a_snap_job_whose_proof_is_answered() {
    let Some(harness) = Harness::start("gateway-snap", 256 << 20, true).await else {
        return;
    };
    let mut client = harness.client().await;
    let first = client
        .submit_proof(authed(snap("snap-1000-1", 1)))
        .await
        .unwrap()
        .into_inner();
    // The same request again is the same job.
    let again = client
        .submit_proof(authed(snap("snap-1000-1", 1)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.job_id, first.job_id);

    // The job: a SnapDealsUpdate of the update proof curio named, nothing of a PoRep, its
    // input the prover's SnapDeals JSON.
    let job = harness.jobs().get(&first.job_id).await.unwrap();
    let work = job.spec.filecoin.clone().unwrap();
    assert_eq!(
        work.kind,
        proofpipe_crds::FilecoinProofKind::SnapDealsUpdate
    );
    assert_eq!(work.update_proof.as_deref(), Some("StackedDrg2KiBV1"));
    assert_eq!(
        (work.seal_proof, work.miner_id, work.sector_number),
        (None, None, None)
    );
    assert_eq!(job.spec.partition_count(), 1);
    assert_eq!(
        job.metadata.labels.as_ref().unwrap()["proofpipe.dev/proof-kind"],
        "snap-update"
    );
    let stored_at = work.input.url.strip_prefix("file://").unwrap();
    assert!(stored_at.ends_with(".snap.json"), "{stored_at}");
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(stored_at).unwrap()).unwrap();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    assert_eq!(
        stored,
        serde_json::json!({
            "registered_proof": "StackedDrg2KiBV1",
            "comm_r_old": b64(&[1; 32]),
            "comm_r_new": b64(&[2; 32]),
            "comm_d_new": b64(&[3; 32]),
            "vanilla_proofs": [b64(&[1; 64])],
        })
    );

    // It counts in the snap-update queue curio sums for its backpressure.
    eventually("the snap job in the cache", || {
        harness.gateway.caches().job(&first.job_id).is_some()
    })
    .await;
    let status = client
        .get_status(authed(GetStatusRequest {}))
        .await
        .unwrap()
        .into_inner();
    let queue = status
        .queues
        .iter()
        .find(|q| q.proof_kind == "snap-update")
        .unwrap();
    assert_eq!((queue.pending, queue.in_progress), (1, 0));

    // Succeeded: the caller gets the proof bytes as Filecoin's prover returns them.
    let waiting = spawn_await(&client, &first.job_id);
    let proof = vec![5u8; 192];
    harness
        .set_status(
            &first.job_id,
            serde_json::json!({
                "phase": "Succeeded",
                "filecoin": {
                    "proof": b64(&proof),
                    "proofBytes": 192, "verified": true, "provedBy": "gpu-prover-0"
                },
            }),
        )
        .await;
    let done = waiting.await.unwrap().unwrap();
    assert_eq!(status_of(&done), AwaitStatus::Completed);
    assert_eq!(done.proof, proof);

    // Other commitments under the same id are other work: its next attempt, the finished one
    // kept with its proof.
    harness
        .until_cached_in(&first.job_id, ProofJobPhase::Succeeded)
        .await;
    let mut other = snap("snap-1000-1", 1);
    other.comm_d_new = vec![4; 32];
    let replaced = client
        .submit_proof(authed(other))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(replaced.job_id, attempt_name(&first.job_id, 2));
    assert!(
        harness
            .jobs()
            .get_opt(&first.job_id)
            .await
            .unwrap()
            .is_some()
    );
    harness.namespace.delete().await;
}

#[tokio::test]
async fn bad_tokens_oversized_requests_and_a_missing_pool_are_refused_clearly() {
    let Some(harness) = Harness::start("gateway-refusals", 64 << 10, false).await else {
        return;
    };
    let mut client = harness.client().await;

    let anonymous = client
        .get_status(Request::new(GetStatusRequest {}))
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), Code::Unauthenticated);
    let mut wrong = Request::new(GetStatusRequest {});
    wrong
        .metadata_mut()
        .insert("authorization", "Bearer not-the-token".parse().unwrap());
    let wrong = client.get_status(wrong).await.unwrap_err();
    assert_eq!(wrong.code(), Code::Unauthenticated);
    assert!(wrong.message().contains("wrong bearer token"), "{wrong:?}");

    // Over --max-message-bytes: RESOURCE_EXHAUSTED, naming the setting.
    let mut big = porep("big", 1, Priority::Normal);
    big.vanilla_proof = vec![b' '; 100 << 10];
    big.vanilla_proof[0] = b'{';
    let refused = client.submit_proof(authed(big)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("--max-message-bytes"),
        "{refused:?}"
    );

    // The configured pool does not exist: FAILED_PRECONDITION, before anything is stored.
    let missing = client
        .submit_proof(authed(porep("porep-1000-1", 1, Priority::Normal)))
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::FailedPrecondition, "{missing:?}");
    assert!(missing.message().contains("ProverPool gpu does not exist"));
    assert!(!harness.artifacts.path().join("inputs").exists());

    let mut v1 = porep("porep-1000-1", 1, Priority::Normal);
    v1.registered_proof = 3;
    let invalid = client.submit_proof(authed(v1)).await.unwrap_err();
    assert_eq!(invalid.code(), Code::InvalidArgument);
    let mut niporep = porep("niporep", 1, Priority::Normal);
    niporep.registered_proof = 15;
    let unsupported = client.submit_proof(authed(niporep)).await.unwrap_err();
    assert_eq!(unsupported.code(), Code::Unimplemented);
    assert!(
        unsupported.message().contains("non-interactive PoRep"),
        "{unsupported:?}"
    );
    // A SnapDeals request is checked before anything is stored: one vanilla proof per
    // partition of its update proof.
    let mut short = snap("snap-1000-1", 2);
    short.registered_proof = 3;
    short.sector_size = 32 << 30;
    let invalid = client.submit_proof(authed(short)).await.unwrap_err();
    assert_eq!(invalid.code(), Code::InvalidArgument);
    assert!(
        invalid.message().contains("vanilla_proofs has 1 entries"),
        "{invalid:?}"
    );
    harness.namespace.delete().await;
}

#[tokio::test]
async fn with_tls_the_gateway_serves_only_tls() {
    let Some(harness) =
        Harness::start_with("gateway-tls", 256 << 20, false, true, Limits::default()).await
    else {
        return;
    };
    let cert = std::fs::read(harness.artifacts.path().join("tls/cert.pem")).unwrap();
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(cert))
        .domain_name("localhost");
    let channel = Endpoint::from_shared(format!("https://{}", harness.grpc))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let status = ProvingEngineClient::new(channel)
        .get_status(authed(GetStatusRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert!(status.gpus.is_empty());

    // A plaintext client (what curio dials) does not get an answer.
    let plaintext = match ProvingEngineClient::connect(format!("http://{}", harness.grpc)).await {
        Ok(mut client) => client.get_status(authed(GetStatusRequest {})).await.err(),
        Err(error) => Some(tonic::Status::unavailable(error.to_string())),
    };
    assert!(plaintext.is_some(), "a plaintext call was answered");
    harness.namespace.delete().await;
}
