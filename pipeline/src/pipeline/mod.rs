//! The proving pipeline: synthesis workers -> bounded channel -> GPU-stage workers ->
//! finalize workers, shared by every job of the process.
//!
//! Memory is bounded by construction: each of the `partition_workers` synthesis threads holds
//! at most one synthesized partition and blocks on the channel send while it is full, so at
//! most `partition_workers + channel_capacity` synthesized partitions exist outside the GPU
//! stage. With a partition budget (every planned pipeline has one, ADR 0016), a partition
//! also takes a permit before its synthesis starts and gives it back only when it leaves the
//! GPU stage, so at most `partition_budget` partitions hold their large buffers at once,
//! wherever they are.
//! All heavy work runs on these dedicated threads, never on an async runtime.

mod handoff;
mod job;
mod queue;
mod shared;
pub mod tracker;
mod workers;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus::Registry;
use proofpipe_kernels::ProvingBackend;
use serde::Serialize;

pub use job::{
    JobEvent, JobHandle, JobOutcome, JobReport, JobSpec, PartitionProof, PartitionSource,
    ReplaySource, StageTimings, Synthesis, SyntheticSource,
};
pub use shared::{BusySpan, PipelineConfig};

/// Has `backend` set aside what a pipeline of `config` will hold for partitions of
/// `constraints` ([`PipelineConfig::reservation`]) before its first partition, so the first
/// proof runs as the next ones do. Blocks (pinning host memory takes seconds per ten GiB):
/// call it off the async runtime, when parameters load. A failure is only logged: the
/// pipeline then allocates as it goes, as it would without this.
pub fn reserve_gpu_memory(
    backend: &dyn ProvingBackend,
    config: &PipelineConfig,
    constraints: usize,
) {
    let devices = backend.gpu_devices().len();
    if devices == 0 {
        return;
    }
    let reservation = config.reservation(constraints, devices);
    let started = Instant::now();
    match backend.reserve(&reservation) {
        Ok(()) => tracing::info!(
            ?reservation,
            seconds = started.elapsed().as_secs_f64(),
            "GPU stage memory reserved"
        ),
        Err(err) => tracing::warn!(?reservation, "GPU stage memory not reserved: {err}"),
    }
}
use shared::{Permits, Shared, StageClock};
pub use tracker::{BufferSnapshot, BufferTracker, Stage, TimelinePoint};

use crate::error::ProverError;
use crate::metrics::PipelineMetrics;
use crate::params::{CircuitParams, ProvingKey};
use job::Job;
use queue::{Task, WorkQueue};

/// Busy seconds per stage since the pipeline started.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct StageBusy {
    pub synthesis: f64,
    pub gpu: f64,
    pub finalize: f64,
}

pub struct Pipeline {
    shared: Arc<Shared>,
    registry: Registry,
    next_job: AtomicU64,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Pipeline {
    /// Starts the stage threads. Metrics go to a registry of the pipeline's own.
    pub fn start(
        config: PipelineConfig,
        backend: Arc<dyn ProvingBackend>,
    ) -> Result<Self, ProverError> {
        let registry = Registry::new();
        let metrics = PipelineMetrics::new(&registry).map_err(metric_error)?;
        Self::start_with(config, backend, registry, metrics)
    }

    /// Starts the stage threads, counting into `metrics`, which outlive the pipeline (a
    /// daemon's, registered once per process, so counters do not restart with each job and
    /// `rate()` works). The pipeline's own registry then holds only its buffer gauges.
    pub fn start_with_metrics(
        config: PipelineConfig,
        backend: Arc<dyn ProvingBackend>,
        metrics: PipelineMetrics,
    ) -> Result<Self, ProverError> {
        Self::start_with(config, backend, Registry::new(), metrics)
    }

    fn start_with(
        config: PipelineConfig,
        backend: Arc<dyn ProvingBackend>,
        registry: Registry,
        metrics: PipelineMetrics,
    ) -> Result<Self, ProverError> {
        if config.partition_workers == 0
            || config.partition_budget == Some(0)
            || config.channel_capacity == 0
            || config.gpu_workers == 0
            || config.finalize_workers == 0
        {
            return Err(ProverError::InvalidArgument {
                what: "pipeline config",
                reason: format!(
                    "every stage needs at least one worker and the channel at least one slot: {config:?}"
                ),
            });
        }
        let tracker =
            BufferTracker::new(&registry, config.record_timeline).map_err(metric_error)?;
        let clock = StageClock {
            spans: config.record_timeline.then(|| Mutex::new(Vec::new())),
            ..StageClock::default()
        };
        let shared = Arc::new(Shared {
            permits: config.partition_budget.map(Permits::new),
            config,
            evaluations: backend.evaluation_alloc(),
            backend,
            queue: WorkQueue::default(),
            tracker,
            metrics,
            clock,
            started: Instant::now(),
        });
        let config = &shared.config;
        let threads = workers::spawn(&shared);
        tracing::info!(
            backend = shared.backend.name(),
            partition_workers = config.partition_workers,
            channel_capacity = config.channel_capacity,
            gpu_workers = config.gpu_workers,
            partition_budget = ?config.partition_budget,
            "pipeline started"
        );
        Ok(Self {
            shared,
            registry,
            next_job: AtomicU64::new(1),
            threads: Mutex::new(threads),
        })
    }

    /// Queues a job; its partitions start as synthesis workers free up, by priority.
    pub fn submit(
        &self,
        spec: JobSpec,
        params: Arc<CircuitParams>,
    ) -> Result<JobHandle, ProverError> {
        let source = self.synthetic_source(&spec, &params)?;
        self.enqueue(source, params.key.clone(), spec.todo(), spec.priority)
    }

    /// The partitions of a synthetic job as [`Pipeline::submit`] proves them (two-pass when
    /// the config has matrices for its circuit and size), for wrapping (e.g. in a
    /// [`ReplaySource`]) and [`Pipeline::submit_source`].
    pub fn synthetic_source(
        &self,
        spec: &JobSpec,
        params: &CircuitParams,
    ) -> Result<Arc<dyn PartitionSource>, ProverError> {
        if spec.partitions == 0 {
            return Err(ProverError::ZeroPartitions);
        }
        spec.circuit.shape(spec.constraints)?;
        if params.circuit != spec.circuit || params.constraints != spec.constraints {
            return Err(ProverError::InvalidArgument {
                what: "parameters",
                reason: format!(
                    "the job is {} at {} constraints but the parameters are for {} at {}",
                    spec.circuit, spec.constraints, params.circuit, params.constraints
                ),
            });
        }
        Ok(Arc::new(SyntheticSource {
            circuit: spec.circuit,
            constraints: spec.constraints,
            seed: spec.seed,
            matrices: self
                .shared
                .config
                .matrices
                .get(&(spec.circuit, spec.constraints))
                .cloned(),
        }))
    }

    /// Queues a job whose partitions `0..partitions` come from `source` (a circuit that is not
    /// one of proofpipe's own, e.g. a Filecoin proof), proved with `key`; `skip` lists
    /// partitions already proved.
    pub fn submit_source(
        &self,
        source: Arc<dyn PartitionSource>,
        key: Arc<ProvingKey>,
        partitions: u32,
        priority: i32,
        skip: &[u32],
    ) -> Result<JobHandle, ProverError> {
        if partitions == 0 {
            return Err(ProverError::ZeroPartitions);
        }
        let todo = (0..partitions).filter(|p| !skip.contains(p)).collect();
        self.enqueue(source, key, todo, priority)
    }

    fn enqueue(
        &self,
        source: Arc<dyn PartitionSource>,
        key: Arc<ProvingKey>,
        todo: Vec<u32>,
        priority: i32,
    ) -> Result<JobHandle, ProverError> {
        let id = self.next_job.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = crossbeam_channel::unbounded();
        let job = Arc::new(Job::new(id, priority, source, key, todo.len(), tx));
        let shared = self.shared.clone();
        let handle = JobHandle {
            job: job.clone(),
            on_cancel: Arc::new(move || {
                shared.queue.purge_dead();
                shared
                    .metrics
                    .pending_partitions
                    .set(shared.queue.len() as i64);
                shared.metrics.jobs.with_label_values(&["cancelled"]).inc();
            }),
            events: rx,
        };
        if todo.is_empty() {
            job.finish(JobOutcome::Succeeded);
            return Ok(handle);
        }
        if !self
            .shared
            .queue
            .push_all(todo.into_iter().map(|partition| Task {
                job: job.clone(),
                partition,
            }))
        {
            return Err(ProverError::PipelineClosed);
        }
        self.shared
            .metrics
            .pending_partitions
            .set(self.shared.queue.len() as i64);
        Ok(handle)
    }

    pub fn config(&self) -> &PipelineConfig {
        &self.shared.config
    }

    pub fn backend_name(&self) -> &'static str {
        self.shared.backend.name()
    }

    pub fn buffers(&self) -> BufferSnapshot {
        self.shared.tracker.snapshot()
    }

    /// The tracker behind [`Pipeline::buffers`], for a reader that must not keep the pipeline
    /// itself alive (the daemon's status reporter).
    pub fn buffer_tracker(&self) -> Arc<BufferTracker> {
        self.shared.tracker.clone()
    }

    pub fn buffer_timeline(&self) -> Vec<TimelinePoint> {
        self.shared.tracker.timeline()
    }

    pub fn busy_spans(&self) -> Vec<BusySpan> {
        self.shared
            .clock
            .spans
            .as_ref()
            .map(|s| s.lock().clone())
            .unwrap_or_default()
    }

    /// Partitions waiting for a synthesis worker.
    pub fn pending_partitions(&self) -> usize {
        self.shared.queue.len()
    }

    pub fn stage_busy(&self) -> StageBusy {
        let secs = |s: Stage| {
            self.shared.clock.busy_nanos[s as usize].load(Ordering::Relaxed) as f64 / 1e9
        };
        StageBusy {
            synthesis: secs(Stage::Synthesizing),
            gpu: secs(Stage::Gpu),
            finalize: secs(Stage::Finalizing),
        }
    }

    pub fn uptime(&self) -> Duration {
        self.shared.started.elapsed()
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The pipeline's metrics in Prometheus' text format.
    pub fn metrics_text(&self) -> String {
        crate::metrics::encode(&self.registry)
    }

    /// Lets queued work finish, then stops every thread.
    pub fn shutdown(&self) {
        self.shared.queue.close();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn metric_error(error: prometheus::Error) -> ProverError {
    ProverError::InvalidArgument {
        what: "metrics",
        reason: error.to_string(),
    }
}

#[cfg(test)]
mod tests;
