//! The daemon's writes to the API server: thin, each one request, errors with the object.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource, ResourceExt};
use proofpipe_crds::{ProofJob, ProverFailure, ProverPool};
use serde_json::Value;

use super::config::Identity;
use super::metrics::{DaemonMetrics, StatusObject};
use crate::error::ProverError;

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
        result.map(drop).map_err(ProverError::kube(format!(
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
        result.map(drop).map_err(ProverError::kube(format!(
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
        failure: &super::runner::JobFailure,
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
            .map_err(ProverError::kube(format!(
                "reporting the failure of ProofJob {}/{job}",
                self.identity.namespace
            )))
    }

    /// A Warning Event `ProvingFailed` on the job: the daemon's only word about a failure,
    /// since the job's phase and message are the operator's.
    pub async fn proving_failed(&self, job: &ProofJob, message: &str) -> Result<(), ProverError> {
        let event = Event {
            type_: EventType::Warning,
            reason: "ProvingFailed".into(),
            // The Events API caps the note at 1 kB.
            note: Some(format!("{}: {}", self.identity.pod, truncate(message, 900))),
            action: "Prove".into(),
            secondary: None,
        };
        self.recorder
            .publish(&event, &job.object_ref(&()))
            .await
            .map_err(ProverError::kube(format!(
                "recording an Event on ProofJob {}/{}",
                self.identity.namespace,
                job.name_any()
            )))
    }
}

fn truncate(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}
