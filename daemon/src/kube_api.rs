//! The daemon's writes to the API server: thin, each one request, errors with the object.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource, ResourceExt};
use proofpipe_crds::{GPU_LOST_REASON, GpuLoss, ProofJob, ProverFailure, ProverPool};
use serde_json::Value;

use crate::config::Identity;
use crate::job_failure::JobFailure;
use crate::metrics::{DaemonMetrics, StatusObject};
use proofpipe_pipeline::error::{FailureClass, ProverError};

/// Adds what was being done, and to which object, to an API error (keeping whether the API
/// said "not found", which decides what the daemon does next).
pub fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> ProverError {
    let action = action.into();
    move |source| ProverError::Api {
        action,
        not_found: matches!(&source, kube::Error::Api(status) if status.is_not_found()),
        source: Box::new(source),
    }
}

pub struct KubeWriter {
    jobs: Api<ProofJob>,
    pools: Api<ProverPool>,
    identity: Identity,
    recorder: Recorder,
}

impl KubeWriter {
    pub fn new(client: Client, identity: Identity) -> Self {
        let reporter = Reporter {
            controller: "proofpipe-prover".into(),
            instance: Some(identity.pod.clone()),
        };
        Self {
            jobs: Api::namespaced(client.clone(), &identity.namespace),
            pools: Api::namespaced(client.clone(), &identity.namespace),
            recorder: Recorder::new(client, reporter),
            identity,
        }
    }

    pub fn jobs(&self) -> Api<ProofJob> {
        self.jobs.clone()
    }

    /// Applies the daemon's proofs to a job's status. Forced, because every field in the
    /// body is one the contract gives to the daemon proving the job (see payload.rs): a
    /// conflict there is an earlier prover's `stageSeconds` or an unverified entry this
    /// daemon proved anew, never an operator field.
    pub async fn apply_job_status(
        &self,
        job: &str,
        body: &Value,
        metrics: &DaemonMetrics,
    ) -> Result<(), ProverError> {
        let params = PatchParams::apply(&self.identity.field_manager()).force();
        let result = self
            .jobs
            .patch_status(job, &params, &Patch::Apply(body))
            .await;
        metrics.status_write(StatusObject::ProofJob, result.is_ok());
        result.map(drop).map_err(api_error(format!(
            "applying status of ProofJob {}/{job}",
            self.identity.namespace
        )))
    }

    /// Applies this prover's entry of the pool status; not forced: nobody else writes it.
    pub async fn apply_pool_status(
        &self,
        body: &Value,
        metrics: &DaemonMetrics,
    ) -> Result<(), ProverError> {
        let pool = &self.identity.pool;
        let params = PatchParams::apply(&self.identity.field_manager());
        let result = self
            .pools
            .patch_status(pool, &params, &Patch::Apply(body))
            .await;
        metrics.status_write(StatusObject::ProverPool, result.is_ok());
        result.map(drop).map_err(api_error(format!(
            "applying status of ProverPool {}/{pool}",
            self.identity.namespace
        )))
    }

    /// Reports that this prover could not prove `job` on `attempt` (`status.proverFailure`),
    /// for the operator to fail or requeue it. Under a field manager of its own, so that the
    /// proofs' applies (which do not carry it) never remove it, nor it them.
    pub async fn report_failure(
        &self,
        job: &str,
        attempt: i32,
        failure: &JobFailure,
    ) -> Result<(), ProverError> {
        let report = ProverFailure {
            pod: self.identity.pod.clone(),
            attempt,
            reason: failure.class.reason().to_owned(),
            message: truncate(&failure.message, 4000).to_owned(),
            permanent: failure.class.is_permanent(),
            time: Time(Timestamp::now()),
        };
        let body = serde_json::json!({
            "apiVersion": ProofJob::api_version(&()),
            "kind": ProofJob::kind(&()),
            "metadata": { "name": job },
            "status": { "proverFailure": report },
        });
        let manager = format!("{}.failure", self.identity.field_manager());
        let params = PatchParams::apply(&manager).force();
        self.jobs
            .patch_status(job, &params, &Patch::Apply(&body))
            .await
            .map(drop)
            .map_err(api_error(format!(
                "reporting the failure of ProofJob {}/{job}",
                self.identity.namespace
            )))
    }

    /// A Warning Event on the job: `ProvingFailed`, or `GpuLost` when the prover lost its
    /// GPU and hands the job back. The daemon's only word about a failure, since the job's
    /// phase and message are the operator's.
    pub async fn proving_failed(
        &self,
        job: &ProofJob,
        failure: &JobFailure,
    ) -> Result<(), ProverError> {
        let (reason, note) = if failure.class == FailureClass::GpuLost {
            (
                GPU_LOST_REASON,
                format!(
                    "{}: {}; the job goes back to the queue, not charged to its backoffLimit",
                    self.identity.pod,
                    truncate(&failure.message, 800)
                ),
            )
        } else {
            (
                "ProvingFailed",
                // The Events API caps the note at 1 kB.
                format!("{}: {}", self.identity.pod, truncate(&failure.message, 900)),
            )
        };
        let event = Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(note),
            action: "Prove".into(),
            secondary: None,
        };
        self.recorder
            .publish(&event, &job.object_ref(&()))
            .await
            .map_err(api_error(format!(
                "recording an Event on ProofJob {}/{}",
                self.identity.namespace,
                job.name_any()
            )))
    }

    /// A Warning Event `GpuLost` on the prover's pool: this prover takes no more work.
    pub async fn gpu_lost_event(&self, loss: &GpuLoss, exits: bool) -> Result<(), ProverError> {
        let pod = &self.identity.pod;
        let what_next = if exits {
            "it hands its jobs back and exits (PROOFPIPE_REQUIRE_GPU), so that its pod is replaced"
                .to_owned()
        } else {
            format!(
                "it hands its jobs back and takes no more work; delete pod {pod} to replace it \
                 (set PROOFPIPE_REQUIRE_GPU=true in the template to have such provers exit)"
            )
        };
        let event = Event {
            type_: EventType::Warning,
            reason: GPU_LOST_REASON.into(),
            note: Some(format!(
                "prover {pod} lost GPU {}: {}; {what_next}",
                loss.device,
                truncate(&loss.message, 500)
            )),
            action: "Prove".into(),
            secondary: None,
        };
        let pool = ObjectReference {
            api_version: Some(ProverPool::api_version(&()).into_owned()),
            kind: Some(ProverPool::kind(&()).into_owned()),
            name: Some(self.identity.pool.clone()),
            namespace: Some(self.identity.namespace.clone()),
            ..ObjectReference::default()
        };
        self.recorder
            .publish(&event, &pool)
            .await
            .map_err(api_error(format!(
                "recording an Event on ProverPool {}/{}",
                self.identity.namespace, self.identity.pool
            )))
    }
}

fn truncate(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}
