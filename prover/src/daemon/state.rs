//! What the daemon is doing now, shared by the job runner (which changes it), the pool
//! status reporter and `/metrics` (which read it).

use std::sync::Arc;

use parking_lot::Mutex;
use prometheus::Registry;
use proofpipe_crds::PipelineSizing;

use super::payload::ProverReport;
use crate::pipeline::{BufferTracker, Pipeline};

/// Readers hold the pipeline's tracker and registry, never the pipeline: dropping a
/// pipeline joins its threads, which must not happen on the async runtime by accident.
struct PipelineView {
    tracker: Arc<BufferTracker>,
    registry: Registry,
}

#[derive(Default)]
struct Inner {
    current_job: Option<String>,
    /// The current pipeline, or the last one while idle (its final counters stay visible).
    pipeline: Option<PipelineView>,
    sizing: Option<PipelineSizing>,
    proofs_completed: i64,
}

#[derive(Default)]
pub struct ProverState(Mutex<Inner>);

impl ProverState {
    pub fn job_started(&self, job: &str) {
        self.0.lock().current_job = Some(job.to_owned());
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
        self.0.lock().proofs_completed += 1;
    }

    pub fn job_ended(&self) {
        self.0.lock().current_job = None;
    }

    pub fn report(&self) -> ProverReport {
        let inner = self.0.lock();
        ProverReport {
            current_job: inner.current_job.clone(),
            buffers: inner
                .pipeline
                .as_ref()
                .map(|p| p.tracker.snapshot())
                .unwrap_or_default(),
            sizing: inner.sizing.clone(),
            proofs_completed: inner.proofs_completed,
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
