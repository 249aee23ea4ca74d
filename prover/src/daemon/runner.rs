//! Proving one assigned ProofJob: parameters, a pipeline sized for the job, and every proof
//! applied to the job's status as soon as it arrives.
//!
//! Proving runs on the pipeline's own threads; parameter loading and waits on the
//! pipeline's channel run on blocking threads. This task only moves events and writes.

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use proofpipe_crds::ProofJob;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, interval_at};

use super::payload::ProofLedger;
use super::resume::{own_proofs, pipeline_job};
use super::sizing::reported_sizing;
use super::{Daemon, raised};
use crate::error::ProverError;
use crate::params::{CircuitParams, estimated_params_bytes};
use crate::pipeline::{JobEvent, JobOutcome, JobSpec, Pipeline, PipelineConfig};
use crate::sizing::plan;

/// How often unwritten proofs are retried while the job runs.
const RETRY_INTERVAL: Duration = Duration::from_secs(2);
/// Waits between the final attempts to write a finished job's proofs.
const FINAL_RETRIES: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
];

/// Owns a pipeline so that stopping it (joining its threads, which waits for partitions in
/// flight) never blocks the async runtime, whichever way it is dropped.
pub struct PipelineGuard(Option<Pipeline>);

impl PipelineGuard {
    fn get(&self) -> &Pipeline {
        self.0
            .as_ref()
            .expect("the pipeline is taken only when the guard goes")
    }

    /// Stops the pipeline and waits until its threads, and so its memory, are gone.
    pub async fn stop(mut self) {
        let pipeline = self.0.take();
        let _ = tokio::task::spawn_blocking(move || drop(pipeline)).await;
    }
}

impl Drop for PipelineGuard {
    fn drop(&mut self) {
        if let Some(pipeline) = self.0.take() {
            std::thread::spawn(move || drop(pipeline));
        }
    }
}

/// How a job run ended, and its pipeline, still to be stopped.
pub struct JobRun {
    pub outcome: JobOutcome,
    pub pipeline: Option<PipelineGuard>,
    /// Every proof the run made is in the job's status.
    pub proofs_written: bool,
}

impl JobRun {
    fn without_pipeline(outcome: JobOutcome) -> Self {
        Self {
            outcome,
            pipeline: None,
            proofs_written: true,
        }
    }
}

/// Proves `job` until it finishes, fails, or `cancel` turns true.
pub async fn run_job(
    daemon: Arc<Daemon>,
    job: Arc<ProofJob>,
    mut cancel: watch::Receiver<bool>,
) -> JobRun {
    let name = job.name_any();
    let spec = match pipeline_job(&job) {
        Ok(spec) => spec,
        Err(err) => return JobRun::without_pipeline(JobOutcome::Failed(err.to_string())),
    };
    tracing::info!(job = %name, circuit = %spec.circuit, constraints = spec.constraints, partitions = spec.partitions,
        already_proved = spec.skip.len(), "proving job");
    let started = async {
        let params = load_params(&daemon, &spec).await?;
        let pipeline = start_pipeline(&daemon, &spec, &params)?;
        Ok::<_, ProverError>((pipeline, params))
    };
    let (pipeline, params) = tokio::select! {
        started = started => match started {
            Ok((pipeline, params)) => (PipelineGuard(Some(pipeline)), params),
            Err(err) => return JobRun::without_pipeline(JobOutcome::Failed(err.to_string())),
        },
        () = raised(&mut cancel) => return JobRun::without_pipeline(JobOutcome::Cancelled),
    };
    let handle = match pipeline.get().submit(spec, params) {
        Ok(handle) => handle,
        Err(err) => {
            return JobRun {
                outcome: JobOutcome::Failed(err.to_string()),
                pipeline: Some(pipeline),
                proofs_written: true,
            };
        }
    };

    // The pipeline reports on a blocking channel; forward it on a blocking thread. The
    // job's last event is always `Finished` (cancelling sends it at once).
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let pipeline_events = handle.events.clone();
    tokio::task::spawn_blocking(move || {
        for event in pipeline_events.iter() {
            let last = matches!(event, JobEvent::Finished(_));
            if events_tx.send(event).is_err() || last {
                break;
            }
        }
    });

    let pod = &daemon.identity.pod;
    let mut ledger = ProofLedger::new(&name, pod, own_proofs(job.status.as_ref(), pod));
    let mut retry = interval_at(Instant::now() + RETRY_INTERVAL, RETRY_INTERVAL);
    let mut cancel_sent = false;
    let outcome = loop {
        tokio::select! {
            () = raised(&mut cancel), if !cancel_sent => {
                tracing::info!(job = %name, "cancelling the job in the pipeline");
                handle.cancel();
                cancel_sent = true;
            }
            event = events.recv() => {
                let Some(event) = event else {
                    break JobOutcome::Failed("the pipeline stopped before the job finished".into());
                };
                // Take whatever else already arrived, so proofs that finish together are
                // written together.
                let mut finished = None;
                let mut next = Some(event);
                while let Some(event) = next.take() {
                    match event {
                        JobEvent::PartitionProved(proof) => {
                            tracing::info!(job = %name, partition = proof.partition, buffers = %pipeline.get().buffers(), "partition proved");
                            ledger.record(&proof);
                            daemon.state.partition_proved();
                        }
                        JobEvent::Finished(outcome) => finished = Some(outcome),
                    }
                    next = events.try_recv().ok();
                }
                // A failed write is logged and retried by the timer.
                let _ = write_proofs(&daemon, &mut ledger, &name).await;
                if let Some(outcome) = finished {
                    break outcome;
                }
            }
            _ = retry.tick(), if !ledger.is_written() => {
                let _ = write_proofs(&daemon, &mut ledger, &name).await;
            }
        }
    };
    let proofs_written = write_remaining_proofs(&daemon, &mut ledger, &name).await;
    JobRun {
        outcome,
        pipeline: Some(pipeline),
        proofs_written,
    }
}

async fn load_params(
    daemon: &Arc<Daemon>,
    spec: &JobSpec,
) -> Result<Arc<CircuitParams>, ProverError> {
    // Refuse a hopeless limit before spending minutes on parameters.
    let shape = spec.circuit.shape(spec.constraints)?;
    plan(&daemon.sizing_input(spec, shape, estimated_params_bytes(shape)))?;
    let store = daemon.params.clone();
    let (circuit, constraints) = (spec.circuit, spec.constraints);
    let (params, origin) = tokio::task::spawn_blocking(move || store.get(circuit, constraints))
        .await
        .map_err(|err| ProverError::ParamsGeneration {
            circuit,
            constraints,
            message: err.to_string(),
        })??;
    tracing::info!(%circuit, constraints, ?origin, bytes = params.heap_bytes(), "parameters ready");
    Ok(params)
}

fn start_pipeline(
    daemon: &Daemon,
    spec: &JobSpec,
    params: &CircuitParams,
) -> Result<Pipeline, ProverError> {
    let plan = plan(&daemon.sizing_input(spec, params.shape, params.heap_bytes()))?;
    let sizing = reported_sizing(&plan);
    tracing::info!(
        partition_workers = plan.partition_workers,
        channel_capacity = plan.channel_capacity,
        gpu_workers = plan.gpu_workers,
        memory = %sizing.memory_estimate,
        "pipeline sized for the job"
    );
    let pipeline = Pipeline::start(PipelineConfig::from_plan(&plan), daemon.backend.clone())?;
    daemon.state.pipeline_started(&pipeline, sizing);
    Ok(pipeline)
}

/// One attempt to apply the unwritten proofs; a failure is retried later.
async fn write_proofs(
    daemon: &Daemon,
    ledger: &mut ProofLedger,
    job: &str,
) -> Result<(), ProverError> {
    let Some((generation, body)) = ledger.unwritten() else {
        return Ok(());
    };
    match daemon
        .kube
        .apply_job_status(job, &body, &daemon.metrics)
        .await
    {
        Ok(()) => {
            ledger.written(generation);
            Ok(())
        }
        Err(err) => {
            tracing::warn!(%job, "{err}; retrying");
            Err(err)
        }
    }
}

/// The job ended: its proofs must reach the status before the daemon moves on. Gives up
/// when the job is gone, or after a few attempts (the unwritten partitions are then proved
/// again). True when every proof is written.
async fn write_remaining_proofs(daemon: &Daemon, ledger: &mut ProofLedger, job: &str) -> bool {
    for wait in FINAL_RETRIES {
        match write_proofs(daemon, ledger, job).await {
            Ok(()) => return true,
            Err(err) if err.is_not_found() => return false,
            Err(_) => tokio::time::sleep(wait).await,
        }
    }
    let written = write_proofs(daemon, ledger, job).await.is_ok();
    if !written {
        tracing::error!(%job, "giving up on writing proofs to the job's status; they will be proved again");
    }
    written
}
