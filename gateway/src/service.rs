//! `cuzk.v1.ProvingEngine` over ProofJobs. Each call is a short sequence: read the caches,
//! decide with the pure functions of `submission` and `outcome`, write (store the input,
//! create or delete a job), answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use object_store::PutPayload;
use proofpipe_crds::{ASSIGNED_POD_LABEL, FilecoinWork, ProofJob, ProofJobPhase};
use rand_core::{OsRng, RngCore};
use tokio::sync::watch;
use tonic::{Request, Response, Status};

use crate::artifacts::ArtifactStore;
use crate::attempts::{self, Decision, PriorAttempt, Replaced};
use crate::cache::Caches;
use crate::error::GatewayError;
use crate::job_spec::{JobDefaults, filecoin_work, proof_job};
use crate::metrics::{AwaitingGuard, Metrics};
use crate::observe;
use crate::outcome::{self, JobView, Outcome, RoutedPool};
use crate::proto::proving_engine_server::ProvingEngine;
use crate::proto::{
    AwaitProofRequest, AwaitProofResponse, CancelProofRequest, CancelProofResponse,
    EvictSrsRequest, EvictSrsResponse, GetMetricsRequest, GetMetricsResponse, GetStatusRequest,
    GetStatusResponse, PreloadSrsRequest, PreloadSrsResponse, ProveRequest, ProveResponse,
    SrsStatus, SubmitProofRequest, SubmitProofResponse, srs_status,
};
use crate::submission::{self, Submission};

/// The field manager of the gateway's writes.
pub const FIELD_MANAGER: &str = "proofpipe-gateway";

/// How many times a submission decides again after losing the race to create its job.
const ATTEMPT_RACES: usize = 4;

/// How often a caller awaiting a job the cache has not shown yet asks the API server again.
const UNCACHED_RECHECK: Duration = Duration::from_secs(5);

/// What the gateway admits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// New jobs are refused (RESOURCE_EXHAUSTED) while this many of the pool's jobs wait for
    /// a prover; `None`: no cap. Resubmissions of existing jobs are always answered.
    pub max_queued: Option<usize>,
}

/// The service, shared by every connection.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: Api<ProofJob>,
    caches: Caches,
    artifacts: ArtifactStore,
    defaults: JobDefaults,
    limits: Limits,
    metrics: Metrics,
    started: Instant,
    /// Turns true when the process stops: waiting callers are answered UNAVAILABLE at once
    /// (their retry with the same request id finds the same job on another replica).
    stopping: watch::Receiver<bool>,
}

impl Gateway {
    pub fn new(
        jobs: Api<ProofJob>,
        caches: Caches,
        artifacts: ArtifactStore,
        defaults: JobDefaults,
        limits: Limits,
        metrics: Metrics,
        stopping: watch::Receiver<bool>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                jobs,
                caches,
                artifacts,
                defaults,
                limits,
                metrics,
                started: Instant::now(),
                stopping,
            }),
        }
    }

    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The metrics in Prometheus' text format, the queue gauges read from the caches now.
    pub fn render_metrics(&self) -> String {
        let inner = &self.inner;
        let pools = self.routed_pools();
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        );
        inner
            .metrics
            .set_queues(&observe::queue_gauges(&pools, &inner.caches.jobs(), &now));
        inner.metrics.render()
    }

    /// Every pool the gateway routes to, with its cached object if it exists.
    fn routed_pools(&self) -> Vec<RoutedPool<'_>> {
        let inner = &self.inner;
        let pools = inner.defaults.pools.pools();
        pools
            .into_iter()
            .map(|name| (name, inner.caches.pool(name)))
            .collect()
    }

    pub fn caches(&self) -> &Caches {
        &self.inner.caches
    }

    pub fn artifacts(&self) -> &ArtifactStore {
        &self.inner.artifacts
    }

    /// Decides which job the submission goes to ([`attempts`]): answers with an existing one,
    /// or stores the input and creates the request id's next attempt (cancelling the previous
    /// one when it proves other work and is unfinished).
    async fn submit(
        &self,
        request: SubmitProofRequest,
    ) -> Result<SubmitProofResponse, GatewayError> {
        let inner = &self.inner;
        // Hashing tens of MB is CPU work: off the async workers.
        let planned =
            tokio::task::spawn_blocking(move || submission::plan(request, generated_request_id))
                .await
                .expect("planning a submission does not panic")?;
        let mut submission = planned.submission;
        // Cheap to clone (shared chunks) if a race makes us store it under another attempt.
        let input = PutPayload::from(planned.input);
        let first_name = submission.job_name.clone();
        // Where the input is stored is no part of the work.
        let work = filecoin_work(&submission, String::new());
        let mut prior = self.cached_attempts(&submission, &work);
        let rule = submission.work.attempt_rule();
        let pool = inner.defaults.pools.pool_of(&submission.work).to_owned();

        for _ in 0..ATTEMPT_RACES {
            let (attempt, job_name, replaces) = match attempts::decide(&first_name, rule, &prior) {
                Decision::Reattach { job_name } => {
                    if let Some(job) = self.read_job(&job_name).await? {
                        inner.metrics.duplicate_submissions.inc();
                        return Ok(self.accepted(&job));
                    }
                    // Gone since the cache showed it: decide without it.
                    prior.retain(|p| p.job_name != job_name);
                    continue;
                }
                Decision::Create {
                    attempt,
                    job_name,
                    replaces,
                } => (attempt, job_name, replaces),
            };
            self.check_room(&pool)?;
            submission.job_name = job_name;
            let url = inner
                .artifacts
                .put_input(&submission, input.clone())
                .await?;
            let job = proof_job(
                &submission,
                url,
                &inner.defaults,
                attempt,
                replaces.as_ref(),
            );
            let params = PostParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PostParams::default()
            };
            match inner.jobs.create(&params, &job).await {
                Ok(created) => {
                    inner.metrics.jobs_created.inc();
                    inner
                        .metrics
                        .input_bytes
                        .inc_by(input.content_length() as u64);
                    tracing::info!(
                        job = %submission.job_name,
                        request_id = %submission.request_id,
                        attempt,
                        replaces = replaces.as_ref().map(Replaced::note),
                        kind = submission.work.kind_name(),
                        registered_proof = submission.work.registered_proof(),
                        input_bytes = input.content_length(),
                        "created ProofJob"
                    );
                    if let Some(replaced) = &replaces {
                        inner
                            .metrics
                            .new_attempts
                            .with_label_values(&[replaced.reason.as_str()])
                            .inc();
                        // Best effort: the new attempt stands either way, and a retry of this
                        // call reattaches to it without deleting again.
                        if replaced.cancel {
                            match self.delete_job(&replaced.job_name).await {
                                Ok(()) => tracing::info!(
                                    job = %replaced.job_name,
                                    by = %submission.job_name,
                                    "cancelled: its request id now proves other work"
                                ),
                                Err(error) => tracing::warn!(
                                    job = %replaced.job_name,
                                    by = %submission.job_name,
                                    %error,
                                    "could not cancel the job its request id replaced; delete it by hand"
                                ),
                            }
                        }
                    }
                    return Ok(self.accepted(&created));
                }
                // A concurrent submission of the same request id (or a job the cache has not
                // shown yet) has the name: decide again with it.
                Err(kube::Error::Api(response)) if response.code == 409 => {
                    let name = &submission.job_name;
                    // None: deleted meanwhile, the name is free again.
                    if let Some(job) = self.read_job(name).await? {
                        let Some(found) =
                            attempts::prior_attempt(&job, &submission.request_id, &work)
                        else {
                            return Err(GatewayError::RequestIdReused {
                                request_id: submission.request_id.clone(),
                                job: name.clone(),
                            });
                        };
                        prior.retain(|p| p.job_name != found.job_name);
                        prior.push(found);
                    }
                }
                Err(error) => {
                    return Err(GatewayError::kube(
                        format!("creating ProofJob {}", submission.job_name),
                        error,
                    ));
                }
            }
        }
        Err(GatewayError::AttemptRace {
            request_id: submission.request_id,
        })
    }

    /// The request id's earlier attempts in the cache: jobs with its request key, and the first
    /// attempt's name (jobs of gateways before attempts carry no key).
    fn cached_attempts(&self, submission: &Submission, work: &FilecoinWork) -> Vec<PriorAttempt> {
        let key = submission::request_key(&submission.request_id);
        self.inner
            .caches
            .jobs()
            .iter()
            .filter(|job| {
                attempts::has_request_key(job, &key)
                    || job.metadata.name.as_deref() == Some(submission.job_name.as_str())
            })
            .filter_map(|job| attempts::prior_attempt(job, &submission.request_id, work))
            .collect()
    }

    /// Refuses a new job when `--max-queued` jobs of its pool already wait for a prover.
    fn check_room(&self, pool_name: &str) -> Result<(), GatewayError> {
        let inner = &self.inner;
        let Some(pool) = inner.caches.pool(pool_name) else {
            return Err(GatewayError::PoolMissing {
                pool: pool_name.to_owned(),
                namespace: inner.caches.namespace().to_owned(),
            });
        };
        let Some(limit) = inner.limits.max_queued else {
            return Ok(());
        };
        let queued = outcome::waiting(pool_name, Some(&pool), &inner.caches.jobs());
        if queued >= limit {
            inner
                .metrics
                .refused_queue_full
                .with_label_values(&[pool_name])
                .inc();
            return Err(GatewayError::QueueFull {
                queued,
                limit,
                pool: pool_name.to_owned(),
            });
        }
        Ok(())
    }

    /// The job from the cache, else from the API server (just created, not cached yet).
    async fn read_job(&self, name: &str) -> Result<Option<Arc<ProofJob>>, GatewayError> {
        if let Some(job) = self.inner.caches.job(name) {
            return Ok(Some(job));
        }
        let fetched = self
            .inner
            .jobs
            .get_opt(name)
            .await
            .map_err(|e| GatewayError::kube(format!("reading ProofJob {name}"), e))?;
        Ok(fetched.map(Arc::new))
    }

    /// Deletes job `name`; one already gone is fine.
    async fn delete_job(&self, name: &str) -> Result<(), GatewayError> {
        match self
            .inner
            .jobs
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
            Err(error) => Err(GatewayError::kube(
                format!("deleting ProofJob {name}"),
                error,
            )),
        }
    }

    fn accepted(&self, job: &ProofJob) -> SubmitProofResponse {
        SubmitProofResponse {
            job_id: job.name_any(),
            queue_position: outcome::queue_position(
                job,
                self.inner.caches.pool(&job.spec.pool).as_deref(),
                &self.inner.caches.jobs(),
            ),
            assigned_gpu: job
                .labels()
                .get(ASSIGNED_POD_LABEL)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// Waits until job `name` finishes, is cancelled, or `timeout` passes.
    async fn await_job(
        &self,
        name: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitProofResponse, GatewayError> {
        let inner = &self.inner;
        let _waiting = AwaitingGuard::new(&inner.metrics.awaiting);
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut changes = inner.caches.job_changes();
        let mut stopping = inner.stopping.clone();
        let mut seen_in_cache = false;
        loop {
            let cached = inner.caches.job(name);
            let view = match (&cached, seen_in_cache) {
                (Some(job), _) => {
                    seen_in_cache = true;
                    Some(JobView::Present(job))
                }
                (None, true) => Some(JobView::Vanished),
                // Not in the cache yet (just created) or unknown: the API server decides.
                (None, false) => None,
            };
            let fetched;
            let view = match view {
                Some(view) => view,
                None => {
                    fetched =
                        inner.jobs.get_opt(name).await.map_err(|e| {
                            GatewayError::kube(format!("reading ProofJob {name}"), e)
                        })?;
                    match &fetched {
                        Some(job) => JobView::Present(job),
                        None => {
                            return Err(GatewayError::JobNotFound {
                                job: name.to_owned(),
                                namespace: inner.caches.namespace().to_owned(),
                            });
                        }
                    }
                }
            };
            if let Outcome::Done(response) = outcome::outcome(name, view)? {
                return Ok(response);
            }
            let recheck = if seen_in_cache {
                None
            } else {
                Some(tokio::time::Instant::now() + UNCACHED_RECHECK)
            };
            let wake = match (deadline, recheck) {
                (Some(d), Some(r)) => Some(d.min(r)),
                (d, r) => d.or(r),
            };
            tokio::select! {
                _ = stopping.wait_for(|stopping| *stopping) => return Err(GatewayError::ShuttingDown),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Err(GatewayError::ShuttingDown);
                    }
                }
                () = sleep_until(wake) => {
                    if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                        return Ok(outcome::timed_out(name));
                    }
                }
            }
        }
    }

    /// Deletes an unfinished job; a finished one is kept (its result stands).
    async fn cancel(&self, name: &str) -> Result<CancelProofResponse, GatewayError> {
        let inner = &self.inner;
        let job = match inner.caches.job(name) {
            Some(job) => job,
            None => Arc::new(
                inner
                    .jobs
                    .get_opt(name)
                    .await
                    .map_err(|e| GatewayError::kube(format!("reading ProofJob {name}"), e))?
                    .ok_or_else(|| GatewayError::JobNotFound {
                        job: name.to_owned(),
                        namespace: inner.caches.namespace().to_owned(),
                    })?,
            ),
        };
        let phase = job.status.as_ref().and_then(|s| s.phase);
        if phase.is_some_and(ProofJobPhase::is_finished) {
            return Ok(CancelProofResponse { was_running: false });
        }
        let was_running =
            phase == Some(ProofJobPhase::Running) || job.labels().contains_key(ASSIGNED_POD_LABEL);
        self.delete_job(name).await?;
        tracing::info!(job = name, was_running, "cancelled: ProofJob deleted");
        Ok(CancelProofResponse { was_running })
    }

    fn status(&self) -> GetStatusResponse {
        let inner = &self.inner;
        let pools = self.routed_pools();
        let fleet = outcome::fleet(&pools, &inner.caches.jobs());
        GetStatusResponse {
            gpus: fleet.gpus,
            // The sets the provers report keeping loaded (each loads one on its first job
            // that needs it).
            // by registered proof; resident in host memory, ready for proving (HOT). Their size
            // and users are not reported.
            loaded_srs: fleet
                .loaded_parameters
                .into_iter()
                .map(|circuit_id| SrsStatus {
                    circuit_id,
                    tier: srs_status::Tier::Hot as i32,
                    size_bytes: 0,
                    ref_count: 0,
                })
                .collect(),
            queues: fleet.queues,
            total_proofs_completed: fleet.succeeded,
            total_proofs_failed: fleet.failed,
            uptime_seconds: inner.started.elapsed().as_secs(),
            pinned_memory_bytes: 0,
            pinned_memory_limit_bytes: 0,
        }
    }

    /// Counts the call and turns errors into statuses.
    fn finish<T>(
        &self,
        method: &str,
        started: Instant,
        result: Result<T, GatewayError>,
    ) -> Result<Response<T>, Status> {
        let result = result.map_err(|error| {
            tracing::info!(method, %error, "call refused or failed");
            Status::from(error)
        });
        let code = result
            .as_ref()
            .map_or_else(Status::code, |_| tonic::Code::Ok);
        self.inner.metrics.observe(method, code, started);
        result.map(Response::new)
    }
}

async fn sleep_until(wake: Option<tokio::time::Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A request id for a caller that gave none.
fn generated_request_id() -> String {
    let mut bytes = [0u8; 12];
    OsRng.fill_bytes(&mut bytes);
    format!("gw-{}", submission::hex(&bytes))
}

const NO_SRS_MANAGEMENT: &str = "proofpipe provers load a parameter set on their first job that \
    needs it and keep it for the life of the pod; there is no per-call preload or evict. Keep \
    parameters warm by keeping prover pods (the pool's autoscaling.minReplicas above 0), and \
    free them by scaling the pool down";

#[tonic::async_trait]
impl ProvingEngine for Gateway {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        let started = Instant::now();
        let result = self.submit(request.into_inner()).await;
        self.finish("SubmitProof", started, result)
    }

    async fn await_proof(
        &self,
        request: Request<AwaitProofRequest>,
    ) -> Result<Response<AwaitProofResponse>, Status> {
        let started = Instant::now();
        let request = request.into_inner();
        let timeout = (request.timeout_ms > 0).then(|| Duration::from_millis(request.timeout_ms));
        let result = self.await_job(&request.job_id, timeout).await;
        self.finish("AwaitProof", started, result)
    }

    async fn prove(
        &self,
        request: Request<ProveRequest>,
    ) -> Result<Response<ProveResponse>, Status> {
        let started = Instant::now();
        let result = async {
            let submit = request
                .into_inner()
                .submit
                .ok_or_else(|| GatewayError::invalid("ProveRequest.submit is unset"))?;
            let accepted = self.submit(submit).await?;
            // Waits as long as the caller does: its deadline ends the call.
            let result = self.await_job(&accepted.job_id, None).await?;
            Ok(ProveResponse {
                result: Some(result),
            })
        }
        .await;
        self.finish("Prove", started, result)
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> Result<Response<CancelProofResponse>, Status> {
        let started = Instant::now();
        let result = self.cancel(&request.into_inner().job_id).await;
        self.finish("CancelProof", started, result)
    }

    async fn get_status(
        &self,
        _request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        let started = Instant::now();
        let status = self.status();
        self.finish("GetStatus", started, Ok(status))
    }

    async fn get_metrics(
        &self,
        _request: Request<GetMetricsRequest>,
    ) -> Result<Response<GetMetricsResponse>, Status> {
        let started = Instant::now();
        let text = self.render_metrics();
        self.finish(
            "GetMetrics",
            started,
            Ok(GetMetricsResponse {
                prometheus_text: text,
            }),
        )
    }

    async fn preload_srs(
        &self,
        _request: Request<PreloadSrsRequest>,
    ) -> Result<Response<PreloadSrsResponse>, Status> {
        let started = Instant::now();
        self.finish(
            "PreloadSRS",
            started,
            Err(GatewayError::Unsupported(NO_SRS_MANAGEMENT.into())),
        )
    }

    async fn evict_srs(
        &self,
        _request: Request<EvictSrsRequest>,
    ) -> Result<Response<EvictSrsResponse>, Status> {
        let started = Instant::now();
        self.finish(
            "EvictSRS",
            started,
            Err(GatewayError::Unsupported(NO_SRS_MANAGEMENT.into())),
        )
    }
}
