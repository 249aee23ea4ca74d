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

use crate::filecoin::{self, FilecoinRun};
use crate::job_failure::JobFailure;
use crate::payload::ProofLedger;
use crate::progress::Stage;
use crate::resume::{own_proofs, pipeline_job, proved_partitions};
use crate::shared::{Daemon, raised};
use crate::sizing::reported_sizing;
use crate::state::Lane;
use crate::urgent::{self, Footprint, MainLane};
use proofpipe_filecoin::matrices;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::params::{CircuitParams, ProvingKey, estimated_params_bytes};
use proofpipe_pipeline::pipeline::{
    JobEvent, JobHandle, JobOutcome, JobSpec, Pipeline, PipelineConfig,
};
use proofpipe_pipeline::sizing::{SizingError, SynthesisProfile, plan};

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

/// How a job run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    Succeeded,
    Cancelled,
    Failed(JobFailure),
}

impl RunOutcome {
    /// The pipeline's word for it, for the metrics it shares with the CLI.
    pub fn as_job_outcome(&self) -> JobOutcome {
        match self {
            Self::Succeeded => JobOutcome::Succeeded,
            Self::Cancelled => JobOutcome::Cancelled,
            Self::Failed(failure) => JobOutcome::Failed(failure.message.clone()),
        }
    }
}

/// How a job run ended, and its pipeline, still to be stopped.
pub struct JobRun {
    pub outcome: RunOutcome,
    pub pipeline: Option<PipelineGuard>,
    /// Every proof the run made is in the job's status.
    pub proofs_written: bool,
}

impl JobRun {
    fn without_pipeline(outcome: RunOutcome) -> Self {
        Self {
            outcome,
            pipeline: None,
            proofs_written: true,
        }
    }

    /// The run of a job this prover stopped because its GPU was lost (`loss`): a job it
    /// cancelled for that is handed back, not merely cancelled; one that ended otherwise
    /// before the cancel took effect ends as it did.
    pub fn handed_back(mut self, loss: &JobFailure) -> Self {
        if self.outcome == RunOutcome::Cancelled {
            self.outcome = RunOutcome::Failed(loss.clone());
        }
        self
    }
}

/// Proves `job` in `lane` until it finishes, fails, or `cancel` turns true.
pub async fn run_job(
    daemon: Arc<Daemon>,
    job: Arc<ProofJob>,
    mut cancel: watch::Receiver<bool>,
    lane: Lane,
) -> JobRun {
    let name = job.name_any();
    tracing::info!(job = %name, work = %job.spec.work_name(), partitions = job.spec.partition_count(), lane = lane.as_str(), "proving job");
    let started = start_job(&daemon, &job, lane);
    let (pipeline, handle, filecoin_run) = tokio::select! {
        started = started => match started {
            Ok(started) => started,
            Err(err) => return JobRun::without_pipeline(RunOutcome::Failed(JobFailure::of(&err))),
        },
        () = raised(&mut cancel) => {
            daemon.state.cancelled(lane);
            return JobRun::without_pipeline(RunOutcome::Cancelled);
        }
    };
    daemon.state.enter(lane, Stage::Proving);

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
    if filecoin_run.is_some() {
        ledger = ledger.without_public_inputs();
    }
    let mut retry = interval_at(Instant::now() + RETRY_INTERVAL, RETRY_INTERVAL);
    let mut cancel_sent = false;
    let outcome = loop {
        tokio::select! {
            () = raised(&mut cancel), if !cancel_sent => {
                tracing::info!(job = %name, "cancelling the job in the pipeline");
                daemon.state.cancelled(lane);
                handle.cancel();
                cancel_sent = true;
            }
            event = events.recv() => {
                let Some(event) = event else {
                    break RunOutcome::Failed(JobFailure::proving("the pipeline stopped before the job finished"));
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
                            daemon.state.partition_proved(lane);
                        }
                        JobEvent::Finished(outcome) => finished = Some(match outcome {
                            JobOutcome::Succeeded => RunOutcome::Succeeded,
                            JobOutcome::Cancelled => RunOutcome::Cancelled,
                            JobOutcome::Failed(message) => RunOutcome::Failed(JobFailure::of_pipeline(message, handle.lost_gpu())),
                        }),
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
    let mut outcome = outcome;
    if let (RunOutcome::Succeeded, Some(run)) = (&outcome, filecoin_run) {
        daemon.state.enter(lane, Stage::Verifying);
        let verifier = run.verifier();
        match filecoin::finish(run, ledger.proofs(), pod).await {
            Ok(result) => {
                tracing::info!(job = %name, bytes = result.proof_bytes, verified = result.verified, output = ?result.output_url, "Filecoin proof assembled and checked with {verifier}");
                ledger.set_filecoin(result);
            }
            Err(err) => outcome = RunOutcome::Failed(JobFailure::of(&err)),
        }
    }
    daemon.state.enter(lane, Stage::WritingProofs);
    let proofs_written = write_remaining_proofs(&daemon, &mut ledger, &name).await;
    JobRun {
        outcome,
        pipeline: Some(pipeline),
        proofs_written,
    }
}

/// Reads what the job needs, starts a pipeline sized for it and submits its partitions.
async fn start_job(
    daemon: &Arc<Daemon>,
    job: &ProofJob,
    lane: Lane,
) -> Result<(PipelineGuard, JobHandle, Option<FilecoinRun>), ProverError> {
    let work = job.spec.work_name();
    match &job.spec.filecoin {
        None => {
            let spec = pipeline_job(job)?;
            daemon.state.enter(lane, Stage::LoadingParameters);
            let params = load_params(daemon, &spec).await?;
            // Matrices earlier PoRep jobs recorded stay resident beside this job.
            let resident = (matrices::resident_bytes(), 0);
            let pipeline = start_pipeline(
                daemon,
                Sized {
                    lane,
                    beside: Footprint::default(),
                    work,
                    todo: spec.todo().len(),
                    synthesis: SynthesisProfile::ONE_CORE,
                },
                &params.key,
                resident,
            )?;
            reserve(daemon, &pipeline, params.key.shape.constraints).await;
            let source = pipeline.get().synthetic_source(&spec, &params)?;
            let handle = pipeline.get().submit_source(
                daemon.fault.wrap_source(source),
                params.key.clone(),
                spec.partitions,
                spec.priority,
                &spec.skip,
            )?;
            Ok((pipeline, handle, None))
        }
        Some(filecoin_work) => {
            let prepared = filecoin::prepare(daemon, job, filecoin_work, lane).await?;
            let skip = proved_partitions(job.status.as_ref(), prepared.partitions);
            let todo = prepared.partitions as usize - skip.len();
            let synthesis = prepared.source.synthesis_profile();
            let pipeline = match lane {
                Lane::Main => start_main_filecoin(daemon, &prepared, work, todo, synthesis)?,
                Lane::Urgent => start_urgent(daemon, &prepared, work, todo, synthesis).await?,
            };
            reserve(daemon, &pipeline, prepared.key.shape.constraints).await;
            let kind = prepared.run.kind();
            let handle = pipeline.get().submit_source(
                daemon.fault.wrap_filecoin_source(prepared.source, kind),
                prepared.key,
                prepared.partitions,
                job.spec.priority,
                &skip,
            )?;
            Ok((pipeline, handle, Some(prepared.run)))
        }
    }
}

/// The pipeline of a Filecoin job in the main lane.
fn start_main_filecoin(
    daemon: &Daemon,
    prepared: &filecoin::Prepared,
    work: String,
    todo: usize,
    synthesis: SynthesisProfile,
) -> Result<PipelineGuard, ProverError> {
    // Resident beside the job's own parameters and matrices: other parameter sets and other
    // sector sizes' matrices that earlier jobs left.
    let own_matrices = prepared.matrices.as_ref().map_or(0, |m| m.heap_bytes());
    let others = prepared.others_bytes + matrices::resident_bytes().saturating_sub(own_matrices);
    let sized = |work| Sized {
        lane: Lane::Main,
        beside: Footprint::default(),
        work,
        todo,
        synthesis,
    };
    match start_pipeline(
        daemon,
        sized(work.clone()),
        &prepared.key,
        (others, own_matrices),
    ) {
        // What this prover keeps from other jobs leaves this one no room: drop it (freed
        // now: the previous job's pipeline has stopped) and plan without.
        Err(e) if others > 0 && does_not_fit(&e) => {
            tracing::info!(
                others,
                "dropping the other resident Filecoin parameter sets and R1CS matrices: the job's pipeline does not fit beside them"
            );
            daemon.filecoin_params.keep_only(&prepared.identifier);
            matrices::keep_only(prepared.matrices.as_ref());
            start_pipeline(daemon, sized(work), &prepared.key, (0, own_matrices))
        }
        started => started,
    }
}

/// Whether a plan failed for room alone (host memory, or GPU memory for the bases and one
/// worker): room other sets or the main job hold may be given back; any other error stands.
fn does_not_fit(e: &ProverError) -> bool {
    matches!(
        e,
        ProverError::Sizing(
            SizingError::MemoryLimitTooSmall { .. } | SizingError::GpuMemoryTooSmall { .. }
        )
    )
}

/// The pipeline of an urgent job: beside the main job, in what its plan leaves; when that is
/// too small, once the main job has ended (ADR 0026).
async fn start_urgent(
    daemon: &Daemon,
    prepared: &filecoin::Prepared,
    work: String,
    todo: usize,
    synthesis: SynthesisProfile,
) -> Result<PipelineGuard, ProverError> {
    let mut lane = daemon.main_lane.subscribe();
    loop {
        let main_job = urgent::until_planned(&mut lane).await;
        let alone = main_job.is_none();
        let beside = main_job.unwrap_or_default();
        // Alone, the other resident sets count as for any job; beside the main job they are
        // in its plan already (the urgent key is counted as this job's own).
        let others = if alone { prepared.others_bytes } else { 0 };
        let sized = Sized {
            lane: Lane::Urgent,
            beside,
            work: work.clone(),
            todo,
            synthesis,
        };
        match start_pipeline(daemon, sized, &prepared.key, (others, 0)) {
            Err(e) if !alone && does_not_fit(&e) => {
                tracing::info!(
                    job = %work,
                    main_peak = beside.memory_bytes,
                    main_device = beside.device_bytes,
                    why = %e,
                    "the urgent job does not fit beside the running job; it starts when that one ends"
                );
                urgent::until_idle(&mut lane).await;
            }
            started => return started,
        }
    }
}

async fn load_params(
    daemon: &Arc<Daemon>,
    spec: &JobSpec,
) -> Result<Arc<CircuitParams>, ProverError> {
    // Refuse a hopeless limit before spending minutes on parameters.
    let shape = spec.circuit.shape(spec.constraints)?;
    plan(&daemon.sizing_input(
        daemon.main_limit(),
        daemon.gpu_taken(Lane::Main, Footprint::default()),
        spec.circuit.to_string(),
        spec.todo().len(),
        shape,
        (
            estimated_params_bytes(shape) + matrices::resident_bytes(),
            0,
        ),
        SynthesisProfile::ONE_CORE,
    ))?;
    let store = daemon.params.clone();
    let (circuit, constraints) = (spec.circuit, spec.constraints);
    let fault = daemon.fault;
    let (params, origin) = tokio::task::spawn_blocking(move || {
        fault.at_parameter_load();
        store.get(circuit, constraints)
    })
    .await
    .map_err(|err| ProverError::ParamsGeneration {
        circuit: circuit.name(),
        constraints,
        message: err.to_string(),
    })??;
    tracing::info!(%circuit, constraints, ?origin, bytes = params.heap_bytes(), "parameters ready");
    Ok(params)
}

/// What a pipeline is sized for: its lane, what the main lane takes beside it (urgent lane),
/// the job, its partitions left, and how each partition's synthesis uses the machine.
struct Sized {
    lane: Lane,
    beside: Footprint,
    work: String,
    todo: usize,
    synthesis: SynthesisProfile,
}

/// Has the backend set aside the GPU stage's memory for the pipeline's partitions before the
/// first is submitted (off the runtime: pinning host memory takes seconds), so the job's
/// first partitions run as its later ones do; a backend that already holds it (an earlier
/// job of the same shape) returns at once.
async fn reserve(daemon: &Daemon, pipeline: &PipelineGuard, constraints: usize) {
    let backend = daemon.backend.clone();
    let config = pipeline.get().config().clone();
    let reserved = tokio::task::spawn_blocking(move || {
        proofpipe_pipeline::pipeline::reserve_gpu_memory(backend.as_ref(), &config, constraints)
    })
    .await;
    if let Err(err) = reserved {
        tracing::warn!("reserving the GPU stage's memory stopped: {err}");
    }
}

/// Plans and starts a pipeline for `todo` partitions with `key`, counting what the process
/// holds beside it: `(other_bytes, matrices_bytes)`, other jobs' parameters and matrices, and
/// the R1CS matrices this job synthesizes from. A main-lane pipeline's plan is published for
/// the urgent lane.
fn start_pipeline(
    daemon: &Daemon,
    sized: Sized,
    key: &ProvingKey,
    (other_bytes, matrices_bytes): (u64, u64),
) -> Result<PipelineGuard, ProverError> {
    let Sized {
        lane,
        beside,
        work,
        todo,
        synthesis,
    } = sized;
    let limit = match lane {
        Lane::Main => daemon.main_limit(),
        Lane::Urgent => urgent::room_beside(daemon.memory_limit, beside),
    };
    let params_bytes = key.heap_bytes().saturating_add(other_bytes);
    let mut input = daemon.sizing_input(
        limit,
        daemon.gpu_taken(lane, beside),
        work,
        todo,
        key.shape,
        (params_bytes, matrices_bytes),
        synthesis,
    );
    // The GPU holds this job's bases, or streams those that do not fit: other sets' device
    // copies go when an upload finds the card full (or over PROOFPIPE_GPU_MEMORY); their
    // host copies stay, counted in `params_bytes`.
    input.query_bytes = Some(key.query_bytes());
    let plan = plan(&input)?;
    let sizing = reported_sizing(&plan);
    tracing::info!(
        lane = lane.as_str(),
        partition_workers = plan.partition_workers,
        channel_capacity = plan.channel_capacity,
        gpu_workers = plan.gpu_workers,
        memory = %sizing.memory_estimate,
        streamed = ?sizing.streamed_queries,
        "pipeline sized for the job"
    );
    let pipeline = Pipeline::start_with_metrics(
        PipelineConfig::from_plan(&plan),
        daemon.backend.clone(),
        daemon.metrics.pipeline(),
    )?;
    if lane == Lane::Main {
        daemon.metrics.pipeline_planned(&plan);
        daemon.main_lane.send_replace(MainLane::Running(Footprint {
            memory_bytes: plan.predicted_peak_bytes,
            device_bytes: plan
                .gpu
                .as_ref()
                .map_or(0, |gpu| gpu.predicted_device_bytes),
        }));
    }
    daemon.state.pipeline_started(lane, &pipeline, sizing);
    Ok(PipelineGuard(Some(pipeline)))
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
