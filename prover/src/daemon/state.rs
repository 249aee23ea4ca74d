//! What the daemon is doing now, shared by the job runner (which changes it), the pool
//! status reporter and `/metrics` (which read it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use prometheus::Registry;
use proofpipe_crds::PipelineSizing;

use super::payload::ProverReport;
use super::progress::{Heartbeat, Stage, Stall};
use crate::pipeline::{BufferTracker, Pipeline};

/// The job being proved, as the watchdog needs it to report the job back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentJob {
    pub name: String,
    /// `status.attempts` when the daemon started it.
    pub attempt: i32,
}

/// The granularity of the progress time in the pool status: the report stays calm (one
/// change per 30 s at most) and a stall is still seen within a deadline of minutes.
const PROGRESS_REPORT_STEP: i64 = 30;

/// Readers hold the pipeline's tracker and registry, never the pipeline: dropping a
/// pipeline joins its threads, which must not happen on the async runtime by accident.
struct PipelineView {
    tracker: Arc<BufferTracker>,
    registry: Registry,
}

#[derive(Default)]
struct Inner {
    current_job: Option<CurrentJob>,
    heartbeat: Option<Heartbeat>,
    /// Wall-clock time of the last progress, for the report (Instants are not wall time).
    last_progress_wall: Option<Timestamp>,
    /// The current pipeline, or the last one while idle (its final counters stay visible).
    pipeline: Option<PipelineView>,
    sizing: Option<PipelineSizing>,
    proofs_completed: i64,
}

#[derive(Default)]
pub struct ProverState(Mutex<Inner>);

impl ProverState {
    pub fn job_started(&self, job: CurrentJob) {
        let mut inner = self.0.lock();
        inner.current_job = Some(job);
        inner.heartbeat = Some(Heartbeat::new(Stage::FetchingInput, Instant::now()));
        inner.last_progress_wall = Some(Timestamp::now());
    }

    /// The current job entered `stage`.
    pub fn enter(&self, stage: Stage) {
        let mut inner = self.0.lock();
        if let Some(heartbeat) = inner.heartbeat.as_mut() {
            heartbeat.enter(stage, Instant::now());
            inner.last_progress_wall = Some(Timestamp::now());
        }
    }

    /// The current job was cancelled: it must stop within the grace.
    pub fn cancelled(&self) {
        let mut inner = self.0.lock();
        if let Some(heartbeat) = inner.heartbeat.as_mut() {
            heartbeat.cancelled(Instant::now());
        }
    }

    pub fn current_job(&self) -> Option<CurrentJob> {
        self.0.lock().current_job.clone()
    }

    /// Feeds the pipeline's buffers to the heartbeat and says whether the current job has
    /// stalled (no progress for `deadline`, or cancelled and not stopped).
    pub fn check(&self, deadline: Duration) -> Option<Stall> {
        let mut inner = self.0.lock();
        let buffers = inner.pipeline.as_ref().map(|p| p.tracker.snapshot());
        let now = Instant::now();
        let heartbeat = inner.heartbeat.as_mut()?;
        let before = heartbeat.last_progress();
        if let Some(buffers) = buffers {
            heartbeat.observe(buffers, now);
        }
        let moved = heartbeat.last_progress() != before;
        let stall = heartbeat.stall(now, deadline);
        if moved {
            inner.last_progress_wall = Some(Timestamp::now());
        }
        stall
    }

    pub fn pipeline_started(&self, pipeline: &Pipeline, sizing: PipelineSizing) {
        let mut inner = self.0.lock();
        inner.pipeline = Some(PipelineView {
            tracker: pipeline.buffer_tracker(),
            registry: pipeline.registry().clone(),
        });
        inner.sizing = Some(sizing);
    }

    pub fn partition_proved(&self) {
        let mut inner = self.0.lock();
        inner.proofs_completed += 1;
        if let Some(heartbeat) = inner.heartbeat.as_mut() {
            heartbeat.beat(Instant::now());
            inner.last_progress_wall = Some(Timestamp::now());
        }
    }

    pub fn job_ended(&self) {
        let mut inner = self.0.lock();
        inner.current_job = None;
        inner.heartbeat = None;
        inner.last_progress_wall = None;
    }

    pub fn report(&self) -> ProverReport {
        let inner = self.0.lock();
        let step = |t: Timestamp| {
            Timestamp::from_second(
                t.as_second().div_euclid(PROGRESS_REPORT_STEP) * PROGRESS_REPORT_STEP,
            )
            .unwrap_or(t)
        };
        ProverReport {
            current_job: inner.current_job.as_ref().map(|job| job.name.clone()),
            stage: inner
                .heartbeat
                .as_ref()
                .map(|h| h.stage().as_str().to_owned()),
            last_progress: inner.last_progress_wall.map(step),
            buffers: inner
                .pipeline
                .as_ref()
                .map(|p| p.tracker.snapshot())
                .unwrap_or_default(),
            sizing: inner.sizing.clone(),
            proofs_completed: inner.proofs_completed,
            // The daemon's own, added by the reporter.
            gpu: None,
            resident_parameters: Vec::new(),
        }
    }

    /// The pipeline's metrics in the text format; empty before the first job.
    pub fn pipeline_metrics(&self) -> String {
        let registry = self.0.lock().pipeline.as_ref().map(|p| p.registry.clone());
        registry
            .map(|r| crate::metrics::encode(&r))
            .unwrap_or_default()
    }
}
