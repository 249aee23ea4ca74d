//! What the daemon is doing now, shared by the job runner (which changes it), the pool
//! status reporter and `/metrics` (which read it), per lane: the main job, and an urgent
//! job proved beside it (ADR 0026), each with its own heartbeat for the watchdog.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use prometheus::Registry;
use proofpipe_crds::PipelineSizing;

use super::payload::ProverReport;
use super::progress::{Heartbeat, Stage, Stall};
use proofpipe_pipeline::pipeline::{BufferTracker, Pipeline};

/// Where a job runs: the main lane proves one job at a time; the urgent lane proves one
/// urgent job (PoSt) beside a long main job, in a pipeline of its own sized into what the
/// main job's plan leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    Main,
    Urgent,
}

impl Lane {
    fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Main => "main",
            Lane::Urgent => "urgent",
        }
    }
}

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

/// One lane's job and its progress.
#[derive(Default)]
struct LaneState {
    job: Option<CurrentJob>,
    heartbeat: Option<Heartbeat>,
    /// Wall-clock time of the last progress, for the report (Instants are not wall time).
    last_progress_wall: Option<Timestamp>,
    /// The lane's pipeline, or its last one while idle (its final counters stay visible).
    pipeline: Option<PipelineView>,
    sizing: Option<PipelineSizing>,
}

#[derive(Default)]
struct Inner {
    lanes: [LaneState; 2],
    proofs_completed: i64,
}

impl Inner {
    fn lane(&mut self, lane: Lane) -> &mut LaneState {
        &mut self.lanes[lane.index()]
    }

    /// The lane the pool entry shows: the main one, unless only an urgent job runs.
    fn shown(&self) -> &LaneState {
        let [main, urgent] = &self.lanes;
        if main.job.is_none() && urgent.job.is_some() {
            urgent
        } else {
            main
        }
    }
}

/// A stalled lane: what the watchdog reports, and the job to report it on.
pub struct LaneStall {
    pub stall: Stall,
    pub job: Option<CurrentJob>,
}

#[derive(Default)]
pub struct ProverState(Mutex<Inner>);

impl ProverState {
    pub fn job_started(&self, lane: Lane, job: CurrentJob) {
        let mut inner = self.0.lock();
        let state = inner.lane(lane);
        state.job = Some(job);
        state.heartbeat = Some(Heartbeat::new(Stage::FetchingInput, Instant::now()));
        state.last_progress_wall = Some(Timestamp::now());
    }

    /// The lane's job entered `stage`.
    pub fn enter(&self, lane: Lane, stage: Stage) {
        let mut inner = self.0.lock();
        let state = inner.lane(lane);
        if let Some(heartbeat) = state.heartbeat.as_mut() {
            heartbeat.enter(stage, Instant::now());
            state.last_progress_wall = Some(Timestamp::now());
        }
    }

    /// The lane's job was cancelled: it must stop within the grace.
    pub fn cancelled(&self, lane: Lane) {
        let mut inner = self.0.lock();
        if let Some(heartbeat) = inner.lane(lane).heartbeat.as_mut() {
            heartbeat.cancelled(Instant::now());
        }
    }

    /// Feeds each lane's pipeline buffers to its heartbeat and says whether a lane's job has
    /// stalled (no progress for `deadline`, or cancelled and not stopped).
    pub fn check(&self, deadline: Duration) -> Option<LaneStall> {
        let mut inner = self.0.lock();
        let now = Instant::now();
        for state in &mut inner.lanes {
            let buffers = state.pipeline.as_ref().map(|p| p.tracker.snapshot());
            let Some(heartbeat) = state.heartbeat.as_mut() else {
                continue;
            };
            let before = heartbeat.last_progress();
            if let Some(buffers) = buffers {
                heartbeat.observe(buffers, now);
            }
            let moved = heartbeat.last_progress() != before;
            let stall = heartbeat.stall(now, deadline);
            if moved {
                state.last_progress_wall = Some(Timestamp::now());
            }
            if let Some(stall) = stall {
                return Some(LaneStall {
                    stall,
                    job: state.job.clone(),
                });
            }
        }
        None
    }

    pub fn pipeline_started(&self, lane: Lane, pipeline: &Pipeline, sizing: PipelineSizing) {
        let mut inner = self.0.lock();
        let state = inner.lane(lane);
        state.pipeline = Some(PipelineView {
            tracker: pipeline.buffer_tracker(),
            registry: pipeline.registry().clone(),
        });
        state.sizing = Some(sizing);
    }

    pub fn partition_proved(&self, lane: Lane) {
        let mut inner = self.0.lock();
        inner.proofs_completed += 1;
        let state = inner.lane(lane);
        if let Some(heartbeat) = state.heartbeat.as_mut() {
            heartbeat.beat(Instant::now());
            state.last_progress_wall = Some(Timestamp::now());
        }
    }

    pub fn job_ended(&self, lane: Lane) {
        let mut inner = self.0.lock();
        let state = inner.lane(lane);
        state.job = None;
        state.heartbeat = None;
        state.last_progress_wall = None;
    }

    /// The pool entry shows the main lane's job, its buffers and plan; while only an urgent
    /// job runs, that one's.
    pub fn report(&self) -> ProverReport {
        let inner = self.0.lock();
        let step = |t: Timestamp| {
            Timestamp::from_second(
                t.as_second().div_euclid(PROGRESS_REPORT_STEP) * PROGRESS_REPORT_STEP,
            )
            .unwrap_or(t)
        };
        let shown = inner.shown();
        ProverReport {
            current_job: shown.job.as_ref().map(|job| job.name.clone()),
            stage: shown
                .heartbeat
                .as_ref()
                .map(|h| h.stage().as_str().to_owned()),
            last_progress: shown.last_progress_wall.map(step),
            buffers: shown
                .pipeline
                .as_ref()
                .map(|p| p.tracker.snapshot())
                .unwrap_or_default(),
            sizing: shown.sizing.clone(),
            proofs_completed: inner.proofs_completed,
            // The daemon's own, added by the reporter.
            gpu: None,
            gpu_lost: None,
            resident_parameters: Vec::new(),
        }
    }

    /// The shown lane's pipeline metrics in the text format (one lane's: both would repeat
    /// the same metric names); empty before the first job.
    pub fn pipeline_metrics(&self) -> String {
        let registry = self
            .0
            .lock()
            .shown()
            .pipeline
            .as_ref()
            .map(|p| p.registry.clone());
        registry
            .map(|r| proofpipe_pipeline::metrics::encode(&r))
            .unwrap_or_default()
    }
}
